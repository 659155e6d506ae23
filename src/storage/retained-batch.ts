/**
 * The batches the log cleaner writes in place of one that lost records (Kafka's
 * MemoryRecords.buildRetainedRecordsInto and writeEmptyHeader): pure functions of the original
 * batch's header and the records kept.
 */
import {
  type BatchHeader,
  compressionCodec,
  hasDeleteHorizon,
  timestampType,
} from '../protocol/records/batch.js';
import { encodeBatch } from '../protocol/records/codec.js';
import type { CompressionCodecId } from '../protocol/records/compression.js';
import type { KafkaRecord } from '../protocol/records/record.js';

/** The records' absolute timestamps, as the batch had them (before any delete horizon). */
function absoluteTimestamps(h: BatchHeader, records: readonly KafkaRecord[]): bigint[] {
  return records.map((r) => h.baseTimestamp + r.timestampDelta);
}

/**
 * Kafka's buildRetainedRecordsInto: the same batch fields, the kept records with their offset
 * deltas and timestamps, lastOffsetDelta kept (so the producer's last sequence survives), and
 * with a delete horizon the baseTimestamp holds it and the deltas are taken from it.
 */
export function rebuildBatch(
  h: BatchHeader,
  retained: readonly KafkaRecord[],
  horizon: bigint | null,
): Buffer {
  const base = h.baseTimestamp;
  const original = absoluteTimestamps(h, retained);
  const baseTimestamp = horizon ?? (hasDeleteHorizon(h.attributes) ? base : original[0]!);
  const logAppendTime = timestampType(h.attributes) === 'LogAppendTime';
  let maxTimestamp = -1n;
  for (const t of original) if (t > maxTimestamp) maxTimestamp = t;
  return encodeBatch({
    baseOffset: h.baseOffset,
    partitionLeaderEpoch: h.partitionLeaderEpoch,
    compression: compressionCodec(h.attributes) as CompressionCodecId,
    timestampType: timestampType(h.attributes),
    baseTimestamp,
    maxTimestamp: logAppendTime ? h.maxTimestamp : maxTimestamp,
    producerId: h.producerId,
    producerEpoch: h.producerEpoch,
    baseSequence: h.baseSequence,
    isTransactional: (h.attributes & 0x10) !== 0,
    isControl: false,
    hasDeleteHorizon: horizon !== null,
    lastOffsetDelta: h.lastOffsetDelta,
    records: retained.map((r, i) => ({
      attributes: r.attributes,
      timestampDelta: original[i]! - baseTimestamp,
      offsetDelta: r.offsetDelta,
      key: r.key,
      value: r.value,
      headers: r.headers,
    })),
  });
}

/** Kafka's writeEmptyHeader: the batch's offsets, producer fields and timestamps, no records. */
export function emptyBatch(h: BatchHeader): Buffer {
  return encodeBatch({
    baseOffset: h.baseOffset,
    partitionLeaderEpoch: h.partitionLeaderEpoch,
    timestampType: timestampType(h.attributes),
    baseTimestamp: h.maxTimestamp,
    maxTimestamp: h.maxTimestamp,
    producerId: h.producerId,
    producerEpoch: h.producerEpoch,
    baseSequence: h.baseSequence,
    isTransactional: (h.attributes & 0x10) !== 0,
    lastOffsetDelta: h.lastOffsetDelta,
    records: [],
  });
}
