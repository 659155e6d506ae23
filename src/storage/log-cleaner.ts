/**
 * The log cleaner (Kafka's LogCleaner, its CleanerThreads and LogCleanerManager): every
 * log.cleaner.backoff.ms while idle, each of log.cleaner.threads cleaners takes the dirtiest
 * compacted log — the highest dirty ratio above min.cleanable.dirty.ratio, or any dirty bytes past
 * max.compaction.lag.ms — cleans it (cleaner.ts) and records the next dirty offset in the log
 * dir's `cleaner-offset-checkpoint`. Node has one event loop, so a "thread" here is a cleaning run
 * in bounded slices: at most SLICE_BYTES read per turn of the event loop, then the next slice is
 * scheduled (later, when log.cleaner.io.max.bytes.per.second says so). Several threads interleave
 * their slices; each has its own offset map of log.cleaner.dedupe.buffer.size / threads bytes.
 * Owned by the LogManager, which asks it before deleting segments of a log it is cleaning.
 */
import * as path from 'node:path';
import { topicPartitionKey } from '../common/topic-partition.js';
import {
  CheckpointFile,
  CLEANER_OFFSET_CHECKPOINT,
  type PartitionOffset,
  partitionOffsetCodec,
} from './checkpoint.js';
import { cleanableOffsets, type LogToClean, logToClean, maxCompactionDelay } from './cleanable.js';
import { Cleaner, type CleanerStats, CleaningAbortedError } from './cleaner.js';
import type { StorageContext } from './local-log.js';
import type { Log } from './log.js';
import { OffsetMap } from './offset-map.js';

export { CLEANER_OFFSET_CHECKPOINT };
/** Bytes one slice may read and write before it gives the event loop back. */
export const SLICE_BYTES = 1024 * 1024;
/**
 * Milliseconds one slice may take (by the injected clock) before it gives the event loop back,
 * whatever it has read: a slice ends within one batch of this. Under a simulated clock, where
 * time stands still inside a slice, only SLICE_BYTES bounds it.
 */
export const SLICE_MS = 10;
/** Kafka's Throttler checks the rate over periods of this length. */
const THROTTLE_CHECK_INTERVAL_MS = 300;

/** The log.cleaner.* broker configs, with Kafka's defaults in DEFAULT_CLEANER_CONFIG. */
export interface CleanerConfig {
  /** log.cleaner.enable */
  readonly enable: boolean;
  /** log.cleaner.threads */
  readonly numThreads: number;
  /** log.cleaner.dedupe.buffer.size: the offset maps' memory, over all threads. */
  readonly dedupeBufferSize: number;
  /** log.cleaner.io.buffer.load.factor: how full an offset map may get. */
  readonly dedupeBufferLoadFactor: number;
  /** log.cleaner.io.buffer.size: read buffers over all threads (each thread reads in half its share). */
  readonly ioBufferSize: number;
  /** log.cleaner.io.max.bytes.per.second (Infinity: unthrottled) */
  readonly maxIoBytesPerSecond: number;
  /** log.cleaner.backoff.ms: the pause when no log needs cleaning. */
  readonly backoffMs: number;
}

export const DEFAULT_CLEANER_CONFIG: CleanerConfig = Object.freeze({
  enable: true,
  numThreads: 1,
  dedupeBufferSize: 128 * 1024 * 1024,
  dedupeBufferLoadFactor: 0.9,
  ioBufferSize: 512 * 1024,
  maxIoBytesPerSecond: Number.POSITIVE_INFINITY,
  backoffMs: 15_000,
});

/** A live log and the dir it is in, as the LogManager lists them. */
export interface CleanableLog {
  readonly log: Log;
  readonly logDir: string;
}

/** Kafka's Throttler, shared by the threads: how long to wait after `bytes` more were done. */
class Throttler {
  private periodStartMs: number;
  private observed = 0;
  constructor(
    private readonly nowMs: () => number,
    private readonly rate: () => number,
  ) {
    this.periodStartMs = nowMs();
  }

  maybeThrottle(bytes: number): number {
    const desired = this.rate();
    if (!Number.isFinite(desired)) return 0;
    this.observed += bytes;
    const now = this.nowMs();
    const elapsed = now - this.periodStartMs;
    if (elapsed < THROTTLE_CHECK_INTERVAL_MS || this.observed === 0) return 0;
    const sleepMs = Math.round((this.observed * 1000) / desired - elapsed);
    this.periodStartMs = now + Math.max(sleepMs, 0);
    this.observed = 0;
    return Math.max(sleepMs, 0);
  }
}

