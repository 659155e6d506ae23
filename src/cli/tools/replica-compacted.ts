/**
 * replica-verification on a compacted topic. Each replica compacts its own log (as in Kafka), so
 * below their cleaners' progress replicas legitimately hold different record sets and different
 * batch bytes (records removed, a delete horizon set at each replica's own first cleaning). What
 * is compared, over windows every replica has read up to its HW:
 * - a batch whose offsets are alike on every replica and whose bytes agree: equal;
 * - a batch no replica's cleaner has rewritten (all its records there, no delete horizon) on
 *   every replica: byte for byte, as for any topic — above the cleaned range nothing changes;
 * - otherwise record by record: the fields the cleaner keeps (base and last offset, producer id
 *   and epoch, base sequence, partition leader epoch, control and transactional flags) must agree
 *   among the replicas holding the batch; a record at the same offset on two replicas must be
 *   identical (key, value, headers, timestamp); a record one replica holds and another does not
 *   is compaction when it is a tombstone or a control record (gone after delete.retention.ms), or
 *   when that other replica holds a later record of the same key — checked as the walk goes on,
 *   and a divergence if the walk ends without one.
 * Pure: called by replica-verification.ts with each round's reads.
 */
import type { BatchHeader } from '../../protocol/records/batch.js';
import { hasDeleteHorizon, isControl, isTransactional, timestampType } from '../../protocol/records/batch.js';
import { decodeRecords } from '../../protocol/records/codec.js';
import { type KafkaRecord, recordTimestamp } from '../../protocol/records/record.js';
import type { BatchInfo, Divergence, PartitionState, ReplicaRead } from './replica-verification.js';

/** What one line of the start says a compacted topic's replicas are compared by. */
export const COMPACTED_COMPARISON =
  'batches alike on every replica compare byte for byte; where a replica has compacted a batch, record by record: a record at the same offset must be identical on every replica, and a record one replica lacks must be a tombstone or a control record, or have a later record of its key on that replica';

/** Per replica: keys it lacks a record of (the highest such offset, and a replica holding it). */
export type MissingRecords = Map<number, Map<string, { offset: bigint; holder: number; key: string }>>;

interface Rec {
  readonly offset: bigint;
  readonly record: KafkaRecord;
  readonly timestamp: bigint;
  readonly control: boolean;
}

/** A batch the cleaner has not touched: every offset of its range holds a record, no delete horizon. */
function whole(b: BatchInfo): boolean {
  return !hasDeleteHorizon(b.header.attributes) && b.header.recordsCount === b.header.lastOffsetDelta + 1;
}

function recordsOf(b: BatchInfo): Rec[] {
  const { header, records } = decodeRecords(b.bytes, { decompress: true });
  const control = isControl(header.attributes);
  return records.map((record) => ({
    offset: header.baseOffset + BigInt(record.offsetDelta),
    record,
    timestamp: recordTimestamp(header, record),
    control,
  }));
}

const keyId = (r: KafkaRecord): string => (r.key === null ? '' : r.key.toString('latin1'));
const keyText = (r: KafkaRecord): string =>
  r.key === null ? 'null' : JSON.stringify(r.key.toString('utf8'));

const sameBytes = (a: Buffer | null, b: Buffer | null): boolean =>
  a === null || b === null ? a === b : a.equals(b);

/** The first field in which two records at one offset differ, or null when they are identical. */
function recordDifference(a: Rec, b: Rec): string | null {
  if (!sameBytes(a.record.key, b.record.key)) return 'key';
  if (!sameBytes(a.record.value, b.record.value)) return 'value';
  if (a.timestamp !== b.timestamp) return 'timestamp';
  const ha = a.record.headers;
  const hb = b.record.headers;
  if (ha.length !== hb.length || ha.some((h, i) => h.key !== hb[i]!.key || !sameBytes(h.value, hb[i]!.value)))
    return 'headers';
  return null;
}

/** The first batch field the cleaner keeps in which two replicas' batches differ, or null. */
function headerDifference(a: BatchHeader, b: BatchHeader): string | null {
  if (a.producerId !== b.producerId) return 'producerId';
  if (a.producerEpoch !== b.producerEpoch) return 'producerEpoch';
  if (a.baseSequence !== b.baseSequence) return 'baseSequence';
  if (a.partitionLeaderEpoch !== b.partitionLeaderEpoch) return 'partitionLeaderEpoch';
  if (isControl(a.attributes) !== isControl(b.attributes)) return 'isControl';
  if (isTransactional(a.attributes) !== isTransactional(b.attributes)) return 'isTransactional';
  if (timestampType(a.attributes) !== timestampType(b.attributes)) return 'timestampType';
  return null;
}

