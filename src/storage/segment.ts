// biome-ignore-all lint/style/noExcessiveLinesPerFile: Kafka's LogSegment is one class (~900 lines of Java): appends, the two lazy indexes, reads and the recovery that rebuilds them share the file position state; split, each half would reach into the other's privates.

import * as path from 'node:path';
import type { Clock } from '../common/clock.js';
import { LIMITS } from '../common/limits.js';
import {
  BATCH_HEADER_SIZE,
  type BatchHeader,
  batchSize,
  emptyBatchHeader,
  lastOffset,
  readBatchHeader,
} from '../protocol/records/batch.js';
import { LogFileReader } from './batch-scan.js';
import { fileRegion } from './file-region.js';
import { type FileSystem, LazyFileHandle } from './fs.js';
import { OffsetIndex, TimeIndex } from './index-file.js';
import { readBuffers } from './read-buffers.js';
import { TransactionIndex, TXN_INDEX_FILE_SUFFIX } from './transaction-index.js';

export const LOG_FILE_SUFFIX = '.log';
export const INDEX_FILE_SUFFIX = '.index';
export const TIME_INDEX_FILE_SUFFIX = '.timeindex';
export const DELETED_FILE_SUFFIX = '.deleted';
/** A segment the cleaner is writing (Kafka's CleanedFileSuffix); discarded by recovery. */
export const CLEANED_FILE_SUFFIX = '.cleaned';
/** A cleaned segment being swapped in (Kafka's SwapFileSuffix); completed by recovery. */
export const SWAP_FILE_SUFFIX = '.swap';
const SCAN_CHUNK_BYTES = 8 * 1024;
/** Batches the segment remembers from its latest appends (see LogSegment.recentLocation). */
const RECENT_BATCHES = 64;
/** Both indexes store offsets as int32 relative to the segment's base offset. */
const MAX_RELATIVE_OFFSET = 0x7fffffff;
const RECOVERY_CHUNK_BYTES = 1024 * 1024;
/**
 * How far ahead of its appends an active segment reserves disk blocks: as much again as the
 * segment holds, at least PREALLOCATE_MIN_BYTES and at most PREALLOCATE_MAX_BYTES, so a partition
 * that receives little holds little in reserve (`du` counts the reserve; `ls` does not).
 */
const PREALLOCATE_MIN_BYTES = 64 * 1024;
const PREALLOCATE_MAX_BYTES = 4 * 1024 * 1024;
/** translateOffset's chunk (see offsetReader). */
const translateScratch = Buffer.allocUnsafeSlow(SCAN_CHUNK_BYTES);

/** `00000000000000000042`: Kafka's 20-digit, zero-padded base offset file name stem. */
export function filenamePrefixFromOffset(offset: bigint): string {
  return offset.toString().padStart(20, '0');
}

export function offsetFromFileName(fileName: string): bigint {
  const stem = fileName.slice(0, fileName.indexOf('.'));
  if (!/^\d{1,20}$/.test(stem)) throw new Error(`'${fileName}' does not start with a base offset`);
  return BigInt(stem);
}

/**
 * Called by a recovery scan for each valid batch: the header (reused, read it during the call) and
 * the batch's bytes, `reader.view(position, size)`, valid only during the call.
 */
export type RecoveredBatchVisitor = (
  header: BatchHeader,
  reader: LogFileReader,
  position: number,
  size: number,
) => void;

export interface SegmentConfig {
  /** Bytes of appended batches between two offset index entries (index.interval.bytes, 4096). */
  readonly indexIntervalBytes: number;
  /** Preallocated size of each index file (segment.index.bytes, 10 MiB). */
  readonly maxIndexSize: number;
  /**
   * Disk blocks the segment reserves at its first append (preallocate: segment.bytes); 0 or absent:
   * the reserve grows with the appends. Reserved without changing the file's length, so readers
   * and recovery see only appended bytes; given back when the segment rolls.
   */
  readonly preallocateBytes?: number;
}

export interface SegmentRead {
  /** Position of the first returned byte in the segment file. */
  readonly position: number;
  /** Base offset of the first batch returned. */
  readonly firstBatchBaseOffset: bigint;
  readonly records: Buffer;
  /** The byte limit cut the first batch: the caller asked for fewer bytes than it has. */
  readonly firstEntryIncomplete: boolean;
}

