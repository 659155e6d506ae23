import * as path from 'node:path';
import { topicPartitionKey } from '../common/topic-partition.js';
import {
  CheckpointFile,
  formatCheckpoint,
  LOG_START_OFFSET_CHECKPOINT,
  type PartitionOffset,
  partitionOffsetCodec,
  RECOVERY_POINT_CHECKPOINT,
} from './checkpoint.js';
import type { BackgroundWrite } from './fs.js';
import type { StorageContext } from './local-log.js';
import type { Log } from './log.js';

/**
 * The per-log-dir offset checkpoint files of a LogManager (recovery points, log start offsets,
 * HWs): read at the load, written now or through the file system's background writer. A
 * synchronous write of a file supersedes a background write of it under way: that one, whose
 * offsets were taken earlier, is not renamed over it (BackgroundWrite's stillWanted).
 */
export class LogDirCheckpoints {
  /** Checkpoint files being written in the background by writePeriodic. */
  private readonly backgroundWrites = new Set<string>();
  /** Synchronous writes so far, by checkpoint file. */
  private readonly syncWrites = new Map<string, number>();
  /** By log dir, the partitions its files may still name though their log there is gone. */
  private readonly gone = new Map<string, Set<string>>();

  constructor(
    private readonly ctx: StorageContext,
    /** The logs of a log dir, now. */
    private readonly logsIn: (dir: string) => Iterable<Log>,
  ) {}

  /** A file's offsets by partition key; a damaged file is a warning and reads as empty. */
  read(dir: string, file: string): Map<string, bigint> {
    const out = new Map<string, bigint>();
    try {
      for (const e of new CheckpointFile(this.ctx.fs, path.join(dir, file), partitionOffsetCodec).read()) {
        out.set(topicPartitionKey(e.topic, e.partition), e.offset);
      }
    } catch (e) {
      // A damaged checkpoint only costs work: every log is then recovered or read from its start.
      this.ctx.logger.warn(`ignoring ${file} in ${dir}: ${e instanceof Error ? e.message : String(e)}`);
    }
    return out;
  }

  /**
   * A partition's log left `dir` (deleted, moved away, or named in its files at the load without
   * a directory there), but the dir's files may still hold its entries until their next write.
   */
  logGone(dir: string, key: string): void {
    const keys = this.gone.get(dir) ?? new Set<string>();
    this.gone.set(dir, keys.add(key));
  }

  /**
   * Before a log named `key` takes its place in `dir`: when the dir's files may still hold the
   * entries of an earlier log of that name, its recovery points and log start offsets are
   * rewritten now — loaded after a crash with the old entries, the new log's bytes below the old
   * recovery point would be trusted unchecked, its records below the old log start hidden. Kafka
   * rewrites them at every deletion (asyncDelete); Skiff deletes one partition at a time, and two
   * fsynced whole-file writes per deleted partition cost 3–5 ms each with 2,000 partitions in the
   * dir — here only a partition created again pays.
   */
  beforeLogIn(dir: string, key: string): void {
    if (this.gone.get(dir)?.delete(key) !== true) return;
    this.write(dir, RECOVERY_POINT_CHECKPOINT, (log) => log.recoveryPoint);
    this.write(dir, LOG_START_OFFSET_CHECKPOINT, (log) => log.logStartOffset);
  }

  /** One log dir's file, written now; a background write of it under way is superseded. */
  write(dir: string, file: string, offsetOf: (log: Log) => bigint): void {
    const target = path.join(dir, file);
    this.syncWrites.set(target, (this.syncWrites.get(target) ?? 0) + 1);
    new CheckpointFile(this.ctx.fs, target, partitionOffsetCodec).write(this.offsetsIn(dir, offsetOf));
  }

  /**
   * write through the file system's background write when it has one (the offsets taken now); a
   * file whose previous write is still going is skipped this time — the next period writes newer
   * offsets.
   */
  writePeriodic(dirs: readonly string[], file: string, offsetOf: (log: Log) => bigint): void {
    const write = this.ctx.fs.writeFileAtomicInBackground;
    for (const dir of dirs) {
      if (write === undefined) {
        this.write(dir, file, offsetOf);
        continue;
      }
      const target = path.join(dir, file);
      if (this.backgroundWrites.has(target)) continue;
      this.backgroundWrites.add(target);
      void this.writeInBackground(write, dir, file, offsetOf).then(() =>
        this.backgroundWrites.delete(target),
      );
    }
  }

  /**
   * One log dir's offsets (taken now) written through `write`; a failure is a warning, not a
   * rejection. A synchronous write of the file before this one's rename stops it.
   */
  async writeInBackground(
    write: BackgroundWrite,
    dir: string,
    file: string,
    offsetOf: (log: Log) => bigint,
  ): Promise<void> {
    const target = path.join(dir, file);
    const data = Buffer.from(formatCheckpoint(partitionOffsetCodec, this.offsetsIn(dir, offsetOf)), 'utf8');
    const syncWritesBefore = this.syncWrites.get(target) ?? 0;
    try {
      await write(target, data, () => (this.syncWrites.get(target) ?? 0) === syncWritesBefore);
    } catch (e) {
      this.ctx.logger.warn(`writing ${target} failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private offsetsIn(dir: string, offsetOf: (log: Log) => bigint): PartitionOffset[] {
    const entries: PartitionOffset[] = [];
    for (const log of this.logsIn(dir))
      entries.push({ topic: log.topic, partition: log.partition, offset: offsetOf(log) });
    entries.sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
    return entries;
  }
}
