/**
 * The replication roles of every partition a broker hosts (Kafka's ReplicaManager
 * makeLeaders/makeFollowers and ReplicaFetcherManager): one PartitionLeaderState or
 * PartitionFollower per partition, one ReplicaFetcher per leader broker and the isr-expiration
 * task. Its operator events (truncations, rebuilds) are log events, kept by the broker's
 * EventJournal for SkiffDescribeReplication. The ISR history is durable, kept by the controller
 * (src/metadata/isr-history.ts): the proposals made here carry the leader's reason to it.
 *
 * Owned by the broker (or test/sim's broker); the caller applies partition states in metadata
 * order and serialises calls on the event loop. Logs are the caller's: this class never opens,
 * closes or deletes one.
 */

import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { topicPartitionKey } from '../common/topic-partition.js';
import type { PartitionState } from '../metadata/cluster-metadata.js';
import type { Log } from '../storage/log.js';
import { type FetcherConfig, fetcherIdFor, ReplicaFetcher, type ReplicaTransport } from './fetcher.js';
import { PartitionFollower, type ReplicationEvent } from './follower.js';
import { type FollowerReadResult, readForFollower } from './leader-fetch.js';
import {
  type AlterPartitionOutcome,
  type IsrProposal,
  PartitionLeaderState,
  scheduleIsrExpiration,
} from './leader-state.js';
import { Purgatory } from './purgatory.js';
import type { ReplicationQuotas } from './quota.js';

export interface ReplicationManagerContext {
  readonly localBrokerId: number;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly scheduler: { schedule(name: string, delayMs: number, task: () => void): () => void };
  readonly transport: ReplicaTransport;
  /** This broker's registration epoch (sent on Fetch, fencing a replaced incarnation). */
  brokerEpoch(): bigint;
  /** replica.fetch.* settings, read at every fetch round. */
  fetcherConfig(): FetcherConfig;
  /** replica.lag.time.max.ms, read at every check. */
  replicaLagTimeMaxMs(): number;
  /** The topic's effective min.insync.replicas setting, read at every check. */
  minInsyncReplicas(topic: string): number;
  isReplicaIsrEligible(brokerId: number, brokerEpoch: bigint): boolean;
  alterPartition(proposal: IsrProposal): Promise<AlterPartitionOutcome>;
  /** A partition's HW, LEO, log start or ISR moved, after this manager's purgatory was tried. */
  onPartitionChange?(key: string): void;
  onEvent?(event: ReplicationEvent): void;
  /** This broker's replication quotas (throttling and observed rates); absent: never throttled. */
  readonly quotas?: ReplicationQuotas;
  /** num.replica.fetchers (fetchers per leader broker), read when partitions are placed and at maybeResizeFetchers. */
  numReplicaFetchers?(): number;
}

export type ReplicaRole = 'leader' | 'follower' | 'offline';

/** One partition of a replica's Fetch as the Fetch handler holds it (its fetch session's entry). */
export interface FollowerFetchEntry {
  readonly topic: string;
  readonly partition: number;
  readonly fetchOffset: bigint;
  readonly logStartOffset: bigint;
  /** -1 skips the check. */
  readonly currentLeaderEpoch: number;
  /** Absent or -1: the follower's log has no epoch. */
  readonly lastFetchedEpoch?: number | undefined;
  readonly maxBytes: number;
}

export class ReplicationManager {
  /**
   * The requests waiting on this broker's partitions (acks=all produces, long-poll fetches,
   * DeleteRecords), keyed by partition: tried whenever a partition's HW, LEO, log start or ISR
   * moves — by this manager for replication's own changes, by Partition for its appends.
   */
  readonly purgatory = new Purgatory();
  /** Committed ISR shrinks and expands of partitions led here, since start (the metrics' counters). */
  private readonly isrChangeCounts = { shrink: 0, expand: 0 };
  private readonly leaders = new Map<string, PartitionLeaderState>();
  private readonly followers = new Map<string, PartitionFollower>();
  /** By `leaderId/fetcherId`. */
  private readonly fetchers = new Map<string, ReplicaFetcher>();
  /** Partition key → the fetcher key it is on. */
  private readonly placement = new Map<string, string>();
  private numFetchers = 1;
  private stopExpiration: (() => void) | null = null;

  constructor(private readonly ctx: ReplicationManagerContext) {}

  /** Starts the isr-expiration task (every replica.lag.time.max.ms / 2, re-read at every run). */
  start(): void {
    if (this.stopExpiration) return;
    this.stopExpiration = scheduleIsrExpiration(
      this.ctx.scheduler,
      () => this.ctx.replicaLagTimeMaxMs(),
      () => this.leaders.values(),
    );
  }

  /** Stops every fetcher and the expiration task; leaders resign (no answer is acted on later). */
  shutdown(): void {
    this.stopExpiration?.();
    this.stopExpiration = null;
    for (const f of this.fetchers.values()) f.stop();
    for (const l of this.leaders.values()) l.resign();
    for (const f of this.followers.values()) f.stop();
    this.fetchers.clear();
    this.placement.clear();
    this.leaders.clear();
    this.followers.clear();
  }