export interface BatchLocation {
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly position: number;
  readonly size: number;
}

/** What a validation scan found; `truncatedBytes` were removed from the end of the file. */
export interface SegmentRecoveryResult {
  readonly validBytes: number;
  readonly truncatedBytes: number;
  readonly batches: number;
  /** Why the scan stopped before the end of the file, when it did. */
  readonly stopReason: string | null;
  readonly nextOffset: bigint;
}

export interface RollParams {
  readonly maxSegmentBytes: number;
  readonly maxSegmentMs: number;
  readonly incomingBytes: number;
  readonly maxTimestampInIncoming: bigint;
  readonly maxOffsetInIncoming: bigint;
  readonly nowMs: number;
}

/**
 * One `.log` file with its `.index` and `.timeindex` (Kafka's LogSegment). Appends take batches
 * that are already validated and carry their final offsets; everything here is about placing bytes
 * and keeping the two indexes in step with them. Owned by LogSegments/LocalLog; single-threaded.
 */
export class LogSegment {
  private sizeBytes: number;
  /** -1 until first needed: opening a segment then reads no index (a crash recovery resets it). */
  private bytesSinceLastIndexEntry = -1;
  /** Largest batch maxTimestamp in the segment and the last offset of that batch; loaded lazily. */
  private maxTimestamp: { timestamp: bigint; offset: bigint } | null = null;
  /** The first batch's maxTimestamp, which segment.ms counts from (Kafka's rollingBasedTimestamp). */
  private rollingBasedTimestamp: bigint | null = null;
  private createdMs: number;
  private suffix: string;
  /**
   * Where the latest appended batches are, newest last, as a ring: base and last offset, position,
   * size. A Fetch at the tail (every follower, a consumer that keeps up) finds its batch here
   * instead of reading batch headers from the file, one read per fetch fewer at least. Only
   * appends fill it; anything else that changes the file (truncation, recovery) empties it.
   */
  private readonly recentBase: bigint[] = new Array(RECENT_BATCHES).fill(0n);
  private readonly recentLast: bigint[] = new Array(RECENT_BATCHES).fill(0n);
  private readonly recentPosition = new Int32Array(RECENT_BATCHES);
  private readonly recentSize = new Int32Array(RECENT_BATCHES);
  private recentCount = 0;
  /**
   * The end of the blocks reserved for appends (FileHandle.preallocate), 0 when none are known to
   * be, and Infinity once reserving failed (never tried again for this segment). Writes into
   * reserved blocks skip the file system's per-write block accounting: 5-7% off a 16 KiB append
   * and 15-20% off a 1 MiB one into the page cache, measured here (ext4).
   */
  private preallocatedEnd = 0;
  /** The ring slot of the newest entry. */
  private recentNewest = -1;

  private constructor(
    private readonly fs: FileSystem,
    readonly dir: string,
    readonly baseOffset: bigint,
    private readonly config: SegmentConfig,
    private readonly clock: Clock,
    private readonly log: LazyFileHandle,
    readonly offsetIndex: OffsetIndex,
    readonly timeIndex: TimeIndex,
    /** The transactions aborted by markers in this segment (`.txnindex`, created on first entry). */
    readonly txnIndex: TransactionIndex,
    suffix: string,
  ) {
    this.sizeBytes = log.size();
    this.createdMs = clock.nowMs();
    this.suffix = suffix;
  }

  /**
   * Opens the segment's files, creating them when `create` is set. `present`: the names in `dir`
   * as just listed (a log's load), so an index file not among them is known to be absent without
   * asking the disk.
   */
  static open(
    fs: FileSystem,
    dir: string,
    baseOffset: bigint,
    config: SegmentConfig,
    clock: Clock,
    create: boolean,
    suffix = '',
    present?: ReadonlySet<string>,
  ): LogSegment {
    const stem = path.join(dir, filenamePrefixFromOffset(baseOffset));
    // A new segment's file is made now; an existing one is opened at its first read or write.
    const logPath = `${stem}${LOG_FILE_SUFFIX}${suffix}`;
    const log = new LazyFileHandle(fs, logPath, create ? fs.open(logPath, true) : null);
    const offsetIndex = new OffsetIndex(
      fs,
      `${stem}${INDEX_FILE_SUFFIX}${suffix}`,
      baseOffset,
      config.maxIndexSize,
    );
    const timeIndex = new TimeIndex(
      fs,
      `${stem}${TIME_INDEX_FILE_SUFFIX}${suffix}`,
      baseOffset,
      config.maxIndexSize,
    );
    if (create) {
      offsetIndex.create();
      timeIndex.create();
    }
    const txnIndex = new TransactionIndex(fs, `${stem}${TXN_INDEX_FILE_SUFFIX}${suffix}`);
    if (present !== undefined) {
      const absent = (file: string) => !present.has(path.basename(file));
      if (absent(offsetIndex.path)) offsetIndex.markAbsent();
      if (absent(timeIndex.path)) timeIndex.markAbsent();
      if (absent(txnIndex.path)) txnIndex.markAbsent();
    }
    return new LogSegment(fs, dir, baseOffset, config, clock, log, offsetIndex, timeIndex, txnIndex, suffix);
  }

