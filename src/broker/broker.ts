/**
 * The composition root of one broker: the log manager, the replica manager following the cluster
 * metadata, the request router and the socket server. Everything it needs from the outside world
 * (clock, scheduler, file system, randomness, metadata, logger) is passed in, so tests run it on a
 * manual clock and the CLI on the real one. Owned by whoever starts it; `stop()` is a clean
 * shutdown (connections closed, logs flushed, checkpoints and the clean-shutdown marker written).
 */

import { statfsSync } from 'node:fs';
import { assert } from '../common/assert.js';
import type { Clock } from '../common/clock.js';
import { EventJournal, journaling } from '../common/event-journal.js';
import { LIMITS } from '../common/limits.js';
import type { Logger } from '../common/logger.js';
import type { SampleWindow } from '../common/sampled-stat.js';
import type { Scheduler } from '../common/scheduler.js';
import type { ClusterMetadata, MetadataImage } from '../metadata/cluster-metadata.js';
import { brokerConfigValue, type ConfigValue, layersFor } from '../metadata/config-resolve.js';
import type { Metrics } from '../metrics/registry.js';
import { DescriptorWatch } from '../network/descriptor-watch.js';
import type { BoundAddress, SocketServer } from '../network/socket-server.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import type { FetcherConfig } from '../replication/fetcher.js';
import type { AlterPartitionOutcome, IsrProposal } from '../replication/leader-state.js';
import { ReplicationQuota, type ReplicationQuotas } from '../replication/quota.js';
import { ReplicationManager } from '../replication/replication-manager.js';
import { AclAuthorizer } from '../security/authorizer.js';
import type { FileSystem } from '../storage/fs.js';
import type { LogConfig } from '../storage/log-config.js';
import {
  FailureDetectingFileSystem,
  LogDirFailureChannel,
  normalizeDir,
  storageTaskScheduler,
} from '../storage/log-dir-failure.js';
import { LogManager } from '../storage/log-manager.js';
import { AlterLogDirsManager } from './alter-log-dirs.js';
import { Authorization } from './authorization.js';
import { brokerSasl, brokerSocketServers, interBrokerTransport } from './broker-edges.js';
import { BrokerMetrics } from './broker-metrics.js';
import { registerCleanerMetrics } from './cleaner-metrics.js';
import { ClientQuotas } from './client-quota-manager.js';
import { type BrokerConfig, cleanerConfigOf } from './config.js';
import { applyDynamicConfigs, effectiveLogConfig, minInsyncReplicasOf } from './dynamic-config.js';
import { FetchSessionCache } from './fetch-session.js';
import type { GroupApi } from './group-api.js';
import { GroupCoordination } from './group-coordination.js';
import type { BrokerServices } from './handler-context.js';
import { TransactionApi } from './handlers/transactions.js';
import { ensureMetaProperties } from './meta-properties.js';
import { ReplicaManager } from './replica-manager.js';
import type { BrokerReplicaTransport } from './replica-transport.js';
import { RequestRouter } from './router.js';
import { registerBrokerStateMetrics } from './state-metrics.js';
import { TransactionCoordination } from './transaction-coordination.js';

export interface BrokerDeps {
  readonly config: BrokerConfig;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly fs: FileSystem;
  /** The cluster's metadata (store-backed: a cluster of one, `skiff up` or etcd). */
  readonly metadata: ClusterMetadata;
  readonly logger: Logger;
  /** crypto.randomBytes in production; seeded in tests. */
  readonly randomBytes: (n: number) => Buffer;
  /**
   * The consumer-group API. Left out, the broker runs its own GroupCoordinator on
   * __consumer_offsets; null turns the group APIs off (they are then absent from ApiVersions).
   */
  readonly groupApi?: GroupApi | null;
  /**
   * Total and usable bytes of the file system holding a log dir (DescribeLogDirs v4). Defaults to
   * statfs on the real file system (the FileSystem abstraction has no statfs; a test injects this).
   */
  readonly diskSpace?: (logDir: string) => { totalBytes: bigint; usableBytes: bigint };
  /**
   * The registry this broker's metrics go to (one per broker; its composition root made it and
   * serves it). Absent: no metrics are kept, not even the hot-path counters.
   */
  readonly metrics?: Metrics;
  /** A monotonic clock with sub-millisecond resolution: the request quota's measure of handling time. */
  readonly monotonicMs: () => number;
  /**
   * Ends the process at once, no shutdown (Kafka's Exit.halt): what a broker whose every log dir
   * failed does. Absent (a broker inside a test process): the broker only logs it.
   */
  readonly halt?: (code: number) => void;
}

