/**
 * The follower side of one partition (Kafka's PartitionFetchState plus ReplicaFetcherThread's
 * per-partition work): what to fetch next, and what to do with the leader's answer — append,
 * HW and log start from the leader, truncation by diverging epoch, and the catch-up-or-rebuild
 * decision on OFFSET_OUT_OF_RANGE (seed 13.3).
 *
 * Owned by the fetcher of its current leader; calls are serialised by the event loop. The fetcher
 * drives it; nothing here does I/O beyond the partition's own Log.
 */

import type { Clock } from '../common/clock.js';
import { childLogger, type Logger } from '../common/logger.js';
import { topicPartitionKey } from '../common/topic-partition.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import type { FetchPartition } from '../protocol/generated/FetchRequest.js';
import type { PartitionData } from '../protocol/generated/FetchResponse.js';
import { KafkaError } from '../protocol/kafka-error.js';
import { readBatchHeader } from '../protocol/records/batch.js';
import { OffsetsOutOfOrderError, UnexpectedAppendOffsetError } from '../storage/errors.js';
import type { Log } from '../storage/log.js';
import { offsetTruncationState } from './truncation.js';

const { NONE, OFFSET_OUT_OF_RANGE, FENCED_LEADER_EPOCH, KAFKA_STORAGE_ERROR } = ErrorCode;

/** Things an operator wants to see beside the log lines (the dashboard, `skiff` tools, tests). */
export type ReplicationEvent =
  | {
      readonly kind: 'rebuild';
      readonly timeMs: number;
      readonly partition: string;
      readonly leaderId: number;
      readonly oldLogEndOffset: bigint;
      readonly newLogStartOffset: bigint;
      /** Where the new log begins: the base offset of the batch holding the log start, or the log start. */
      readonly restartOffset: bigint;
      readonly bytesDiscarded: number;
    }
  | {
      readonly kind: 'truncate';
      readonly timeMs: number;
      readonly partition: string;
      readonly leaderId: number;
      readonly fromLogEndOffset: bigint;
      readonly toOffset: bigint;
      readonly reason: 'diverging-epoch' | 'leader-log-end';
    };

export type FollowerStatus = 'fetching' | 'awaiting-leader-offsets' | 'fenced' | 'stopped';

/** What the fetcher should do after a partition's response was handled. */
export type FollowerOutcome =
  | { readonly kind: 'appended'; readonly bytes: number }
  | { readonly kind: 'truncated' }
  | { readonly kind: 'out-of-range' }
  | { readonly kind: 'fenced' }
  | { readonly kind: 'retry'; readonly errorCode: number }
  | { readonly kind: 'stale' };

export interface FollowerContext {
  readonly localBrokerId: number;
  readonly clock: Clock;
  readonly logger: Logger;
  onEvent?(event: ReplicationEvent): void;
}

/** A sent partition: the fetch state it was built from, so a late answer to an old state is dropped. */
export interface SentFetch {
  readonly fetchOffset: bigint;
  readonly currentLeaderEpoch: number;
}

/** Kafka's prefix of a replica fetcher's log lines: `[ReplicaFetcher replicaId=3, leaderId=1]`. */
export function replicaFetcherPrefix(replicaId: number, leaderId: number): string {
  return `[ReplicaFetcher replicaId=${replicaId}, leaderId=${leaderId}]`;
}