  get logPath(): string {
    return path.join(
      this.dir,
      `${filenamePrefixFromOffset(this.baseOffset)}${LOG_FILE_SUFFIX}${this.suffix}`,
    );
  }

  /** Bytes in the `.log` file. */
  get size(): number {
    return this.sizeBytes;
  }

  /** Relative offsets are int32 in both indexes, so a segment spans at most 2^31 - 1 offsets. */
  canConvertToRelativeOffset(offset: bigint): boolean {
    const rel = offset - this.baseOffset;
    return rel >= 0n && rel <= 0x7fffffffn;
  }

  /**
   * Appends `records` (whole batches, offsets final, ending at `largestOffset`) at the end of the
   * file. An offset index entry (the batch's last offset → its start position) is added before a
   * batch once more than `indexIntervalBytes` have been written since the last entry, with a time
   * index entry for the largest timestamp so far — Kafka's rule, so the indexes equal a rebuild's.
   */
  append(records: Buffer, largestOffset: bigint, headers?: readonly BatchHeader[]): void {
    if (records.length === 0) return;
    if (!this.canConvertToRelativeOffset(largestOffset)) {
      throw new RangeError(`offset ${largestOffset} does not fit segment ${this.baseOffset}`);
    }
    this.loadMaxTimestamp();
    let position = this.sizeBytes;
    if (position + records.length > this.preallocatedEnd) this.preallocate(position + records.length);
    try {
      this.log.write(records, position);
    } catch (e) {
      // A failed write (ENOSPC, EIO) may leave part of the batches behind: cut them off, so the
      // file never holds bytes past what the segment accounts for. Best effort; the error stands.
      try {
        this.truncateFile(position);
      } catch {
        // the caller sees the write error; recovery would cut the rest at the next start
      }
      throw e;
    }
    let i = 0;
    for (let at = 0; at < records.length; i++) {
      // The caller's parsed headers when it has them (they must describe these bytes, in order).
      const header = headers?.[i] ?? readBatchHeader(records, at);
      const size = batchSize(header);
      this.indexBatch(header, position);
      this.remember(header, position, size);
      position += size;
      at += size;
    }
    this.sizeBytes = position;
  }

  /** Reserves blocks through `end` and ahead of it (see PREALLOCATE_MAX_BYTES). Never throws. */
  private preallocate(end: number): void {
    const from = Math.max(this.preallocatedEnd, this.sizeBytes);
    const ahead = Math.min(PREALLOCATE_MAX_BYTES, Math.max(PREALLOCATE_MIN_BYTES, end));
    const to = Math.max(end + ahead, this.config.preallocateBytes ?? 0);
    let ok = false;
    try {
      ok = this.log.preallocate?.(from, to - from) === true;
    } catch {
      // a closed handle: the write that follows reports it
    }
    // ENOSPC, a file system without fallocate: the appends go on without a reserve.
    this.preallocatedEnd = ok ? to : Number.POSITIVE_INFINITY;
  }

  /** Gives back the blocks reserved past the last append (the segment stops being active). */
  private trimPreallocated(): void {
    if (this.preallocatedEnd !== Number.POSITIVE_INFINITY && this.preallocatedEnd > this.sizeBytes) {
      try {
        this.log.trimPreallocated?.();
      } catch {
        // The reserve stays until the file is truncated or deleted: disk space, never content.
      }
    }
    this.preallocatedEnd = 0;
  }