function statfsSpace(dir: string): { totalBytes: bigint; usableBytes: bigint } {
  const s = statfsSync(dir, { bigint: true });
  return { totalBytes: s.blocks * s.bsize, usableBytes: s.bavail * s.bsize };
}

export class Broker {
  readonly logManager: LogManager;
  readonly replicaManager: ReplicaManager;
  readonly router: RequestRouter;
  /** The broker's own group coordinator (null when a GroupApi was passed in, or none wanted). */
  readonly groups: GroupCoordination | null;
  /** The broker's transaction coordinator, and the partition leader's side of its markers. */
  readonly transactions: TransactionCoordination;
  /** Replication roles and fetchers. */
  readonly replication: ReplicationManager;
  /** The log dirs that failed (Kafka's LogDirFailureChannel); offline until a restart. */
  readonly logDirFailures: LogDirFailureChannel;
  /** Replica moves between this broker's log dirs (AlterReplicaLogDirs). */
  readonly alterLogDirs: AlterLogDirsManager;
  /** Client quotas, enforced on Produce, consumer Fetch and request handling time. */
  readonly clientQuotas: ClientQuotas;
  private readonly replicaTransport: BrokerReplicaTransport;
  /** One socket server per listener, in `listeners` order. */
  private readonly servers: ReadonlyMap<string, SocketServer>;
  /** Says once when the process runs out of file descriptors (connections are then refused). */
  private readonly descriptors: DescriptorWatch;
  private unsubscribe: (() => void) | null = null;
  /** The last metadata image applied, the next one waiting, and the slices of one under way. */
  private appliedImage!: MetadataImage;
  private nextImage: MetadataImage | null = null;
  private applyingImage: Promise<void> | null = null;
  /** A report of the offline replicas is scheduled (reportOfflineReplicas). */
  private offlineReportPending = false;
  private state: 'new' | 'started' | 'stopped' = 'new';
  /** The logs were loaded (and so recovered): only then may a shutdown write the clean-shutdown marker. */
  private logsLoaded = false;
  private producerIdCounter = 0n;
  private readonly producerIdBase: bigint;
  /** currentConfig's values, for the metadata image they were resolved from. */
  private configImage: unknown = null;
  private readonly configCache = new Map<string, ConfigValue | null>();

  /** deps.logger with the operator events journaled (see EventJournal). */
  private readonly logger: Logger;

