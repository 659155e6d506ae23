import * as path from 'node:path';
import { crc32c } from '@node-rs/crc32';
import type { Logger } from '../common/logger.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { KafkaError } from '../protocol/kafka-error.js';
import { type BatchHeader, isControl, isTransactional, lastOffset } from '../protocol/records/batch.js';
import type { EndTxnMarker } from '../protocol/records/end-txn-marker.js';
import { ControlRecordType } from '../protocol/records/record.js';
import type { FileSystem } from './fs.js';
import { filenamePrefixFromOffset } from './segment.js';

export const SNAPSHOT_FILE_SUFFIX = '.snapshot';
const SNAPSHOT_VERSION = 1;
const SNAPSHOT_ENTRY_SIZE = 46;
/** Kafka keeps the last five batches per producer for duplicate detection. */
const BATCHES_KEPT = 5;
/** Snapshots kept per log; an older truncation point replays from the log instead. */
const SNAPSHOTS_KEPT = 3;

export interface BatchMetadata {
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  readonly timestamp: bigint;
}

export interface ProducerStateEntry {
  readonly producerId: bigint;
  producerEpoch: number;
  /** The most recent batches, oldest first, at most five. */
  batches: BatchMetadata[];
  coordinatorEpoch: number;
  currentTxnFirstOffset: bigint;
  lastTimestamp: bigint;
}

/**
 * A transaction a COMMIT or ABORT marker ended (Kafka's CompletedTxn): its first data offset, the
 * marker's offset, and the LSO to record with it in the transaction index (Kafka's
 * lastStableOffset(completedTxn): another producer's earliest ongoing transaction, else the
 * offset after the marker).
 */
export interface CompletedTxn {
  readonly producerId: bigint;
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  readonly isAborted: boolean;
  readonly lastStableOffset: bigint;
}

/** A transaction not yet stable: ongoing (lastOffset -1) or ended by a marker not yet below the HW. */
interface TxnMetadata {
  readonly producerId: bigint;
  readonly firstOffset: bigint;
  lastOffset: bigint;
}

function inSequence(lastSeq: number, nextSeq: number): boolean {
  return nextSeq === lastSeq + 1 || (nextSeq === 0 && lastSeq === 0x7fffffff);
}

function lastSequence(h: BatchHeader): number {
  if (h.baseSequence < 0) return -1;
  const s = h.baseSequence + h.lastOffsetDelta;
  return s > 0x7fffffff ? s - 0x80000000 : s;
}

/**
 * The producer state of one partition (Kafka's ProducerStateManager): per producer id its epoch,
 * last five batches (duplicate detection and sequence checks on the leader), coordinator epoch and
 * the first offset of its ongoing transaction; and the unstable transactions, ongoing or ended by
 * a marker the HW has not passed yet, whose earliest first offset bounds the LSO. Persisted as `<offset>.snapshot` files in Kafka's binary layout
 * (version 1, CRC-32C) when a segment rolls and when the log closes; rebuilt after a crash or a
 * truncation from the latest snapshot at or below the LEO plus the batch headers after it.
 * Owned by one Log; single-threaded.
 */
export class ProducerStateManager {
  private producers = new Map<bigint, ProducerStateEntry>();
  /** Ongoing transactions by first offset (Kafka's ongoingTxns). */
  private readonly ongoingTxns = new Map<bigint, TxnMetadata>();
  /** Ended transactions whose marker is at or above the HW (Kafka's unreplicatedTxns). */
  private readonly unreplicatedTxns = new Map<bigint, TxnMetadata>();
  /** The state reflects every batch below this offset. */
  private mapEndOffset = 0n;

  /**
   * The offsets of the snapshot files, oldest first: listed from the directory once, then kept
   * as this manager writes and deletes them (the only writer of its directory's snapshots), as
   * Kafka's ProducerStateManager keeps its snapshots map. Opening a log asked for them three times.
   */
  private snapshots: bigint[] | null = null;

  constructor(
    private readonly fs: FileSystem,
    private readonly dir: string,
    private readonly logger: Logger,
    private readonly name: string,
  ) {}

  get endOffset(): bigint {
    return this.mapEndOffset;
  }

  entry(producerId: bigint): ProducerStateEntry | undefined {
    return this.producers.get(producerId);
  }

  activeProducers(): ProducerStateEntry[] {
    return [...this.producers.values()];
  }