  /** Cuts the file at `size`; a truncation also frees every reserved block past it. */
  private truncateFile(size: number): void {
    this.log.truncate(size);
    if (this.preallocatedEnd !== Number.POSITIVE_INFINITY) this.preallocatedEnd = 0;
  }

  private indexBatch(header: BatchHeader, position: number): void {
    const batchLast = lastOffset(header);
    if (this.rollingBasedTimestamp === null) this.rollingBasedTimestamp = header.maxTimestamp;
    const max = this.maxTimestamp!;
    if (header.maxTimestamp > max.timestamp)
      this.maxTimestamp = { timestamp: header.maxTimestamp, offset: batchLast };
    // A full index only happens inside one multi-batch append: the next append rolls.
    if (this.bytesSinceLastIndexEntry < 0) {
      this.bytesSinceLastIndexEntry = Math.max(0, position - this.offsetIndex.lastEntry().position);
    }
    if (this.bytesSinceLastIndexEntry > this.config.indexIntervalBytes && !this.offsetIndex.isFull()) {
      this.offsetIndex.append(batchLast, position);
      if (!this.timeIndex.isFull())
        this.timeIndex.maybeAppend(this.maxTimestamp!.timestamp, this.maxTimestamp!.offset);
      this.bytesSinceLastIndexEntry = 0;
    }
    this.bytesSinceLastIndexEntry += batchSize(header);
  }

  /** The largest timestamp in the segment and its offset; -1 for an empty segment. */
  largestTimestamp(): { timestamp: bigint; offset: bigint } {
    this.loadMaxTimestamp();
    return this.maxTimestamp!;
  }

  private loadMaxTimestamp(): void {
    if (this.maxTimestamp !== null) return;
    // The time index's last entry covers every batch up to the last offset index entry; the batches
    // after that position are scanned.
    const entry = this.timeIndex.lastEntry();
    let max = { timestamp: entry.timestamp, offset: entry.offset };
    const reader = this.reader();
    for (let pos = this.offsetIndex.lastEntry().position; pos < this.sizeBytes; ) {
      const check = reader.check(pos, false);
      if (!check.ok) break;
      if (check.header.maxTimestamp > max.timestamp) {
        max = { timestamp: check.header.maxTimestamp, offset: lastOffset(check.header) };
      }
      pos += check.size;
    }
    this.maxTimestamp = max;
  }

  /**
   * A reader of this segment's file. Header scans (reads, offset and timestamp lookups) use a
   * small chunk: an index lookup leaves at most index.interval.bytes plus one batch to scan.
   * Validation of whole batches (recovery) uses a large one.
   */
  reader(end = this.sizeBytes, chunkBytes = SCAN_CHUNK_BYTES): LogFileReader {
    return new LogFileReader(this.log, end, chunkBytes);
  }

  /**
   * The reader of translateOffset, the header scan of every Fetch: its chunk is one scratch buffer
   * shared by all segments (scans are synchronous and this one never nests inside another).
   */
  private offsetReader(): LogFileReader {
    return new LogFileReader(this.log, this.sizeBytes, SCAN_CHUNK_BYTES, translateScratch);
  }

  private remember(header: BatchHeader, position: number, size: number): void {
    const slot = (this.recentNewest + 1) % RECENT_BATCHES;
    this.recentBase[slot] = header.baseOffset;
    this.recentLast[slot] = lastOffset(header);
    this.recentPosition[slot] = position;
    this.recentSize[slot] = size;
    this.recentNewest = slot;
    if (this.recentCount < RECENT_BATCHES) this.recentCount++;
  }

  private forgetRecent(): void {
    this.recentCount = 0;
    this.recentNewest = -1;
  }

  /**
   * translateOffset from the ring of recent appends: the batch when `offset` is at or after the
   * oldest remembered batch's base offset (no batch before that one can hold it), null when it is
   * past the last batch, undefined when the ring cannot tell.
   */
  private recentLocation(offset: bigint): BatchLocation | null | undefined {
    const n = this.recentCount;
    if (n === 0) return undefined;
    const oldest = (this.recentNewest - n + 1 + RECENT_BATCHES) % RECENT_BATCHES;
    if (offset < this.recentBase[oldest]!) return undefined;
    if (offset > this.recentLast[this.recentNewest]!) return null;
    // Newest first: a tailing reader wants one of the last batches.
    for (let k = 0; k < n; k++) {
      const slot = (this.recentNewest - k + RECENT_BATCHES) % RECENT_BATCHES;
      const before = k + 1 < n ? (slot - 1 + RECENT_BATCHES) % RECENT_BATCHES : -1;
      if (before < 0 || this.recentLast[before]! < offset) {
        return {
          baseOffset: this.recentBase[slot]!,
          lastOffset: this.recentLast[slot]!,
          position: this.recentPosition[slot]!,
          size: this.recentSize[slot]!,
        };
      }
    }
    return undefined;
  }

