/**
 * Where a follower truncates to, given what its leader said about an epoch (Kafka's
 * AbstractFetcherThread.getOffsetTruncationState). A pure function of the follower's log state,
 * so each of Kafka's cases is a unit test and the fetcher only applies the answer.
 */
import { UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET } from '../storage/leader-epoch-cache.js';

export interface EpochEndOffset {
  readonly epoch: number;
  readonly endOffset: bigint;
}

export interface FollowerLogView {
  /** The follower's next fetch offset (its LEO when it is fetching). */
  readonly fetchOffset: bigint;
  readonly logEndOffset: bigint;
  /**
   * The follower's own end offset for `epoch` (its epoch cache's endOffsetFor), with
   * UNDEFINED_EPOCH/-1 when it knows no such epoch.
   */
  endOffsetForEpoch(epoch: number): EpochEndOffset;
}

export interface OffsetTruncationState {
  readonly offset: bigint;
  /**
   * False when the follower's epoch at that point differs from the leader's: it truncates there
   * and asks again with its new latest epoch (the next Fetch carries it as lastFetchedEpoch).
   */
  readonly truncationCompleted: boolean;
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

/**
 * The leader answered `leader` (a Fetch divergingEpoch or an OffsetsForLeaderEpoch result):
 * - end offset undefined → the leader cannot tell; stay at the fetch offset;
 * - epoch undefined → an old leader without epochs: min(end offset, LEO);
 * - otherwise the follower's own end offset for that epoch decides: unknown → min(leader end, LEO);
 *   a different (lower) epoch → truncate to min(own end, LEO) and ask again;
 *   the same epoch → min(own end, leader end, LEO).
 */
export function offsetTruncationState(
  leader: EpochEndOffset,
  follower: FollowerLogView,
): OffsetTruncationState {
  const leo = follower.logEndOffset;
  if (leader.endOffset === UNDEFINED_EPOCH_OFFSET) {
    return { offset: follower.fetchOffset, truncationCompleted: true };
  }
  if (leader.epoch === UNDEFINED_EPOCH) {
    return { offset: min(leader.endOffset, leo), truncationCompleted: true };
  }
  const own = follower.endOffsetForEpoch(leader.epoch);
  if (own.epoch === UNDEFINED_EPOCH && own.endOffset === UNDEFINED_EPOCH_OFFSET) {
    return { offset: min(leader.endOffset, leo), truncationCompleted: true };
  }
  if (own.epoch !== leader.epoch) {
    return { offset: min(own.endOffset, leo), truncationCompleted: false };
  }
  return { offset: min(min(own.endOffset, leader.endOffset), leo), truncationCompleted: true };
}
