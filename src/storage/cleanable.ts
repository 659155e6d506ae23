/**
 * What the cleaner may take (Kafka's LogCleanerManager): per log the first dirty offset and the
 * first offset it must not reach, how dirty the section between them is, and how long past
 * max.compaction.lag.ms its oldest dirty record is. Pure reads of the log.
 */
import type { LocalLog } from './local-log.js';
import type { Log } from './log.js';
import type { LogSegment } from './segment.js';

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
 * the cleaner must not reach: the least of the last stable offset (an open transaction's records
 * may yet be aborted),
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
  // Never past an unstable transaction (Kafka's firstUnstableOffset bound): whether its records
  // are aborted is not known yet. The LSO is at most the HW.
  let uncleanable = log.lastStableOffset;
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