interface Run {
  readonly ltc: LogToClean;
  readonly logDir: string;
  readonly steps: Generator<number, { endOffset: bigint; stats: CleanerStats }>;
  maxSliceMs: number;
}

/** One cleaner "thread": its offset map, the run it is on and what its gauges read. */
class CleanerThread implements CleanerThreadState {
  run: Run | null = null;
  cancel: (() => void) | null = null;
  lastStats: CleanerStats | null = null;
  lastMaxCompactionDelayMs = 0;
  dead = false;
  constructor(readonly cleaner: Cleaner) {}
}

/** What the cleaner's gauges read of one thread (Kafka's CleanerThread lastStats, lastPreCleanStats). */
export interface CleanerThreadState {
  /** The stats of its latest finished cleaning, null before the first. */
  readonly lastStats: CleanerStats | null;
  /** The largest max.compaction.lag.ms overrun seen when it picked its latest log (Kafka's PreCleanStats). */
  readonly lastMaxCompactionDelayMs: number;
  /** It stopped on an unexpected error (Kafka's isThreadFailed): it cleans nothing until restarted. */
  readonly dead: boolean;
}

/** The uncleanable partitions of one log dir and their dirty bytes (Kafka's uncleanable-* gauges). */
export interface Uncleanable {
  readonly partitions: number;
  readonly bytes: number;
}

export class LogCleaner {
  private readonly threads: CleanerThread[] = [];
  private readonly inProgress = new Set<string>();
  private readonly uncleanable = new Set<string>();
  /** cleaner-offset-checkpoint per log dir, as last written. */
  private readonly checkpoints = new Map<string, Map<string, PartitionOffset>>();
  private readonly throttler: Throttler;
  private running = false;
  /** The thread and buffer settings the threads were made with (a change restarts them). */
  private shape = '';
  /** The cleanable ratio of the dirtiest compacted log at the latest look (Kafka's dirtiestLogCleanableRatio). */
  private dirtiestRatio = 0;
  /** When a thread last looked for a log to clean (Kafka's timeOfLastRun). */
  private lastRunMs: number;
  /** Every finished cleaning's stats, newest last (at most 16), for tests and the bench. */
  readonly history: { name: string; stats: CleanerStats; maxSliceMs: number }[] = [];

  constructor(
    private readonly config: () => CleanerConfig,
    private readonly ctx: StorageContext,
    private readonly logs: () => Iterable<CleanableLog>,
  ) {
    this.throttler = new Throttler(
      () => ctx.clock.nowMs(),
      () => this.config().maxIoBytesPerSecond,
    );
    this.lastRunMs = ctx.clock.nowMs();
  }

  /** The running threads' states, for the gauges. */
  threadStates(): readonly CleanerThreadState[] {
    return this.threads;
  }

  /** The cleanable ratio of the dirtiest compacted log when a thread last looked, 0 if none was dirty. */
  get dirtiestCleanableRatio(): number {
    return this.dirtiestRatio;
  }

  /** When a thread last looked for a log to clean (the injected clock's ms). */
  get timeOfLastRunMs(): number {
    return this.lastRunMs;
  }

  /**
   * The partitions of `logDir` marked uncleanable and their cleanable bytes now (Kafka's
   * LogCleanerManager uncleanable-partitions-count and uncleanable-bytes).
   */
  uncleanableIn(logDir: string): Uncleanable {
    let partitions = 0;
    let bytes = 0;
    const now = this.ctx.clock.nowMs();
    for (const l of this.logs()) {
      if (l.logDir !== logDir || !this.uncleanable.has(keyOf(l.log))) continue;
      partitions++;
      const offsets = cleanableOffsets(l.log, this.checkpointOf(logDir, l.log), now);
      bytes += logToClean(
        l.log,
        offsets.firstDirtyOffset,
        offsets.firstUncleanableDirtyOffset,
        false,
      ).cleanableBytes;
    }
    return { partitions, bytes };
  }

  startup(): void {
    const c = this.config();
    this.running = true;
    this.shape = shapeOf(c);
    if (!c.enable) return;
    for (let id = 0; id < c.numThreads; id++) {
      const map = new OffsetMap(Math.min(Math.floor(c.dedupeBufferSize / c.numThreads), 2 ** 31 - 1));
      const ioBytes = Math.max(Math.floor(c.ioBufferSize / c.numThreads / 2), 4096);
      const thread = new CleanerThread(new Cleaner(id, map, ioBytes, c.dedupeBufferLoadFactor));
      this.threads.push(thread);
      this.schedule(thread, 0);
    }
    this.ctx.logger.info(`log cleaner started with ${c.numThreads} threads`);
  }

