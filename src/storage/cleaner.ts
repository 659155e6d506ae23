/**
 * One cleaning of one log (Kafka's Cleaner in LogCleaner.scala): build the offset map of the dirty
 * section, then rewrite every segment below the map's end, in groups (groupSegmentsBySize), keeping
 * for each key only its latest record, and swap each group's cleaned segment in (`.cleaned` →
 * `.swap` → live, LocalLog.replaceSegments). Offsets keep their gaps: a rewritten batch keeps its
 * base offset, last offset delta, producer id, epoch, base sequence and leader epoch, as Kafka's
 * MemoryRecords.filterTo does. Tombstones get a delete horizon (now + delete.retention.ms) the
 * first time their batch is cleaned and are dropped by a cleaning after it.
 * Records are walked, not decoded (RecordWalker: offset delta, key, null value or not), keys
 * hashed into the offset map from the read buffer, and a batch that keeps all its records is
 * copied as it is; only a batch that loses some, or whose tombstones get their delete horizon, is
 * decoded and encoded again. The work is a generator that yields every 64 KiB read with the bytes
 * it read, so the caller (LogCleaner) runs it in bounded slices on the event loop and throttles it. Owned by the
 * LogCleaner; one cleaning at a time per Cleaner (its offset map is reused).
 */
import { ProtocolError } from '../protocol/protocol-error.js';
import {
  ATTRIBUTES_OFFSET,
  BASE_OFFSET_OFFSET,
  BASE_TIMESTAMP_OFFSET,
  BATCH_HEADER_SIZE,
  BATCH_LENGTH_OFFSET,
  CONTROL_FLAG_MASK,
  CURRENT_MAGIC,
  compressionCodec,
  hasDeleteHorizon,
  LAST_OFFSET_DELTA_OFFSET,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  PRODUCER_ID_OFFSET,
  RECORDS_COUNT_OFFSET,
  RECORDS_OFFSET,
  readBatchHeader,
  TRANSACTIONAL_FLAG_MASK,
} from '../protocol/records/batch.js';
import { DEFAULT_MAX_UNCOMPRESSED_BYTES, decompress } from '../protocol/records/compression.js';
import { type KafkaRecord, readRecords } from '../protocol/records/record.js';
import { RecordWalker } from '../protocol/records/record-walker.js';
import type { LogFileReader } from './batch-scan.js';
import type { LogToClean } from './cleanable.js';
import { CleanedTransactions } from './cleaned-txns.js';
import { segmentConfigOf } from './local-log.js';
import type { Log } from './log.js';
import type { OffsetMap } from './offset-map.js';
import { emptyBatch, rebuildBatch } from './retained-batch.js';
import { CLEANED_FILE_SUFFIX, LogSegment } from './segment.js';

/** Kafka's CleanerStats: what one cleaning read, kept and took. */
export interface CleanerStats {
  bytesRead: number;
  bytesWritten: number;
  mapBytesRead: number;
  mapMessagesRead: number;
  messagesRead: number;
  messagesWritten: number;
  invalidMessagesRead: number;
  bufferUtilization: number;
  startMs: number;
  mapCompleteMs: number;
  endMs: number;
}

/**
 * Kafka's groupSegmentsBySize: consecutive segments whose log and both indexes together stay
 * within segment.bytes and segment.index.bytes, and whose offsets fit one segment's int32
 * relative offsets, are cleaned into one.
 */
