import { ProtocolError } from './protocol-error.js';

/** Kafka's `socket.request.max.bytes` default: the largest request frame a broker accepts. */
export const DEFAULT_MAX_FRAME_BYTES = 104_857_600;

/** A frame length is an int32, so no limit can usefully exceed this. */
const MAX_INT32 = 0x7fffffff;
const SIZE_PREFIX_BYTES = 4;

export interface FrameReaderOptions {
  /** Largest payload accepted, in bytes, not counting the 4-byte size prefix. */
  maxFrameBytes?: number;
  /**
   * Where frames spanning chunks are assembled. Without one each such frame gets a fresh buffer;
   * with one, the owner must give every frame back (FramePool.release) once nothing refers to it
   * any more, or at least let it go: a frame never released is simply collected.
   */
  pool?: FramePool;
  /**
   * Copy every frame out of the pushed chunks as its bytes arrive (into the pool, or a fresh
   * buffer), never returning a view of a chunk: for chunks read into one reused buffer (a socket's
   * `onread`), which the next read overwrites.
   */
  copyFrames?: boolean;
  /**
   * With copyFrames, how much to reserve for a frame: its announced size at once ('announced', for
   * answers from a broker we asked), or room that grows (doubling) with the bytes actually received
   * ('received', for what clients send: a peer that announces a large frame and sends slowly holds
   * at most twice what it sent).
   */
  reserve?: 'announced' | 'received';
}

/** A copied frame's first reservation under reserve 'received', unless the frame is smaller. */
const INITIAL_RESERVE = 64 * 1024;
/** Copied frames up to this size come from Node's shared small-buffer slabs, not the pool. */
const SMALL_FRAME = 4 * 1024;

/** Frames are assembled in multiples of this, so frames of nearby sizes can share a buffer. */
const POOL_GRANULE = 64 * 1024;

/**
 * Reusable buffers for frames that span socket chunks. A fresh large Buffer costs page faults on
 * first touch and adds to the garbage collector's external-memory pressure, several times what
 * copying into already-touched memory costs (a 1 MB produce request arrives as ~16 socket reads
 * of 64 KiB and is copied once). A buffer taken for a frame is lent until release(frame); only then
 * may the next frame reuse it, so the frame's owner decides when its bytes are dead. At most
 * `maxBytes` of idle buffers are kept; a frame that is never released is garbage like any other.
 */
export class FramePool {
  private readonly spare: Buffer[] = [];
  private spareBytes = 0;
  // Backing stores currently lent out as frames; weak, so an unreleased frame is not pinned.
  private readonly lent = new WeakSet<ArrayBufferLike>();

  constructor(readonly maxBytes: number) {}

  /** Idle buffers kept for reuse, in bytes. */
  get idleBytes(): number {
    return this.spareBytes;
  }

  /** A buffer of at least `size` bytes, lent until release() of a frame that views it. */
  take(size: number): Buffer {
    const spare = this.takeSpare(size);
    if (spare !== null) return spare;
    // Its own ArrayBuffer at offset 0 (never Node's shared small-buffer pool), so a frame's
    // backing store identifies the lent buffer.
    const buf = Buffer.allocUnsafeSlow(Math.ceil(Math.max(size, 1) / POOL_GRANULE) * POOL_GRANULE);
    this.lent.add(buf.buffer);
    return buf;
  }

  /** The smallest idle buffer of at least `size` bytes, lent like take()'s; null when none is idle. */
  takeSpare(size: number): Buffer | null {
    let best = -1;
    for (let i = 0; i < this.spare.length; i++) {
      const b = this.spare[i]!;
      if (b.length >= size && (best < 0 || b.length < this.spare[best]!.length)) best = i;
    }
    if (best < 0) return null;
    const buf = this.spare[best]!;
    this.spare.splice(best, 1);
    this.spareBytes -= buf.length;
    this.lent.add(buf.buffer);
    return buf;
  }

  /**
   * Gives back a frame's buffer if it came from this pool (anything else is ignored). Over
   * maxBytes the smallest idle buffers go first: a large frame needs a large buffer, and the small
   * ones left behind by growing reservations would otherwise crowd the large ones out.
   */
  release(frame: Buffer): void {
    const store = frame.buffer;
    if (!this.lent.delete(store)) return;
    if (store.byteLength > this.maxBytes) return;
    this.spare.push(Buffer.from(store, 0, store.byteLength));
    this.spareBytes += store.byteLength;
    while (this.spareBytes > this.maxBytes) {
      let smallest = 0;
      for (let i = 1; i < this.spare.length; i++) {
        if (this.spare[i]!.length < this.spare[smallest]!.length) smallest = i;
      }
      this.spareBytes -= this.spare[smallest]!.length;
      this.spare.splice(smallest, 1);
    }
  }
}