  /** Whether `log` is being cleaned now (the LogManager leaves its segments alone meanwhile). */
  isCleaning(log: Log): boolean {
    return this.inProgress.has(topicPartitionKey(log.topic, log.partition));
  }

  /** The cleaner checkpoint of a partition in `logDir`, if any. */
  checkpointOf(logDir: string, log: Log): bigint | undefined {
    return this.checkpointMap(logDir).get(topicPartitionKey(log.topic, log.partition))?.offset;
  }

  /** Stops every thread; a cleaning in progress is abandoned and its `.cleaned` files deleted. */
  shutdown(): void {
    this.running = false;
    for (const t of this.threads) {
      t.cancel?.();
      t.cancel = null;
      if (t.run) {
        try {
          t.run.steps.throw(new CleaningAbortedError('shutting down'));
        } catch {
          // the run ends here either way
        }
        this.inProgress.delete(keyOf(t.run.ltc.log));
        t.run = null;
      }
    }
    this.threads.length = 0;
  }

  /** Stops scheduling without touching any file: what a kill leaves (for tests). */
  abandon(): void {
    this.running = false;
    for (const t of this.threads) t.cancel?.();
    this.threads.length = 0;
  }

  private schedule(thread: CleanerThread, delayMs: number): void {
    if (!this.running) return;
    thread.cancel = this.ctx.scheduler.schedule(`log-cleaner-${thread.cleaner.id}`, delayMs, () => {
      thread.cancel = null;
      try {
        this.work(thread);
      } catch (e) {
        this.die(thread, e);
      }
    });
  }

  /**
   * An error outside a cleaning (Kafka's CleanerThread ending on an exception that is not a
   * LogCleaningException): the thread stops — counted by DeadThreadCount — and the broker goes on.
   */
  private die(thread: CleanerThread, e: unknown): void {
    thread.dead = true;
    if (thread.run !== null) this.inProgress.delete(keyOf(thread.run.ltc.log));
    thread.run = null;
    const message = e instanceof Error ? (e.stack ?? e.message) : String(e);
    this.ctx.logger.warn(
      `log cleaner thread ${thread.cleaner.id} stopped on an unexpected error: ${message}`,
    );
    this.watchWhileDead(thread);
  }

  /** A dead thread cleans nothing, but a reconfiguration still restarts it, as in Kafka. */
  private watchWhileDead(thread: CleanerThread): void {
    if (!this.running) return;
    const id = thread.cleaner.id;
    thread.cancel = this.ctx.scheduler.schedule(`log-cleaner-${id}-dead`, this.config().backoffMs, () => {
      thread.cancel = null;
      if (!this.restartIfReconfigured()) this.watchWhileDead(thread);
    });
  }

  /**
   * As Kafka's LogCleaner.reconfigure: a dynamic change of the threads or buffers restarts every
   * thread with it, dead ones too (a cleaning in progress is abandoned and starts again on the new
   * maps). True when it did.
   */
  private restartIfReconfigured(): boolean {
    const shape = shapeOf(this.config());
    if (shape === this.shape) return false;
    this.ctx.logger.info(`log cleaner reconfigured (${this.shape} → ${shape}): restarting its threads`);
    this.shutdown();
    this.startup();
    return true;
  }

  /** One turn of a thread: start a run if idle, then one slice of it. */
  private work(thread: CleanerThread): void {
    if (this.restartIfReconfigured()) return;
    if (thread.run === null) {
      const found = this.grabFilthiestCompactedLog(thread);
      if (found === null) {
        this.schedule(thread, this.config().backoffMs);
        return;
      }
      thread.run = {
        ...found,
        steps: thread.cleaner.clean(found.ltc, () => this.ctx.clock.nowMs()),
        maxSliceMs: 0,
      };
    }
    this.slice(thread, thread.run);
  }

