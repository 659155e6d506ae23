/**
 * The leader side of one partition (Kafka's Partition, leader half): per-follower state, the ISR
 * with at most one change in flight, the high watermark and the acks=all rules.
 *
 * Owned by whoever hosts the partition (the broker's partition object, or the simulator); it
 * assumes calls are serialised (the event loop) and that the caller applies every partition state
 * from the metadata image through `applyPartitionState`. Time, configs, eligibility and the
 * AlterPartition channel are injected (LeaderContext), so the same code runs in test/sim.
 */

import { assert } from '../common/assert.js';
import type { Clock } from '../common/clock.js';
import { childLogger, type Logger } from '../common/logger.js';
import { topicPartitionKey } from '../common/topic-partition.js';
import type { PartitionState } from '../metadata/cluster-metadata.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { KafkaError } from '../protocol/kafka-error.js';
import type { AppendOrigin, Log } from '../storage/log.js';
import {
  type FollowerFetch,
  type FollowerReplicaState,
  initialReplicaState,
  isCaughtUp,
  updateFetchState,
} from './replica-state.js';

const {
  NONE,
  UNKNOWN_TOPIC_OR_PARTITION,
  NOT_LEADER_OR_FOLLOWER,
  NOT_ENOUGH_REPLICAS,
  NOT_ENOUGH_REPLICAS_AFTER_APPEND,
  INVALID_REQUIRED_ACKS,
  FENCED_LEADER_EPOCH,
  INVALID_UPDATE_VERSION,
} = ErrorCode;

/** What the leader proposes to the controller (one AlterPartition partition entry). */
export interface IsrProposal {
  readonly topic: string;
  readonly partition: number;
  readonly leaderId: number;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly newIsr: readonly number[];
  /** The broker epoch the leader last saw from each new ISR member (-1: unknown), in newIsr order. */
  readonly newIsrEpochs: readonly bigint[];
  /**
   * Why, for the durable history (Skiff only: Kafka's AlterPartition has no such field): a shrink
   * for lag (fetching, not catching up) or fetch-timeout (no fetch within replica.lag.time.max.ms),
   * an expand because a follower caught up; `reason` with the numbers.
   */
  readonly cause: IsrProposalCause;
  readonly reason: string;
}

export type IsrProposalCause = 'lag' | 'fetch-timeout' | 'caught-up';

export function formatIsr(isr: readonly number[]): string {
  return isr.join(',');
}

/** The controller's answer for that partition. */
export interface AlterPartitionOutcome {
  readonly errorCode: number;
  readonly leaderId: number;
  readonly leaderEpoch: number;
  readonly isr: readonly number[];
  readonly partitionEpoch: number;
}

export interface LeaderContext {
  readonly localBrokerId: number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** replica.lag.time.max.ms, read at every check: dynamic in Skiff (Kafka needs a restart). */
  replicaLagTimeMaxMs(): number;
  /** The topic's min.insync.replicas, read at every check. */
  minInsyncReplicas(): number;
  /**
   * May join the ISR: registered, not fenced, not shutting down, and (when `brokerEpoch` ≠ -1)
   * still the incarnation that fetched (KIP-903).
   */
  isReplicaIsrEligible(brokerId: number, brokerEpoch: bigint): boolean;
  /** Sends one AlterPartition entry to the controller. A rejection counts as a failed attempt. */
  alterPartition(proposal: IsrProposal): Promise<AlterPartitionOutcome>;
  /** The HW moved or the ISR changed outside a caller's own call: parked requests may complete. */
  onStateChange?(): void;
  /** An ISR shrink or expand of a partition led here was committed (Kafka's IsrShrinks/IsrExpands meters). */
  onIsrChange?(kind: 'shrink' | 'expand'): void;
}

export type IsrState =
  | { readonly kind: 'committed'; readonly isr: readonly number[] }
  | {
      readonly kind: 'pending-shrink';
      readonly isr: readonly number[];
      readonly outOfSync: readonly number[];
      readonly proposal: IsrProposal;
    }
  | {
      readonly kind: 'pending-expand';
      readonly isr: readonly number[];
      readonly newInSync: number;
      readonly proposal: IsrProposal;
    };

/** acks=all progress of one produce: done, and with which error (0 when acknowledged). */
export interface AcksCheck {
  readonly done: boolean;
  readonly errorCode: number;
}

