/**
 * `skiff broker --config server.properties [--override key=value]...`: one broker in this process.
 * With `etcd.endpoints` set it is a member of a real multi-machine cluster: the metadata lives in
 * etcd (StoreClusterMetadata), this process is also a controller candidate, and SIGTERM moves its
 * leadership away before it exits (see src/cluster/store-broker.ts). Without it, it is a cluster of
 * one: the same StoreBroker on the embedded metadata store, persisted in the first log dir
 * (skiff-metadata/), with its own controller. This is a composition root: the only place (with the CLI entry) that creates the
 * real clock, timers, file system and randomness.
 * Prints one ready line when listening; SIGTERM/SIGINT stop it cleanly.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { parseProperties } from '../broker/config.js';
import { StoreBroker } from '../cluster/store-broker.js';
import { SystemClock } from '../common/clock.js';
import { type Logger, lineLogger } from '../common/logger.js';
import { tuneMallocForBroker } from '../common/malloc-tuning.js';
import { TimerScheduler } from '../common/scheduler.js';
import { EtcdStore } from '../metadata/etcd-store.js';
import { StoreError } from '../metadata/store.js';
import { NodeFileSystem } from '../storage/fs.js';
import type { CliIo } from './cli.js';

export const BROKER_SUMMARY = 'run one broker (--config server.properties)';
/** How long a stopping broker waits for its etcd client to close. */
const STORE_CLOSE_TIMEOUT_MS = 3000;

function usage(io: CliIo): void {
  io.out('Usage: skiff broker --config <server.properties> [--override key=value]...');
  io.out('  Runs one Kafka-compatible broker until SIGTERM or SIGINT (clean shutdown).');
}

export async function runBroker(args: string[], io: CliIo): Promise<number> {
  let configPath: string | null = null;
  const overrides: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--help' || a === '-h') {
      usage(io);
      return 0;
    }
    if (a === '--config' && i + 1 < args.length) configPath = args[++i]!;
    else if (a === '--override' && i + 1 < args.length) overrides.push(args[++i]!);
    else if (configPath === null && !a.startsWith('-')) configPath = a;
    else {
      io.err(`skiff broker: unexpected argument '${a}'`);
      usage(io);
      return 2;
    }
  }
  tuneMallocForBroker();
  const fs = new NodeFileSystem({ backgroundWrites: true });
  const props =
    configPath === null
      ? new Map<string, string>()
      : parseProperties(fs.readFile(configPath).toString('utf8'));
  for (const o of overrides) for (const [k, v] of parseProperties(o)) props.set(k, v);
  const clock = new SystemClock();
  const logger = lineLogger(clock, (line) => io.out(line));
  const endpoints = (props.get('etcd.endpoints') ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (endpoints.length > 0) return runEtcdBroker(props, endpoints, clock, logger, io);
  const broker = await StoreBroker.start({
    props,
    clock,
    scheduler: new TimerScheduler(),
    fs,
    logger,
    randomBytes,
    randomInt: (n) => randomInt(n),
  });
  const { address, config } = broker;
  io.out(
    `skiff broker ${config.nodeId} ready: listening on PLAINTEXT://${address.host}:${address.port} (cluster ${broker.clusterId})`,
  );
  const signal = await waitForSignal();
  logger.info(`received ${signal}, shutting down`);
  await broker.stop();
  return 0;
}

function waitForSignal(): Promise<string> {
  return new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
}

/** A broker of a multi-machine cluster whose metadata lives in etcd. */
async function runEtcdBroker(
  props: Map<string, string>,
  endpoints: readonly string[],
  clock: SystemClock,
  logger: Logger,
  io: CliIo,
): Promise<number> {
  // Two processes defaulting to id 1 would overwrite each other's registration: say it up front.
  if (!props.has('node.id') && !props.has('broker.id'))
    throw new Error(
      'node.id is required when etcd.endpoints is set (each broker of the cluster needs its own)',
    );
  for (const e of endpoints) {
    if (!/^https?:\/\/[^/\s]+\/?$/.test(e))
      throw new Error(`etcd.endpoints: expected http://host:port, got '${e}'`);
  }
  const store = new EtcdStore({ endpoints, clock });
  let broker: StoreBroker;
  try {
    broker = await StoreBroker.start({
      store,
      props,
      clock,
      scheduler: new TimerScheduler(),
      fs: new NodeFileSystem({ backgroundWrites: true }),
      logger,
      randomBytes,
      randomInt: (n) => randomInt(n),
    });
  } catch (e) {
    await store.close().catch(() => {});
    if (e instanceof StoreError) throw new Error(`etcd at ${endpoints.join(',')}: ${e.message}`);
    throw e;
  }
  const { address, config } = broker;
  io.out(
    `skiff broker ${config.nodeId} ready: listening on PLAINTEXT://${address.host}:${address.port} (cluster ${broker.clusterId}, metadata in etcd ${endpoints.join(',')})`,
  );
  const signal = await waitForSignal();
  logger.info(`received ${signal}, shutting down (controlled shutdown first)`);
  await broker.stop();
  // Cancelling watches needs etcd; with every member gone it would wait on the client's retries.
  const closed = await Promise.race([
    store.close().then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), STORE_CLOSE_TIMEOUT_MS).unref()),
  ]);
  logger.info(
    closed ? 'stopped' : `stopped (etcd did not answer the close within ${STORE_CLOSE_TIMEOUT_MS} ms)`,
  );
  // Everything is flushed and closed. With etcd unreachable, grpc-js keeps retrying calls that
  // were abandoned at their deadline (revoke, resign) and holds the process open for up to half
  // a minute; a stopped broker has nothing left to do, so it exits if they are not done soon.
  setTimeout(() => process.exit(process.exitCode ?? 0), STORE_CLOSE_TIMEOUT_MS).unref();
  return 0;
}
