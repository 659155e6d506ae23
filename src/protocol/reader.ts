import { ProtocolError } from './protocol-error.js';
import { uuidFromBytes } from './uuid.js';

/**
 * A bounds-checked cursor over one frame. Every length read from the wire is checked against the
 * bytes that remain before anything is allocated, so a hostile length field costs nothing.
 * Byte and record fields are returned as views into the frame, never copied.
 * Owned by one decode call; not shared.
 */
export class Reader {
  offset: number;

  constructor(
    readonly buf: Buffer,
    offset = 0,
    readonly end = buf.length,
  ) {
    this.offset = offset;
  }

  get remaining(): number {
    return this.end - this.offset;
  }

  private need(n: number): number {
    const at = this.offset;
    if (n > this.end - at) {
      throw new ProtocolError(`need ${n} bytes at offset ${at}, ${this.end - at} remain`);
    }
    this.offset = at + n;
    return at;
  }

  int8(): number {
    return this.buf.readInt8(this.need(1));
  }
  int16(): number {
    return this.buf.readInt16BE(this.need(2));
  }
  uint16(): number {
    return this.buf.readUInt16BE(this.need(2));
  }
  int32(): number {
    return this.buf.readInt32BE(this.need(4));
  }
  uint32(): number {
    return this.buf.readUInt32BE(this.need(4));
  }
  int64(): bigint {
    return this.buf.readBigInt64BE(this.need(8));
  }
  float64(): number {
    return this.buf.readDoubleBE(this.need(8));
  }
  bool(): boolean {
    // Kafka reads any non-zero byte as true.
    return this.buf[this.need(1)] !== 0;
  }
  uuid(): string {
    const at = this.need(16);
    return uuidFromBytes(this.buf.subarray(at, at + 16));
  }

  /** Unsigned base-128 varint of at most 5 bytes, as Kafka's ByteUtils.readUnsignedVarint. */
  uvarint(): number {
    let value = 0;
    for (let i = 0; i < 5; i++) {
      const b = this.buf[this.need(1)] as number;
      value += (b & 0x7f) * 2 ** (7 * i);
      if ((b & 0x80) === 0) {
        if (value > 0xffffffff) throw new ProtocolError('unsigned varint exceeds 32 bits');
        return value;
      }
    }
    throw new ProtocolError('unsigned varint longer than 5 bytes');
  }

  /** Zigzag-encoded signed 32-bit varint. */
  varint(): number {
    const u = this.uvarint();
    return (u >>> 1) ^ -(u & 1);
  }

  /** Zigzag-encoded signed 64-bit varint (at most 10 bytes). */
  varlong(): bigint {
    let value = 0n;
    for (let i = 0; i < 10; i++) {
      const b = this.buf[this.need(1)] as number;
      value |= BigInt(b & 0x7f) << BigInt(7 * i);
      if ((b & 0x80) === 0) {
        value = BigInt.asUintN(64, value);
        return (value >> 1n) ^ -(value & 1n);
      }
    }
    throw new ProtocolError('varlong longer than 10 bytes');
  }

  /** Bytes of a length already read; bounds-checked, returned as a view. */
  take(length: number): Buffer {
    const at = this.need(length);
    return this.buf.subarray(at, at + length);
  }

  skip(length: number): void {
    this.need(length);
  }

  private lengthCheck(length: number, what: string): number {
    if (length > this.remaining) {
      throw new ProtocolError(`${what} length ${length} exceeds the ${this.remaining} bytes left`);
    }
    return length;
  }

  string(): string {
    const n = this.int16();
    if (n < 0) throw new ProtocolError(`non-nullable string has length ${n}`);
    return this.take(this.lengthCheck(n, 'string')).toString('utf8');
  }
  nullableString(): string | null {
    const n = this.int16();
    if (n === -1) return null;
    if (n < 0) throw new ProtocolError(`string length ${n}`);
    return this.take(this.lengthCheck(n, 'string')).toString('utf8');
  }
  compactString(): string {
    const n = this.uvarint() - 1;
    if (n < 0) throw new ProtocolError('non-nullable compact string is null');
    return this.take(this.lengthCheck(n, 'string')).toString('utf8');
  }
  compactNullableString(): string | null {
    const n = this.uvarint() - 1;
    if (n < 0) return null;
    return this.take(this.lengthCheck(n, 'string')).toString('utf8');
  }

  bytes(): Buffer {
    const n = this.int32();
    if (n < 0) throw new ProtocolError(`non-nullable bytes have length ${n}`);
    return this.take(this.lengthCheck(n, 'bytes'));
  }
  nullableBytes(): Buffer | null {
    const n = this.int32();
    if (n === -1) return null;
    if (n < 0) throw new ProtocolError(`bytes length ${n}`);
    return this.take(this.lengthCheck(n, 'bytes'));
  }
  compactBytes(): Buffer {
    const n = this.uvarint() - 1;
    if (n < 0) throw new ProtocolError('non-nullable compact bytes are null');
    return this.take(this.lengthCheck(n, 'bytes'));
  }
  compactNullableBytes(): Buffer | null {
    const n = this.uvarint() - 1;
    if (n < 0) return null;
    return this.take(this.lengthCheck(n, 'bytes'));
  }

  /**
   * Array length (int32, -1 = null). Each element takes at least one byte on the wire, so a count
   * above the bytes left is malformed: it is refused before any array is allocated.
   */
  arrayLength(): number {
    const n = this.int32();
    if (n < -1) throw new ProtocolError(`array length ${n}`);
    return n === -1 ? -1 : this.lengthCheck(n, 'array');
  }
  compactArrayLength(): number {
    const n = this.uvarint() - 1;
    return n < 0 ? -1 : this.lengthCheck(n, 'array');
  }

  /**
   * Reads a tagged-field section. Known tags are handed to `onTag` with a sub-reader bounded to the
   * field's declared size; unknown tags are skipped, as Kafka does.
   */
  taggedFields(onTag?: (tag: number, field: Reader) => void): void {
    const count = this.lengthCheck(this.uvarint(), 'tagged field');
    let lastTag = -1;
    for (let i = 0; i < count; i++) {
      const tag = this.uvarint();
      if (tag <= lastTag) throw new ProtocolError(`tagged field ${tag} out of order`);
      lastTag = tag;
      const size = this.lengthCheck(this.uvarint(), 'tagged field');
      const at = this.need(size);
      if (onTag) {
        const field = new Reader(this.buf, at, at + size);
        onTag(tag, field);
      }
    }
  }
}