  /**
   * The first batch whose last offset is ≥ `offset`, scanning headers from `startingPosition`
   * (Kafka's translateOffset); null when the segment holds nothing at or after it. Without a
   * starting position, the latest appends are looked at first.
   */
  translateOffset(offset: bigint, startingPosition?: number): BatchLocation | null {
    if (startingPosition === undefined) {
      const recent = this.recentLocation(offset);
      if (recent !== undefined) return recent;
      startingPosition = this.offsetIndex.lookup(offset).position;
    }
    const reader = this.offsetReader();
    for (let pos = startingPosition; pos < this.sizeBytes; ) {
      const check = reader.check(pos, false);
      if (!check.ok) {
        // An index entry that does not point at a batch (a damaged index of a segment recovery
        // did not look at) must not hide the data: scan from the start instead.
        return pos === startingPosition && startingPosition > 0 ? this.translateOffset(offset, 0) : null;
      }
      const last = lastOffset(check.header);
      if (last >= offset)
        return { baseOffset: check.header.baseOffset, lastOffset: last, position: pos, size: check.size };
      pos += check.size;
    }
    return null;
  }

  /**
   * Bytes from the batch holding `startOffset`, at most `maxSize` of them and none at or beyond
   * `maxPosition`. With `minOneMessage`, the first batch is returned whole even above `maxSize`, so a
   * consumer with a small limit still makes progress. The slice may end inside a batch, as Kafka's.
   * `forSocket`: the bytes go straight into a Fetch response written by a server connection, which
   * may receive a file-region placeholder instead of the bytes (file-region.ts).
   */
  read(
    startOffset: bigint,
    maxSize: number,
    maxPosition = this.sizeBytes,
    minOneMessage = false,
    forSocket = false,
  ): SegmentRead | null {
    if (maxSize < 0) throw new RangeError(`invalid max size ${maxSize}`);
    const start = this.translateOffset(startOffset);
    if (!start) return null;
    const adjustedMaxSize = minOneMessage ? Math.max(maxSize, start.size) : maxSize;
    const fetchSize = Math.max(0, Math.min(maxPosition - start.position, adjustedMaxSize));
    const region = forSocket ? fileRegion(this.log, start.position, fetchSize) : null;
    if (region) {
      return {
        position: start.position,
        firstBatchBaseOffset: start.baseOffset,
        records: region,
        firstEntryIncomplete: adjustedMaxSize < start.size,
      };
    }
    // From the process's read-buffer pool: a Fetch response hands it back once the socket has it.
    const records = readBuffers.acquire(fetchSize);
    const n = this.log.read(records, 0, fetchSize, start.position);
    return {
      position: start.position,
      firstBatchBaseOffset: start.baseOffset,
      records: n === fetchSize ? records : records.subarray(0, n),
      firstEntryIncomplete: adjustedMaxSize < start.size,
    };
  }

  /** The offset after the last batch (LEO of this segment); the base offset when empty. */
  readNextOffset(): bigint {
    const reader = this.reader();
    let next = this.baseOffset;
    for (let pos = this.offsetIndex.lastEntry().position; pos < this.sizeBytes; ) {
      const check = reader.check(pos, false);
      if (!check.ok) break;
      next = lastOffset(check.header) + 1n;
      pos += check.size;
    }
    if (next === this.baseOffset && this.offsetIndex.entries > 0)
      next = this.offsetIndex.lastEntry().offset + 1n;
    return next;
  }

