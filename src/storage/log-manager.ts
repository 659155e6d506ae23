import * as path from 'node:path';
import { runInSlices, runToEnd } from '../common/slices.js';
import { topicPartitionKey } from '../common/topic-partition.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { KafkaError } from '../protocol/kafka-error.js';
import {
  LOG_START_OFFSET_CHECKPOINT,
  RECOVERY_POINT_CHECKPOINT,
  REPLICATION_OFFSET_CHECKPOINT,
} from './checkpoint.js';
import { LoadProgress } from './load-progress.js';
import type { StorageContext } from './local-log.js';
import { Log } from './log.js';
import { type CleanerConfig, LogCleaner } from './log-cleaner.js';
import type { LogConfig } from './log-config.js';
import { LogDirCheckpoints } from './log-dir-checkpoints.js';
import { isStorageError, normalizeDir } from './log-dir-failure.js';
import { parseFutureDir, parseTopicPartitionDir, type TopicPartition } from './log-dir-names.js';
import { DEFAULT_LOG_MANAGER_CONFIG, type LogManagerConfig } from './log-manager-config.js';

export type { TopicPartition } from './log-dir-names.js';

export const CLEAN_SHUTDOWN_FILE = '.kafka_cleanshutdown';

/**
 * Every log of one broker across its log dirs (Kafka's LogManager): loading at start-up with
 * the checkpoints and the clean-shutdown marker, creating logs in the least loaded dir, periodic
 * flush / checkpoint / retention work through the scheduler, and a clean shutdown that leaves the
 * marker. Owned by the broker; the only writer of the per-dir checkpoint files.
 */
export class LogManager {
  private readonly logs = new Map<string, { log: Log; logDir: string }>();
  /** Bytes of deleted partitions' `-delete` directories not removed yet. */
  private dirDeletionBytes = 0;
  /** Alter-log-dirs copies in progress (`<topic>-<p>.<id>-future`), by partition key. */
  private readonly futureLogs = new Map<string, { log: Log; logDir: string }>();
  private readonly cancels: (() => void)[] = [];
  /** The per-dir offset checkpoint files. */
  private readonly checkpoints: LogDirCheckpoints;
  /** The log-start-offset-checkpoint writes in the background, one at a time (persistLogStartOffsets). */
  private logStartWriter: { running: Promise<void>; again: boolean } | null = null;
  private started = false;
  /** Log dirs that failed (Kafka's offline dirs): no log is created, loaded or checkpointed there. */
  private readonly offlineDirs = new Set<string>();
  /** The log cleaner, when a cleaner config was given (compacted topics need one). */
  readonly cleaner: LogCleaner | null;

  constructor(
    readonly logDirs: readonly string[],
    readonly defaultConfig: LogConfig,
    private readonly ctx: StorageContext,
    private readonly config: LogManagerConfig = DEFAULT_LOG_MANAGER_CONFIG,
    private readonly topicConfig: (topic: string) => LogConfig = () => defaultConfig,
    cleanerConfig?: () => CleanerConfig,
    /** producer.id.expiration.ms, read at every check (a dynamic broker config in Kafka). */
    private readonly producerIdExpirationMs: () => number = () => 86_400_000,
  ) {
    if (logDirs.length === 0) throw new RangeError('at least one log dir is needed');
    this.cleaner = cleanerConfig ? new LogCleaner(cleanerConfig, ctx, () => this.logs.values()) : null;
    this.checkpoints = new LogDirCheckpoints(ctx, (dir) =>
      [...this.logs.values()].filter((e) => e.logDir === dir).map((e) => e.log),
    );
  }

  /** The log dirs still online (Kafka's liveLogDirs). */
  get liveLogDirs(): readonly string[] {
    return this.logDirs.filter((d) => !this.offlineDirs.has(d));
  }

