/**
 * Replica assignment for new topics and partitions, after Kafka's rack-unaware and rack-aware
 * placement: leaders spread round-robin from a random start, followers shifted so that replicas of
 * consecutive partitions land on different brokers, and with racks every partition touches as
 * many racks as it can before a rack is used twice. Pure; randomness is injected.
 */

export interface AssignableBroker {
  readonly id: number;
  readonly rack: string | null;
}

/** Returns an integer in [0, n). */
export type RandomInt = (n: number) => number;

export function assignReplicas(
  brokers: readonly AssignableBroker[],
  numPartitions: number,
  replicationFactor: number,
  random: RandomInt,
  firstPartition = 0,
): number[][] {
  if (replicationFactor < 1 || replicationFactor > brokers.length) {
    throw new RangeError(`replication factor ${replicationFactor} with ${brokers.length} brokers`);
  }
  const sorted = [...brokers].sort((a, b) => a.id - b.id);
  const racked = sorted.some((b) => b.rack !== null);
  return racked
    ? rackAware(sorted, numPartitions, replicationFactor, random, firstPartition)
    : rackUnaware(
        sorted.map((b) => b.id),
        numPartitions,
        replicationFactor,
        random,
        firstPartition,
      );
}

function rackUnaware(
  ids: number[],
  partitions: number,
  rf: number,
  random: RandomInt,
  first: number,
): number[][] {
  const n = ids.length;
  const start = random(n);
  let shift = random(n);
  const out: number[][] = [];
  for (let p = first; p < first + partitions; p++) {
    // After a full round of leaders, move followers one step so the pairs differ.
    if (p > 0 && p % n === 0) shift++;
    const leaderIndex = (p + start) % n;
    const replicas = [ids[leaderIndex]!];
    for (let j = 0; j < rf - 1; j++) replicas.push(ids[followerIndex(leaderIndex, shift, j, n)]!);
    out.push(replicas);
  }
  return out;
}

function followerIndex(leaderIndex: number, shift: number, j: number, n: number): number {
  const step = 1 + ((shift + j) % (n - 1));
  return (leaderIndex + step) % n;
}

/** Brokers interleaved by rack: a1, b1, c1, a2, b2, ... so neighbours are on different racks. */
function rackAlternated(brokers: readonly AssignableBroker[]): AssignableBroker[] {
  const byRack = new Map<string, AssignableBroker[]>();
  for (const b of brokers) {
    const rack = b.rack ?? '';
    byRack.set(rack, [...(byRack.get(rack) ?? []), b]);
  }
  const racks = [...byRack.keys()].sort();
  const out: AssignableBroker[] = [];
  for (let i = 0; out.length < brokers.length; i++) {
    for (const r of racks) {
      const b = byRack.get(r)![i];
      if (b !== undefined) out.push(b);
    }
  }
  return out;
}

function rackAware(
  brokers: readonly AssignableBroker[],
  partitions: number,
  rf: number,
  random: RandomInt,
  first: number,
): number[][] {
  const list = rackAlternated(brokers);
  const n = list.length;
  const rackCount = new Set(list.map((b) => b.rack ?? '')).size;
  const start = random(n);
  let shift = random(n);
  const out: number[][] = [];
  for (let p = first; p < first + partitions; p++) {
    if (p > 0 && p % n === 0) shift++;
    const leaderIndex = (p + start) % n;
    const leader = list[leaderIndex]!;
    const replicas = [leader.id];
    const racksUsed = new Set([leader.rack ?? '']);
    // Walk the followers in shifted order; take a broker only if its rack is new, until every rack
    // has one replica; then take brokers in order regardless of rack.
    for (let k = 0; replicas.length < rf && k < 2 * n; k++) {
      const candidate = list[(leaderIndex + 1 + ((shift + k) % (n - 1 || 1))) % n]!;
      if (replicas.includes(candidate.id)) continue;
      const newRack = !racksUsed.has(candidate.rack ?? '');
      if (newRack || racksUsed.size >= rackCount) {
        replicas.push(candidate.id);
        racksUsed.add(candidate.rack ?? '');
      }
    }
    // Defensive fill (only reachable with odd shifts): any broker not yet used.
    for (const b of list) if (replicas.length < rf && !replicas.includes(b.id)) replicas.push(b.id);
    out.push(replicas);
  }
  return out;
}
