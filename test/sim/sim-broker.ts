/**
 * One simulated broker running the broker's own data path: the real LogManager on its own
 * directory, the ReplicaManager and its Partitions, the ReplicationManager with its purgatory, and
 * the real Produce and Fetch handlers (acks=0/1/all, follower fetches, consumer long polls) — over
 * the simulation's clock, scheduler and network instead of sockets. Only the wiring is the
 * simulation's own (as src/broker/broker.ts is the real one's); crash / restart drop every
 * in-memory state and recover from the files, as a killed broker process does.
 */

import * as fs from 'node:fs';
import { Authorization } from '../../src/broker/authorization.js';
import { brokerConfig } from '../../src/broker/config.js';
import { FetchSessionCache } from '../../src/broker/fetch-session.js';
import type { BrokerServices, RequestContext } from '../../src/broker/handler-context.js';
import { handleFetch } from '../../src/broker/handlers/fetch.js';
import { handleProduce } from '../../src/broker/handlers/produce.js';
import { ReplicaManager } from '../../src/broker/replica-manager.js';
import type { Clock } from '../../src/common/clock.js';
import { SeededRandom } from '../../src/common/random.js';
import { topicPartitionKey } from '../../src/common/topic-partition.js';
import type {
  ClusterMetadata,
  MetadataImage,
  PartitionState,
  TopicInfo,
} from '../../src/metadata/cluster-metadata.js';
import { CloseConnectionError } from '../../src/network/request-handler.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import type { FetchRequest } from '../../src/protocol/generated/FetchRequest.js';
import type { FetchResponse } from '../../src/protocol/generated/FetchResponse.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import { KafkaError } from '../../src/protocol/kafka-error.js';
import { readBatchHeader } from '../../src/protocol/records/batch.js';
import { encodeEndTxnMarkerBatch } from '../../src/protocol/records/end-txn-marker.js';
import { awaitAcks } from '../../src/replication/delayed-produce.js';
import type { FetcherConfig, ReplicaTransport } from '../../src/replication/fetcher.js';
import type { ReplicationEvent } from '../../src/replication/follower.js';
import type { PartitionLeaderState } from '../../src/replication/leader-state.js';
import { ReplicationManager } from '../../src/replication/replication-manager.js';
import { ANONYMOUS } from '../../src/security/principal.js';
import type { StorageContext } from '../../src/storage/local-log.js';
import type { Log } from '../../src/storage/log.js';
import { type LogConfig, logConfig } from '../../src/storage/log-config.js';
import { LogManager } from '../../src/storage/log-manager.js';
import { testContext } from '../storage/helpers.js';
import type { SimController } from './sim-controller.js';
import { BrokerScheduler, type EventQueue, RingLogger, type SimNetwork } from './sim-core.js';

export interface BrokerSimConfig {
  replicaLagTimeMaxMs: number;
  minInsyncReplicas: number;
  fetcher: FetcherConfig;
  segmentBytes: number;
  sessionTimeoutMs: number;
  produceTimeoutMs: number;
  /** How often a live broker renews its session with the controller (its lease keep-alive). */
  heartbeatIntervalMs: number;
}

export interface ProduceResult {
  readonly errorCode: number;
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  /** acks=all: the leader epoch of the leader that appended it (-1 otherwise). */
  readonly leaderEpoch?: number;
}

/** A request the broker has taken and not answered yet (for the invariants). */
export type Outstanding =
  | {
      readonly kind: 'produce';
      readonly key: string;
      /** The HW that acknowledges the append. */
      offset: bigint;
      /** The leader state the append went to, whose acks=all check decides. */
      leader: PartitionLeaderState | undefined;
      readonly sinceMs: number;
    }
  | {
      readonly kind: 'fetch';
      /** -1 for a consumer (reads up to the HW), else the follower's broker id (up to the LEO). */
      readonly replicaId: number;
      /** A read_committed consumer: reads up to the last stable offset. */
      readonly readCommitted: boolean;
      readonly partitions: readonly { readonly key: string; readonly offset: bigint }[];
      readonly sinceMs: number;
    };

