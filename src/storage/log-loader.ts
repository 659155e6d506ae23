import * as path from 'node:path';
import type { LeaderEpochFileCache } from './leader-epoch-cache.js';
import { LocalLog, type StorageContext, segmentConfigOf } from './local-log.js';
import type { LogConfig } from './log-config.js';
import {
  CLEANED_FILE_SUFFIX,
  DELETED_FILE_SUFFIX,
  INDEX_FILE_SUFFIX,
  LOG_FILE_SUFFIX,
  LogSegment,
  offsetFromFileName,
  type RecoveredBatchVisitor,
  type SegmentRecoveryResult,
  SWAP_FILE_SUFFIX,
  TIME_INDEX_FILE_SUFFIX,
} from './segment.js';
import { LogSegments } from './segments.js';
import { TXN_INDEX_FILE_SUFFIX } from './transaction-index.js';

export interface LoadParams {
  readonly dir: string;
  /** The names in `dir`, as just listed. */
  readonly files: readonly string[];
  readonly name: string;
  readonly config: LogConfig;
  readonly ctx: StorageContext;
  readonly epochCache: LeaderEpochFileCache;
  /** From recovery-point-offset-checkpoint; 0 when the partition is not in it. */
  readonly recoveryPoint: bigint;
  /** From log-start-offset-checkpoint; 0 when the partition is not in it. */
  readonly logStartOffsetCheckpoint: bigint;
  /** The log dir had a clean-shutdown marker. */
  readonly hadCleanShutdown: boolean;
  /**
   * Sees every batch the recovery replays (those whose epochs it replays), in order; the header
   * object is reused, read it during the call. Whether that was the whole log is `replayedAll`.
   */
  readonly onReplayedBatch?: RecoveredBatchVisitor;
}

export interface LoadedLog {
  readonly local: LocalLog;
  readonly logStartOffset: bigint;
  /**
   * Every batch of the loaded log went through a full validation and onReplayedBatch, in order
   * (a crash with the recovery point in the first segment): state replayed from them is complete.
   */
  readonly replayedAll: boolean;
}

/** What one load found and did; the log manager aggregates these for its start-up line. */
export interface RecoveryEvent {
  readonly segmentBaseOffset: bigint;
  readonly mode: 'full' | 'tail';
  readonly result: SegmentRecoveryResult;
}

/**
 * Opens a partition directory (Kafka's LogLoader): removes leftovers of unfinished deletions,
 * opens the segments, and checks the data. After a crash, every segment from the one holding the
 * recovery point is validated batch by batch and the first invalid byte ends the log: the file is
 * truncated there and later segments are deleted. After a clean shutdown only the tail of the
 * active segment (from its last index entry) is validated — Kafka skips this, which is how torn
 * bytes survived a clean restart in seed 14.3. Rebuilt indexes equal a full rebuild's.
 */
export function loadLog(p: LoadParams): LoadedLog {
  p.epochCache.deferFlushes();
  const before = p.epochCache.entries();
  try {
    return load(p);
  } finally {
    p.epochCache.endDeferredFlushes();
    // The replay clears and re-adds entries quietly: one line for what the load really dropped.
    const after = p.epochCache.entries();
    const dropped = before.filter(
      (e) => !after.some((a) => a.epoch === e.epoch && a.startOffset === e.startOffset),
    );
    if (dropped.length > 0) {
      p.ctx.logger.info(
        `${p.name}: leader epoch entries dropped by the load: ${dropped.map((e) => `epoch ${e.epoch} from offset ${e.startOffset}`).join(', ')}`,
      );
    }
  }
}

/**
 * The directory's segments, after the leftovers of unfinished swaps and deletions are dealt with;
 * one new empty segment when there is none. The listing of the directory serves all of it (and
 * tells the segments which index files exist), unless a step changes the files.
 */