  private slice(thread: CleanerThread, run: Run): void {
    const started = this.ctx.clock.nowMs();
    let bytes = 0;
    let wait = 0;
    try {
      // Kafka's checkDone, once per slice: a slice runs to its end without yielding the event
      // loop, so nothing can delete the log between two of its steps.
      if (!this.isLive(run.ltc.log)) {
        run.steps.throw(new CleaningAbortedError(`${run.ltc.log.name}: log no longer here`));
      }
      while (bytes < SLICE_BYTES && wait === 0 && this.ctx.clock.nowMs() - started < SLICE_MS) {
        const step = run.steps.next();
        if (step.done) {
          run.maxSliceMs = Math.max(run.maxSliceMs, this.ctx.clock.nowMs() - started);
          this.finish(thread, run, step.value.endOffset, step.value.stats);
          this.schedule(thread, 0);
          return;
        }
        bytes += step.value;
        wait = this.throttler.maybeThrottle(step.value);
      }
    } catch (e) {
      this.fail(thread, run, e);
      this.schedule(thread, this.config().backoffMs);
      return;
    }
    run.maxSliceMs = Math.max(run.maxSliceMs, this.ctx.clock.nowMs() - started);
    this.schedule(thread, wait);
  }

  private finish(thread: CleanerThread, run: Run, endOffset: bigint, stats: CleanerStats): void {
    thread.run = null;
    thread.lastStats = stats;
    const log = run.ltc.log;
    this.inProgress.delete(keyOf(log));
    this.updateCheckpoint(run.logDir, log, endOffset);
    this.history.push({ name: log.name, stats, maxSliceMs: run.maxSliceMs });
    if (this.history.length > 16) this.history.shift();
    this.logStats(thread.cleaner.id, log.name, run, endOffset, stats);
  }

  private fail(thread: CleanerThread, run: Run, e: unknown): void {
    thread.run = null;
    const log = run.ltc.log;
    this.inProgress.delete(keyOf(log));
    if (e instanceof CleaningAbortedError || !this.isLive(log)) {
      this.ctx.logger.info(`${log.name}: cleaning aborted: ${e instanceof Error ? e.message : String(e)}`);
      return;
    }
    this.markUncleanable(log, e);
  }

  /** Kafka's LogCleaningException: the partition is marked uncleanable until the broker restarts. */
  private markUncleanable(log: Log, e: unknown): void {
    this.uncleanable.add(keyOf(log));
    const message = e instanceof Error ? (e.stack ?? e.message) : String(e);
    this.ctx.logger.warn(
      `Unexpected exception thrown when cleaning log ${log.name}. Marking its partition (${log.topic}-${log.partition}) as uncleanable: ${message}`,
    );
  }

  private isLive(log: Log): boolean {
    for (const l of this.logs()) if (l.log === log) return true;
    return false;
  }

  /**
   * Kafka's maintainUncleanablePartitions, before each look for a log: a partition whose log was
   * deleted is no longer uncleanable (a topic created again under its name is cleaned as any).
   */
  private maintainUncleanablePartitions(): void {
    if (this.uncleanable.size === 0) return;
    const live = new Set<string>();
    for (const { log } of this.logs()) live.add(keyOf(log));
    for (const key of this.uncleanable) if (!live.has(key)) this.uncleanable.delete(key);
  }

  /** Kafka's grabFilthiestCompactedLog, noting what the gauges read. */
  private grabFilthiestCompactedLog(thread: CleanerThread): { ltc: LogToClean; logDir: string } | null {
    const now = this.ctx.clock.nowMs();
    this.lastRunMs = now;
    let best: { ltc: LogToClean; logDir: string } | null = null;
    let dirtiest = 0;
    let maxDelayMs = 0;
    this.maintainUncleanablePartitions();
    for (const { log, logDir } of this.logs()) {
      const key = keyOf(log);
      if (!log.config.compact || this.inProgress.has(key) || this.uncleanable.has(key)) continue;
      let ltc: LogToClean;
      try {
        const offsets = cleanableOffsets(log, this.checkpointOf(logDir, log), now);
        if (offsets.forceUpdateCheckpoint) this.updateCheckpoint(logDir, log, offsets.firstDirtyOffset);
        const delayMs = maxCompactionDelay(log, offsets.firstDirtyOffset, now);
        if (delayMs > maxDelayMs) maxDelayMs = delayMs;
        ltc = logToClean(log, offsets.firstDirtyOffset, offsets.firstUncleanableDirtyOffset, delayMs > 0);
      } catch (e) {
        // As Kafka: a log whose cleaning stats cannot be computed is a LogCleaningException.
        this.markUncleanable(log, e);
        continue;
      }
      if (ltc.totalBytes <= 0) continue;
      if (ltc.cleanableRatio > dirtiest) dirtiest = ltc.cleanableRatio;
      const cleanable =
        (ltc.needCompactionNow && ltc.cleanableBytes > 0) ||
        ltc.cleanableRatio > log.config.minCleanableDirtyRatio;
      if (cleanable && (best === null || ltc.cleanableRatio > best.ltc.cleanableRatio))
        best = { ltc, logDir };
    }
    this.dirtiestRatio = dirtiest;
    if (best !== null) {
      this.inProgress.add(keyOf(best.ltc.log));
      // As Kafka, the pre-clean stats a thread reports are those of the look that found its log.
      thread.lastMaxCompactionDelayMs = maxDelayMs;
    }
    return best;
  }

