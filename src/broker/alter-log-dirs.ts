/**
 * Moves replicas between the log dirs of this broker (Kafka's ReplicaAlterLogDirsManager and its
 * thread): AlterReplicaLogDirs creates a future log `<topic>-<p>.<id>-future` in the target dir;
 * this copies the current log's batches into it, one partition at a time, at most
 * `replica.alter.log.dirs.io.max.bytes.per.second` (a budget of its own, apart from the replication
 * throttles), and swaps it in once its LEO meets the current log's — in the same synchronous step,
 * so no append can slip in between. The future log follows its current log: truncated when the
 * current one is (a follower that diverged from its leader), restarted when the current log start
 * passes it.
 *
 * Owned by the Broker; runs on its scheduler; reads the rate on every step, so a change applies at
 * once. The rate meter is the replication throttle's token bucket (src/replication/quota.ts): it
 * starts empty and holds one window of the rate, so a move passes no burst.
 */
import * as path from 'node:path';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { TokenBucket } from '../replication/quota.js';
import type { Log } from '../storage/log.js';
import type { LogManager } from '../storage/log-manager.js';

export interface AlterLogDirsContext {
  readonly logManager: LogManager;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly logger: Logger;
  /** replica.alter.log.dirs.io.max.bytes.per.second now; null: unlimited. */
  readonly rateBytesPerSec: () => number | null;
  /** Bytes copied per step at most (replica.fetch.max.bytes, as Kafka's thread fetches). */
  readonly chunkBytes: () => number;
  /** The quota window the bucket holds (replication.quota.window.size.seconds, in ms). */
  readonly windowMs: number;
}

/** One step's pause when nothing can be copied yet: the current log has nothing new. */
const IDLE_POLL_MS = 50;

export class AlterLogDirsManager {
  /** Partition keys with a move in progress, oldest first: only the first is copied. */
  private readonly queue: { topic: string; partition: number }[] = [];
  private bucket: TokenBucket | null = null;
  private cancelTick: (() => void) | null = null;
  private running = false;
  /** Bytes copied since start, for tools and tests. */
  copiedBytes = 0;

  constructor(private readonly ctx: AlterLogDirsContext) {}

  start(): void {
    this.running = true;
    // Moves found at start-up (future logs left by the last run) resume.
    for (const { log } of this.ctx.logManager.allFutureLogs()) {
      this.queue.push({ topic: log.topic, partition: log.partition });
    }
    this.wake(0);
  }

  shutdown(): void {
    this.running = false;
    this.cancelTick?.();
    this.cancelTick = null;
  }

  /**
   * AlterReplicaLogDirs for one replica: LOG_DIR_NOT_FOUND for a dir that is not one of this
   * broker's, KAFKA_STORAGE_ERROR for one that failed (Kafka's offline dir), REPLICA_NOT_AVAILABLE when no replica is hosted here (yet), else NONE — the move
   * starts, carries on (same target), restarts (another target) or is cancelled (the target is
   * where the log is now).
   */
  alterReplicaLogDir(topic: string, partition: number, logDir: string): number {
    const { logManager } = this.ctx;
    const target = logManager.logDirs.find((d) => path.resolve(d) === path.resolve(logDir));
    if (target === undefined) return ErrorCode.LOG_DIR_NOT_FOUND;
    if (!logManager.liveLogDirs.includes(target)) return ErrorCode.KAFKA_STORAGE_ERROR;
    const current = logManager.getLog(topic, partition);
    if (current === undefined) return ErrorCode.REPLICA_NOT_AVAILABLE;
    const futureDir = logManager.futureLogDirOf(topic, partition);
    if (futureDir === target) return ErrorCode.NONE;
    if (futureDir !== undefined) this.cancel(topic, partition, `its target is now ${target}`);
    if (logManager.logDirOf(topic, partition) === target) return ErrorCode.NONE;
    logManager.createFutureLog(topic, partition, target, current.logStartOffset);
    this.queue.push({ topic, partition });
    this.wake(0);
    return ErrorCode.NONE;
  }

  /**
   * The moves in progress as DescribeLogDirs reports them: the future log's dir, size, and lag
   * behind the current log (its LEO minus the future's — Kafka's offsetLag for a future replica).
   */
  futureReplicas(): {
    topic: string;
    partition: number;
    logDir: string;
    sizeBytes: number;
    offsetLag: bigint;
  }[] {
    const { logManager } = this.ctx;
    return logManager.allFutureLogs().map(({ log, logDir }) => {
      const current = logManager.getLog(log.topic, log.partition);
      const lag = current === undefined ? 0n : current.logEndOffset - log.logEndOffset;
      return {
        topic: log.topic,
        partition: log.partition,
        logDir,
        sizeBytes: log.size,
        offsetLag: lag > 0n ? lag : 0n,
      };
    });
  }

