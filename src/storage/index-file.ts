import { writeInt64 } from '../protocol/records/batch.js';
import { type FileHandle, type FileSystem, openIfExists } from './fs.js';

export const OFFSET_INDEX_ENTRY_SIZE = 8;
export const TIME_INDEX_ENTRY_SIZE = 12;
/** Unwritten entry bytes that trigger a write: one page. */
const WRITE_BATCH_BYTES = 4096;

/** Thrown when an index entry would break the index's ordering: a caller bug, never disk data. */
export class InvalidIndexEntryError extends Error {
  override readonly name = 'InvalidIndexEntryError';
}

/**
 * What the two index kinds share: fixed-size big-endian entries, relative to the segment's base
 * offset, held in memory (loaded lazily from the file on first use) and written to the file a
 * page at a time and on flush, trim and close — Kafka writes through an mmap, and one syscall per
 * 8-byte entry costs more than the batch append it indexes. Entries not yet written after a crash
 * do not matter: recovery rebuilds the indexes of everything past the recovery point, and a flush
 * writes them before the recovery point moves. While the segment is active the file is
 * preallocated to `maxIndexSize`, as Kafka's is; `trim()` cuts it to the real entries.
 *
 * On load, the entries are the longest prefix that is ordered and not all-zero: that drops the
 * zero-filled preallocated tail a crash leaves behind, which Kafka would read as entries.
 * Owned by one LogSegment.
 */
export abstract class IndexFile {
  /** The entries, `count` of them, then room to grow; subclasses write new entries in place. */
  protected buf: Buffer = Buffer.alloc(0);
  private count = 0;
  /** Entries already in the file; the ones after it are only in memory. */
  private written = 0;
  private loaded = false;
  /** False once the file is known to be empty or absent (reset then has nothing to cut). */
  private fileMayHoldBytes = true;
  private handle: FileHandle | null = null;
  readonly maxEntries: number;

  constructor(
    protected readonly fs: FileSystem,
    private filePath: string,
    readonly baseOffset: bigint,
    readonly maxIndexSize: number,
    readonly entrySize: number,
  ) {
    this.maxEntries = Math.floor(maxIndexSize / entrySize);
    if (this.maxEntries < 1)
      throw new RangeError(`index size ${maxIndexSize} holds no ${entrySize}-byte entry`);
  }

  get path(): string {
    return this.filePath;
  }

  /** Whether an entry with its fields at `at` in `raw` may follow the previous one (or start). */
  protected abstract followsInOrder(raw: Buffer, at: number, previousAt: number | null): boolean;

  private load(): void {
    if (this.loaded) return;
    this.loaded = true;
    // Read a chunk at a time and stop at the first entry out of order or all zero: a preallocated
    // file is mostly zeros, and reading all of it would cost more than the entries are worth.
    const handle = openIfExists(this.fs, this.filePath);
    if (handle === null) {
      this.fileMayHoldBytes = false;
      return;
    }
    try {
      const fileBytes = handle.size();
      if (fileBytes === 0) this.fileMayHoldBytes = false;
      const fileEntries = Math.min(this.maxEntries, Math.floor(fileBytes / this.entrySize));
      let raw = Buffer.alloc(0);
      let n = 0;
      let chunkEntries = 8192;
      while (n < fileEntries) {
        const want = Math.min(chunkEntries, fileEntries - raw.length / this.entrySize);
        if (want <= 0) break;
        const chunk = Buffer.allocUnsafe(want * this.entrySize);
        const got = handle.read(chunk, 0, chunk.length, raw.length);
        raw = Buffer.concat([raw, chunk.subarray(0, got - (got % this.entrySize))]);
        const whole = raw.length / this.entrySize;
        while (n < whole) {
          const at = n * this.entrySize;
          if (isAllZero(raw, at, this.entrySize)) break;
          if (!this.followsInOrder(raw, at, n === 0 ? null : at - this.entrySize)) break;
          n++;
        }
        if (n < whole || got < chunk.length) break;
        chunkEntries *= 4;
      }
      this.buf = raw.subarray(0, n * this.entrySize);
      this.count = n;
      this.written = n;
    } finally {
      handle.close();
    }
  }

  /** The file is known not to exist (its directory was just listed): nothing to load. */
  markAbsent(): void {
    if (this.loaded) return;
    this.loaded = true;
    this.fileMayHoldBytes = false;
  }

