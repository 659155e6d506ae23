/**
 * Assertions for programmer errors (TigerBeetle's rule): a broken invariant crashes loudly instead
 * of being handled. Operating errors — bad input, a full disk, a peer gone — are typed errors
 * (KafkaError, StoreError) and are answered, never asserted.
 */
export class AssertionError extends Error {
  override readonly name = 'AssertionError';
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new AssertionError(message);
}
