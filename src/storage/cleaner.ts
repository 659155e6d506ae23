/**
 * One cleaning of one log (Kafka's Cleaner in LogCleaner.scala): build the offset map of the dirty
 * section, then rewrite every segment below the map's end, in groups (groupSegmentsBySize), keeping
 * for each key only its latest record, and swap each group's cleaned segment in (`.cleaned` →
 * `.swap` → live, LocalLog.replaceSegments). Offsets keep their gaps: a rewritten batch keeps its
 * base offset, last offset delta, producer id, epoch, base sequence and leader epoch, as Kafka's
 * MemoryRecords.filterTo does. Tombstones get a delete horizon (now + delete.retention.ms) the
 * first time their batch is cleaned and are dropped by a cleaning after it.
 * The work is a generator that yields after each batch with the bytes it read, so the caller
 * (LogCleaner) runs it in bounded slices on the event loop and throttles it. Owned by the
 * LogCleaner; one cleaning at a time per Cleaner (its offset map is reused).
 */
import { ProtocolError } from '../protocol/protocol-error.js';
import {
  type BatchHeader,
  compressionCodec,
  hasDeleteHorizon,
  hasProducerId,
  isControl,
  lastOffset,
  timestampType,
} from '../protocol/records/batch.js';
import { batchRecordsSection, encodeBatch } from '../protocol/records/codec.js';
import type { CompressionCodecId } from '../protocol/records/compression.js';
import { type KafkaRecord, readRecords } from '../protocol/records/record.js';
import { type LocalLog, segmentConfigOf } from './local-log.js';
import type { Log } from './log.js';
import type { OffsetMap } from './offset-map.js';
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

/** A log the cleaner may take (Kafka's LogToClean): its dirty section and how dirty it is. */
export interface LogToClean {
  readonly log: Log;
  readonly firstDirtyOffset: bigint;
  /** The base offset of the first segment the cleaner must not touch. */
  readonly firstUncleanableOffset: bigint;
  readonly cleanBytes: number;
  readonly cleanableBytes: number;
  readonly totalBytes: number;
  /** cleanableBytes / totalBytes: the dirty ratio min.cleanable.dirty.ratio is compared with. */
  readonly cleanableRatio: number;
  /** max.compaction.lag.ms has passed for a dirty record: cleaned whatever the ratio. */
  readonly needCompactionNow: boolean;
}

export interface CleanableOffsets {
  readonly firstDirtyOffset: bigint;
  readonly firstUncleanableDirtyOffset: bigint;
  /** The cleaner checkpoint was outside the log and was reset to the log start offset. */
  readonly forceUpdateCheckpoint: boolean;
}

/** The segments from the one holding `from` up to, not including, the active segment. */
function nonActiveSegmentsFrom(local: LocalLog, from: bigint): LogSegment[] {
  return local.segments.range(from, local.segments.active().baseOffset);
}

/**
 * Kafka's LogCleanerManager.cleanableOffsets: the first dirty offset (the cleaner checkpoint, or
 * the log start offset when the checkpoint is missing or outside the log) and the first offset
 * the cleaner must not reach: the least of the last stable offset (the HW, without transactions),
 * the active segment's base offset and, with min.compaction.lag.ms, the first segment holding a
 * record younger than the lag.
 */
export function cleanableOffsets(
  log: Log,
  lastCleanOffset: bigint | undefined,
  nowMs: number,
): CleanableOffsets {
  const logStart = log.logStartOffset;
  const checkpoint = lastCleanOffset ?? logStart;
  const outside = checkpoint < logStart || checkpoint > log.logEndOffset;
  const firstDirtyOffset = outside ? logStart : checkpoint;
  let uncleanable = log.highWatermark;
  const activeBase = log.local.segments.active().baseOffset;
  if (activeBase < uncleanable) uncleanable = activeBase;
  const lag = Math.max(log.config.minCompactionLagMs, 0);
  if (lag > 0) {
    const young = nonActiveSegmentsFrom(log.local, firstDirtyOffset).find(
      (s) => s.largestTimestamp().timestamp > BigInt(nowMs - lag),
    );
    if (young && young.baseOffset < uncleanable) uncleanable = young.baseOffset;
  }
  return {
    firstDirtyOffset,
    firstUncleanableDirtyOffset: uncleanable,
    forceUpdateCheckpoint: outside && lastCleanOffset !== undefined,
  };
}

