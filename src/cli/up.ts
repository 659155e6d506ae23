/**
 * `skiff up [--brokers N] [--data-dir DIR] [--port P] [--http-port H] [--config-file F]`: a local
 * cluster in one command. The composition root of the launcher (real clock, randomness, disk).
 * Prints one ready line per broker and a final line; SIGINT/SIGTERM stop it cleanly (a second
 * one kills what is left), and so does the death of the process that started it.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SystemClock } from '../common/clock.js';
import { LIMITS } from '../common/limits.js';
import { watchParent } from '../common/parent-watch.js';
import { serveDashboard } from '../dashboard/index.js';
import { parseProperties } from '../metadata/properties.js';
import { type InitialScramCredential, parseAddScram } from '../security/scram.js';
import type { CliIo } from './cli.js';
import { commandInfo } from './commands.js';
import { intFlag, runTool, TORN_TAIL_NOTES, type ToolDef } from './tools/common.js';

export const DEFAULT_DATA_DIR = '.skiff';
/** Signals closer than this to the first one are duplicates of it. */
const REPEAT_SIGNAL_MS = 1000;

export const UP: ToolDef = {
  ...commandInfo('up'),
  usage: [
    'Usage: skiff up [--brokers N] [--data-dir DIR] [--port P] [--http-port H] [--http-token T] [--config-file F]',
  ],
  usageOnError: true,
  flags: [
    {
      name: 'add-scram',
      arg: "'SCRAM-SHA-256=[name=admin,password=admin-secret]'",
      repeat: true,
      help: 'a SCRAM credential created at set-up, as kafka-storage.sh format --add-scram (kept if the user already has one)',
    },
    { name: 'brokers', arg: 'N', help: `brokers with ids 1..N (default 3, at most ${LIMITS.upBrokers})` },
    {
      name: 'data-dir',
      arg: 'DIR',
      help: `metadata under DIR/metadata, broker i's log dir DIR/broker-<i> (default ./${DEFAULT_DATA_DIR})`,
    },
    { name: 'port', arg: 'P', help: 'broker i listens on 127.0.0.1:P+i-1 (default 9092)' },
    {
      name: 'http-port',
      arg: 'H',
      help: 'the live dashboard (http://127.0.0.1:H/) and the control API used by `skiff cluster` (default: any free port)',
    },
    {
      name: 'http-token',
      arg: 'T',
      help: 'the dashboard and /metrics ask for T (Authorization: Bearer T, or ?token=T); default: open on loopback',
    },
    {
      name: 'config-file',
      arg: 'F',
      help: "server.properties applied to every broker (the port in 'listeners' is replaced)",
    },
  ],
  notes: [
    'Control it from another shell: skiff cluster status|stop <id> [--kill]|start <id> --data-dir DIR',
    '',
    ...TORN_TAIL_NOTES,
  ],
};

export function runUp(args: string[], io: CliIo): Promise<number> {
  return runTool(UP, args, io, (flags) =>
    up(io, {
      brokers: intFlag(flags, 'brokers', 3, 1, LIMITS.upBrokers),
      dataDir: flags.get('data-dir') ?? DEFAULT_DATA_DIR,
      port: intFlag(flags, 'port', 9092, 1, 65535),
      httpPort: intFlag(flags, 'http-port', 0, 0, 65535),
      httpToken: flags.get('http-token') ?? null,
      configFile: flags.get('config-file') ?? null,
      scram: flags.all('add-scram').map((v) => parseAddScram(v, randomBytes)),
    }),
  );
}

async function up(
  io: CliIo,
  opts: {
    brokers: number;
    dataDir: string;
    port: number;
    httpPort: number;
    httpToken: string | null;
    configFile: string | null;
    scram: readonly InitialScramCredential[];
  },
): Promise<number> {
  const { brokers, dataDir, port, httpPort, httpToken, configFile, scram } = opts;
  const brokerProps =
    configFile === null ? new Map<string, string>() : parseProperties(fs.readFileSync(configFile, 'utf8'));
  const etcdKeys = [...brokerProps.keys()].filter((k) => k.startsWith('etcd.'));
  for (const k of ['node.id', 'broker.id', 'log.dirs', 'log.dir', ...etcdKeys]) {
    if (brokerProps.has(k))
      io.err(`[skiff] ignoring ${k} from ${configFile}: skiff up sets it for each broker`);
  }
  const dir = path.resolve(dataDir);
  const log = (line: string): void => io.out(`[skiff] ${line}`);
  const clock = new SystemClock();
  const started = clock.nowMs();
  process.title = `skiff up ${dir}`;
  // Loaded here, not at the top: `skiff up --help` needs none of the launcher.
  const { Launcher } = await import('../cluster/launcher.js');
  const launcher = await Launcher.start({
    brokers,
    dataDir: dir,
    ports: Array.from({ length: brokers }, (_, i) => port + i),
    httpPort,
    httpToken,
    brokerProps,
    clock,
    randomBytes,
    log,
    scram,
  });
  const stopDashboard = serveDashboard(launcher, (e) => log(`dashboard: ${e.message}`));
  // Listening for the stop before the last line: whoever reads it may signal at once.
  const stopRequested = new Promise<string>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
    // Started by npx or a test harness that was killed: nobody is left to press Ctrl-C.
    watchParent((pid) => resolve(`parent process ${pid} is gone`));
  });
  log(
    `cluster ${launcher.clusterId} up in ${clock.nowMs() - started} ms: ${brokers} brokers, bootstrap ${launcher.bootstrap()}, metadata ${path.join(dir, 'metadata')}, dashboard ${launcher.controlUrl}/ — Ctrl-C stops`,
  );
  const signal = await stopRequested;
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
  stopDashboard();
  await launcher.shutdown();
  log('stopped');
  return 0;
}