export class PartitionLeaderState {
  private leaderEpochValue = -1;
  private partitionEpochValue = -1;
  private replicasValue: readonly number[] = [];
  private isrStateValue: IsrState = { kind: 'committed', isr: [] };
  private leaderEpochStartOffsetValue = -1n;
  private readonly followers = new Map<number, FollowerReplicaState>();
  private isLeaderValue = false;

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly log: Log,
    private readonly ctx: LeaderContext,
  ) {}

  get name(): string {
    return topicPartitionKey(this.topic, this.partition);
  }

  /** Lines with Kafka's Partition prefix: `[Partition orders-0 broker=1]`. */
  private get partitionLogger(): Logger {
    return childLogger(this.ctx.logger, `[Partition ${this.name} broker=${this.ctx.localBrokerId}]`);
  }

  get isLeader(): boolean {
    return this.isLeaderValue;
  }

  get leaderEpoch(): number {
    return this.leaderEpochValue;
  }

  get partitionEpoch(): number {
    return this.partitionEpochValue;
  }

  get replicas(): readonly number[] {
    return this.replicasValue;
  }

  get isrState(): IsrState {
    return this.isrStateValue;
  }

  /** The committed ISR: what min.insync.replicas is checked against. */
  get isr(): readonly number[] {
    return this.isrStateValue.isr;
  }

  /** The committed ISR plus a member being added: what HW and acks=all wait for. */
  get maximalIsr(): readonly number[] {
    const s = this.isrStateValue;
    return s.kind === 'pending-expand' ? [...s.isr, s.newInSync] : s.isr;
  }

  get leaderEpochStartOffset(): bigint {
    return this.leaderEpochStartOffsetValue;
  }

  followerState(brokerId: number): FollowerReplicaState | undefined {
    return this.followers.get(brokerId);
  }

  followerStates(): FollowerReplicaState[] {
    return [...this.followers.values()];
  }

  /** min(min.insync.replicas, replication factor), as Kafka's effectiveMinIsr. */
  effectiveMinIsr(): number {
    return Math.max(1, Math.min(this.ctx.minInsyncReplicas(), this.replicasValue.length));
  }

  /**
   * Applies a partition state from the metadata image while this broker leads it. A new leader
   * epoch is Kafka's makeLeader: the epoch starts at the LEO (epoch cache assigned), follower
   * state is reset (ISR members count as caught up now). A newer partition epoch of the same
   * leader epoch replaces the ISR and ends any change in flight. Returns whether the epoch is new.
   */
  applyPartitionState(state: PartitionState): boolean {
    assert(
      state.leader === this.ctx.localBrokerId,
      `${this.name}: applyPartitionState with leader ${state.leader} on ${this.ctx.localBrokerId}`,
    );
    const now = this.ctx.clock.nowMs();
    const newEpoch = !this.isLeaderValue || state.leaderEpoch > this.leaderEpochValue;
    if (!newEpoch && state.partitionEpoch <= this.partitionEpochValue) return false;
    const wasLeader = this.isLeaderValue;
    const oldIsr = this.isr;
    this.replicasValue = [...state.replicas];
    if (newEpoch) {
      const leo = this.log.logEndOffset;
      this.log.leaderEpochCache.assign(state.leaderEpoch, leo);
      this.leaderEpochStartOffsetValue = leo;
      const keep = wasLeader ? new Map(this.followers) : new Map<number, FollowerReplicaState>();
      this.followers.clear();
      for (const id of state.replicas) {
        if (id === this.ctx.localBrokerId) continue;
        const old = keep.get(id);
        // Same leader, new epoch: what it learned of its followers stays true.
        this.followers.set(id, old ?? initialReplicaState(id, state.isr.includes(id), now));
      }
      this.partitionLogger.info(
        `${wasLeader ? 'New leader epoch of' : 'Leader'} ${this.name} starts at leader epoch ${state.leaderEpoch} from offset ${leo} with partition epoch ${state.partitionEpoch}, high watermark ${this.log.highWatermark}, ISR [${formatIsr(state.isr)}], adding replicas [${formatIsr(state.addingReplicas)}] and removing replicas [${formatIsr(state.removingReplicas)}].`,
      );
    } else {
      for (const id of state.replicas) {
        if (id !== this.ctx.localBrokerId && !this.followers.has(id)) {
          this.followers.set(id, initialReplicaState(id, state.isr.includes(id), now));
        }
      }
      for (const id of [...this.followers.keys()])
        if (!state.replicas.includes(id)) this.followers.delete(id);
    }
    this.isLeaderValue = true;
    this.leaderEpochValue = state.leaderEpoch;
    this.partitionEpochValue = state.partitionEpoch;
    this.isrStateValue = { kind: 'committed', isr: [...state.isr] };
    if (!newEpoch) this.countIsrChange(oldIsr, state.isr);
    this.maybeIncrementHighWatermark();
    return newEpoch;
  }

  /** This broker no longer leads: answers to proposals in flight are ignored from now on. */
  resign(): void {
    this.isLeaderValue = false;
    this.isrStateValue = { kind: 'committed', isr: this.isr };
    this.followers.clear();
  }

  /**
   * A follower's fetch was read without error and without divergence (Kafka's
   * updateFollowerFetchState): its state, then ISR expansion, then the HW if its LEO moved.
   * Returns whether the HW moved. Throws NOT_LEADER_OR_FOLLOWER for a stale broker epoch.
   */
  updateFollowerFetchState(brokerId: number, fetch: FollowerFetch): boolean {
    const before = this.followers.get(brokerId);
    if (!this.isLeaderValue || before === undefined) return false;
    const after = updateFetchState(before, fetch, this.name);
    this.followers.set(brokerId, after);
    this.maybeExpandIsr(brokerId);
    return after.logEndOffset !== before.logEndOffset ? this.maybeIncrementHighWatermark() : false;
  }

  /**
   * Kafka's maybeIncrementLeaderHW: nothing while the committed ISR is below the effective
   * min.insync.replicas; otherwise the leader's LEO lowered to the LEO of every follower in the
   * maximal ISR, and of any follower caught up and eligible to join (so the HW does not pass a
   * replica about to be added). Only ever increases.
   */
  maybeIncrementHighWatermark(): boolean {
    if (!this.isLeaderValue) return false;
    if (this.isr.length < this.effectiveMinIsr()) return false;
    const leo = this.log.logEndOffset;
    const now = this.ctx.clock.nowMs();
    const lag = this.ctx.replicaLagTimeMaxMs();
    const maximal = this.maximalIsr;
    let hw = leo;
    for (const s of this.followers.values()) {
      if (s.logEndOffset >= hw) continue;
      const counts =
        maximal.includes(s.brokerId) ||
        (isCaughtUp(s, leo, now, lag) && this.ctx.isReplicaIsrEligible(s.brokerId, s.brokerEpoch));
      if (counts) hw = s.logEndOffset;
    }
    if (hw < 0n) return false;
    const moved = this.log.maybeIncrementHighWatermark(hw);
    if (moved) this.ctx.onStateChange?.();
    return moved;
  }

  /** ISR members (other than the leader) not caught up within replica.lag.time.max.ms. */
  outOfSyncReplicas(): number[] {
    const leo = this.log.logEndOffset;
    const now = this.ctx.clock.nowMs();
    const lag = this.ctx.replicaLagTimeMaxMs();
    return this.isr.filter((id) => {
      if (id === this.ctx.localBrokerId) return false;
      const s = this.followers.get(id);
      return s === undefined || !isCaughtUp(s, leo, now, lag);
    });
  }

  /** The isr-expiration check (run every replica.lag.time.max.ms / 2). Returns whether it proposed. */
  maybeShrinkIsr(): boolean {
    if (!this.isLeaderValue || this.isrStateValue.kind !== 'committed') return false;
    const outOfSync = this.outOfSyncReplicas();
    if (outOfSync.length === 0) return false;
    const oldIsr = this.isr;
    const newIsr = oldIsr.filter((id) => !outOfSync.includes(id));
    const now = this.ctx.clock.nowMs();
    const lagMs = this.ctx.replicaLagTimeMaxMs();
    // fetch-timeout: no fetch at all within replica.lag.time.max.ms; lag: fetching, not catching up.
    const timedOut = (id: number): boolean => now - (this.followers.get(id)?.lastFetchTimeMs ?? 0) > lagMs;
    const details = outOfSync
      .map((id) => {
        const s = this.followers.get(id);
        return `(brokerId: ${id}, endOffset: ${s?.logEndOffset ?? -1n}, lastCaughtUpTimeMs: ${s?.lastCaughtUpTimeMs ?? 0})`;
      })
      .join(', ');
    const leo = this.log.logEndOffset;
    const hw = this.log.highWatermark;
    this.partitionLogger.info(
      `Shrinking ISR from ${formatIsr(oldIsr)} to ${formatIsr(newIsr)}. Leader: (highWatermark: ${hw}, endOffset: ${leo}). Out of sync replicas: ${details}.`,
      {
        event: 'isr-shrink',
        topic: this.topic,
        partition: this.partition,
        leaderEpoch: this.leaderEpochValue,
        partitionEpoch: this.partitionEpochValue,
        oldIsr: [...oldIsr],
        newIsr,
        highWatermark: hw,
        logEndOffset: leo,
        replicaLagTimeMaxMs: lagMs,
        outOfSync: outOfSync.map((id) => {
          const s = this.followers.get(id);
          return {
            brokerId: id,
            cause: timedOut(id) ? 'fetch-timeout' : 'lag',
            logEndOffset: s?.logEndOffset ?? -1n,
            lastCaughtUpTimeMs: s?.lastCaughtUpTimeMs ?? 0,
            lastFetchTimeMs: s?.lastFetchTimeMs ?? 0,
          };
        }),
      },
    );
    const reasons = outOfSync.map((id) => {
      const s = this.followers.get(id);
      const caughtUp = s?.lastCaughtUpTimeMs ?? 0;
      return timedOut(id)
        ? `broker ${id} sent no fetch for ${now - (s?.lastFetchTimeMs ?? 0)} ms (replica.lag.time.max.ms ${lagMs}), its LEO ${s?.logEndOffset ?? -1n}, leader LEO ${leo}`
        : `broker ${id} fetching but not caught up for ${now - caughtUp} ms (replica.lag.time.max.ms ${lagMs}), its LEO ${s?.logEndOffset ?? -1n}, leader LEO ${leo}`;
    });
    const cause = timedOut(outOfSync[0]!) ? 'fetch-timeout' : 'lag';
    const proposal = this.proposal(newIsr, cause, `${cause}: ${reasons.join('; ')}`);
    this.isrStateValue = { kind: 'pending-shrink', isr: oldIsr, outOfSync, proposal };
    this.send(proposal, 'shrink');
    return true;
  }

  /**
   * Kafka's maybeExpandIsr: no change in flight, not in the ISR, eligible, and LEO at or past
   * both the HW and the start of this leader epoch.
   */
  maybeExpandIsr(brokerId: number): boolean {
    if (!this.isLeaderValue || this.isrStateValue.kind !== 'committed') return false;
    if (this.isr.includes(brokerId) || !this.replicasValue.includes(brokerId)) return false;
    const s = this.followers.get(brokerId);
    if (s === undefined || !this.ctx.isReplicaIsrEligible(brokerId, s.brokerEpoch)) return false;
    if (s.logEndOffset < this.log.highWatermark || s.logEndOffset < this.leaderEpochStartOffsetValue)
      return false;
    const oldIsr = this.isr;
    const newIsr = this.replicasValue.filter((id) => oldIsr.includes(id) || id === brokerId);
    this.partitionLogger.info(`Expanding ISR from ${formatIsr(oldIsr)} to ${formatIsr(newIsr)}`, {
      event: 'isr-expand',
      topic: this.topic,
      partition: this.partition,
      leaderEpoch: this.leaderEpochValue,
      partitionEpoch: this.partitionEpochValue,
      oldIsr: [...oldIsr],
      newIsr,
      brokerId,
      replicaLogEndOffset: s.logEndOffset,
      highWatermark: this.log.highWatermark,
      logEndOffset: this.log.logEndOffset,
    });
    const reason = `caught-up: broker ${brokerId} at offset ${s.logEndOffset} (HW ${this.log.highWatermark}, leader LEO ${this.log.logEndOffset})`;
    const proposal = this.proposal(newIsr, 'caught-up', reason);
    this.isrStateValue = { kind: 'pending-expand', isr: oldIsr, newInSync: brokerId, proposal };
    this.send(proposal, 'expand');
    return true;
  }

  /**
   * Counts a committed ISR change of a partition led here (Kafka's IsrShrinks / IsrExpands meters),
   * whoever proposed it: this leader (the controller's answer, or the image when it comes first)
   * or the controller (a follower fenced or in controlled shutdown). Each partition epoch is
   * applied once, so a change is counted once.
   */
  private countIsrChange(oldIsr: readonly number[], newIsr: readonly number[]): void {
    if (oldIsr.some((id) => !newIsr.includes(id))) this.ctx.onIsrChange?.('shrink');
    if (newIsr.some((id) => !oldIsr.includes(id))) this.ctx.onIsrChange?.('expand');
  }

  private proposal(newIsr: readonly number[], cause: IsrProposalCause, reason: string): IsrProposal {
    return {
      cause,
      reason,
      topic: this.topic,
      partition: this.partition,
      leaderId: this.ctx.localBrokerId,
      leaderEpoch: this.leaderEpochValue,
      partitionEpoch: this.partitionEpochValue,
      newIsr,
      newIsrEpochs: newIsr.map((id) => this.followers.get(id)?.brokerEpoch ?? -1n),
    };
  }

  private send(proposal: IsrProposal, kind: 'shrink' | 'expand'): void {
    this.ctx.alterPartition(proposal).then(
      (outcome) => this.handleAlterPartitionOutcome(proposal, outcome, kind),
      (e: unknown) => this.handleAlterPartitionFailure(proposal, e),
    );
  }

  /**
   * Kafka's handleAlterPartitionUpdate: an answer to a proposal no longer in flight is ignored.
   * Success commits the ISR and partition epoch. A stale epoch (FENCED_LEADER_EPOCH,
   * INVALID_UPDATE_VERSION) or an unknown partition keeps the proposal pending until the metadata
   * image brings the newer state; any other error drops it so the next check proposes again.
   */
  handleAlterPartitionOutcome(
    proposal: IsrProposal,
    outcome: AlterPartitionOutcome,
    /** What the proposal was; the count comes from the ISRs themselves (countIsrChange). */
    _kind: 'shrink' | 'expand',
  ): void {
    const s = this.isrStateValue;
    if (!this.isLeaderValue || s.kind === 'committed' || s.proposal !== proposal) return;
    if (outcome.errorCode !== NONE) {
      const waitForMetadata: readonly number[] = [
        UNKNOWN_TOPIC_OR_PARTITION,
        FENCED_LEADER_EPOCH,
        INVALID_UPDATE_VERSION,
      ];
      this.partitionLogger.info(
        `Failed to alter partition to ISR ${formatIsr(proposal.newIsr)}: controller error ${outcome.errorCode}${waitForMetadata.includes(outcome.errorCode) ? '; awaiting the latest metadata' : ''}`,
      );
      if (!waitForMetadata.includes(outcome.errorCode))
        this.isrStateValue = { kind: 'committed', isr: s.isr };
      return;
    }
    if (outcome.leaderEpoch !== this.leaderEpochValue || outcome.partitionEpoch < this.partitionEpochValue)
      return;
    this.partitionEpochValue = outcome.partitionEpoch;
    this.isrStateValue = { kind: 'committed', isr: [...outcome.isr] };
    this.partitionLogger.info(
      `ISR updated to ${formatIsr(outcome.isr)} and version updated to ${outcome.partitionEpoch}`,
    );
    this.countIsrChange(s.isr, outcome.isr);
    this.maybeIncrementHighWatermark();
    this.ctx.onStateChange?.();
  }

  private handleAlterPartitionFailure(proposal: IsrProposal, e: unknown): void {
    const s = this.isrStateValue;
    if (!this.isLeaderValue || s.kind === 'committed' || s.proposal !== proposal) return;
    this.partitionLogger.warn(
      `AlterPartition to ISR ${formatIsr(proposal.newIsr)} failed: ${e instanceof Error ? e.message : String(e)}; will propose again`,
    );
    this.isrStateValue = { kind: 'committed', isr: s.isr };
  }

  /**
   * Before a leader append (Kafka's appendRecordsToLeader): INVALID_REQUIRED_ACKS for acks ∉
   * {-1, 0, 1}; NOT_LEADER_OR_FOLLOWER when not leading; for acks=-1, NOT_ENOUGH_REPLICAS when
   * the committed ISR is below the effective min.insync.replicas (nothing is written).
   */
  checkBeforeAppend(requiredAcks: number): void {
    if (requiredAcks !== -1 && requiredAcks !== 0 && requiredAcks !== 1) {
      throw KafkaError.fromCode(INVALID_REQUIRED_ACKS, `acks must be -1, 0 or 1, not ${requiredAcks}`);
    }
    if (!this.isLeaderValue) {
      throw KafkaError.fromCode(
        NOT_LEADER_OR_FOLLOWER,
        `${this.name}: broker ${this.ctx.localBrokerId} is not the leader`,
      );
    }
    const minIsr = this.effectiveMinIsr();
    if (requiredAcks === -1 && this.isr.length < minIsr) {
      throw KafkaError.fromCode(
        NOT_ENOUGH_REPLICAS,
        `The size of the current ISR [${formatIsr(this.isr)}] is insufficient to satisfy the min.isr requirement of ${minIsr} for partition ${this.name}`,
      );
    }
  }

  /** Appends as leader at the current leader epoch, then moves the HW (an ISR of one). */
  appendAsLeader(records: Buffer, requiredAcks: number, origin: AppendOrigin = 'client') {
    this.checkBeforeAppend(requiredAcks);
    const info = this.log.appendAsLeader(records, this.leaderEpochValue, origin);
    this.maybeIncrementHighWatermark();
    return info;
  }

  /**
   * Kafka's checkEnoughReplicasReachOffset for a parked acks=-1 produce whose last offset is
   * `requiredOffset - 1`: done once the HW reaches it, with NOT_ENOUGH_REPLICAS_AFTER_APPEND if
   * the maximal ISR is then below min.insync.replicas; NOT_LEADER_OR_FOLLOWER once not leading.
   */
  checkEnoughReplicasReachOffset(requiredOffset: bigint): AcksCheck {
    if (!this.isLeaderValue) return { done: true, errorCode: NOT_LEADER_OR_FOLLOWER };
    if (this.log.highWatermark < requiredOffset) return { done: false, errorCode: NONE };
    const ok = this.maximalIsr.length >= this.effectiveMinIsr();
    return { done: true, errorCode: ok ? NONE : NOT_ENOUGH_REPLICAS_AFTER_APPEND };
  }

  /**
   * Kafka's low watermark: the smallest log start offset over this log and the followers on live
   * brokers (as of their latest fetch); what a DeleteRecords answer waits for.
   */
  lowWatermark(): bigint {
    let low = this.log.logStartOffset;
    for (const s of this.followers.values()) {
      if (s.logStartOffset < 0n || !this.ctx.isReplicaIsrEligible(s.brokerId, -1n)) continue;
      if (s.logStartOffset < low) low = s.logStartOffset;
    }
    return low;
  }

  /** Every replica's lag behind this leader's LEO, in offsets (unknown LEO: the whole log). */
  replicaLags(): Map<number, bigint> {
    const leo = this.log.logEndOffset;
    const out = new Map<number, bigint>();
    for (const id of this.replicasValue) {
      if (id === this.ctx.localBrokerId) {
        out.set(id, 0n);
        continue;
      }
      const s = this.followers.get(id);
      const replicaLeo = s === undefined || s.logEndOffset < 0n ? this.log.logStartOffset : s.logEndOffset;
      out.set(id, leo > replicaLeo ? leo - replicaLeo : 0n);
    }
    return out;
  }
}

