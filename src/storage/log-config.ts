/**
 * Per-log settings, with Kafka's topic-config names in the comments and Kafka's defaults.
 * Plain data: the broker's config layer resolves topic → broker → default and passes the result.
 */
export interface LogConfig {
  /** segment.bytes */
  readonly segmentBytes: number;
  /** segment.ms */
  readonly segmentMs: number;
  /** segment.jitter.ms: each segment rolls up to this much before segment.ms (0: none). */
  readonly segmentJitterMs: number;
  /** preallocate: a new segment reserves segment.bytes of disk at its first append. */
  readonly preallocate: boolean;
  /** segment.index.bytes */
  readonly segmentIndexBytes: number;
  /** index.interval.bytes */
  readonly indexIntervalBytes: number;
  /** flush.messages: fsync after this many unflushed messages (Infinity: never, Kafka's Long.MAX). */
  readonly flushMessages: number;
  /** flush.ms: fsync when the last flush is older than this (Infinity: never). */
  readonly flushMs: number;
  /** file.delete.delay.ms (broker: log.segment.delete.delay.ms) */
  readonly fileDeleteDelayMs: number;
  /** max.message.bytes: the largest batch a producer may append. */
  readonly maxMessageBytes: number;
  /** message.timestamp.type */
  readonly messageTimestampType: 'CreateTime' | 'LogAppendTime';
  /** message.timestamp.before.max.ms: how far a CreateTime record may lag the broker's time (Infinity: any). */
  readonly messageTimestampBeforeMaxMs: number;
  /** message.timestamp.after.max.ms: how far a CreateTime record may lead the broker's time (Infinity: any). */
  readonly messageTimestampAfterMaxMs: number;
  /** retention.ms (-1: unlimited) */
  readonly retentionMs: number;
  /** retention.bytes (-1: unlimited) */
  readonly retentionBytes: number;
  /** cleanup.policy contains compact: the log cleaner compacts it and every record needs a key. */
  readonly compact: boolean;
  /** cleanup.policy contains delete: retention.ms and retention.bytes delete old segments. */
  readonly delete: boolean;
  /** min.cleanable.dirty.ratio: the cleaner takes a log only when dirty bytes / all bytes exceed it. */
  readonly minCleanableDirtyRatio: number;
  /** min.compaction.lag.ms: a record stays uncompacted at least this long. */
  readonly minCompactionLagMs: number;
  /** max.compaction.lag.ms (Infinity: never forced): a record older than this makes its log cleanable. */
  readonly maxCompactionLagMs: number;
  /** delete.retention.ms: how long a tombstone survives once the segment holding it has been cleaned. */
  readonly deleteRetentionMs: number;
}

export const DEFAULT_LOG_CONFIG: LogConfig = Object.freeze({
  segmentBytes: 1024 * 1024 * 1024,
  segmentMs: 7 * 24 * 60 * 60 * 1000,
  segmentJitterMs: 0,
  preallocate: false,
  segmentIndexBytes: 10 * 1024 * 1024,
  indexIntervalBytes: 4096,
  flushMessages: Number.POSITIVE_INFINITY,
  flushMs: Number.POSITIVE_INFINITY,
  fileDeleteDelayMs: 60_000,
  maxMessageBytes: 1_048_588,
  messageTimestampType: 'CreateTime',
  messageTimestampBeforeMaxMs: Number.POSITIVE_INFINITY,
  messageTimestampAfterMaxMs: Number.POSITIVE_INFINITY,
  retentionMs: 7 * 24 * 60 * 60 * 1000,
  retentionBytes: -1,
  compact: false,
  delete: true,
  minCleanableDirtyRatio: 0.5,
  minCompactionLagMs: 0,
  maxCompactionLagMs: Number.POSITIVE_INFINITY,
  deleteRetentionMs: 24 * 60 * 60 * 1000,
});

/** A cleanup.policy value ('compact', 'delete', 'compact,delete') as LogConfig's two flags. */
export function cleanupPolicy(items: readonly string[]): Pick<LogConfig, 'compact' | 'delete'> {
  return { compact: items.includes('compact'), delete: items.includes('delete') };
}

export function logConfig(overrides: Partial<LogConfig> = {}): LogConfig {
  return Object.freeze({ ...DEFAULT_LOG_CONFIG, ...overrides });
}
