/**
 * One broker on a MetadataStore: the store-backed metadata (StoreClusterMetadata), a controller
 * candidate, and the Broker itself. Shared by every way Skiff runs a broker — a child process of
 * `skiff up` (RemoteStore over the IPC channel), `skiff broker` with `etcd.endpoints` (EtcdStore),
 * and a lone `skiff broker` or a test's broker, a cluster of one on the EmbeddedStore in its first
 * log dir — so all of them start, replicate and stop in exactly the same order.
 *
 * Start order (issue 5: configs before fetchers and clients): cluster id → metadata snapshot
 * applied and a FENCED registration visible (StoreClusterMetadata.start) → logs loaded (in slices
 * between which the heartbeats keep the session, as Kafka's lifecycle manager heartbeats while its
 * logs load; fenced, the broker is given no leadership) and the image applied → listen
 * (Broker.start) → unfenced (in the image: clients and leadership may come) → controller
 * candidate. Stop order: controlled shutdown (while this process's controller, if active, can
 * still move leadership away) → broker (connections, logs, clean-shutdown marker) → controller
 * resigns → registration lease revoked.
 */

import { randomBytes, randomInt } from 'node:crypto';
import * as path from 'node:path';
import { Broker } from '../broker/broker.js';
import { type BrokerConfig, brokerConfigFromProperties } from '../broker/config.js';
import { bindHost, listenerTls, usesTls } from '../broker/listeners.js';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { type Scheduler, TimerScheduler } from '../common/scheduler.js';
import { Controller } from '../controller/controller.js';
import type { BrokerEndpoint } from '../metadata/cluster-metadata.js';
import { BROKER_CONFIG_DEFS } from '../metadata/config-defs.js';
import { EmbeddedStore } from '../metadata/embedded-store.js';
import { MetadataKeys } from '../metadata/keys.js';
import { propertiesToRecord } from '../metadata/properties.js';
import { addScramCredentialIfAbsent } from '../metadata/scram-credentials.js';
import type { MetadataStore } from '../metadata/store.js';
import { StoreClusterMetadata } from '../metadata/store-cluster-metadata.js';
import { type HttpEndpoint, parseHttpListener, startHttpEndpoint } from '../metrics/http-endpoint.js';
import type { Metrics } from '../metrics/registry.js';
import { registerScrapeFamily } from '../metrics/scrape-family.js';
import { type BoundAddress, checkListenable } from '../network/socket-server.js';
import type { InitialScramCredential } from '../security/scram.js';
import { type FileSystem, NodeFileSystem } from '../storage/fs.js';
import { DelayingFileSystem, DISK_DELAYS_ENV, delaysFromFile } from '../storage/fs-delay.js';
import { resolveClusterId } from './cluster-id.js';
import { importLegacyMetadata } from './legacy-metadata.js';

export interface StoreBrokerDeps {
  /**
   * The cluster's metadata store. Absent: a cluster of one — the embedded store, persisted in the
   * first log dir (METADATA_DIR), opened and closed by this broker.
   */
  readonly store?: MetadataStore;
  /** server.properties as given (static configs); node.id, listeners, log.dirs, broker.rack... */
  readonly props: ReadonlyMap<string, string>;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly fs: FileSystem;
  readonly logger: Logger;
  readonly randomBytes: (n: number) => Buffer;
  /** Ends the process at once (Kafka's Exit.halt): a broker whose every log dir failed. */
  readonly halt?: (code: number) => void;
  readonly randomInt: (n: number) => number;
  /**
   * This broker's metrics registry (the composition root's). Absent: no metrics are kept, and
   * `http.listeners` is refused (there would be nothing to serve).
   */
  readonly metrics?: Metrics;
  /** A monotonic clock with sub-millisecond resolution: the request quota's measure of handling time. */
  readonly monotonicMs: () => number;
  /** SCRAM credentials written before the broker serves, where the user has none yet (`--add-scram`). */
  readonly scram?: readonly InitialScramCredential[];
}

/**
 * What a broker process brings besides its store, props, clock and logger: Node's timers, the disk
 * (checkpoints written in the background) and crypto randomness. The composition roots of `skiff
 * broker` and of `skiff up`'s children take these, so both run on the same real parts.
 */
