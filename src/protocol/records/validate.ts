import { ProtocolError } from '../protocol-error.js';
import { Reader } from '../reader.js';
import {
  BATCH_LENGTH_OFFSET,
  type BatchHeader,
  CRC_OFFSET,
  CURRENT_MAGIC,
  compressionCodec,
  computeCrc,
  emptyBatchHeader,
  isControl,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  MIN_BATCH_LENGTH,
  RECORDS_OFFSET,
  readBatchHeaderInto,
} from './batch.js';
import { batchRecordsSection } from './codec.js';
import { isKnownCodec } from './compression.js';
import { type KafkaRecord, MIN_RECORD_BYTES, readControlRecordKey, readRecord } from './record.js';

/**
 * Why a batch was refused. The first six are found from the header and CRC alone; the rest only
 * by a deep check that reads the records.
 */
export type BatchInvalidReason =
  /** Fewer bytes than the batch claims (or than a length field): a torn write or a short read. */
  | 'truncated'
  /** batchLength < 49, i.e. the batch is smaller than its own 61-byte header. */
  | 'batch-length-too-small'
  | 'bad-magic'
  | 'crc-mismatch'
  /** Compression bits 5-7: no such codec. */
  | 'unknown-codec'
  /** recordsCount negative, above the offset range, or not matching the records found. */
  | 'bad-record-count'
  /** lastOffsetDelta negative, or record offsetDeltas not what the header says. */
  | 'bad-offset-delta'
  /** A record's own bytes are malformed (lengths, varints, trailing bytes). */
  | 'bad-records'
  /** The records section does not decompress, or decompresses past the limit. */
  | 'decompression-failed'
  /** A control batch record whose key is not a control record key. */
  | 'bad-control-record';

export interface BatchInvalid {
  ok: false;
  reason: BatchInvalidReason;
  detail: string;
}

export interface BatchValid {
  ok: true;
  /** Bytes the batch occupies (batchLength + 12). */
  size: number;
  header: BatchHeader;
}

export type BatchValidation = BatchValid | BatchInvalid;

function invalid(reason: BatchInvalidReason, detail: string): BatchInvalid {
  return { ok: false, reason, detail };
}

export interface ShallowOptions {
  /** Skip the CRC pass (only for bytes this process wrote and has not let go of). Default true. */
  verifyCrc?: boolean;
}

/**
 * Shallow validation of the batch at `buf[pos]` with `remaining` bytes available: header, size,
 * magic, CRC and the counts the header alone can check. Reads no record and decompresses nothing,
 * so its cost is one CRC pass. This is Kafka's recovery and fetch-side check (ensureValid plus
 * the size checks of FileLogInputStream). Never throws.
 */
export function validateBatch(
  buf: Buffer,
  pos: number,
  remaining: number = buf.length - pos,
  options: ShallowOptions = {},
): BatchValidation {
  const header = emptyBatchHeader();
  const size = checkShallow(buf, pos, remaining, options.verifyCrc !== false, header);
  if (typeof size !== 'number') return size;
  return { ok: true, size, header };
}

/**
 * validateBatch's checks, in its order, filling `header`: the batch's size, or why it is invalid.
 * Allocates only on failure.
 */
