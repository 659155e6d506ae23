import { topicPartitionKey } from '../common/topic-partition.js';
import type { BrokerInfo } from '../metadata/cluster-metadata.js';
import type { AlterPartitionItem } from '../metadata/controller-requests.js';
import type { PartitionRecord } from '../metadata/keys.js';
import { ErrorCode } from '../protocol/generated/errors.js';

/**
 * Decisions about one partition's state, as pure functions: what the controller writes when
 * brokers come and go (leader election from the ISR in assignment order, unclean election, the
 * last ISR member kept) and whether an AlterPartition proposal is valid (KAFKA-REFERENCE §1).
 * Every change bumps partitionEpoch; only a change of leader (or of the leader's incarnation)
 * bumps leaderEpoch.
 */

export interface BrokerView {
  /** Registered, unfenced brokers. */
  readonly brokers: ReadonlyMap<number, BrokerInfo>;
  /** Brokers whose registration changed incarnation since the controller last acted on them. */
  readonly restarted: ReadonlySet<number>;
}

export interface ElectionOutcome {
  readonly next: PartitionRecord;
  readonly unclean: boolean;
}

/**
 * `view` as one partition sees it: a broker whose replica of it is in a failed log dir is left out,
 * as Kafka's controller treats a replica in an offline directory as an offline replica (no
 * leadership, out of the ISR) while the broker serves its other dirs.
 */
export function partitionView(view: BrokerView, key: string): BrokerView {
  let brokers: Map<number, BrokerInfo> | null = null;
  for (const [id, b] of view.brokers) {
    if (b.offlineReplicas?.has(key) !== true) continue;
    brokers ??= new Map(view.brokers);
    brokers.delete(id);
  }
  return brokers === null ? view : { ...view, brokers };
}

function isLive(view: BrokerView, id: number): boolean {
  return view.brokers.has(id);
}

/** May lead or stay in the ISR: registered and not shutting down. */
function isEligible(view: BrokerView, id: number): boolean {
  const b = view.brokers.get(id);
  return b !== undefined && !b.inControlledShutdown;
}

/**
 * The state `rec` should move to given the live brokers, or null if it is right as it is.
 * ISR: drop members that are gone, shutting down or restarted — but never to empty: the last
 * member stays (as Kafka does without ELR), so the broker with all the data leads again when back.
 */
export function reconcilePartition(
  rec: PartitionRecord,
  brokers: BrokerView,
  uncleanEnabled: boolean,
  /** The partition: its replicas in failed log dirs count as offline (absent: not checked). */
  at?: { readonly topic: string; readonly partition: number },
): ElectionOutcome | null {
  const view = at === undefined ? brokers : partitionView(brokers, topicPartitionKey(at.topic, at.partition));
  const stays = (id: number): boolean => isEligible(view, id) && !view.restarted.has(id);
  let isr = rec.isr.filter(stays);
  if (isr.length === 0 && rec.isr.length > 0) {
    isr = [rec.isr.includes(rec.leader) ? rec.leader : rec.isr[rec.isr.length - 1]!];
  }
  let leader: number;
  let unclean = false;
  const leaderIncarnationChanged = rec.leader >= 0 && view.restarted.has(rec.leader);
  if (rec.leader >= 0 && stays(rec.leader) && isr.includes(rec.leader)) {
    leader = rec.leader;
  } else {
    const clean = rec.replicas.find((r) => isr.includes(r) && isEligible(view, r));
    if (clean !== undefined) leader = clean;
    else if (rec.leader >= 0 && isr.length === 1 && isr[0] === rec.leader && isLive(view, rec.leader)) {
      // The sole ISR member is shutting down: it keeps leading until it is really gone.
      leader = rec.leader;
    } else if (uncleanEnabled) {
      const any = rec.replicas.find((r) => isEligible(view, r));
      if (any !== undefined) {
        leader = any;
        isr = [any];
        unclean = true;
      } else leader = -1;
    } else leader = -1;
  }
  const leaderChanged = leader !== rec.leader || (leaderIncarnationChanged && leader >= 0);
  if (!leaderChanged && sameList(isr, rec.isr)) return null;
  return {
    next: {
      ...rec,
      leader,
      isr,
      leaderEpoch: leaderChanged ? rec.leaderEpoch + 1 : rec.leaderEpoch,
      partitionEpoch: rec.partitionEpoch + 1,
    },
    unclean,
  };
}

/** Leader and ISR of a new partition: every eligible replica in sync, the first one leading. */
export function initialPartition(replicas: readonly number[], view: BrokerView): PartitionRecord {
  const isr = replicas.filter((r) => isEligible(view, r));
  return {
    leader: isr[0] ?? -1,
    leaderEpoch: 0,
    partitionEpoch: 0,
    replicas: [...replicas],
    isr: isr.length > 0 ? isr : [...replicas],
    addingReplicas: [],
    removingReplicas: [],
  };
}