export function groupSegmentsBySize(
  segments: readonly LogSegment[],
  maxSize: number,
  maxIndexSize: number,
  firstUncleanableOffset: bigint,
): LogSegment[][] {
  const grouped: LogSegment[][] = [];
  let i = 0;
  while (i < segments.length) {
    const first = segments[i]!;
    const group = [first];
    let logSize = first.size;
    let indexSize = first.offsetIndex.sizeInBytes;
    let timeIndexSize = first.timeIndex.sizeInBytes;
    i++;
    while (i < segments.length) {
      const s = segments[i]!;
      const lastOffsetOfNext =
        i + 1 < segments.length ? segments[i + 1]!.baseOffset - 1n : firstUncleanableOffset - 1n;
      const fits =
        logSize + s.size <= maxSize &&
        indexSize + s.offsetIndex.sizeInBytes <= maxIndexSize &&
        timeIndexSize + s.timeIndex.sizeInBytes <= maxIndexSize &&
        (s.size === 0 || lastOffsetOfNext - group[group.length - 1]!.baseOffset <= 0x7fffffffn);
      if (!fits) break;
      group.push(s);
      logSize += s.size;
      indexSize += s.offsetIndex.sizeInBytes;
      timeIndexSize += s.timeIndex.sizeInBytes;
      i++;
    }
    grouped.push(group);
  }
  return grouped;
}

export function emptyStats(nowMs: number): CleanerStats {
  return {
    bytesRead: 0,
    bytesWritten: 0,
    mapBytesRead: 0,
    mapMessagesRead: 0,
    messagesRead: 0,
    messagesWritten: 0,
    invalidMessagesRead: 0,
    bufferUtilization: 0,
    startMs: nowMs,
    mapCompleteMs: -1,
    endMs: -1,
  };
}

/** The cleaning was given up (the log changed under it); nothing was swapped in by that group. */
export class CleaningAbortedError extends Error {
  override readonly name = 'CleaningAbortedError';
}

/** The generator yields after at least this many bytes read (and at each segment's end). */
const YIELD_BYTES = 64 * 1024;

/** Offsets the cleaner handles as numbers: every offset of a log whose LEO is at most this. */
const MAX_CLEANABLE_OFFSET = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The batch the cleaner is at: `size` bytes at `at` in `buf` (the segment reader's chunk, valid
 * until its next read), its header fields read in place — no Buffer per batch, which for
 * one-record batches (offset commits) was much of the cost. Offsets are numbers (exact: the log's
 * offsets are safe integers).
 */
class BatchRef {
  buf: Buffer = Buffer.alloc(0);
  view: DataView = new DataView(new ArrayBuffer(0));
  at = 0;
  size = 0;

  get baseOffset(): number {
    return (
      this.view.getInt32(this.at + BASE_OFFSET_OFFSET) * 2 ** 32 +
      this.view.getUint32(this.at + BASE_OFFSET_OFFSET + 4)
    );
  }
  get lastOffset(): number {
    return this.baseOffset + this.view.getInt32(this.at + LAST_OFFSET_DELTA_OFFSET);
  }
  get attributes(): number {
    return this.view.getInt16(this.at + ATTRIBUTES_OFFSET);
  }
  get recordsCount(): number {
    return this.view.getInt32(this.at + RECORDS_COUNT_OFFSET);
  }
  get producerId(): bigint {
    return this.view.getBigInt64(this.at + PRODUCER_ID_OFFSET);
  }
  /**
   * For transactional and control batches (the others return false at once): whether the records
   * belong to an aborted transaction, as `txns` follows them in offset order.
   */
  inAbortedTransaction(txns: CleanedTransactions): boolean {
    const attributes = this.attributes;
    if ((attributes & (CONTROL_FLAG_MASK | TRANSACTIONAL_FLAG_MASK)) === 0) return false;
    const last = BigInt(this.lastOffset);
    if ((attributes & CONTROL_FLAG_MASK) !== 0) {
      txns.onControlBatch(this.producerId, last);
      return false;
    }
    return txns.onDataBatch(this.producerId, true, last);
  }
  /** The batch as a Buffer of its own (a view): for the rare batches that are rebuilt. */
  bytes(): Buffer {
    return this.buf.subarray(this.at, this.at + this.size);
  }
}

/** filterBatch's verdicts besides a rebuilt batch. */
const DROP = 0;
const KEEP = 1;

