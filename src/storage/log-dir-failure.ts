import * as path from 'node:path';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { KafkaError } from '../protocol/kafka-error.js';
import type { BackgroundWrite, FileHandle, FileSystem } from './fs.js';

/**
 * Kafka's JBOD failure handling, storage side. Kafka turns any IOException on a log dir into
 * "this dir is offline until restart" (LogDirFailureChannel): the dir's partitions stop being
 * served, the broker goes on with its other dirs. Here the one place that sees every disk
 * operation is the FileSystem seam, so the detection is a FileSystem wrapper
 * (FailureDetectingFileSystem) rather than try/catches around each append, flush, roll and
 * checkpoint: an operation on a path inside a log dir that fails with an error of the device
 * (full, read-only, I/O error) marks that dir offline and throws KAFKA_STORAGE_ERROR; every later
 * operation there throws it at once, without touching the disk.
 */

/**
 * Error codes that say the device under a dir failed, not that the caller asked for something
 * wrong (ENOENT, EEXIST, EISDIR stay ordinary errors: the storage layer handles them itself).
 */
const DEVICE_ERROR_CODES: ReadonlySet<string> = new Set([
  'ENOSPC',
  'EDQUOT',
  'EIO',
  'EROFS',
  'EFBIG',
  'ENODEV',
  'ENXIO',
  'ESTALE',
]);

/** Whether `e` is an error of the device under a log dir. */
export function isDeviceError(e: unknown): e is NodeJS.ErrnoException {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && DEVICE_ERROR_CODES.has(code);
}

/** Whether `e` is the refusal of an operation on an offline log dir (KAFKA_STORAGE_ERROR). */
export function isStorageError(e: unknown): e is KafkaError {
  return e instanceof KafkaError && e.code === ErrorCode.KAFKA_STORAGE_ERROR;
}

/** An offline log dir and the error that took it offline (what `skiff log-dirs` shows). */
export interface OfflineLogDir {
  readonly dir: string;
  readonly error: string;
  readonly sinceMs: number;
}

/**
 * The broker's set of offline log dirs (Kafka's LogDirFailureChannel). Anything that does disk
 * I/O reports a failed dir with maybeAddOfflineLogDir; the first report of a dir logs it and
 * hands the dir to the listeners on the next turn of the event loop (Kafka's
 * LogDirFailureHandler thread), never inside the failed call, whose caller is mid-append. A dir
 * stays offline until the broker restarts. Owned by the Broker; one per process.
 */
export class LogDirFailureChannel {
  private readonly offline = new Map<string, OfflineLogDir>();
  private readonly listeners: ((dir: string) => void)[] = [];
  /** The log dirs normalised, longest first, so a nested dir wins the prefix match. */
  private readonly dirs: readonly string[];
  /** Each of `dirs` followed by the separator. */
  private readonly dirPrefixes: readonly string[];

  constructor(
    logDirs: readonly string[],
    private readonly clock: Clock,
    private readonly scheduler: Scheduler,
    private readonly logger: Logger,
  ) {
    this.dirs = logDirs.map(normalizeDir).sort((a, b) => b.length - a.length);
    this.dirPrefixes = this.dirs.map((d) => d + path.sep);
  }

  /** The log dir (as configured, normalised) holding `filePath`; null outside every log dir. */
  logDirOf(filePath: string): string | null {
    // Asked at every disk operation: a path with nothing to normalise (no `.` or `..` step, no
    // doubled separator) is taken as it is — path.normalize was a tenth of a restart's load.
    const p =
      filePath.startsWith('.') ||
      filePath.includes(`${path.sep}.`) ||
      filePath.includes(`${path.sep}${path.sep}`)
        ? path.normalize(filePath)
        : filePath;
    for (let i = 0; i < this.dirs.length; i++) {
      const d = this.dirs[i]!;
      if (p.startsWith(this.dirPrefixes[i]!) || p === d) return d;
    }
    return null;
  }

  hasOfflineLogDir(dir: string): boolean {
    return this.offline.size > 0 && this.offline.has(normalizeDir(dir));
  }

  /** hasOfflineLogDir for a dir logDirOf returned (already normalised): no path work per call. */
  isOffline(logDir: string): boolean {
    return this.offline.has(logDir);
  }

  offlineLogDirs(): OfflineLogDir[] {
    return [...this.offline.values()];
  }

  /** Runs `listener` with each dir that goes offline, once per dir. */
  onOfflineLogDir(listener: (dir: string) => void): void {
    this.listeners.push(listener);
  }

  /** Marks `dir` offline; the first report of a dir logs `message` and the error and tells the listeners. */
  maybeAddOfflineLogDir(dir: string, message: string, error: Error): void {
    const d = normalizeDir(dir);
    if (this.offline.has(d)) return;
    this.offline.set(d, { dir: d, error: error.message, sinceMs: this.clock.nowMs() });
    this.logger.warn(`${message}: ${error.message}. Stopping serving replicas in dir ${d}`, {
      event: 'log-dir-offline',
      logDir: d,
      error: error.message,
    });
    this.scheduler.schedule(`log-dir-failure-${d}`, 0, () => {
      for (const l of this.listeners) l(d);
    });
  }

  /** What a request touching an offline dir answers (Kafka's KafkaStorageException). */
  storageError(dir: string): KafkaError {
    const d = normalizeDir(dir);
    const why = this.offline.get(d)?.error;
    return KafkaError.fromCode(
      ErrorCode.KAFKA_STORAGE_ERROR,
      `Log dir ${d} is offline${why === undefined ? '' : ` (${why})`}`,
    );
  }
}