/** The one topic id of the simulation's topic `t` (any Kafka Uuid other than zero). */
const SIM_TOPIC_ID = 'c2ltdWxhdGVkLXRvcGljLg';

/** Fills the gaps of a topic's partition list before every partition's state has arrived. */
function unknownPartition(topic: string, partition: number): PartitionState {
  return {
    topic,
    partition,
    leader: -1,
    leaderEpoch: -1,
    partitionEpoch: -1,
    replicas: [],
    isr: [],
    addingReplicas: [],
    removingReplicas: [],
  };
}

export class SimBroker {
  alive = false;
  incarnation = 0;
  /** Until when the process is paused (GC pause, SIGSTOP): it takes no message and runs no timer. */
  pausedUntilMs = 0;
  /** How far this host's wall clock is off the simulation's time (stepped by NTP, an operator). */
  wallClockSkewMs = 0;
  /**
   * The wall clock its code reads (record timestamps, ISR lag, backoffs): the simulation's time
   * plus the skew. Its timers run on the scheduler, which like setTimeout follows monotonic time.
   */
  readonly wallClock: Clock = { nowMs: () => this.queue.clock.nowMs() + this.wallClockSkewMs };
  epoch = -1n;
  readonly logger: RingLogger;
  /** The latest partition state applied, by partition key (older ones from the network are dropped). */
  readonly states = new Map<string, PartitionState>();
  /** The replication roles of this incarnation (a new one at every start). */
  replication: ReplicationManager;
  readonly events: ReplicationEvent[] = [];
  /** Produces and consumer fetches taken and not answered yet. */
  readonly outstanding = new Set<Outstanding>();
  private scheduler: BrokerScheduler;
  private logManager: LogManager | null = null;
  private replicaManager: ReplicaManager | null = null;
  private services: BrokerServices | null = null;
  private image: MetadataImage;
  private producerIds = 0n;
  private readonly handlerRandom: SeededRandom;

  constructor(
    readonly id: number,
    readonly dir: string,
    private readonly queue: EventQueue,
    private readonly net: SimNetwork,
    private readonly controller: SimController,
    readonly config: BrokerSimConfig,
  ) {
    this.logger = new RingLogger(queue.clock, `[broker ${id}]`);
    this.handlerRandom = new SeededRandom(id);
    this.scheduler = new BrokerScheduler(queue, () => this.pausedUntilMs);
    this.replication = this.replicationManager();
    this.image = this.imageOf();
  }

  /** The logs this incarnation has open, by partition key. */
  get logs(): Map<string, Log> {
    const out = new Map<string, Log>();
    for (const log of this.logManager?.allLogs() ?? [])
      out.set(topicPartitionKey(log.topic, log.partition), log);
    return out;
  }

  /** The wiring src/broker/broker.ts does for the real broker (see src/replication/README.md). */
  private replicationManager(): ReplicationManager {
    return new ReplicationManager({
      localBrokerId: this.id,
      clock: this.wallClock,
      logger: this.logger,
      scheduler: this.scheduler,
      transport: this.transport(),
      brokerEpoch: () => this.epoch,
      fetcherConfig: () => this.config.fetcher,
      replicaLagTimeMaxMs: () => this.config.replicaLagTimeMaxMs,
      minInsyncReplicas: () => this.config.minInsyncReplicas,
      isReplicaIsrEligible: (id, epoch) => this.controller.isEligible(id, epoch),
      alterPartition: (p) => {
        const epoch = this.epoch;
        return this.net.request(
          this.id,
          0,
          () => this.controller.alterPartition(this.id, epoch, p),
          'controller',
        );
      },
      onEvent: (e) => this.events.push(e),
    });
  }

  private storageContext(): StorageContext {
    // The test file system without fsync (a process crash keeps what was written; a power cut is
    // simulated by cutting the tail explicitly), on the simulation's clock and this broker's scheduler.
    return { ...testContext(), clock: this.wallClock, scheduler: this.scheduler, logger: this.logger };
  }

