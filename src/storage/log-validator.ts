/**
 * The record checks of Kafka's LogValidator that need the records themselves, beyond what
 * protocol/records/validate.ts checks of a batch's shape: that every record of a compacted topic
 * has a key (validateKey) and that record timestamps lie within message.timestamp.before.max.ms /
 * message.timestamp.after.max.ms of the broker's time (validateTimestamp). Pure functions over a
 * produced batch; the log calls them before it assigns offsets, so a refused batch leaves nothing
 * behind.
 */
import { ErrorCode } from '../protocol/generated/errors.js';
import { KafkaError } from '../protocol/kafka-error.js';
import { ProtocolError } from '../protocol/protocol-error.js';
import { type BatchHeader, isControl, timestampType } from '../protocol/records/batch.js';
import { batchRecordsSection } from '../protocol/records/codec.js';
import { readRecords } from '../protocol/records/record.js';
import { invalidRecord, type RecordError, RecordValidationError } from './errors.js';

/** Kafka's Long.MAX_VALUE, which LogConfig holds as Infinity ("no bound"). */
const LONG_MAX = 9223372036854775807n;

/** What the records of a produced batch are checked for, from the log's config. */
export interface RecordChecks {
  /** cleanup.policy holds compact: every record needs a key. */
  readonly compact: boolean;
  /** message.timestamp.type is CreateTime (record timestamps are checked against the bounds). */
  readonly createTime: boolean;
  /** message.timestamp.before.max.ms (Infinity: no bound). */
  readonly timestampBeforeMaxMs: number;
  /** message.timestamp.after.max.ms (Infinity: no bound). */
  readonly timestampAfterMaxMs: number;
}

/**
 * Whether the batch's records must be read at all: they must on a compacted topic, when a
 * timestamp bound is set on a CreateTime topic, and when the producer marked the batch
 * LogAppendTime (Kafka refuses that). Control batches are the broker's and exempt.
 */
export function needsRecordChecks(header: BatchHeader, checks: RecordChecks): boolean {
  if (isControl(header.attributes)) return false;
  return (
    checks.compact ||
    timestampType(header.attributes) === 'LogAppendTime' ||
    (checks.createTime &&
      (checks.timestampBeforeMaxMs !== Number.POSITIVE_INFINITY ||
        checks.timestampAfterMaxMs !== Number.POSITIVE_INFINITY))
  );
}

/**
 * Refuses the batch at `records[pos..pos+size)` when some of its records break a check: one
 * RecordError per such record (its index in the batch and Kafka's message; a record without a key
 * on a compacted topic is reported before its timestamp, as Kafka's validateRecord does), in a
 * RecordValidationError — INVALID_TIMESTAMP if any record's timestamp is refused, else
 * INVALID_RECORD with Kafka's processRecordErrors summary. A compressed batch is decompressed to
 * look (Kafka does the same). `topicPartition` is Kafka's "topic-partition" spelling; `nowMs` the
 * broker's time.
 */
export function validateRecords(
  records: Buffer,
  pos: number,
  header: BatchHeader,
  checks: RecordChecks,
  nowMs: number,
  topicPartition: string,
): void {
  let decoded: ReturnType<typeof readRecords>;
  try {
    decoded = readRecords(
      batchRecordsSection(records, pos, { decompress: true }).records,
      header.recordsCount,
    );
  } catch (e) {
    if (e instanceof ProtocolError) throw invalidRecord(`${topicPartition}: ${e.message}`);
    throw e;
  }
  const appendTime = timestampType(header.attributes) === 'LogAppendTime';
  const now = BigInt(nowMs);
  const lowest = now - boundOf(checks.timestampBeforeMaxMs);
  const highest = now + boundOf(checks.timestampAfterMaxMs);
  // Kafka prints the range in Java longs: `now + Long.MAX_VALUE` wraps around.
  const range = `[${BigInt.asIntN(64, lowest)}, ${BigInt.asIntN(64, highest)}]`;
  const errors: RecordError[] = [];
  let timestampRefused = false;
  for (let i = 0; i < decoded.length; i++) {
    const record = decoded[i]!;
    if (checks.compact && record.key === null) {
      errors.push({
        batchIndex: i,
        message: `Compacted topic cannot accept message without key in topic partition ${topicPartition}`,
      });
      continue;
    }
    // A LogAppendTime batch's records all carry its maxTimestamp (Kafka's DefaultRecord.timestamp).
    const timestamp = appendTime ? header.maxTimestamp : header.baseTimestamp + record.timestampDelta;
    const offset = header.baseOffset + BigInt(record.offsetDelta);
    if (checks.createTime && timestamp !== -1n) {
      if (timestamp < lowest || timestamp > highest) {
        timestampRefused = true;
        errors.push({
          batchIndex: i,
          message: `Timestamp ${timestamp} of message with offset ${offset} is out of range. The timestamp should be within ${range}`,
        });
      }
    } else if (appendTime) {
      timestampRefused = true;
      const describe = `DefaultRecord(offset=${offset}, timestamp=${timestamp}, key=${record.key?.length ?? 0} bytes, value=${record.value?.length ?? 0} bytes)`;
      errors.push({
        batchIndex: i,
        message: `Invalid timestamp type in message ${describe}. Producer should not set timestamp type to LogAppendTime.`,
      });
    }
  }
  if (errors.length === 0) return;
  throw timestampRefused
    ? new RecordValidationError(
        errors,
        KafkaError.fromCode(
          ErrorCode.INVALID_TIMESTAMP,
          'One or more records have been rejected due to invalid timestamp',
        ),
      )
    : new RecordValidationError(errors);
}

function boundOf(ms: number): bigint {
  return ms === Number.POSITIVE_INFINITY ? LONG_MAX : BigInt(ms);
}
