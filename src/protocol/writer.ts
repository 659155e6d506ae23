import { uuidToBytes } from './uuid.js';

/** Byte arrays at least this large are kept as their own chunk instead of being copied. */
export const ZERO_COPY_MIN_BYTES = 4096;
const INITIAL_CHUNK_BYTES = 1024;

/**
 * An append-only encoder into a list of chunks. Small values are packed into a growing scratch
 * buffer; large byte arrays (stored record batches, above all) are referenced, not copied, so a
 * Fetch response costs no per-record or per-byte work. Owned by one encode call.
 */
export class Writer {
  private readonly chunks: Buffer[] = [];
  private buf: Buffer;
  private pos = 0;
  private flushedBytes = 0;

  constructor(initialBytes = INITIAL_CHUNK_BYTES) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  /** Bytes written so far. */
  get length(): number {
    return this.flushedBytes + this.pos;
  }

  private room(n: number): number {
    if (this.pos + n > this.buf.length) {
      this.flushScratch();
      this.buf = Buffer.allocUnsafe(Math.max(n, this.buf.length * 2));
    }
    const at = this.pos;
    this.pos += n;
    return at;
  }

  private flushScratch(): void {
    if (this.pos > 0) {
      this.chunks.push(this.buf.subarray(0, this.pos));
      this.flushedBytes += this.pos;
      this.buf = this.buf.subarray(this.pos);
      this.pos = 0;
    }
  }

  // room() may swap in a new scratch buffer, so every write takes its position first.
  private byte(b: number): void {
    const at = this.room(1);
    this.buf[at] = b;
  }

  int8(v: number): this {
    const at = this.room(1);
    this.buf.writeInt8(v, at);
    return this;
  }
  int16(v: number): this {
    const at = this.room(2);
    this.buf.writeInt16BE(v, at);
    return this;
  }
  uint16(v: number): this {
    const at = this.room(2);
    this.buf.writeUInt16BE(v, at);
    return this;
  }
  int32(v: number): this {
    const at = this.room(4);
    this.buf.writeInt32BE(v, at);
    return this;
  }
  uint32(v: number): this {
    const at = this.room(4);
    this.buf.writeUInt32BE(v, at);
    return this;
  }
  int64(v: bigint): this {
    const at = this.room(8);
    this.buf.writeBigInt64BE(v, at);
    return this;
  }
  float64(v: number): this {
    const at = this.room(8);
    this.buf.writeDoubleBE(v, at);
    return this;
  }
  bool(v: boolean): this {
    this.byte(v ? 1 : 0);
    return this;
  }
  uuid(v: string): this {
    return this.raw(uuidToBytes(v));
  }

  uvarint(v: number): this {
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) {
      throw new RangeError(`unsigned varint out of range: ${v}`);
    }
    let value = v;
    while (value >= 0x80) {
      this.byte((value & 0x7f) | 0x80);
      value = Math.floor(value / 128);
    }
    this.byte(value);
    return this;
  }

  varint(v: number): this {
    return this.uvarint(((v << 1) ^ (v >> 31)) >>> 0);
  }

  varlong(v: bigint): this {
    let value = BigInt.asUintN(64, (v << 1n) ^ (v >> 63n));
    while (value >= 0x80n) {
      this.byte(Number(value & 0x7fn) | 0x80);
      value >>= 7n;
    }
    this.byte(Number(value));
    return this;
  }

  /** Appends bytes with no length prefix. Large arrays are referenced, not copied. */
  raw(bytes: Buffer): this {
    if (bytes.length >= ZERO_COPY_MIN_BYTES) {
      this.flushScratch();
      this.chunks.push(bytes);
      this.flushedBytes += bytes.length;
    } else {
      const at = this.room(bytes.length);
      bytes.copy(this.buf, at);
    }
    return this;
  }

  string(v: string): this {
    const n = Buffer.byteLength(v, 'utf8');
    if (n > 0x7fff) throw new RangeError(`string of ${n} bytes exceeds 32767`);
    this.int16(n);
    const at = this.room(n);
    this.buf.write(v, at, n, 'utf8');
    return this;
  }
  nullableString(v: string | null): this {
    return v === null ? this.int16(-1) : this.string(v);
  }
  compactString(v: string): this {
    const n = Buffer.byteLength(v, 'utf8');
    this.uvarint(n + 1);
    const at = this.room(n);
    this.buf.write(v, at, n, 'utf8');
    return this;
  }
  compactNullableString(v: string | null): this {
    return v === null ? this.uvarint(0) : this.compactString(v);
  }

  bytes(v: Buffer): this {
    return this.int32(v.length).raw(v);
  }
  nullableBytes(v: Buffer | null): this {
    return v === null ? this.int32(-1) : this.bytes(v);
  }
  compactBytes(v: Buffer): this {
    return this.uvarint(v.length + 1).raw(v);
  }
  compactNullableBytes(v: Buffer | null): this {
    return v === null ? this.uvarint(0) : this.compactBytes(v);
  }

  /** The encoded bytes as chunks, ready for a vectored socket write. */
  chunksView(): Buffer[] {
    this.flushScratch();
    return this.chunks;
  }

  /** The encoded bytes as one buffer (copies when there is more than one chunk). */
  toBuffer(): Buffer {
    const chunks = this.chunksView();
    if (chunks.length === 1) return chunks[0] as Buffer;
    return Buffer.concat(chunks, this.flushedBytes);
  }
}
