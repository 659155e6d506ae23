import { ProtocolError } from '../protocol-error.js';
import { crc32c } from './crc32c.js';

/**
 * Record batch v2 header (Kafka's DefaultRecordBatch): field offsets relative to the first byte
 * of the batch. Everything from ATTRIBUTES_OFFSET to the end of the batch is covered by the CRC;
 * baseOffset, batchLength and partitionLeaderEpoch are not, which is what lets a broker assign
 * offsets and stamp the leader epoch without recomputing it.
 */
export const BASE_OFFSET_OFFSET = 0;
export const BATCH_LENGTH_OFFSET = 8;
export const PARTITION_LEADER_EPOCH_OFFSET = 12;
export const MAGIC_OFFSET = 16;
export const CRC_OFFSET = 17;
export const ATTRIBUTES_OFFSET = 21;
export const LAST_OFFSET_DELTA_OFFSET = 23;
export const BASE_TIMESTAMP_OFFSET = 27;
export const MAX_TIMESTAMP_OFFSET = 35;
export const PRODUCER_ID_OFFSET = 43;
export const PRODUCER_EPOCH_OFFSET = 51;
export const BASE_SEQUENCE_OFFSET = 53;
export const RECORDS_COUNT_OFFSET = 57;
export const RECORDS_OFFSET = 61;

/** Bytes before batchLength's count starts: baseOffset + batchLength itself (Kafka's LOG_OVERHEAD). */
export const LOG_OVERHEAD = 12;
/** Size of a batch with no records (Kafka's RECORD_BATCH_OVERHEAD). */
export const BATCH_HEADER_SIZE = RECORDS_OFFSET;
/** Smallest legal batchLength: a header with no records. */
export const MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD;
export const CURRENT_MAGIC = 2;

/** Defaults Kafka writes when a producer is not idempotent. */
export const NO_PRODUCER_ID = -1n;
export const NO_PRODUCER_EPOCH = -1;
export const NO_SEQUENCE = -1;
export const NO_PARTITION_LEADER_EPOCH = -1;
export const NO_TIMESTAMP = -1n;

/** Attribute bits (int16 at ATTRIBUTES_OFFSET). */
export const COMPRESSION_CODEC_MASK = 0x07;
export const TIMESTAMP_TYPE_MASK = 0x08;
export const TRANSACTIONAL_FLAG_MASK = 0x10;
export const CONTROL_FLAG_MASK = 0x20;
export const DELETE_HORIZON_FLAG_MASK = 0x40;

/** Kafka's TimestampType names, as shown by its tools. */
export type TimestampType = 'CreateTime' | 'LogAppendTime';

export interface BatchHeader {
  baseOffset: bigint;
  batchLength: number;
  partitionLeaderEpoch: number;
  magic: number;
  /** As stored (uint32); compare with computeCrc(). */
  crc: number;
  attributes: number;
  lastOffsetDelta: number;
  baseTimestamp: bigint;
  maxTimestamp: bigint;
  producerId: bigint;
  producerEpoch: number;
  baseSequence: number;
  recordsCount: number;
}

function checkHeaderFits(buf: Buffer, pos: number): void {
  if (!Number.isSafeInteger(pos) || pos < 0 || pos > buf.length - BATCH_HEADER_SIZE) {
    throw new ProtocolError(
      `record batch header needs ${BATCH_HEADER_SIZE} bytes at ${pos}, buffer has ${buf.length}`,
    );
  }
}

/**
 * Reads the fixed 61-byte header at `pos`. Does not look at magic, the CRC or the records: that is
 * validateBatch's job, so a caller that only needs offsets pays for nothing else.
 */
export function readBatchHeader(buf: Buffer, pos: number): BatchHeader {
  checkHeaderFits(buf, pos);
  return readBatchHeaderInto(buf, pos, emptyBatchHeader());
}