  get entries(): number {
    this.load();
    return this.count;
  }

  isFull(): boolean {
    return this.entries >= this.maxEntries;
  }

  /** Bytes of real entries (what the file holds once trimmed). */
  get sizeInBytes(): number {
    return this.entries * this.entrySize;
  }

  protected entryView(n: number): Buffer {
    return this.buf.subarray(n * this.entrySize, (n + 1) * this.entrySize);
  }

  protected relativeOffset(offset: bigint): number {
    const rel = offset - this.baseOffset;
    if (rel < 0n || rel > 0x7fffffffn) {
      throw new InvalidIndexEntryError(
        `offset ${offset} does not fit in an index with base ${this.baseOffset}`,
      );
    }
    return Number(rel);
  }

  /** Largest n such that `key(n) ≤ target`, or -1. `key` must be non-decreasing in n. */
  protected floorEntry(key: (n: number) => bigint, target: bigint): number {
    let lo = 0;
    let hi = this.entries - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (key(mid) <= target) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found;
  }

  /** Smallest n such that `key(n) ≥ target`, or `entries`. */
  protected ceilingEntry(key: (n: number) => bigint, target: bigint): number {
    let lo = 0;
    let hi = this.entries;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (key(mid) < target) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * Byte offset in `buf` where the next entry goes, the buffer grown if needed. The caller writes
   * the entry there and calls commitEntry: no entry Buffer per append (one per index.interval.bytes
   * of appended data, so on the append path).
   */
  protected nextEntryAt(): number {
    this.load();
    if (this.count >= this.maxEntries) {
      throw new InvalidIndexEntryError(`index ${this.filePath} is full (${this.maxEntries} entries)`);
    }
    const at = this.count * this.entrySize;
    if (this.buf.length < at + this.entrySize) {
      const grown = Buffer.alloc(
        Math.min(this.maxEntries * this.entrySize, Math.max(64 * this.entrySize, this.buf.length * 2)),
      );
      this.buf.copy(grown, 0, 0, at);
      this.buf = grown;
    }
    return at;
  }

  /** Makes the entry written at nextEntryAt() part of the index. */
  protected commitEntry(): void {
    this.count++;
    if ((this.count - this.written) * this.entrySize >= WRITE_BATCH_BYTES) this.writeDirty();
  }

  /** Writes the entries that are only in memory. */
  private writeDirty(): void {
    if (this.count <= this.written) return;
    const from = this.written * this.entrySize;
    this.writable().write(this.buf.subarray(from, this.count * this.entrySize), from);
    this.written = this.count;
  }

  /**
   * Creates the file, preallocated, as Kafka does when it creates a segment — without keeping it
   * open: the handle is taken by the first write of entries (a page of them), so a broker holding
   * thousands of idle partitions holds one descriptor per segment (its .log), not three.
   */
  create(): void {
    this.load();
    if (this.handle) return;
    const handle = this.fs.open(this.filePath, true);
    this.fileMayHoldBytes = true;
    try {
      const preallocated = this.maxEntries * this.entrySize;
      if (handle.size() < preallocated) handle.truncate(preallocated);
    } finally {
      handle.close();
    }
  }

  /** Opens the file for writing, preallocated to the maximum size as while the segment is active. */
  private writable(): FileHandle {
    if (this.handle) return this.handle;
    const handle = this.fs.open(this.filePath, true);
    this.fileMayHoldBytes = true;
    const preallocated = this.maxEntries * this.entrySize;
    if (handle.size() < preallocated) handle.truncate(preallocated);
    this.handle = handle;
    return handle;
  }

  /** Keeps the first `n` entries. */
  protected truncateToEntries(n: number): void {
    this.load();
    if (n >= this.count) return;
    this.count = Math.max(0, n);
    if (this.written <= this.count) return;
    this.written = this.count;
    // Zero the dropped entries on disk so a later load does not resurrect them.
    const h = this.handle ?? this.fs.open(this.filePath, true);
    const keep = this.count * this.entrySize;
    const size = h.size();
    h.truncate(keep);
    if (this.handle) h.truncate(Math.max(size, keep));
    else h.close();
  }

  /** Drops every entry without reading the old ones (a rebuild follows). */
  reset(): void {
    this.loaded = true;
    this.count = 0;
    this.written = 0;
    if (this.handle) {
      const size = this.handle.size();
      this.handle.truncate(0);
      this.handle.truncate(size);
    } else if (this.fileMayHoldBytes) {
      const h = openIfExists(this.fs, this.filePath);
      if (h === null) return;
      try {
        h.truncate(0);
      } finally {
        h.close();
      }
    }
  }

  /** Cuts the file to its real entries and releases the handle; the next append preallocates again. */
  trim(): void {
    this.load();
    this.writeDirty();
    const keep = this.count * this.entrySize;
    if (this.handle) {
      this.handle.truncate(keep);
      this.handle.close();
      this.handle = null;
    } else if (this.fs.exists(this.filePath) && this.fs.fileSize(this.filePath) !== keep) {
      const h = this.fs.open(this.filePath, false);
      h.truncate(keep);
      h.close();
    } else if (!this.fs.exists(this.filePath)) {
      this.fs.open(this.filePath, true).close();
    }
  }

  /** Makes the entries durable; a trimmed index (no open handle) is opened just for the fsync. */
  flush(): void {
    if (this.loaded) this.writeDirty();
    if (this.handle) {
      this.handle.sync();
    } else if (this.fs.exists(this.filePath)) {
      const h = this.fs.open(this.filePath, false);
      try {
        h.sync();
      } finally {
        h.close();
      }
    }
  }

  close(): void {
    this.trim();
  }

  /** Closes without writing or trimming anything: what a crash leaves (for tests and for deletion). */
  closeHandle(): void {
    this.handle?.close();
    this.handle = null;
  }

  renameTo(newPath: string): void {
    if (this.fs.exists(this.filePath)) this.fs.rename(this.filePath, newPath);
    this.filePath = newPath;
  }

  deleteFile(): void {
    this.closeHandle();
    if (this.fs.exists(this.filePath)) this.fs.unlink(this.filePath);
  }
}

function isAllZero(buf: Buffer, at: number, size: number): boolean {
  for (let i = at; i < at + size; i++) if (buf[i] !== 0) return false;
  return true;
}

export interface OffsetPosition {
  readonly offset: bigint;
  readonly position: number;
}

/**
 * `.index`: 8-byte entries (int32 offset relative to the segment base, int32 byte position in the
 * .log), both strictly increasing. One entry per `index.interval.bytes` of appended data.
 */
export class OffsetIndex extends IndexFile {
  constructor(fs: FileSystem, filePath: string, baseOffset: bigint, maxIndexSize: number) {
    super(fs, filePath, baseOffset, maxIndexSize, OFFSET_INDEX_ENTRY_SIZE);
  }