/**
 * The offset below which every replica's read is complete: the end of its last batch below its
 * HW, its HW when it holds nothing more below it, the fetch offset when its answer stopped short.
 */
function coveredTo(r: ReplicaRead, from: bigint): bigint {
  if (r.highWatermark <= from) return from;
  const below = r.batches.filter((b) => b.lastOffset < r.highWatermark);
  if (below.length > 0) return below.at(-1)!.nextOffset;
  const first = r.batches[0];
  if (
    (first === undefined && r.recordBytes === 0) ||
    (first !== undefined && first.baseOffset >= r.highWatermark)
  )
    return r.highWatermark;
  return from;
}

export interface CompactedRound {
  readonly lines: string[];
}

/**
 * One round for a compacted partition: compares what every replica has read in
 * [fetchOffset, the least covered offset) and advances fetchOffset there.
 */
export function verifyCompactedRound(
  p: PartitionState,
  missing: MissingRecords,
  ids: readonly number[],
  reads: ReadonlyMap<number, ReplicaRead>,
  now: () => string,
): string[] {
  const lines: string[] = [];
  const from = p.fetchOffset;
  let upTo = ids.reduce<bigint | null>((m, id) => {
    const c = coveredTo(reads.get(id)!, from);
    return m === null || c < m ? c : m;
  }, null)!;
  const inWindow = (id: number, end: bigint) =>
    reads.get(id)!.batches.filter((b) => b.lastOffset >= from && b.baseOffset < end);
  // Batch ranges must line up across replicas (the cleaner keeps each batch's base and last
  // offset): one that crosses the window's end on a replica shortens the window to its start.
  for (const id of ids) {
    for (const b of inWindow(id, upTo)) if (b.lastOffset >= upTo) upTo = b.baseOffset;
  }
  if (upTo <= from) return lines;
  const ranges = new Map<string, Map<number, BatchInfo>>();
  for (const id of ids) {
    for (const b of inWindow(id, upTo)) {
      const k = `${b.baseOffset}..${b.lastOffset}`;
      let m = ranges.get(k);
      if (m === undefined) {
        m = new Map();
        ranges.set(k, m);
      }
      m.set(id, b);
    }
  }
  const ordered = [...ranges.values()].sort((a, b) => {
    const x = [...a.values()][0]!.baseOffset;
    const y = [...b.values()][0]!.baseOffset;
    return x < y ? -1 : x > y ? 1 : 0;
  });
  const diverge = (d: Divergence, line: string): void => {
    lines.push(`${now()}: partition ${p.name}: ${line}`);
    if (p.divergence === null || d.offset < p.divergence.offset) p.divergence = d;
  };
  let previous: BatchInfo | null = null;
  for (const holders of ordered) {
    const [firstId, first] = [...holders][0]!;
    if (previous !== null && first.baseOffset <= previous.lastOffset) {
      diverge(
        offsetsDivergence(first, firstId, previous),
        `batch ${first.baseOffset}..${first.lastOffset} of replica ${firstId} overlaps batch ${previous.baseOffset}..${previous.lastOffset} of another replica`,
      );
      p.stopped = true;
      return lines;
    }
    previous = first;
    compareRange(p.name, ids, holders, missing, diverge);
  }
  p.fetchOffset = upTo;
  return lines;
}

function offsetsDivergence(b: BatchInfo, id: number, other: BatchInfo): Divergence {
  return {
    offset: b.baseOffset < other.baseOffset ? b.baseOffset : other.baseOffset,
    lastOffset: b.lastOffset,
    replicaA: id,
    checksumA: b.lastOffset,
    replicaB: -1,
    checksumB: other.lastOffset,
    offsets: true,
    detail: `batches ${other.baseOffset}..${other.lastOffset} and ${b.baseOffset}..${b.lastOffset} overlap`,
  };
}

