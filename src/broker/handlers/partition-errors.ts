/**
 * The per-partition error answers every data-path handler shares: the code for a partition this
 * broker does not host, and the Kafka error code of whatever an append or read threw.
 */

import { isDescriptorExhaustion } from '../../network/descriptor-watch.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import { KafkaError } from '../../protocol/kafka-error.js';
import type { BrokerServices } from '../handler-context.js';

/**
 * The error for a partition this broker does not serve: its replica here is in an offline log dir
 * (KAFKA_STORAGE_ERROR, as Kafka answers for HostedPartition.Offline), unknown topic, or another
 * broker's.
 */
export function notHostedError(b: BrokerServices, topic: string, partition: number): number {
  if (b.replicaManager.isOffline(topic, partition)) return ErrorCode.KAFKA_STORAGE_ERROR;
  const t = b.metadata.image().topics.get(topic);
  return t && partition >= 0 && partition < t.partitions.length
    ? ErrorCode.NOT_LEADER_OR_FOLLOWER
    : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
}

/**
 * A KafkaError's code and message; anything else is a bug or an I/O failure, logged with its stack.
 * No file descriptor left (EMFILE, ENFILE: a segment roll, an index opened) answers
 * KAFKA_STORAGE_ERROR, the code Kafka gives an IOException on a log and one clients retry, but
 * leaves the log dir online: the limit is the process's, not the disk's, and passes when
 * descriptors are freed (Kafka would take the dir offline until a restart). The descriptor watch
 * logs it once, not each request.
 */
export function errorCodeOf(e: unknown, b: BrokerServices, what: string): { code: number; message: string } {
  if (e instanceof KafkaError) return { code: e.code, message: e.message };
  if (isDescriptorExhaustion(e) && b.descriptors !== undefined) {
    b.descriptors.exhausted(e);
    return { code: ErrorCode.KAFKA_STORAGE_ERROR, message: e.message };
  }
  // Not an operating error: a bug or an I/O failure. Answer it for this partition and say so.
  const message = e instanceof Error ? e.message : String(e);
  b.logger.warn(`${what}: unexpected error: ${e instanceof Error ? (e.stack ?? message) : message}`);
  return { code: ErrorCode.UNKNOWN_SERVER_ERROR, message };
}
