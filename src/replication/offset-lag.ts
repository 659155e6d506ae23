/**
 * DescribeLogDirs' offsetLag, Skiff's way: how far a replica is behind its **leader's** LEO, for
 * every replica, in the ISR or not (ARCHITECTURE.md, "Where Skiff is better"). Kafka reports
 * max(HW − LEO, 0) of the local log, which is 0 for every current replica — the seed 13.3 trap of
 * a follower ~100 MiB behind showing offsetLag=0.
 */
import type { PartitionFollower } from './follower.js';
import type { PartitionLeaderState } from './leader-state.js';

export function offsetLag(leaderLogEndOffset: bigint, replicaLogEndOffset: bigint): bigint {
  return leaderLogEndOffset > replicaLogEndOffset ? leaderLogEndOffset - replicaLogEndOffset : 0n;
}

/** offsetLag of a follower that has not heard from a leader yet: unknown, not 0. */
export const UNKNOWN_OFFSET_LAG = -1n;

/**
 * The local replica's offsetLag: 0 on the leader; on a follower, the leader's LEO as last learned
 * (at least the leader's HW from its latest Fetch answer) minus the local LEO — and -1 (unknown)
 * until a leader has answered: a follower just started (or whose leader is offline) may be far
 * behind, and 0 there would be the seed's trap again (a replica out of the ISR showing no lag).
 */
export function localOffsetLag(
  role: { readonly leader: PartitionLeaderState } | { readonly follower: PartitionFollower },
): bigint {
  if ('leader' in role) return 0n;
  const f = role.follower;
  if (!f.leaderAnswered) return UNKNOWN_OFFSET_LAG;
  return offsetLag(f.leaderLogEndOffsetEstimate, f.log.logEndOffset);
}

/**
 * Every replica's offsetLag as the leader sees it (its follower LEOs are exact as of their latest
 * fetch), for tools that ask the leader about all replicas at once.
 */
export function replicaOffsetLags(leader: PartitionLeaderState): Map<number, bigint> {
  return leader.replicaLags();
}