/** A header object to be filled by readBatchHeaderInto: hot paths reuse one per batch slot. */
export function emptyBatchHeader(): BatchHeader {
  return {
    baseOffset: 0n,
    batchLength: 0,
    partitionLeaderEpoch: 0,
    magic: 0,
    crc: 0,
    attributes: 0,
    lastOffsetDelta: 0,
    baseTimestamp: 0n,
    maxTimestamp: 0n,
    producerId: 0n,
    producerEpoch: 0,
    baseSequence: 0,
    recordsCount: 0,
  };
}

/**
 * readBatchHeader into a caller's object, so a hot path that parses every batch allocates no
 * header. The caller has checked that 61 bytes are available at `pos`. The fields are read
 * through a DataView over `buf` (same offsets): V8 compiles its getBigInt64 inline, where
 * Buffer.readBigInt64BE builds each int64 from four BigInt operations — the four int64 fields
 * were most of the cost of a header. A caller that reads many headers from one buffer passes
 * `view` (`new DataView(buf.buffer, buf.byteOffset, buf.length)`) to save creating it per batch.
 */
export function readBatchHeaderInto(
  buf: Buffer,
  pos: number,
  out: BatchHeader,
  view: DataView = viewOf(buf),
): BatchHeader {
  out.baseOffset = view.getBigInt64(pos + BASE_OFFSET_OFFSET);
  out.batchLength = view.getInt32(pos + BATCH_LENGTH_OFFSET);
  out.partitionLeaderEpoch = view.getInt32(pos + PARTITION_LEADER_EPOCH_OFFSET);
  out.magic = view.getInt8(pos + MAGIC_OFFSET);
  out.crc = view.getUint32(pos + CRC_OFFSET);
  out.attributes = view.getInt16(pos + ATTRIBUTES_OFFSET);
  out.lastOffsetDelta = view.getInt32(pos + LAST_OFFSET_DELTA_OFFSET);
  out.baseTimestamp = view.getBigInt64(pos + BASE_TIMESTAMP_OFFSET);
  out.maxTimestamp = view.getBigInt64(pos + MAX_TIMESTAMP_OFFSET);
  out.producerId = view.getBigInt64(pos + PRODUCER_ID_OFFSET);
  out.producerEpoch = view.getInt16(pos + PRODUCER_EPOCH_OFFSET);
  out.baseSequence = view.getInt32(pos + BASE_SEQUENCE_OFFSET);
  out.recordsCount = view.getInt32(pos + RECORDS_COUNT_OFFSET);
  return out;
}

/** A big-endian view of exactly `buf`'s bytes, at `buf`'s offsets. */
export function viewOf(buf: Buffer): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.length);
}

const TWO_32 = 0x1_0000_0000;

/**
 * Big-endian int64 write, as Buffer.writeBigInt64BE: within ±2^53 (every offset and timestamp) as
 * two int32 words from one Number conversion, a third cheaper than Node's BigInt masking.
 */
export function writeInt64(buf: Buffer, value: bigint, at: number): void {
  const n = Number(value);
  if (Number.isSafeInteger(n)) {
    const hi = Math.floor(n / TWO_32);
    buf.writeInt32BE(hi, at);
    buf.writeUInt32BE(n - hi * TWO_32, at + 4);
  } else {
    buf.writeBigInt64BE(value, at);
  }
}

/** Compression codec id, bits 0-2 (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; 5-7 are invalid). */
export function compressionCodec(attributes: number): number {
  return attributes & COMPRESSION_CODEC_MASK;
}
export function timestampType(attributes: number): TimestampType {
  return (attributes & TIMESTAMP_TYPE_MASK) !== 0 ? 'LogAppendTime' : 'CreateTime';
}
export function isTransactional(attributes: number): boolean {
  return (attributes & TRANSACTIONAL_FLAG_MASK) !== 0;
}
export function isControl(attributes: number): boolean {
  return (attributes & CONTROL_FLAG_MASK) !== 0;
}
/** When set, baseTimestamp holds the delete horizon the log cleaner stamped (KIP-534). */
export function hasDeleteHorizon(attributes: number): boolean {
  return (attributes & DELETE_HORIZON_FLAG_MASK) !== 0;
}

