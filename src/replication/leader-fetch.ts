/**
 * The leader's answer to one partition of a follower Fetch (Kafka's Partition.fetchRecords with
 * a replica id): epoch checks, OFFSET_OUT_OF_RANGE below the log start (before anything else),
 * divergence by lastFetchedEpoch, OFFSET_OUT_OF_RANGE above the LEO, the read up to the LEO, and
 * the follower's fetch state updated from it. A function over PartitionLeaderState so the broker's
 * Fetch handler and the simulator call the same code.
 *
 * Leader-side throttling (Kafka's shouldLeaderThrottle): for a partition in the leader's throttled
 * set fetched by a follower NOT in the ISR while the leader quota is exceeded, no records are sent
 * (error NONE, HW and log start still sent, the follower's fetch state still updated). Skiff also
 * reads no more than the budget holds (at least one batch for the first partition with data), so
 * the quota holds from the first fetch on, and sends whole batches only. Bytes sent for throttled partitions are charged to the
 * quota (any follower, as Kafka records them); all bytes count in its observed rates.
 */
import { ErrorCode } from '../protocol/generated/errors.js';
import { KafkaError } from '../protocol/kafka-error.js';
import { completeBatches } from './follower.js';
import type { PartitionLeaderState } from './leader-state.js';
import type { ReplicationQuota } from './quota.js';
import type { EpochEndOffset } from './truncation.js';

const {
  NONE,
  OFFSET_OUT_OF_RANGE,
  NOT_LEADER_OR_FOLLOWER,
  FENCED_LEADER_EPOCH,
  UNKNOWN_LEADER_EPOCH,
  KAFKA_STORAGE_ERROR,
} = ErrorCode;

const EMPTY = Buffer.alloc(0);

export interface FollowerFetchPartition {
  readonly fetchOffset: bigint;
  readonly logStartOffset: bigint;
  /** -1 skips the check. */
  readonly currentLeaderEpoch: number;
  /** -1: the follower's log has no epoch (empty): no divergence check. */
  readonly lastFetchedEpoch: number;
  readonly maxBytes: number;
  /** The records go straight into a response a server connection writes (LogSegment.read's forSocket). */
  readonly forSocket?: boolean;
}

export interface FollowerReadResult {
  readonly errorCode: number;
  readonly highWatermark: bigint;
  readonly lastStableOffset: bigint;
  readonly logStartOffset: bigint;
  /** The leader's LEO when the read was done (not sent on the wire; for lag and tests). */
  readonly logEndOffset: bigint;
  readonly records: Buffer;
  /** Set (and records empty) when the follower's log diverges from the leader's. */
  readonly divergingEpoch: EpochEndOffset | null;
  /** The follower's fetch moved the HW: parked acks=all produces and consumer fetches may complete. */
  readonly highWatermarkMoved: boolean;
  /** Records were withheld by the leader's replication throttle. */
  readonly throttled?: boolean;
}

