import { type ErrorCodeName, errorByCode } from './generated/errors.js';

/**
 * An operating error that a handler answers with a Kafka error code instead of closing the
 * connection. Its code, name and retriability always come from the generated table, so what we
 * send and how we classify it cannot disagree.
 */
export class KafkaError extends Error {
  override readonly name = 'KafkaError';

  private constructor(
    readonly code: number,
    /** Kafka's name for the code, e.g. NOT_LEADER_OR_FOLLOWER; UNKNOWN for a code not in the table. */
    readonly errorName: ErrorCodeName | 'UNKNOWN',
    /** Whether a client may retry the same request unchanged (a RetriableException in Kafka). */
    readonly retriable: boolean,
    message: string,
  ) {
    super(message);
  }

  /**
   * The error for a Kafka code, with the table's message unless the caller gives a more specific one.
   * A code outside the table (a newer peer's) is kept as is and treated as not retriable, as Kafka's
   * clients do. NONE is not an error, so asking for it is a bug in the caller.
   */
  static fromCode(code: number, message?: string): KafkaError {
    if (code === 0) throw new RangeError('KafkaError.fromCode(0): NONE is not an error');
    const info = errorByCode(code);
    if (info === undefined) {
      return new KafkaError(code, 'UNKNOWN', false, message ?? `Unknown Kafka error code ${code}.`);
    }
    return new KafkaError(info.code, info.name, info.retriable, message ?? info.message);
  }
}
