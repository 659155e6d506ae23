import { ErrorCode } from '../protocol/generated/errors.js';
import { KafkaError } from '../protocol/kafka-error.js';

/** Errors the storage layer raises for a request, as the Kafka codes a handler answers with. */

export function offsetOutOfRange(message: string): KafkaError {
  return KafkaError.fromCode(ErrorCode.OFFSET_OUT_OF_RANGE, message);
}

export function corruptRecord(message: string): KafkaError {
  return KafkaError.fromCode(ErrorCode.CORRUPT_MESSAGE, message);
}

export function recordTooLarge(message: string): KafkaError {
  return KafkaError.fromCode(ErrorCode.MESSAGE_TOO_LARGE, message);
}

export function invalidRecord(message: string): KafkaError {
  return KafkaError.fromCode(ErrorCode.INVALID_RECORD, message);
}

/**
 * A follower's append starts below the LEO (Kafka's UnexpectedAppendOffsetException). Carries the
 * batch's offsets so the "empty log, batch straddles the log start" case can restart the log.
 */
export class UnexpectedAppendOffsetError extends Error {
  override readonly name = 'UnexpectedAppendOffsetError';
  constructor(
    message: string,
    readonly firstOffset: bigint,
    readonly lastOffset: bigint,
  ) {
    super(message);
  }
}

/** Offsets inside one append do not increase (Kafka's OffsetsOutOfOrderException). */
export class OffsetsOutOfOrderError extends Error {
  override readonly name = 'OffsetsOutOfOrderError';
}

/** One refused record of a batch (Kafka's ProduceResponse.RecordError): its index in the batch. */
export interface RecordError {
  readonly batchIndex: number;
  readonly message: string | null;
}

/**
 * A batch refused for what some of its records hold (Kafka's RecordValidationException): the
 * partition's error (INVALID_RECORD) with Kafka's summary message, and the per-record errors that
 * ProduceResponse v8+ carries as RecordErrors.
 */
export class RecordValidationError extends Error {
  override readonly name = 'RecordValidationError';
  readonly error: KafkaError;
  /**
   * `error`: the partition's error when it is not INVALID_RECORD with the summary (Kafka's
   * InvalidTimestampException, when any record's timestamp was refused).
   */
  constructor(
    readonly recordErrors: readonly RecordError[],
    error?: KafkaError,
  ) {
    const shown = recordErrors
      .slice(0, 3)
      .map(
        (e) =>
          `RecordError(batchIndex=${e.batchIndex}, message=${e.message === null ? 'null' : `'${e.message}'`})`,
      );
    const message = `One or more records have been rejected due to ${recordErrors.length} record errors in total, and only showing the first three errors at most: [${shown.join(', ')}]`;
    super(error?.message ?? message);
    this.error = error ?? invalidRecord(message);
  }
}