  /**
   * The leader's check of a client batch (Kafka's ProducerAppendInfo): a batch already written
   * returns its metadata (the duplicate is acknowledged, not appended); an older epoch is
   * INVALID_PRODUCER_EPOCH; a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER. `pending` carries the
   * effect of earlier batches of the same append. A marker (written by the coordinator) has no
   * sequence: only its epochs are checked (see checkMarker).
   */
  checkClientBatch(
    h: BatchHeader,
    pending: Map<bigint, { epoch: number; lastSeq: number }>,
    marker: EndTxnMarker | null = null,
    /** false for a coordinator's batches (transactional offset commits): only epochs are checked. */
    checkSequences = true,
  ): BatchMetadata | null {
    if (h.producerId < 0n) return null;
    const current = this.producers.get(h.producerId);
    if (isControl(h.attributes)) {
      this.checkMarker(h, current, marker);
      return null;
    }
    const before = pending.get(h.producerId);
    if (checkSequences && !before && current) {
      const dup = current.batches.find(
        (b) =>
          current.producerEpoch === h.producerEpoch &&
          b.firstSeq === h.baseSequence &&
          b.lastSeq === lastSequence(h),
      );
      if (dup) return dup;
    }
    const epoch = before ? before.epoch : current ? current.producerEpoch : -1;
    if (h.producerEpoch < epoch) {
      throw KafkaError.fromCode(
        ErrorCode.INVALID_PRODUCER_EPOCH,
        `${this.name}: epoch ${h.producerEpoch} of producer ${h.producerId} is older than the current ${epoch}`,
      );
    }
    if (!checkSequences) {
      // Epoch checked above; a coordinator's batch carries no sequence of its own.
    } else if (h.producerEpoch !== epoch) {
      if (h.baseSequence !== 0 && epoch !== -1) {
        throw KafkaError.fromCode(
          ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
          `${this.name}: invalid sequence ${h.baseSequence} for new epoch ${h.producerEpoch} of producer ${h.producerId}: a new epoch starts at 0`,
        );
      }
    } else {
      const lastSeq = before ? before.lastSeq : (current?.batches.at(-1)?.lastSeq ?? -1);
      if (
        (current !== undefined || before !== undefined) &&
        lastSeq !== -1 &&
        !inSequence(lastSeq, h.baseSequence)
      ) {
        throw KafkaError.fromCode(
          ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
          `${this.name}: out of order sequence ${h.baseSequence} for producer ${h.producerId} at epoch ${h.producerEpoch}, expected ${lastSeq + 1}`,
        );
      }
    }
    // After the epoch and sequence checks, as Kafka's appendDataBatch orders them.
    if (current && current.currentTxnFirstOffset >= 0n && !isTransactional(h.attributes)) {
      throw KafkaError.fromCode(
        ErrorCode.INVALID_TXN_STATE,
        `${this.name}: expected a transactional write from producer ${h.producerId}: its transaction from offset ${current.currentTxnFirstOffset} is ongoing`,
      );
    }
    pending.set(h.producerId, { epoch: h.producerEpoch, lastSeq: lastSequence(h) });
    return null;
  }

  /**
   * The leader's check of a COMMIT/ABORT marker (Kafka's appendEndTxnMarker): an epoch older than
   * the producer's is INVALID_PRODUCER_EPOCH, a coordinator epoch older than the last marker's is
   * TRANSACTION_COORDINATOR_FENCED (a zombie coordinator).
   */
  private checkMarker(
    h: BatchHeader,
    current: ProducerStateEntry | undefined,
    marker: EndTxnMarker | null,
  ): void {
    if (!current || marker === null) return;
    if (h.producerEpoch < current.producerEpoch) {
      throw KafkaError.fromCode(
        ErrorCode.INVALID_PRODUCER_EPOCH,
        `${this.name}: epoch ${h.producerEpoch} of the marker of producer ${h.producerId} is older than the current ${current.producerEpoch}`,
      );
    }
    if (current.coordinatorEpoch > marker.coordinatorEpoch) {
      throw KafkaError.fromCode(
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
        `${this.name}: invalid coordinator epoch for producer ${h.producerId}: ${marker.coordinatorEpoch} (zombie), ${current.coordinatorEpoch} (current)`,
      );
    }
  }

