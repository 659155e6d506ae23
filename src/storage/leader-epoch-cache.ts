import type { Logger } from '../common/logger.js';
import type { CheckpointFile, EpochEntry } from './checkpoint.js';
import { isStorageError } from './log-dir-failure.js';

export const UNDEFINED_EPOCH = -1;
export const UNDEFINED_EPOCH_OFFSET = -1n;

export interface EpochEndOffset {
  readonly epoch: number;
  readonly endOffset: bigint;
}

/**
 * The leader epoch → start offset map of one partition, persisted to `leader-epoch-checkpoint`
 * (Kafka's LeaderEpochFileCache). Entries are strictly increasing in both epoch and start offset;
 * `assign` keeps them so by dropping any entry the new one contradicts.
 *
 * When the file is written, as Kafka: an assignment that changes the entries (and clearAndFlush)
 * writes it at once, so the file never misses an entry. A truncation does not: Kafka flushes those
 * in the background (truncateFromEndAsyncFlush, truncateFromStartAsyncFlush); here they ride on the
 * next write, or on flushIfChanged, which the log calls before its recovery point moves (and on
 * close). A file that still holds truncated entries is safe: the load truncates the cache to the
 * LEO and the log start offset again, and batches past the recovery point are replayed from the
 * log — so until a flush passes them, nothing trusts the file for those offsets.
 *
 * By the same argument an assignment starting at or past every recovery point the log dir's
 * checkpoint can hold for the log needs no write at once: a load after a crash replays its batches
 * and assigns it again. Where the log allows it (writeAssignmentsInBackground) such an assignment
 * is written off the event loop, and flushIfChanged writes it at once if that write has not ended
 * (its rename then never lands). A restart's thousands of partitions becoming leader with a new
 * epoch took seconds of fsyncs on the event loop here (issue 25).
 * Owned by one Log; the caller serialises calls (the log's append/truncate path).
 */
export class LeaderEpochFileCache {
  private epochs: EpochEntry[] = [];
  /** The entries as the checkpoint file holds them (as read, or as last written). */
  private persisted: readonly EpochEntry[] = [];
  private deferring = false;
  /** An assignment or clear changed the entries while deferring: endDeferredFlushes must write. */
  private assignedWhileDeferring = false;
  /** Set by writeAssignmentsInBackground: assignments from this offset on may be written later. */
  private backgroundFrom: (() => bigint) | null = null;
  /**
   * The background write under way: `again` asks for one more of the entries as they are then;
   * `superseded`, set by a write at once, stops it before its rename.
   */
  private background: { again: boolean; superseded: boolean } | null = null;

  constructor(
    private readonly checkpoint: CheckpointFile<EpochEntry> | null,
    private readonly logger: Logger,
    private readonly name: string,
  ) {
    if (checkpoint) {
      const read = checkpoint.read();
      // Loading through assign() normalises a hand-edited or non-monotonic file the same way.
      for (const e of read) this.assignNoFlush(e.epoch, e.startOffset);
      this.persisted = read;
    }
  }

  /**
   * Holds checkpoint writes back until endDeferredFlushes, which writes once, and only if an
   * assignment changed the entries and they then differ from the file. For a log load: its replay
   * clears the epochs from the first replayed batch and assigns them again, which would otherwise
   * write (and fsync) the file twice or more to end where it started; and a load that only
   * truncates (an empty log drops the entry its last epoch began at the LEO) leaves the write to
   * the next one, as any truncation does. Recovery re-derives the entries from the log, so a crash
   * before the write loses nothing.
   */
  deferFlushes(): void {
    this.deferring = true;
    this.assignedWhileDeferring = false;
  }

  endDeferredFlushes(): void {
    if (!this.deferring) return;
    this.deferring = false;
    if (this.assignedWhileDeferring) this.flushIfChanged();
    this.assignedWhileDeferring = false;
  }