/**
 * Runs the isr-expiration check over `leaders()` every replica.lag.time.max.ms / 2, re-reading
 * the setting at every run (so a dynamic change applies from the next run). Returns a stop function.
 */
/** The longest wait between two ISR expiration checks, whatever replica.lag.time.max.ms is. */
export const ISR_EXPIRATION_MAX_INTERVAL_MS = 1000;

export function scheduleIsrExpiration(
  scheduler: { schedule(name: string, delayMs: number, task: () => void): () => void },
  replicaLagTimeMaxMs: () => number,
  leaders: () => Iterable<PartitionLeaderState>,
): () => void {
  let cancel: () => void = () => {};
  let stopped = false;
  // Kafka checks every replica.lag.time.max.ms / 2. Skiff also checks at least every
  // ISR_EXPIRATION_MAX_INTERVAL_MS, so a lowered (dynamic) lag time applies within that interval
  // instead of after the old half-period, and a replica leaves closer to the lag time itself.
  const interval = (): number =>
    Math.max(1, Math.min(ISR_EXPIRATION_MAX_INTERVAL_MS, Math.floor(replicaLagTimeMaxMs() / 2)));
  const run = (): void => {
    if (stopped) return;
    for (const l of leaders()) l.maybeShrinkIsr();
    cancel = scheduler.schedule('isr-expiration', interval(), run);
  };
  cancel = scheduler.schedule('isr-expiration', interval(), run);
  return () => {
    stopped = true;
    cancel();
  };
}
