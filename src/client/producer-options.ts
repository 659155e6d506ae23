/** The producer's settings: Kafka's producer configs the tools map onto it, and Kafka's rules for them. */

import type { CompressionCodecId } from '../protocol/records/index.js';
import { ClientError } from './errors.js';

export interface ProducerOptions {
  /** 0, 1 or -1 (all). */
  readonly acks: number;
  readonly compression: CompressionCodecId;
  /** batch.size: bytes of record payload per partition batch. */
  readonly batchSize: number;
  readonly lingerMs: number;
  /** buffer.memory: send() waits while this many payload bytes are unacknowledged. */
  readonly bufferMemory: number;
  /** Attempts after the first for a batch that fails retriably. */
  readonly retries: number;
  /**
   * max.in.flight.requests.per.connection: Produce requests awaiting an answer per broker. While
   * a broker has this many, its partitions' records gather into batches (up to batch.size) instead
   * of queueing behind requests the broker handles one at a time; 1 also keeps each partition's
   * order across retries.
   */
  readonly maxInFlight: number;
  /** max.request.size: bytes of batches in one Produce request (at least one batch is sent). */
  readonly maxRequestSize: number;
  /** retry.backoff.ms, doubled per attempt up to retry.backoff.max.ms (1000). */
  readonly retryBackoffMs: number;
  /**
   * enable.idempotence: batches carry a producer id (from InitProducerId), its epoch and per-partition
   * sequence numbers, so a retried batch the broker already wrote is not written twice, and
   * retries keep each partition's order. Needs acks=all, retries > 0, max.in.flight <= 5.
   */
  readonly idempotence: boolean;
}

export const DEFAULT_PRODUCER_OPTIONS: ProducerOptions = {
  acks: -1,
  compression: 0,
  batchSize: 16_384,
  lingerMs: 5,
  bufferMemory: 32 * 1024 * 1024,
  retries: 5,
  maxInFlight: 5,
  maxRequestSize: 1_048_576,
  retryBackoffMs: 100,
  idempotence: true,
};

/** Kafka's bound on max.in.flight.requests.per.connection for the idempotent producer. */
export const MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5;

/**
 * Kafka's refusal of an idempotent producer whose settings cannot keep its promise (ProducerConfig's
 * checks, in its order and words), or null when they can.
 */
export function idempotenceConflict(
  o: Pick<ProducerOptions, 'acks' | 'retries' | 'maxInFlight'>,
): string | null {
  if (o.retries === 0) return 'Must set retries to non-zero when using the idempotent producer.';
  if (o.acks !== -1)
    return 'Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence.';
  if (o.maxInFlight > MAX_IN_FLIGHT_FOR_IDEMPOTENCE) return MAX_IN_FLIGHT_CONFLICT;
  return null;
}

export const MAX_IN_FLIGHT_CONFLICT = `Must set max.in.flight.requests.per.connection to at most ${MAX_IN_FLIGHT_FOR_IDEMPOTENCE} to use the idempotent producer.`;

/** acks as the tools accept it: all, -1, 0, 1. */
export function parseAcks(s: string): number {
  if (s === 'all' || s === '-1') return -1;
  if (s === '0' || s === '1') return Number(s);
  throw new ClientError(`invalid value ${s} for acks (expected all, -1, 0 or 1)`);
}