function checkShallow(
  buf: Buffer,
  pos: number,
  remaining: number,
  verifyCrc: boolean,
  header: BatchHeader,
  view?: DataView,
): number | BatchInvalid {
  // A nonsense position or length reads as "nothing available", never as an exception.
  const avail = Number.isSafeInteger(remaining) ? Math.min(remaining, buf.length - pos) : -1;
  if (!Number.isSafeInteger(pos) || pos < 0 || avail < LOG_OVERHEAD) {
    return invalid(
      'truncated',
      `${Math.max(avail, 0)} bytes at ${pos}, a batch needs ${LOG_OVERHEAD} to start`,
    );
  }
  // Through the caller's view when there is one: a scan calls this per batch.
  const batchLength =
    view === undefined
      ? buf.readInt32BE(pos + BATCH_LENGTH_OFFSET)
      : view.getInt32(pos + BATCH_LENGTH_OFFSET);
  if (batchLength < MIN_BATCH_LENGTH) {
    return invalid('batch-length-too-small', `batchLength ${batchLength} < ${MIN_BATCH_LENGTH}`);
  }
  const size = batchLength + LOG_OVERHEAD;
  if (size > avail) return invalid('truncated', `batch of ${size} bytes at ${pos}, ${avail} remain`);
  const magic = view === undefined ? buf.readInt8(pos + MAGIC_OFFSET) : view.getInt8(pos + MAGIC_OFFSET);
  if (magic !== CURRENT_MAGIC) return invalid('bad-magic', `magic ${magic}`);
  if (verifyCrc) {
    const stored = view === undefined ? buf.readUInt32BE(pos + CRC_OFFSET) : view.getUint32(pos + CRC_OFFSET);
    const computed = computeCrc(buf, pos, size);
    if (stored !== computed) {
      return invalid('crc-mismatch', `stored crc ${hex(stored)}, computed ${hex(computed)}`);
    }
  }
  readBatchHeaderInto(buf, pos, header, view);
  const codec = compressionCodec(header.attributes);
  if (!isKnownCodec(codec)) return invalid('unknown-codec', `compression codec ${codec}`);
  if (header.lastOffsetDelta < 0) {
    return invalid('bad-offset-delta', `lastOffsetDelta ${header.lastOffsetDelta}`);
  }
  // Every record has its own offset in [base, base + lastOffsetDelta]: the count can be smaller
  // (compaction) but never larger. Empty batches are legal: the cleaner keeps them for producer state.
  if (header.recordsCount < 0 || header.recordsCount > header.lastOffsetDelta + 1) {
    return invalid(
      'bad-record-count',
      `recordsCount ${header.recordsCount} with lastOffsetDelta ${header.lastOffsetDelta}`,
    );
  }
  if (codec === 0 && header.recordsCount > (size - RECORDS_OFFSET) / MIN_RECORD_BYTES) {
    return invalid('bad-record-count', `${header.recordsCount} records in ${size - RECORDS_OFFSET} bytes`);
  }
  return size;
}

/**
 * validateBatch into a caller's header: the batch size, or why it is invalid. The same checks
 * and reasons, and no allocation on a valid batch — for scans that check every batch of a file
 * (recovery). `view` is viewOf(buf) when the caller has one.
 */
export function validateBatchInto(
  buf: Buffer,
  pos: number,
  remaining: number,
  header: BatchHeader,
  verifyCrc = true,
  view?: DataView,
): number | BatchInvalid {
  return checkShallow(buf, pos, remaining, verifyCrc, header, view);
}

function hex(n: number): string {
  return `0x${n.toString(16).padStart(8, '0')}`;
}

export interface DeepOptions extends ShallowOptions {
  /** Decompress compressed batches to check their records. Default false: only the header is checked. */
  decompress?: boolean;
  maxUncompressedBytes?: number;
  /**
   * Accept offsetDeltas with gaps (strictly increasing, within lastOffsetDelta), as a compacted
   * batch has. Default false: the producer rule, offsetDeltas exactly 0..n-1 and n >= 1.
   */
  allowOffsetGaps?: boolean;
}

export interface DeepBatchValid extends BatchValid {
  /** False when the batch is compressed and decompression was not asked for. */
  recordsChecked: boolean;
  /** The decoded records when they were checked (views into the batch or its decompressed copy). */
  records: KafkaRecord[] | null;
}

/**
 * Shallow validation, then the records themselves: each parses and fills its declared length, the
 * count matches, offsetDeltas follow the producer rule (Kafka's LogValidator) and control records
 * have a control key. A compressed batch's records are checked only if `decompress` is set.
 * Never throws.
 */
export function validateBatchDeep(
  buf: Buffer,
  pos: number,
  remaining: number = buf.length - pos,
  options: DeepOptions = {},
): DeepBatchValid | BatchInvalid {
  const shallow = validateBatch(buf, pos, remaining, options);
  if (!shallow.ok) return shallow;
  const { header, size } = shallow;
  const codec = compressionCodec(header.attributes);
  if (codec !== 0 && !options.decompress) return { ...shallow, recordsChecked: false, records: null };
  const batch = buf.subarray(pos, pos + size);
  let section: Buffer;
  try {
    section = batchRecordsSection(batch, 0, {
      decompress: true,
      maxUncompressedBytes: options.maxUncompressedBytes,
    }).records;
  } catch (e) {
    if (e instanceof ProtocolError) return invalid('decompression-failed', e.message);
    throw e;
  }
  const read = readAllRecords(section, header.recordsCount);
  if (!Array.isArray(read)) return read;
  const records = read;
  const deltas = checkOffsetDeltas(header, records, options.allowOffsetGaps ?? false);
  if (deltas) return deltas;
  if (isControl(header.attributes)) {
    for (const r of records) {
      try {
        readControlRecordKey(r.key);
      } catch (e) {
        if (e instanceof ProtocolError) return invalid('bad-control-record', e.message);
        throw e;
      }
    }
  }
  return { ...shallow, recordsChecked: true, records };
}

