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