  constructor(private readonly deps: BrokerDeps) {
    const { config, clock, scheduler, fs, metadata } = deps;
    // Every layer logs through this tee: its operator events are kept for SkiffDescribeReplication.
    const events = new EventJournal(clock, LIMITS.replicationEventsKept);
    const logger = journaling(deps.logger, events);
    this.logger = logger;
    const topicConfig = (topic: string) =>
      effectiveLogConfig(config.log, metadata.image(), config.nodeId, topic);
    this.logDirFailures = new LogDirFailureChannel(config.logDirs, clock, scheduler, logger);
    this.logManager = this.createLogManager(
      logger,
      topicConfig,
      new FailureDetectingFileSystem(fs, this.logDirFailures),
    );
    this.replicaTransport = interBrokerTransport(config, metadata, scheduler, fs, () =>
      this.intConfig('replica.socket.timeout.ms'),
    );
    this.replication = this.replicationManager(metadata, this.replicaTransport, logger);
    this.replicaManager = new ReplicaManager(
      config.nodeId,
      this.logManager,
      this.replication,
      topicConfig,
      logger,
      () => this.reportOfflineReplicas(),
    );
    this.logDirFailures.onOfflineLogDir((dir) => this.handleLogDirFailure(dir));
    this.alterLogDirs = new AlterLogDirsManager({
      logManager: this.logManager,
      clock,
      scheduler,
      logger,
      rateBytesPerSec: () => this.rateConfig('replica.alter.log.dirs.io.max.bytes.per.second'),
      chunkBytes: () => this.intConfig('replica.fetch.max.bytes'),
      windowMs: this.intConfig('alter.log.dirs.replication.quota.window.size.seconds') * 1000,
    });
    // Producer ids: start time in the high bits, so a restarted broker never hands out an id it gave
    // before (unless it issued over 1024 ids per ms of uptime), the node id in the low bits.
    this.producerIdBase = (BigInt(clock.nowMs()) << 20n) + BigInt(config.nodeId % 1024);
    this.clientQuotas = new ClientQuotas(
      this.quotaWindow(''),
      this.quotaWindow('controller.'),
      () => metadata.image().clientQuotas,
    );
    const authorizer =
      config.authorizer === null ? null : new AclAuthorizer(config.authorizer, () => metadata.image().acls);
    this.descriptors = new DescriptorWatch(scheduler, logger);
    const services: BrokerServices = {
      config,
      authorization: new Authorization(authorizer),
      clock,
      scheduler,
      logger,
      metadata,
      replicaManager: this.replicaManager,
      alterLogDirs: this.alterLogDirs,
      descriptors: this.descriptors,
      fetchSessions: new FetchSessionCache(
        config.maxIncrementalFetchSessionCacheSlots,
        clock,
        () => deps.randomBytes(4).readInt32BE(0) & 0x7fffffff,
      ),
      nextProducerId: () => this.producerIdBase + (this.producerIdCounter++ << 10n),
      randomInt: (bound) => deps.randomBytes(4).readUInt32BE(0) % bound,
      diskSpace: deps.diskSpace ?? statfsSpace,
      events,
      ...(deps.metrics && { metrics: new BrokerMetrics(deps.metrics) }),
      clientQuotas: this.clientQuotas,
      verifyTransaction: (...a) => this.transactions.verifyTransaction(...a),
      ...brokerSasl(config, metadata, clock, deps.randomBytes),
    };
    this.groups = deps.groupApi === undefined ? new GroupCoordination(services) : null;
    const txn = this.wireTransactions(services);
    this.transactions = txn.coordination;
    this.router = new RequestRouter(
      services,
      deps.groupApi === undefined ? this.groups!.coordinator : deps.groupApi,
      deps.monotonicMs,
      txn.api,
    );
    this.servers = brokerSocketServers(
      { config, clock, scheduler, fs, logger, sasl: services.sasl, descriptors: this.descriptors },
      this.router,
      (name) => this.intConfig(name),
    );
    if (deps.metrics) {
      registerBrokerStateMetrics(deps.metrics.registry, {
        nodeId: config.nodeId,
        clock,
        replicaManager: this.replicaManager,
        logManager: this.logManager,
        connections: () => ({
          open: new Map([...this.servers].map(([name, s]) => [name, s.connectionCount])),
          rejected: this.rejectedConnections,
        }),
        clientQuotas: this.clientQuotas,
      });
      const cleaner = this.logManager.cleaner;
      if (cleaner !== null)
        registerCleanerMetrics(deps.metrics.registry, cleaner, this.logManager.logDirs, clock);
    }
  }