/**
 * Reads exactly `count` records, telling a count that disagrees with the bytes (Kafka: "found
 * fewer records than expected", "records still remaining") from a record that is malformed.
 */
function readAllRecords(section: Buffer, count: number): KafkaRecord[] | BatchInvalid {
  const r = new Reader(section);
  const records: KafkaRecord[] = [];
  for (let i = 0; i < count; i++) {
    if (r.remaining === 0) return invalid('bad-record-count', `recordsCount ${count}, found ${i} records`);
    try {
      records.push(readRecord(r));
    } catch (e) {
      if (e instanceof ProtocolError) return invalid('bad-records', `record ${i}: ${e.message}`);
      throw e;
    }
  }
  if (r.remaining !== 0) {
    return invalid('bad-record-count', `${r.remaining} bytes remain after recordsCount ${count} records`);
  }
  return records;
}

function checkOffsetDeltas(
  header: BatchHeader,
  records: KafkaRecord[],
  allowGaps: boolean,
): BatchInvalid | null {
  if (!allowGaps) {
    if (records.length === 0)
      return invalid('bad-record-count', 'a produced batch needs at least one record');
    if (header.lastOffsetDelta !== records.length - 1) {
      return invalid(
        'bad-offset-delta',
        `lastOffsetDelta ${header.lastOffsetDelta} for ${records.length} records`,
      );
    }
  }
  let previous = -1;
  for (let i = 0; i < records.length; i++) {
    const delta = (records[i] as KafkaRecord).offsetDelta;
    const wrong = allowGaps ? delta <= previous || delta > header.lastOffsetDelta : delta !== i;
    if (wrong) return invalid('bad-offset-delta', `record ${i} has offsetDelta ${delta}`);
    previous = delta;
  }
  return null;
}

/** One batch found by batchesIn. */
export interface BatchEntry {
  pos: number;
  size: number;
  header: BatchHeader;
}

/**
 * Walks concatenated batches (a segment file, a Produce or Fetch records field) yielding each
 * valid batch and stopping at the first invalid one. Iteration never throws: afterwards
 * `validEnd` is the byte just past the last valid batch (where recovery truncates) and `invalid`
 * says why the walk stopped early, or is null if it reached the end cleanly.
 * Owned by one caller for one walk; iterating again restarts from `start`.
 */
export class BatchScan implements Iterable<BatchEntry> {
  validEnd: number;
  invalid: (BatchInvalid & { pos: number }) | null = null;

  constructor(
    readonly buf: Buffer,
    readonly start = 0,
    readonly end = buf.length,
    readonly options: ShallowOptions = {},
  ) {
    this.validEnd = start;
  }

  *[Symbol.iterator](): Iterator<BatchEntry> {
    this.validEnd = this.start;
    this.invalid = null;
    let pos = this.start;
    while (pos < this.end) {
      const v = validateBatch(this.buf, pos, this.end - pos, this.options);
      if (!v.ok) {
        this.invalid = { ...v, pos };
        return;
      }
      const entry: BatchEntry = { pos, size: v.size, header: v.header };
      pos += v.size;
      this.validEnd = pos;
      yield entry;
    }
  }
}

/** Shallow-validating walk over the batches in `buf[start..end)`; see BatchScan. */
export function batchesIn(buf: Buffer, start = 0, end = buf.length, options: ShallowOptions = {}): BatchScan {
  return new BatchScan(buf, start, Math.min(end, buf.length), options);
}

export interface InPlaceOptions {
  /** As ShallowOptions.verifyCrc. Default true. */
  verifyCrc?: boolean;
  /** As DeepOptions.allowOffsetGaps. Default false: offsetDeltas exactly 0..n-1. */
  allowOffsetGaps?: boolean;
  /**
   * Decompress a compressed batch and walk its records too (Kafka's leader iterates the records
   * of every batch a client sends, compressed or not). Default false: header and CRC only.
   */
  decompress?: boolean;
}