export interface AttributeFields {
  compression?: number;
  timestampType?: TimestampType;
  isTransactional?: boolean;
  isControl?: boolean;
  hasDeleteHorizon?: boolean;
}

export function makeAttributes(f: AttributeFields): number {
  const codec = f.compression ?? 0;
  if (!Number.isInteger(codec) || codec < 0 || codec > 4) throw new RangeError(`compression codec ${codec}`);
  return (
    codec |
    (f.timestampType === 'LogAppendTime' ? TIMESTAMP_TYPE_MASK : 0) |
    (f.isTransactional ? TRANSACTIONAL_FLAG_MASK : 0) |
    (f.isControl ? CONTROL_FLAG_MASK : 0) |
    (f.hasDeleteHorizon ? DELETE_HORIZON_FLAG_MASK : 0)
  );
}

/** Offset of the last record the batch covers (compaction may have removed it, the offset stays). */
export function lastOffset(h: BatchHeader): bigint {
  return h.baseOffset + BigInt(h.lastOffsetDelta);
}

/** Bytes the whole batch occupies, its 12-byte log overhead included. */
export function batchSize(h: BatchHeader): number {
  return h.batchLength + LOG_OVERHEAD;
}

/** The producer is idempotent or transactional (Kafka's hasProducerId). */
export function hasProducerId(h: BatchHeader): boolean {
  return h.producerId >= 0n;
}

/**
 * Assigns the base offset in place. baseOffset is outside the CRC, so the stored CRC stays valid
 * and the leader need not re-read the records (Kafka's DefaultRecordBatch.setLastOffset).
 */
export function setBaseOffset(buf: Buffer, pos: number, baseOffset: bigint): void {
  checkHeaderFits(buf, pos);
  writeInt64(buf, baseOffset, pos + BASE_OFFSET_OFFSET);
}

/** Stamps the leader epoch in place; also outside the CRC. */
export function setPartitionLeaderEpoch(buf: Buffer, pos: number, epoch: number): void {
  checkHeaderFits(buf, pos);
  buf.writeInt32BE(epoch, pos + PARTITION_LEADER_EPOCH_OFFSET);
}

/**
 * CRC-32C of bytes ATTRIBUTES_OFFSET..size of the batch at `pos`: the value Kafka stores at
 * CRC_OFFSET. `size` is the whole batch size (batchLength + 12).
 */
export function computeCrc(buf: Buffer, pos: number, size: number): number {
  if (size < BATCH_HEADER_SIZE || pos < 0 || pos + size > buf.length) {
    throw new ProtocolError(`batch of ${size} bytes at ${pos} does not fit a ${buf.length}-byte buffer`);
  }
  return crc32c(buf, pos + ATTRIBUTES_OFFSET, pos + size);
}

/** Recomputes and stores the CRC of the batch at `pos` (after a CRC-covered field was changed). */
export function writeCrc(buf: Buffer, pos: number): void {
  checkHeaderFits(buf, pos);
  const size = buf.readInt32BE(pos + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
  buf.writeUInt32BE(computeCrc(buf, pos, size), pos + CRC_OFFSET);
}

/**
 * Switches the batch to LogAppendTime with the broker's timestamp, as a leader does when the topic
 * says message.timestamp.type=LogAppendTime (Kafka's setMaxTimestamp). Both fields are covered by
 * the CRC, so it is recomputed: this costs a pass over the batch, unlike the two setters above.
 */
export function setLogAppendTime(buf: Buffer, pos: number, timestamp: bigint): void {
  checkHeaderFits(buf, pos);
  const attributes = buf.readInt16BE(pos + ATTRIBUTES_OFFSET) | TIMESTAMP_TYPE_MASK;
  buf.writeInt16BE(attributes, pos + ATTRIBUTES_OFFSET);
  writeInt64(buf, timestamp, pos + MAX_TIMESTAMP_OFFSET);
  writeCrc(buf, pos);
}