  /**
   * Takes a failed log dir out of service (Kafka's LogManager.handleLogDirFailure): its logs and
   * future logs leave the manager with their files closed, and no checkpoint, flush or new log
   * goes there again until the broker restarts. Returns the partitions whose logs were there.
   * The caller (the ReplicaManager) has already stopped serving them.
   */
  handleLogDirFailure(dir: string): { current: TopicPartition[]; future: TopicPartition[] } {
    const failed = this.logDirs.find((d) => normalizeDir(d) === normalizeDir(dir));
    if (failed === undefined || this.offlineDirs.has(failed)) return { current: [], future: [] };
    this.ctx.logger.warn(`Stopping serving logs in dir ${failed}`);
    this.offlineDirs.add(failed);
    const [current, future] = [removeLogsIn(this.logs, failed), removeLogsIn(this.futureLogs, failed)];
    const names = (tps: TopicPartition[]) =>
      tps.map((tp) => topicPartitionKey(tp.topic, tp.partition)).join(',');
    this.ctx.logger.warn(
      `Logs for partitions ${names(current)} are offline and logs for future partitions ${names(future)} are offline due to failure on log directory ${failed}`,
    );
    return { current, future };
  }

  /** Loads every partition directory in one go (the event loop waits), then starts the periodic tasks. */
  startup(): void {
    runToEnd(this.loadLogs());
    this.startPeriodicTasks();
  }

  /**
   * startup() for a broker whose session must live while it loads: the loading gives the event
   * loop a turn whenever `sliceMs` of it have passed, between two logs, so heartbeats go out and
   * their answers come in however many logs there are. Kafka loads logs on their own threads
   * while its lifecycle manager heartbeats; here one log is the unit.
   */
  async startupInSlices(sliceMs: number, yieldTurn?: () => Promise<void>): Promise<void> {
    await runInSlices(this.loadLogs(), this.ctx.clock, sliceMs, yieldTurn);
    this.startPeriodicTasks();
  }

  /** Every log dir's logs, then the future logs; yields after each log loaded. */
  private *loadLogs(): Generator<void, void, undefined> {
    if (this.started) throw new Error('log manager already started');
    this.started = true;
    const futures: { dir: string; name: string; hadCleanShutdown: boolean }[] = [];
    for (const dir of this.logDirs) {
      try {
        futures.push(...(yield* this.loadLogDir(dir)));
      } catch (e) {
        // Kafka's "Error while loading log dir": the dir is offline from the start (the failure
        // channel has it), the others load.
        if (!isStorageError(e)) throw e;
        this.offlineDirs.add(dir);
        removeLogsIn(this.logs, dir);
        this.ctx.logger.warn(`Error while loading log dir ${dir}: ${e.message}`);
      }
    }
    for (const f of futures) this.loadFutureLog(f.dir, f.name, f.hadCleanShutdown);
  }

  private startPeriodicTasks(): void {
    this.schedulePeriodic('flush-logs', this.config.flushCheckIntervalMs, () => {
      for (const { log } of this.logs.values()) log.flushIfDue();
    });
    // Recovery points and HWs in the background where the file system can: a stale one only costs
    // work (recovery from an earlier point, an HW learned again from the leader). Log start
    // offsets stay synchronous: an older one written late would bring deleted records back.
    this.schedulePeriodic('checkpoint-recovery-points', this.config.recoveryPointCheckpointIntervalMs, () =>
      this.checkpoints.writePeriodic(this.liveLogDirs, RECOVERY_POINT_CHECKPOINT, (log) => log.recoveryPoint),
    );
    this.schedulePeriodic(
      'checkpoint-log-start-offsets',
      this.config.logStartOffsetCheckpointIntervalMs,
      () => void this.persistLogStartOffsets(),
    );
    this.schedulePeriodic('checkpoint-high-watermarks', this.config.highWatermarkCheckpointIntervalMs, () =>
      this.checkpoints.writePeriodic(
        this.liveLogDirs,
        REPLICATION_OFFSET_CHECKPOINT,
        (log) => log.highWatermark,
      ),
    );
    this.schedulePeriodic('retention', this.config.retentionCheckIntervalMs, () => this.runRetention());
    this.schedulePeriodic('producer-id-expiration', this.config.producerIdExpirationCheckIntervalMs, () => {
      const nowMs = this.ctx.clock.nowMs();
      const expirationMs = this.producerIdExpirationMs();
      for (const { log } of this.logs.values()) log.producerState.removeExpiredProducers(nowMs, expirationMs);
    });
    this.cleaner?.startup();
  }

