/**
 * Entry point of one broker process of `skiff up` (forked by the launcher with an IPC channel and
 * `serialization: 'advanced'`). The composition root of a child: real clock, timers, disk and
 * randomness; the metadata store is the launcher's, reached over the IPC channel (RemoteStore).
 *
 * Messages to the launcher (besides the store's own traffic): `ready` once listening, `failed`
 * with the reason when start-up fails, `progress` with each line of its logs' recovery (a start
 * after a crash: Kafka's "Recovering N logs ..." and "(k/N completed in DIR)" lines). SIGTERM or SIGINT stop the broker gracefully; so does the
 * channel closing (the launcher is gone: with no metadata store left, flush the logs and exit).
 */
import { SystemClock } from '../common/clock.js';
import { type Logger, lineLogger, parseLogFormat } from '../common/logger.js';
import { tuneMallocForBroker } from '../common/malloc-tuning.js';
import { TimerScheduler } from '../common/scheduler.js';
import { ipcChannel, RemoteStore } from '../metadata/remote-store.js';
import { createProcessMetrics } from '../metrics/registry.js';
import {
  brokerTitle,
  type ChildMessage,
  isScrapeRequest,
  PROPS_ENV,
  type ScrapeAnswer,
} from './child-protocol.js';
import { processBrokerDeps, StoreBroker } from './store-broker.js';

// Every static import above is loaded and evaluated before this line runs: the process's age now
// is Node's start-up plus the broker's module graph (performance.now() counts from process start).
const modulesLoadedMs = performance.now();

async function main(): Promise<number> {
  const send = (m: ChildMessage): void => {
    if (process.connected) process.send?.(m);
  };
  if (process.send === undefined) {
    process.stderr.write('broker-child: must be forked by `skiff up` (no IPC channel)\n');
    return 2;
  }
  // Sends after the launcher is gone (a store call racing the disconnect) report the closed
  // channel as an 'error' event on process; unhandled, it would crash the broker before its clean stop.
  process.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'ERR_IPC_CHANNEL_CLOSED') throw e;
  });
  // Forked as `broker-child.js broker <id> <log dir>`: ps shows `skiff broker 2 /data/broker-2`.
  const [, id, logDir] = process.argv.slice(2);
  if (id !== undefined && logDir !== undefined) process.title = brokerTitle(Number(id), logDir);
  tuneMallocForBroker();
  const clock = new SystemClock();
  const props = new Map(Object.entries(JSON.parse(process.env[PROPS_ENV] ?? '{}') as Record<string, string>));
  const lines = lineLogger(
    clock,
    (line) => process.stdout.write(`${line}\n`),
    parseLogFormat(props.get('log.format')),
  );
  const logger: Logger = {
    info: (line, fields) => {
      lines.info(line, fields);
      if (fields?.event === 'log-load' && fields.recovering === true)
        send({ skiffLauncher: 'progress', line });
    },
    warn: (line, fields) => lines.warn(line, fields),
  };
  const scheduler = new TimerScheduler();
  const store = new RemoteStore(ipcChannel(process), scheduler);
  // Always kept: the launcher serves every child's at its /metrics (skiff up --http-port).
  const metrics = createProcessMetrics(() => performance.now());
  process.on('message', (m) => {
    if (!isScrapeRequest(m)) return;
    const answer = (a: Omit<ScrapeAnswer, 'skiffLauncher' | 'id'>): void => {
      if (process.connected)
        process.send?.({ skiffLauncher: 'metrics', id: m.id, ...a } satisfies ScrapeAnswer);
    };
    metrics.registry.metrics().then(
      (text) => answer({ text }),
      (e: unknown) => answer({ text: null, error: e instanceof Error ? e.message : String(e) }),
    );
  });
  let broker: StoreBroker;
  try {
    broker = await StoreBroker.start({
      ...processBrokerDeps(),
      scheduler,
      store,
      props,
      clock,
      logger,
      metrics,
    });
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    logger.warn(`start-up failed: ${e instanceof Error ? (e.stack ?? message) : message}`);
    const code = (e as NodeJS.ErrnoException).code;
    send({ skiffLauncher: 'failed', message, ...(typeof code === 'string' ? { code } : {}) });
    await store.close();
    return 1;
  }
  // Listening for the stop before saying ready: the launcher may send SIGTERM as soon as it reads it.
  const stopRequested = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('disconnect', () => resolve('the launcher went away'));
  });
  send({ skiffLauncher: 'ready', host: broker.address.host, port: broker.address.port });
  const listeningMs = performance.now();
  logger.info(
    `broker ${broker.config.nodeId}: listening ${Math.round(listeningMs)} ms after the process started (Node start-up and modules ${Math.round(modulesLoadedMs)} ms, then registration, metadata and logs ${Math.round(listeningMs - modulesLoadedMs)} ms)`,
  );
  const reason = await stopRequested;
  logger.info(`broker ${broker.config.nodeId}: stopping (${reason})`);
  await broker.stop({ storeLost: !process.connected });
  await store.close();
  return 0;
}

const code = await main();
// The IPC channel would keep the process alive; exit explicitly once the broker is closed.
if (process.connected) process.disconnect();
process.exit(code);