function openSegments(p: LoadParams): { segments: LogSegments; present: ReadonlySet<string> } {
  const { fs } = p.ctx;
  let files = p.files;
  if (completeInterruptedSwaps(p, files)) files = fs.list(p.dir);
  if (removeLeftovers(p, files)) files = fs.list(p.dir);
  const present = new Set(files);
  const config = segmentConfigOf(p.config);
  const segments = new LogSegments();
  for (const f of files) {
    if (!f.endsWith(LOG_FILE_SUFFIX)) continue;
    const base = offsetFromFileName(f);
    segments.add(LogSegment.open(fs, p.dir, base, config, p.ctx.clock, false, '', present));
  }
  if (segments.isEmpty()) {
    const start = p.logStartOffsetCheckpoint > 0n ? p.logStartOffsetCheckpoint : 0n;
    const fresh = LogSegment.open(fs, p.dir, start, config, p.ctx.clock, true);
    segments.add(fresh);
    // Its files are made now, after the listing: a new log's empty segment is not "missing its
    // indexes" (which sent every new partition through a full recovery and an INFO line).
    for (const f of [fresh.logPath, fresh.offsetIndex.path, fresh.timeIndex.path])
      present.add(path.basename(f));
  }
  return { segments, present };
}

function load(p: LoadParams): LoadedLog {
  const { logger } = p.ctx;
  const { segments, present } = openSegments(p);
  const events: RecoveryEvent[] = [];
  // The batches replayed from a point on are the truth for the epochs from that point on: the
  // first one replayed clears the cache from its offset, so an older epoch met again in the
  // replay does not wipe the entries of the later epochs (which the replay then re-adds).
  let replayFrom: bigint | null = null;
  const assignEpochs: RecoveredBatchVisitor = (h, reader, position, size) => {
    if (replayFrom === null) {
      replayFrom = h.baseOffset;
      // Quiet: the replay re-adds what it clears; what the recovery really cut is logged by the
      // truncation to the recovered LEO below.
      p.epochCache.truncateFromEnd(h.baseOffset, { quiet: true });
    }
    if (h.partitionLeaderEpoch >= 0) p.epochCache.assign(h.partitionLeaderEpoch, h.baseOffset);
    p.onReplayedBatch?.(h, reader, position, size);
  };
  let replayedAll = true;
  const all = segments.values();
  const active = all[all.length - 1]!;
  for (let i = 0; i < all.length; i++) {
    const segment = all[i]!;
    const isActive = segment === active;
    const inSweep = (!p.hadCleanShutdown && nextBaseOffset(all, i) > p.recoveryPoint) || isActive;
    const needsFullRecovery =
      (!p.hadCleanShutdown && nextBaseOffset(all, i) > p.recoveryPoint) ||
      !indexesPresent(present, segment) ||
      (!isActive && !segment.indexLooksSane());
    let result: SegmentRecoveryResult | null = null;
    if (!needsFullRecovery || !inSweep) replayedAll = false;
    if (needsFullRecovery) {
      // A segment rebuilt only for its index, before the recovery point, leaves the epochs alone:
      // the segments after it are not replayed.
      result = segment.recover(inSweep ? assignEpochs : undefined);
      events.push({ segmentBaseOffset: segment.baseOffset, mode: 'full', result });
    } else if (isActive) {
      result = segment.validateTail(assignEpochs);
      events.push({ segmentBaseOffset: segment.baseOffset, mode: 'tail', result });
    }
    // Rolls start the next segment at the LEO, so after a full recovery a segment that no longer
    // ends where the next one begins lost its tail: what follows would sit behind a hole.
    const next = all[i + 1];
    // A compacted log has legal gaps: the cleaner may drop the last batches of a segment.
    const lostTail =
      needsFullRecovery &&
      !p.config.compact &&
      result !== null &&
      next !== undefined &&
      result.nextOffset !== next.baseOffset;
    if (result && (result.truncatedBytes > 0 || lostTail)) {
      const later = all.slice(i + 1);
      if (later.length > 0) {
        const bytes = later.reduce((n, s) => n + s.size, 0);
        for (const s of later) {
          segments.remove(s.baseOffset);
          s.closeHandles();
          s.deleteFiles();
        }
        logger.warn(
          `${p.name}: deleted ${later.length} segments (${bytes} bytes) after invalid data in segment ${segment.baseOffset}`,
        );
      }
      break;
    }
  }
  const newActive = segments.active();
  const nextOffset = newActive.readNextOffset();
  // One line per recovery event, with the numbers an operator compares across replicas.
  for (const e of events) {
    const r = e.result;
    if (e.mode === 'tail' && r.truncatedBytes === 0) continue;
    const how = e.mode === 'full' ? 'full validation' : 'tail validation after clean shutdown';
    const cut =
      r.truncatedBytes > 0
        ? `truncated ${r.truncatedBytes} bytes at position ${r.validBytes} (${r.stopReason})`
        : 'nothing truncated';
    const line = `${p.name}: recovered segment ${e.segmentBaseOffset} (${how}): ${r.batches} valid batches checked, ${cut}; LEO ${nextOffset}`;
    const fields = recoveryFields(p.name, e, nextOffset);
    if (r.truncatedBytes > 0) logger.warn(line, fields);
    else logger.info(line, fields);
  }
  // Recovery does not fsync what it truncated: the recovery point stays where it was (at most the
  // LEO), so a second crash validates the same segments again instead of trusting them.
  const recoveryPoint = p.hadCleanShutdown ? nextOffset : min(p.recoveryPoint, nextOffset);
  const local = new LocalLog(p.dir, p.name, p.config, segments, nextOffset, recoveryPoint, p.ctx, () =>
    p.epochCache.flushIfChanged(),
  );
  let logStartOffset = max(p.logStartOffsetCheckpoint, segments.first()!.baseOffset);
  if (logStartOffset > nextOffset) {
    logger.warn(
      `${p.name}: log start offset ${logStartOffset} is beyond the LEO ${nextOffset}; starting the log at it`,
    );
    local.truncateFullyAndStartAt(logStartOffset);
    p.epochCache.clearAndFlush();
    replayedAll = false;
  } else if (logStartOffset < segments.first()!.baseOffset) {
    logStartOffset = segments.first()!.baseOffset;
  }
  // Quiet: loadLog logs what the load dropped, in one line (this was a second line per log at
  // every restart: the entry of an epoch with no batch yet starts at the LEO).
  p.epochCache.truncateFromEnd(local.logEndOffset, { quiet: true });
  p.epochCache.truncateFromStart(logStartOffset);
  return { local, logStartOffset, replayedAll };
}

