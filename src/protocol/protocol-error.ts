/**
 * The one error type a decoder may throw: malformed, truncated or oversized input.
 * Anything else escaping a decoder is a bug. Handlers answer with a Kafka error code or
 * close the one connection that sent the bytes.
 */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
}

/** Thrown when an encoder is asked to write a value its target version cannot carry. */
export class UnsupportedVersionError extends Error {
  override readonly name = 'UnsupportedVersionError';
}