/** The first batch's timestamp of a segment, -1 when it has none (Kafka's getFirstBatchTimestamp). */
function firstBatchTimestamp(s: LogSegment): bigint {
  if (s.size === 0) return -1n;
  const check = s.reader(s.size).check(0, false);
  return check.ok ? check.header.maxTimestamp : -1n;
}

/**
 * Kafka's LogCleanerManager.maxCompactionDelay: how long past max.compaction.lag.ms the oldest
 * dirty non-active segment is (0 when none is), from the first batch timestamp of each.
 */
export function maxCompactionDelay(log: Log, firstDirtyOffset: bigint, nowMs: number): number {
  const maxLag = log.config.maxCompactionLagMs;
  if (!Number.isFinite(maxLag)) return 0;
  let earliest: bigint | null = null;
  for (const s of nonActiveSegmentsFrom(log.local, firstDirtyOffset)) {
    const t = firstBatchTimestamp(s);
    if (t > 0n && (earliest === null || t < earliest)) earliest = t;
  }
  const cleanUntil = BigInt(nowMs - Math.max(maxLag, 0));
  return earliest !== null && earliest < cleanUntil ? Number(cleanUntil - earliest) : 0;
}

/** Kafka's LogToClean with calculateCleanableBytes. */
export function logToClean(
  log: Log,
  firstDirtyOffset: bigint,
  uncleanableOffset: bigint,
  needCompactionNow: boolean,
): LogToClean {
  const segments = log.local.segments;
  let cleanBytes = 0;
  for (const s of segments.range(-1n, firstDirtyOffset)) cleanBytes += s.size;
  const firstUncleanableSegment = nonActiveSegmentsFrom(log.local, uncleanableOffset)[0] ?? segments.active();
  const firstUncleanableOffset = firstUncleanableSegment.baseOffset;
  const from = firstDirtyOffset < firstUncleanableOffset ? firstDirtyOffset : firstUncleanableOffset;
  let cleanableBytes = 0;
  for (const s of segments.range(from, firstUncleanableOffset)) cleanableBytes += s.size;
  const totalBytes = cleanBytes + cleanableBytes;
  return {
    log,
    firstDirtyOffset,
    firstUncleanableOffset,
    cleanBytes,
    cleanableBytes,
    totalBytes,
    cleanableRatio: totalBytes === 0 ? 0 : cleanableBytes / totalBytes,
    needCompactionNow,
  };
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

interface Decoded {
  readonly records: KafkaRecord[];
}

function decode(bytes: Buffer, name: string): Decoded {
  try {
    const { header, records } = batchRecordsSection(bytes, 0, { decompress: true });
    return { records: readRecords(records, header.recordsCount) };
  } catch (e) {
    if (e instanceof ProtocolError) throw new Error(`${name}: cannot read a batch to clean: ${e.message}`);
    throw e;
  }
}

export class Cleaner {
  constructor(
    readonly id: number,
    private readonly map: OffsetMap,
    /** log.cleaner.io.buffer.size / threads / 2: the read chunk. */
    private readonly ioBufferBytes: number,
    /** log.cleaner.io.buffer.load.factor */
    private readonly loadFactor: number,
  ) {
    if (map.slots * loadFactor <= 1) {
      throw new RangeError(
        'offset map is too small to fit in even a single message, so log cleaning will never make progress. You can increase log.cleaner.dedupe.buffer.size or decrease log.cleaner.threads',
      );
    }
  }

  get offsetMap(): OffsetMap {
    return this.map;
  }

  /**
   * Cleans `ltc` (Kafka's doClean). Yields the bytes read since the last yield; returns the next
   * dirty offset (the new cleaner checkpoint) and the stats. `checkDone` throws
   * CleaningAbortedError when the cleaning must stop; it is called before each step.
   */
  *clean(
    ltc: LogToClean,
    nowMs: () => number,
    checkDone: () => void,
  ): Generator<number, { endOffset: bigint; stats: CleanerStats }> {
    const log = ltc.log;
    const stats = emptyStats(nowMs());
    const upperBound = ltc.firstUncleanableOffset;
    yield* this.buildOffsetMap(log, ltc.firstDirtyOffset, upperBound, stats, checkDone);
    const endOffset = this.map.latestOffset + 1n;
    stats.mapCompleteMs = nowMs();
    const currentMs = nowMs();
    const groups = groupSegmentsBySize(
      log.local.segments.range(0n, endOffset),
      log.config.segmentBytes,
      log.config.segmentIndexBytes,
      upperBound,
    );
    for (const group of groups)
      yield* this.cleanSegments(log, group, currentMs, upperBound, stats, checkDone);
    stats.bufferUtilization = this.map.utilization;
    stats.endMs = nowMs();
    return { endOffset, stats };
  }

  /** Kafka's buildOffsetMap: the latest offset of every key in [start, end), as far as the map holds. */
  private *buildOffsetMap(
    log: Log,
    start: bigint,
    end: bigint,
    stats: CleanerStats,
    checkDone: () => void,
  ): Generator<number, void> {
    this.map.clear();
    const dirty = log.local.segments.range(start, end);
    const maxDesiredMapSize = Math.floor(this.map.slots * this.loadFactor);
    for (let i = 0; i < dirty.length; i++) {
      const segment = dirty[i]!;
      const nextStart = i + 1 < dirty.length ? dirty[i + 1]!.baseOffset : end;
      const reader = segment.reader(segment.size, this.ioBufferBytes);
      for (let pos = segment.offsetIndex.lookup(start).position; pos < segment.size; ) {
        checkDone();
        const check = reader.check(pos, false);
        if (!check.ok)
          throw new Error(`${log.name}: segment ${segment.baseOffset} at ${pos}: ${check.reason}`);
        const h = check.header;
        if (!isControl(h.attributes)) {
          const { records } = decode(reader.view(pos, check.size), log.name);
          for (const r of records) {
            const offset = h.baseOffset + BigInt(r.offsetDelta);
            if (r.key !== null && offset >= start) {
              if (this.map.size >= maxDesiredMapSize) return;
              this.map.put(r.key, offset);
            }
            stats.mapMessagesRead++;
          }
        }
        if (lastOffset(h) >= start) this.map.updateLatestOffset(lastOffset(h));
        pos += check.size;
        stats.mapBytesRead += check.size;
        yield check.size;
      }
      // A gap in the offsets: the map covers the segment's whole offset range.
      this.map.updateLatestOffset(nextStart - 1n);
    }
  }

  /** Kafka's cleanSegments: `group` rewritten into one `.cleaned` segment, then swapped in. */
  private *cleanSegments(
    log: Log,
    group: readonly LogSegment[],
    currentMs: number,
    upperBound: bigint,
    stats: CleanerStats,
    checkDone: () => void,
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
      const activeProducerLastOffsets = new Map<bigint, bigint>();
      for (const p of log.producerState.activeProducers()) {
        const last = p.batches[p.batches.length - 1];
        if (last) activeProducerLastOffsets.set(p.producerId, last.lastOffset);
      }
      const sizes = group.map((s) => s.size);
      for (const segment of group) {
        yield* this.cleanInto(
          log,
          segment,
          cleaned,
          currentMs,
          upperBound,
          activeProducerLastOffsets,
          stats,
          checkDone,
        );
      }
      checkDone();
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
    upperBound: bigint,
    activeProducerLastOffsets: ReadonlyMap<bigint, bigint>,
    stats: CleanerStats,
    checkDone: () => void,
  ): Generator<number, void> {
    const reader = source.reader(source.size, this.ioBufferBytes);
    const size = source.size;
    for (let pos = 0; pos < size; ) {
      checkDone();
      const check = reader.check(pos, false);
      if (!check.ok) throw new Error(`${log.name}: segment ${source.baseOffset} at ${pos}: ${check.reason}`);
      const h = check.header;
      const bytes = reader.view(pos, check.size);
      stats.bytesRead += check.size;
      const kept = this.filterBatch(log, h, bytes, currentMs, upperBound, activeProducerLastOffsets, stats);
      if (kept !== null) {
        dest.append(kept, lastOffset(h));
        stats.bytesWritten += kept.length;
      }
      pos += check.size;
      yield check.size;
    }
  }

  /**
   * One batch through Kafka's filter: the bytes to write (the original batch when every record
   * stays and no delete horizon is due, else a rebuilt one, possibly empty), or null to drop it.
   */
  private filterBatch(
    log: Log,
    h: BatchHeader,
    bytes: Buffer,
    currentMs: number,
    upperBound: bigint,
    activeProducerLastOffsets: ReadonlyMap<bigint, bigint>,
    stats: CleanerStats,
  ): Buffer | null {
    const last = lastOffset(h);
    // Batches with a producer's last sequence stay (at least empty) so its state survives; so does
    // the last batch of the cleaning round, which keeps the log's last offset.
    const retainEmpty =
      (hasProducerId(h) && activeProducerLastOffsets.get(h.producerId) === last) || last + 1n === upperBound;
    if (isControl(h.attributes)) {
      stats.messagesRead += h.recordsCount;
      stats.messagesWritten += h.recordsCount;
      return Buffer.from(bytes);
    }
    const { records } = decode(bytes, log.name);
    const horizonSet = hasDeleteHorizon(h.attributes);
    const retainDeletes = !horizonSet || BigInt(currentMs) < h.baseTimestamp;
    const retained: KafkaRecord[] = [];
    let tombstones = false;
    for (const r of records) {
      stats.messagesRead++;
      if (this.shouldRetainRecord(h, r, retainDeletes, stats)) {
        retained.push(r);
        if (r.value === null) tombstones = true;
      }
    }
    if (retained.length === 0) return retainEmpty ? emptyBatch(h) : null;
    stats.messagesWritten += retained.length;
    const needToSetDeleteHorizon = tombstones && !horizonSet;
    if (retained.length === records.length && !needToSetDeleteHorizon) return Buffer.from(bytes);
    const horizon = needToSetDeleteHorizon
      ? BigInt(currentMs + log.config.deleteRetentionMs)
      : horizonSet
        ? h.baseTimestamp
        : null;
    return rebuildBatch(h, retained, horizon);
  }

  /** Kafka's shouldRetainRecord: the latest record of its key, and not an expired tombstone. */
  private shouldRetainRecord(
    h: BatchHeader,
    r: KafkaRecord,
    retainDeletes: boolean,
    stats: CleanerStats,
  ): boolean {
    const offset = h.baseOffset + BigInt(r.offsetDelta);
    if (offset > this.map.latestOffset) return true;
    if (r.key === null) {
      stats.invalidMessagesRead++;
      return false;
    }
    const found = this.map.get(r.key);
    return offset >= found && (r.value !== null || retainDeletes);
  }
}

/** The records' absolute timestamps, as the batch had them (before any delete horizon). */
function absoluteTimestamps(h: BatchHeader, records: readonly KafkaRecord[]): bigint[] {
  return records.map((r) => h.baseTimestamp + r.timestampDelta);
}

/**
 * Kafka's buildRetainedRecordsInto: the same batch fields, the kept records with their offset
 * deltas and timestamps, lastOffsetDelta kept (so the producer's last sequence survives), and
 * with a delete horizon the baseTimestamp holds it and the deltas are taken from it.
 */
function rebuildBatch(h: BatchHeader, retained: readonly KafkaRecord[], horizon: bigint | null): Buffer {
  const base = h.baseTimestamp;
  const original = absoluteTimestamps(h, retained);
  const baseTimestamp = horizon ?? (hasDeleteHorizon(h.attributes) ? base : original[0]!);
  const logAppendTime = timestampType(h.attributes) === 'LogAppendTime';
  let maxTimestamp = -1n;
  for (const t of original) if (t > maxTimestamp) maxTimestamp = t;
  return encodeBatch({
    baseOffset: h.baseOffset,
    partitionLeaderEpoch: h.partitionLeaderEpoch,
    compression: compressionCodec(h.attributes) as CompressionCodecId,
    timestampType: timestampType(h.attributes),
    baseTimestamp,
    maxTimestamp: logAppendTime ? h.maxTimestamp : maxTimestamp,
    producerId: h.producerId,
    producerEpoch: h.producerEpoch,
    baseSequence: h.baseSequence,
    isTransactional: (h.attributes & 0x10) !== 0,
    isControl: false,
    hasDeleteHorizon: horizon !== null,
    lastOffsetDelta: h.lastOffsetDelta,
    records: retained.map((r, i) => ({
      attributes: r.attributes,
      timestampDelta: original[i]! - baseTimestamp,
      offsetDelta: r.offsetDelta,
      key: r.key,
      value: r.value,
      headers: r.headers,
    })),
  });
}

/** Kafka's writeEmptyHeader: the batch's offsets, producer fields and timestamps, no records. */
function emptyBatch(h: BatchHeader): Buffer {
  return encodeBatch({
    baseOffset: h.baseOffset,
    partitionLeaderEpoch: h.partitionLeaderEpoch,
    timestampType: timestampType(h.attributes),
    baseTimestamp: h.maxTimestamp,
    maxTimestamp: h.maxTimestamp,
    producerId: h.producerId,
    producerEpoch: h.producerEpoch,
    baseSequence: h.baseSequence,
    isTransactional: (h.attributes & 0x10) !== 0,
    lastOffsetDelta: h.lastOffsetDelta,
    records: [],
  });
}
