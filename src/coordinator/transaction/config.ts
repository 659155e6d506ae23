/** Transaction coordinator settings, named as Kafka's broker configs. */
export interface TransactionCoordinatorConfig {
  /** transaction.state.log.num.partitions: decides a transactional id's coordinator. */
  transactionStateLogNumPartitions: number;
  /** transaction.max.timeout.ms: InitProducerId asking for more gets INVALID_TRANSACTION_TIMEOUT. */
  transactionMaxTimeoutMs: number;
  /** transactional.id.expiration.ms: an id idle (no transaction) this long is removed. */
  transactionalIdExpirationMs: number;
  /** transaction.abort.timed.out.transaction.cleanup.interval.ms: how often timed-out transactions are aborted. */
  abortTimedOutTransactionsIntervalMs: number;
  /** transaction.remove.expired.transaction.cleanup.interval.ms: how often expired ids are removed. */
  removeExpiredTransactionalIdsIntervalMs: number;
  /** offsets.topic.num.partitions: AddOffsetsToTxn adds the group's __consumer_offsets partition. */
  offsetsTopicNumPartitions: number;
  /** How long the marker sender waits before retrying partitions whose leader could not take them. */
  markerRetryBackoffMs: number;
}

export const DEFAULT_TRANSACTION_COORDINATOR_CONFIG: Readonly<TransactionCoordinatorConfig> = Object.freeze({
  transactionStateLogNumPartitions: 50,
  transactionMaxTimeoutMs: 900_000,
  transactionalIdExpirationMs: 604_800_000,
  abortTimedOutTransactionsIntervalMs: 10_000,
  removeExpiredTransactionalIdsIntervalMs: 3_600_000,
  offsetsTopicNumPartitions: 50,
  markerRetryBackoffMs: 100,
});

/** The internal topic holding the transaction coordinator's state. */
export const TRANSACTION_STATE_TOPIC = '__transaction_state';