  private *loadLogDir(
    dir: string,
  ): Generator<void, { dir: string; name: string; hadCleanShutdown: boolean }[], undefined> {
    const { fs, logger, clock } = this.ctx;
    fs.mkdirp(dir);
    const marker = path.join(dir, CLEAN_SHUTDOWN_FILE);
    const hadCleanShutdown = fs.exists(marker);
    const recoveryPoints = this.checkpoints.read(dir, RECOVERY_POINT_CHECKPOINT);
    const logStartOffsets = this.checkpoints.read(dir, LOG_START_OFFSET_CHECKPOINT);
    const highWatermarks = this.checkpoints.read(dir, REPLICATION_OFFSET_CHECKPOINT);
    const startMs = clock.nowMs();
    let loaded = 0;
    const futures: { dir: string; name: string; hadCleanShutdown: boolean }[] = [];
    const toLoad: { full: string; tp: TopicPartition }[] = [];
    for (const name of fs.list(dir)) {
      const full = path.join(dir, name);
      if (parseFutureDir(name) !== null && fs.isDirectory(full)) {
        futures.push({ dir, name, hadCleanShutdown });
        continue;
      }
      if (name.endsWith('-delete') && fs.isDirectory(full)) {
        this.removeDir(full);
        logger.info(`removed ${full}, left over from a deletion`);
        continue;
      }
      const tp = parseTopicPartitionDir(name);
      if (tp && fs.isDirectory(full)) toLoad.push({ full, tp });
    }
    const progress = new LoadProgress(logger, clock, dir, toLoad.length, !hadCleanShutdown);
    for (const { full, tp } of toLoad) {
      const key = topicPartitionKey(tp.topic, tp.partition);
      const logStartMs = clock.nowMs();
      if (this.logs.has(key))
        throw new Error(`duplicate log directories for ${key}: ${this.logs.get(key)!.logDir} and ${dir}`);
      const log = Log.open({
        dir: full,
        topic: tp.topic,
        partition: tp.partition,
        config: this.topicConfig(tp.topic),
        ctx: this.ctx,
        hadCleanShutdown,
        recoveryPoint: recoveryPoints.get(key) ?? 0n,
        recoveryPointFromCheckpoint: true,
        logStartOffset: logStartOffsets.get(key) ?? 0n,
      });
      const hw = highWatermarks.get(key);
      if (hw !== undefined) log.updateHighWatermark(hw);
      this.logs.set(key, { log: this.watch(log), logDir: dir });
      loaded++;
      progress.loaded(log, clock.nowMs() - logStartMs);
      yield;
    }
    for (const key of new Set([...recoveryPoints.keys(), ...logStartOffsets.keys()]))
      if (this.logs.get(key)?.logDir !== dir) this.checkpoints.logGone(dir, key);
    // From here on a crash must be detected as one.
    if (hadCleanShutdown) fs.unlink(marker);
    logger.info(
      `loaded ${loaded} logs in ${dir} in ${clock.nowMs() - startMs} ms (${hadCleanShutdown ? 'clean shutdown' : 'no clean-shutdown marker: recovered from the recovery points'})`,
    );
    return futures;
  }

  /**
   * A `-future` directory left by a move that was under way: loaded again so the move resumes
   * (Kafka does the same). One without a current log is a move that stopped between its two
   * renames (current out of the way, future not yet in place): it has every offset, so it becomes
   * the current log.
   */
  private loadFutureLog(dir: string, name: string, hadCleanShutdown: boolean): void {
    const tp = parseFutureDir(name)!;
    const key = topicPartitionKey(tp.topic, tp.partition);
    const full = path.join(dir, name);
    const open = (logDir: string) =>
      Log.open({
        dir: logDir,
        topic: tp.topic,
        partition: tp.partition,
        config: this.topicConfig(tp.topic),
        ctx: this.ctx,
        hadCleanShutdown,
      });
    if (this.futureLogs.has(key)) {
      this.discardDir(full, key);
      return;
    }
    if (!this.logs.has(key)) {
      const final = path.join(dir, key);
      this.checkpoints.beforeLogIn(dir, key);
      this.ctx.fs.rename(full, final);
      this.ctx.fs.syncDir(dir);
      this.logs.set(key, { log: this.watch(open(final)), logDir: dir });
      this.ctx.logger.info(`${key}: the future log in ${dir} had no current log; it is now the current log`);
      return;
    }
    this.futureLogs.set(key, { log: open(full), logDir: dir });
    this.ctx.logger.info(`${key}: loaded its future log in ${dir} (a log dir move resumes)`);
  }

