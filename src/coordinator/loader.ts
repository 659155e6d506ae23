/**
 * Rebuilds the groups of one __consumer_offsets partition from its records, oldest first, as
 * Kafka's GroupMetadataManager.doLoadGroupsAndOffsets does: the last value of each key wins,
 * tombstones delete, and a group with offsets but no (or a deleted) metadata record comes back
 * as an Empty group that only stores offsets. Offsets in a transactional batch wait per producer
 * until that producer's marker: COMMIT applies those not older than the partition's committed
 * offset, ABORT drops them; those still waiting at the end are the group's open transactions.
 * Pure: the coordinator starts timers afterwards.
 */
import {
  type ConsumerGroupReplay,
  consumerGroupFromReplay,
  replayConsumerGroupRecord,
} from './consumer/loader.js';
import { ClassicGroup, MemberMetadata, offsetKey, type PendingTxnOffset } from './group.js';
import { decodeCoordinatorRecord, type GroupMetadataValue, type OffsetAndMetadata } from './records.js';

export interface ReplayRecord {
  key: Buffer | null;
  value: Buffer | null;
  /**
   * The base offset of the record's batch, which orders commits of one partition (Kafka's
   * appendedBatchOffset); the record's index in the replay when absent.
   */
  batchOffset?: bigint;
  /** The batch's producer id (-1 or absent: none). */
  producerId?: bigint;
  /** A record of a transactional batch: an offset commit of an open transaction. */
  transactional?: boolean;
  /** A COMMIT/ABORT marker of `producerId`'s transaction (key and value are null). */
  marker?: 'COMMIT' | 'ABORT';
}

export interface ReplayResult {
  groups: ClassicGroup[];
  /** Records that could not be decoded (skipped, each reported once). */
  skipped: { index: number; reason: string }[];
}

interface Committed {
  value: OffsetAndMetadata;
  appendedOffset: bigint;
}

interface TxnCommitted extends Committed {
  group: string;
  topic: string;
  partition: number;
}

interface Pending {
  offsets: Map<string, Map<number, Committed>>;
  metadata: GroupMetadataValue | null;
  /** The group's consumer-protocol records; null while it is (or became again) a classic group. */
  consumer: ConsumerGroupReplay | null;
}

export async function replayPartition(
  partition: number,
  records: Iterable<ReplayRecord> | AsyncIterable<ReplayRecord>,
  nowMs: number,
): Promise<ReplayResult> {
  const pending = new Map<string, Pending>();
  /** Open transactions: producer id → "group\0topic\0partition" → offset. */
  const openTxns = new Map<bigint, Map<string, TxnCommitted>>();
  const skipped: { index: number; reason: string }[] = [];
  const entry = (group: string): Pending => {
    let p = pending.get(group);
    if (p === undefined) {
      p = { offsets: new Map(), metadata: null, consumer: null };
      pending.set(group, p);
    }
    return p;
  };
  const commit = (group: string, topic: string, i: number, c: Committed) => {
    const offsets = entry(group).offsets;
    let parts = offsets.get(topic);
    if (parts === undefined) {
      parts = new Map();
      offsets.set(topic, parts);
    }
    const current = parts.get(i);
    if (current === undefined || current.appendedOffset < c.appendedOffset) parts.set(i, c);
  };
  let index = 0;
  for await (const record of records) {
    const at = index++;
    const batchOffset = record.batchOffset ?? BigInt(at);
    const producerId = record.producerId ?? -1n;
    if (record.marker !== undefined) {
      const txn = openTxns.get(producerId);
      openTxns.delete(producerId);
      if (record.marker === 'COMMIT' && txn !== undefined) {
        for (const t of txn.values()) commit(t.group, t.topic, t.partition, t);
      }
      continue;
    }
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
    if (decoded.type === 'offset' && record.transactional === true) {
      let txn = openTxns.get(producerId);
      if (txn === undefined) {
        txn = new Map();
        openTxns.set(producerId, txn);
      }
      const key = `${decoded.group}\u0000${offsetKey(decoded.topic, decoded.partition)}`;
      if (decoded.value === null) txn.delete(key);
      else
        txn.set(key, {
          group: decoded.group,
          topic: decoded.topic,
          partition: decoded.partition,
          value: decoded.value,
          appendedOffset: batchOffset,
        });
    } else if (decoded.type === 'offset') {
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
        parts.set(decoded.partition, { value: decoded.value, appendedOffset: batchOffset });
      }
    } else if (decoded.type === 'group') {
      const p = entry(decoded.group);
      p.metadata = decoded.value;
      // A classic group written after a consumer group of the same id replaced it.
      if (decoded.value !== null) p.consumer = null;
    } else {
      try {
        replayConsumerGroupRecord(decoded.keyVersion, record.key, record.value, (groupId) => entry(groupId));
      } catch (err) {
        skipped.push({ index: at, reason: (err as Error).message });
      }
    }
  }
  // Transactions still open: their offsets wait in their groups for the marker.
  const openByGroup = openTransactionsByGroup(openTxns);
  for (const g of openByGroup.keys()) entry(g);
  const groups: ClassicGroup[] = [];
  for (const [groupId, p] of pending) {
    const open = openByGroup.get(groupId);
    const consumer = p.consumer === null ? null : consumerGroupFromReplay(groupId, p.consumer);
    if (p.metadata === null && consumer === null && p.offsets.size === 0 && open === undefined) continue;
    const group =
      p.metadata === null
        ? new ClassicGroup(groupId, partition, 'Empty', nowMs)
        : fromMetadata(groupId, partition, p.metadata, nowMs);
    group.consumer = consumer;
    for (const [topic, parts] of p.offsets)
      for (const [i, c] of parts) group.setOffset(topic, i, c.value, c.appendedOffset);
    if (open !== undefined) for (const [producerId, o] of open) group.pendingTxnOffsets.set(producerId, o);
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

/** The offsets of transactions still open, by group and producer. */
function openTransactionsByGroup(
  openTxns: Map<bigint, Map<string, TxnCommitted>>,
): Map<string, Map<bigint, Map<string, PendingTxnOffset>>> {
  const openByGroup = new Map<string, Map<bigint, Map<string, PendingTxnOffset>>>();
  for (const [producerId, txn] of openTxns) {
    for (const t of txn.values()) {
      let byProducer = openByGroup.get(t.group);
      if (byProducer === undefined) {
        byProducer = new Map();
        openByGroup.set(t.group, byProducer);
      }
      let offsets = byProducer.get(producerId);
      if (offsets === undefined) {
        offsets = new Map();
        byProducer.set(producerId, offsets);
      }
      offsets.set(offsetKey(t.topic, t.partition), {
        topic: t.topic,
        partition: t.partition,
        value: t.value,
        appendedOffset: t.appendedOffset,
      });
    }
  }
  return openByGroup;
}