  /** A partition's HW, LEO, log start or ISR moved: what waits on it may complete now. */
  partitionChanged(key: string): void {
    this.purgatory.checkAndComplete(key);
    this.ctx.onPartitionChange?.(key);
  }

  /**
   * The leader side of a replica's Fetch (Kafka's ReplicaManager.readFromLog for a follower):
   * each partition this broker leads is read for the follower up to `responseMaxBytes` in all
   * (epoch checks, divergingEpoch, OFFSET_OUT_OF_RANGE, the follower's fetch state, ISR expansion,
   * the leader's replication throttle); undefined for a partition it does not lead. A moved HW or
   * follower log start tries what waits on the partition (acks=all produces, DeleteRecords).
   */
  readForFollower(
    replicaId: number,
    replicaEpoch: bigint,
    partitions: readonly FollowerFetchEntry[],
    responseMaxBytes: number,
    /** The records go straight into a response a server connection writes (LogSegment.read's forSocket). */
    forSocket: boolean,
  ): (FollowerReadResult | undefined)[] {
    const quota = this.ctx.quotas?.leader;
    const now = this.ctx.clock.nowMs();
    // Throttled partitions fetched by out-of-ISR followers share the leader's budget evenly (this
    // Fetch's and those of other Fetches in the last second).
    const throttledKeys =
      quota && quota.rate() !== null
        ? partitions.flatMap((sp) => {
            const key = sp.topic === '' ? '' : topicPartitionKey(sp.topic, sp.partition);
            const l = key === '' ? undefined : this.leader(key);
            return l !== undefined && !l.isr.includes(replicaId) && quota.isThrottled(sp.topic, sp.partition)
              ? [`${key}/${replicaId}`]
              : [];
          })
        : [];
    const shares = quota && throttledKeys.length > 0 ? quota.demand(throttledKeys, now) : 1;
    let remaining = Math.max(0, responseMaxBytes);
    let minOneMessage = true;
    return partitions.map((sp) => {
      if (sp.topic === '') return undefined;
      const key = topicPartitionKey(sp.topic, sp.partition);
      const leader = this.leader(key);
      if (!leader) return undefined;
      const startBefore = leader.followerState(replicaId)?.logStartOffset;
      const r = readForFollower(
        leader,
        replicaId,
        replicaEpoch,
        {
          fetchOffset: sp.fetchOffset,
          logStartOffset: sp.logStartOffset,
          currentLeaderEpoch: sp.currentLeaderEpoch,
          lastFetchedEpoch: sp.lastFetchedEpoch ?? -1,
          maxBytes: Math.min(Math.max(0, sp.maxBytes), remaining),
          forSocket,
        },
        minOneMessage,
        now,
        quota,
        shares,
      );
      // A moved HW completes acks=all produces; a moved follower log start, DeleteRecords.
      if (r.highWatermarkMoved || leader.followerState(replicaId)?.logStartOffset !== startBefore) {
        this.partitionChanged(key);
      }
      if (r.records.length > 0) minOneMessage = false;
      remaining = Math.max(0, remaining - r.records.length);
      return r;
    });
  }

  /** The leader state of a partition this broker leads now, else undefined. */
  leader(key: string): PartitionLeaderState | undefined {
    const l = this.leaders.get(key);
    return l?.isLeader ? l : undefined;
  }

  follower(key: string): PartitionFollower | undefined {
    return this.followers.get(key);
  }

  leaderStates(): PartitionLeaderState[] {
    return [...this.leaders.values()];
  }

  /** Committed ISR shrinks and expands of partitions led here, since start. */
  isrChanges(): { readonly shrinks: number; readonly expands: number } {
    return { shrinks: this.isrChangeCounts.shrink, expands: this.isrChangeCounts.expand };
  }

  /** This broker's replication quotas: the leader side is the Fetch handler's, the follower side the fetchers'. */
  get quotas(): ReplicationQuotas | undefined {
    return this.ctx.quotas;
  }

  /** The first fetcher of a leader (fetcher id 0). */
  fetcherFor(leaderId: number): ReplicaFetcher | undefined {
    return this.fetchers.get(`${leaderId}/0`);
  }

  /** Every fetcher of a leader, by fetcher id. */
  fetchersFor(leaderId: number): ReplicaFetcher[] {
    return [...this.fetchers.values()]
      .filter((f) => f.leaderId === leaderId)
      .sort((a, b) => a.fetcherId - b.fetcherId);
  }

  /**
   * num.replica.fetchers changed (Kafka resizes its fetcher pool): every followed partition moves
   * to the fetcher its hash picks among the new number; fetchers left without partitions stop.
   * Cheap when nothing changed; the broker calls it whenever the metadata image (and so a dynamic
   * config) changes.
   */
  maybeResizeFetchers(): void {
    const n = this.configuredFetchers();
    if (n === this.numFetchers) return;
    this.numFetchers = n;
    for (const f of this.followers.values()) if (this.placement.has(f.name)) this.place(f);
    for (const [key, fetcher] of this.fetchers) {
      if (fetcher.fetcherId >= n && fetcher.partitionCount === 0) {
        fetcher.stop();
        this.fetchers.delete(key);
      }
    }
  }

