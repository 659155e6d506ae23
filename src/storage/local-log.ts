import * as path from 'node:path';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import type { BatchHeader } from '../protocol/records/batch.js';
import type { FileSystem } from './fs.js';
import type { LogConfig } from './log-config.js';
import { DELETED_FILE_SUFFIX, LogSegment, type SegmentConfig, SWAP_FILE_SUFFIX } from './segment.js';
import type { LogSegments } from './segments.js';
import type { AbortedTxn } from './transaction-index.js';

/** Everything a log layer needs from its surroundings; passed down, never looked up. */
export interface StorageContext {
  readonly fs: FileSystem;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly logger: Logger;
}

/** An offset with where its batch sits: which segment, and at which byte (Kafka's LogOffsetMetadata). */
export interface LogOffsetMetadata {
  readonly offset: bigint;
  readonly segmentBaseOffset: bigint;
  readonly position: number;
}

export interface LogReadResult {
  /** Offset asked for, with the position of the batch that holds it (when something was read). */
  readonly fetchOffset: LogOffsetMetadata;
  /** Whole batches, except that the byte limit may cut the last one, as in Kafka. */
  readonly records: Buffer;
  readonly firstEntryIncomplete: boolean;
  /**
   * A read_committed read's aborted transactions that may overlap the records (Kafka's
   * FetchDataInfo.abortedTransactions); absent for the other isolations.
   */
  readonly abortedTransactions?: readonly AbortedTxn[];
}

export function segmentConfigOf(config: LogConfig): SegmentConfig {
  return {
    indexIntervalBytes: config.indexIntervalBytes,
    maxIndexSize: config.segmentIndexBytes,
    preallocateBytes: config.preallocate ? config.segmentBytes : 0,
  };
}

/**
 * The segments of one partition directory and the LEO (Kafka's LocalLog): append to the active
 * segment, roll, read across segments, truncate, and delete segments by renaming them `.deleted`
 * and removing the files `file.delete.delay.ms` later. Knows nothing about HW, log start offset
 * or epochs; the Log above it does. Owned by one Log; single-threaded.
 */
export class LocalLog {
  private nextOffset: bigint;
  /** Offsets below this are flushed to disk: recovery after a crash starts here. */
  private recoveryPointOffset: bigint;
  /** The highest recovery point this log had (highestRecoveryPoint). */
  private highestRecoveryPointOffset: bigint;
  private lastFlushedMs: number;
  private unflushedMessages = 0;
  private pendingDeletions = new Set<() => void>();
  /** Bytes of the segments renamed `*.deleted` whose files are not removed yet. */
  private pendingDeletionBytes = 0;

  constructor(
    readonly dir: string,
    readonly name: string,
    private config: LogConfig,
    readonly segments: LogSegments,
    nextOffset: bigint,
    recoveryPoint: bigint,
    private readonly ctx: StorageContext,
    /**
     * Runs before a flush moves the recovery point: what the log above keeps beside the segments
     * and leaves unwritten for a while (the leader epochs' truncations) is written first, since a
     * recovery trusts everything below the recovery point.
     */
    private readonly beforeFlush: () => void = () => {},
  ) {
    this.nextOffset = nextOffset;
    this.recoveryPointOffset = recoveryPoint;
    this.highestRecoveryPointOffset = recoveryPoint;
    this.lastFlushedMs = ctx.clock.nowMs();
  }

  get logEndOffset(): bigint {
    return this.nextOffset;
  }

  /** The LEO with the active segment and the byte where the next batch will go. */
  logEndOffsetMetadata(): LogOffsetMetadata {
    const active = this.segments.active();
    return { offset: this.nextOffset, segmentBaseOffset: active.baseOffset, position: active.size };
  }

  get recoveryPoint(): bigint {
    return this.recoveryPointOffset;
  }

  /**
   * The highest recovery point this log ever had: no recovery-point checkpoint written since it was
   * opened holds more for it. A truncation lowers the recovery point, not this.
   */
  get highestRecoveryPoint(): bigint {
    return this.highestRecoveryPointOffset;
  }