  /**
   * The first batch with maxTimestamp ≥ `timestamp` among offsets ≥ `startingOffset`: the time
   * index narrows the start, then headers are scanned. Batch granularity; the caller resolves the
   * record inside the batch.
   */
  findBatchByTimestamp(
    timestamp: bigint,
    startingOffset: bigint,
  ): (BatchLocation & { maxTimestamp: bigint }) | null {
    const fromIndex = this.timeIndex.lookup(timestamp);
    const startOffset = fromIndex.offset > startingOffset ? fromIndex.offset : startingOffset;
    const position = this.offsetIndex.lookup(startOffset).position;
    const reader = this.reader();
    for (let pos = position; pos < this.sizeBytes; ) {
      const check = reader.check(pos, false);
      if (!check.ok) return null;
      const h = check.header;
      if (h.maxTimestamp >= timestamp && lastOffset(h) >= startingOffset) {
        return {
          baseOffset: h.baseOffset,
          lastOffset: lastOffset(h),
          position: pos,
          size: check.size,
          maxTimestamp: h.maxTimestamp,
        };
      }
      pos += check.size;
    }
    return null;
  }

  /**
   * Kafka's index sanity check, made stronger: the last offset index entry must point inside the
   * file at a batch whose last offset it names. One header read; a failure means rebuild.
   */
  indexLooksSane(): boolean {
    if (this.offsetIndex.entries === 0)
      return this.sizeBytes <= this.config.indexIntervalBytes + LIMITS.emptyIndexSegmentSlackBytes;
    const last = this.offsetIndex.lastEntry();
    if (last.position >= this.sizeBytes) return false;
    const check = this.reader().check(last.position, false);
    return check.ok && lastOffset(check.header) === last.offset;
  }

  /**
   * Validates every batch (length, magic, CRC, offsets increasing and inside the segment), rebuilds
   * both indexes, and physically truncates the file at the first invalid byte (Kafka's recover).
   * `onBatch` sees every valid batch in order (epoch cache, producer state); the header object
   * is reused from batch to batch, so it is read during the call, never kept.
   */
  recover(onBatch?: RecoveredBatchVisitor): SegmentRecoveryResult {
    this.forgetRecent();
    this.offsetIndex.reset();
    this.timeIndex.reset();
    this.rollingBasedTimestamp = null;
    return this.validateFrom(0, 0, { timestamp: -1n, offset: -1n }, this.baseOffset, onBatch);
  }

  /**
   * Validates only the batches from the last offset index entry on, the part of an active segment
   * that may be torn even after a clean shutdown, and truncates there as `recover` would. The
   * indexes end up exactly as a full `recover` would build them. Falls back to a full recovery when
   * the index is empty or does not match the file.
   */
  validateTail(onBatch?: RecoveredBatchVisitor): SegmentRecoveryResult {
    this.forgetRecent();
    const fileSize = this.log.size();
    this.offsetIndex.truncateToPosition(fileSize);
    const k = this.offsetIndex.entries - 1;
    if (k < 0) return this.recover(onBatch);
    const tailStart = this.offsetIndex.entry(k).position;
    const previousIndexed = k > 0 ? this.offsetIndex.entry(k - 1).position : 0;
    // Walk the headers between the two last entries: they must land exactly on the last entry, and
    // they give the last offset and the largest timestamp before the tail.
    const reader = this.reader(fileSize);
    let lastOffsetBefore = this.baseOffset - 1n;
    let maxBatchTimestamp = { timestamp: -1n, offset: -1n };
    let pos = previousIndexed;
    while (pos < tailStart) {
      const check = reader.check(pos, false);
      if (!check.ok) break;
      lastOffsetBefore = lastOffset(check.header);
      if (check.header.maxTimestamp > maxBatchTimestamp.timestamp) {
        maxBatchTimestamp = { timestamp: check.header.maxTimestamp, offset: lastOffsetBefore };
      }
      pos += check.size;
    }
    if (pos !== tailStart) return this.recover(onBatch);
    this.offsetIndex.truncateToPosition(tailStart);
    this.timeIndex.truncateTo(lastOffsetBefore + 1n);
    const t = this.timeIndex.lastEntry();
    const max =
      t.timestamp >= maxBatchTimestamp.timestamp
        ? { timestamp: t.timestamp, offset: t.offset }
        : maxBatchTimestamp;
    return this.validateFrom(tailStart, previousIndexed, max, lastOffsetBefore + 1n, onBatch);
  }

