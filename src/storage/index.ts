/**
 * The storage engine: Kafka's on-disk log, layered as Kafka's is.
 *
 *   LogSegment      one .log with its .index, .timeindex and .txnindex (append, read, recover,
 *                   truncate)
 *   LogSegments     the segments of a partition ordered by base offset
 *   LocalLog        segments + LEO: roll, read across segments, truncate, deferred deletion, flush
 *   Log             LocalLog + log start offset, HW, LSO, leader epoch cache, producer state
 *                   (transactions included); leader and follower appends (Kafka's UnifiedLog)
 *   loadLog         opening a partition directory, with recovery (Kafka's LogLoader)
 *   LogManager      every log of a broker over its log dirs, checkpoints, clean-shutdown marker
 *
 * Time, file system, scheduler and logger are injected (StorageContext); nothing here reads the
 * clock or the disk any other way.
 */
export * from './checkpoint.js';
export { type DumpLogOptions, type DumpOutput, dumpLog } from './dump-log.js';
export * from './errors.js';
export { type FileHandle, type FileSystem, NodeFileSystem } from './fs.js';
export { LeaderEpochFileCache, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET } from './leader-epoch-cache.js';
export type { LogOffsetMetadata, LogReadResult, StorageContext } from './local-log.js';
export {
  type AppendOrigin,
  type FetchIsolation,
  Log,
  type LogAppendInfo,
  type OpenLogParams,
  type TimestampAndOffset,
} from './log.js';
export { DEFAULT_LOG_CONFIG, type LogConfig, logConfig } from './log-config.js';
export * from './log-manager.js';
export { PARTITION_METADATA_FILE, PartitionMetadataFile } from './partition-metadata.js';
export { type AbortedTxn, TXN_INDEX_FILE_SUFFIX } from './transaction-index.js';