  private setRecoveryPoint(offset: bigint): void {
    this.recoveryPointOffset = offset;
    if (offset > this.highestRecoveryPointOffset) this.highestRecoveryPointOffset = offset;
  }

  /** The file system, clock, scheduler and logger this log was opened with (for the cleaner). */
  get context(): StorageContext {
    return this.ctx;
  }

  get logConfig(): LogConfig {
    return this.config;
  }

  updateConfig(config: LogConfig): void {
    this.config = config;
  }

  /** Appends batches that already carry their final offsets, ending at `lastOffset`. */
  append(lastOffset: bigint, records: Buffer, messages: number, headers?: readonly BatchHeader[]): void {
    this.segments.active().append(records, lastOffset, headers);
    this.nextOffset = lastOffset + 1n;
    this.unflushedMessages += messages;
  }

  /** Kafka's maybeRoll: rolls first when the incoming batches do not belong in the active segment. */
  maybeRoll(incomingBytes: number, firstOffset: bigint, maxOffset: bigint, maxTimestamp: bigint): LogSegment {
    const active = this.segments.active();
    const roll = active.shouldRoll({
      maxSegmentBytes: this.config.segmentBytes,
      maxSegmentMs: this.config.segmentMs - rollJitterMs(this.name, active.baseOffset, this.config),
      incomingBytes,
      maxTimestampInIncoming: maxTimestamp,
      maxOffsetInIncoming: maxOffset,
      nowMs: this.ctx.clock.nowMs(),
    });
    if (!roll) return active;
    // The new segment starts at the first incoming offset, or the LEO if that is higher.
    return this.roll(firstOffset > this.nextOffset ? firstOffset : this.nextOffset);
  }

  /** Starts a new active segment at `newBaseOffset` (default: the LEO). */
  roll(newBaseOffset: bigint = this.nextOffset): LogSegment {
    const active = this.segments.active();
    if (active.baseOffset === newBaseOffset && active.size === 0) return active;
    if (newBaseOffset < this.nextOffset || this.segments.get(newBaseOffset)) {
      throw new Error(
        `${this.name}: cannot roll to ${newBaseOffset}: LEO is ${this.nextOffset} or the segment exists`,
      );
    }
    active.onBecomeInactive();
    const segment = this.createSegment(newBaseOffset);
    this.segments.add(segment);
    // Kafka flushes the finished segment in the background rather than on the append path.
    this.ctx.scheduler.schedule(`flush-${this.name}`, 0, () => {
      if (this.segments.get(active.baseOffset) === active) this.flush(newBaseOffset);
    });
    this.ctx.logger.info(`${this.name}: rolled new log segment at offset ${newBaseOffset}`);
    return segment;
  }

  createSegment(baseOffset: bigint): LogSegment {
    return LogSegment.open(
      this.ctx.fs,
      this.dir,
      baseOffset,
      segmentConfigOf(this.config),
      this.ctx.clock,
      true,
    );
  }

  /**
   * Reads from `startOffset`, at most `maxLength` bytes and nothing at or beyond `maxOffsetMetadata`
   * (the LEO, HW or last stable offset as the caller chooses).
   */
  read(
    startOffset: bigint,
    maxLength: number,
    maxOffsetMetadata: LogOffsetMetadata,
    minOneMessage: boolean,
    forSocket = false,
  ): LogReadResult {
    let segment = this.segments.floor(startOffset);
    while (segment && segment.baseOffset < maxOffsetMetadata.offset) {
      const maxPosition =
        segment.baseOffset === maxOffsetMetadata.segmentBaseOffset
          ? maxOffsetMetadata.position
          : segment.size;
      const r = segment.read(startOffset, maxLength, maxPosition, minOneMessage, forSocket);
      if (r) {
        return {
          fetchOffset: { offset: startOffset, segmentBaseOffset: segment.baseOffset, position: r.position },
          records: r.records,
          firstEntryIncomplete: r.firstEntryIncomplete,
        };
      }
      segment = this.segments.higher(segment.baseOffset);
    }
    return {
      fetchOffset: {
        offset: startOffset,
        segmentBaseOffset: this.segments.active().baseOffset,
        position: this.segments.active().size,
      },
      records: Buffer.alloc(0),
      firstEntryIncomplete: false,
    };
  }

