/**
 * `skiff broker --config server.properties [--override key=value]...`: one broker in this process.
 * With `etcd.endpoints` set it is a member of a real multi-machine cluster: the metadata lives in
 * etcd (StoreClusterMetadata), this process is also a controller candidate, and SIGTERM moves its
 * leadership away before it exits (see src/cluster/store-broker.ts). Without it, it is a cluster of
 * one: the same StoreBroker on the embedded metadata store, persisted in the first log dir
 * (skiff-metadata/), with its own controller. This is a composition root: the only place (with the CLI entry) that creates the
 * real clock, timers, file system and randomness.
 * Prints one ready line when listening; SIGTERM/SIGINT stop it cleanly, and so does the death of
 * the process that started it (its title in ps: `skiff broker <id> <log dirs>`).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseProperties } from '../broker/config.js';
import { brokerTitle } from '../cluster/child-protocol.js';
import type { StoreBroker } from '../cluster/store-broker.js';
import { SystemClock } from '../common/clock.js';
import { type Logger, lineLogger, parseLogFormat } from '../common/logger.js';
import { tuneMallocForBroker } from '../common/malloc-tuning.js';
import { watchParent } from '../common/parent-watch.js';
import type { EtcdStore, EtcdStoreOptions } from '../metadata/etcd-store.js';
import { StoreError } from '../metadata/store.js';
import type { Metrics } from '../metrics/registry.js';
import { type InitialScramCredential, parseAddScram } from '../security/scram.js';
import type { CliIo } from './cli.js';
import { commandInfo } from './commands.js';
import { runTool, TORN_TAIL_NOTES, type ToolDef, UsageError } from './tools/common.js';

export const BROKER: ToolDef = {
  ...commandInfo('broker'),
  usage: [
    'Usage: skiff broker --config <server.properties> [--override key=value]...',
    '       skiff broker <server.properties> [--override key=value]...',
    '  Runs one Kafka-compatible broker until SIGTERM or SIGINT (clean shutdown).',
  ],
  positionals: 'server.properties',
  usageOnError: true,
  flags: [
    { name: 'config', arg: 'server.properties', help: 'the broker configuration (Kafka names)' },
    { name: 'override', arg: 'key=value', repeat: true, help: 'a property over the file, as Kafka allows' },
    {
      name: 'add-scram',
      arg: "'SCRAM-SHA-256=[name=admin,password=admin-secret]'",
      repeat: true,
      help: 'a SCRAM credential created at set-up, as kafka-storage.sh format --add-scram (kept if the user already has one)',
    },
  ],
  notes: [
    'With etcd.endpoints the broker is a member of a cluster whose metadata lives in etcd; without,',
    'a cluster of one (its metadata store in the first log dir).',
    'http.listeners=http://127.0.0.1:PORT serves Prometheus metrics at /metrics (none by default; an',
    'empty host binds loopback); http.auth.token=T then asks for Authorization: Bearer T or ?token=T.',
    '',
    ...TORN_TAIL_NOTES,
  ],
};
/** How long a stopping broker waits for its etcd client to close. */
const STORE_CLOSE_TIMEOUT_MS = 3000;

export function runBroker(args: string[], io: CliIo): Promise<number> {
  return runTool(BROKER, args, io, (flags) => {
    const [file, ...extra] = flags.positionals;
    if (extra.length > 0 || (file !== undefined && flags.has('config')))
      throw new UsageError(`unexpected argument '${extra[0] ?? file}'`);
    const config = flags.get('config') ?? file;
    // As kafka-server-start.sh: no properties file is a usage error, not a broker on :9092 writing
    // /tmp/kafka-logs.
    if (config === undefined)
      throw new UsageError('missing the broker configuration: --config <server.properties>');
    const scram = flags.all('add-scram').map((v) => parseAddScram(v, randomBytes));
    return serveBroker(config, flags.all('override'), scram, io);
  });
}

async function serveBroker(
  configPath: string,
  overrides: readonly string[],
  scram: readonly InitialScramCredential[],
  io: CliIo,
): Promise<number> {
  const props = parseProperties(readFileSync(configPath, 'utf8'));
  for (const o of overrides) for (const [k, v] of parseProperties(o)) props.set(k, v);
  // A broker is coming: only now is this process's heap tuned for one.
  tuneMallocForBroker();
  const clock = new SystemClock();
  const logger = lineLogger(clock, (line) => io.out(line), parseLogFormat(props.get('log.format')));
  const endpoints = (props.get('etcd.endpoints') ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  const store = endpoints.length > 0 ? await etcdStore(props, endpoints, clock) : undefined;
  // Loaded here, not at the top: `skiff broker --help` needs none of the broker.
  const { processBrokerDeps, StoreBroker } = await import('../cluster/store-broker.js');
  // Metrics are kept only when served: without http.listeners the broker runs without them.
  const metrics = (props.get('http.listeners') ?? '').trim() !== '' ? await processMetrics() : undefined;
  let broker: StoreBroker;
  try {
    broker = await StoreBroker.start({
      ...processBrokerDeps(),
      store,
      props,
      clock,
      logger,
      scram,
      ...(metrics && { metrics }),
    });
  } catch (e) {
    await store?.close().catch(() => {});
    if (e instanceof StoreError) throw new Error(`etcd at ${endpoints.join(',')}: ${e.message}`);
    throw e;
  }
  const { config } = broker;
  process.title = brokerTitle(config.nodeId, config.logDirs.join(','));
  // Listening for the stop before the ready line: whoever reads it may send SIGTERM at once (and
  // the kernel may run that reader before this process's next statement).
  const stopRequested = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('received SIGTERM'));
    process.once('SIGINT', () => resolve('received SIGINT'));
    // Started by a script or a test harness that died: nobody is left to stop it.
    watchParent((pid) => resolve(`parent process ${pid} is gone`));
  });
  const where =
    (store === undefined ? '' : `, metadata in etcd ${endpoints.join(',')}`) +
    (broker.http === null ? '' : `, metrics on ${broker.http.url}/metrics`);
  io.out(
    `skiff broker ${config.nodeId} ready: listening on ${listening(broker.broker.addresses)} (cluster ${broker.clusterId}${where})`,
  );
  const signal = await stopRequested;
  logger.info(`${signal}, shutting down (controlled shutdown first)`);
  forceOnSecondSignal(logger);
  await broker.stop();
  if (store !== undefined) await closeEtcd(store, logger);
  return 0;
}