  /**
   * A log dir failed (Kafka's LogDirFailureHandler): its replicas stop being served (the replica
   * manager then has the controller told, which moves their leadership and ISR membership to the
   * other replicas), and with no log dir left the process halts, as Kafka's does.
   */
  private handleLogDirFailure(normalized: string): void {
    const { config } = this.deps;
    const dir = config.logDirs.find((d) => normalizeDir(d) === normalized) ?? normalized;
    this.replicaManager.handleLogDirFailure(dir);
    if (this.logManager.liveLogDirs.length === 0) {
      this.logger.warn(`Shutdown broker because all log dirs in ${config.logDirs.join(', ')} have failed`);
      this.deps.halt?.(1);
    }
  }

  /** Tells the controller every offline replica here, once per turn however many went offline in it. */
  private reportOfflineReplicas(): void {
    if (this.offlineReportPending) return;
    this.offlineReportPending = true;
    this.deps.scheduler.schedule('report-offline-replicas', 0, () => {
      this.offlineReportPending = false;
      const offlineReplicas = this.replicaManager.offlinePartitions();
      const offlineLogDirs = this.logDirFailures.offlineLogDirs().map((d) => d.dir);
      this.deps.metadata.reportOfflineReplicas({ offlineLogDirs, offlineReplicas }).catch((e: unknown) => {
        const why = e instanceof Error ? e.message : String(e);
        this.logger.warn(
          `telling the controller of the offline log dirs ${offlineLogDirs.join(',')} failed: ${why}`,
        );
      });
    });
  }

  /**
   * A broker config's current value, typed: this broker's dynamic value, else the cluster default,
   * else server.properties, else Kafka's default. What run-time readers of dynamic configs
   * (replica.lag.time.max.ms for the ISR check, say) call each time instead of caching.
   */
  currentConfig(name: string): ConfigValue | null {
    const { metadata, config } = this.deps;
    // Resolved once per metadata image (a new object on every change): the replica fetchers and
    // quotas ask on every round, hundreds of times a second under acks=all.
    const image = metadata.image();
    if (image !== this.configImage) {
      this.configImage = image;
      this.configCache.clear();
    }
    if (this.configCache.has(name)) return this.configCache.get(name)!;
    const v = brokerConfigValue(name, layersFor(image, config.nodeId, config.staticProps));
    this.configCache.set(name, v);
    return v;
  }

  /** A bytes/s broker config; null when unlimited (Long.MAX_VALUE, Kafka's default). */
  private rateConfig(name: string): number | null {
    const v = this.currentConfig(name);
    const n = typeof v === 'bigint' ? v : typeof v === 'number' ? BigInt(v) : null;
    return n === null || n >= BigInt(Number.MAX_SAFE_INTEGER) ? null : Number(n);
  }

  /** The transaction coordinator and its APIs (the local partition leader answers its own markers). */
  private wireTransactions(services: BrokerServices): {
    coordination: TransactionCoordination;
    api: TransactionApi;
  } {
    const requestTimeoutMs = () => this.intConfig('request.timeout.ms');
    let api: TransactionApi | null = null;
    const coordination = new TransactionCoordination({
      ...services,
      writeTxnMarkers: (req) => api!.writeTxnMarkersAsLeader(req),
      sendTxnMarkers: (brokerId, req) => this.replicaTransport.writeTxnMarkers(brokerId, req),
      sendAddPartitionsToTxn: (brokerId, req) => this.replicaTransport.addPartitionsToTxn(brokerId, req),
      verificationEnabled: () => this.currentConfig('transaction.partition.verification.enable') === true,
      requestTimeoutMs,
    });
    // Markers on __consumer_offsets complete the transactional offset commits of the group
    // coordinator running here (none when a GroupApi was plugged in instead).
    api = new TransactionApi(
      services,
      coordination,
      () => this.groups?.coordinator ?? null,
      requestTimeoutMs,
    );
    return { coordination, api };
  }