/**
 * Splits a byte stream into Kafka's size-prefixed frames (int32 big-endian length, then that many
 * bytes), whatever the chunking of the socket.
 *
 * Owned by one connection and fed that connection's chunks in arrival order. Frames come back as
 * Buffers that may share memory with the chunks passed in, so the caller must not reuse a chunk's
 * memory after pushing it. After a ProtocolError the reader stays failed and every later push
 * throws the same error: the caller is expected to close the connection.
 *
 * Cost is O(bytes pushed). A frame inside one chunk is a view of that chunk; a frame spanning
 * chunks is copied exactly once, when its last byte arrives. Memory is never reserved from the
 * announced length, only from bytes actually received, so a peer that announces a large frame and
 * then sends slowly (or never) holds only what it has sent.
 */
export class FrameReader {
  private maxFrameBytesNow: number;
  /** The setting the limit comes from, named when a frame exceeds it. */
  private limitName = 'socket.request.max.bytes';

  // The size prefix when it arrives split across chunks.
  private readonly prefix = Buffer.alloc(SIZE_PREFIX_BYTES);
  private prefixBytes = 0;
  // Size of the frame being collected, or -1 while reading a size prefix.
  private frameBytes = -1;
  // Pieces of the frame being collected when it spans chunks; views into pushed chunks.
  private pieces: Buffer[] = [];
  private pieceBytes = 0;
  private failure: ProtocolError | undefined;
  private readonly pool: FramePool | undefined;
  private readonly copyFrames: boolean;
  private readonly reserveReceived: boolean;
  // copyFrames: the frame being filled, `pieceBytes` of it so far.
  private target: Buffer | null = null;

  constructor(options: FrameReaderOptions = {}) {
    const max = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    if (!Number.isInteger(max) || max < 0 || max > MAX_INT32) {
      throw new RangeError(`maxFrameBytes must be an integer in [0, ${MAX_INT32}], got ${max}`);
    }
    this.maxFrameBytesNow = max;
    this.pool = options.pool;
    this.copyFrames = options.copyFrames === true;
    this.reserveReceived = options.reserve === 'received';
  }

  get maxFrameBytes(): number {
    return this.maxFrameBytesNow;
  }

  /**
   * Changes the largest frame accepted from the next size prefix on (a SASL connection's
   * sasl.server.max.receive.size until it authenticates); `limitName` is the setting named when a
   * frame exceeds it.
   */
  setMaxFrameBytes(max: number, limitName: string): void {
    if (!Number.isInteger(max) || max < 0 || max > MAX_INT32) {
      throw new RangeError(`maxFrameBytes must be an integer in [0, ${MAX_INT32}], got ${max}`);
    }
    this.maxFrameBytesNow = max;
    this.limitName = limitName;
  }

  /** Bytes received but not yet returned as part of a frame (a partial size prefix or payload). */
  get bufferedBytes(): number {
    return this.prefixBytes + this.pieceBytes;
  }

  /** Bytes still to come of the frame being collected (0 between frames or inside a size prefix). */
  get missingBytes(): number {
    return this.frameBytes < 0 ? 0 : this.frameBytes - this.pieceBytes;
  }

  /** Whether the reader rejected its input; it then accepts nothing more. */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  /**
   * Consumes one chunk and returns the frames it completes, in order (possibly none). Throws a
   * ProtocolError on a negative or oversized length; frames completed earlier in the same chunk
   * are dropped with it, since the connection is closing.
   */
  push(chunk: Buffer): Buffer[] {
    if (this.failure !== undefined) throw this.failure;
    const frames: Buffer[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (this.frameBytes < 0) {
        at = this.readPrefix(chunk, at);
        if (this.frameBytes < 0) break;
      }
      // Called even at the chunk's end, so a zero-length frame is emitted as soon as its prefix is in.
      at = this.readPayload(chunk, at, frames);
    }
    return frames;
  }

  /** Reads (part of) a size prefix starting at `at`; sets frameBytes once all 4 bytes are in. */
  private readPrefix(chunk: Buffer, at: number): number {
    let size: number;
    if (this.prefixBytes === 0 && chunk.length - at >= SIZE_PREFIX_BYTES) {
      size = chunk.readInt32BE(at);
      at += SIZE_PREFIX_BYTES;
    } else {
      const n = Math.min(SIZE_PREFIX_BYTES - this.prefixBytes, chunk.length - at);
      chunk.copy(this.prefix, this.prefixBytes, at, at + n);
      this.prefixBytes += n;
      at += n;
      if (this.prefixBytes < SIZE_PREFIX_BYTES) return at;
      this.prefixBytes = 0;
      size = this.prefix.readInt32BE(0);
    }
    this.checkSize(size);
    this.frameBytes = size;
    return at;
  }