export function processBrokerDeps(): Pick<
  StoreBrokerDeps,
  'scheduler' | 'fs' | 'randomBytes' | 'randomInt' | 'monotonicMs' | 'halt'
> {
  return {
    halt: (code) => process.exit(code),
    monotonicMs: () => performance.now(),
    scheduler: new TimerScheduler(),
    fs: processDisk(),
    randomBytes,
    randomInt: (n) => randomInt(n),
  };
}

/**
 * The real disk; slowed down on purpose when a fault test sets SKIFF_TEST_DISK_DELAYS in this
 * process's environment (storage/fs-delay.ts).
 */
function processDisk(): FileSystem {
  const disk = new NodeFileSystem({ backgroundWrites: true });
  const delaysFile = process.env[DISK_DELAYS_ENV];
  if (delaysFile === undefined || delaysFile === '') return disk;
  return new DelayingFileSystem(
    disk,
    delaysFromFile(delaysFile, () => performance.now()),
  );
}

/** The embedded store's directory inside the first log dir of a cluster of one (no `-<n>`: never a log). */
export const METADATA_DIR = 'skiff-metadata';

/** How long a stopping broker waits for the controller to move its leadership away. */
export const CONTROLLED_SHUTDOWN_TIMEOUT_MS = 10_000;

/** Keys the wiring reads itself; the broker's own parser does not know them and would warn. */
const WIRING_KEYS = new Set(['etcd.endpoints', 'broker.rack', 'http.listeners', 'http.auth.token']);

export class StoreBroker {
  private stopping: Promise<void> | null = null;

  private constructor(
    private readonly deps: StoreBrokerDeps,
    readonly config: BrokerConfig,
    readonly clusterId: string,
    readonly metadata: StoreClusterMetadata,
    readonly broker: Broker,
    private readonly controller: Controller,
    readonly address: BoundAddress,
    /** The embedded store of a cluster of one, closed when the broker stops; null: the caller's. */
    private readonly ownStore: EmbeddedStore | null,
    /** The `http.listeners` endpoint (GET /metrics); null when not configured. */
    readonly http: HttpEndpoint | null,
  ) {}