  /** An int or long broker config; its default is config-defs.ts's, so it always has a value. */
  private createLogManager(
    logger: Logger,
    topicConfig: (topic: string) => LogConfig,
    fs: FileSystem,
  ): LogManager {
    const { config, clock, scheduler } = this.deps;
    return new LogManager(
      config.logDirs,
      config.log,
      { fs, clock, scheduler: storageTaskScheduler(scheduler), logger },
      config.logManager,
      topicConfig,
      // Read at every cleaner turn and every producer-id expiration check: dynamic, as in Kafka.
      () => cleanerConfigOf((name) => this.currentConfig(name)),
      () => this.intConfig('producer.id.expiration.ms'),
    );
  }

  private intConfig(name: string): number {
    const v = this.currentConfig(name);
    assert(typeof v === 'number' || typeof v === 'bigint', `broker config ${name} has no numeric value`);
    return Number(v);
  }

  /** `<prefix>quota.window.num` samples of `<prefix>quota.window.size.seconds` (client or controller quotas). */
  private quotaWindow(prefix: '' | 'controller.'): SampleWindow {
    return {
      samples: this.intConfig(`${prefix}quota.window.num`),
      sampleMs: this.intConfig(`${prefix}quota.window.size.seconds`) * 1000,
    };
  }

  /** The wiring of src/replication/README.md ("Integration seams"); test/sim/sim-broker.ts is its model. */
  private replicationManager(metadata: ClusterMetadata, transport: BrokerReplicaTransport, logger: Logger) {
    const { config, clock, scheduler } = this.deps;
    const fetcherConfig = (): FetcherConfig => ({
      fetchMaxBytes: this.intConfig('replica.fetch.max.bytes'),
      responseMaxBytes: this.intConfig('replica.fetch.response.max.bytes'),
      maxWaitMs: this.intConfig('replica.fetch.wait.max.ms'),
      minBytes: this.intConfig('replica.fetch.min.bytes'),
      backoffMs: this.intConfig('replica.fetch.backoff.ms'),
    });
    const alterPartition = async (p: IsrProposal): Promise<AlterPartitionOutcome> => {
      const r = await metadata.alterPartition([
        {
          topic: p.topic,
          partitions: [
            {
              partition: p.partition,
              leaderEpoch: p.leaderEpoch,
              partitionEpoch: p.partitionEpoch,
              newIsr: [...p.newIsr],
              newIsrEpochs: p.newIsrEpochs.map((e) => e.toString()),
              cause: p.cause,
              reason: p.reason,
            },
          ],
        },
      ]);
      const none = { leaderId: -1, leaderEpoch: -1, isr: [], partitionEpoch: -1 };
      if (r.errorCode !== 0) return { ...none, errorCode: r.errorCode };
      const pr = r.topics
        .find((t) => t.topic === p.topic)
        ?.partitions.find((x) => x.partition === p.partition);
      if (!pr) return { ...none, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION };
      return pr;
    };
    return new ReplicationManager({
      quotas: this.replicationQuotas(metadata),
      localBrokerId: config.nodeId,
      clock,
      logger,
      scheduler,
      transport,
      brokerEpoch: () => metadata.brokerEpoch(),
      fetcherConfig,
      replicaLagTimeMaxMs: () => this.intConfig('replica.lag.time.max.ms'),
      numReplicaFetchers: () => this.intConfig('num.replica.fetchers'),
      minInsyncReplicas: (topic) =>
        minInsyncReplicasOf(metadata.image(), config.nodeId, config.minInsyncReplicas, topic),
      isReplicaIsrEligible: (id, epoch) => {
        const b = metadata.image().brokers.get(id);
        return b !== undefined && !b.inControlledShutdown && (epoch === -1n || epoch === b.epoch);
      },
      alterPartition,
    });
  }

