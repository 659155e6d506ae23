/**
 * Kafka's DelayedProduce: leader appends waiting for acks=all. Each is done once its leader's
 * checkEnoughReplicasReachOffset says so (the HW reached the append — with
 * NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR then fell below min.insync.replicas — or leadership
 * went: NOT_LEADER_OR_FOLLOWER); the wait ends when all are done, at the timeout (those still
 * waiting answer REQUEST_TIMED_OUT), or when the caller aborts (its client went away). The waits
 * are tried in the ReplicationManager's purgatory whenever one of their partitions changes.
 */
import { ErrorCode } from '../protocol/generated/errors.js';
import type { PartitionLeaderState } from './leader-state.js';
import { awaitCondition, type Purgatory, type TimerScheduler } from './purgatory.js';

/** One append's acks=all condition: its partition's key, the leader it went to, the HW it needs. */
export interface PendingAcks {
  readonly key: string;
  readonly leader: PartitionLeaderState;
  /** The append's last offset + 1: the HW that acknowledges it. */
  readonly requiredOffset: bigint;
}

/** Waits for every append's acks=all outcome; resolves with their error codes (0 acknowledged), in order. */
export async function awaitAcks(
  purgatory: Purgatory,
  scheduler: TimerScheduler,
  pending: readonly PendingAcks[],
  timeoutMs: number,
  onAbort?: (abort: () => void) => () => void,
): Promise<number[]> {
  const done = (p: PendingAcks): boolean => p.leader.checkEnoughReplicasReachOffset(p.requiredOffset).done;
  if (!pending.every(done)) {
    const keys = [...new Set(pending.map((p) => p.key))];
    await awaitCondition(purgatory, scheduler, keys, timeoutMs, () => pending.every(done), onAbort);
  }
  return pending.map((p) => {
    const r = p.leader.checkEnoughReplicasReachOffset(p.requiredOffset);
    return r.done ? r.errorCode : ErrorCode.REQUEST_TIMED_OUT;
  });
}
