import { KafkaError } from '../protocol/kafka-error.js';

/** Errors the storage layer raises for a request, as the Kafka codes a handler answers with. */

export function offsetOutOfRange(message: string): KafkaError {
  return KafkaError.fromCode(1, message);
}

export function corruptRecord(message: string): KafkaError {
  return KafkaError.fromCode(2, message);
}

export function recordTooLarge(message: string): KafkaError {
  return KafkaError.fromCode(10, message);
}

export function invalidRecord(message: string): KafkaError {
  return KafkaError.fromCode(87, message);
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