  // Kafka's NetworkReceive accepts 0 and rejects only negative sizes and sizes above the limit,
  // and it does so before allocating the payload buffer; so do we.
  private checkSize(size: number): void {
    if (size < 0) {
      this.fail(`invalid frame size ${size}: negative (limit ${this.maxFrameBytes} bytes)`);
    }
    if (size > this.maxFrameBytes) {
      this.fail(`frame size ${size} exceeds the limit of ${this.maxFrameBytes} bytes (${this.limitName})`);
    }
  }

  private fail(message: string): never {
    this.failure = new ProtocolError(message);
    this.pieces = [];
    this.pieceBytes = 0;
    this.target = null;
    throw this.failure;
  }

  /** Collects payload bytes starting at `at`; emits the frame when it is complete. */
  private readPayload(chunk: Buffer, at: number, frames: Buffer[]): number {
    if (this.copyFrames) return this.copyPayload(chunk, at, frames);
    const missing = this.frameBytes - this.pieceBytes;
    const available = chunk.length - at;
    if (available < missing) {
      if (available > 0) {
        this.pieces.push(chunk.subarray(at));
        this.pieceBytes += available;
      }
      return chunk.length;
    }
    const end = at + missing;
    if (this.pieces.length === 0) {
      frames.push(chunk.subarray(at, end));
    } else {
      this.pieces.push(chunk.subarray(at, end));
      frames.push(this.assemble());
      this.pieces = [];
      this.pieceBytes = 0;
    }
    this.frameBytes = -1;
    return end;
  }

  /** copyFrames: copies payload bytes into the frame's own buffer; emits it when complete. */
  private copyPayload(chunk: Buffer, at: number, frames: Buffer[]): number {
    const n = Math.min(this.frameBytes - this.pieceBytes, chunk.length - at);
    if (this.target === null) {
      // reserve 'received' starts small, unless an idle pool buffer already holds the whole frame
      // (memory spent anyway: taking it costs a slow peer nothing, and a fast one the regrowth).
      const whole =
        this.reserveReceived && this.frameBytes > SMALL_FRAME ? this.pool?.takeSpare(this.frameBytes) : null;
      this.target =
        whole ??
        this.frameBuffer(
          this.reserveReceived
            ? Math.min(this.frameBytes, Math.max(INITIAL_RESERVE, 2 * n))
            : this.frameBytes,
        );
    } else if (this.pieceBytes + n > this.target.length) {
      // reserve 'received': double (at least), never past the announced size.
      const grown = this.frameBuffer(
        Math.min(this.frameBytes, Math.max(2 * this.target.length, this.pieceBytes + n)),
      );
      this.target.copy(grown, 0, 0, this.pieceBytes);
      this.pool?.release(this.target);
      this.target = grown;
    }
    if (n > 0) chunk.copy(this.target, this.pieceBytes, at, at + n);
    this.pieceBytes += n;
    if (this.pieceBytes < this.frameBytes) return chunk.length;
    frames.push(this.target.subarray(0, this.frameBytes));
    this.target = null;
    this.pieceBytes = 0;
    this.frameBytes = -1;
    return at + n;
  }

  /** Room for `size` bytes of a copied frame: small ones from Node's slabs, the rest from the pool. */
  private frameBuffer(size: number): Buffer {
    if (size <= SMALL_FRAME || this.pool === undefined) return Buffer.allocUnsafe(size);
    return this.pool.take(size);
  }

  /** One contiguous copy of the collected pieces (the last one included). */
  private assemble(): Buffer {
    if (this.pool === undefined) return Buffer.concat(this.pieces, this.frameBytes);
    const buf = this.pool.take(this.frameBytes);
    let at = 0;
    for (const piece of this.pieces) at += piece.copy(buf, at);
    return buf.subarray(0, this.frameBytes);
  }
}

/**
 * Prefixes the size of a payload given as chunks, for a vectored write (`socket.cork` + writes, or
 * writev). The chunks are not copied; the result is the 4-byte size followed by them.
 */
export function frame(chunks: readonly Buffer[]): Buffer[] {
  let size = 0;
  for (const c of chunks) size += c.length;
  if (size > MAX_INT32) throw new RangeError(`frame size ${size} does not fit in an int32`);
  const prefix = Buffer.allocUnsafe(SIZE_PREFIX_BYTES);
  prefix.writeInt32BE(size, 0);
  return [prefix, ...chunks];
}
