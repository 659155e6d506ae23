/**
 * `skiff up [--brokers N] [--data-dir DIR] [--port P] [--http-port H] [--config-file F]`: a local
 * cluster in one command. The composition root of the launcher (real clock, randomness, disk).
 * Prints one ready line per broker and a final line; SIGINT/SIGTERM stop it cleanly (a second
 * one kills what is left).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Launcher } from '../cluster/launcher.js';
import { SystemClock } from '../common/clock.js';
import { parseProperties } from '../metadata/properties.js';
import type { CliIo } from './cli.js';

export const UP_SUMMARY = 'run a local cluster: N brokers and the metadata store (Ctrl-C stops it)';
export const DEFAULT_DATA_DIR = '.skiff';
/** Signals closer than this to the first one are duplicates of it. */
const REPEAT_SIGNAL_MS = 1000;

function usage(io: CliIo): void {
  io.out('Usage: skiff up [--brokers N] [--data-dir DIR] [--port P] [--http-port H] [--config-file F]');
  io.out('  --brokers N       brokers with ids 1..N (default 3)');
  io.out(
    `  --data-dir DIR    metadata under DIR/metadata, broker i's log dir DIR/broker-<i> (default ./${DEFAULT_DATA_DIR})`,
  );
  io.out('  --port P          broker i listens on 127.0.0.1:P+i-1 (default 9092)');
  io.out(
    '  --http-port H     the control API on 127.0.0.1:H, used by `skiff cluster` (default: any free port)',
  );
  io.out(
    "  --config-file F   server.properties applied to every broker (the port in 'listeners' is replaced)",
  );
  io.out('Control it from another shell: skiff cluster status|stop <id> [--kill]|start <id> --data-dir DIR');
}

export async function runUp(args: string[], io: CliIo): Promise<number> {
  let brokers = 3;
  let dataDir = DEFAULT_DATA_DIR;
  let port = 9092;
  let httpPort = 0;
  let configFile: string | null = null;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const value = (): string => {
      const v = args[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    const int = (min: number, max: number): number => {
      const v = value();
      const n = Number(v);
      if (!Number.isInteger(n) || n < min || n > max)
        throw new Error(`${a}: expected an integer in ${min}..${max}, got '${v}'`);
      return n;
    };
    if (a === '--help' || a === '-h') {
      usage(io);
      return 0;
    } else if (a === '--brokers') brokers = int(1, 64);
    else if (a === '--data-dir') dataDir = value();
    else if (a === '--port') port = int(1, 65535);
    else if (a === '--http-port') httpPort = int(0, 65535);
    else if (a === '--config-file') configFile = value();
    else {
      io.err(`skiff up: unexpected argument '${a}'`);
      usage(io);
      return 2;
    }
  }
  const brokerProps =
    configFile === null ? new Map<string, string>() : parseProperties(fs.readFileSync(configFile, 'utf8'));
  for (const k of ['node.id', 'broker.id', 'log.dirs', 'log.dir', 'etcd.endpoints']) {
    if (brokerProps.has(k))
      io.err(`[skiff] ignoring ${k} from ${configFile}: skiff up sets it for each broker`);
  }
  const dir = path.resolve(dataDir);
  const log = (line: string): void => io.out(`[skiff] ${line}`);
  const clock = new SystemClock();
  const started = clock.nowMs();
  const launcher = await Launcher.start({
    brokers,
    dataDir: dir,
    port,
    httpPort,
    brokerProps,
    clock,
    randomBytes,
    log,
  });
  log(
    `cluster ${launcher.clusterId} up in ${clock.nowMs() - started} ms: ${brokers} brokers, bootstrap ${launcher.bootstrap()}, metadata ${path.join(dir, 'metadata')}, control ${launcher.controlUrl} — Ctrl-C stops`,
  );
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  log(`${signal}: stopping the brokers (controlled shutdown), then the metadata store`);
  const firstAt = clock.nowMs();
  const again = (): void => {
    // One Ctrl-C can arrive twice (from the terminal and forwarded by a wrapper such as npx):
    // only a signal a second later is the user asking again.
    if (clock.nowMs() - firstAt < REPEAT_SIGNAL_MS) return;
    log('second signal: killing the brokers');
    launcher.killAll();
  };
  process.on('SIGINT', again);
  process.on('SIGTERM', again);
  await launcher.shutdown();
  log('stopped');
  return 0;
}
