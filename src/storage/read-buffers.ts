/**
 * Buffers for segment reads that leave the broker in Fetch responses, reused once the socket has
 * taken their bytes. A consumer reading a log back asks for ~1 MiB per Fetch; a fresh 1 MiB
 * buffer per read costs an mmap, page faults on every page and, in aggregate, garbage-collector
 * work for the external memory — more than the read itself. Kafka sends stored bytes with
 * sendfile; the nearest Node can do is read into memory it already owns.
 *
 * The contract is narrow on purpose: `acquire` hands out a buffer, and only the code that knows
 * nothing else holds it any more calls `release` — the server connection, after the socket write
 * of a response chunk completed (the kernel has copied it). A buffer that is never released (a
 * read that was dropped, encoded by copying, or used in-process) is simply garbage collected, as
 * before. `release` of anything `acquire` did not hand out, or a second release, does nothing.
 * Single-threaded: one pool per process.
 */
import { LIMITS } from '../common/limits.js';

const MIN_POOLED_BYTES = 64 * 1024;

export class ReadBufferPool {
  /** Free backing buffers by capacity (a power of two). */
  private readonly free = new Map<number, Buffer[]>();
  private freeBytes = 0;
  /** Views handed out and not yet released → the backing buffer they cut. */
  private readonly outstanding = new WeakMap<Buffer, Buffer>();
  /** Counters for tests and diagnostics. */
  allocated = 0;
  reused = 0;

  constructor(
    private readonly minPooledBytes = MIN_POOLED_BYTES,
    private readonly maxPooledBytes = LIMITS.pooledReadBufferBytes,
    private readonly maxFreeBytes = LIMITS.freeReadBufferBytes,
  ) {}

  /** A buffer of exactly `size` bytes, contents undefined. */
  acquire(size: number): Buffer {
    if (size < this.minPooledBytes || size > this.maxPooledBytes) return Buffer.allocUnsafe(size);
    const capacity = 2 ** Math.ceil(Math.log2(size));
    let backing = this.free.get(capacity)?.pop();
    if (backing) {
      this.freeBytes -= capacity;
      this.reused++;
    } else {
      backing = Buffer.allocUnsafeSlow(capacity);
      this.allocated++;
    }
    const view = backing.subarray(0, size);
    this.outstanding.set(view, backing);
    return view;
  }

  /** Whether `buf` is a buffer handed out by acquire and not released yet. */
  owns(buf: Buffer): boolean {
    return this.outstanding.has(buf);
  }

  /** Takes back a buffer acquire() handed out; nothing may read or write it afterwards. */
  release(buf: Buffer): void {
    const backing = this.outstanding.get(buf);
    if (backing === undefined) return;
    this.outstanding.delete(buf);
    if (this.freeBytes + backing.length > this.maxFreeBytes) return;
    const list = this.free.get(backing.length);
    if (list) list.push(backing);
    else this.free.set(backing.length, [backing]);
    this.freeBytes += backing.length;
  }
}

/** The process's pool: segment reads acquire from it, server connections release into it. */
export const readBuffers = new ReadBufferPool();