  protected followsInOrder(raw: Buffer, at: number, previousAt: number | null): boolean {
    const rel = raw.readInt32BE(at);
    const pos = raw.readInt32BE(at + 4);
    if (rel < 0 || pos < 0) return false;
    if (previousAt === null) return true;
    return rel > raw.readInt32BE(previousAt) && pos > raw.readInt32BE(previousAt + 4);
  }

  entry(n: number): OffsetPosition {
    const e = this.entryView(n);
    return { offset: this.baseOffset + BigInt(e.readInt32BE(0)), position: e.readInt32BE(4) };
  }

  lastEntry(): OffsetPosition {
    return this.entries === 0 ? { offset: this.baseOffset, position: 0 } : this.entry(this.entries - 1);
  }

  /** The last entry with offset ≤ `target`; the segment start when there is none. */
  lookup(target: bigint): OffsetPosition {
    const n = this.floorEntry((i) => this.entry(i).offset, target);
    return n < 0 ? { offset: this.baseOffset, position: 0 } : this.entry(n);
  }

  /** The last entry with position ≤ `position`; the segment start when there is none. */
  lookupByPosition(position: number): OffsetPosition {
    const n = this.floorEntry((i) => BigInt(this.entry(i).position), BigInt(position));
    return n < 0 ? { offset: this.baseOffset, position: 0 } : this.entry(n);
  }