  /**
   * Applies a batch that is now in the log (leader, follower, recovery or replay); `marker` is the
   * record of a control batch (null for data, or a control batch the cleaner emptied). Returns the
   * transaction a marker ended, already moved to the unreplicated ones.
   */
  update(h: BatchHeader, marker: EndTxnMarker | null = null): CompletedTxn | null {
    const last = lastOffset(h);
    if (last >= this.mapEndOffset) this.mapEndOffset = last + 1n;
    if (h.producerId < 0n) return null;
    const control = isControl(h.attributes);
    if (control && marker === null) return null;
    const e = this.entryForEpoch(h.producerId, h.producerEpoch);
    if (control && marker !== null) return this.endTransaction(e, h, marker);
    if (h.baseSequence >= 0) {
      e.batches.push({
        firstSeq: h.baseSequence,
        lastSeq: lastSequence(h),
        firstOffset: h.baseOffset,
        lastOffset: last,
        timestamp: h.maxTimestamp,
      });
      if (e.batches.length > BATCHES_KEPT) e.batches.shift();
    }
    e.lastTimestamp = h.maxTimestamp;
    if (isTransactional(h.attributes) && e.currentTxnFirstOffset < 0n) {
      e.currentTxnFirstOffset = h.baseOffset;
      this.ongoingTxns.set(h.baseOffset, {
        producerId: h.producerId,
        firstOffset: h.baseOffset,
        lastOffset: -1n,
      });
    }
    return null;
  }

  /**
   * The producer's entry at `epoch`: a newer epoch forgets the batches (their sequences restart)
   * but keeps the ongoing transaction and the coordinator epoch, as Kafka's maybeUpdateProducerEpoch
   * does: the coordinator aborts a fenced producer's transaction with a bumped epoch.
   */
  private entryForEpoch(producerId: bigint, epoch: number): ProducerStateEntry {
    let e = this.producers.get(producerId);
    if (!e) {
      e = {
        producerId,
        producerEpoch: epoch,
        batches: [],
        coordinatorEpoch: -1,
        currentTxnFirstOffset: -1n,
        lastTimestamp: -1n,
      };
      this.producers.set(producerId, e);
    } else if (epoch > e.producerEpoch) {
      e.producerEpoch = epoch;
      e.batches = [];
    }
    return e;
  }

  private endTransaction(e: ProducerStateEntry, h: BatchHeader, marker: EndTxnMarker): CompletedTxn | null {
    const first = e.currentTxnFirstOffset;
    e.coordinatorEpoch = marker.coordinatorEpoch;
    e.currentTxnFirstOffset = -1n;
    e.lastTimestamp = h.maxTimestamp;
    // A marker without data in this partition ends nothing here: no LSO, no index entry.
    if (first < 0n) return null;
    const markerOffset = h.baseOffset;
    let lastStableOffset = markerOffset + 1n;
    for (const t of this.ongoingTxns.values()) {
      if (t.producerId !== e.producerId && t.firstOffset < lastStableOffset) lastStableOffset = t.firstOffset;
    }
    const txn = this.ongoingTxns.get(first) ?? {
      producerId: e.producerId,
      firstOffset: first,
      lastOffset: -1n,
    };
    this.ongoingTxns.delete(first);
    txn.lastOffset = markerOffset;
    this.unreplicatedTxns.set(first, txn);
    return {
      producerId: e.producerId,
      firstOffset: first,
      lastOffset: markerOffset,
      isAborted: marker.type === ControlRecordType.abort,
      lastStableOffset,
    };
  }

  /**
   * The first offset that is not yet stable (Kafka's firstUnstableOffset): the earliest first
   * offset of an ongoing transaction or of one whose marker the HW has not passed; null if none.
   */
  firstUnstableOffset(): bigint | null {
    let first: bigint | null = null;
    for (const m of [this.ongoingTxns, this.unreplicatedTxns]) {
      for (const o of m.keys()) if (first === null || o < first) first = o;
    }
    return first;
  }