  static async start(deps: StoreBrokerDeps): Promise<StoreBroker> {
    const config = brokerConfigFromProperties(new Map(deps.props), (line) => {
      // Configs from the shared table (session timeout, unclean election, ...) are read by the
      // metadata layer and the controller, not by the broker's parser: not worth a warning.
      const key = /'([^']+)'/.exec(line)?.[1];
      if (key !== undefined && (WIRING_KEYS.has(key) || BROKER_CONFIG_DEFS.has(key))) return;
      deps.logger.warn(line);
    });
    // Nothing is written (log dirs, the embedded store) for a listener that cannot be had, nor for
    // a TLS listener whose key or trust store cannot be read.
    for (const l of config.listeners) {
      await checkListenable(bindHost(l), l.port);
      if (usesTls(l))
        listenerTls(l.listenerName, config.sslProps(l.listenerName), (p) => deps.fs.readFile(p));
    }
    const httpListener = deps.props.get('http.listeners');
    if (httpListener !== undefined && httpListener.trim() !== '') {
      const l = parseHttpListener(httpListener);
      if (deps.metrics === undefined)
        throw new Error('http.listeners is set but this broker keeps no metrics');
      await checkListenable(l.host, l.port);
    }
    if (deps.store !== undefined) return StoreBroker.startOn(deps, deps.store, config, null);
    // Opening the store makes its directory, the first log dir with it.
    const store = await EmbeddedStore.open({
      clock: deps.clock,
      scheduler: deps.scheduler,
      dataDir: path.join(config.logDirs[0]!, METADATA_DIR),
    });
    try {
      await importLegacyMetadata(store, config.logDirs[0]!, deps.fs, deps.logger);
      return await StoreBroker.startOn(deps, store, config, store);
    } catch (e) {
      await store.close();
      throw e;
    }
  }

  private static async startOn(
    deps: StoreBrokerDeps,
    store: MetadataStore,
    config: BrokerConfig,
    ownStore: EmbeddedStore | null,
  ): Promise<StoreBroker> {
    const { props, logger } = deps;
    const sessionTimeoutMs = intProp(props, 'broker.session.timeout.ms', 9000, 1000);
    // A heartbeat at least three times per session, as Kafka's defaults (2 s in 9 s) do.
    const heartbeatIntervalMs = Math.min(
      intProp(props, 'broker.heartbeat.interval.ms', 2000, 100),
      Math.floor(sessionTimeoutMs / 3),
    );
    const clusterId = await resolveClusterId(store, deps.randomBytes);
    const keys = new MetadataKeys(clusterId);
    for (const c of deps.scram ?? []) {
      if (await addScramCredentialIfAbsent(store, keys, c.user, c.mechanism, c.stored))
        logger.info(`created the ${c.mechanism} credential of user ${c.user}`);
    }
    deps.fs.mkdirp(config.logDirs[0]!);
    const rack = props.get('broker.rack')?.trim();
    const metadata = await StoreClusterMetadata.start({
      store,
      clusterId,
      broker: {
        id: config.nodeId,
        host: config.advertisedListeners[0]!.host,
        port: config.advertisedListeners[0]!.port,
        endpoints: advertisedEndpoints(config, null),
        rack: rack === undefined || rack === '' ? null : rack,
      },
      scheduler: deps.scheduler,
      logger,
      randomBytes: deps.randomBytes,
      sessionTimeoutMs,
      heartbeatIntervalMs,
    });
    const image = metadata.image();
    logger.info(
      `metadata snapshot at revision ${image.revision} applied before listening: ${image.topics.size} topics, ${image.topicConfigs.size + image.brokerConfigs.size} config entities, ${image.brokers.size} brokers registered`,
    );
    deps.metrics?.registry.setDefaultLabels({ node_id: String(config.nodeId) });
    const broker = new Broker({
      config,
      clock: deps.clock,
      scheduler: deps.scheduler,
      fs: deps.fs,
      metadata,
      logger,
      randomBytes: deps.randomBytes,
      ...(deps.metrics && { metrics: deps.metrics }),
      ...(deps.halt && { halt: deps.halt }),
      monotonicMs: deps.monotonicMs,
    });
    const controller = new Controller({
      store,
      clusterId,
      nodeId: config.nodeId,
      clock: deps.clock,
      scheduler: deps.scheduler,
      logger,
      randomInt: deps.randomInt,
      randomBytes: deps.randomBytes,
      sessionTimeoutMs,
      heartbeatIntervalMs,
      staticConfig: propertiesToRecord(props),
    });
    if (deps.metrics) registerControllerMetrics(deps.metrics, metadata, controller);
    let bound: BoundAddress;
    let http: HttpEndpoint | null = null;
    try {
      bound = await broker.start();
      // Listening now: leave the fenced registration (clients and leadership may come), with the
      // port bound (a listener on port 0 learns it only now).
      await metadata.unfence(advertisedEndpoints(config, broker.addresses));
      await controller.start();
      http = await startMetricsHttp(deps);
    } catch (e) {
      // Whatever was started is closed before the error is reported (no clean-shutdown marker
      // over logs that were never loaded: Broker.stop checks that).
      await controller.stop().catch(() => {});
      await broker.stop().catch(() => {});
      await metadata.close().catch(() => {});
      throw e;
    }
    return new StoreBroker(deps, config, clusterId, metadata, broker, controller, bound, ownStore, http);
  }

  /** True while this process holds the controller role. */
  isController(): boolean {
    return this.controller.isActive();
  }

  /**
   * Graceful stop; idempotent (a second signal waits for the first stop). `storeLost`: the
   * metadata store is known to be gone (the launcher died), so skip the steps that need it and
   * just close the broker cleanly.
   */
  stop(options: { storeLost?: boolean } = {}): Promise<void> {
    this.stopping ??= this.doStop(options.storeLost === true).finally(() => this.ownStore?.close());
    return this.stopping;
  }

  private async doStop(storeLost: boolean): Promise<void> {
    const { logger, props, scheduler } = this.deps;
    const id = this.config.nodeId;
    await this.http?.close();
    if (storeLost) {
      await this.broker.stop();
      this.controller.crash();
      this.metadata.crash();
      return;
    }
    if ((props.get('controlled.shutdown.enable') ?? 'true').trim().toLowerCase() !== 'false') {
      const started = this.deps.clock.nowMs();
      // Bounded as a whole: with the store unreachable even the first write could hang on retries.
      const moved = await withDeadline(
        scheduler,
        this.metadata.controlledShutdown(CONTROLLED_SHUTDOWN_TIMEOUT_MS),
        CONTROLLED_SHUTDOWN_TIMEOUT_MS,
      ).catch((e: Error) => {
        logger.warn(`broker ${id}: controlled shutdown failed: ${e.message}`);
        return false;
      });
      const ms = this.deps.clock.nowMs() - started;
      if (moved) logger.info(`broker ${id}: controlled shutdown complete in ${ms} ms`);
      else logger.warn(`broker ${id}: controlled shutdown incomplete after ${ms} ms; stopping anyway`);
    }
    await this.broker.stop();
    // Resigning and deregistering only save the others a session timeout; never wait long for them.
    await withDeadline(scheduler, this.controller.stop(), STORE_STEP_TIMEOUT_MS).catch((e: Error) =>
      logger.warn(`controller stop: ${e.message}`),
    );
    await withDeadline(scheduler, this.metadata.close(), STORE_STEP_TIMEOUT_MS).catch((e: Error) =>
      logger.warn(`deregistration: ${e.message} (the registration expires with its session)`),
    );
  }
}

