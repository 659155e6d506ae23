import { ProtocolError } from '../protocol-error.js';
import { Reader } from '../reader.js';
import {
  BATCH_LENGTH_OFFSET,
  type BatchHeader,
  CRC_OFFSET,
  CURRENT_MAGIC,
  compressionCodec,
  computeCrc,
  isControl,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  MIN_BATCH_LENGTH,
  RECORDS_OFFSET,
  readBatchHeader,
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
  // A nonsense position or length reads as "nothing available", never as an exception.
  const avail = Number.isSafeInteger(remaining) ? Math.min(remaining, buf.length - pos) : -1;
  if (!Number.isSafeInteger(pos) || pos < 0 || avail < LOG_OVERHEAD) {
    return invalid(
      'truncated',
      `${Math.max(avail, 0)} bytes at ${pos}, a batch needs ${LOG_OVERHEAD} to start`,
    );
  }
  const batchLength = buf.readInt32BE(pos + BATCH_LENGTH_OFFSET);
  if (batchLength < MIN_BATCH_LENGTH) {
    return invalid('batch-length-too-small', `batchLength ${batchLength} < ${MIN_BATCH_LENGTH}`);
  }
  const size = batchLength + LOG_OVERHEAD;
  if (size > avail) return invalid('truncated', `batch of ${size} bytes at ${pos}, ${avail} remain`);
  const magic = buf.readInt8(pos + MAGIC_OFFSET);
  if (magic !== CURRENT_MAGIC) return invalid('bad-magic', `magic ${magic}`);
  if (options.verifyCrc !== false) {
    const stored = buf.readUInt32BE(pos + CRC_OFFSET);
    const computed = computeCrc(buf, pos, size);
    if (stored !== computed) {
      return invalid('crc-mismatch', `stored crc ${hex(stored)}, computed ${hex(computed)}`);
    }
  }
  const header = readBatchHeader(buf, pos);
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
  return { ok: true, size, header };
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