export class Cleaner {
  private readonly walker = new RecordWalker();
  private readonly batch = new BatchRef();
  /** Per record of the batch being filtered: 1 when it stays. */
  private keep = new Uint8Array(1024);
  /** Kept batches gathered for one write (Kafka's writeBuffer), and the last offset they cover. */
  private writeBuffer: Buffer;
  private writeLength = 0;
  private writeLastOffset = 0;
  /** The aborted transactions of the pass under way (the offset map's, or one group's). */
  private txns = new CleanedTransactions();

  constructor(
    readonly id: number,
    private readonly map: OffsetMap,
    /** log.cleaner.io.buffer.size / threads / 2: the read chunk and the write buffer. */
    private readonly ioBufferBytes: number,
    /** log.cleaner.io.buffer.load.factor */
    private readonly loadFactor: number,
  ) {
    if (map.slots * loadFactor <= 1) {
      throw new RangeError(
        'offset map is too small to fit in even a single message, so log cleaning will never make progress. You can increase log.cleaner.dedupe.buffer.size or decrease log.cleaner.threads',
      );
    }
    this.writeBuffer = Buffer.allocUnsafe(ioBufferBytes);
  }

  get offsetMap(): OffsetMap {
    return this.map;
  }

  /**
   * Cleans `ltc` (Kafka's doClean). Yields the bytes read since the last yield; returns the next
   * dirty offset (the new cleaner checkpoint) and the stats. The caller checks between steps
   * that the log is still there (the steps run synchronously: nothing changes it during one).
   */
  *clean(
    ltc: LogToClean,
    nowMs: () => number,
  ): Generator<number, { endOffset: bigint; stats: CleanerStats }> {
    const log = ltc.log;
    if (log.logEndOffset > MAX_CLEANABLE_OFFSET) {
      throw new Error(`${log.name}: offsets above ${MAX_CLEANABLE_OFFSET} are not cleaned`);
    }
    const stats = emptyStats(nowMs());
    const upperBound = Number(ltc.firstUncleanableOffset);
    yield* this.buildOffsetMap(log, Number(ltc.firstDirtyOffset), upperBound, stats);
    const endOffset = BigInt(this.map.latestOffset + 1);
    stats.mapCompleteMs = nowMs();
    const currentMs = nowMs();
    const groups = groupSegmentsBySize(
      log.local.segments.range(0n, endOffset),
      log.config.segmentBytes,
      log.config.segmentIndexBytes,
      ltc.firstUncleanableOffset,
    );
    for (const group of groups) yield* this.cleanSegments(log, group, currentMs, upperBound, stats);
    stats.bufferUtilization = this.map.utilization;
    stats.endMs = nowMs();
    return { endOffset, stats };
  }

