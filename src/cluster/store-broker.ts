/**
 * One broker on a MetadataStore: the store-backed metadata (StoreClusterMetadata), a controller
 * candidate, and the Broker itself. Shared by the two ways Skiff runs a replicated broker — a child
 * process of `skiff up` (RemoteStore over the IPC channel) and `skiff broker` with `etcd.endpoints`
 * (EtcdStore) — so both start and stop in exactly the same order.
 *
 * Start order (issue 5: configs before fetchers and clients): cluster id → metadata snapshot
 * applied and a FENCED registration visible (StoreClusterMetadata.start) → logs loaded and the image
 * applied → listen (Broker.start) → unfenced (in the image: clients and leadership may come) →
 * controller candidate. Stop order: controlled shutdown (while this
 * process's controller, if active, can still move leadership away) → broker (connections, logs,
 * clean-shutdown marker) → controller resigns → registration lease revoked.
 */

import { Broker } from '../broker/broker.js';
import { type BrokerConfig, brokerConfigFromProperties } from '../broker/config.js';
import type { Clock } from '../common/clock.js';
import { Controller } from '../controller/controller.js';
import { BROKER_CONFIG_DEFS } from '../metadata/config-defs.js';
import { propertiesToRecord } from '../metadata/properties.js';
import type { MetadataStore } from '../metadata/store.js';
import { StoreClusterMetadata } from '../metadata/store-cluster-metadata.js';
import type { BoundAddress } from '../network/socket-server.js';
import type { FileSystem } from '../storage/fs.js';
import type { StorageLogger } from '../storage/logger.js';
import type { Scheduler } from '../storage/scheduler.js';
import { resolveClusterId } from './cluster-id.js';

export interface StoreBrokerDeps {
  readonly store: MetadataStore;
  /** server.properties as given (static configs); node.id, listeners, log.dirs, broker.rack... */
  readonly props: ReadonlyMap<string, string>;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly fs: FileSystem;
  readonly logger: StorageLogger;
  readonly randomBytes: (n: number) => Buffer;
  readonly randomInt: (n: number) => number;
}

/** How long a stopping broker waits for the controller to move its leadership away. */
export const CONTROLLED_SHUTDOWN_TIMEOUT_MS = 10_000;

/** Keys the wiring reads itself; the broker's own parser does not know them and would warn. */
const WIRING_KEYS = new Set(['etcd.endpoints', 'broker.rack']);

export class StoreBroker {
  private stopping: Promise<void> | null = null;

  private constructor(
    private readonly deps: StoreBrokerDeps,
    readonly config: BrokerConfig,
    readonly clusterId: string,
    readonly metadata: StoreClusterMetadata,
    private readonly broker: Broker,
    private readonly controller: Controller,
    readonly address: BoundAddress,
  ) {}

  static async start(deps: StoreBrokerDeps): Promise<StoreBroker> {
    const { props, logger, store } = deps;
    const config = brokerConfigFromProperties(new Map(props), (line) => {
      // Configs from the shared table (session timeout, unclean election, ...) are read by the
      // metadata layer and the controller, not by the broker's parser: not worth a warning.
      const key = /'([^']+)'/.exec(line)?.[1];
      if (key !== undefined && (WIRING_KEYS.has(key) || BROKER_CONFIG_DEFS.has(key))) return;
      logger.warn(line);
    });
    if (config.port === 0) {
      throw new Error(
        'listeners must name a port (not 0) when the metadata is shared: the port is registered before the broker listens',
      );
    }
    const sessionTimeoutMs = intProp(props, 'broker.session.timeout.ms', 9000, 1000);
    // A heartbeat at least three times per session, as Kafka's defaults (2 s in 9 s) do.
    const heartbeatIntervalMs = Math.min(
      intProp(props, 'broker.heartbeat.interval.ms', 2000, 100),
      Math.floor(sessionTimeoutMs / 3),
    );
    const clusterId = await resolveClusterId(store, deps.randomBytes);
    deps.fs.mkdirp(config.logDirs[0]!);
    const rack = props.get('broker.rack')?.trim();
    const metadata = await StoreClusterMetadata.start({
      store,
      clusterId,
      broker: {
        id: config.nodeId,
        host: config.advertisedHost,
        port: advertisedPort(props, config.port),
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
    const broker = new Broker({
      config,
      clock: deps.clock,
      scheduler: deps.scheduler,
      fs: deps.fs,
      metadata,
      logger,
      randomBytes: deps.randomBytes,
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
    let bound: BoundAddress;
    try {
      bound = await broker.start();
      // Listening now: leave the fenced registration (clients and leadership may come).
      await metadata.unfence();
      await controller.start();
    } catch (e) {
      // Whatever was started is closed before the error is reported (no clean-shutdown marker
      // over logs that were never loaded: Broker.stop checks that).
      await controller.stop().catch(() => {});
      await broker.stop().catch(() => {});
      await metadata.close().catch(() => {});
      throw e;
    }
    return new StoreBroker(deps, config, clusterId, metadata, broker, controller, bound);
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
    this.stopping ??= this.doStop(options.storeLost === true);
    return this.stopping;
  }

  private async doStop(storeLost: boolean): Promise<void> {
    const { logger, props, scheduler } = this.deps;
    const id = this.config.nodeId;
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

/** The port clients are told to use: advertised.listeners' if set (NAT, containers), else the listener's. */
function advertisedPort(props: ReadonlyMap<string, string>, listenerPort: number): number {
  const adv = props.get('advertised.listeners');
  if (adv === undefined) return listenerPort;
  const m = /:(\d+)\s*$/.exec(adv.split(',')[0]!.trim());
  return m === null ? listenerPort : Number(m[1]);
}
