import { ProtocolError } from '../protocol-error.js';
import { Writer } from '../writer.js';
import {
  ATTRIBUTES_OFFSET,
  BASE_OFFSET_OFFSET,
  BASE_SEQUENCE_OFFSET,
  BASE_TIMESTAMP_OFFSET,
  BATCH_HEADER_SIZE,
  BATCH_LENGTH_OFFSET,
  type BatchHeader,
  batchSize,
  CRC_OFFSET,
  CURRENT_MAGIC,
  compressionCodec,
  computeCrc,
  LAST_OFFSET_DELTA_OFFSET,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  MAX_TIMESTAMP_OFFSET,
  MIN_BATCH_LENGTH,
  makeAttributes,
  NO_PARTITION_LEADER_EPOCH,
  NO_PRODUCER_EPOCH,
  NO_PRODUCER_ID,
  NO_SEQUENCE,
  NO_TIMESTAMP,
  PARTITION_LEADER_EPOCH_OFFSET,
  PRODUCER_EPOCH_OFFSET,
  PRODUCER_ID_OFFSET,
  RECORDS_COUNT_OFFSET,
  RECORDS_OFFSET,
  readBatchHeader,
  type TimestampType,
} from './batch.js';
import {
  CODEC_NAMES,
  type CompressionCodecId,
  compress,
  DEFAULT_MAX_UNCOMPRESSED_BYTES,
  decompress,
} from './compression.js';
import { encodedRecordSize, type KafkaRecord, prepareRecord, readRecords, writeRecord } from './record.js';

/** A record to encode; fields a producer usually leaves alone are optional. */
export interface RecordInput {
  attributes?: number;
  /** Defaults to 0n (the record's timestamp is baseTimestamp). */
  timestampDelta?: bigint;
  /** Defaults to the record's index in the batch, as a producer writes it. */
  offsetDelta?: number;
  key: Buffer | null;
  value: Buffer | null;
  headers?: { key: string; value: Buffer | null }[];
}

export interface BatchInput {
  baseOffset?: bigint;
  partitionLeaderEpoch?: number;
  compression?: CompressionCodecId;
  /** Codec-specific compression level. */
  compressionLevel?: number;
  timestampType?: TimestampType;
  baseTimestamp?: bigint;
  /**
   * Defaults to baseTimestamp + the largest timestampDelta (Kafka's rule for CreateTime), or
   * NO_TIMESTAMP for an empty batch. A LogAppendTime batch should pass the broker's time.
   */
  maxTimestamp?: bigint;
  producerId?: bigint;
  producerEpoch?: number;
  baseSequence?: number;
  isTransactional?: boolean;
  isControl?: boolean;
  hasDeleteHorizon?: boolean;
  /**
   * Defaults to the largest offsetDelta. Only the log cleaner sets it higher: a compacted batch
   * keeps the offset range of the batch it came from (and may keep no record at all).
   */
  lastOffsetDelta?: number;
  records: RecordInput[];
}

function completeRecord(r: RecordInput, index: number): KafkaRecord {
  return {
    attributes: r.attributes ?? 0,
    timestampDelta: r.timestampDelta ?? 0n,
    offsetDelta: r.offsetDelta ?? index,
    key: r.key,
    value: r.value,
    headers: r.headers ?? [],
  };
}

/**
 * Encodes one v2 batch: derives lastOffsetDelta, maxTimestamp and recordsCount from the records,
 * compresses the records section and writes the CRC last. Bad input (a value outside its wire
 * type) is a programmer error and throws RangeError.
 */
