/**
 * What a partition leader knows about one follower (Kafka's Replica / ReplicaState), and the
 * rules that update it on each follower Fetch. Plain data plus pure functions: the leader state
 * owns one per follower and replaces it on every fetch.
 */
import { ErrorCode } from '../protocol/generated/errors.js';
import { KafkaError } from '../protocol/kafka-error.js';

const { NOT_LEADER_OR_FOLLOWER } = ErrorCode;

/** -1: not known yet (a new leader has not heard from the follower). */
export const UNKNOWN_OFFSET = -1n;

export interface FollowerReplicaState {
  readonly brokerId: number;
  readonly logStartOffset: bigint;
  /** The fetch offset of the follower's latest valid Fetch. */
  readonly logEndOffset: bigint;
  /** The leader's LEO at the follower's previous fetch (the highest seen). */
  readonly lastFetchLeaderLogEndOffset: bigint;
  readonly lastFetchTimeMs: number;
  readonly lastCaughtUpTimeMs: number;
  /** The follower's registration epoch on its latest fetch; -1 when not sent. */
  readonly brokerEpoch: bigint;
}

export interface FollowerFetch {
  readonly fetchOffset: bigint;
  readonly logStartOffset: bigint;
  readonly brokerEpoch: bigint;
  /** The leader's LEO when the read was done (before it, as Kafka reads it). */
  readonly leaderEndOffset: bigint;
  readonly fetchTimeMs: number;
}

/**
 * Kafka's resetReplicaState for a new leader: nothing known of the follower; an ISR member counts
 * as caught up now (so it is not shrunk out before it had a chance to fetch), others never.
 */
export function initialReplicaState(brokerId: number, inIsr: boolean, nowMs: number): FollowerReplicaState {
  return {
    brokerId,
    logStartOffset: UNKNOWN_OFFSET,
    logEndOffset: UNKNOWN_OFFSET,
    lastFetchLeaderLogEndOffset: UNKNOWN_OFFSET,
    lastFetchTimeMs: 0,
    lastCaughtUpTimeMs: inIsr ? nowMs : 0,
    brokerEpoch: -1n,
  };
}

/**
 * Kafka's updateFetchStateOrThrow: a fetch at or past the leader's current LEO means caught up
 * now; a fetch at or past the LEO the leader had at the previous fetch means it was caught up at
 * that previous fetch. A fetch from an older incarnation of the follower (stale broker epoch) is
 * NOT_LEADER_OR_FOLLOWER.
 */
export function updateFetchState(
  s: FollowerReplicaState,
  f: FollowerFetch,
  partition: string,
): FollowerReplicaState {
  if (f.brokerEpoch !== -1n && s.brokerEpoch !== -1n && f.brokerEpoch < s.brokerEpoch) {
    throw KafkaError.fromCode(
      NOT_LEADER_OR_FOLLOWER,
      `${partition}: fetch from broker ${s.brokerId} with stale broker epoch ${f.brokerEpoch} (current ${s.brokerEpoch})`,
    );
  }
  let lastCaughtUpTimeMs = s.lastCaughtUpTimeMs;
  if (f.fetchOffset >= f.leaderEndOffset) {
    lastCaughtUpTimeMs = Math.max(lastCaughtUpTimeMs, f.fetchTimeMs);
  } else if (f.fetchOffset >= s.lastFetchLeaderLogEndOffset) {
    lastCaughtUpTimeMs = Math.max(lastCaughtUpTimeMs, s.lastFetchTimeMs);
  }
  return {
    brokerId: s.brokerId,
    logStartOffset: f.logStartOffset,
    logEndOffset: f.fetchOffset,
    lastFetchLeaderLogEndOffset:
      f.leaderEndOffset > s.lastFetchLeaderLogEndOffset ? f.leaderEndOffset : s.lastFetchLeaderLogEndOffset,
    lastFetchTimeMs: f.fetchTimeMs,
    lastCaughtUpTimeMs,
    brokerEpoch: f.brokerEpoch === -1n ? s.brokerEpoch : f.brokerEpoch,
  };
}

/** Kafka's isCaughtUp: at the leader's LEO, or caught up within replica.lag.time.max.ms. */
export function isCaughtUp(
  s: FollowerReplicaState,
  leaderEndOffset: bigint,
  nowMs: number,
  replicaLagTimeMaxMs: number,
): boolean {
  return s.logEndOffset === leaderEndOffset || nowMs - s.lastCaughtUpTimeMs <= replicaLagTimeMaxMs;
}