/** The `http.listeners` endpoint serving the registry at /metrics, when configured. */
async function startMetricsHttp(deps: StoreBrokerDeps): Promise<HttpEndpoint | null> {
  const listener = deps.props.get('http.listeners');
  if (listener === undefined || listener.trim() === '' || deps.metrics === undefined) return null;
  const token = deps.props.get('http.auth.token')?.trim();
  const registry = deps.metrics.registry;
  return startHttpEndpoint({
    listener: parseHttpListener(listener),
    token: token === undefined || token === '' ? null : token,
    metrics: () => registry.metrics(),
  });
}

/**
 * The controller's gauges (Kafka's KafkaController metrics): reported by the active controller
 * only, 0 elsewhere, so a sum over the cluster counts each offline partition once.
 */
function registerControllerMetrics(
  metrics: Metrics,
  metadata: StoreClusterMetadata,
  controller: Controller,
): void {
  registerScrapeFamily(
    metrics.registry,
    'skiff_active_controller',
    "1 on the broker whose controller is active, else 0 (Kafka's ActiveControllerCount)",
    'gauge',
    (emit) => emit({}, controller.isActive() ? 1 : 0),
  );
  registerScrapeFamily(
    metrics.registry,
    'skiff_offline_partitions',
    "Partitions without a leader, counted by the active controller (Kafka's OfflinePartitionsCount)",
    'gauge',
    (emit) => {
      if (!controller.isActive()) return emit({}, 0);
      let n = 0;
      for (const t of metadata.image().topics.values()) for (const p of t.partitions) if (p.leader < 0) n++;
      emit({}, n);
    },
  );
}

/** The last steps of a stop that need the store (resign, revoke the lease). */
const STORE_STEP_TIMEOUT_MS = 3000;

function withDeadline<T>(scheduler: Scheduler, p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const cancel = scheduler.schedule('stop-step-deadline', ms, () =>
      reject(new Error(`no answer from the metadata store within ${ms} ms`)),
    );
    p.then(
      (v) => {
        cancel();
        resolve(v);
      },
      (e: unknown) => {
        cancel();
        reject(e);
      },
    );
  });
}

function intProp(props: ReadonlyMap<string, string>, key: string, fallback: number, min: number): number {
  const v = props.get(key);
  if (v === undefined) return fallback;
  const n = Number(v.trim());
  if (!Number.isInteger(n) || n < min) throw new Error(`${key}: expected an integer ≥ ${min}, got '${v}'`);
  return n;
}

/**
 * The endpoints registered for clients: advertised.listeners (or the listeners), each with the
 * port its listener is bound to where none is advertised (port 0: a free port, known once bound).
 */
function advertisedEndpoints(
  config: BrokerConfig,
  bound: ReadonlyMap<string, BoundAddress> | null,
): BrokerEndpoint[] {
  return config.advertisedListeners.map((a) => ({
    listenerName: a.listenerName,
    host: a.host,
    port: a.port !== 0 ? a.port : (bound?.get(a.listenerName)?.port ?? 0),
    securityProtocol: a.securityProtocol,
  }));
}
