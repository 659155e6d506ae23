import { ProtocolError } from '../protocol-error.js';
import { Reader } from '../reader.js';
import type { Writer } from '../writer.js';
import { type BatchHeader, timestampType } from './batch.js';

export interface RecordHeader {
  key: string;
  value: Buffer | null;
}

/**
 * One record inside a v2 batch (Kafka's DefaultRecord). timestampDelta is a bigint because it is
 * a varlong on the wire and, added to the int64 baseTimestamp, must stay exact; offsetDelta is a
 * number because it is an int32 varint. Decoded keys, values and header values are views into
 * the batch (or its decompressed records), never copies.
 */
export interface KafkaRecord {
  /** Unused by Kafka (always 0); kept so a batch re-encodes byte for byte. */
  attributes: number;
  timestampDelta: bigint;
  offsetDelta: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeader[];
}

/** The brief's name for KafkaRecord. Prefer KafkaRecord: `Record` shadows TypeScript's utility type. */
export type Record = KafkaRecord;

/** Smallest encoded record: length, attributes, timestampDelta, offsetDelta, key, value, headers. */
export const MIN_RECORD_BYTES = 7;

/** Absolute offset of a record (batch base offset + offsetDelta). */
export function recordOffset(header: BatchHeader, record: KafkaRecord): bigint {
  return header.baseOffset + BigInt(record.offsetDelta);
}

/**
 * Absolute timestamp of a record. Under LogAppendTime every record carries the broker's time, held
 * once in maxTimestamp (Kafka's DefaultRecord.readFrom does the same).
 */
export function recordTimestamp(header: BatchHeader, record: KafkaRecord): bigint {
  if (timestampType(header.attributes) === 'LogAppendTime') return header.maxTimestamp;
  return header.baseTimestamp + record.timestampDelta;
}

/** Bytes of the zigzag varint encoding of an int32. */
export function sizeOfVarint(v: number): number {
  let u = ((v << 1) ^ (v >> 31)) >>> 0;
  let n = 1;
  while (u >= 0x80) {
    u >>>= 7;
    n++;
  }
  return n;
}

/** Bytes of the zigzag varlong encoding of an int64. */
export function sizeOfVarlong(v: bigint): number {
  let u = BigInt.asUintN(64, (v << 1n) ^ (v >> 63n));
  let n = 1;
  while (u >= 0x80n) {
    u >>= 7n;
    n++;
  }
  return n;
}

function sizeOfNullableBytes(b: Buffer | null): number {
  return b === null ? 1 : sizeOfVarint(b.length) + b.length;
}

/** A record's encoded header keys, computed once and shared by sizing and writing. */
export interface PreparedRecord {
  record: KafkaRecord;
  headerKeys: Buffer[];
  bodySize: number;
}

export function prepareRecord(record: KafkaRecord): PreparedRecord {
  const headerKeys = record.headers.map((h) => Buffer.from(h.key, 'utf8'));
  let bodySize =
    1 +
    sizeOfVarlong(record.timestampDelta) +
    sizeOfVarint(record.offsetDelta) +
    sizeOfNullableBytes(record.key) +
    sizeOfNullableBytes(record.value) +
    sizeOfVarint(record.headers.length);
  record.headers.forEach((h, i) => {
    const k = headerKeys[i] as Buffer;
    bodySize += sizeOfVarint(k.length) + k.length + sizeOfNullableBytes(h.value);
  });
  return { record, headerKeys, bodySize };
}

/** Bytes the record takes in a batch, its length prefix included. */
export function encodedRecordSize(p: PreparedRecord): number {
  return sizeOfVarint(p.bodySize) + p.bodySize;
}

function writeNullableBytes(w: Writer, b: Buffer | null): void {
  if (b === null) {
    w.varint(-1);
  } else {
    w.varint(b.length).raw(b);
  }
}