  /**
   * Both sides of this broker's replication throttle: rates from the dynamic broker configs (this
   * broker's, else the cluster default), throttled lists from the topic configs, read at every
   * fetch — the first image (with its configs) is applied before any fetcher runs.
   */
  private replicationQuotas(metadata: ClusterMetadata): ReplicationQuotas {
    const { config, clock } = this.deps;
    const window = {
      samples: this.intConfig('replication.quota.window.num'),
      sampleMs: this.intConfig('replication.quota.window.size.seconds') * 1000,
    };
    const side = (s: 'leader' | 'follower') => {
      // Read at every fetch: the names are built once.
      const rateName = `${s}.replication.throttled.rate`;
      const listName = `${s}.replication.throttled.replicas`;
      return new ReplicationQuota({
        side: s,
        localBrokerId: config.nodeId,
        clock,
        window,
        rate: () => this.rateConfig(rateName),
        throttledReplicas: (topic) => metadata.image().topicConfigs.get(topic)?.[listName],
      });
    };
    return { leader: side('leader'), follower: side('follower') };
  }

  /** The first listener's address. */
  get address(): BoundAddress {
    return this.servers.values().next().value!.address;
  }

  /** Every listener's bound address, by listener name, in `listeners` order. */
  get addresses(): ReadonlyMap<string, BoundAddress> {
    return new Map([...this.servers].map(([name, s]) => [name, s.address]));
  }

  get connectionCount(): number {
    let n = 0;
    for (const s of this.servers.values()) n += s.connectionCount;
    return n;
  }

  private get rejectedConnections(): number {
    let n = 0;
    for (const s of this.servers.values()) n += s.rejectedConnections;
    return n;
  }

  /** Checks meta.properties, loads the logs, applies the current metadata, then listens and registers. */
  async start(): Promise<BoundAddress> {
    const startMs = this.deps.clock.nowMs();
    assert(this.state === 'new', `broker ${this.deps.config.nodeId} was already started`);
    this.state = 'started';
    const { config, fs, metadata, randomBytes } = this.deps;
    ensureMetaProperties(fs, config.logDirs, config.nodeId, metadata.image().clusterId, randomBytes);
    // Registered and fenced by now (no client, no leadership): the heartbeats keep the session
    // while the logs load and the first image's partitions are set up, both in slices.
    const loadedWith = metadata.image();
    await this.logManager.startupInSlices(LIMITS.startupSliceMs);
    this.throwIfStopped();
    const first = metadata.image();
    await this.replicaManager.applyFirstImageInSlices(first, this.deps.clock, LIMITS.startupSliceMs);
    this.throwIfStopped();
    // The image may have moved on meanwhile (configs the logs were opened with, partitions): its
    // changes are applied before anything subscribes to the next ones.
    const latest = metadata.image();
    applyDynamicConfigs(this.logManager, config.log, config.nodeId, latest, loadedWith);
    if (latest !== first) this.replicaManager.applyImage(latest);
    this.logsLoaded = true;
    // Fetchers and the isr-expiration task run once the first image and its configs are applied.
    this.replication.start();
    this.alterLogDirs.start();
    this.groups?.applyImage(metadata.image(), null);
    this.transactions.applyImage(metadata.image());
    this.appliedImage = latest;
    this.unsubscribe = metadata.onChange((image) => this.imageChanged(image));
    // A partition whose log found no file descriptor is set up once they are free again.
    this.descriptors.onAvailable(() => this.imageChanged(metadata.image()));
    for (const server of this.servers.values()) await server.listen();
    this.descriptors.start();
    const bound = this.address;
    const durationMs = this.deps.clock.nowMs() - startMs;
    const where = [...this.addresses].map(([name, a]) => `${name}://${a.host}:${a.port}`).join(', ');
    this.logger.info(
      `broker ${this.deps.config.nodeId} listening on ${where} (${this.replicaManager.partitionCount} partitions)`,
      {
        event: 'startup',
        nodeId: this.deps.config.nodeId,
        host: bound.host,
        port: bound.port,
        partitions: this.replicaManager.partitionCount,
        logs: this.logManager.allLogs().length,
        durationMs,
      },
    );
    return bound;
  }

