/**
 * How a failed __consumer_offsets append is reported to clients, as Kafka's GroupMetadataManager
 * maps them: a client must see an error it knows how to react to (find the coordinator again,
 * retry, rejoin), not the storage error itself.
 */
import { ErrorCode } from '../protocol/generated/errors.js';

/** Kafka's mapping of append errors for group metadata writes (GroupMetadataManager.storeGroup). */
export function groupAppendError(code: number): number {
  switch (code) {
    case ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
    case ErrorCode.NOT_ENOUGH_REPLICAS:
    case ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    case ErrorCode.NOT_LEADER_OR_FOLLOWER:
    case ErrorCode.KAFKA_STORAGE_ERROR:
      return ErrorCode.NOT_COORDINATOR;
    case ErrorCode.REQUEST_TIMED_OUT:
      return ErrorCode.REBALANCE_IN_PROGRESS;
    case ErrorCode.MESSAGE_TOO_LARGE:
    case ErrorCode.RECORD_LIST_TOO_LARGE:
    case ErrorCode.INVALID_FETCH_SIZE:
      return ErrorCode.UNKNOWN_SERVER_ERROR;
    default:
      return code;
  }
}

/** Kafka's mapping of append errors for offset writes (GroupMetadataManager.storeOffsets). */
export function offsetAppendError(code: number): number {
  switch (code) {
    case ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
    case ErrorCode.NOT_ENOUGH_REPLICAS:
    case ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    case ErrorCode.NOT_LEADER_OR_FOLLOWER:
    case ErrorCode.KAFKA_STORAGE_ERROR:
      return ErrorCode.NOT_COORDINATOR;
    case ErrorCode.MESSAGE_TOO_LARGE:
    case ErrorCode.RECORD_LIST_TOO_LARGE:
    case ErrorCode.INVALID_FETCH_SIZE:
      return ErrorCode.INVALID_COMMIT_OFFSET_SIZE;
    default:
      return code;
  }
}