/**
 * validateBatchDeep(buf, pos, remaining, { decompress: false, ...options }) without building
 * anything: the same verdict, the header read into the caller's `header`, and the batch size
 * returned on success. The records of an uncompressed batch are checked by a structural walk
 * (recordsWellFormed) instead of being decoded into objects; a compressed batch gets the header
 * and CRC checks only, as validateBatchDeep without decompression. This is the leader's append
 * check (Kafka's LogValidator iterates the records of an uncompressed v2 batch too): per batch it
 * costs one CRC pass and a walk over the record headers, and allocates nothing unless the batch is
 * invalid, when validateBatchDeep is asked for the reason so both report it the same way.
 * `view`, when given, is viewOf(buf), shared by the batches of one buffer. Never throws.
 */
export function validateBatchInPlace(
  buf: Buffer,
  pos: number,
  remaining: number,
  header: BatchHeader,
  options?: InPlaceOptions,
  view?: DataView,
): number | BatchInvalid {
  const verifyCrc = options?.verifyCrc !== false;
  const allowGaps = options?.allowOffsetGaps === true;
  const size = checkShallow(buf, pos, remaining, verifyCrc, header, view);
  if (typeof size !== 'number') return size;
  const decompress = options?.decompress === true;
  const compressed = compressionCodec(header.attributes) !== 0;
  if (compressed && !decompress) return size;
  const ok = compressed
    ? compressedRecordsWellFormed(buf, pos, size, header, allowGaps)
    : recordsWellFormed(
        buf,
        pos + RECORDS_OFFSET,
        pos + size,
        header.recordsCount,
        header.lastOffsetDelta,
        allowGaps,
        isControl(header.attributes),
      );
  if (ok) return size;
  const deep = validateBatchDeep(buf, pos, remaining, {
    verifyCrc,
    allowOffsetGaps: allowGaps,
    decompress: compressed,
  });
  // The deep check is the reference: it names the reason. Were it to accept what the walk
  // refused (a walk bug; the property tests say they agree), the batch is valid.
  return deep.ok ? size : deep;
}

/** recordsWellFormed over a compressed batch's decompressed records; false when they do not decompress. */
function compressedRecordsWellFormed(
  buf: Buffer,
  pos: number,
  size: number,
  header: BatchHeader,
  allowGaps: boolean,
): boolean {
  let section: Buffer;
  try {
    section = batchRecordsSection(buf.subarray(pos, pos + size), 0, { decompress: true }).records;
  } catch (e) {
    if (e instanceof ProtocolError) return false;
    throw e;
  }
  return recordsWellFormed(
    section,
    0,
    section.length,
    header.recordsCount,
    header.lastOffsetDelta,
    allowGaps,
    isControl(header.attributes),
  );
}

/**
 * Whether `buf[start..end)` holds exactly `count` well-formed v2 records — the verdict
 * readAllRecords + checkOffsetDeltas + the control-key check of validateBatchDeep reach, without
 * decoding: each record's length varint is within the section and its fields fill it exactly
 * (attributes, timestampDelta varlong, offsetDelta varint, key and value lengths within the
 * record, header count and each header's key and value within it); offsetDeltas are 0..n-1 in
 * order (or, with `allowGaps`, strictly increasing and at most lastOffsetDelta); a control batch's
 * keys are at least 4 bytes. Creates no object and no BigInt: a varlong is only skipped.
 */