export class PartitionFollower {
  private leaderIdValue = -1;
  private leaderEpochValue = -1;
  private fetchOffsetValue: bigint;
  private lastFetchedEpochValue = -1;
  private statusValue: FollowerStatus = 'stopped';
  private delayedUntilMs = 0;
  /** The leader's HW in its latest answer: a lower bound of its LEO, for offsetLag. */
  private leaderHighWatermarkValue = -1n;
  /** A rebuild whose log line waits for the first fetched batch (it names where the log restarted). */
  private pendingRebuild: {
    oldLogEndOffset: bigint;
    newLogStartOffset: bigint;
    bytesDiscarded: number;
  } | null = null;

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly topicId: string,
    readonly log: Log,
    private readonly ctx: FollowerContext,
  ) {
    this.fetchOffsetValue = log.logEndOffset;
  }

  /** Lines with Kafka's fetcher prefix: `[ReplicaFetcher replicaId=3, leaderId=1]` (the leader followed now). */
  private get fetcherLogger(): Logger {
    return childLogger(this.ctx.logger, replicaFetcherPrefix(this.ctx.localBrokerId, this.leaderIdValue));
  }

  get name(): string {
    return topicPartitionKey(this.topic, this.partition);
  }

  get leaderId(): number {
    return this.leaderIdValue;
  }

  get leaderEpoch(): number {
    return this.leaderEpochValue;
  }

  get fetchOffset(): bigint {
    return this.fetchOffsetValue;
  }

  get lastFetchedEpoch(): number {
    return this.lastFetchedEpochValue;
  }

  get status(): FollowerStatus {
    return this.statusValue;
  }

  /**
   * In sync by this follower's own estimate (Kafka's fetch state with lag ≤ 0): a leader HW was
   * seen and the local LEO has reached it. False after a (re)start until the first answer.
   */
  get inSyncEstimate(): boolean {
    return this.leaderHighWatermarkValue >= 0n && this.log.logEndOffset >= this.leaderHighWatermarkValue;
  }

  /** Whether a leader answered a Fetch with its HW since this follower was created. */
  get leaderAnswered(): boolean {
    return this.leaderHighWatermarkValue >= 0n;
  }

  /** The leader's LEO as far as this follower knows: at least the leader's HW and its own LEO. */
  get leaderLogEndOffsetEstimate(): bigint {
    const leo = this.log.logEndOffset;
    return this.leaderHighWatermarkValue > leo ? this.leaderHighWatermarkValue : leo;
  }

  /**
   * Kafka's makeFollower for a new leader or leader epoch: fetch from the LEO with the latest
   * local epoch as lastFetchedEpoch, so the first Fetch finds any divergence. Returns whether
   * anything changed (same leader and epoch: nothing).
   */
  makeFollower(leaderId: number, leaderEpoch: number): boolean {
    if (
      this.statusValue !== 'stopped' &&
      leaderId === this.leaderIdValue &&
      leaderEpoch === this.leaderEpochValue
    ) {
      return false;
    }
    this.finishRebuild();
    this.leaderIdValue = leaderId;
    this.leaderEpochValue = leaderEpoch;
    this.resetToLogEnd();
    this.statusValue = 'fetching';
    this.delayedUntilMs = 0;
    this.fetcherLogger.info(
      `${this.name}: following leader ${leaderId} at leader epoch ${leaderEpoch} from offset ${this.fetchOffsetValue} (last fetched epoch ${this.lastFetchedEpochValue})`,
    );
    return true;
  }

  stop(): void {
    this.finishRebuild();
    this.statusValue = 'stopped';
  }

  private resetToLogEnd(): void {
    this.fetchOffsetValue = this.log.logEndOffset;
    this.lastFetchedEpochValue = this.log.leaderEpochCache.latestEpoch() ?? -1;
  }

  /** Fetchable now: fetching and not backing off. */
  isFetchable(nowMs: number): boolean {
    return this.statusValue === 'fetching' && nowMs >= this.delayedUntilMs;
  }

  /** When a backing-off partition may fetch again (0: now). */
  get delayedUntil(): number {
    return this.delayedUntilMs;
  }

  delay(backoffMs: number): void {
    this.delayedUntilMs = this.ctx.clock.nowMs() + backoffMs;
  }

  /** This partition's entry in the next Fetch. */
  fetchPartition(partitionMaxBytes: number): FetchPartition {
    return {
      partition: this.partition,
      currentLeaderEpoch: this.leaderEpochValue,
      fetchOffset: this.fetchOffsetValue,
      lastFetchedEpoch: this.lastFetchedEpochValue,
      logStartOffset: this.log.logStartOffset,
      partitionMaxBytes,
      replicaDirectoryId: 'AAAAAAAAAAAAAAAAAAAAAA',
    };
  }

  sent(): SentFetch {
    return { fetchOffset: this.fetchOffsetValue, currentLeaderEpoch: this.leaderEpochValue };
  }

  /** Handles the leader's answer for this partition to the Fetch built from `sent`. */
  handlePartitionData(pd: PartitionData, sent: SentFetch): FollowerOutcome {
    if (
      this.statusValue !== 'fetching' ||
      sent.fetchOffset !== this.fetchOffsetValue ||
      sent.currentLeaderEpoch !== this.leaderEpochValue
    ) {
      return { kind: 'stale' };
    }
    if (pd.errorCode === OFFSET_OUT_OF_RANGE) {
      this.statusValue = 'awaiting-leader-offsets';
      return { kind: 'out-of-range' };
    }
    if (pd.errorCode === FENCED_LEADER_EPOCH) {
      // Our leader epoch is older than the leader's: wait for the metadata image (makeFollower).
      this.statusValue = 'fenced';
      this.fetcherLogger.info(
        `${this.name}: fenced at leader epoch ${this.leaderEpochValue}; waiting for the new partition state`,
      );
      return { kind: 'fenced' };
    }
    if (pd.errorCode !== NONE) return { kind: 'retry', errorCode: pd.errorCode };
    if (pd.highWatermark >= 0n) this.leaderHighWatermarkValue = pd.highWatermark;
    const diverging = pd.divergingEpoch;
    if (diverging.epoch >= 0 || diverging.endOffset >= 0n) {
      this.truncateToDivergence(diverging.epoch, diverging.endOffset);
      return { kind: 'truncated' };
    }
    return this.append(pd);
  }

  private truncateToDivergence(epoch: number, endOffset: bigint): void {
    const log = this.log;
    const before = log.logEndOffset;
    const state = offsetTruncationState(
      { epoch, endOffset },
      {
        fetchOffset: this.fetchOffsetValue,
        logEndOffset: before,
        endOffsetForEpoch: (e) => log.endOffsetForEpoch(e),
      },
    );
    if (state.offset < log.highWatermark) {
      this.fetcherLogger.warn(
        `${this.name}: truncating to offset ${state.offset} below the high watermark ${log.highWatermark}`,
      );
    }
    const sizeBefore = log.size;
    if (log.truncateTo(state.offset, { quiet: true })) {
      this.fetcherLogger.info(
        `Truncating partition ${this.name} with TruncationState(offset=${state.offset}, completed=${state.truncationCompleted}) due to the leader's diverging epoch ${epoch} ending at ${endOffset}: LEO ${before} → ${log.logEndOffset}, ${sizeBefore - log.size} bytes discarded${state.truncationCompleted ? '' : ' (will ask again with the new latest epoch)'}`,
        {
          event: 'truncation',
          topic: this.topic,
          partition: this.partition,
          leaderId: this.leaderIdValue,
          leaderEpoch: this.leaderEpochValue,
          divergingEpoch: epoch,
          divergingEndOffset: endOffset,
          truncationOffset: state.offset,
          truncationCompleted: state.truncationCompleted,
          oldLogEndOffset: before,
          logEndOffset: log.logEndOffset,
          highWatermark: log.highWatermark,
          bytesDiscarded: sizeBefore - log.size,
        },
      );
      this.ctx.onEvent?.({
        kind: 'truncate',
        timeMs: this.ctx.clock.nowMs(),
        partition: this.name,
        leaderId: this.leaderIdValue,
        fromLogEndOffset: before,
        toOffset: log.logEndOffset,
        reason: 'diverging-epoch',
      });
    }
    this.resetToLogEnd();
  }

  private append(pd: PartitionData): FollowerOutcome {
    const log = this.log;
    const records = completeBatches(pd.records);
    // The first answer after a rebuild: storage stays quiet, the rebuild's one line says it all.
    const quiet = this.pendingRebuild !== null;
    if (records.length > 0) {
      try {
        if (!this.restartedAtLeaderLogStart(records, pd.logStartOffset))
          log.appendAsFollower(records, { quiet });
      } catch (e) {
        if (e instanceof KafkaError) return { kind: 'retry', errorCode: e.code };
        if (e instanceof UnexpectedAppendOffsetError || e instanceof OffsetsOutOfOrderError) {
          // The leader answered for another position than ours: start again from our LEO.
          this.fetcherLogger.warn(`${this.name}: ${e.message}; fetching again from ${log.logEndOffset}`);
          this.resetToLogEnd();
          return { kind: 'retry', errorCode: KAFKA_STORAGE_ERROR };
        }
        throw e;
      }
    }
    // HW = min(leader HW, LEO); then the log start follows the leader's (never past the HW).
    const leo = log.logEndOffset;
    log.updateHighWatermark(pd.highWatermark < leo ? pd.highWatermark : leo);
    const restartOffset = log.logStartOffset;
    if (pd.logStartOffset > log.logStartOffset) {
      const target = pd.logStartOffset < log.highWatermark ? pd.logStartOffset : log.highWatermark;
      log.maybeIncrementLogStartOffset(target, 'leader offset increment', { quiet });
    }
    this.finishRebuild(restartOffset);
    this.resetToLogEnd();
    return { kind: 'appended', bytes: records.length };
  }

  /**
   * The leader's log start sits inside a batch (DeleteRecords to an offset mid-batch) and our LEO
   * is exactly there — after a truncation to the leader's epoch end, which Kafka answers with its
   * log start for an epoch it no longer holds. The leader serves the whole batch, from its base
   * offset below our LEO; Kafka's follower would refuse it on every fetch (it restarts its log only
   * when that log is empty) and never catch up. Everything we hold lies below the leader's log
   * start, so nothing the leader still has is lost: the log restarts at the batch's base offset,
   * as a rebuild does (one line, one `rebuild` event), and takes the batch. False: not this case.
   */
  private restartedAtLeaderLogStart(records: Buffer, leaderLogStartOffset: bigint): boolean {
    const log = this.log;
    const leo = log.logEndOffset;
    if (leaderLogStartOffset < leo || leo === log.logStartOffset) return false;
    const first = readBatchHeader(records, 0);
    const firstLast = first.baseOffset + BigInt(first.lastOffsetDelta);
    if (first.baseOffset >= leo || firstLast < leo) return false;
    const bytesDiscarded = log.size;
    log.truncateFullyAndStartAt(first.baseOffset, { quiet: true });
    log.appendAsFollower(records, { quiet: true });
    this.fetcherLogger.warn(
      `Restarting partition ${this.name} at offset ${first.baseOffset}: the leader's log start offset ${leaderLogStartOffset} is inside the batch ${first.baseOffset}..${firstLast} and our LEO ${leo} was there; the ${bytesDiscarded} bytes below it (all below the leader's log start) were discarded`,
      {
        event: 'rebuild',
        topic: this.topic,
        partition: this.partition,
        leaderId: this.leaderIdValue,
        leaderEpoch: this.leaderEpochValue,
        oldLogEndOffset: leo,
        leaderLogStartOffset,
        restartOffset: first.baseOffset,
        bytesDiscarded,
      },
    );
    this.ctx.onEvent?.({
      kind: 'rebuild',
      timeMs: this.ctx.clock.nowMs(),
      partition: this.name,
      leaderId: this.leaderIdValue,
      oldLogEndOffset: leo,
      newLogStartOffset: leaderLogStartOffset,
      restartOffset: first.baseOffset,
      bytesDiscarded,
    });
    return true;
  }

  /**
   * OFFSET_OUT_OF_RANGE, with the leader's log start offset and LEO (Kafka's
   * fetchOffsetAndTruncate): a leader LEO below ours → truncate to it; a leader log start above
   * our LEO → REBUILD: every local segment renamed `.deleted`, the log restarted at the leader's
   * log start (the first fetched batch may then restart it at its own base offset); otherwise
   * fetch from max(leader log start, LEO).
   */
  handleLeaderOffsets(leaderLogStartOffset: bigint, leaderLogEndOffset: bigint): void {
    if (this.statusValue !== 'awaiting-leader-offsets') return;
    const log = this.log;
    const leo = log.logEndOffset;
    if (leaderLogEndOffset < leo) {
      const sizeBefore = log.size;
      log.truncateTo(leaderLogEndOffset, { quiet: true });
      this.fetcherLogger.warn(
        `Reset fetch offset for partition ${this.name} from ${leo} to current leader's latest offset ${leaderLogEndOffset}: truncated to ${log.logEndOffset}, ${sizeBefore - log.size} bytes discarded`,
      );
      this.ctx.onEvent?.({
        kind: 'truncate',
        timeMs: this.ctx.clock.nowMs(),
        partition: this.name,
        leaderId: this.leaderIdValue,
        fromLogEndOffset: leo,
        toOffset: log.logEndOffset,
        reason: 'leader-log-end',
      });
    } else if (leaderLogStartOffset > leo) {
      // REBUILD. Storage stays quiet: one line, once the first fetched batch shows where the new
      // log begins (the base offset of the batch holding the leader's log start).
      const bytesDiscarded = log.truncateFullyAndStartAt(leaderLogStartOffset, { quiet: true });
      const pending = this.pendingRebuild;
      this.pendingRebuild = {
        oldLogEndOffset: pending?.oldLogEndOffset ?? leo,
        newLogStartOffset: leaderLogStartOffset,
        bytesDiscarded: (pending?.bytesDiscarded ?? 0) + bytesDiscarded,
      };
    }
    this.resetToLogEnd();
    this.statusValue = 'fetching';
  }

  /**
   * The rebuild's one log line and event: partition, old LEO, the leader's log start offset, where
   * the log restarted and the bytes discarded. `restartOffset` defaults to the log's start (the
   * follower stopped before a batch arrived).
   */
  private finishRebuild(restartOffset: bigint = this.log.logStartOffset): void {
    const r = this.pendingRebuild;
    if (r === null) return;
    this.pendingRebuild = null;
    const where =
      restartOffset < r.newLogStartOffset
        ? `log restarted at offset ${restartOffset} (base offset of the batch holding offset ${r.newLogStartOffset}), log start offset ${this.log.logStartOffset}`
        : `log restarted at offset ${restartOffset}`;
    this.fetcherLogger.warn(
      `Rebuilding partition ${this.name}: local log end offset ${r.oldLogEndOffset} is below the leader's log start offset ${r.newLogStartOffset}; all local segments discarded (${r.bytesDiscarded} bytes, renamed .deleted until file.delete.delay.ms); ${where}`,
      {
        event: 'rebuild',
        topic: this.topic,
        partition: this.partition,
        leaderId: this.leaderIdValue,
        leaderEpoch: this.leaderEpochValue,
        oldLogEndOffset: r.oldLogEndOffset,
        leaderLogStartOffset: r.newLogStartOffset,
        restartOffset,
        logStartOffset: this.log.logStartOffset,
        bytesDiscarded: r.bytesDiscarded,
      },
    );
    this.ctx.onEvent?.({
      kind: 'rebuild',
      timeMs: this.ctx.clock.nowMs(),
      partition: this.name,
      leaderId: this.leaderIdValue,
      oldLogEndOffset: r.oldLogEndOffset,
      newLogStartOffset: r.newLogStartOffset,
      restartOffset,
      bytesDiscarded: r.bytesDiscarded,
    });
  }

  /** The leader's offsets could not be had: try the whole out-of-range handling again later. */
  leaderOffsetsFailed(backoffMs: number): void {
    if (this.statusValue !== 'awaiting-leader-offsets') return;
    this.statusValue = 'fetching';
    this.delay(backoffMs);
  }
}

/**
 * The whole batches of a fetched chunk: the leader's byte limit may cut the last batch, which the
 * follower drops and fetches again next time (as Kafka's record iteration stops at it).
 */
export function completeBatches(records: Buffer | null): Buffer {
  if (records === null || records.length === 0) return Buffer.alloc(0);
  let pos = 0;
  while (pos + 12 <= records.length) {
    const size = 12 + records.readInt32BE(pos + 8);
    if (size < 12 || pos + size > records.length) break;
    pos += size;
  }
  return pos === records.length ? records : records.subarray(0, pos);
}