  /**
   * Lets assignments starting at or past `from()` be written off the event loop (where the file
   * system writes in the background). `from` must be at least every recovery point the log dir's
   * recovery-point checkpoint can hold for this log — the highest the log ever had, and the one it
   * was loaded with: a load trusts this file below that point, and replays the batches past it.
   */
  writeAssignmentsInBackground(from: () => bigint): void {
    if (this.checkpoint?.writesInBackground === true) this.backgroundFrom = from;
  }

  /**
   * Writes the file when the entries differ from what it holds durably (a truncation not written
   * yet, an assignment whose background write has not ended), and its directory still exists: a
   * flush scheduled before the log was deleted may come after.
   */
  flushIfChanged(): void {
    if (this.deferring) return;
    const same =
      this.persisted.length === this.epochs.length &&
      this.epochs.every(
        (e, i) => e.epoch === this.persisted[i]!.epoch && e.startOffset === this.persisted[i]!.startOffset,
      );
    if (!same) this.checkpoint?.writeIfDirExists(this.epochs);
    this.written();
  }

  /** The file holds the entries durably now: a background write still going must not rename. */
  private written(): void {
    this.persisted = [...this.epochs];
    if (this.background !== null) {
      this.background.superseded = true;
      this.background = null;
    }
  }

  /** Starts a background write of the entries, or asks the one under way for one more. */
  private writeInBackground(): void {
    if (this.background !== null) {
      this.background.again = true;
      return;
    }
    const write = { again: true, superseded: false };
    this.background = write;
    void this.runBackgroundWrite(write);
  }

  private async runBackgroundWrite(write: { again: boolean; superseded: boolean }): Promise<void> {
    try {
      while (write.again && !write.superseded) {
        write.again = false;
        const entries = [...this.epochs];
        const replaced = await this.checkpoint!.writeInBackground(entries, () => !write.superseded);
        if (replaced === true && !write.superseded) this.persisted = entries;
      }
    } catch (e) {
      // Left to the next write at once (a flush, the close). ENOENT: the log was deleted or moved;
      // an offline log dir was reported by the file system already.
      const code = (e as NodeJS.ErrnoException | null)?.code;
      if (!write.superseded && code !== 'ENOENT' && !isStorageError(e)) {
        this.logger.warn(
          `${this.name}: writing the leader epoch checkpoint in the background failed (${e instanceof Error ? e.message : String(e)}); the next flush writes it`,
        );
      }
    } finally {
      if (this.background === write) this.background = null;
    }
  }

  entries(): EpochEntry[] {
    return [...this.epochs];
  }

  isEmpty(): boolean {
    return this.epochs.length === 0;
  }

  latestEntry(): EpochEntry | undefined {
    return this.epochs[this.epochs.length - 1];
  }

  latestEpoch(): number | undefined {
    return this.latestEntry()?.epoch;
  }

  earliestEntry(): EpochEntry | undefined {
    return this.epochs[0];
  }

  /** The epoch before the latest one, if any. */
  previousEpoch(): number | undefined {
    return this.epochs[this.epochs.length - 2]?.epoch;
  }

  /**
   * Records that `epoch` starts at `startOffset`. A repeat of the latest epoch at the same or a later
   * offset changes nothing; otherwise entries with epoch ≥ `epoch` or start ≥ `startOffset` go first.
   */
  assign(epoch: number, startOffset: bigint): void {
    if (!this.assignNoFlush(epoch, startOffset)) return;
    if (this.deferring) this.assignedWhileDeferring = true;
    else if (this.backgroundFrom !== null && startOffset >= this.backgroundFrom()) this.writeInBackground();
    else this.flush();
  }