  private cancel(topic: string, partition: number, why: string): void {
    this.ctx.logManager.deleteFutureLog(topic, partition);
    const i = this.queue.findIndex((q) => q.topic === topic && q.partition === partition);
    if (i >= 0) this.queue.splice(i, 1);
    this.ctx.logger.info(`${topic}-${partition}: log dir move cancelled (${why})`);
  }

  private wake(delayMs: number): void {
    if (!this.running || this.queue.length === 0) return;
    this.cancelTick?.();
    this.cancelTick = this.ctx.scheduler.schedule('alter-log-dirs', delayMs, () => {
      this.cancelTick = null;
      this.wake(this.safeStep());
    });
  }

  /** A move that fails (a disk error, say) is dropped with one log line; the broker carries on. */
  private safeStep(): number {
    try {
      return this.step();
    } catch (e) {
      const head = this.queue[0];
      if (head === undefined) return 0;
      this.ctx.logger.warn(
        `${head.topic}-${head.partition}: log dir move failed, its future log is dropped: ${e instanceof Error ? e.message : String(e)}`,
      );
      try {
        this.ctx.logManager.deleteFutureLog(head.topic, head.partition);
      } catch {
        // The directory stays; start-up removes or resumes it.
      }
      this.queue.shift();
      return 0;
    }
  }

  /** Copies one chunk of the first move (or completes it); returns the delay before the next step. */
  private step(): number {
    const head = this.queue[0];
    if (head === undefined) return 0;
    const { logManager } = this.ctx;
    const current = logManager.getLog(head.topic, head.partition);
    const future = logManager.futureLog(head.topic, head.partition);
    if (current === undefined || future === undefined) {
      // The partition left this broker (its future log went with it) or the move was cancelled.
      this.queue.shift();
      if (future !== undefined) logManager.deleteFutureLog(head.topic, head.partition);
      return 0;
    }
    followCurrent(current, future);
    if (future.logEndOffset === current.logEndOffset) {
      logManager.replaceCurrentWithFuture(head.topic, head.partition);
      this.queue.shift();
      return 0;
    }
    const nowMs = this.ctx.clock.nowMs();
    const bucket = this.meter(nowMs);
    let maxBytes = this.ctx.chunkBytes();
    if (bucket !== null) {
      const wait = bucket.msUntil(1, nowMs);
      if (wait > 0) return wait;
      maxBytes = Math.max(1, Math.min(maxBytes, Math.floor(bucket.available(nowMs))));
    }
    const read = current.read(future.logEndOffset, maxBytes, 'log-end', true);
    const whole = wholeBatches(read.records);
    if (whole.length === 0) return IDLE_POLL_MS;
    future.appendAsFollower(whole, { quiet: true });
    bucket?.consume(whole.length, nowMs);
    this.copiedBytes += whole.length;
    return 0;
  }

  /** The alter-log-dirs budget at the current rate (null: unlimited). */
  private meter(nowMs: number): TokenBucket | null {
    const rate = this.ctx.rateBytesPerSec();
    if (rate === null) {
      this.bucket = null;
      return null;
    }
    if (this.bucket === null)
      this.bucket = new TokenBucket(rate, this.ctx.windowMs, nowMs, this.ctx.windowMs);
    else if (this.bucket.rate !== rate) this.bucket.setRate(rate, nowMs);
    return this.bucket;
  }
}

/**
 * Keeps the future log a prefix of the current one: truncated where the current log was truncated
 * (its LEO is past the current one, or its latest epoch ends earlier there), restarted when the
 * current log start has passed its LEO.
 */
function followCurrent(current: Log, future: Log): void {
  if (future.logEndOffset < current.logStartOffset) {
    future.truncateFullyAndStartAt(current.logStartOffset, { quiet: true });
    return;
  }
  const epoch = future.leaderEpochCache.latestEpoch();
  let end = current.logEndOffset;
  if (epoch !== undefined) {
    const e = current.endOffsetForEpoch(epoch);
    if (e.endOffset >= 0n && e.endOffset < end) end = e.endOffset;
  }
  if (future.logEndOffset > end) future.truncateTo(end, { quiet: true });
}

/** The whole batches at the start of `records` (a read may cut the last one). */
export function wholeBatches(records: Buffer): Buffer {
  let pos = 0;
  while (pos + 12 <= records.length) {
    const size = 12 + records.readInt32BE(pos + 8);
    if (size < 12 || pos + size > records.length) break;
    pos += size;
  }
  return records.subarray(0, pos);
}