  private logConfig(): LogConfig {
    return logConfig({ segmentBytes: this.config.segmentBytes, fileDeleteDelayMs: 60_000 });
  }

  /** A broker process starting: logs recovered from its directory, then the metadata, then fetchers. */
  start(): void {
    this.alive = true;
    this.incarnation++;
    this.scheduler = new BrokerScheduler(this.queue, () => this.pausedUntilMs);
    this.replication = this.replicationManager();
    const logs = new LogManager([this.dir], this.logConfig(), this.storageContext(), undefined, () =>
      this.logConfig(),
    );
    logs.startup();
    this.logManager = logs;
    this.replicaManager = new ReplicaManager(
      this.id,
      logs,
      this.replication,
      () => this.logConfig(),
      this.logger,
    );
    this.services = this.brokerServices(this.replicaManager);
    this.epoch = this.controller.register(this.id);
    this.states.clear();
    for (const st of this.controller.allStates())
      this.states.set(topicPartitionKey(st.topic, st.partition), st);
    this.applyImage();
    this.replication.start();
    this.logger.info(`started with broker epoch ${this.epoch}`);
    this.heartbeat();
  }

  /**
   * The session keep-alive (src/metadata/store-cluster-metadata.ts): one at a time; a lost one is
   * retried at the next interval; once fenced (the session expired) the broker registers again
   * with a new epoch, as the real one does when its lease is gone.
   */
  private heartbeat(): void {
    const incarnation = this.incarnation;
    const interval = this.config.heartbeatIntervalMs;
    this.scheduler.schedule('broker-heartbeat', interval, () => {
      const epoch = this.epoch;
      void this.net
        .request(this.id, 0, () => this.controller.heartbeat(this.id, epoch), 'heartbeat', interval)
        .then(
          (alive) => {
            if (!this.alive || this.incarnation !== incarnation) return;
            if (!alive && this.epoch === epoch) {
              this.epoch = this.controller.register(this.id);
              this.logger.warn(`fenced (session expired); registered again with epoch ${this.epoch}`);
            }
          },
          () => {},
        )
        .finally(() => {
          if (this.alive && this.incarnation === incarnation) this.heartbeat();
        });
    });
  }

  /** The host's wall clock steps by `deltaMs` (forward or back). */
  jumpClock(deltaMs: number): void {
    this.logger.info(`wall clock jumps ${deltaMs > 0 ? 'forward' : 'back'} ${Math.abs(deltaMs)} ms`);
    this.wallClockSkewMs += deltaMs;
  }

  /** A process pause (GC, SIGSTOP) of `ms`: nothing runs in it, its session may expire meanwhile. */
  pause(ms: number): void {
    if (!this.alive) return;
    this.logger.info(`paused for ${ms} ms`);
    this.pausedUntilMs = Math.max(this.pausedUntilMs, this.queue.clock.nowMs() + ms);
  }

  /** What the handlers may use: this broker's clock, scheduler, metadata and partitions. */
  private brokerServices(replicaManager: ReplicaManager): BrokerServices {
    const metadata: Pick<ClusterMetadata, 'image'> = { image: () => this.image };
    return {
      config: brokerConfig({ nodeId: this.id, minInsyncReplicas: this.config.minInsyncReplicas }),
      authorization: new Authorization(null),
      clock: this.wallClock,
      scheduler: this.scheduler,
      logger: this.logger,
      // The handlers of the data path read only the image; the controller calls are not simulated here.
      metadata: metadata as ClusterMetadata,
      replicaManager,
      fetchSessions: new FetchSessionCache(0, this.wallClock, () => 1),
      nextProducerId: () => ++this.producerIds,
      // Its own sequence (deterministic per broker), leaving the cluster's seeded draws as they were.
      randomInt: (bound) => this.handlerRandom.int(bound),
      diskSpace: () => ({ totalBytes: -1n, usableBytes: -1n }),
    };
  }