function nextBaseOffset(all: LogSegment[], i: number): bigint {
  const next = all[i + 1];
  return next ? next.baseOffset : 2n ** 63n - 1n;
}

function indexesPresent(files: ReadonlySet<string>, segment: LogSegment): boolean {
  return (
    files.has(path.basename(segment.offsetIndex.path)) && files.has(path.basename(segment.timeIndex.path))
  );
}

const SEGMENT_SUFFIXES = [LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX];

/**
 * Kafka's LogLoader recovery of the cleaner's two-phase swap: `.cleaned` files (a cleaning that
 * had not finished writing) are deleted, and so is any `.swap` file at or above the lowest
 * `.cleaned` base offset; every other `.swap` segment is complete (flushed before its rename), so
 * the live segment files in its offset range [base offset, next offset) are deleted and the
 * `.swap` files renamed live. Only segment files (.log, .index, .timeindex, .txnindex) are touched.
 */
function completeInterruptedSwaps(p: LoadParams, files: readonly string[]): boolean {
  const { fs, logger } = p.ctx;
  const cleaned = files.filter((f) => f.endsWith(CLEANED_FILE_SUFFIX));
  const swaps = files.filter((f) => f.endsWith(SWAP_FILE_SUFFIX));
  if (cleaned.length === 0 && swaps.length === 0) return false;
  let minCleaned: bigint | null = null;
  for (const f of cleaned) {
    const o = offsetFromFileName(f);
    if (minCleaned === null || o < minCleaned) minCleaned = o;
  }
  const valid: string[] = [];
  for (const f of swaps) {
    if (minCleaned !== null && offsetFromFileName(f) >= minCleaned) fs.unlink(path.join(p.dir, f));
    else valid.push(f);
  }
  for (const f of cleaned) fs.unlink(path.join(p.dir, f));
  if (cleaned.length > 0) {
    logger.info(`${p.name}: deleted ${cleaned.length} .cleaned files of an unfinished cleaning`);
  }
  let minSwap: bigint | null = null;
  let maxSwap: bigint | null = null;
  for (const f of valid) {
    if (!f.endsWith(`${LOG_FILE_SUFFIX}${SWAP_FILE_SUFFIX}`)) continue;
    const base = offsetFromFileName(f);
    const segment = LogSegment.open(
      fs,
      p.dir,
      base,
      segmentConfigOf(p.config),
      p.ctx.clock,
      false,
      SWAP_FILE_SUFFIX,
    );
    const next = segment.recover().nextOffset;
    segment.closeHandles();
    logger.info(
      `${p.name}: found log file ${f} from interrupted swap operation, which is recoverable from .swap files by renaming`,
    );
    if (minSwap === null || base < minSwap) minSwap = base;
    if (maxSwap === null || next > maxSwap) maxSwap = next;
  }
  if (minSwap !== null && maxSwap !== null) {
    for (const f of fs.list(p.dir)) {
      if (!SEGMENT_SUFFIXES.some((suffix) => f.endsWith(suffix))) continue;
      const o = offsetFromFileName(f);
      if (o >= minSwap && o < maxSwap) {
        logger.info(`${p.name}: deleting segment file ${f} that is compacted but has not been deleted yet`);
        fs.unlink(path.join(p.dir, f));
      }
    }
  }
  for (const f of valid) {
    logger.info(`${p.name}: recovering file ${f} by renaming from .swap files`);
    fs.rename(path.join(p.dir, f), path.join(p.dir, f.slice(0, -SWAP_FILE_SUFFIX.length)));
  }
  fs.syncDir(p.dir);
  return true;
}