/** The process's metrics registry (prom-client loaded only for a broker that serves metrics). */
async function processMetrics(): Promise<Metrics> {
  const { createProcessMetrics } = await import('../metrics/registry.js');
  return createProcessMetrics(() => performance.now());
}

/** Signals closer than this to the first one are duplicates of it (a wrapper such as npx forwards Ctrl-C too). */
const REPEAT_SIGNAL_MS = 1000;

/** During the clean stop, a second SIGINT or SIGTERM ends the process at once (as in skiff up). */
function forceOnSecondSignal(logger: Logger): void {
  const firstAt = Date.now();
  const force = (signal: NodeJS.Signals): void => {
    if (Date.now() - firstAt < REPEAT_SIGNAL_MS) return;
    logger.warn(`received ${signal} again: exiting without finishing the shutdown`);
    process.exit(1);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, force);
  }
}

/** The etcd of a multi-machine cluster: node.id and well-formed endpoints are required up front. */
async function etcdStore(
  props: ReadonlyMap<string, string>,
  endpoints: readonly string[],
  clock: SystemClock,
): Promise<EtcdStore> {
  // Two processes defaulting to id 1 would overwrite each other's registration: say it up front.
  if (!props.has('node.id') && !props.has('broker.id'))
    throw new Error(
      'node.id is required when etcd.endpoints is set (each broker of the cluster needs its own)',
    );
  for (const e of endpoints) {
    if (!/^https?:\/\/[^/\s]+\/?$/.test(e))
      throw new Error(`etcd.endpoints: expected http://host:port, got '${e}'`);
  }
  const { EtcdStore } = await import('../metadata/etcd-store.js');
  return new EtcdStore({ endpoints, clock, ...etcdSecurity(props, endpoints) });
}

/**
 * TLS and user of the etcd client from etcd.ssl.* and etcd.username / etcd.password: https
 * endpoints need the CA file, a client certificate needs both its files, a user its password.
 */
function etcdSecurity(
  props: ReadonlyMap<string, string>,
  endpoints: readonly string[],
): Pick<EtcdStoreOptions, 'tls' | 'auth'> {
  const read = (name: string): Buffer | undefined => {
    const file = props.get(name);
    if (file === undefined || file.trim() === '') return undefined;
    try {
      return readFileSync(file.trim());
    } catch (e) {
      throw new Error(`${name}: cannot read ${file.trim()}: ${(e as Error).message}`);
    }
  };
  const https = endpoints.filter((e) => e.startsWith('https://'));
  if (https.length > 0 && https.length < endpoints.length)
    throw new Error('etcd.endpoints: either every endpoint is https:// or none is');
  const ca = read('etcd.ssl.ca.location');
  const cert = read('etcd.ssl.certificate.location');
  const key = read('etcd.ssl.key.location');
  if (https.length === 0 && (ca ?? cert ?? key) !== undefined)
    throw new Error('etcd.ssl.*: set for http:// endpoints; TLS to etcd needs https:// endpoints');
  if (https.length > 0 && ca === undefined)
    throw new Error('etcd.ssl.ca.location is required with https:// etcd endpoints');
  if ((cert === undefined) !== (key === undefined))
    throw new Error('etcd.ssl.certificate.location and etcd.ssl.key.location go together');
  const username = props.get('etcd.username')?.trim();
  const password = props.get('etcd.password');
  if ((username === undefined || username === '') !== (password === undefined))
    throw new Error('etcd.username and etcd.password go together');
  return {
    ...(ca && { tls: { ca, ...(cert && { cert }), ...(key && { key }) } }),
    ...(username && password !== undefined && { auth: { username, password } }),
  };
}

/** Closes the etcd client, bounded: with every member gone it would wait on the client's retries. */
async function closeEtcd(store: EtcdStore, logger: Logger): Promise<void> {
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
}

/** `PLAINTEXT://127.0.0.1:9092, SSL://127.0.0.1:9093`: every listener, in `listeners` order. */
function listening(addresses: ReadonlyMap<string, { host: string; port: number }>): string {
  return [...addresses].map(([name, a]) => `${name}://${a.host}:${a.port}`).join(', ');
}