  private schedulePeriodic(name: string, intervalMs: number, task: () => void): void {
    if (!Number.isFinite(intervalMs)) return;
    // Scheduled first: a run that meets a failed log dir ends there (storageTaskScheduler).
    const run = (): void => {
      this.cancels.push(this.ctx.scheduler.schedule(name, intervalMs, run));
      task();
    };
    this.cancels.push(this.ctx.scheduler.schedule(name, intervalMs, run));
  }

  getLog(topic: string, partition: number): Log | undefined {
    return this.logs.get(topicPartitionKey(topic, partition))?.log;
  }

  allLogs(): Log[] {
    return [...this.logs.values()].map((e) => e.log);
  }

  /** The log dir holding a partition, for DescribeLogDirs. */
  logDirOf(topic: string, partition: number): string | undefined {
    return this.logs.get(topicPartitionKey(topic, partition))?.logDir;
  }

  /**
   * The partition's log, created in the log dir with the fewest partitions when missing. With a
   * topic id, as Kafka's getOrCreateLog: a log without one gets it (`partition.metadata` written),
   * a log holding another throws INCONSISTENT_TOPIC_ID.
   */
  getOrCreateLog(topic: string, partition: number, config?: LogConfig, topicId?: string, isNew = true): Log {
    let log = this.getLog(topic, partition);
    if (log === undefined && !isNew && this.offlineDirs.size > 0) {
      // It may be in a failed dir: a new empty one elsewhere would pass for it (Kafka's check).
      throw KafkaError.fromCode(
        ErrorCode.KAFKA_STORAGE_ERROR,
        `Can not create log for ${topicPartitionKey(topic, partition)} because log directories ${[...this.offlineDirs].join(',')} are offline`,
      );
    }
    log ??= this.createLog(topic, partition, config);
    if (topicId !== undefined) log.assignTopicId(topicId);
    return log;
  }

  private createLog(topic: string, partition: number, config: LogConfig | undefined): Log {
    if (!/^[a-zA-Z0-9._-]+$/.test(topic) || topic === '.' || topic === '..') {
      throw new RangeError(`illegal topic name '${topic}'`);
    }
    const counts = new Map(this.liveLogDirs.map((d) => [d, 0]));
    for (const { logDir } of this.logs.values()) counts.set(logDir, (counts.get(logDir) ?? 0) + 1);
    const logDir = [...counts.entries()].sort((a, b) => a[1] - b[1])[0]![0];
    this.checkpoints.beforeLogIn(logDir, topicPartitionKey(topic, partition));
    const log = Log.open({
      dir: path.join(logDir, topicPartitionKey(topic, partition)),
      topic,
      partition,
      config: config ?? this.topicConfig(topic),
      ctx: this.ctx,
      hadCleanShutdown: true,
    });
    this.logs.set(topicPartitionKey(topic, partition), { log: this.watch(log), logDir });
    this.ctx.logger.info(`created log for partition ${topic}-${partition} in ${logDir}`);
    return log;
  }

  /**
   * Removes a partition's log (topic deleted or re-created, replica moved away): out of the manager
   * at once, its directory renamed `<topic>-<partition>.<id>-delete` (Kafka's name, skipped at
   * load; the partition's own directory name is free again at once, so a re-created topic starts
   * clean) and its files removed `file.delete.delay.ms` later, as Kafka defers it. Leftover
   * `-delete` directories are removed at start-up. Returns whether there was such a log.
   */
  deleteLog(topic: string, partition: number): boolean {
    const key = topicPartitionKey(topic, partition);
    const entry = this.logs.get(key);
    if (!entry) return false;
    this.logs.delete(key);
    this.deleteFutureLog(topic, partition);
    const { log, logDir } = entry;
    log.local.abandon();
    this.renameForDeletion(log.dir, logDir, key, log.config.fileDeleteDelayMs, log.size);
    this.checkpoints.logGone(logDir, key);
    return true;
  }

