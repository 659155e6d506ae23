/**
 * One simulated broker: real storage Logs in its own directory, the replication components of
 * src/replication wired the way the real broker will wire them (this file is the reference for
 * that integration), a leader-side Fetch with parked (long-poll) fetches, a Produce with acks=all
 * waiting on the HW, and crash / restart that drop every in-memory state.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { PartitionState } from '../../src/metadata/cluster-metadata.js';
import type { FetchRequest } from '../../src/protocol/generated/FetchRequest.js';
import {
  defaultPartitionData,
  type FetchResponse,
  type PartitionData,
} from '../../src/protocol/generated/FetchResponse.js';
import { KafkaError } from '../../src/protocol/kafka-error.js';
import type { FetcherConfig, ReplicaTransport } from '../../src/replication/fetcher.js';
import type { ReplicationEvent } from '../../src/replication/follower.js';
import type { IsrHistory } from '../../src/replication/isr-history.js';
import { readForFollower } from '../../src/replication/leader-fetch.js';
import type { PartitionLeaderState } from '../../src/replication/leader-state.js';
import { ReplicationManager } from '../../src/replication/replication-manager.js';
import type { StorageContext } from '../../src/storage/local-log.js';
import { Log } from '../../src/storage/log.js';
import { logConfig } from '../../src/storage/log-config.js';
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
}

export interface ProduceResult {
  readonly errorCode: number;
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
}

interface PendingProduce {
  readonly key: string;
  readonly leader: PartitionLeaderState;
  readonly requiredOffset: bigint;
  readonly baseOffset: bigint;
  readonly resolve: (r: ProduceResult) => void;
  cancelTimer: () => void;
}

interface ParkedFetch {
  readonly retry: () => boolean;
}

export class SimBroker {
  alive = false;
  incarnation = 0;
  epoch = -1n;
  readonly logger: RingLogger;
  readonly logs = new Map<string, Log>();
  readonly states = new Map<string, PartitionState>();
  /** The replication roles of this incarnation (a new one at every start). */
  replication: ReplicationManager;
  /** Survives restarts, as the broker keeps it for the dashboard (in memory here, on disk later). */
  readonly history = new Map<string, IsrHistory>();
  readonly events: ReplicationEvent[] = [];
  /** replication-offset-checkpoint: written every 5 s, read at start-up. */
  private readonly hwCheckpoint = new Map<string, bigint>();
  private pending: PendingProduce[] = [];
  private parked: ParkedFetch[] = [];
  private scheduler: BrokerScheduler;
  private storage: StorageContext;

  constructor(
    readonly id: number,
    readonly dir: string,
    private readonly queue: EventQueue,
    private readonly net: SimNetwork,
    private readonly controller: SimController,
    readonly config: BrokerSimConfig,
  ) {
    this.logger = new RingLogger(queue.clock, `[broker ${id}]`);
    this.scheduler = new BrokerScheduler(queue);
    this.storage = this.storageContext();
    this.replication = this.replicationManager();
  }

  /** The wiring the real broker's composition root will do (see src/replication/README.md). */
  private replicationManager(): ReplicationManager {
    return new ReplicationManager({
      localBrokerId: this.id,
      clock: this.queue.clock,
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
        return this.net.request(this.id, 0, () => this.controller.alterPartition(this.id, epoch, p));
      },
      onPartitionChange: () => this.stateChanged(),
      onEvent: (e) => this.events.push(e),
      histories: this.history,
    });
  }

  private storageContext(): StorageContext {
    // The test file system without fsync (a process crash keeps what was written; a power cut is
    // simulated by cutting the tail explicitly), on the simulation's clock and this broker's scheduler.
    return { ...testContext(), clock: this.queue.clock, scheduler: this.scheduler, logger: this.logger };
  }

  start(): void {
    this.alive = true;
    this.incarnation++;
    this.scheduler = new BrokerScheduler(this.queue);
    this.storage = this.storageContext();
    this.replication = this.replicationManager();
    for (const name of fs.existsSync(this.dir) ? fs.readdirSync(this.dir) : []) {
      if (/^[a-z0-9.]+-\d+$/.test(name)) this.openLog(name, false);
    }
    this.epoch = this.controller.register(this.id);
    for (const s of this.controller.allStates()) this.applyState(s);
    this.replication.start();
    const checkpoint = (): void => {
      for (const [key, log] of this.logs) this.hwCheckpoint.set(key, log.highWatermark);
      this.scheduler.schedule('checkpoint-high-watermarks', 5000, checkpoint);
    };
    this.scheduler.schedule('checkpoint-high-watermarks', 5000, checkpoint);
    this.logger.info(`started with broker epoch ${this.epoch}`);
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
    for (const log of this.logs.values()) {
      const active = log.local.segments.active();
      log.local.abandon();
      if (cutTailBytes > 0 && active.size > 0) {
        fs.truncateSync(active.logPath, Math.max(0, active.size - cutTailBytes));
      }
    }
    const epoch = this.epoch;
    this.queue.schedule('session-timeout', this.config.sessionTimeoutMs, () =>
      this.controller.fence(this.id, epoch),
    );
    this.logs.clear();
    this.states.clear();
    this.pending = [];
    this.parked = [];
  }

  private openLog(key: string, created: boolean): Log {
    const dash = key.lastIndexOf('-');
    const log = Log.open({
      dir: path.join(this.dir, key),
      topic: key.slice(0, dash),
      partition: Number(key.slice(dash + 1)),
      config: logConfig({ segmentBytes: this.config.segmentBytes, fileDeleteDelayMs: 60_000 }),
      ctx: this.storage,
      hadCleanShutdown: created,
    });
    const hw = this.hwCheckpoint.get(key);
    if (hw !== undefined) log.updateHighWatermark(hw);
    this.logs.set(key, log);
    return log;
  }

  /** A partition state from the metadata image (applied in order; older ones are ignored). */
  applyState(st: PartitionState): void {
    if (!this.alive || !st.replicas.includes(this.id)) return;
    const key = `${st.topic}-${st.partition}`;
    const cur = this.states.get(key);
    if (
      cur &&
      (st.leaderEpoch < cur.leaderEpoch ||
        (st.leaderEpoch === cur.leaderEpoch && st.partitionEpoch <= cur.partitionEpoch))
    ) {
      return;
    }
    this.states.set(key, st);
    const log = this.logs.get(key) ?? this.openLog(key, true);
    this.replication.applyPartitionState(st, log, 'AAAAAAAAAAAAAAAAAAAAAA');
  }

  /** What the real broker's network client will implement (Fetch and ListOffsets to a leader). */
  private transport(): ReplicaTransport {
    return {
      fetch: (leaderId, request) =>
        this.net.request(this.id, leaderId, () => this.peer(leaderId).handleFetch(request)),
      leaderOffsets: (leaderId, topic, partition, epoch) =>
        this.net.request(this.id, leaderId, () =>
          this.peer(leaderId).leaderOffsets(`${topic}-${partition}`, epoch),
        ),
    };
  }

  /** Set by the cluster: the broker object for an id. */
  peer: (id: number) => SimBroker = () => {
    throw new Error('peer lookup not wired');
  };

  /** A leader's LEO or HW moved: parked produces and fetches may complete. */
  private stateChanged(): void {
    this.pending = this.pending.filter((p) => {
      const r = p.leader.checkEnoughReplicasReachOffset(p.requiredOffset);
      if (!r.done) return true;
      p.cancelTimer();
      p.resolve({ errorCode: r.errorCode, baseOffset: p.baseOffset, lastOffset: p.requiredOffset - 1n });
      return false;
    });
    this.parked = this.parked.filter((p) => !p.retry());
  }

  leaderOffsets(key: string, currentLeaderEpoch: number): { logStartOffset: bigint; logEndOffset: bigint } {
    const l = this.replication.leader(key);
    if (!l || (currentLeaderEpoch !== -1 && currentLeaderEpoch !== l.leaderEpoch)) {
      throw KafkaError.fromCode(6, `${key}: not the leader`);
    }
    return { logStartOffset: l.log.logStartOffset, logEndOffset: l.log.logEndOffset };
  }

  /** The leader side of a follower Fetch; waits up to maxWaitMs while nothing is there (DelayedFetch). */
  handleFetch(req: FetchRequest): Promise<FetchResponse> | FetchResponse {
    const first = this.readFetch(req);
    if (req.maxWaitMs <= 0 || first.bytes >= req.minBytes || first.errors) return first.response;
    return new Promise((resolve) => {
      let done = false;
      const finish = (r: FetchResponse): void => {
        if (done) return;
        done = true;
        cancel();
        resolve(r);
      };
      const parked: ParkedFetch = {
        retry: () => {
          if (done || !this.alive) return true;
          const again = this.readFetch(req);
          if (again.bytes < req.minBytes && !again.errors) return false;
          finish(again.response);
          return true;
        },
      };
      const cancel = this.scheduler.schedule('delayed-fetch', req.maxWaitMs, () => {
        this.parked = this.parked.filter((p) => p !== parked);
        finish(this.readFetch(req).response);
      });
      this.parked.push(parked);
    });
  }

  private readFetch(req: FetchRequest): { response: FetchResponse; bytes: number; errors: boolean } {
    const replicaId = req.replicaState.replicaId;
    const now = this.queue.clock.nowMs();
    let remaining = req.maxBytes;
    let minOne = true;
    let bytes = 0;
    let errors = false;
    let hwMoved = false;
    const responses = req.topics.map((t) => ({
      topic: t.topic,
      topicId: t.topicId,
      partitions: t.partitions.map((p): PartitionData => {
        const leader = this.replication.leader(`${t.topic}-${p.partition}`);
        if (!this.alive || !leader) {
          errors = true;
          return { ...defaultPartitionData(), partitionIndex: p.partition, errorCode: 6 };
        }
        const r = readForFollower(
          leader,
          replicaId,
          req.replicaState.replicaEpoch,
          {
            fetchOffset: p.fetchOffset,
            logStartOffset: p.logStartOffset,
            currentLeaderEpoch: p.currentLeaderEpoch,
            lastFetchedEpoch: p.lastFetchedEpoch,
            maxBytes: Math.min(p.partitionMaxBytes, remaining),
          },
          minOne,
          now,
        );
        if (r.highWatermarkMoved) hwMoved = true;
        if (r.errorCode !== 0 || r.divergingEpoch) errors = true;
        if (r.records.length > 0) minOne = false;
        remaining = Math.max(0, remaining - r.records.length);
        bytes += r.records.length;
        return {
          ...defaultPartitionData(),
          partitionIndex: p.partition,
          errorCode: r.errorCode,
          highWatermark: r.highWatermark,
          lastStableOffset: r.highWatermark,
          logStartOffset: r.logStartOffset,
          divergingEpoch: r.divergingEpoch ?? { epoch: -1, endOffset: -1n },
          // A copy: the answer travels through the simulated network after this read.
          records: Buffer.from(r.records),
        };
      }),
    }));
    if (hwMoved) queueMicrotask(() => this.stateChanged());
    return {
      response: { throttleTimeMs: 0, errorCode: 0, sessionId: 0, responses, nodeEndpoints: [] },
      bytes,
      errors,
    };
  }

  /** Produce to one partition (a copy of the client's batch is appended). */
  produce(key: string, batch: Buffer, acks: number): Promise<ProduceResult> | ProduceResult {
    const leader = this.replication.leader(key);
    const fail = (errorCode: number): ProduceResult => ({ errorCode, baseOffset: -1n, lastOffset: -1n });
    if (!this.alive || !leader) return fail(6);
    let info: ReturnType<PartitionLeaderState['appendAsLeader']>;
    try {
      info = leader.appendAsLeader(Buffer.from(batch), acks);
    } catch (e) {
      if (e instanceof KafkaError) return fail(e.code);
      throw e;
    }
    this.parked = this.parked.filter((p) => !p.retry());
    const done: ProduceResult = { errorCode: 0, baseOffset: info.firstOffset, lastOffset: info.lastOffset };
    if (acks !== -1) return done;
    return new Promise((resolve) => {
      const p: PendingProduce = {
        key,
        leader,
        requiredOffset: info.lastOffset + 1n,
        baseOffset: info.firstOffset,
        resolve,
        cancelTimer: () => {},
      };
      p.cancelTimer = this.scheduler.schedule('delayed-produce', this.config.produceTimeoutMs, () => {
        this.pending = this.pending.filter((x) => x !== p);
        resolve({ errorCode: 7, baseOffset: info.firstOffset, lastOffset: info.lastOffset });
      });
      this.pending.push(p);
      this.stateChanged();
    });
  }
}