  private validateFrom(
    startPosition: number,
    lastIndexedPosition: number,
    maxTimestampBefore: { timestamp: bigint; offset: bigint },
    firstExpectedOffset: bigint,
    onBatch: RecoveredBatchVisitor | undefined,
  ): SegmentRecoveryResult {
    const fileSize = this.log.size();
    // One sequential pass in large reads; one header object for every batch (onBatch sees it
    // only during its call). The chunk no larger than the bytes to validate: a 1 MiB buffer for
    // each of thousands of small segments was a third of a restart's load (and its GC).
    const toValidate = Math.max(fileSize - startPosition, BATCH_HEADER_SIZE);
    const reader = this.reader(fileSize, Math.min(toValidate, RECOVERY_CHUNK_BYTES));
    const h = emptyBatchHeader();
    let maxTimestamp = maxTimestampBefore.timestamp;
    let maxTimestampOffset = maxTimestampBefore.offset;
    let position = startPosition;
    let lastIndexed = lastIndexedPosition;
    // Offsets relative to the segment base, as numbers: inside a segment they are int32, and one
    // BigInt subtraction per batch replaces the four of working in absolute offsets.
    let expectedRelative = Number(firstExpectedOffset - this.baseOffset);
    let batches = 0;
    let stopReason: string | null = null;
    while (position < fileSize) {
      const size = reader.validateInto(position, h);
      if (size < 0) {
        stopReason = reader.failure;
        break;
      }
      // Exact for any offset a segment can hold; one from elsewhere fails the range check anyway.
      const relative = Number(h.baseOffset - this.baseOffset);
      const lastRelative = relative + h.lastOffsetDelta;
      if (relative < expectedRelative || lastRelative > MAX_RELATIVE_OFFSET) {
        const last = lastOffset(h);
        const expected = this.baseOffset + BigInt(expectedRelative);
        stopReason = `batch offsets ${h.baseOffset}..${last} are out of order (expected ≥ ${expected}) or outside the segment`;
        break;
      }
      if (h.maxTimestamp > maxTimestamp) {
        maxTimestamp = h.maxTimestamp;
        maxTimestampOffset = lastOffset(h);
      }
      if (position === 0) this.rollingBasedTimestamp = h.maxTimestamp;
      // A full index (segment.index.bytes lowered since the segment was written) stops indexing,
      // it does not stop recovery: lookups then scan further.
      if (position - lastIndexed > this.config.indexIntervalBytes && !this.offsetIndex.isFull()) {
        this.offsetIndex.append(lastOffset(h), position);
        if (!this.timeIndex.isFull()) this.timeIndex.maybeAppend(maxTimestamp, maxTimestampOffset);
        lastIndexed = position;
      }
      onBatch?.(h, reader, position, size);
      batches++;
      position += size;
      expectedRelative = lastRelative + 1;
    }
    const expectedMinOffset = this.baseOffset + BigInt(expectedRelative);
    const truncatedBytes = fileSize - position;
    if (truncatedBytes > 0) this.truncateFile(position);
    // Markers cut with the data take their aborted transactions along; the entries of what stays
    // are the log's to rebuild where it replays producer state.
    this.txnIndex.truncateTo(expectedMinOffset);
    this.sizeBytes = position;
    this.bytesSinceLastIndexEntry = position - lastIndexed;
    const max = { timestamp: maxTimestamp, offset: maxTimestampOffset };
    this.maxTimestamp = max;
    if (max.timestamp >= 0n && max.offset >= this.baseOffset && !this.timeIndex.isFull()) {
      this.timeIndex.maybeAppend(max.timestamp, max.offset);
    }
    return { validBytes: position, truncatedBytes, batches, stopReason, nextOffset: expectedMinOffset };
  }

  /**
   * Removes every batch from the one holding `offset` onward, and their index entries.
   * Returns the bytes removed.
   */
  truncateTo(offset: bigint): number {
    const location = this.translateOffset(offset);
    this.forgetRecent();
    this.offsetIndex.truncateTo(offset);
    this.timeIndex.truncateTo(offset);
    this.txnIndex.truncateTo(offset);
    if (!location) return 0;
    const removed = this.sizeBytes - location.position;
    this.truncateFile(location.position);
    this.sizeBytes = location.position;
    this.offsetIndex.truncateToPosition(location.position);
    if (this.sizeBytes === 0) {
      this.createdMs = this.clock.nowMs();
      this.rollingBasedTimestamp = null;
    }
    this.bytesSinceLastIndexEntry = this.sizeBytes - this.offsetIndex.lastEntry().position;
    this.maxTimestamp = null;
    return removed;
  }

