import { ProtocolError } from '../protocol-error.js';
import { MIN_RECORD_BYTES } from './record.js';

/**
 * Walks the records of a v2 batch's records section (decompressed) without decoding them: for
 * each record its bounds, offset delta, where its key lies and whether its value is null — what
 * the log cleaner needs to decide which records stay — and nothing allocated. The timestamp
 * delta and the headers are stepped over unread, so a record's fields are not checked beyond
 * what is read: its length, its offset delta, its key and value lengths within the record. A
 * section readRecords refuses may still be walked (a bad header inside a record); one it reads is
 * walked to the same records (test/protocol/records/record-walker.test.ts checks this on random
 * batches). Owned by one caller; reset() starts a new section.
 */
export class RecordWalker {
  /** The current record: first byte (its length varint) and the byte after it. */
  recordStart = 0;
  recordEnd = 0;
  offsetDelta = 0;
  /** The key's bytes are `buf[keyStart..keyEnd)`; keyStart is -1 for a null key. */
  keyStart = -1;
  keyEnd = -1;
  valueIsNull = false;
  private buf: Uint8Array = new Uint8Array(0);
  private pos = 0;
  private end = 0;
  private left = 0;

  /** Starts walking the `count` records of `buf[start..end)`. */
  reset(buf: Uint8Array, start: number, end: number, count: number): void {
    if (count < 0) throw new ProtocolError(`record count ${count}`);
    if (count > (end - start) / MIN_RECORD_BYTES) {
      throw new ProtocolError(`${count} records cannot fit in ${end - start} bytes`);
    }
    this.buf = buf;
    this.pos = start;
    this.end = end;
    this.left = count;
  }

  /** Steps to the next record; false after the last one (and no bytes may remain). */
  next(): boolean {
    if (this.left === 0) {
      if (this.pos !== this.end) {
        throw new ProtocolError(`${this.end - this.pos} bytes remain after the batch's records`);
      }
      return false;
    }
    this.left--;
    this.recordStart = this.pos;
    const size = this.varint(this.end);
    if (size < 0 || size > this.end - this.pos) {
      throw new ProtocolError(`record length ${size} with ${this.end - this.pos} bytes left`);
    }
    const recordEnd = this.pos + size;
    this.recordEnd = recordEnd;
    this.pos++; // attributes
    this.skipVarint(recordEnd); // timestampDelta
    this.offsetDelta = this.varint(recordEnd);
    const keyLength = this.varint(recordEnd);
    if (keyLength === -1) {
      this.keyStart = -1;
      this.keyEnd = -1;
    } else {
      if (keyLength < -1 || keyLength > recordEnd - this.pos)
        throw new ProtocolError(`key length ${keyLength}`);
      this.keyStart = this.pos;
      this.pos += keyLength;
      this.keyEnd = this.pos;
    }
    const valueLength = this.varint(recordEnd);
    if (valueLength < -1 || valueLength > recordEnd - this.pos) {
      throw new ProtocolError(`value length ${valueLength}`);
    }
    this.valueIsNull = valueLength === -1;
    this.pos = recordEnd;
    return true;
  }

  /** A zigzag varint (int32) ending before `limit`. */
  private varint(limit: number): number {
    const b = this.buf;
    let pos = this.pos;
    // Most lengths and deltas take one byte.
    if (pos < limit && b[pos]! < 0x80) {
      const byte = b[pos]!;
      this.pos = pos + 1;
      return (byte >>> 1) ^ -(byte & 1);
    }
    let raw = 0;
    for (let shift = 0; ; shift += 7) {
      if (pos >= limit || shift > 28) throw new ProtocolError('bad varint in a record');
      const byte = b[pos++]!;
      // A fifth byte may add only the top 4 bits (Reader.uvarint refuses more than 32 bits).
      if (shift === 28 && byte > 0x0f) throw new ProtocolError('varint exceeds 32 bits in a record');
      raw |= (byte & 0x7f) << shift;
      if (byte < 0x80) break;
    }
    this.pos = pos;
    return (raw >>> 1) ^ -(raw & 1);
  }

  /** Steps over a varlong (at most 10 bytes) ending before `limit`. */
  private skipVarint(limit: number): void {
    const b = this.buf;
    for (let pos = this.pos, n = 0; n < 10; n++) {
      if (pos >= limit) break;
      if (b[pos++]! < 0x80) {
        this.pos = pos;
        return;
      }
    }
    throw new ProtocolError('bad varlong in a record');
  }
}