  /** The ongoing transactions, earliest first (producer id, first offset). */
  ongoingTransactions(): { producerId: bigint; firstOffset: bigint }[] {
    return [...this.ongoingTxns.values()]
      .sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1))
      .map((t) => ({ producerId: t.producerId, firstOffset: t.firstOffset }));
  }

  /** The HW passed these markers: their transactions no longer hold the LSO back. */
  onHighWatermarkUpdated(highWatermark: bigint): void {
    this.removeUnreplicatedTransactions(highWatermark);
  }

  private removeUnreplicatedTransactions(offset: bigint): void {
    for (const [first, t] of this.unreplicatedTxns)
      if (t.lastOffset < offset) this.unreplicatedTxns.delete(first);
  }

  /** Forgets producers whose last batch is below the new log start offset (Kafka evicts them too). */
  onLogStartOffsetIncremented(logStartOffset: bigint): void {
    this.removeUnreplicatedTransactions(logStartOffset);
    for (const [id, e] of this.producers) {
      const last = e.batches.at(-1)?.lastOffset ?? -1n;
      // A producer in a transaction stays: its marker must find it.
      if (last < logStartOffset && e.currentTxnFirstOffset < 0n) this.producers.delete(id);
    }
    if (this.mapEndOffset < logStartOffset) this.mapEndOffset = logStartOffset;
    for (const o of this.snapshotOffsets()) if (o < logStartOffset) this.deleteSnapshot(o);
  }

  /**
   * Forgets the producers idle for `expirationMs` or more (Kafka's removeExpiredProducers,
   * producer.id.expiration.ms): idle by their last batch's max timestamp, and never one with an
   * ongoing transaction, whose marker must still find it. Returns how many were removed.
   */
  removeExpiredProducers(nowMs: number, expirationMs: number): number {
    const now = BigInt(nowMs);
    const expiration = BigInt(expirationMs);
    let removed = 0;
    for (const [id, e] of this.producers) {
      if (e.currentTxnFirstOffset < 0n && now - e.lastTimestamp >= expiration) {
        this.producers.delete(id);
        removed++;
      }
    }
    return removed;
  }

  /** Empties the state and starts it at `offset` (truncate fully, or before a replay). */
  reset(offset: bigint): void {
    this.producers.clear();
    this.ongoingTxns.clear();
    this.unreplicatedTxns.clear();
    this.mapEndOffset = offset;
  }

  /** The snapshot files are those among `files`, the names in the directory as just listed. */
  findSnapshotsIn(files: readonly string[]): void {
    this.snapshots = snapshotOffsetsIn(files);
  }

  /** The offsets of the snapshot files, oldest first. */
  snapshotOffsets(): bigint[] {
    this.snapshots ??= snapshotOffsetsIn(this.fs.list(this.dir));
    return [...this.snapshots];
  }

  private snapshotPath(offset: bigint): string {
    return path.join(this.dir, `${filenamePrefixFromOffset(offset)}${SNAPSHOT_FILE_SUFFIX}`);
  }

  private deleteSnapshot(offset: bigint): void {
    const p = this.snapshotPath(offset);
    if (this.fs.exists(p)) this.fs.unlink(p);
    if (this.snapshots !== null) this.snapshots = this.snapshots.filter((o) => o !== offset);
  }

  /**
   * Writes `<mapEndOffset>.snapshot` and keeps only the newest few — unless the state has not
   * moved past the newest snapshot (Kafka's "not worth taking another snapshot"): an empty log, or
   * one closed again without appends, writes none. A broker holding thousands of such logs spent
   * most of its shutdown fsyncing snapshots of nothing.
   */
  takeSnapshot(): void {
    const offsets = this.snapshotOffsets();
    if (this.mapEndOffset <= (offsets.at(-1) ?? 0n)) return;
    this.fs.writeFileAtomic(this.snapshotPath(this.mapEndOffset), encodeSnapshot(this.activeProducers()));
    this.snapshots = [...offsets, this.mapEndOffset];
    const all = [...offsets, this.mapEndOffset];
    for (const o of all.slice(0, Math.max(0, all.length - SNAPSHOTS_KEPT))) this.deleteSnapshot(o);
  }

  /** Snapshots above `offset` describe batches that are gone. */
  deleteSnapshotsAbove(offset: bigint): void {
    for (const o of this.snapshotOffsets()) if (o > offset) this.deleteSnapshot(o);
  }

  deleteAllSnapshots(): void {
    for (const o of this.snapshotOffsets()) this.deleteSnapshot(o);
  }

  /**
   * Loads the newest readable snapshot at or below `maxOffset`; a damaged one is deleted and the
   * next older tried. Returns the offset the state now reflects, or null (state empty).
   */
  loadLatestSnapshot(maxOffset: bigint): bigint | null {
    for (const o of this.snapshotOffsets().reverse()) {
      if (o > maxOffset) continue;
      try {
        const entries = decodeSnapshot(this.fs.readFile(this.snapshotPath(o)));
        this.producers = new Map(entries.map((e) => [e.producerId, e]));
        this.ongoingTxns.clear();
        this.unreplicatedTxns.clear();
        for (const e of entries) {
          if (e.currentTxnFirstOffset < 0n) continue;
          const first = e.currentTxnFirstOffset;
          this.ongoingTxns.set(first, { producerId: e.producerId, firstOffset: first, lastOffset: -1n });
        }
        this.mapEndOffset = o;
        return o;
      } catch (e) {
        this.logger.warn(
          `${this.name}: deleting unreadable producer snapshot ${o}: ${e instanceof Error ? e.message : String(e)}`,
        );
        this.deleteSnapshot(o);
      }
    }
    this.producers.clear();
    this.ongoingTxns.clear();
    this.unreplicatedTxns.clear();
    return null;
  }
}

