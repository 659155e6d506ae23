/**
 * KIP-848's server-side assignors: the coordinator computes each member's target assignment
 * itself. `uniform` (Kafka's default UniformAssignor) balances every subscribed partition across
 * the members subscribed to its topic, keeping each member's previous target where that stays
 * balanced (sticky); `range` (Kafka's RangeAssignor) gives each member contiguous ranges of each
 * topic it subscribes to. Rack-aware placement is not done (Kafka's assignors only prefer racks
 * when members and partitions both name racks). Pure functions of their input.
 */

/** Topic id → partition numbers. Kafka's Assignment / MemberAssignment. */
export type Assignment = Map<string, Set<number>>;

export interface AssignmentMemberSpec {
  readonly memberId: string;
  /** Topic ids the member subscribes to (names and regex resolved). */
  readonly subscribedTopicIds: ReadonlySet<string>;
  /** The member's previous target assignment: what stickiness keeps. */
  readonly currentTarget: Assignment;
}

export interface AssignmentSpec {
  readonly members: readonly AssignmentMemberSpec[];
  /** Topic id → partition count, for every topic some member subscribes to. */
  readonly topicPartitions: ReadonlyMap<string, number>;
}

export interface ConsumerGroupAssignor {
  readonly name: string;
  assign(spec: AssignmentSpec): Map<string, Assignment>;
}

/** Kafka's class names are accepted in group.consumer.assignors too. */
export const ASSIGNOR_CLASS_NAMES: ReadonlyMap<string, string> = new Map([
  ['org.apache.kafka.coordinator.group.assignor.UniformAssignor', 'uniform'],
  ['org.apache.kafka.coordinator.group.assignor.RangeAssignor', 'range'],
]);

function add(a: Assignment, topicId: string, partition: number): void {
  let s = a.get(topicId);
  if (s === undefined) {
    s = new Set();
    a.set(topicId, s);
  }
  s.add(partition);
}

function sortedMembers(spec: AssignmentSpec): AssignmentMemberSpec[] {
  return [...spec.members].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));
}

/**
 * Balanced and sticky. Each member keeps the partitions of its previous target it may still
 * have; partitions nobody keeps go to the least-loaded eligible member, most constrained
 * partitions first; then partitions move from a member to an eligible one holding at least two
 * fewer until none can. With one subscription for all (Kafka's homogeneous case) every member
 * ends with ⌊P/M⌋ or ⌈P/M⌉ partitions, and a joining or leaving member moves only what it must.
 */
export const uniformAssignor: ConsumerGroupAssignor = {
  name: 'uniform',
  assign(spec) {
    const members = sortedMembers(spec);
    const owned = new Map<string, string[]>(); // memberId → "topicId:partition" keys it holds
    const owner = new Map<string, string>();
    for (const m of members) owned.set(m.memberId, []);
    const eligible = new Map<string, AssignmentMemberSpec[]>(); // topicId → subscribed members
    for (const m of members)
      for (const t of m.subscribedTopicIds) {
        if (!spec.topicPartitions.has(t)) continue;
        let list = eligible.get(t);
        if (list === undefined) {
          list = [];
          eligible.set(t, list);
        }
        list.push(m);
      }
    const take = (memberId: string, key: string) => {
      owned.get(memberId)!.push(key);
      owner.set(key, memberId);
    };
    // 1. Stickiness: what each member may still hold.
    for (const m of members)
      for (const [t, parts] of m.currentTarget) {
        const n = spec.topicPartitions.get(t);
        if (n === undefined || !m.subscribedTopicIds.has(t)) continue;
        for (const p of [...parts].sort((a, b) => a - b)) {
          const key = `${t}:${p}`;
          if (p < n && !owner.has(key)) take(m.memberId, key);
        }
      }
    // 2. Partitions nobody holds, those with the fewest candidates first.
    const unassigned: { key: string; candidates: AssignmentMemberSpec[] }[] = [];
    for (const [t, candidates] of [...eligible].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const n = spec.topicPartitions.get(t)!;
      for (let p = 0; p < n; p++) {
        const key = `${t}:${p}`;
        if (!owner.has(key)) unassigned.push({ key, candidates });
      }
    }
    unassigned.sort((a, b) => a.candidates.length - b.candidates.length);
    for (const { key, candidates } of unassigned) take(leastLoaded(candidates, owned).memberId, key);
    // 3. Balance: each move lowers the sum of squared loads, so the loop ends.
    let moved = true;
    while (moved) {
      moved = false;
      const byLoad = [...members].sort(
        (a, b) => owned.get(b.memberId)!.length - owned.get(a.memberId)!.length,
      );
      for (const from of byLoad) {
        const keys = owned.get(from.memberId)!;
        for (let i = keys.length - 1; i >= 0; i--) {
          const key = keys[i]!;
          const to = leastLoaded(eligible.get(key.slice(0, key.lastIndexOf(':')))!, owned);
          if (owned.get(to.memberId)!.length >= keys.length - 1) continue;
          keys.splice(i, 1);
          take(to.memberId, key);
          moved = true;
        }
        if (moved) break;
      }
    }
    const result = new Map<string, Assignment>();
    for (const m of members) {
      const a: Assignment = new Map();
      for (const key of owned.get(m.memberId)!) {
        const at = key.lastIndexOf(':');
        add(a, key.slice(0, at), Number(key.slice(at + 1)));
      }
      result.set(m.memberId, a);
    }
    return result;
  },
};

function leastLoaded(candidates: AssignmentMemberSpec[], owned: Map<string, string[]>): AssignmentMemberSpec {
  let best = candidates[0]!;
  for (const c of candidates) if (owned.get(c.memberId)!.length < owned.get(best.memberId)!.length) best = c;
  return best;
}

/**
 * Per topic, its subscribers in member id order each take a contiguous range: ⌊P/M⌋ partitions,
 * one more for the first P mod M of them.
 */
export const rangeAssignor: ConsumerGroupAssignor = {
  name: 'range',
  assign(spec) {
    const members = sortedMembers(spec);
    const result = new Map<string, Assignment>(members.map((m) => [m.memberId, new Map()]));
    for (const [t, n] of spec.topicPartitions) {
      const subscribers = members.filter((m) => m.subscribedTopicIds.has(t));
      if (subscribers.length === 0) continue;
      const quota = Math.floor(n / subscribers.length);
      const extra = n % subscribers.length;
      let next = 0;
      subscribers.forEach((m, i) => {
        const count = quota + (i < extra ? 1 : 0);
        for (let p = next; p < next + count; p++) add(result.get(m.memberId)!, t, p);
        next += count;
      });
    }
    return result;
  },
};

export const CONSUMER_GROUP_ASSIGNORS: ReadonlyMap<string, ConsumerGroupAssignor> = new Map(
  [uniformAssignor, rangeAssignor].map((a) => [a.name, a]),
);
