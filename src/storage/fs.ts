import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeDirectories } from '../common/make-dirs.js';
import { linuxNativeFunction } from '../common/native-addon.js';
import type { ZeroCopySource } from './file-region.js';

/**
 * The file-system operations the storage layer needs, and nothing more, so tests can substitute
 * a faulty or counting implementation. Synchronous on purpose: like Kafka's log, an append or a
 * truncation is one uninterrupted step under the caller's control, and page-cache writes are cheap;
 * the only slow call is `sync()`, which the flush policy keeps rare.
 */
export interface FileHandle {
  /** Reads up to `length` bytes at `position` into `buf[offset..]`; returns the count read. */
  read(buf: Buffer, offset: number, length: number, position: number): number;
  /** Writes all of `buf` at `position`. */
  write(buf: Buffer, position: number): void;
  truncate(size: number): void;
  size(): number;
  sync(): void;
  close(): void;
  /**
   * The descriptor for sendfile and a count that changes with every truncation, or null once
   * closed; absent where there is no descriptor (test file systems). See file-region.ts.
   */
  zeroCopySource?(): ZeroCopySource | null;
  /**
   * Reserves the disk blocks of `[position, position + length)` without changing the file's size
   * (fallocate with FALLOC_FL_KEEP_SIZE); false when that cannot be done here. Absent where there
   * is nothing to reserve (test file systems). Reserved blocks past the end are given back by
   * `trimPreallocated`, or by any truncation.
   */
  preallocate?(position: number, length: number): boolean;
  /** Gives back the blocks reserved past the end of the file; the content does not change. */
  trimPreallocated?(): void;
}

/**
 * writeFileAtomic off the event loop. `stillWanted`, when given, is asked on the event loop when
 * the write's turn comes and again once the data is durable in the temporary file, and the rename
 * follows in the turn of that answer: false stops the write there, the file as it is and the
 * temporary one removed (a synchronous write of newer content took its place meanwhile — renamed
 * later, the older content would overwrite it). Resolves with whether the file was replaced.
 */
export type BackgroundWrite = (
  filePath: string,
  data: Buffer,
  stillWanted?: () => boolean,
) => Promise<boolean>;

export interface FileSystem {
  /** Opens for reading and writing; creates the file when `create` is set and it is missing. */
  open(filePath: string, create: boolean): FileHandle;
  exists(filePath: string): boolean;
  readFile(filePath: string): Buffer;
  /** Writes `data` to `<path>.tmp`, fsyncs it, renames it over `path` and fsyncs the directory. */
  writeFileAtomic(filePath: string, data: Buffer): void;
  /**
   * The same off the event loop (through `<path>.bg.tmp`, so it never meets a writeFileAtomic of
   * the same file); present only where enabled (NodeFileSystem with backgroundWrites). The periodic
   * checkpoints use it: their fsyncs wait for the file system's journal, which under a stream of
   * appends took up to ~340 ms here — on the event loop, a stall of every request of the broker.
   * See BackgroundWrite for `stillWanted`.
   */
  readonly writeFileAtomicInBackground?: BackgroundWrite;
  list(dir: string): string[];
  mkdirp(dir: string): void;
  rename(from: string, to: string): void;
  unlink(filePath: string): void;
  /** Removes an empty directory. */
  rmdir(dir: string): void;
  fileSize(filePath: string): number;
  isDirectory(filePath: string): boolean;
  syncDir(dir: string): void;
}