export type AlterPartitionDecision =
  | { readonly errorCode: 0; readonly next: PartitionRecord | null }
  | { readonly errorCode: number; readonly next?: undefined };

/**
 * Validates a leader's ISR proposal against the committed state, in Kafka's order: unknown
 * partition (3), stale leader epoch (74), sender not the leader (42), stale partition epoch (95),
 * ISR not within the replicas or without the leader (42), a fenced, shutting-down or unknown
 * replica in the new ISR (107). `next` is null when the proposal changes nothing.
 */
export function validateAlterPartition(
  rec: PartitionRecord | undefined,
  senderId: number,
  item: AlterPartitionItem,
  view: BrokerView,
): AlterPartitionDecision {
  if (rec === undefined) return { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION };
  if (item.leaderEpoch !== rec.leaderEpoch) return { errorCode: ErrorCode.FENCED_LEADER_EPOCH };
  if (senderId !== rec.leader) return { errorCode: ErrorCode.INVALID_REQUEST };
  if (item.partitionEpoch !== rec.partitionEpoch) return { errorCode: ErrorCode.INVALID_UPDATE_VERSION };
  const newIsr = item.newIsr;
  if (
    newIsr.length === 0 ||
    new Set(newIsr).size !== newIsr.length ||
    !newIsr.includes(rec.leader) ||
    newIsr.some((r) => !rec.replicas.includes(r))
  ) {
    return { errorCode: ErrorCode.INVALID_REQUEST };
  }
  if (newIsr.some((r) => !isEligible(view, r) || view.restarted.has(r))) {
    return { errorCode: ErrorCode.INELIGIBLE_REPLICA };
  }
  const epochs = item.newIsrEpochs;
  if (epochs !== undefined) {
    const stale = newIsr.some((r, i) => {
      const seen = epochs[i];
      return seen !== undefined && seen !== '-1' && BigInt(seen) !== view.brokers.get(r)!.epoch;
    });
    if (stale) return { errorCode: ErrorCode.INELIGIBLE_REPLICA };
  }
  // The ISR is kept in assignment order so that every broker sees the same list.
  const ordered = rec.replicas.filter((r) => newIsr.includes(r));
  if (sameList(ordered, rec.isr)) return { errorCode: 0, next: null };
  return { errorCode: 0, next: { ...rec, isr: ordered, partitionEpoch: rec.partitionEpoch + 1 } };
}