export function recordsWellFormed(
  buf: Buffer,
  start: number,
  end: number,
  count: number,
  lastOffsetDelta: number,
  allowGaps: boolean,
  control: boolean,
): boolean {
  if (!allowGaps && (count === 0 || lastOffsetDelta !== count - 1)) return false;
  // Every varint is read the same way: a one-byte varint (the common case for all fields but the
  // record length and a large value's length) inline, longer ones through varintEnd/varintAt.
  // `b` is the varint's first byte, 0x80 when none is left (varintEnd then refuses).
  let p = start;
  let previous = -1;
  let b = 0;
  let q = 0;
  for (let i = 0; i < count; i++) {
    // record length
    b = p < end ? (buf[p] as number) : 0x80;
    q = b < 0x80 ? p + 1 : varintEnd(buf, p, end);
    if (q < 0) return false;
    const size = b < 0x80 ? (b >>> 1) ^ -(b & 1) : varintAt(buf, p);
    if (size < 0 || size > end - q) return false;
    const bodyEnd = q + size;
    // attributes: one byte, unused; then timestampDelta, a varlong only skipped
    p = q + 1;
    b = p < bodyEnd ? (buf[p] as number) : 0x80;
    p = b < 0x80 ? p + 1 : varlongEnd(buf, p, bodyEnd);
    if (p < 0) return false;
    // offsetDelta
    b = p < bodyEnd ? (buf[p] as number) : 0x80;
    q = b < 0x80 ? p + 1 : varintEnd(buf, p, bodyEnd);
    if (q < 0) return false;
    const delta = b < 0x80 ? (b >>> 1) ^ -(b & 1) : varintAt(buf, p);
    if (allowGaps ? delta <= previous || delta > lastOffsetDelta : delta !== i) return false;
    previous = delta;
    // key
    b = q < bodyEnd ? (buf[q] as number) : 0x80;
    p = b < 0x80 ? q + 1 : varintEnd(buf, q, bodyEnd);
    if (p < 0) return false;
    let n = b < 0x80 ? (b >>> 1) ^ -(b & 1) : varintAt(buf, q);
    if (n === -1) {
      if (control) return false;
    } else {
      if (n < 0 || n > bodyEnd - p || (control && n < 4)) return false;
      p += n;
    }
    // value
    b = p < bodyEnd ? (buf[p] as number) : 0x80;
    q = b < 0x80 ? p + 1 : varintEnd(buf, p, bodyEnd);
    if (q < 0) return false;
    n = b < 0x80 ? (b >>> 1) ^ -(b & 1) : varintAt(buf, p);
    if (n !== -1) {
      if (n < 0 || n > bodyEnd - q) return false;
      q += n;
    }
    // headers: each takes at least two bytes, as readRecord bounds the count
    b = q < bodyEnd ? (buf[q] as number) : 0x80;
    p = b < 0x80 ? q + 1 : varintEnd(buf, q, bodyEnd);
    if (p < 0) return false;
    const headers = b < 0x80 ? (b >>> 1) ^ -(b & 1) : varintAt(buf, q);
    if (headers < 0 || headers > (bodyEnd - p) / 2) return false;
    for (let h = 0; h < headers; h++) {
      q = varintEnd(buf, p, bodyEnd);
      if (q < 0) return false;
      n = varintAt(buf, p);
      if (n < 0 || n > bodyEnd - q) return false;
      p = varintEnd(buf, q + n, bodyEnd);
      if (p < 0) return false;
      const v = varintAt(buf, q + n);
      if (v !== -1) {
        if (v < 0 || v > bodyEnd - p) return false;
        p += v;
      }
    }
    if (p !== bodyEnd) return false;
  }
  return p === end;
}

/**
 * The position after the unsigned varint at `p`, or -1 when it does not end before `end`, is
 * longer than 5 bytes or exceeds 32 bits (Reader.uvarint's refusals).
 */
function varintEnd(buf: Buffer, p: number, end: number): number {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 5; i++) {
    if (p >= end) return -1;
    const b = buf[p++] as number;
    value += (b & 0x7f) * scale;
    if (b < 0x80) return value > 0xffffffff ? -1 : p;
    scale *= 128;
  }
  return -1;
}

/** The zigzag value of the varint at `p`, which varintEnd accepted. */
function varintAt(buf: Buffer, p: number): number {
  let b = buf[p] as number;
  if (b < 0x80) return (b >>> 1) ^ -(b & 1);
  let u = b & 0x7f;
  let scale = 128;
  for (;;) {
    b = buf[++p] as number;
    u += (b & 0x7f) * scale;
    if (b < 0x80) return (u >>> 1) ^ -(u & 1);
    scale *= 128;
  }
}

/** The position after the varlong at `p` (at most 10 bytes, as Reader.varlong), or -1. */
function varlongEnd(buf: Buffer, p: number, end: number): number {
  for (let i = 0; i < 10; i++) {
    if (p >= end) return -1;
    if ((buf[p++] as number) < 0x80) return p;
  }
  return -1;
}