  /** Renames a partition directory `<key>.<id>-delete` and removes it `delayMs` later. */
  private renameForDeletion(dir: string, logDir: string, key: string, delayMs: number, bytes = 0): void {
    const stamp = this.ctx.clock.nowMs().toString(36);
    let deleted = path.join(logDir, `${key}.${stamp}-delete`);
    // Two deletions of one partition in the same millisecond (a move cancelled, then another).
    for (let n = 1; this.ctx.fs.exists(deleted); n++)
      deleted = path.join(logDir, `${key}.${stamp}x${n}-delete`);
    this.ctx.fs.rename(dir, deleted);
    this.ctx.fs.syncDir(logDir);
    this.dirDeletionBytes += bytes;
    this.ctx.scheduler.schedule(`delete-dir-${key}`, delayMs, () => {
      this.dirDeletionBytes -= bytes;
      this.removeDir(deleted);
    });
    this.ctx.logger.info(`${key}: ${path.basename(dir)} renamed to ${path.basename(deleted)} for deletion`);
  }

  private discardDir(dir: string, key: string): void {
    this.removeDir(dir);
    this.ctx.logger.info(`${key}: removed ${dir}`);
  }

  /** The future log of a partition being moved between log dirs, if any. */
  futureLog(topic: string, partition: number): Log | undefined {
    return this.futureLogs.get(topicPartitionKey(topic, partition))?.log;
  }

  /** The log dir a partition is being moved to, if any. */
  futureLogDirOf(topic: string, partition: number): string | undefined {
    return this.futureLogs.get(topicPartitionKey(topic, partition))?.logDir;
  }

  /** Every future log with its log dir (DescribeLogDirs' isFuture entries). */
  allFutureLogs(): { log: Log; logDir: string }[] {
    return [...this.futureLogs.values()];
  }

  /**
   * Starts a move of a partition's log to `logDir` (AlterReplicaLogDirs): an empty future log
   * `<topic>-<p>.<id>-future` there, starting at `startOffset`, which the caller fills from the
   * current log. `logDir` must be another of this broker's log dirs.
   */
  createFutureLog(topic: string, partition: number, logDir: string, startOffset: bigint): Log {
    const key = topicPartitionKey(topic, partition);
    const current = this.logs.get(key);
    if (!current) throw new Error(`${key}: no current log to move`);
    if (!this.logDirs.includes(logDir)) throw new Error(`${logDir} is not a log dir of this broker`);
    if (current.logDir === logDir) throw new Error(`${key} is already in ${logDir}`);
    if (this.futureLogs.has(key)) throw new Error(`${key} is already being moved`);
    const stamp = this.ctx.clock.nowMs().toString(36);
    let dir = path.join(logDir, `${key}.${stamp}-future`);
    for (let n = 1; this.ctx.fs.exists(dir); n++) dir = path.join(logDir, `${key}.${stamp}x${n}-future`);
    const log = Log.open({
      dir,
      topic,
      partition,
      config: current.log.config,
      ctx: this.ctx,
      hadCleanShutdown: true,
    });
    if (startOffset > 0n) log.truncateFullyAndStartAt(startOffset, { quiet: true });
    if (current.log.topicId !== null) log.assignTopicId(current.log.topicId);
    this.futureLogs.set(key, { log, logDir });
    this.ctx.logger.info(`${key}: created future log ${dir} to move the replica from ${current.logDir}`);
    return log;
  }

  /** Drops a move in progress (cancelled, or the partition went away): its future log is deleted. */
  deleteFutureLog(topic: string, partition: number): boolean {
    const key = topicPartitionKey(topic, partition);
    const entry = this.futureLogs.get(key);
    if (!entry) return false;
    this.futureLogs.delete(key);
    entry.log.local.abandon();
    this.renameForDeletion(entry.log.dir, entry.logDir, key, entry.log.config.fileDeleteDelayMs);
    return true;
  }