  append(offset: bigint, position: number): void {
    const rel = this.relativeOffset(offset);
    const n = this.entries;
    // Compared as the stored int32s: no entry object or BigInt per append.
    if (n > 0) {
      const lastAt = (n - 1) * OFFSET_INDEX_ENTRY_SIZE;
      if (rel <= this.buf.readInt32BE(lastAt) || position <= this.buf.readInt32BE(lastAt + 4)) {
        const last = this.lastEntry();
        throw new InvalidIndexEntryError(
          `index entry ${offset}@${position} does not follow ${last.offset}@${last.position} in ${this.path}`,
        );
      }
    }
    const at = this.nextEntryAt();
    this.buf.writeInt32BE(rel, at);
    this.buf.writeInt32BE(position, at + 4);
    this.commitEntry();
  }

  /** Drops entries for offsets ≥ `offset`. */
  truncateTo(offset: bigint): void {
    this.truncateToEntries(this.ceilingEntry((i) => this.entry(i).offset, offset));
  }

  /** Drops entries pointing at or beyond byte `position` of the log. */
  truncateToPosition(position: number): void {
    this.truncateToEntries(this.ceilingEntry((i) => BigInt(this.entry(i).position), BigInt(position)));
  }
}

export interface TimestampOffset {
  readonly timestamp: bigint;
  readonly offset: bigint;
}

/**
 * `.timeindex`: 12-byte entries (int64 timestamp, int32 offset relative to the segment base);
 * an entry is added only when the largest timestamp grows, so timestamps strictly increase.
 */
export class TimeIndex extends IndexFile {
  constructor(fs: FileSystem, filePath: string, baseOffset: bigint, maxIndexSize: number) {
    super(fs, filePath, baseOffset, maxIndexSize, TIME_INDEX_ENTRY_SIZE);
  }

  protected followsInOrder(raw: Buffer, at: number, previousAt: number | null): boolean {
    const rel = raw.readInt32BE(at + 8);
    if (rel < 0) return false;
    if (previousAt === null) return true;
    return raw.readBigInt64BE(at) > raw.readBigInt64BE(previousAt) && rel >= raw.readInt32BE(previousAt + 8);
  }

  entry(n: number): TimestampOffset {
    const e = this.entryView(n);
    return { timestamp: e.readBigInt64BE(0), offset: this.baseOffset + BigInt(e.readInt32BE(8)) };
  }

  /** The last entry, or (-1, base offset) for an empty index, as Kafka reports it. */
  lastEntry(): TimestampOffset {
    return this.entries === 0 ? { timestamp: -1n, offset: this.baseOffset } : this.entry(this.entries - 1);
  }

  /** The last entry with timestamp ≤ `target`; (-1, base offset) when there is none. */
  lookup(target: bigint): TimestampOffset {
    const n = this.floorEntry((i) => this.entry(i).timestamp, target);
    return n < 0 ? { timestamp: -1n, offset: this.baseOffset } : this.entry(n);
  }

  /** Appends when `timestamp` is larger than the last entry's; returns whether it did. */
  maybeAppend(timestamp: bigint, offset: bigint): boolean {
    // An empty index counts as timestamp -1 (NO_TIMESTAMP), as in Kafka: batches without
    // timestamps never create entries.
    const n = this.entries;
    const lastAt = (n - 1) * TIME_INDEX_ENTRY_SIZE;
    if (timestamp <= (n === 0 ? -1n : this.lastTimestampAt(lastAt))) return false;
    const rel = this.relativeOffset(offset);
    if (n > 0 && rel < this.buf.readInt32BE(lastAt + 8)) {
      throw new InvalidIndexEntryError(
        `time index entry for offset ${offset} precedes ${this.lastEntry().offset} in ${this.path}`,
      );
    }
    const at = this.nextEntryAt();
    writeInt64(this.buf, timestamp, at);
    this.buf.writeInt32BE(rel, at + 8);
    this.commitEntry();
    return true;
  }

  /** Drops entries for offsets ≥ `offset`. */
  truncateTo(offset: bigint): void {
    this.truncateToEntries(this.ceilingEntry((i) => this.entry(i).offset, offset));
  }

  /**
   * The timestamp stored at `at`: built from two int32 reads while it is a safe integer (every
   * millisecond timestamp is), which costs a fraction of readBigInt64BE on the append path.
   */
  private lastTimestampAt(at: number): bigint {
    const n = this.buf.readInt32BE(at) * 0x1_0000_0000 + this.buf.readUInt32BE(at + 4);
    return Number.isSafeInteger(n) ? BigInt(n) : this.buf.readBigInt64BE(at);
  }
}
