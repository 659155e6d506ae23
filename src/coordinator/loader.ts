/**
 * Rebuilds the groups of one __consumer_offsets partition from its records, oldest first, as
 * Kafka's GroupMetadataManager.doLoadGroupsAndOffsets does: the last value of each key wins,
 * tombstones delete, and a group with offsets but no (or a deleted) metadata record comes back
 * as an Empty group that only stores offsets. Pure: the coordinator starts timers afterwards.
 */
import { ClassicGroup, MemberMetadata } from './group.js';
import { decodeCoordinatorRecord, type GroupMetadataValue, type OffsetAndMetadata } from './records.js';

export interface ReplayRecord {
  key: Buffer | null;
  value: Buffer | null;
}

export interface ReplayResult {
  groups: ClassicGroup[];
  /** Records that could not be decoded (skipped, each reported once). */
  skipped: { index: number; reason: string }[];
}

interface Pending {
  offsets: Map<string, Map<number, OffsetAndMetadata>>;
  metadata: GroupMetadataValue | null;
}

export async function replayPartition(
  partition: number,
  records: Iterable<ReplayRecord> | AsyncIterable<ReplayRecord>,
  nowMs: number,
): Promise<ReplayResult> {
  const pending = new Map<string, Pending>();
  const skipped: { index: number; reason: string }[] = [];
  const entry = (group: string): Pending => {
    let p = pending.get(group);
    if (p === undefined) {
      p = { offsets: new Map(), metadata: null };
      pending.set(group, p);
    }
    return p;
  };
  let index = 0;
  for await (const record of records) {
    const at = index++;
    // Keyless records cannot be coordinator records (Kafka refuses to load them too).
    if (record.key === null) {
      skipped.push({ index: at, reason: 'record without a key' });
      continue;
    }
    let decoded: ReturnType<typeof decodeCoordinatorRecord>;
    try {
      decoded = decodeCoordinatorRecord(record.key, record.value);
    } catch (err) {
      skipped.push({ index: at, reason: (err as Error).message });
      continue;
    }
    if (decoded.type === 'offset') {
      const p = entry(decoded.group);
      let parts = p.offsets.get(decoded.topic);
      if (decoded.value === null) {
        parts?.delete(decoded.partition);
        if (parts?.size === 0) p.offsets.delete(decoded.topic);
      } else {
        if (parts === undefined) {
          parts = new Map();
          p.offsets.set(decoded.topic, parts);
        }
        parts.set(decoded.partition, decoded.value);
      }
    } else if (decoded.type === 'group') {
      entry(decoded.group).metadata = decoded.value;
    }
  }
  const groups: ClassicGroup[] = [];
  for (const [groupId, p] of pending) {
    if (p.metadata === null && p.offsets.size === 0) continue;
    const group =
      p.metadata === null
        ? new ClassicGroup(groupId, partition, 'Empty', nowMs)
        : fromMetadata(groupId, partition, p.metadata, nowMs);
    for (const [topic, parts] of p.offsets) for (const [i, o] of parts) group.setOffset(topic, i, o);
    groups.push(group);
  }
  return { groups, skipped };
}

/** A group as its last metadata record left it: Stable with its members and assignments, or Empty. */
function fromMetadata(
  groupId: string,
  partition: number,
  v: GroupMetadataValue,
  nowMs: number,
): ClassicGroup {
  const hasMembers = v.members.length > 0 && v.protocol !== null;
  const group = new ClassicGroup(groupId, partition, hasMembers ? 'Stable' : 'Empty', nowMs);
  group.generationId = v.generation;
  group.protocolType = v.protocolType === '' ? null : v.protocolType;
  group.protocolName = hasMembers ? v.protocol : null;
  if (v.currentStateTimestamp >= 0n) group.currentStateTimestampMs = Number(v.currentStateTimestamp);
  if (!hasMembers) return group;
  for (const m of v.members) {
    const member = new MemberMetadata(
      m.memberId,
      m.groupInstanceId,
      m.clientId,
      m.clientHost,
      // v0 records have no rebalance timeout; Kafka uses the session timeout then.
      m.rebalanceTimeout >= 0 ? m.rebalanceTimeout : m.sessionTimeout,
      m.sessionTimeout,
      v.protocolType,
      [{ name: v.protocol!, metadata: Buffer.from(m.subscription) }],
    );
    member.assignment = Buffer.from(m.assignment);
    group.add(member, null);
  }
  group.leaderId = v.leader !== null && group.has(v.leader) ? v.leader : group.leaderId;
  group.subscribedTopics = group.computeSubscribedTopics();
  return group;
}