  private checkpointFile(logDir: string): CheckpointFile<PartitionOffset> {
    return new CheckpointFile(
      this.ctx.fs,
      path.join(logDir, CLEANER_OFFSET_CHECKPOINT),
      partitionOffsetCodec,
    );
  }

  private checkpointMap(logDir: string): Map<string, PartitionOffset> {
    let m = this.checkpoints.get(logDir);
    if (m === undefined) {
      m = new Map();
      try {
        for (const e of this.checkpointFile(logDir).read()) m.set(topicPartitionKey(e.topic, e.partition), e);
      } catch (e) {
        // Kafka resets a corrupt cleaner checkpoint: everything is dirty again, nothing is lost.
        this.ctx.logger.warn(
          `${logDir}: ${CLEANER_OFFSET_CHECKPOINT} unreadable, starting over: ${String(e)}`,
        );
      }
      this.checkpoints.set(logDir, m);
    }
    return m;
  }

  /** Kafka's updateCheckpoints: the dir's entries for live logs, with this one set. */
  private updateCheckpoint(logDir: string, log: Log, offset: bigint): void {
    const m = this.checkpointMap(logDir);
    m.set(keyOf(log), { topic: log.topic, partition: log.partition, offset });
    const live = new Set<string>();
    for (const l of this.logs()) if (l.logDir === logDir) live.add(keyOf(l.log));
    for (const k of [...m.keys()]) if (!live.has(k)) m.delete(k);
    this.checkpointFile(logDir).write([...m.values()]);
  }

  /** One line per cleaning: Kafka's recordStats, on one line. */
  private logStats(id: number, name: string, run: Run, endOffset: bigint, s: CleanerStats): void {
    const mb = (b: number) => (b / (1024 * 1024)).toFixed(1);
    const secs = Math.max(s.endMs - s.startMs, 0) / 1000;
    const indexSecs = Math.max(s.mapCompleteMs - s.startMs, 0) / 1000;
    const reduction = s.bytesRead === 0 ? 0 : 100 * (1 - s.bytesWritten / s.bytesRead);
    const fewer = s.messagesRead === 0 ? 0 : 100 * (1 - s.messagesWritten / s.messagesRead);
    const rate = secs > 0 ? `${mb(s.bytesRead / secs)} MB/sec` : 'instant';
    this.ctx.logger.info(
      `Log cleaner thread ${id} cleaned log ${name} (dirty section = [${run.ltc.firstDirtyOffset}, ${endOffset}]): ${mb(s.bytesRead)} MB of log processed in ${secs.toFixed(1)} seconds (${rate}); indexed ${mb(s.mapBytesRead)} MB in ${indexSecs.toFixed(1)} seconds; buffer utilization ${(100 * s.bufferUtilization).toFixed(1)}%; start size ${mb(s.bytesRead)} MB (${s.messagesRead} messages), end size ${mb(s.bytesWritten)} MB (${s.messagesWritten} messages); ${reduction.toFixed(1)}% size reduction (${fewer.toFixed(1)}% fewer messages); dirty ratio was ${run.ltc.cleanableRatio.toFixed(3)}; longest slice ${run.maxSliceMs} ms`,
      {
        event: 'log-cleaning',
        partitionName: name,
        firstDirtyOffset: run.ltc.firstDirtyOffset,
        endOffset,
        bytesRead: s.bytesRead,
        bytesWritten: s.bytesWritten,
        messagesRead: s.messagesRead,
        messagesWritten: s.messagesWritten,
        durationMs: s.endMs - s.startMs,
        dirtyRatio: run.ltc.cleanableRatio,
      },
    );
    if (s.invalidMessagesRead > 0) {
      this.ctx.logger.warn(`${name}: found ${s.invalidMessagesRead} invalid messages during compaction`);
    }
  }
}

function keyOf(log: Log): string {
  return topicPartitionKey(log.topic, log.partition);
}

/** The settings a cleaner thread is built with: log.cleaner.threads and the buffer sizes. */
function shapeOf(c: CleanerConfig): string {
  return `threads ${c.numThreads}, dedupe buffer ${c.dedupeBufferSize} (load factor ${c.dedupeBufferLoadFactor}), io buffer ${c.ioBufferSize}`;
}