export function writeRecord(w: Writer, p: PreparedRecord): void {
  const r = p.record;
  w.varint(p.bodySize).int8(r.attributes).varlong(r.timestampDelta).varint(r.offsetDelta);
  writeNullableBytes(w, r.key);
  writeNullableBytes(w, r.value);
  w.varint(r.headers.length);
  r.headers.forEach((h, i) => {
    const k = p.headerKeys[i] as Buffer;
    w.varint(k.length).raw(k);
    writeNullableBytes(w, h.value);
  });
}

function readNullableBytes(r: Reader, what: string): Buffer | null {
  const n = r.varint();
  if (n === -1) return null;
  if (n < 0) throw new ProtocolError(`${what} length ${n}`);
  // Reader.take refuses a length beyond the record before anything is touched.
  return r.take(n);
}

/**
 * Reads one record at the reader's position. The record's declared length bounds every field
 * inside it and must be consumed exactly (Kafka: "Invalid record size").
 */
export function readRecord(r: Reader): KafkaRecord {
  const size = r.varint();
  if (size < 0 || size > r.remaining) {
    throw new ProtocolError(`record length ${size} with ${r.remaining} bytes left`);
  }
  const start = r.offset;
  const body = new Reader(r.buf, start, start + size);
  r.skip(size);
  const attributes = body.int8();
  const timestampDelta = body.varlong();
  const offsetDelta = body.varint();
  const key = readNullableBytes(body, 'key');
  const value = readNullableBytes(body, 'value');
  const headerCount = body.varint();
  // Each header takes at least two bytes, so a count above that is refused before looping.
  if (headerCount < 0 || headerCount > body.remaining / 2) {
    throw new ProtocolError(`record header count ${headerCount} with ${body.remaining} bytes left`);
  }
  const headers: RecordHeader[] = [];
  for (let i = 0; i < headerCount; i++) {
    const keyLength = body.varint();
    if (keyLength < 0) throw new ProtocolError(`record header key length ${keyLength}`);
    const headerKey = body.take(keyLength).toString('utf8');
    headers.push({ key: headerKey, value: readNullableBytes(body, 'header value') });
  }
  if (body.remaining !== 0) {
    throw new ProtocolError(`record declared ${size} bytes but its fields took ${size - body.remaining}`);
  }
  return { attributes, timestampDelta, offsetDelta, key, value, headers };
}

/**
 * Reads exactly `count` records from `records` (a batch's records section, decompressed) and
 * refuses leftover bytes, as Kafka's batch iterator does. The array grows as records are read, so
 * a forged count costs nothing: the reader runs out of bytes first.
 */
export function readRecords(records: Buffer, count: number): KafkaRecord[] {
  if (count < 0) throw new ProtocolError(`record count ${count}`);
  if (count > records.length / MIN_RECORD_BYTES) {
    throw new ProtocolError(`${count} records cannot fit in ${records.length} bytes`);
  }
  const r = new Reader(records);
  const out: KafkaRecord[] = [];
  for (let i = 0; i < count; i++) out.push(readRecord(r));
  if (r.remaining !== 0) {
    throw new ProtocolError(`${r.remaining} bytes remain after the batch's ${count} records`);
  }
  return out;
}

/** Control record types (the key of a record in a control batch). */
export const ControlRecordType = { abort: 0, commit: 1 } as const;
const CONTROL_KEY_VERSION = 0;
const CONTROL_KEY_SIZE = 4;

/** Key of a transaction marker: int16 version 0, int16 type (Kafka's ControlRecordType). */
export function controlRecordKey(type: number): Buffer {
  const b = Buffer.alloc(CONTROL_KEY_SIZE);
  b.writeInt16BE(CONTROL_KEY_VERSION, 0);
  b.writeInt16BE(type, 2);
  return b;
}

/** Parses a control record key; Kafka requires at least 4 bytes and reads version and type. */
export function readControlRecordKey(key: Buffer | null): { version: number; type: number } {
  if (key === null || key.length < CONTROL_KEY_SIZE) {
    throw new ProtocolError(`control record key of ${key === null ? 'null' : key.length} bytes`);
  }
  return { version: key.readInt16BE(0), type: key.readInt16BE(2) };
}