export function readForFollower(
  leader: PartitionLeaderState,
  replicaId: number,
  brokerEpoch: bigint,
  p: FollowerFetchPartition,
  minOneMessage: boolean,
  nowMs: number,
  quota?: ReplicationQuota,
  /** How many throttled partitions of this Fetch share the leader's budget (an even share each). */
  throttledShares = 1,
): FollowerReadResult {
  const log = leader.log;
  const fail = (errorCode: number): FollowerReadResult => ({
    errorCode,
    highWatermark: log.highWatermark,
    lastStableOffset: log.lastStableOffset,
    logStartOffset: log.logStartOffset,
    logEndOffset: log.logEndOffset,
    records: EMPTY,
    divergingEpoch: null,
    highWatermarkMoved: false,
  });
  if (!leader.isLeader || !leader.replicas.includes(replicaId)) return fail(NOT_LEADER_OR_FOLLOWER);
  if (p.currentLeaderEpoch !== -1) {
    if (p.currentLeaderEpoch < leader.leaderEpoch) return fail(FENCED_LEADER_EPOCH);
    if (p.currentLeaderEpoch > leader.leaderEpoch) return fail(UNKNOWN_LEADER_EPOCH);
  }
  // Read before the fetch state is updated, as Kafka does: appends after this read must not keep
  // a follower that fetched everything there was from counting as caught up.
  const leaderEndOffset = log.logEndOffset;
  if (p.fetchOffset < log.logStartOffset) return fail(OFFSET_OUT_OF_RANGE);
  if (p.lastFetchedEpoch >= 0) {
    const end = log.endOffsetForEpoch(p.lastFetchedEpoch);
    if (end.epoch < p.lastFetchedEpoch || end.endOffset < p.fetchOffset) {
      // The follower's state is not updated: its fetch offset is not a position in this log.
      return { ...fail(NONE), divergingEpoch: { epoch: end.epoch, endOffset: end.endOffset } };
    }
  }
  if (p.fetchOffset > leaderEndOffset) return fail(OFFSET_OUT_OF_RANGE);
  const isThrottled = quota?.isThrottled(leader.topic, leader.partition) ?? false;
  let maxBytes = Math.max(0, p.maxBytes);
  let withheld = false;
  if (quota && isThrottled && !leader.isr.includes(replicaId)) {
    const allowance = quota.allowance(nowMs);
    if (allowance <= 0) withheld = true;
    else maxBytes = Math.min(maxBytes, Math.max(1, Math.floor(allowance / Math.max(1, throttledShares))));
  }
  let records: Buffer = EMPTY;
  try {
    if (!withheld) {
      // Throttled reads are cut to whole batches below, which reads their bytes.
      const forSocket = (p.forSocket ?? false) && !isThrottled;
      records = log.read(p.fetchOffset, maxBytes, 'log-end', minOneMessage, forSocket).records;
      // A throttled partition's budget is not spent on the cut batch at the end of a limited read
      // (the follower would drop it and fetch it again): whole batches only.
      if (isThrottled) records = completeBatches(records);
    }
  } catch (e) {
    if (e instanceof KafkaError) return fail(e.code);
    return fail(KAFKA_STORAGE_ERROR);
  }
  let moved = false;
  try {
    moved = leader.updateFollowerFetchState(replicaId, {
      fetchOffset: p.fetchOffset,
      logStartOffset: p.logStartOffset,
      brokerEpoch,
      leaderEndOffset,
      fetchTimeMs: nowMs,
    });
  } catch (e) {
    if (e instanceof KafkaError) return fail(e.code);
    throw e;
  }
  quota?.record(leader.name, records.length, isThrottled, nowMs, replicaId);
  return {
    errorCode: NONE,
    highWatermark: log.highWatermark,
    lastStableOffset: log.lastStableOffset,
    logStartOffset: log.logStartOffset,
    logEndOffset: leaderEndOffset,
    records,
    divergingEpoch: null,
    highWatermarkMoved: moved,
    throttled: withheld,
  };
}

export interface EpochEndOffsetResult {
  readonly errorCode: number;
  readonly leaderEpoch: number;
  readonly endOffset: bigint;
}

/**
 * OffsetsForLeaderEpoch on the leader (Kafka's Partition.lastOffsetForLeaderEpoch): after the
 * currentLeaderEpoch check, the end offset of `leaderEpoch` in this log — the start of the next
 * higher epoch, or the LEO for the latest — with the largest epoch ≤ the requested one; -1/-1
 * when the log cannot tell. For followers of older brokers that do not send lastFetchedEpoch.
 */
export function lastOffsetForLeaderEpoch(
  leader: PartitionLeaderState,
  currentLeaderEpoch: number,
  leaderEpoch: number,
): EpochEndOffsetResult {
  const fail = (errorCode: number): EpochEndOffsetResult => ({ errorCode, leaderEpoch: -1, endOffset: -1n });
  if (!leader.isLeader) return fail(NOT_LEADER_OR_FOLLOWER);
  if (currentLeaderEpoch !== -1) {
    if (currentLeaderEpoch < leader.leaderEpoch) return fail(FENCED_LEADER_EPOCH);
    if (currentLeaderEpoch > leader.leaderEpoch) return fail(UNKNOWN_LEADER_EPOCH);
  }
  const end = leader.log.endOffsetForEpoch(leaderEpoch);
  return { errorCode: NONE, leaderEpoch: end.epoch, endOffset: end.endOffset };
}