  /** A kill: nothing is flushed or closed; `cutTailBytes` models a power cut (lost page cache). */
  crash(cutTailBytes = 0): void {
    if (!this.alive) return;
    this.alive = false;
    this.logger.info(
      `crashed${cutTailBytes > 0 ? `, losing up to ${cutTailBytes} bytes of each active segment` : ''}`,
    );
    this.replication.shutdown();
    this.scheduler.cancelAll();
    for (const log of this.logManager?.allLogs() ?? []) {
      const active = log.local.segments.active();
      log.local.abandon();
      if (cutTailBytes > 0 && active.size > 0) {
        fs.truncateSync(active.logPath, Math.max(0, active.size - cutTailBytes));
      }
    }
    // What waited in the process dies with it: its answers never leave.
    this.replication.purgatory.forceCompleteAll();
    this.outstanding.clear();
    // Its session expires at the controller once the heartbeats stop.
    this.pausedUntilMs = 0;
    this.logManager = null;
    this.replicaManager = null;
    this.services = null;
    this.states.clear();
    this.image = this.imageOf();
  }

  /** A partition state from the controller (applied in order; older ones are ignored). */
  applyState(st: PartitionState): void {
    if (!this.alive) return;
    const key = topicPartitionKey(st.topic, st.partition);
    const cur = this.states.get(key);
    if (
      cur &&
      (st.leaderEpoch < cur.leaderEpoch ||
        (st.leaderEpoch === cur.leaderEpoch && st.partitionEpoch <= cur.partitionEpoch))
    ) {
      return;
    }
    this.states.set(key, st);
    this.applyImage();
  }

  /** The states known so far as a metadata image, applied by the real ReplicaManager. */
  private applyImage(): void {
    this.image = this.imageOf();
    this.replicaManager?.applyImage(this.image);
  }

  private imageOf(): MetadataImage {
    const byTopic = new Map<string, PartitionState[]>();
    for (const st of this.states.values()) {
      const list = byTopic.get(st.topic) ?? [];
      list[st.partition] = st;
      byTopic.set(st.topic, list);
    }
    const topics = new Map<string, TopicInfo>();
    for (const [name, list] of byTopic) {
      const partitions = Array.from(list, (st, i) => st ?? unknownPartition(name, i));
      topics.set(name, { name, topicId: SIM_TOPIC_ID, internal: false, partitions });
    }
    return {
      clusterId: 'sim',
      revision: BigInt(this.queue.executed),
      controllerId: 0,
      brokers: new Map(),
      topics,
      topicConfigs: new Map(),
      brokerConfigs: new Map(),
    };
  }

  /** What the real broker's network client does (Fetch v12 and ListOffsets to a leader). */
  private transport(): ReplicaTransport {
    return {
      fetch: (leaderId, request) =>
        this.net.request(
          this.id,
          leaderId,
          () =>
            // v12, as src/broker/replica-transport.ts sends it: the replica id at the top level.
            this.peer(leaderId).fetch({ ...request, replicaState: { replicaId: -1, replicaEpoch: -1n } }, 12),
          'replica-fetcher',
        ),
      leaderOffsets: (leaderId, topic, partition, epoch) =>
        this.net.request(
          this.id,
          leaderId,
          () => this.peer(leaderId).leaderOffsets(topicPartitionKey(topic, partition), epoch),
          'replica-fetcher',
        ),
    };
  }

  /** Set by the cluster: the broker object for an id. */
  peer: (id: number) => SimBroker = () => {
    throw new Error('peer lookup not wired');
  };

  leaderOffsets(key: string, currentLeaderEpoch: number): { logStartOffset: bigint; logEndOffset: bigint } {
    const l = this.replication.leader(key);
    if (!this.alive || !l || (currentLeaderEpoch !== -1 && currentLeaderEpoch !== l.leaderEpoch)) {
      throw KafkaError.fromCode(ErrorCode.NOT_LEADER_OR_FOLLOWER, `${key}: not the leader`);
    }
    return { logStartOffset: l.log.logStartOffset, logEndOffset: l.log.logEndOffset };
  }

