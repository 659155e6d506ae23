import {
  closeSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import { LIMITS } from '../common/limits.js';
import type { KeyValue } from './store.js';

/**
 * Durability for the embedded store: a snapshot file (whole state at one revision, replaced
 * atomically by tmp + fsync + rename) and an append-only journal of committed transactions since.
 * A transaction is acknowledged only after its journal line is fsynced; lines are group-committed
 * so a burst of transactions (a failover of 1,000 partitions) costs a handful of fsyncs.
 *
 * Owned by one EmbeddedStore; not safe for two processes on one directory (the store is embedded in
 * one launcher process by design).
 */

/** A change as journalled: puts and single-key deletes, prefixes already expanded. */
export type JournalOp = readonly ['p', string, string, string] | readonly ['d', string];

export interface JournalEntry {
  readonly revision: bigint;
  readonly ops: readonly JournalOp[];
}

export interface LoadedState {
  readonly revision: bigint;
  readonly kvs: KeyValue[];
  /** Lines dropped at the end of the journal because they were torn or unreadable. */
  readonly droppedBytes: number;
}

interface SnapshotFile {
  readonly format: 'skiff-metadata-snapshot-v1';
  readonly revision: string;
  readonly kvs: readonly [string, string, string, string, string, string][];
}

const SNAPSHOT = 'metadata.snapshot';
const JOURNAL = 'metadata.journal';

export function loadState(dir: string): LoadedState {
  const byKey = new Map<string, KeyValue>();
  let revision = 0n;
  const snapshotText = readIfExists(join(dir, SNAPSHOT));
  if (snapshotText !== null) {
    const snap = JSON.parse(snapshotText) as SnapshotFile;
    if (snap.format !== 'skiff-metadata-snapshot-v1') throw new Error(`unknown snapshot format in ${dir}`);
    revision = BigInt(snap.revision);
    for (const [key, value, c, m, v, l] of snap.kvs) {
      byKey.set(key, {
        key,
        value,
        createRevision: BigInt(c),
        modRevision: BigInt(m),
        version: BigInt(v),
        lease: BigInt(l),
      });
    }
  }
  const journalPath = join(dir, JOURNAL);
  const journal = readIfExists(journalPath) ?? '';
  let validBytes = 0;
  for (const line of journal.split('\n')) {
    if (line.length === 0) break;
    const entry = parseLine(line);
    if (entry === null) break;
    validBytes += Buffer.byteLength(line) + 1;
    // Lines up to the snapshot's revision were folded into it before the journal was truncated.
    if (entry.revision <= revision) continue;
    revision = entry.revision;
    applyOps(byKey, entry);
  }
  const droppedBytes = Buffer.byteLength(journal) - validBytes;
  // A torn tail was never acknowledged (acknowledgement follows fsync): cut it so appends stay aligned.
  if (droppedBytes > 0) truncateSync(journalPath, validBytes);
  return { revision, kvs: [...byKey.values()], droppedBytes };
}

export function applyOps(byKey: Map<string, KeyValue>, entry: JournalEntry): void {
  for (const op of entry.ops) {
    if (op[0] === 'd') {
      byKey.delete(op[1]);
      continue;
    }
    const [, key, value, lease] = op;
    const old = byKey.get(key);
    byKey.set(key, {
      key,
      value,
      createRevision: old?.createRevision ?? entry.revision,
      modRevision: entry.revision,
      version: (old?.version ?? 0n) + 1n,
      lease: BigInt(lease),
    });
  }
}

function parseLine(line: string): JournalEntry | null {
  try {
    const raw = JSON.parse(line) as { r: string; o: JournalOp[] };
    if (typeof raw.r !== 'string' || !Array.isArray(raw.o)) return null;
    return { revision: BigInt(raw.r), ops: raw.o };
  } catch {
    return null;
  }
}

function readIfExists(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function writeSnapshot(dir: string, revision: bigint, kvs: Iterable<KeyValue>): void {
  const file: SnapshotFile = {
    format: 'skiff-metadata-snapshot-v1',
    revision: revision.toString(),
    kvs: [...kvs].map((kv) => [
      kv.key,
      kv.value,
      kv.createRevision.toString(),
      kv.modRevision.toString(),
      kv.version.toString(),
      kv.lease.toString(),
    ]),
  };
  const tmp = join(dir, `${SNAPSHOT}.tmp`);
  const fd = openSync(tmp, 'w');
  try {
    writeFileSync(fd, JSON.stringify(file));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, join(dir, SNAPSHOT));
  fsyncDir(dir);
}

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/** The append side: group commit of journal lines. */
export class JournalWriter {
  private handle: FileHandle | null = null;
  private pending: string[] = [];
  private waiters: Waiter[] = [];
  private flushing = false;
  private bytes = 0;

  private constructor(
    private readonly dir: string,
    private readonly snapshotSource: () => { revision: bigint; kvs: Iterable<KeyValue> },
  ) {}

  static async open(
    dir: string,
    snapshotSource: () => { revision: bigint; kvs: Iterable<KeyValue> },
  ): Promise<JournalWriter> {
    const writer = new JournalWriter(dir, snapshotSource);
    writer.handle = await open(join(dir, JOURNAL), 'a');
    writer.bytes = (await writer.handle.stat()).size;
    return writer;
  }

  /** Resolves once `entry` is on disk. Entries are written in the order they are appended. */
  append(entry: JournalEntry): Promise<void> {
    this.pending.push(JSON.stringify({ r: entry.revision.toString(), o: entry.ops }));
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (!this.flushing) void this.flushLoop();
    return done;
  }

  private async flushLoop(): Promise<void> {
    this.flushing = true;
    try {
      while (this.pending.length > 0) {
        const lines = this.pending;
        const waiters = this.waiters;
        this.pending = [];
        this.waiters = [];
        try {
          const handle = this.handle;
          if (handle === null) throw new Error('metadata journal is closed');
          const buf = Buffer.from(`${lines.join('\n')}\n`);
          await handle.write(buf);
          await handle.datasync();
          this.bytes += buf.length;
          if (this.bytes > LIMITS.metadataJournalBytes) await this.compact();
          for (const w of waiters) w.resolve();
        } catch (e) {
          for (const w of waiters) w.reject(e);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** Folds the journal into a new snapshot. The in-memory state includes every line written so far. */
  private async compact(): Promise<void> {
    const { revision, kvs } = this.snapshotSource();
    writeSnapshot(this.dir, revision, kvs);
    // Safe to cut: every line is at or below the snapshot's revision, and loading skips such lines.
    await this.handle?.truncate(0);
    await this.handle?.datasync();
    this.bytes = 0;
  }

  async close(): Promise<void> {
    while (this.flushing || this.pending.length > 0) {
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    await this.handle?.close();
    this.handle = null;
  }
}