  /**
   * Completes a move (Kafka's replaceCurrentWithFutureLog) once the future log's LEO equals the
   * current one's: both closed, the current directory renamed for deletion, the future renamed to
   * `<topic>-<p>` in its log dir and reopened, and the current Log object takes over its files (so
   * nothing that holds it needs to know). Synchronous: no append can come in between.
   */
  replaceCurrentWithFuture(topic: string, partition: number): void {
    const key = topicPartitionKey(topic, partition);
    const current = this.logs.get(key);
    const future = this.futureLogs.get(key);
    if (!current || !future) throw new Error(`${key}: no move in progress`);
    const { log } = current;
    if (future.log.logEndOffset !== log.logEndOffset) {
      throw new Error(
        `${key}: future log at ${future.log.logEndOffset} has not caught up with ${log.logEndOffset}`,
      );
    }
    future.log.close();
    log.close();
    // Segments waiting for deletion go now: their scheduled tasks would look under the old paths.
    future.log.local.deletePendingNow();
    log.local.deletePendingNow();
    this.futureLogs.delete(key);
    const oldDir = log.dir;
    // Current first: a crash between the two renames leaves only the future, which start-up promotes.
    this.renameForDeletion(oldDir, current.logDir, key, log.config.fileDeleteDelayMs);
    this.checkpoints.logGone(current.logDir, key);
    const final = path.join(future.logDir, key);
    this.checkpoints.beforeLogIn(future.logDir, key);
    this.ctx.fs.rename(future.log.dir, final);
    this.ctx.fs.syncDir(future.logDir);
    const reopened = Log.open({
      dir: final,
      topic,
      partition,
      config: log.config,
      ctx: this.ctx,
      hadCleanShutdown: true,
      recoveryPoint: log.logEndOffset,
      logStartOffset: log.logStartOffset,
    });
    log.adoptFilesOf(reopened);
    this.logs.set(key, { log, logDir: future.logDir });
    this.ctx.logger.info(`${key}: moved from ${current.logDir} to ${future.logDir}`);
  }

  /**
   * Bytes removed from the logs but still on disk for `file.delete.delay.ms`: segments deleted by
   * retention or truncation (`*.deleted`) and the logs of deleted partitions (`-delete` dirs).
   */
  bytesAwaitingDeletion(): number {
    let n = this.dirDeletionBytes;
    for (const { log } of this.logs.values()) n += log.local.bytesAwaitingDeletion;
    return n;
  }

  private removeDir(dir: string): void {
    const { fs } = this.ctx;
    if (!fs.exists(dir)) return;
    for (const f of fs.list(dir)) fs.unlink(path.join(dir, f));
    fs.rmdir(dir);
  }

  checkpointRecoveryPoints(): void {
    this.writeOffsets(RECOVERY_POINT_CHECKPOINT, (log) => log.recoveryPoint);
  }

  /**
   * A log of this manager: moves of its log start are persisted (persistLogStartOffsets), and a
   * truncation that lowered its recovery point rewrites its dir's recovery-point checkpoint at
   * once, as Kafka's LogManager.truncateTo and truncateFullyAndStartAt do.
   */
  private watch(log: Log): Log {
    log.onLogStartOffsetIncremented = () => void this.persistLogStartOffsets();
    const key = topicPartitionKey(log.topic, log.partition);
    log.onRecoveryPointLowered = () => {
      const entry = this.logs.get(key);
      if (entry?.log === log && !this.offlineDirs.has(entry.logDir))
        this.checkpoints.write(entry.logDir, RECOVERY_POINT_CHECKPOINT, (l) => l.recoveryPoint);
    };
    return log;
  }

