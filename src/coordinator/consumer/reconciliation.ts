/**
 * One member's way from its current assignment to its target (Kafka's CurrentAssignmentBuilder),
 * the heart of KIP-848's incremental rebalance: partitions leaving the member are revoked first
 * (the member stays at its epoch in UNREVOKED_PARTITIONS until its heartbeat no longer lists
 * them), and a partition is handed to its new owner only once no member holds it at any epoch
 * (UNRELEASED_PARTITIONS until then). Pure: it returns the next member, never mutates one.
 */
import type { Assignment } from './assignors.js';

export type MemberState = 'STABLE' | 'UNREVOKED_PARTITIONS' | 'UNRELEASED_PARTITIONS';

/** Kafka's MemberState values as written in ConsumerGroupCurrentMemberAssignmentValue.State. */
export const MEMBER_STATE_VALUE: Readonly<Record<MemberState, number>> = {
  STABLE: 0,
  UNREVOKED_PARTITIONS: 2,
  UNRELEASED_PARTITIONS: 1,
};

export interface ReconciledState {
  readonly state: MemberState;
  readonly memberEpoch: number;
  readonly previousMemberEpoch: number;
  readonly assignedPartitions: Assignment;
  readonly partitionsPendingRevocation: Assignment;
}

/** The partitions a heartbeat says the member owns; null when the request did not say. */
export type OwnedPartitions = readonly { topicId: string; partitions: readonly number[] }[] | null;

export interface ReconcileInput {
  readonly targetEpoch: number;
  readonly target: Assignment;
  /** The epoch of the member holding a partition (assigned or pending revocation), -1 when free. */
  readonly currentPartitionEpoch: (topicId: string, partition: number) => number;
  readonly owned: OwnedPartitions;
}

export function isReconciledTo(m: ReconciledState, epoch: number): boolean {
  return m.state === 'STABLE' && m.memberEpoch === epoch;
}

/** The member's next state; the same object when nothing changes. */
export function reconcile<M extends ReconciledState>(member: M, input: ReconcileInput): M {
  switch (member.state) {
    case 'STABLE':
      return member.memberEpoch === input.targetEpoch
        ? member
        : nextAssignment(member, member.memberEpoch, input);
    case 'UNREVOKED_PARTITIONS':
      // Still listing a partition it must give up: wait for the revocation.
      if (ownsAny(input.owned, member.partitionsPendingRevocation)) return member;
      return nextAssignment(member, member.memberEpoch + 1, input);
    case 'UNRELEASED_PARTITIONS':
      return nextAssignment(member, member.memberEpoch, input);
  }
}

function ownsAny(owned: OwnedPartitions, partitions: Assignment): boolean {
  if (owned === null) return true;
  for (const t of owned) {
    const pending = partitions.get(t.topicId);
    if (pending === undefined) continue;
    for (const p of t.partitions) if (pending.has(p)) return true;
  }
  return false;
}

function withEpoch<M extends ReconciledState>(
  member: M,
  epoch: number,
  next: Omit<ReconciledState, 'memberEpoch' | 'previousMemberEpoch'>,
): M {
  return {
    ...member,
    ...next,
    memberEpoch: epoch,
    // Kafka's updateMemberEpoch: the previous epoch moves only when the epoch does.
    previousMemberEpoch: epoch !== member.memberEpoch ? member.memberEpoch : member.previousMemberEpoch,
  };
}

function nextAssignment<M extends ReconciledState>(member: M, memberEpoch: number, input: ReconcileInput): M {
  let unreleased = false;
  const assigned: Assignment = new Map();
  const revoking: Assignment = new Map();
  const pendingAssignment: Assignment = new Map();
  const topics = new Set([...input.target.keys(), ...member.assignedPartitions.keys()]);
  for (const t of topics) {
    const target = input.target.get(t) ?? new Set<number>();
    const current = member.assignedPartitions.get(t) ?? new Set<number>();
    const keep = new Set([...current].filter((p) => target.has(p)));
    const revoke = new Set([...current].filter((p) => !keep.has(p)));
    const gain = new Set<number>();
    for (const p of target) {
      if (keep.has(p)) continue;
      // Another member still holds it: not before it is released.
      if (input.currentPartitionEpoch(t, p) !== -1) unreleased = true;
      else gain.add(p);
    }
    if (keep.size > 0) assigned.set(t, keep);
    if (revoke.size > 0) revoking.set(t, revoke);
    if (gain.size > 0) pendingAssignment.set(t, gain);
  }
  if (revoking.size > 0 && ownsAny(input.owned, revoking)) {
    return withEpoch(member, memberEpoch, {
      state: 'UNREVOKED_PARTITIONS',
      assignedPartitions: assigned,
      partitionsPendingRevocation: revoking,
    });
  }
  for (const [t, parts] of pendingAssignment) {
    const s = assigned.get(t) ?? new Set<number>();
    for (const p of parts) s.add(p);
    assigned.set(t, s);
  }
  return withEpoch(member, input.targetEpoch, {
    state: unreleased ? 'UNRELEASED_PARTITIONS' : 'STABLE',
    assignedPartitions: assigned,
    partitionsPendingRevocation: new Map(),
  });
}
