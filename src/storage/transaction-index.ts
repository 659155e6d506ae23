import type { FileHandle, FileSystem } from './fs.js';

export const TXN_INDEX_FILE_SUFFIX = '.txnindex';
/** Kafka's AbortedTxn: int16 version, int64 producer id, first offset, last offset, LSO. */
export const ABORTED_TXN_SIZE = 34;
const ABORTED_TXN_VERSION = 0;

/**
 * An aborted transaction in a segment's `.txnindex`: its first data offset, the offset of its
 * ABORT marker (lastOffset) and the LSO when it ended.
 */
export interface AbortedTxn {
  readonly producerId: bigint;
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  readonly lastStableOffset: bigint;
}

export function encodeAbortedTxn(t: AbortedTxn): Buffer {
  const b = Buffer.alloc(ABORTED_TXN_SIZE);
  b.writeInt16BE(ABORTED_TXN_VERSION, 0);
  b.writeBigInt64BE(t.producerId, 2);
  b.writeBigInt64BE(t.firstOffset, 10);
  b.writeBigInt64BE(t.lastOffset, 18);
  b.writeBigInt64BE(t.lastStableOffset, 26);
  return b;
}

/**
 * The entries of a `.txnindex` file; a torn last entry is left out and an entry of another
 * version is an error (Kafka's AbortedTxn checks its version).
 */
export function decodeTransactionIndex(buf: Buffer, filePath: string): AbortedTxn[] {
  const out: AbortedTxn[] = [];
  for (let at = 0; at + ABORTED_TXN_SIZE <= buf.length; at += ABORTED_TXN_SIZE) {
    const version = buf.readInt16BE(at);
    if (version !== ABORTED_TXN_VERSION) {
      throw new Error(
        `${filePath}: aborted transaction version ${version} at byte ${at}, expected ${ABORTED_TXN_VERSION}`,
      );
    }
    out.push({
      producerId: buf.readBigInt64BE(at + 2),
      firstOffset: buf.readBigInt64BE(at + 10),
      lastOffset: buf.readBigInt64BE(at + 18),
      lastStableOffset: buf.readBigInt64BE(at + 26),
    });
  }
  return out;
}

/**
 * One segment's `.txnindex` (Kafka's TransactionIndex): the transactions aborted by a marker in
 * the segment, in marker order. The file exists only once something is appended; the entries are
 * read once and kept (34 bytes each), so a read_committed fetch reads no file. Owned by its
 * LogSegment; single-threaded.
 */
export class TransactionIndex {
  private handle: FileHandle | null = null;
  private entries: AbortedTxn[] | null = null;

  constructor(
    private readonly fs: FileSystem,
    private filePath: string,
  ) {}

  get path(): string {
    return this.filePath;
  }

  /** The file is known not to exist (its directory was just listed): all() reads nothing. */
  markAbsent(): void {
    this.entries ??= [];
  }

  all(): readonly AbortedTxn[] {
    this.entries ??= this.fs.exists(this.filePath)
      ? decodeTransactionIndex(this.fs.readFile(this.filePath), this.filePath)
      : [];
    return this.entries;
  }

  /** Appends an entry; its marker must follow the last one's (a programmer error otherwise). */
  append(t: AbortedTxn): void {
    const entries = this.all() as AbortedTxn[];
    const last = entries.at(-1);
    if (last && last.lastOffset >= t.lastOffset) {
      throw new Error(
        `${this.filePath}: the last offset of appended transactions must increase: ${t.lastOffset} after ${last.lastOffset}`,
      );
    }
    this.handle ??= this.fs.open(this.filePath, true);
    this.handle.write(encodeAbortedTxn(t), entries.length * ABORTED_TXN_SIZE);
    entries.push(t);
  }

  /** Removes the entries whose marker is at or after `offset` (Kafka's truncateTo). */
  truncateTo(offset: bigint): void {
    const entries = this.all() as AbortedTxn[];
    const keep = entries.findIndex((t) => t.lastOffset >= offset);
    if (keep < 0) return;
    entries.length = keep;
    if (!this.fs.exists(this.filePath)) return;
    this.handle ??= this.fs.open(this.filePath, false);
    this.handle.truncate(keep * ABORTED_TXN_SIZE);
  }

  /**
   * Kafka's collectAbortedTxns: the transactions aborted in [fetchOffset, upperBoundOffset) —
   * marker at or after fetchOffset, data starting before upperBoundOffset; `complete` once an
   * entry's LSO reaches upperBoundOffset (no later segment can add one that started before it).
   */
  collect(fetchOffset: bigint, upperBoundOffset: bigint, out: AbortedTxn[]): boolean {
    for (const t of this.all()) {
      if (t.lastOffset >= fetchOffset && t.firstOffset < upperBoundOffset) out.push(t);
      if (t.lastStableOffset >= upperBoundOffset) return true;
    }
    return false;
  }

  flush(): void {
    this.handle?.sync();
  }

  closeHandle(): void {
    this.handle?.close();
    this.handle = null;
  }

  renameTo(newPath: string): void {
    this.closeHandle();
    if (this.fs.exists(this.filePath)) this.fs.rename(this.filePath, newPath);
    this.filePath = newPath;
  }

  deleteIfExists(): void {
    this.closeHandle();
    if (this.fs.exists(this.filePath)) this.fs.unlink(this.filePath);
    this.entries = [];
  }
}