  /** A request context as a server connection gives one; the simulated connection never closes. */
  private context(apiKey: number, apiVersion: number, clientId: string): RequestContext {
    return {
      apiKey,
      apiVersion,
      correlationId: 0,
      clientId,
      connection: {
        id: `sim-${this.id}`,
        remoteAddress: 'sim',
        clientId,
        listenerName: 'PLAINTEXT',
        securityProtocol: 'PLAINTEXT',
        principal: ANONYMOUS,
        whenClosed: () => () => {},
      },
      releaseConnection: () => {},
      // The simulation has no client quotas: nothing meters its requests.
      sizeBytes: 0,
      localComplete: () => {},
      handlingMs: () => 0,
    };
  }

  /** Fetch through the real handler (a follower's, or a consumer's with replicaId -1), tracked while it waits. */
  fetch(req: FetchRequest, apiVersion: number): Promise<FetchResponse> {
    if (!this.alive || this.services === null) {
      throw KafkaError.fromCode(ErrorCode.NOT_LEADER_OR_FOLLOWER, `broker ${this.id} is down`);
    }
    const entry: Outstanding = {
      kind: 'fetch',
      replicaId: req.replicaId,
      readCommitted: req.replicaId < 0 && req.isolationLevel === 1,
      partitions: req.topics.flatMap((t) =>
        t.partitions.map((p) => ({ key: topicPartitionKey(t.topic, p.partition), offset: p.fetchOffset })),
      ),
      sinceMs: this.queue.clock.nowMs(),
    };
    this.outstanding.add(entry);
    const pending = handleFetch(this.services, this.context(1, apiVersion, 'sim'), req);
    return this.settled(entry, pending).then((r) => ({
      ...r,
      // A copy: the answer travels through the simulated network after this read.
      responses: r.responses.map((t) => ({
        ...t,
        partitions: t.partitions.map((p) => ({ ...p, records: p.records && Buffer.from(p.records) })),
      })),
    }));
  }

  /**
   * A consumer's long-poll Fetch of one partition through the real handler (Kafka's DelayedFetch:
   * it waits up to maxWaitMs for minBytes).
   */
  consumerFetch(
    key: string,
    fetchOffset: bigint,
    maxWaitMs: number,
    /** 0 read_uncommitted, 1 read_committed (up to the last stable offset, with the aborted transactions). */
    isolationLevel = 0,
  ): Promise<FetchResponse> {
    const dash = key.lastIndexOf('-');
    const partition = Number(key.slice(dash + 1));
    const req: FetchRequest = {
      clusterId: null,
      replicaId: -1,
      replicaState: { replicaId: -1, replicaEpoch: -1n },
      maxWaitMs,
      minBytes: 1,
      maxBytes: 64 * 1024,
      isolationLevel,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [
        {
          topic: key.slice(0, dash),
          topicId: SIM_TOPIC_ID,
          partitions: [
            {
              partition,
              currentLeaderEpoch: -1,
              fetchOffset,
              lastFetchedEpoch: -1,
              logStartOffset: -1n,
              partitionMaxBytes: 16 * 1024,
              replicaDirectoryId: 'AAAAAAAAAAAAAAAAAAAAAA',
            },
          ],
        },
      ],
      forgottenTopicsData: [],
      rackId: '',
    };
    return this.fetch(req, 12);
  }