  /**
   * Writes every log dir's log-start-offset-checkpoint off the event loop, now rather than at the
   * next log.flush.start.offset.checkpoint.interval.ms: called whenever a log start offset moves.
   * Kafka waits for the interval, so records deleted (DeleteRecords) shortly before a crash are back
   * after the restart; Skiff's DeleteRecords answers once this write is done. Writes run one at a
   * time; a call during one makes one more. Resolves when a write that began after the call ends.
   */
  persistLogStartOffsets(): Promise<void> {
    const write = this.ctx.fs.writeFileAtomicInBackground;
    if (write === undefined) {
      this.checkpointLogStartOffsets();
      return Promise.resolve();
    }
    if (this.logStartWriter !== null) {
      this.logStartWriter.again = true;
      return this.logStartWriter.running;
    }
    const writer = { running: Promise.resolve(), again: true };
    writer.running = (async () => {
      try {
        while (writer.again) {
          writer.again = false;
          await Promise.all(
            this.liveLogDirs.map((dir) =>
              this.checkpoints.writeInBackground(
                write,
                dir,
                LOG_START_OFFSET_CHECKPOINT,
                (log) => log.logStartOffset,
              ),
            ),
          );
        }
      } finally {
        this.logStartWriter = null;
      }
    })();
    this.logStartWriter = writer;
    return writer.running;
  }

  /** Resolves once no log-start-offset-checkpoint write is under way (DeleteRecords, shutdown). */
  async whenLogStartOffsetsPersisted(): Promise<void> {
    while (this.logStartWriter !== null) await this.logStartWriter.running;
  }

  checkpointLogStartOffsets(): void {
    // Kafka leaves out logs whose start is their first segment's base: that is what loading derives.
    this.writeOffsets(LOG_START_OFFSET_CHECKPOINT, (log) => log.logStartOffset);
  }

  checkpointHighWatermarks(): void {
    this.writeOffsets(REPLICATION_OFFSET_CHECKPOINT, (log) => log.highWatermark);
  }

  private writeOffsets(file: string, offsetOf: (log: Log) => bigint): void {
    for (const dir of this.liveLogDirs) this.checkpoints.write(dir, file, offsetOf);
  }

  runRetention(): number {
    let deleted = 0;
    // A log being cleaned keeps its segments until the cleaning ends (Kafka's inProgress check).
    for (const { log } of this.logs.values())
      if (!this.cleaner?.isCleaning(log)) deleted += log.deleteOldSegments();
    return deleted;
  }

  /**
   * Clean shutdown: every log flushed and closed (indexes trimmed), checkpoints written, pending
   * segment deletions done, then the clean-shutdown marker in every log dir — last, so its
   * presence means everything before it reached the disk.
   */
  shutdown(): void {
    for (const cancel of this.cancels.splice(0)) cancel();
    this.cleaner?.shutdown();
    for (const { log } of this.logs.values()) {
      log.close();
      log.local.deletePendingNow();
    }
    // A move in progress resumes from its future log at the next start.
    for (const { log } of this.futureLogs.values()) log.close();
    this.futureLogs.clear();
    this.checkpointRecoveryPoints();
    this.checkpointLogStartOffsets();
    this.checkpointHighWatermarks();
    // An offline dir gets no marker: its logs are recovered at the next start.
    for (const dir of this.liveLogDirs) {
      this.ctx.fs.writeFileAtomic(
        path.join(dir, CLEAN_SHUTDOWN_FILE),
        Buffer.from('{"version":0,"brokerEpoch":-1}'),
      );
    }
    this.ctx.logger.info(`shut down ${this.logs.size} logs cleanly`);
    this.logs.clear();
  }

  /** Stops without any of the clean-shutdown work: what a kill -9 leaves (for tests). */
  abandon(): void {
    for (const cancel of this.cancels.splice(0)) cancel();
    this.cleaner?.abandon();
    for (const { log } of this.logs.values()) log.local.abandon();
    for (const { log } of this.futureLogs.values()) log.local.abandon();
    this.logs.clear();
    this.futureLogs.clear();
  }
}

/** Takes the logs in `dir` out of `logs`, their files closed; returns their partitions. */
function removeLogsIn(logs: Map<string, { log: Log; logDir: string }>, dir: string): TopicPartition[] {
  const removed: TopicPartition[] = [];
  for (const [key, { log, logDir }] of [...logs]) {
    if (logDir !== dir) continue;
    logs.delete(key);
    log.local.abandon();
    removed.push({ topic: log.topic, partition: log.partition });
  }
  return removed;
}