  /** Position metadata for an offset ≤ LEO (the HW, say): the batch holding it, or the end. */
  convertToOffsetMetadata(offset: bigint): LogOffsetMetadata {
    if (offset >= this.nextOffset) return this.logEndOffsetMetadata();
    let segment = this.segments.floor(offset);
    while (segment) {
      const location = segment.translateOffset(offset);
      if (location) return { offset, segmentBaseOffset: segment.baseOffset, position: location.position };
      segment = this.segments.higher(segment.baseOffset);
    }
    return this.logEndOffsetMetadata();
  }

  /**
   * Removes everything from `targetOffset` on: later segments are deleted, the one holding it is
   * cut at the start of the batch holding it. Returns the bytes discarded.
   */
  truncateTo(targetOffset: bigint): number {
    let discarded = 0;
    const later = this.segments.values().filter((s) => s.baseOffset > targetOffset);
    for (const s of later) discarded += s.size;
    this.removeAndDeleteSegments(later);
    const active = this.segments.active();
    discarded += active.truncateTo(targetOffset);
    this.nextOffset = active.readNextOffset();
    if (this.nextOffset > targetOffset) this.nextOffset = targetOffset;
    if (this.recoveryPointOffset > this.nextOffset) this.recoveryPointOffset = this.nextOffset;
    return discarded;
  }

  /** Deletes every segment and starts an empty one at `newOffset` (Kafka's truncateFullyAndStartAt). */
  truncateFullyAndStartAt(newOffset: bigint): number {
    const all = this.segments.values();
    const discarded = all.reduce((n, s) => n + s.size, 0);
    this.removeAndDeleteSegments(all);
    this.segments.add(this.createSegment(newOffset));
    this.nextOffset = newOffset;
    this.setRecoveryPoint(newOffset);
    this.unflushedMessages = 0;
    return discarded;
  }

  /**
   * Takes segments out of the log at once and renames their files `*.deleted`; the files go
   * `file.delete.delay.ms` later, so a reader that still holds them is not cut off (Kafka's
   * asynchronous deletion).
   */
  removeAndDeleteSegments(segments: LogSegment[]): void {
    for (const s of segments) {
      this.segments.remove(s.baseOffset);
      this.scheduleDeletion(s);
    }
  }

  /**
   * Kafka's LocalLog.replaceSegments, crash-safe in two phases: each new segment (written and
   * flushed as `.cleaned`) is renamed `.swap` and takes its place in the map; the old segments
   * still in the log leave it and are renamed `.deleted` (removed after file.delete.delay.ms);
   * then the `.swap` suffix goes. A crash in between is completed by the log loader: a `.swap`
   * file replaces the segments in its offset range.
   */
  replaceSegments(newSegments: LogSegment[], oldSegments: LogSegment[]): void {
    const sortedNew = [...newSegments].sort((a, b) => (a.baseOffset < b.baseOffset ? -1 : 1));
    const sortedOld = oldSegments
      .filter((s) => this.segments.get(s.baseOffset) === s)
      .sort((a, b) => (a.baseOffset < b.baseOffset ? -1 : 1));
    for (const s of [...sortedNew].reverse()) {
      s.changeFileSuffix(SWAP_FILE_SUFFIX);
      this.segments.remove(s.baseOffset);
      this.segments.add(s);
    }
    this.ctx.fs.syncDir(this.dir);
    for (const s of sortedOld) {
      if (s.baseOffset !== sortedNew[0]!.baseOffset) this.segments.remove(s.baseOffset);
      this.scheduleDeletion(s);
    }
    for (const s of sortedNew) s.changeFileSuffix('');
    this.ctx.fs.syncDir(this.dir);
  }