function sameList(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export type ElectionType = 'preferred' | 'unclean';

/**
 * ElectLeaders for one partition. Preferred: the first replica in assignment order leads, if it is
 * in the ISR and eligible (else PREFERRED_LEADER_NOT_AVAILABLE 80); ELECTION_NOT_NEEDED (84) if it
 * already leads. Unclean: only for a leaderless partition, the first eligible replica, ISR just it
 * (ELIGIBLE_LEADERS_NOT_AVAILABLE 83 if none).
 */
export function electLeader(
  rec: PartitionRecord,
  view: BrokerView,
  type: ElectionType,
): AlterPartitionDecision {
  if (type === 'preferred') {
    const preferred = rec.replicas[0];
    if (preferred === undefined) return { errorCode: ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE };
    if (rec.leader === preferred) return { errorCode: ErrorCode.ELECTION_NOT_NEEDED };
    if (!rec.isr.includes(preferred) || !isEligible(view, preferred) || view.restarted.has(preferred)) {
      return { errorCode: ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE };
    }
    return {
      errorCode: 0,
      next: {
        ...rec,
        leader: preferred,
        leaderEpoch: rec.leaderEpoch + 1,
        partitionEpoch: rec.partitionEpoch + 1,
      },
    };
  }
  if (rec.leader >= 0) return { errorCode: ErrorCode.ELECTION_NOT_NEEDED };
  const any = rec.replicas.find((r) => isEligible(view, r));
  if (any === undefined) return { errorCode: ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE };
  return {
    errorCode: 0,
    next: {
      ...rec,
      leader: any,
      isr: [any],
      leaderEpoch: rec.leaderEpoch + 1,
      partitionEpoch: rec.partitionEpoch + 1,
    },
  };
}

/**
 * Partitions whose preferred leader should take leadership back, by Kafka's rule: for each broker,
 * if more than `percentage`% of the partitions it is preferred for are led by someone else (and it
 * could lead them), all of those move back.
 */
export function imbalancedPartitions(
  partitions: Iterable<{ readonly topic: string; readonly partition: number; readonly rec: PartitionRecord }>,
  view: BrokerView,
  percentage: number,
): { topic: string; partition: number }[] {
  const preferredCount = new Map<number, number>();
  const movable = new Map<number, { topic: string; partition: number }[]>();
  for (const { topic, partition, rec } of partitions) {
    const preferred = rec.replicas[0];
    if (preferred === undefined) continue;
    preferredCount.set(preferred, (preferredCount.get(preferred) ?? 0) + 1);
    if (
      rec.leader !== preferred &&
      electLeader(rec, partitionView(view, topicPartitionKey(topic, partition)), 'preferred').errorCode === 0
    ) {
      movable.set(preferred, [...(movable.get(preferred) ?? []), { topic, partition }]);
    }
  }
  const out: { topic: string; partition: number }[] = [];
  for (const [broker, list] of movable) {
    if ((list.length * 100) / preferredCount.get(broker)! > percentage) out.push(...list);
  }
  return out;
}

/**
 * AlterPartitionReassignments for one partition: starts a move toward `target` (the replica list
 * becomes target + the replicas being removed, with adding/removing recorded), or cancels the
 * move in progress (`target` null; NO_REASSIGNMENT_IN_PROGRESS 85 if there is none). A move whose
 * new replicas are all in the ISR completes at once.
 */
export function reassign(
  rec: PartitionRecord,
  target: readonly number[] | null,
  view: BrokerView,
): AlterPartitionDecision {
  const inProgress = rec.addingReplicas.length > 0 || rec.removingReplicas.length > 0;
  const original = rec.replicas.filter((r) => !rec.addingReplicas.includes(r));
  if (target === null) {
    if (!inProgress) return { errorCode: ErrorCode.NO_REASSIGNMENT_IN_PROGRESS };
    const reverted = finishMove(rec, original, view);
    // No original replica is in sync any more: going back would leave the partition without data.
    return reverted === null
      ? { errorCode: ErrorCode.INVALID_REPLICA_ASSIGNMENT }
      : { errorCode: 0, next: reverted };
  }
  if (
    target.length === 0 ||
    new Set(target).size !== target.length ||
    target.some((r) => !view.brokers.has(r))
  ) {
    return { errorCode: ErrorCode.INVALID_REPLICA_ASSIGNMENT };
  }
  const adding = target.filter((r) => !original.includes(r));
  const removing = original.filter((r) => !target.includes(r));
  if (adding.length === 0) {
    if (!inProgress && sameList(target, rec.replicas)) return { errorCode: 0, next: null };
    const shrunk = finishMove(rec, target, view);
    return shrunk === null
      ? { errorCode: ErrorCode.INVALID_REPLICA_ASSIGNMENT }
      : { errorCode: 0, next: shrunk };
  }
  return {
    errorCode: 0,
    next: {
      ...rec,
      replicas: [...target, ...removing],
      addingReplicas: adding,
      removingReplicas: removing,
      partitionEpoch: rec.partitionEpoch + 1,
    },
  };
}

/** Completes a reassignment once every adding replica has joined the ISR; null if not (yet). */
export function completeReassignment(rec: PartitionRecord, view: BrokerView): PartitionRecord | null {
  if (rec.addingReplicas.length === 0 && rec.removingReplicas.length === 0) return null;
  if (!rec.addingReplicas.every((r) => rec.isr.includes(r))) return null;
  const target = rec.replicas.filter((r) => !rec.removingReplicas.includes(r));
  return finishMove(rec, target, view);
}

/**
 * Replicas become `target`; the ISR keeps its members within it; a leader outside it is replaced.
 * Null when no ISR member is in `target` (the ISR would be empty).
 */
function finishMove(
  rec: PartitionRecord,
  target: readonly number[],
  view: BrokerView,
): PartitionRecord | null {
  const isr = rec.isr.filter((r) => target.includes(r));
  if (isr.length === 0) return null;
  let leader = rec.leader;
  if (!target.includes(leader) || !isr.includes(leader)) {
    leader = target.find((r) => isr.includes(r) && isEligible(view, r)) ?? -1;
  }
  return {
    ...rec,
    replicas: [...target],
    isr,
    leader,
    leaderEpoch: leader !== rec.leader ? rec.leaderEpoch + 1 : rec.leaderEpoch,
    addingReplicas: [],
    removingReplicas: [],
    partitionEpoch: rec.partitionEpoch + 1,
  };
}

/**
 * Two changes decided in one step (an ISR change that completes a reassignment) commit as one:
 * partitionEpoch + 1 over `base`, and leaderEpoch + 1 if either step changed the leader.
 */
export function asOneChange(base: PartitionRecord, final: PartitionRecord): PartitionRecord {
  const leaderChanged = final.leader !== base.leader || final.leaderEpoch > base.leaderEpoch;
  return {
    ...final,
    leaderEpoch: leaderChanged ? base.leaderEpoch + 1 : base.leaderEpoch,
    partitionEpoch: base.partitionEpoch + 1,
  };
}