  /** Kafka's shouldRoll: size, age (from the first batch's timestamp), full index, offset range. */
  shouldRoll(p: RollParams): boolean {
    const reachedRollMs = this.timeWaitedForRollMs(p.nowMs, p.maxTimestampInIncoming) > p.maxSegmentMs;
    return (
      this.sizeBytes > p.maxSegmentBytes - p.incomingBytes ||
      (this.sizeBytes > 0 && reachedRollMs) ||
      this.offsetIndex.isFull() ||
      this.timeIndex.isFull() ||
      !this.canConvertToRelativeOffset(p.maxOffsetInIncoming)
    );
  }

  private timeWaitedForRollMs(nowMs: number, incomingTimestamp: bigint): number {
    if (this.rollingBasedTimestamp === null && this.sizeBytes > 0) {
      const check = this.reader().check(0, false);
      if (check.ok) this.rollingBasedTimestamp = check.header.maxTimestamp;
    }
    const t = this.rollingBasedTimestamp;
    if (t !== null && t >= 0n) return Number(incomingTimestamp - t);
    return nowMs - this.createdMs;
  }

  /**
   * The segment stops being active: record the final max timestamp, trim the indexes and give
   * back the blocks reserved for appends.
   */
  onBecomeInactive(): void {
    this.appendFinalTimeIndexEntry();
    this.offsetIndex.trim();
    this.timeIndex.trim();
    this.trimPreallocated();
  }

  private appendFinalTimeIndexEntry(): void {
    const max = this.largestTimestamp();
    if (max.timestamp >= 0n && max.offset >= this.baseOffset && !this.timeIndex.isFull()) {
      this.timeIndex.maybeAppend(max.timestamp, max.offset);
    }
  }

  flush(): void {
    this.log.sync();
    this.offsetIndex.flush();
    this.timeIndex.flush();
    this.txnIndex.flush();
  }

  /**
   * A clean close, as Kafka's: final time index entry, indexes trimmed, reserved blocks given
   * back, files closed.
   */
  close(): void {
    this.appendFinalTimeIndexEntry();
    this.offsetIndex.close();
    this.timeIndex.close();
    this.txnIndex.closeHandle();
    this.trimPreallocated();
    this.log.close();
  }

  /**
   * Gives back the `.log`'s descriptor until the segment is next read or written (the indexes hold
   * none between their writes): a loaded log that nobody uses holds no descriptor.
   */
  releaseHandle(): void {
    this.log.release();
  }

  /** Closes the file handles without trimming anything (deletion, simulated crashes). */
  closeHandles(): void {
    this.offsetIndex.closeHandle();
    this.timeIndex.closeHandle();
    this.txnIndex.closeHandle();
    this.log.close();
  }

  /** Renames all its files from the current suffix to `newSuffix` (e.g. '.deleted'). */
  changeFileSuffix(newSuffix: string): void {
    const stem = path.join(this.dir, filenamePrefixFromOffset(this.baseOffset));
    const logFrom = `${stem}${LOG_FILE_SUFFIX}${this.suffix}`;
    const logTo = `${stem}${LOG_FILE_SUFFIX}${newSuffix}`;
    if (this.fs.exists(logFrom)) this.fs.rename(logFrom, logTo);
    this.log.renamed(logTo);
    this.offsetIndex.renameTo(`${stem}${INDEX_FILE_SUFFIX}${newSuffix}`);
    this.timeIndex.renameTo(`${stem}${TIME_INDEX_FILE_SUFFIX}${newSuffix}`);
    this.txnIndex.renameTo(`${stem}${TXN_INDEX_FILE_SUFFIX}${newSuffix}`);
    this.suffix = newSuffix;
  }

  /** Paths of the segment's files as they are named now. */
  filePaths(): string[] {
    const paths = [this.logPath, this.offsetIndex.path, this.timeIndex.path];
    if (this.fs.exists(this.txnIndex.path)) paths.push(this.txnIndex.path);
    return paths;
  }

  deleteFiles(): void {
    for (const p of this.filePaths()) if (this.fs.exists(p)) this.fs.unlink(p);
  }
}