  private assignNoFlush(epoch: number, startOffset: bigint): boolean {
    if (epoch < 0 || startOffset < 0n) {
      throw new RangeError(`cannot assign epoch ${epoch} at offset ${startOffset}: both must be ≥ 0`);
    }
    const latest = this.latestEntry();
    if (latest && latest.epoch === epoch && startOffset >= latest.startOffset) return false;
    const removed: EpochEntry[] = [];
    while (this.epochs.length > 0) {
      const last = this.epochs[this.epochs.length - 1]!;
      if (last.epoch < epoch && last.startOffset < startOffset) break;
      removed.push(last);
      this.epochs.pop();
    }
    this.epochs.push({ epoch, startOffset });
    if (removed.length > 1 || (removed.length === 1 && removed[0]!.startOffset !== startOffset)) {
      this.logger.warn(
        `${this.name}: new epoch entry ${epoch}@${startOffset} caused removal of conflicting entries ${removed
          .reverse()
          .map((e) => `${e.epoch}@${e.startOffset}`)
          .join(', ')}`,
      );
    }
    return true;
  }

  /**
   * Kafka's endOffsetFor: the end offset of the requested epoch (the start of the next higher one),
   * with the largest known epoch ≤ the requested one. The latest epoch ends at the LEO; an epoch
   * above all known ones, or UNDEFINED_EPOCH, has no end offset.
   */
  endOffsetFor(requestedEpoch: number, logEndOffset: bigint): EpochEndOffset {
    const undefinedResult = { epoch: UNDEFINED_EPOCH, endOffset: UNDEFINED_EPOCH_OFFSET };
    if (requestedEpoch === UNDEFINED_EPOCH) return undefinedResult;
    if (this.latestEpoch() === requestedEpoch) return { epoch: requestedEpoch, endOffset: logEndOffset };
    const higher = this.epochs.find((e) => e.epoch > requestedEpoch);
    if (!higher) return undefinedResult;
    let floor: EpochEntry | undefined;
    for (const e of this.epochs) if (e.epoch <= requestedEpoch) floor = e;
    return { epoch: floor ? floor.epoch : requestedEpoch, endOffset: higher.startOffset };
  }

  /** The epoch of the batch holding `offset`: the latest entry starting at or before it. */
  epochForOffset(offset: bigint): number | undefined {
    let found: number | undefined;
    for (const e of this.epochs) {
      if (e.startOffset > offset) break;
      found = e.epoch;
    }
    return found;
  }

  /**
   * After the log is truncated to `endOffset`: drops entries that start at or beyond it, leaving
   * the write to the next one (see the class comment). `quiet`: the caller re-adds them at once
   * (recovery replaying batches), so no line.
   */
  truncateFromEnd(endOffset: bigint, opts: { readonly quiet?: boolean } = {}): void {
    const latest = this.latestEntry();
    if (endOffset < 0n || !latest || latest.startOffset < endOffset) return;
    const before = this.epochs.length;
    this.epochs = this.epochs.filter((e) => e.startOffset < endOffset);
    if (opts.quiet !== true) {
      this.logger.info(
        `${this.name}: cleared ${before - this.epochs.length} leader epoch entries from offset ${endOffset}`,
      );
    }
  }

  /**
   * After the log start moves to `startOffset`: drops entries that start at or before it, and
   * re-adds the last dropped epoch starting exactly at `startOffset`, since its batches remain.
   * The write is left to the next one, as truncateFromEnd's.
   */
  truncateFromStart(startOffset: bigint): void {
    let lastRemoved: EpochEntry | undefined;
    while (this.epochs.length > 0 && this.epochs[0]!.startOffset <= startOffset) {
      lastRemoved = this.epochs.shift();
    }
    if (!lastRemoved) return;
    this.epochs.unshift({ epoch: lastRemoved.epoch, startOffset });
  }

  clearAndFlush(): void {
    this.epochs = [];
    if (this.deferring) this.assignedWhileDeferring = true;
    this.flush();
  }

  flush(): void {
    if (this.deferring) return;
    this.checkpoint?.write(this.epochs);
    this.written();
  }
}