  private configuredFetchers(): number {
    const n = this.ctx.numReplicaFetchers?.() ?? 1;
    return Number.isInteger(n) && n >= 1 ? n : 1;
  }

  /** Puts a following partition on its leader's fetcher chosen by Kafka's hash (moving it if needed). */
  private place(f: PartitionFollower): void {
    const id = fetcherIdFor(f.topic, f.partition, this.numFetchers);
    const target = this.fetcher(f.leaderId, id);
    const key = `${f.leaderId}/${id}`;
    const current = this.placement.get(f.name);
    if (current !== undefined && current !== key) this.fetchers.get(current)?.removePartition(f.name);
    this.placement.set(f.name, key);
    target.addPartition(f);
  }

  /**
   * Read-only view of one partition for the admin API (SkiffDescribeReplication): the role held,
   * the leader state or follower. Creates nothing.
   */
  describe(key: string): {
    readonly role: ReplicaRole;
    readonly leader?: PartitionLeaderState;
    readonly follower?: PartitionFollower;
  } {
    const leader = this.leader(key);
    if (leader) return { role: 'leader', leader };
    const follower = this.followers.get(key);
    if (follower) return { role: 'follower', follower };
    return { role: 'offline' };
  }

  /**
   * Applies a partition state from the metadata image (the caller filters out older ones): this
   * broker leads → stop following, makeLeader or a new ISR; another broker leads → resign and
   * follow it from the LEO; no leader → neither. Returns the role now held.
   */
  applyPartitionState(state: PartitionState, log: Log, topicId: string): ReplicaRole {
    const key = topicPartitionKey(state.topic, state.partition);
    if (state.leader === this.ctx.localBrokerId) {
      this.stopFollowing(key);
      let l = this.leaders.get(key);
      if (!l) {
        l = new PartitionLeaderState(state.topic, state.partition, log, this.leaderContext(key, state.topic));
        this.leaders.set(key, l);
      }
      l.applyPartitionState(state);
      this.partitionChanged(key);
      return 'leader';
    }
    this.resign(key);
    if (state.leader < 0) {
      this.stopFollowing(key);
      return 'offline';
    }
    let f = this.followers.get(key);
    if (!f) {
      f = new PartitionFollower(state.topic, state.partition, topicId, log, {
        localBrokerId: this.ctx.localBrokerId,
        clock: this.ctx.clock,
        logger: this.ctx.logger,
        onEvent: (e) => this.ctx.onEvent?.(e),
      });
      this.followers.set(key, f);
    }
    if (f.makeFollower(state.leader, state.leaderEpoch)) {
      this.maybeResizeFetchers();
      this.place(f);
    }
    return 'follower';
  }

  /** The partition is no longer hosted here (deleted, reassigned away). */
  removePartition(key: string): void {
    this.resign(key);
    this.stopFollowing(key);
  }

  private resign(key: string): void {
    const l = this.leaders.get(key);
    if (!l) return;
    l.resign();
    this.leaders.delete(key);
    this.partitionChanged(key);
  }

  private stopFollowing(key: string): void {
    const f = this.followers.get(key);
    if (!f) return;
    f.stop();
    const at = this.placement.get(key);
    if (at !== undefined) this.fetchers.get(at)?.removePartition(key);
    this.placement.delete(key);
    this.followers.delete(key);
  }

  private fetcher(leaderId: number, fetcherId: number): ReplicaFetcher {
    const key = `${leaderId}/${fetcherId}`;
    let f = this.fetchers.get(key);
    if (!f) {
      f = new ReplicaFetcher(
        leaderId,
        {
          localBrokerId: this.ctx.localBrokerId,
          clock: this.ctx.clock,
          logger: this.ctx.logger,
          scheduler: this.ctx.scheduler,
          transport: this.ctx.transport,
          brokerEpoch: () => this.ctx.brokerEpoch(),
          config: () => this.ctx.fetcherConfig(),
          ...(this.ctx.quotas && { quota: this.ctx.quotas.follower }),
        },
        fetcherId,
      );
      this.fetchers.set(key, f);
      f.start();
    }
    return f;
  }

  private leaderContext(key: string, topic: string) {
    return {
      localBrokerId: this.ctx.localBrokerId,
      clock: this.ctx.clock,
      logger: this.ctx.logger,
      replicaLagTimeMaxMs: () => this.ctx.replicaLagTimeMaxMs(),
      minInsyncReplicas: () => this.ctx.minInsyncReplicas(topic),
      isReplicaIsrEligible: (id: number, epoch: bigint) => this.ctx.isReplicaIsrEligible(id, epoch),
      alterPartition: (p: IsrProposal) => this.ctx.alterPartition(p),
      onStateChange: () => this.partitionChanged(key),
      onIsrChange: (kind: 'shrink' | 'expand') => {
        this.isrChangeCounts[kind]++;
      },
    };
  }
}