/**
 * `.deleted` files from deletions the process did not finish, orphan indexes, temp files. Returns
 * whether it removed any.
 */
function removeLeftovers(p: LoadParams, files: readonly string[]): boolean {
  const { fs, logger } = p.ctx;
  const logs = new Set(
    files.filter((f) => f.endsWith(LOG_FILE_SUFFIX)).map((f) => f.slice(0, -LOG_FILE_SUFFIX.length)),
  );
  let removed = 0;
  for (const f of files) {
    const orphanIndex =
      (f.endsWith(INDEX_FILE_SUFFIX) ||
        f.endsWith(TIME_INDEX_FILE_SUFFIX) ||
        f.endsWith(TXN_INDEX_FILE_SUFFIX)) &&
      !logs.has(f.slice(0, f.indexOf('.')));
    if (f.endsWith(DELETED_FILE_SUFFIX) || f.endsWith('.tmp') || orphanIndex) {
      fs.unlink(path.join(p.dir, f));
      removed++;
    }
  }
  if (removed > 0)
    logger.info(`${p.name}: removed ${removed} leftover files (.deleted, .tmp, orphan indexes)`);
  return removed > 0;
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/** The numbers of one recovery event, for log.format=json. */
function recoveryFields(name: string, e: RecoveryEvent, logEndOffset: bigint): Record<string, unknown> {
  const r = e.result;
  return {
    event: 'recovery',
    partitionName: name,
    segmentBaseOffset: e.segmentBaseOffset,
    mode: e.mode,
    batches: r.batches,
    validBytes: r.validBytes,
    truncatedBytes: r.truncatedBytes,
    stopReason: r.truncatedBytes > 0 ? r.stopReason : null,
    logEndOffset,
  };
}
