import * as fs from 'node:fs';
import type { BackgroundWrite, FileHandle, FileSystem } from './fs.js';

/**
 * A slow disk on purpose, for fault tests (issue 23): every write (pwrite) and every fsync through
 * the wrapped FileSystem takes `writeMs` / `syncMs` longer. The storage layer's disk calls are
 * synchronous, so the delay blocks as a slow device blocks them: the appends, the flushes and the
 * checkpoints of this process wait, and so does everything else its event loop would have done.
 * Reads are not delayed (the page cache answers them on a real slow disk too).
 *
 * Only a test process turns it on: `SKIFF_TEST_DISK_DELAYS=<file>` in a broker's environment
 * (processBrokerDeps) names a JSON file `{"writeMs": 0, "syncMs": 0}` that the test rewrites to
 * change the delays while the broker runs; it is read again at most every RELOAD_MS.
 */
export interface DiskDelays {
  readonly writeMs: number;
  readonly syncMs: number;
}

export const DISK_DELAYS_ENV = 'SKIFF_TEST_DISK_DELAYS';
const RELOAD_MS = 250;
const NONE: DiskDelays = { writeMs: 0, syncMs: 0 };

/** Blocks the thread for `ms` (what a synchronous call on a slow device does). */
function blockFor(ms: number): void {
  if (ms > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** The delays in `file`, read again at most every RELOAD_MS of `nowMs`; a file being rewritten keeps the last ones. */
export function delaysFromFile(file: string, nowMs: () => number): () => DiskDelays {
  let current = NONE;
  let readAtMs = Number.NEGATIVE_INFINITY;
  return () => {
    const now = nowMs();
    if (now - readAtMs < RELOAD_MS) return current;
    readAtMs = now;
    try {
      const v = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<DiskDelays>;
      current = { writeMs: Number(v.writeMs ?? 0) || 0, syncMs: Number(v.syncMs ?? 0) || 0 };
    } catch {
      // Missing or half-written: the previous delays stay.
    }
    return current;
  };
}

export class DelayingFileSystem implements FileSystem {
  readonly writeFileAtomicInBackground?: BackgroundWrite;

  constructor(
    private readonly inner: FileSystem,
    private readonly delays: () => DiskDelays,
  ) {
    const background = inner.writeFileAtomicInBackground;
    if (background !== undefined) {
      // Off the event loop: the delay is a wait, not a block, as the thread pool's fsync would be.
      this.writeFileAtomicInBackground = async (filePath, data, stillWanted) => {
        const { writeMs, syncMs } = this.delays();
        if (writeMs + syncMs > 0) await new Promise((r) => setTimeout(r, writeMs + syncMs));
        return background(filePath, data, stillWanted);
      };
    }
  }

  open(filePath: string, create: boolean): FileHandle {
    const h = this.inner.open(filePath, create);
    const write = h.write.bind(h);
    const sync = h.sync.bind(h);
    h.write = (buf, position) => {
      blockFor(this.delays().writeMs);
      write(buf, position);
    };
    h.sync = () => {
      blockFor(this.delays().syncMs);
      sync();
    };
    return h;
  }

  writeFileAtomic(filePath: string, data: Buffer): void {
    const { writeMs, syncMs } = this.delays();
    blockFor(writeMs + syncMs);
    this.inner.writeFileAtomic(filePath, data);
  }

  syncDir(dir: string): void {
    blockFor(this.delays().syncMs);
    this.inner.syncDir(dir);
  }

  exists(filePath: string): boolean {
    return this.inner.exists(filePath);
  }
  readFile(filePath: string): Buffer {
    return this.inner.readFile(filePath);
  }
  list(dir: string): string[] {
    return this.inner.list(dir);
  }
  mkdirp(dir: string): void {
    this.inner.mkdirp(dir);
  }
  rename(from: string, to: string): void {
    this.inner.rename(from, to);
  }
  unlink(filePath: string): void {
    this.inner.unlink(filePath);
  }
  rmdir(dir: string): void {
    this.inner.rmdir(dir);
  }
  fileSize(filePath: string): number {
    return this.inner.fileSize(filePath);
  }
  isDirectory(filePath: string): boolean {
    return this.inner.isDirectory(filePath);
  }
}