/** Whether `e` says the file is not there. */
export function isNotFound(e: unknown): boolean {
  return (e as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

/**
 * The file's bytes, or null when it does not exist: one open where exists() then readFile() made
 * two calls (a log's load reads several files that are usually there).
 */
export function readIfExists(fs: FileSystem, filePath: string): Buffer | null {
  try {
    return fs.readFile(filePath);
  } catch (e) {
    if (isNotFound(e)) return null;
    throw e;
  }
}

/** fs.open of an existing file, or null when it does not exist. */
export function openIfExists(fs: FileSystem, filePath: string): FileHandle | null {
  try {
    return fs.open(filePath, false);
  } catch (e) {
    if (isNotFound(e)) return null;
    throw e;
  }
}

/**
 * A file opened at its first use, and closed again by release() until the next: a segment's `.log`
 * (Kafka opens a segment's indexes lazily; here its log too), so a broker holding thousands of idle
 * partitions does not hold a descriptor for each. Its size is read from the directory entry while
 * it is not open. release() is for a file no FileRegion points into (a reopened file starts its
 * truncation count again); close() ends it for good.
 */
export class LazyFileHandle implements FileHandle {
  private closed = false;

  constructor(
    private readonly fs: FileSystem,
    private filePath: string,
    private handle: FileHandle | null = null,
  ) {}

  get path(): string {
    return this.filePath;
  }

  /** Whether a descriptor is held now. */
  get isOpen(): boolean {
    return this.handle !== null;
  }

  /** The file was renamed to `newPath`: an open descriptor follows it, a later open finds it there. */
  renamed(newPath: string): void {
    this.filePath = newPath;
  }

  private get file(): FileHandle {
    if (this.closed) throw new Error(`${this.filePath} is closed`);
    this.handle ??= this.fs.open(this.filePath, false);
    return this.handle;
  }

  read(buf: Buffer, offset: number, length: number, position: number): number {
    return this.file.read(buf, offset, length, position);
  }

  write(buf: Buffer, position: number): void {
    this.file.write(buf, position);
  }

  truncate(size: number): void {
    this.file.truncate(size);
  }

  size(): number {
    return this.handle !== null ? this.handle.size() : this.fs.fileSize(this.filePath);
  }

  sync(): void {
    // Not open: what it holds may still be in the page cache from before (a crash's survivors).
    this.file.sync();
  }

  /** Closes the descriptor, if one is held; the next use opens the file again. */
  release(): void {
    this.handle?.close();
    this.handle = null;
  }

  close(): void {
    this.release();
    this.closed = true;
  }

  zeroCopySource(): ZeroCopySource | null {
    if (this.closed) return null;
    return this.file.zeroCopySource?.() ?? null;
  }

  preallocate(position: number, length: number): boolean {
    return this.file.preallocate?.(position, length) ?? false;
  }

  trimPreallocated(): void {
    // Blocks are reserved through an open descriptor only: a file not open has none of this process's.
    this.handle?.trimPreallocated?.();
  }
}

class NodeFileHandle implements FileHandle {
  private generation = 0;
  private closed = false;

  constructor(private readonly fd: number) {}

  read(buf: Buffer, offset: number, length: number, position: number): number {
    let done = 0;
    while (done < length) {
      const n = fs.readSync(this.fd, buf, offset + done, length - done, position + done);
      if (n === 0) break;
      done += n;
    }
    return done;
  }

  write(buf: Buffer, position: number): void {
    let done = 0;
    while (done < buf.length) {
      done += fs.writeSync(this.fd, buf, done, buf.length - done, position + done);
    }
  }

  truncate(size: number): void {
    this.generation++;
    fs.ftruncateSync(this.fd, size);
  }

  size(): number {
    return fs.fstatSync(this.fd).size;
  }

  sync(): void {
    fs.fsyncSync(this.fd);
  }

  close(): void {
    this.closed = true;
    fs.closeSync(this.fd);
  }

  zeroCopySource(): ZeroCopySource | null {
    return this.closed ? null : { fd: this.fd, generation: this.generation };
  }

  preallocate(position: number, length: number): boolean {
    const fn = nativePreallocate();
    return fn !== null && fn(this.fd, position, length) === 0;
  }

  trimPreallocated(): void {
    // Truncating a file to its own size keeps every byte and frees the blocks past the end; the
    // generation stays, as no region read from the file changes.
    fs.ftruncateSync(this.fd, fs.fstatSync(this.fd).size);
  }
}

type Preallocate = (fd: number, position: number, length: number) => number;

/** Whether segment files get blocks reserved ahead of their appends here (see LogSegment). */
export function preallocationAvailable(): boolean {
  return nativePreallocate() !== null;
}

/** native/preallocate.c's fallocate(KEEP_SIZE): Linux with the addon built, SKIFF_PREALLOCATE not 0. */
const nativePreallocate = (): Preallocate | null =>
  linuxNativeFunction<Preallocate>('preallocate', 'SKIFF_PREALLOCATE');

/** The real disk, through node:fs. One instance serves every log (its background writes share one limit). */
export class NodeFileSystem implements FileSystem {
  readonly writeFileAtomicInBackground?: BackgroundWrite;

  constructor(options: { readonly backgroundWrites?: boolean } = {}) {
    if (options.backgroundWrites === true) {
      const limit = new ConcurrencyLimit(MAX_BACKGROUND_WRITES);
      this.writeFileAtomicInBackground = (filePath, data, stillWanted) =>
        limit.run(() => writeFileAtomicAsync(filePath, data, stillWanted));
    }
  }

  open(filePath: string, create: boolean): FileHandle {
    const flags = create ? fs.constants.O_RDWR | fs.constants.O_CREAT : fs.constants.O_RDWR;
    return new NodeFileHandle(fs.openSync(filePath, flags, 0o644));
  }

  exists(filePath: string): boolean {
    return fs.existsSync(filePath);
  }

  readFile(filePath: string): Buffer {
    return fs.readFileSync(filePath);
  }

  writeFileAtomic(filePath: string, data: Buffer): void {
    const tmp = `${filePath}.tmp`;
    const fd = fs.openSync(tmp, 'w', 0o644);
    try {
      let done = 0;
      while (done < data.length) done += fs.writeSync(fd, data, done, data.length - done);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, filePath);
    this.syncDir(path.dirname(filePath));
  }

  list(dir: string): string[] {
    return fs.readdirSync(dir);
  }

  mkdirp(dir: string): void {
    makeDirectories(dir);
  }

  rename(from: string, to: string): void {
    fs.renameSync(from, to);
  }

  unlink(filePath: string): void {
    fs.unlinkSync(filePath);
  }

  rmdir(dir: string): void {
    fs.rmdirSync(dir);
  }

  fileSize(filePath: string): number {
    return fs.statSync(filePath).size;
  }

  isDirectory(filePath: string): boolean {
    return fs.statSync(filePath).isDirectory();
  }

  syncDir(dir: string): void {
    // A directory fsync makes a rename durable; some platforms refuse to open directories.
    let fd: number;
    try {
      fd = fs.openSync(dir, 'r');
    } catch {
      return;
    }
    try {
      fs.fsyncSync(fd);
    } catch {
      // EINVAL/EISDIR on file systems without directory fsync: nothing more can be done.
    } finally {
      fs.closeSync(fd);
    }
  }
}

/**
 * Background writes under way at once; more wait their turn. Each holds a descriptor and a thread
 * of libuv's pool (4 by default) while it writes and fsyncs: thousands at once (every partition's
 * leader-epoch-checkpoint after a restart) would hold thousands of descriptors and stand before
 * every other use of the pool.
 */
const MAX_BACKGROUND_WRITES = 2;

/** Runs at most `max` of the promised tasks at once, the others in the order they came. */
class ConcurrencyLimit {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly max: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await task();
    } finally {
      // The slot passes to the next task waiting, or is freed.
      const next = this.waiting.shift();
      if (next !== undefined) next();
      else this.running--;
    }
  }
}

/** writeFileAtomic on the libuv thread pool, through `<path>.bg.tmp` (see BackgroundWrite). */
async function writeFileAtomicAsync(
  filePath: string,
  data: Buffer,
  stillWanted?: () => boolean,
): Promise<boolean> {
  if (stillWanted?.() === false) return false;
  const tmp = `${filePath}.bg.tmp`;
  const file = await fs.promises.open(tmp, 'w', 0o644);
  try {
    await file.writeFile(data);
    await file.sync();
  } finally {
    await file.close();
  }
  if (stillWanted === undefined) {
    await fs.promises.rename(tmp, filePath);
  } else if (stillWanted()) {
    // In the turn that checked: no synchronous write of the file can come in between.
    fs.renameSync(tmp, filePath);
  } else {
    await fs.promises.unlink(tmp);
    return false;
  }
  // As syncDir: a directory fsync makes the rename durable, where the platform allows it.
  const dir = await fs.promises.open(path.dirname(filePath), 'r').catch(() => null);
  if (dir === null) return true;
  try {
    await dir.sync();
  } catch {
    // not supported for directories here
  } finally {
    await dir.close();
  }
  return true;
}