export function encodeBatch(input: BatchInput): Buffer {
  const records = input.records.map(completeRecord);
  const baseTimestamp = input.baseTimestamp ?? 0n;
  let maxDelta = -1;
  let maxTsDelta: bigint | null = null;
  for (const r of records) {
    if (r.offsetDelta > maxDelta) maxDelta = r.offsetDelta;
    if (maxTsDelta === null || r.timestampDelta > maxTsDelta) maxTsDelta = r.timestampDelta;
  }
  const lastOffsetDelta = input.lastOffsetDelta ?? Math.max(maxDelta, 0);
  const maxTimestamp =
    input.maxTimestamp ?? (maxTsDelta === null ? NO_TIMESTAMP : baseTimestamp + maxTsDelta);
  const codec = input.compression ?? 0;
  const attributes = makeAttributes({
    compression: codec,
    timestampType: input.timestampType ?? 'CreateTime',
    isTransactional: input.isTransactional ?? false,
    isControl: input.isControl ?? false,
    hasDeleteHorizon: input.hasDeleteHorizon ?? false,
  });

  const prepared = records.map(prepareRecord);
  let recordsBytes = 0;
  for (const p of prepared) recordsBytes += encodedRecordSize(p);
  const w = new Writer(Math.max(64, recordsBytes));
  for (const p of prepared) writeRecord(w, p);
  const plain = w.toBuffer();
  const body = compress(
    codec,
    plain,
    input.compressionLevel === undefined ? {} : { level: input.compressionLevel },
  );

  const out = Buffer.allocUnsafe(BATCH_HEADER_SIZE + body.length);
  out.writeBigInt64BE(input.baseOffset ?? 0n, BASE_OFFSET_OFFSET);
  out.writeInt32BE(out.length - LOG_OVERHEAD, BATCH_LENGTH_OFFSET);
  out.writeInt32BE(input.partitionLeaderEpoch ?? NO_PARTITION_LEADER_EPOCH, PARTITION_LEADER_EPOCH_OFFSET);
  out.writeInt8(CURRENT_MAGIC, MAGIC_OFFSET);
  out.writeInt16BE(attributes, ATTRIBUTES_OFFSET);
  out.writeInt32BE(lastOffsetDelta, LAST_OFFSET_DELTA_OFFSET);
  out.writeBigInt64BE(baseTimestamp, BASE_TIMESTAMP_OFFSET);
  out.writeBigInt64BE(maxTimestamp, MAX_TIMESTAMP_OFFSET);
  out.writeBigInt64BE(input.producerId ?? NO_PRODUCER_ID, PRODUCER_ID_OFFSET);
  out.writeInt16BE(input.producerEpoch ?? NO_PRODUCER_EPOCH, PRODUCER_EPOCH_OFFSET);
  out.writeInt32BE(input.baseSequence ?? NO_SEQUENCE, BASE_SEQUENCE_OFFSET);
  out.writeInt32BE(records.length, RECORDS_COUNT_OFFSET);
  body.copy(out, RECORDS_OFFSET);
  // The CRC covers attributes..end, so it is computed once every other byte is in place.
  out.writeUInt32BE(computeCrc(out, 0, out.length), CRC_OFFSET);
  return out;
}

export interface DecodeOptions {
  /**
   * Must be true to read a compressed batch. Reading never decompresses implicitly: a broker
   * handling Produce or Fetch has no reason to, and a caller that does must say so.
   */
  decompress: boolean;
  /** Refuse decompressed records above this size (default DEFAULT_MAX_UNCOMPRESSED_BYTES). */
  maxUncompressedBytes?: number;
}

export interface DecodedBatch {
  header: BatchHeader;
  records: KafkaRecord[];
}

/**
 * The batch's records section, decompressed if needed. Checks only what it needs to find the
 * section (header fits, magic 2, size within the buffer); the CRC is validateBatch's job.
 */
export function batchRecordsSection(
  buf: Buffer,
  pos: number,
  options: DecodeOptions,
): { header: BatchHeader; records: Buffer } {
  const header = readBatchHeader(buf, pos);
  if (header.magic !== CURRENT_MAGIC) throw new ProtocolError(`record batch magic ${header.magic}, not 2`);
  if (header.batchLength < MIN_BATCH_LENGTH || batchSize(header) > buf.length - pos) {
    throw new ProtocolError(`batch length ${header.batchLength} at ${pos} with ${buf.length - pos} bytes`);
  }
  const section = buf.subarray(pos + RECORDS_OFFSET, pos + batchSize(header));
  const codec = compressionCodec(header.attributes);
  if (codec === 0) return { header, records: section };
  if (!options.decompress) {
    throw new ProtocolError(
      `batch at ${pos} is ${CODEC_NAMES[codec] ?? codec}-compressed; decompress not allowed`,
    );
  }
  const max = options.maxUncompressedBytes ?? DEFAULT_MAX_UNCOMPRESSED_BYTES;
  return { header, records: decompress(codec, section, max) };
}

/**
 * Decodes the batch that starts at `batch[pos]` (default 0) into its header and records. Throws
 * ProtocolError and nothing else on bad bytes. Does not verify the CRC.
 */
export function decodeRecords(batch: Buffer, options: DecodeOptions, pos = 0): DecodedBatch {
  const { header, records } = batchRecordsSection(batch, pos, options);
  return { header, records: readRecords(records, header.recordsCount) };
}