  /** Renames the segment's files `*.deleted` now and removes them after file.delete.delay.ms. */
  private scheduleDeletion(s: LogSegment): void {
    const bytes = s.size;
    s.closeHandles();
    s.changeFileSuffix(DELETED_FILE_SUFFIX);
    this.pendingDeletionBytes += bytes;
    const task = (): void => {
      this.pendingDeletions.delete(cancel);
      this.pendingDeletionBytes -= bytes;
      s.deleteFiles();
      this.ctx.logger.info(
        `${this.name}: deleted log segment ${s.baseOffset} (${s.filePaths().length} files)`,
      );
    };
    const cancel = this.ctx.scheduler.schedule(
      `delete-${this.name}-${s.baseOffset}`,
      this.config.fileDeleteDelayMs,
      task,
    );
    this.pendingDeletions.add(cancel);
  }

  /** Flushes when the policy says so (flush.messages, flush.ms); called after each append. */
  maybeFlush(): void {
    // The default policy (both infinite) never flushes: no clock read per append for it.
    const { flushMessages, flushMs } = this.config;
    const due =
      this.unflushedMessages >= flushMessages ||
      (flushMs !== Number.POSITIVE_INFINITY && this.ctx.clock.nowMs() - this.lastFlushedMs >= flushMs);
    if (due) this.flush(this.nextOffset);
  }

  /** fsyncs every segment that may hold offsets in [recovery point, `upTo`) and advances the recovery point. */
  flush(upTo: bigint = this.nextOffset): void {
    if (upTo <= this.recoveryPointOffset) return;
    this.beforeFlush();
    for (const s of this.segments.range(this.recoveryPointOffset, upTo)) s.flush();
    this.ctx.fs.syncDir(this.dir);
    this.setRecoveryPoint(upTo > this.nextOffset ? this.nextOffset : upTo);
    this.lastFlushedMs = this.ctx.clock.nowMs();
    if (upTo >= this.nextOffset) this.unflushedMessages = 0;
  }

  get lastFlushTimeMs(): number {
    return this.lastFlushedMs;
  }

  /** A clean close: final index entries, indexes trimmed, files closed. */
  close(): void {
    for (const s of this.segments.values()) s.close();
  }

  /** Bytes of removed segments still on disk, waiting for `file.delete.delay.ms`. */
  get bytesAwaitingDeletion(): number {
    return this.pendingDeletionBytes;
  }

  /** Runs the pending deletions now (a clean shutdown does not wait for the delay). */
  deletePendingNow(): void {
    for (const cancel of [...this.pendingDeletions]) cancel();
    this.pendingDeletions.clear();
    this.pendingDeletionBytes = 0;
    for (const f of this.ctx.fs.list(this.dir)) {
      if (f.endsWith(DELETED_FILE_SUFFIX)) this.ctx.fs.unlink(path.join(this.dir, f));
    }
  }

  /** Closes file handles without trimming or flushing: what a process kill leaves (for tests). */
  abandon(): void {
    for (const cancel of [...this.pendingDeletions]) cancel();
    this.pendingDeletions.clear();
    this.pendingDeletionBytes = 0;
    for (const s of this.segments.values()) s.closeHandles();
  }
}

/**
 * How much before segment.ms the segment at `baseOffset` rolls: Kafka's randomSegmentJitter, a
 * value in [0, min(segment.jitter.ms, segment.ms)) so that the partitions of a broker, created
 * together, do not all roll at once. Kafka draws it at random when the segment opens; here it is
 * a hash of the log and the segment's base offset — as well spread across partitions, the same
 * after a restart, and replayable in the simulation without a random source.
 */
export function rollJitterMs(logName: string, baseOffset: bigint, config: LogConfig): number {
  const bound = Math.min(config.segmentJitterMs, config.segmentMs);
  if (!(bound > 0) || bound === Number.POSITIVE_INFINITY) return 0;
  // FNV-1a over the log's name and the base offset.
  let h = 0x811c9dc5;
  const text = `${logName}@${baseOffset}`;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h & 0x7fffffff) % bound;
}