/**
 * The scheduler of the storage layer's background work (segment flushes after a roll, deferred
 * deletions, periodic checkpoints and flushes): a task that meets an offline log dir ends there,
 * as Kafka's scheduled tasks end on a KafkaStorageException — the channel already has the dir, and
 * its handler takes the dir's logs out of service. Any other error still escapes.
 */
export function storageTaskScheduler(inner: Scheduler): Scheduler {
  return {
    schedule: (name, delayMs, task) =>
      inner.schedule(name, delayMs, () => {
        try {
          task();
        } catch (e) {
          if (!isStorageError(e)) throw e;
        }
      }),
  };
}

/** A log dir's one spelling (normalised, no trailing separator), as the channel names it. */
export function normalizeDir(dir: string): string {
  const n = path.normalize(dir);
  return n.length > 1 && n.endsWith(path.sep) ? n.slice(0, -1) : n;
}

/**
 * The disk as the log manager sees it: every operation on a path in a log dir is refused with
 * KAFKA_STORAGE_ERROR once the dir is offline, and a device error there takes the dir offline.
 * Paths outside the log dirs pass through untouched.
 */
export class FailureDetectingFileSystem implements FileSystem {
  readonly writeFileAtomicInBackground?: BackgroundWrite;

  constructor(
    private readonly inner: FileSystem,
    private readonly channel: LogDirFailureChannel,
  ) {
    const background = inner.writeFileAtomicInBackground;
    if (background !== undefined) {
      this.writeFileAtomicInBackground = async (filePath, data, stillWanted) => {
        const dir = this.admit(filePath);
        try {
          return await background(filePath, data, stillWanted);
        } catch (e) {
          throw this.failed(dir, 'writing', filePath, e);
        }
      };
    }
  }

  /** The log dir of `filePath` (null: none); throws if that dir is offline. */
  private admit(filePath: string): string | null {
    const dir = this.channel.logDirOf(filePath);
    if (dir !== null && this.channel.isOffline(dir)) throw this.channel.storageError(dir);
    return dir;
  }

  /** The error to throw for `e`: a device error in a log dir takes the dir offline. */
  private failed(dir: string | null, what: string, filePath: string, e: unknown): unknown {
    if (dir === null || !isDeviceError(e)) return e;
    this.channel.maybeAddOfflineLogDir(dir, `Error while ${what} ${filePath} in dir ${dir}`, e);
    return this.channel.storageError(dir);
  }

  private guard<T>(filePath: string, what: string, op: () => T): T {
    return this.guardIn(this.channel.logDirOf(filePath), filePath, what, op);
  }

  /** guard for a path whose log dir is known (an open file's): one set lookup per call. */
  private guardIn<T>(dir: string | null, filePath: string, what: string, op: () => T): T {
    if (dir !== null && this.channel.isOffline(dir)) throw this.channel.storageError(dir);
    try {
      return op();
    } catch (e) {
      throw this.failed(dir, what, filePath, e);
    }
  }

  open(filePath: string, create: boolean): FileHandle {
    const dir = this.channel.logDirOf(filePath);
    const inner = this.guardIn(dir, filePath, 'opening', () => this.inner.open(filePath, create));
    return dir === null ? inner : this.guardedHandle(inner, dir, filePath);
  }

  /**
   * `inner` with every call refused once `dir` is offline and device errors taking it offline; the
   * dir is found once, at the open (an append or read is too frequent for path work each time).
   */
  private guardedHandle(inner: FileHandle, dir: string, filePath: string): FileHandle {
    const g = <T>(what: string, op: () => T): T => this.guardIn(dir, filePath, what, op);
    return {
      read: (buf, offset, length, position) => g('reading', () => inner.read(buf, offset, length, position)),
      write: (buf, position) => g('writing to', () => inner.write(buf, position)),
      truncate: (size) => g('truncating', () => inner.truncate(size)),
      size: () => g('reading the size of', () => inner.size()),
      sync: () => g('flushing', () => inner.sync()),
      // Closing releases the descriptor whatever the dir's state: an offline log closes its files.
      close: () => inner.close(),
      ...(inner.zeroCopySource && { zeroCopySource: () => inner.zeroCopySource!() }),
      ...(inner.preallocate && {
        preallocate: (position: number, length: number) =>
          g('preallocating', () => inner.preallocate!(position, length)),
      }),
      ...(inner.trimPreallocated && {
        trimPreallocated: () => g('trimming', () => inner.trimPreallocated!()),
      }),
    };
  }

  exists(filePath: string): boolean {
    return this.guard(filePath, 'checking', () => this.inner.exists(filePath));
  }
  readFile(filePath: string): Buffer {
    return this.guard(filePath, 'reading', () => this.inner.readFile(filePath));
  }
  writeFileAtomic(filePath: string, data: Buffer): void {
    this.guard(filePath, 'writing', () => this.inner.writeFileAtomic(filePath, data));
  }
  list(dir: string): string[] {
    return this.guard(dir, 'listing', () => this.inner.list(dir));
  }
  mkdirp(dir: string): void {
    this.guard(dir, 'creating', () => this.inner.mkdirp(dir));
  }
  rename(from: string, to: string): void {
    this.guard(from, 'renaming', () => this.inner.rename(from, to));
  }
  unlink(filePath: string): void {
    this.guard(filePath, 'deleting', () => this.inner.unlink(filePath));
  }
  rmdir(dir: string): void {
    this.guard(dir, 'deleting', () => this.inner.rmdir(dir));
  }
  fileSize(filePath: string): number {
    return this.guard(filePath, 'reading the size of', () => this.inner.fileSize(filePath));
  }
  isDirectory(filePath: string): boolean {
    return this.guard(filePath, 'checking', () => this.inner.isDirectory(filePath));
  }
  syncDir(dir: string): void {
    this.guard(dir, 'flushing', () => this.inner.syncDir(dir));
  }
}