/** One batch range, as the replicas holding it have it. */
function compareRange(
  name: string,
  ids: readonly number[],
  holders: ReadonlyMap<number, BatchInfo>,
  missing: MissingRecords,
  diverge: (d: Divergence, line: string) => void,
): void {
  const entries = [...holders];
  const [refId, ref] = entries[0]!;
  const alike = entries.length === ids.length && entries.every(([, b]) => b.checksum === ref.checksum);
  if (alike) {
    // Byte for byte the same everywhere: only its keys matter, to settle records lacking elsewhere.
    if ([...missing.values()].some((m) => m.size > 0)) settle(ids, recordsOf(ref), missing);
    return;
  }
  if (entries.length === ids.length && entries.every(([, b]) => whole(b))) {
    const [otherId, other] = entries.find(([, b]) => b.checksum !== ref.checksum)!;
    diverge(
      {
        offset: ref.baseOffset,
        lastOffset: ref.lastOffset,
        replicaA: refId,
        checksumA: ref.checksum,
        replicaB: otherId,
        checksumB: other.checksum,
        offsets: false,
      },
      `the batch ${ref.baseOffset}..${ref.lastOffset}, compacted on no replica, has replica ${refId}'s checksum ${ref.checksum} and replica ${otherId}'s checksum ${other.checksum}`,
    );
    return;
  }
  for (const [id, b] of entries.slice(1)) {
    const field = headerDifference(ref.header, b.header);
    if (field !== null) {
      const detail = `the batch ${ref.baseOffset}..${ref.lastOffset} has a different ${field} on replica ${refId} than on replica ${id}`;
      diverge(
        {
          offset: ref.baseOffset,
          lastOffset: ref.lastOffset,
          replicaA: refId,
          checksumA: ref.checksum,
          replicaB: id,
          checksumB: b.checksum,
          offsets: false,
          detail,
        },
        detail,
      );
      return;
    }
  }
  compareRecords(name, ids, entries, missing, diverge);
}

function compareRecords(
  _name: string,
  ids: readonly number[],
  entries: readonly [number, BatchInfo][],
  missing: MissingRecords,
  diverge: (d: Divergence, line: string) => void,
): void {
  const byReplica = new Map<number, Map<bigint, Rec>>();
  const offsets = new Set<bigint>();
  for (const [id, b] of entries) {
    const m = new Map<bigint, Rec>();
    for (const r of recordsOf(b)) {
      m.set(r.offset, r);
      offsets.add(r.offset);
    }
    byReplica.set(id, m);
  }
  for (const offset of [...offsets].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    const present = ids.filter((id) => byReplica.get(id)?.has(offset));
    const refId = present[0]!;
    const ref = byReplica.get(refId)!.get(offset)!;
    for (const id of present.slice(1)) {
      const field = recordDifference(ref, byReplica.get(id)!.get(offset)!);
      if (field === null) continue;
      const detail = `the record at offset ${offset} (key ${keyText(ref.record)}) has a different ${field} on replica ${refId} than on replica ${id}`;
      diverge(
        {
          offset,
          lastOffset: offset,
          replicaA: refId,
          checksumA: 0,
          replicaB: id,
          checksumB: 0,
          offsets: false,
          detail,
        },
        detail,
      );
    }
    if (ref.control) continue;
    // A tombstone settles what any replica lacks of its key before it: a replica that honoured it
    // dropped those records, then the tombstone itself after delete.retention.ms.
    settle(ref.record.value === null ? ids : present, [ref], missing);
    if (ref.record.value === null) continue;
    const key = keyId(ref.record);
    for (const id of ids) {
      if (present.includes(id)) continue;
      let m = missing.get(id);
      if (m === undefined) {
        m = new Map();
        missing.set(id, m);
      }
      m.set(key, { offset, holder: refId, key: keyText(ref.record) });
    }
  }
}

/** Records `recs`, held by every replica of `holders`, settle what those replicas lacked before them. */
function settle(holders: readonly number[], recs: readonly Rec[], missing: MissingRecords): void {
  for (const id of holders) {
    const m = missing.get(id);
    if (m === undefined || m.size === 0) continue;
    for (const r of recs) {
      const k = keyId(r.record);
      const lacking = m.get(k);
      if (lacking !== undefined && lacking.offset < r.offset) m.delete(k);
    }
  }
}

/** After the last round: every record still lacking a later one of its key is a divergence. */
export function unsettled(p: PartitionState, missing: MissingRecords, now: () => string): string[] {
  const lines: string[] = [];
  for (const [id, m] of missing) {
    for (const { offset, holder, key } of m.values()) {
      const detail = `replica ${holder}'s record at offset ${offset} (key ${key}) is absent on replica ${id}, which holds no later record of that key below offset ${p.fetchOffset}`;
      lines.push(`${now()}: partition ${p.name}: ${detail}`);
      if (p.divergence === null || offset < p.divergence.offset) {
        p.divergence = {
          offset,
          lastOffset: offset,
          replicaA: holder,
          checksumA: 0,
          replicaB: id,
          checksumB: 0,
          offsets: false,
          detail,
        };
      }
    }
    m.clear();
  }
  return lines;
}
