import * as path from 'node:path';
import { type FileSystem, readIfExists } from './fs.js';

/**
 * Kafka's text checkpoint files: a version line, an entry-count line, then one entry per line with
 * space-separated fields. Used for `leader-epoch-checkpoint` (`epoch startOffset`) and the per-log-dir
 * `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`, `replication-offset-checkpoint`
 * (`topic partition offset`). Written to `<file>.tmp`, fsynced, renamed, so a reader sees the old
 * or the new file, never a mix.
 */

export class CorruptCheckpointError extends Error {
  override readonly name = 'CorruptCheckpointError';
  constructor(
    readonly file: string,
    readonly lineNumber: number,
    reason: string,
  ) {
    super(`malformed checkpoint file ${file}, line ${lineNumber}: ${reason}`);
  }
}

export interface CheckpointCodec<T> {
  readonly fieldCount: number;
  format(entry: T): string;
  /** Parses the fields of one line; throws an Error with the reason when they are not valid. */
  parse(fields: string[]): T;
}

export const CHECKPOINT_VERSION = 0;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export function parseInt64(text: string, what: string): bigint {
  if (!/^-?\d+$/.test(text)) throw new Error(`${what} '${text}' is not an integer`);
  const value = BigInt(text);
  if (value < INT64_MIN || value > INT64_MAX) throw new Error(`${what} ${text} does not fit in 64 bits`);
  return value;
}

export function parseInt32(text: string, what: string): number {
  if (!/^-?\d+$/.test(text)) throw new Error(`${what} '${text}' is not an integer`);
  const value = Number(text);
  if (value < -(2 ** 31) || value > 2 ** 31 - 1) throw new Error(`${what} ${text} does not fit in 32 bits`);
  return value;
}

export function formatCheckpoint<T>(codec: CheckpointCodec<T>, entries: readonly T[]): string {
  const lines = [String(CHECKPOINT_VERSION), String(entries.length)];
  for (const e of entries) lines.push(codec.format(e));
  return `${lines.join('\n')}\n`;
}

/**
 * Tolerates what a hand edit or another writer may leave: CRLF line ends, surrounding blanks, runs
 * of spaces or tabs between fields, a missing or extra final newline. Everything else is an error
 * that names the file and line.
 */
export function parseCheckpoint<T>(codec: CheckpointCodec<T>, text: string, file: string): T[] {
  const lines = text.split(/\r?\n/);
  while (lines.length > 0 && lines[lines.length - 1]!.trim() === '') lines.pop();
  if (lines.length === 0) throw new CorruptCheckpointError(file, 1, 'file is empty');
  const versionText = lines[0]!.trim();
  if (versionText !== String(CHECKPOINT_VERSION)) {
    throw new CorruptCheckpointError(
      file,
      1,
      `unrecognized version '${versionText}', expected ${CHECKPOINT_VERSION}`,
    );
  }
  if (lines.length < 2) throw new CorruptCheckpointError(file, 2, 'missing entry count');
  const countText = lines[1]!.trim();
  if (!/^\d+$/.test(countText))
    throw new CorruptCheckpointError(file, 2, `entry count '${countText}' is not a number`);
  const count = Number(countText);
  const entryLines = lines.slice(2);
  if (entryLines.length !== count) {
    throw new CorruptCheckpointError(
      file,
      Math.min(lines.length, count + 2) + (entryLines.length > count ? 1 : 0),
      `expected ${count} entries, found ${entryLines.length}`,
    );
  }
  return entryLines.map((line, i) => {
    const fields = line.trim().split(/[ \t]+/);
    if (fields.length !== codec.fieldCount || fields[0] === '') {
      throw new CorruptCheckpointError(file, i + 3, `expected ${codec.fieldCount} fields, found '${line}'`);
    }
    try {
      return codec.parse(fields);
    } catch (e) {
      throw new CorruptCheckpointError(file, i + 3, e instanceof Error ? e.message : String(e));
    }
  });
}

/** One checkpoint file. Owned by the log (epochs) or the log manager (offsets) that writes it. */
export class CheckpointFile<T> {
  constructor(
    private readonly fs: FileSystem,
    readonly path: string,
    private readonly codec: CheckpointCodec<T>,
  ) {}

  write(entries: readonly T[]): void {
    this.fs.writeFileAtomic(this.path, Buffer.from(formatCheckpoint(this.codec, entries), 'utf8'));
  }

  /**
   * write off the event loop, where the file system can (else null: nothing was started). See
   * BackgroundWrite for `stillWanted` and what the promise resolves with.
   */
  writeInBackground(entries: readonly T[], stillWanted: () => boolean): Promise<boolean> | null {
    const write = this.fs.writeFileAtomicInBackground;
    if (write === undefined) return null;
    return write(this.path, Buffer.from(formatCheckpoint(this.codec, entries), 'utf8'), stillWanted);
  }

  /** Whether this file system writes in the background (writeInBackground starts a write). */
  get writesInBackground(): boolean {
    return this.fs.writeFileAtomicInBackground !== undefined;
  }

  /**
   * write, unless the directory is gone (Kafka's writeIfDirExists): for a write left for later,
   * which may come after the partition's directory was renamed for deletion.
   */
  writeIfDirExists(entries: readonly T[]): void {
    if (this.fs.exists(path.dirname(this.path))) this.write(entries);
  }

  /** The entries, or an empty list when the file does not exist yet. */
  read(): T[] {
    const data = readIfExists(this.fs, this.path);
    return data === null ? [] : parseCheckpoint(this.codec, data.toString('utf8'), this.path);
  }
}

export interface EpochEntry {
  readonly epoch: number;
  readonly startOffset: bigint;
}

export const epochEntryCodec: CheckpointCodec<EpochEntry> = {
  fieldCount: 2,
  format: (e) => `${e.epoch} ${e.startOffset}`,
  parse: (f) => {
    const epoch = parseInt32(f[0]!, 'epoch');
    const startOffset = parseInt64(f[1]!, 'start offset');
    if (epoch < 0 || startOffset < 0n) throw new Error(`negative epoch entry ${epoch} ${startOffset}`);
    return { epoch, startOffset };
  },
};

export interface PartitionOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
}

export const partitionOffsetCodec: CheckpointCodec<PartitionOffset> = {
  fieldCount: 3,
  format: (e) => `${e.topic} ${e.partition} ${e.offset}`,
  parse: (f) => {
    const partition = parseInt32(f[1]!, 'partition');
    if (partition < 0) throw new Error(`negative partition ${partition}`);
    return { topic: f[0]!, partition, offset: parseInt64(f[2]!, 'offset') };
  },
};

export const LEADER_EPOCH_CHECKPOINT = 'leader-epoch-checkpoint';
export const RECOVERY_POINT_CHECKPOINT = 'recovery-point-offset-checkpoint';
export const LOG_START_OFFSET_CHECKPOINT = 'log-start-offset-checkpoint';
export const REPLICATION_OFFSET_CHECKPOINT = 'replication-offset-checkpoint';
/** The log cleaner's progress per partition of a log dir (Kafka's LogCleanerManager checkpoints). */
export const CLEANER_OFFSET_CHECKPOINT = 'cleaner-offset-checkpoint';