/** Kafka's producer snapshot, version 1: int16 version, uint32 CRC-32C of the rest, int32 count, entries. */
export function encodeSnapshot(entries: readonly ProducerStateEntry[]): Buffer {
  const buf = Buffer.alloc(2 + 4 + 4 + entries.length * SNAPSHOT_ENTRY_SIZE);
  buf.writeInt16BE(SNAPSHOT_VERSION, 0);
  buf.writeInt32BE(entries.length, 6);
  let at = 10;
  for (const e of entries) {
    const last = e.batches.at(-1);
    buf.writeBigInt64BE(e.producerId, at);
    buf.writeInt16BE(e.producerEpoch, at + 8);
    buf.writeInt32BE(last ? last.lastSeq : -1, at + 10);
    buf.writeBigInt64BE(last ? last.lastOffset : -1n, at + 14);
    buf.writeInt32BE(last ? Number(last.lastOffset - last.firstOffset) : 0, at + 22);
    buf.writeBigInt64BE(last ? last.timestamp : e.lastTimestamp, at + 26);
    buf.writeInt32BE(e.coordinatorEpoch, at + 34);
    buf.writeBigInt64BE(e.currentTxnFirstOffset, at + 38);
    at += SNAPSHOT_ENTRY_SIZE;
  }
  buf.writeUInt32BE(crc32c(buf.subarray(6)) >>> 0, 2);
  return buf;
}

export function decodeSnapshot(buf: Buffer): ProducerStateEntry[] {
  if (buf.length < 10) throw new Error(`snapshot of ${buf.length} bytes is too short`);
  const version = buf.readInt16BE(0);
  if (version !== SNAPSHOT_VERSION)
    throw new Error(`snapshot version ${version}, expected ${SNAPSHOT_VERSION}`);
  const crc = buf.readUInt32BE(2);
  const computed = crc32c(buf.subarray(6)) >>> 0;
  if (crc !== computed) throw new Error(`snapshot CRC mismatch: stored ${crc}, computed ${computed}`);
  const count = buf.readInt32BE(6);
  if (count < 0 || buf.length !== 10 + count * SNAPSHOT_ENTRY_SIZE) {
    throw new Error(`snapshot claims ${count} entries in ${buf.length} bytes`);
  }
  const entries: ProducerStateEntry[] = [];
  for (let i = 0, at = 10; i < count; i++, at += SNAPSHOT_ENTRY_SIZE) {
    const lastSeq = buf.readInt32BE(at + 10);
    const lastOff = buf.readBigInt64BE(at + 14);
    const delta = buf.readInt32BE(at + 22);
    const timestamp = buf.readBigInt64BE(at + 26);
    const batches: BatchMetadata[] =
      lastOff >= 0n && lastSeq >= 0
        ? [
            {
              firstSeq: Math.max(0, lastSeq - delta),
              lastSeq,
              firstOffset: lastOff - BigInt(delta),
              lastOffset: lastOff,
              timestamp,
            },
          ]
        : [];
    entries.push({
      producerId: buf.readBigInt64BE(at),
      producerEpoch: buf.readInt16BE(at + 8),
      batches,
      coordinatorEpoch: buf.readInt32BE(at + 34),
      currentTxnFirstOffset: buf.readBigInt64BE(at + 38),
      lastTimestamp: timestamp,
    });
  }
  return entries;
}

/** The offsets of the producer snapshots among a directory's names, oldest first. */
function snapshotOffsetsIn(files: readonly string[]): bigint[] {
  return files
    .filter((f) => f.endsWith(SNAPSHOT_FILE_SUFFIX) && /^\d{20}\.snapshot$/.test(f))
    .map((f) => BigInt(f.slice(0, 20)))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
