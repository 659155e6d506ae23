/** Broker-level intervals (Kafka's log.* broker configs), with Kafka's defaults. */
export interface LogManagerConfig {
  /** log.flush.scheduler.interval.ms: how often flush.ms is checked (Infinity: never). */
  readonly flushCheckIntervalMs: number;
  /** log.flush.offset.checkpoint.interval.ms */
  readonly recoveryPointCheckpointIntervalMs: number;
  /** log.flush.start.offset.checkpoint.interval.ms */
  readonly logStartOffsetCheckpointIntervalMs: number;
  /** replica.high.watermark.checkpoint.interval.ms */
  readonly highWatermarkCheckpointIntervalMs: number;
  /** log.retention.check.interval.ms */
  readonly retentionCheckIntervalMs: number;
  /** How often idle producer ids are expired (Kafka's internal producer.id.expiration.check.interval.ms). */
  readonly producerIdExpirationCheckIntervalMs: number;
}

export const DEFAULT_LOG_MANAGER_CONFIG: LogManagerConfig = Object.freeze({
  flushCheckIntervalMs: Number.POSITIVE_INFINITY,
  recoveryPointCheckpointIntervalMs: 60_000,
  logStartOffsetCheckpointIntervalMs: 60_000,
  highWatermarkCheckpointIntervalMs: 5_000,
  retentionCheckIntervalMs: 300_000,
  producerIdExpirationCheckIntervalMs: 600_000,
});
