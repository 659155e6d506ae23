import type { IsrChangeCause, IsrChangeKind, IsrChangeRecord } from '../metadata/isr-history.js';
import type { PartitionRecord } from '../metadata/keys.js';
import type { BrokerView } from './partition-change.js';

/**
 * The durable history record of one partition-state change, as pure functions: its kind from
 * the states before and after, its cause and reason from who asked (a leader's AlterPartition
 * carries its own reason; the controller's reconcile names the brokers that went, shut down or
 * restarted). The controller writes the record in the same transaction as the new state.
 */

export interface ChangeCause {
  readonly cause: IsrChangeCause;
  readonly reason: string;
}

const list = (isr: readonly number[]): string => `[${isr.join(',')}]`;

function sameList(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export function changeKind(
  prev: PartitionRecord | undefined,
  next: PartitionRecord,
  unclean: boolean,
): IsrChangeKind {
  if (prev === undefined) return 'create';
  if (unclean) return 'unclean-election';
  if (next.leader < 0 && prev.leader >= 0) return 'offline';
  if (next.leader !== prev.leader || next.leaderEpoch !== prev.leaderEpoch) return 'election';
  if (
    !sameList(prev.replicas, next.replicas) ||
    !sameList(prev.addingReplicas, next.addingReplicas) ||
    !sameList(prev.removingReplicas, next.removingReplicas)
  )
    return 'reassignment';
  return prev.isr.some((r) => !next.isr.includes(r)) ? 'shrink' : 'expand';
}

export function changeRecord(
  prev: PartitionRecord | undefined,
  next: PartitionRecord,
  why: ChangeCause,
  unclean: boolean,
  timeMs: number,
): IsrChangeRecord {
  const oldLeader = prev?.leader ?? -1;
  return {
    timeMs,
    kind: changeKind(prev, next, unclean),
    cause: why.cause,
    reason: why.reason,
    broker: next.leader >= 0 ? next.leader : oldLeader,
    oldLeader,
    leader: next.leader,
    leaderEpoch: next.leaderEpoch,
    partitionEpoch: next.partitionEpoch,
    oldIsr: prev ? [...prev.isr] : [],
    newIsr: [...next.isr],
  };
}

/** The fields of the controller's partition-change log line (log.format=json). */
export function changeFields(
  topic: string,
  partition: number,
  prev: PartitionRecord,
  next: PartitionRecord,
  unclean: boolean,
  why: ChangeCause,
): Record<string, unknown> {
  return {
    event: 'partition-change',
    topic,
    partition,
    kind: changeKind(prev, next, unclean),
    cause: why.cause,
    oldLeader: prev.leader,
    leader: next.leader,
    leaderEpoch: next.leaderEpoch,
    partitionEpoch: next.partitionEpoch,
    oldIsr: prev.isr,
    newIsr: next.isr,
  };
}

/** Causes a leader may give for its own ISR proposal; anything else is replaced by the direction's. */
const LEADER_CAUSES: readonly IsrChangeCause[] = ['lag', 'fetch-timeout', 'caught-up'];

/** The cause of an AlterPartition change, from the leader's words when it gave valid ones. */
export function leaderCause(
  prev: PartitionRecord,
  next: PartitionRecord,
  cause: string | undefined,
  reason: string | undefined,
): ChangeCause {
  const shrink = prev.isr.some((r) => !next.isr.includes(r));
  const given = LEADER_CAUSES.find((c) => c === cause);
  const fallback: IsrChangeCause = shrink ? 'lag' : 'caught-up';
  const text =
    reason !== undefined && reason !== ''
      ? reason.slice(0, 500)
      : `ISR ${list(prev.isr)} -> ${list(next.isr)} proposed by leader ${prev.leader}`;
  return { cause: given ?? fallback, reason: text };
}

/**
 * Why the controller's reconcile changed a partition: the first broker that left the ISR or the
 * leadership, by what happened to it. `shutdownSeen` holds brokers seen in controlled shutdown
 * that have not come back since: a broker gone from the registrations after a controlled
 * shutdown stopped cleanly, one gone without it was fenced (its session expired).
 */
export function reconcileCause(
  prev: PartitionRecord,
  next: PartitionRecord,
  view: BrokerView,
  shutdownSeen: ReadonlySet<number>,
  unclean: boolean,
): ChangeCause {
  const leaderLost =
    prev.leader >= 0 && (next.leader !== prev.leader || next.leaderEpoch !== prev.leaderEpoch);
  const subjects = [...(leaderLost ? [prev.leader] : []), ...prev.isr.filter((r) => !next.isr.includes(r))];
  const what = (id: number): ChangeCause => {
    const b = view.brokers.get(id);
    if (b === undefined)
      return shutdownSeen.has(id)
        ? { cause: 'controlled-shutdown', reason: `broker ${id} stopped after a controlled shutdown` }
        : { cause: 'fencing', reason: `broker ${id} fenced: its registration is gone (session expired)` };
    if (b.inControlledShutdown)
      return { cause: 'controlled-shutdown', reason: `broker ${id} is in controlled shutdown` };
    // Still assigned and eligible: only a replica in a failed log dir loses its place (partitionView).
    if (next.replicas.includes(id) && (b.offlineReplicas?.size ?? 0) > 0)
      return {
        cause: 'log-dir-failure',
        reason: `broker ${id}'s replica is in a failed log dir (${(b.offlineLogDirs ?? []).join(', ')})`,
      };
    if (view.restarted.has(id))
      return { cause: 'broker-restart', reason: `broker ${id} restarted with a new broker epoch` };
    return { cause: 'reassignment', reason: `broker ${id} left the replicas` };
  };
  const first = subjects[0];
  const base = first === undefined ? null : what(first);
  const detail = (c: ChangeCause): string =>
    subjects.length > 1 ? `${c.reason} (also ${subjects.slice(1).join(',')})` : c.reason;
  if (unclean)
    return {
      cause: 'unclean-election',
      reason: `unclean leader election: broker ${next.leader} leads from outside the ISR ${list(prev.isr)}${base ? `; ${detail(base)}` : ''}`,
    };
  if (prev.leader < 0 && next.leader >= 0 && base === null)
    return {
      cause: 'leader-returned',
      reason: `broker ${next.leader} is back and leads from the ISR ${list(next.isr)}`,
    };
  if (base !== null) {
    const tail = next.leader < 0 ? '; no eligible ISR member: partition offline' : '';
    return { cause: base.cause, reason: `${detail(base)}${tail}` };
  }
  return { cause: 'reassignment', reason: `replicas ${list(prev.replicas)} -> ${list(next.replicas)}` };
}