  /** Produce one batch to one partition through the real handler (a copy of the client's batch). */
  produce(
    key: string,
    batch: Buffer,
    acks: number,
    transactionalId: string | null = null,
  ): Promise<ProduceResult> | ProduceResult {
    const fail = (errorCode: number): ProduceResult => ({ errorCode, baseOffset: -1n, lastOffset: -1n });
    if (!this.alive || this.services === null) return fail(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    const services = this.services;
    const dash = key.lastIndexOf('-');
    const lastOffsetDelta = BigInt(readBatchHeader(batch, 0).lastOffsetDelta);
    const answer = (r: ProduceResponse | null): ProduceResult => {
      // acks=0: no answer at all.
      if (r === null) return { errorCode: 0, baseOffset: -1n, lastOffset: -1n };
      const p = r.responses[0]?.partitionResponses[0];
      if (!p) return fail(ErrorCode.UNKNOWN_SERVER_ERROR);
      return p.errorCode !== 0
        ? fail(p.errorCode)
        : { errorCode: 0, baseOffset: p.baseOffset, lastOffset: p.baseOffset + lastOffsetDelta };
    };
    const request = () =>
      handleProduce(services, this.context(0, 9, 'sim-producer'), {
        transactionalId,
        acks,
        timeoutMs: this.config.produceTimeoutMs,
        topicData: [
          {
            name: key.slice(0, dash),
            partitionData: [{ index: Number(key.slice(dash + 1)), records: Buffer.from(batch) }],
          },
        ],
      }).then(answer, (e: unknown) => {
        // acks=0 with a failed append closes the connection (the producer notices no answer).
        if (e instanceof CloseConnectionError) return fail(ErrorCode.NETWORK_EXCEPTION);
        throw e;
      });
    if (acks !== -1) return request();
    const entry: Outstanding = {
      kind: 'produce',
      key,
      offset: -1n,
      leader: undefined,
      sinceMs: this.queue.clock.nowMs(),
    };
    this.outstanding.add(entry);
    const pending = request();
    // The HW that acknowledges the append: the LEO right after it (the handler appends at once).
    entry.leader = this.replication.leader(key);
    entry.offset = entry.leader?.log.logEndOffset ?? -1n;
    return this.settled(entry, pending).then((r) => {
      this.checkAcknowledged(key, entry.leader?.log, r);
      return { ...r, leaderEpoch: entry.leader?.leaderEpoch ?? -1 };
    });
  }

  /**
   * A COMMIT or ABORT marker appended as a transaction coordinator's WriteTxnMarkers has the
   * leader append it (acks=all, through the real Partition and purgatory); resolves with its error
   * code once replicated, NOT_LEADER_OR_FOLLOWER where this broker does not lead the partition.
   */
  writeMarker(
    key: string,
    producerId: bigint,
    producerEpoch: number,
    commit: boolean,
  ): Promise<number> | number {
    if (!this.alive || this.services === null) return ErrorCode.NOT_LEADER_OR_FOLLOWER;
    const dash = key.lastIndexOf('-');
    const p = this.services.replicaManager.getPartition(key.slice(0, dash), Number(key.slice(dash + 1)));
    if (p === undefined) return ErrorCode.NOT_LEADER_OR_FOLLOWER;
    const batch = encodeEndTxnMarkerBatch({
      producerId,
      producerEpoch,
      coordinatorEpoch: 0,
      commit,
      timestamp: BigInt(this.queue.clock.nowMs()),
    });
    try {
      const { acks } = p.appendAsLeader(batch, -1, 'coordinator');
      return awaitAcks(
        this.replication.purgatory,
        this.services.scheduler,
        [acks],
        this.config.produceTimeoutMs,
      ).then((codes) => codes[0]!);
    } catch (e) {
      return e instanceof KafkaError ? e.code : ErrorCode.UNKNOWN_SERVER_ERROR;
    }
  }

  /** acks=all: an acknowledged append is below the HW of the leader that acknowledged it. */
  private checkAcknowledged(key: string, log: Log | undefined, r: ProduceResult): void {
    if (r.errorCode !== 0 || !this.alive) return;
    if (log && log.highWatermark <= r.lastOffset) {
      this.violations.push(
        `${key}: acks=all produce ${r.baseOffset}..${r.lastOffset} acknowledged by broker ${this.id} with its HW at ${log.highWatermark}`,
      );
    }
  }

  /** Violations the broker noticed itself (read and cleared by the cluster after each event). */
  readonly violations: string[] = [];

  /** `pending`, no longer outstanding once answered (a crash has already dropped it). */
  private settled<T>(entry: Outstanding, pending: Promise<T>): Promise<T> {
    return pending.finally(() => this.outstanding.delete(entry));
  }
}