  /**
   * The batch at `pos` of `segment` (a view, valid until the reader's next read): its length
   * within the segment and magic 2, else the reader's reason for refusing it. The batches were
   * validated when appended (or recovered); the records are walked, not checked again.
   */
  private batchAt(log: Log, segment: LogSegment, reader: LogFileReader, pos: number): BatchRef {
    const head = reader.locate(pos, LOG_OVERHEAD);
    if (reader.located === LOG_OVERHEAD) {
      const size = reader.dataView.getInt32(head + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
      if (size >= BATCH_HEADER_SIZE && size <= reader.end - pos) {
        const at = reader.locate(pos, size);
        if (reader.located === size && reader.bytes[at + MAGIC_OFFSET] === CURRENT_MAGIC) {
          const b = this.batch;
          b.buf = reader.bytes;
          b.view = reader.dataView;
          b.at = at;
          b.size = size;
          return b;
        }
      }
    }
    const check = reader.check(pos, false);
    throw new Error(
      `${log.name}: segment ${segment.baseOffset} at ${pos}: ${check.ok ? 'not a v2 batch' : check.reason}`,
    );
  }

  /** Starts the walker on the batch's records, decompressed if it is compressed. */
  private walk(log: Log, b: BatchRef): Buffer {
    try {
      const codec = compressionCodec(b.attributes);
      if (codec === 0) {
        this.walker.reset(b.buf, b.at + RECORDS_OFFSET, b.at + b.size, b.recordsCount);
        return b.buf;
      }
      const section = b.buf.subarray(b.at + RECORDS_OFFSET, b.at + b.size);
      const records = decompress(codec, section, DEFAULT_MAX_UNCOMPRESSED_BYTES);
      this.walker.reset(records, 0, records.length, b.recordsCount);
      return records;
    } catch (e) {
      throw readError(log, e);
    }
  }

  private nextRecord(log: Log): boolean {
    try {
      return this.walker.next();
    } catch (e) {
      throw readError(log, e);
    }
  }

  /** Kafka's buildOffsetMap: the latest offset of every key in [start, end), as far as the map holds. */
  private *buildOffsetMap(
    log: Log,
    start: number,
    end: number,
    stats: CleanerStats,
  ): Generator<number, void> {
    this.map.clear(end - start);
    const dirty = log.local.segments.range(BigInt(start), BigInt(end));
    const txns = new CleanedTransactions();
    txns.add(log.collectAbortedTransactions(BigInt(start), BigInt(end)));
    const maxDesiredMapSize = Math.floor(this.map.slots * this.loadFactor);
    const map = this.map;
    const walker = this.walker;
    for (let i = 0; i < dirty.length; i++) {
      const segment = dirty[i]!;
      const nextStart = i + 1 < dirty.length ? Number(dirty[i + 1]!.baseOffset) : end;
      const reader = segment.reader(segment.size, this.ioBufferBytes);
      let unreported = 0;
      for (let pos = segment.offsetIndex.lookup(BigInt(start)).position; pos < segment.size; ) {
        const batch = this.batchAt(log, segment, reader, pos);
        const base = batch.baseOffset;
        // Aborted records never enter the map (Kafka's buildOffsetMapForSegment): they must not
        // shadow an older committed record of their key.
        if (batch.inAbortedTransaction(txns)) stats.mapMessagesRead += batch.recordsCount;
        else if ((batch.attributes & CONTROL_FLAG_MASK) === 0) {
          const records = this.walk(log, batch);
          while (this.nextRecord(log)) {
            const offset = base + walker.offsetDelta;
            if (walker.keyStart >= 0 && offset >= start) {
              if (map.size >= maxDesiredMapSize) return;
              map.put(records, walker.keyStart, walker.keyEnd, offset);
            }
            stats.mapMessagesRead++;
          }
        }
        const last = batch.lastOffset;
        if (last >= start) map.updateLatestOffset(last);
        pos += batch.size;
        stats.mapBytesRead += batch.size;
        unreported += batch.size;
        if (unreported >= YIELD_BYTES) {
          yield unreported;
          unreported = 0;
        }
      }
      // A gap in the offsets: the map covers the segment's whole offset range.
      map.updateLatestOffset(nextStart - 1);
      if (unreported > 0) yield unreported;
    }
  }

  /** Kafka's cleanSegments: `group` rewritten into one `.cleaned` segment, then swapped in. */
  private *cleanSegments(
    log: Log,
    group: readonly LogSegment[],
    currentMs: number,
    upperBound: number,
    stats: CleanerStats,
  ): Generator<number, void> {
    const local = log.local;
    const ctx = local.context;
    const cleaned = LogSegment.open(
      ctx.fs,
      local.dir,
      group[0]!.baseOffset,
      segmentConfigOf(log.config),
      ctx.clock,
      true,
      CLEANED_FILE_SUFFIX,
    );
    let swapping = false;
    try {
      const activeProducerLastOffsets = new Map<bigint, number>();
      for (const p of log.producerState.activeProducers()) {
        const last = p.batches[p.batches.length - 1];
        if (last) activeProducerLastOffsets.set(p.producerId, Number(last.lastOffset));
      }
      const sizes = group.map((s) => s.size);
      this.txns = new CleanedTransactions();
      for (const segment of group) {
        const next = local.segments.higher(segment.baseOffset);
        const upper = next ? next.baseOffset : segment.readNextOffset();
        this.txns.add(log.collectAbortedTransactions(segment.baseOffset, upper));
        yield* this.cleanInto(log, segment, cleaned, currentMs, upperBound, activeProducerLastOffsets, stats);
      }
      // The markers stay (control batches are kept), and so do the aborted transactions they
      // ended: a read_committed fetch of the cleaned range still needs them.
      for (const segment of group) for (const t of segment.txnIndex.all()) cleaned.txnIndex.append(t);
      cleaned.onBecomeInactive();
      cleaned.flush();
      // Swapped in only if the group is still what was read: same segments, same sizes, none active.
      const active = local.segments.active();
      const unchanged = group.every(
        (s, i) => local.segments.get(s.baseOffset) === s && s.size === sizes[i] && s !== active,
      );
      if (!unchanged) throw new CleaningAbortedError(`${log.name}: segments changed during cleaning`);
      swapping = true;
      local.replaceSegments([cleaned], [...group]);
      log.onSegmentsReplaced();
    } catch (e) {
      this.writeLength = 0;
      // Once the swap has begun the cleaned segment is the log's: a failure there is an I/O error
      // that the log loader's swap recovery completes at the next start.
      if (!swapping) {
        cleaned.closeHandles();
        cleaned.deleteFiles();
      }
      throw e;
    }
  }

  /** Kafka's cleanInto with its RecordFilter: the batches of `source` kept, into `dest`. */
  private *cleanInto(
    log: Log,
    source: LogSegment,
    dest: LogSegment,
    currentMs: number,
    upperBound: number,
    activeProducerLastOffsets: ReadonlyMap<bigint, number>,
    stats: CleanerStats,
  ): Generator<number, void> {
    const reader = source.reader(source.size, this.ioBufferBytes);
    const end = source.size;
    let unreported = 0;
    for (let pos = 0; pos < end; ) {
      const batch = this.batchAt(log, source, reader, pos);
      const size = batch.size;
      stats.bytesRead += size;
      const kept = this.filterBatch(log, batch, currentMs, upperBound, activeProducerLastOffsets, stats);
      if (kept === KEEP) {
        this.write(dest, batch.buf, batch.at, size, batch.lastOffset);
        stats.bytesWritten += size;
      } else if (kept !== DROP) {
        this.write(dest, kept, 0, kept.length, batch.lastOffset);
        stats.bytesWritten += kept.length;
      }
      pos += size;
      unreported += size;
      if (unreported >= YIELD_BYTES) {
        yield unreported;
        unreported = 0;
      }
    }
    this.flush(dest);
    if (unreported > 0) yield unreported;
  }

  /** Adds a kept batch, `src[start..start+size)`, to the write buffer (written out when full). */
  private write(dest: LogSegment, src: Buffer, start: number, size: number, lastOffset: number): void {
    if (this.writeLength + size > this.writeBuffer.length) this.flush(dest);
    if (size > this.writeBuffer.length) {
      dest.append(src.subarray(start, start + size), BigInt(lastOffset));
      return;
    }
    src.copy(this.writeBuffer, this.writeLength, start, start + size);
    this.writeLength += size;
    this.writeLastOffset = lastOffset;
  }

  private flush(dest: LogSegment): void {
    if (this.writeLength === 0) return;
    const length = this.writeLength;
    this.writeLength = 0;
    dest.append(this.writeBuffer.subarray(0, length), BigInt(this.writeLastOffset));
  }

  /**
   * One batch through Kafka's filter: KEEP (as it is, when every record stays and no delete
   * horizon is due), DROP, or the batch to write instead (rebuilt, possibly empty).
   * The records are walked to decide; only a batch that loses records or gets a delete horizon
   * is decoded and encoded again.
   */
  private filterBatch(
    log: Log,
    batch: BatchRef,
    currentMs: number,
    upperBound: number,
    activeProducerLastOffsets: ReadonlyMap<bigint, number>,
    stats: CleanerStats,
  ): Buffer | typeof DROP | typeof KEEP {
    const attributes = batch.attributes;
    const count = batch.recordsCount;
    const aborted = batch.inAbortedTransaction(this.txns);
    // The markers stay: Kafka removes one once its transaction's data is gone and its delete
    // horizon has passed; Skiff keeps them (a marker without data is skipped by consumers).
    if ((attributes & CONTROL_FLAG_MASK) !== 0) {
      stats.messagesRead += count;
      stats.messagesWritten += count;
      return KEEP;
    }
    if (aborted) {
      // Every record of an aborted transaction goes (Kafka's discardBatchRecords).
      stats.messagesRead += count;
      return this.emptyOrDrop(batch, upperBound, activeProducerLastOffsets);
    }
    const horizonSet = hasDeleteHorizon(attributes);
    const retainDeletes =
      !horizonSet || currentMs < Number(batch.view.getBigInt64(batch.at + BASE_TIMESTAMP_OFFSET));
    const records = this.walk(log, batch);
    const keep = this.keepFlags(count);
    const base = batch.baseOffset;
    const latest = this.map.latestOffset;
    const walker = this.walker;
    let retained = 0;
    let tombstones = false;
    for (let i = 0; this.nextRecord(log); i++) {
      stats.messagesRead++;
      // Kafka's shouldRetainRecord: the latest record of its key, and not an expired tombstone.
      const offset = base + walker.offsetDelta;
      let stays: boolean;
      if (offset > latest) stays = true;
      else if (walker.keyStart < 0) {
        stats.invalidMessagesRead++;
        stays = false;
      } else {
        const found = this.map.get(records, walker.keyStart, walker.keyEnd);
        stays = offset >= found && (!walker.valueIsNull || retainDeletes);
      }
      keep[i] = stays ? 1 : 0;
      if (stays) {
        retained++;
        if (walker.valueIsNull) tombstones = true;
      }
    }
    if (retained === 0) return this.emptyOrDrop(batch, upperBound, activeProducerLastOffsets);
    stats.messagesWritten += retained;
    const needToSetDeleteHorizon = tombstones && !horizonSet;
    if (retained === count && !needToSetDeleteHorizon) return KEEP;
    const h = readBatchHeader(batch.bytes(), 0);
    // The records section: walked in place when uncompressed (`records` is then the read chunk).
    const section = records === batch.buf ? batch.bytes().subarray(RECORDS_OFFSET) : records;
    const all = decodeRecords(log, section, count);
    const kept = all.filter((_, i) => keep[i] === 1);
    const horizon = needToSetDeleteHorizon
      ? BigInt(currentMs + log.config.deleteRetentionMs)
      : horizonSet
        ? h.baseTimestamp
        : null;
    return rebuildBatch(h, kept, horizon);
  }

  /**
   * A batch that keeps no record: batches with a producer's last sequence stay (empty) so its
   * state survives; so does the last batch of the cleaning round, which keeps the log's last offset.
   */
  private emptyOrDrop(
    batch: BatchRef,
    upperBound: number,
    activeProducerLastOffsets: ReadonlyMap<bigint, number>,
  ): Buffer | typeof DROP {
    const last = batch.lastOffset;
    const retainEmpty =
      last + 1 === upperBound ||
      // Without a producer id (-1) the high word is negative: no BigInt for that common case.
      (batch.view.getInt32(batch.at + PRODUCER_ID_OFFSET) >= 0 &&
        activeProducerLastOffsets.get(batch.producerId) === last);
    return retainEmpty ? emptyBatch(readBatchHeader(batch.bytes(), 0)) : DROP;
  }

  private keepFlags(count: number): Uint8Array {
    if (this.keep.length < count) this.keep = new Uint8Array(count);
    return this.keep;
  }
}

/** A batch the cleaner cannot read: the log's name and the reason. */
function readError(log: Log, e: unknown): unknown {
  return e instanceof ProtocolError
    ? new Error(`${log.name}: cannot read a batch to clean: ${e.message}`)
    : e;
}

function decodeRecords(log: Log, records: Buffer, count: number): KafkaRecord[] {
  try {
    return readRecords(records, count);
  } catch (e) {
    throw readError(log, e);
  }
}