  /**
   * Applies the metadata images one at a time, in order. One that takes longer than a slice (a
   * topic of thousands of partitions: a log created for each, tens of seconds of synchronous disk
   * work) goes on in slices between which the heartbeats, the controller and the clients are
   * served — before, the broker's session expired under it and the controller moved every new
   * partition to another leader epoch. An image arriving meanwhile waits; only the latest is
   * applied next, against the last one applied.
   */
  private imageChanged(image: MetadataImage): void {
    this.nextImage = image;
    while (this.applyingImage === null && this.nextImage !== null && this.state === 'started') {
      const next = this.nextImage;
      const previous = this.appliedImage;
      this.nextImage = null;
      const { config } = this.deps;
      applyDynamicConfigs(this.logManager, config.log, config.nodeId, next, previous);
      const rest = this.descriptors.guard(() =>
        this.replicaManager.applyImageInSlices(
          next,
          this.deps.clock,
          LIMITS.imageSliceMs,
          () => this.state !== 'started',
          // The coordinators take up the partitions already set up (their leadership is read from
          // the replica manager), so the groups on them are served before the last slice.
          () => {
            if (this.state === 'started') this.followCoordinators(next, null);
          },
        ),
      );
      if (!rest) {
        this.imageApplied(next, previous);
        continue;
      }
      this.applyingImage = rest
        .catch((e: unknown) => {
          // As for the first slice: descriptors running out are waited out (onAvailable applies the
          // image again); anything else is one warning line, and the image stays applied as far as it went.
          if (this.descriptors.absorbs(e)) return;
          this.logger.warn(
            `applying the metadata at revision ${next.revision}: ${e instanceof Error ? e.message : String(e)}`,
          );
        })
        .then(() => {
          this.applyingImage = null;
          if (this.state !== 'started') return;
          this.imageApplied(next, previous);
          if (this.nextImage !== null) this.imageChanged(this.nextImage);
        });
    }
  }

  /** What follows the partitions of an image: fetchers, group and transaction coordinators. */
  private imageApplied(image: MetadataImage, previous: MetadataImage): void {
    this.appliedImage = image;
    this.replication.maybeResizeFetchers();
    this.followCoordinators(image, previous);
  }

  /** The coordinators follow the leadership of their partitions; `previous` null: no deletions looked for. */
  private followCoordinators(image: MetadataImage, previous: MetadataImage | null): void {
    this.groups?.applyImage(image, previous);
    this.transactions.applyImage(image);
  }

  /** stop() came while starting: what was loaded is left as a crash would leave it. */
  private throwIfStopped(): void {
    if (this.state === 'started') return;
    this.logManager.abandon();
    throw new Error(`broker ${this.deps.config.nodeId} was stopped while loading its logs`);
  }

  /** Clean shutdown: stop accepting, close connections, flush and close every log, write the marker. */
  async stop(): Promise<void> {
    if (this.state !== 'started') return;
    this.state = 'stopped';
    const stopMs = this.deps.clock.nowMs();
    this.unsubscribe?.();
    // Parked JoinGroup/SyncGroup requests are answered and the coordinator's timers cancelled
    // before the connections go.
    this.groups?.shutdown();
    this.transactions.shutdown();
    this.descriptors.stop();
    await Promise.all([...this.servers.values()].map((s) => s.close()));
    // Parked fetches and produces finish now, while the logs are still open; their answers go
    // nowhere (the connections are closed) but their handlers must not read closed logs later.
    // Fetchers stop before the logs close: no late answer is appended to a closed log.
    this.replication.shutdown();
    this.alterLogDirs.shutdown();
    this.replicaTransport.close();
    if (this.replication.purgatory.forceCompleteAll() > 0) await new Promise((r) => setImmediate(r));
    if (!this.logsLoaded) return;
    // A log start write under way must not land after shutdown's own (it would hold older starts).
    await this.logManager.whenLogStartOffsetsPersisted();
    const logs = this.logManager.allLogs().length;
    this.logManager.shutdown();
    this.logger.info(`broker ${this.deps.config.nodeId} stopped cleanly`, {
      event: 'shutdown',
      nodeId: this.deps.config.nodeId,
      logs,
      durationMs: this.deps.clock.nowMs() - stopMs,
    });
  }
}
