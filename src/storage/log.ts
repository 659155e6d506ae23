// biome-ignore-all lint/style/noExcessiveLinesPerFile: Kafka's UnifiedLog (2,000+ lines there) over LocalLog: the append paths, HW, log start and epoch cache move together under one invariant set; the side jobs (recovery, validation, producer state, checkpoints) already live in their own files.
import * as path from 'node:path';
import { topicPartitionKey } from '../common/topic-partition.js';
import type { KafkaError } from '../protocol/kafka-error.js';
import {
  type BatchHeader,
  emptyBatchHeader,
  isControl,
  lastOffset,
  setBaseOffset,
  setLogAppendTime,
  setPartitionLeaderEpoch,
  viewOf,
} from '../protocol/records/batch.js';
import { decodeRecords } from '../protocol/records/codec.js';
import { type EndTxnMarker, readEndTxnMarker } from '../protocol/records/end-txn-marker.js';
import { recordOffset, recordTimestamp } from '../protocol/records/record.js';
import { type BatchInvalid, validateBatch, validateBatchInPlace } from '../protocol/records/validate.js';
import {
  CheckpointFile,
  CorruptCheckpointError,
  epochEntryCodec,
  LEADER_EPOCH_CHECKPOINT,
} from './checkpoint.js';
import {
  corruptRecord,
  invalidRecord,
  OffsetsOutOfOrderError,
  offsetOutOfRange,
  recordTooLarge,
  UnexpectedAppendOffsetError,
} from './errors.js';
import { type FileSystem, isNotFound } from './fs.js';
import { type EpochEndOffset, LeaderEpochFileCache } from './leader-epoch-cache.js';
import type { LocalLog, LogOffsetMetadata, LogReadResult, StorageContext } from './local-log.js';
import type { LogConfig } from './log-config.js';
import { loadLog } from './log-loader.js';
import { needsRecordChecks, type RecordChecks, validateRecords } from './log-validator.js';
import { LogTopicId } from './partition-metadata.js';
import { type BatchMetadata, type CompletedTxn, ProducerStateManager } from './producer-state.js';
import type { AbortedTxn } from './transaction-index.js';

export interface LogAppendInfo {
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  readonly maxTimestamp: bigint;
  readonly offsetOfMaxTimestamp: bigint;
  /** The broker time stamped on LogAppendTime batches, else -1. */
  readonly logAppendTimeMs: bigint;
  readonly logStartOffset: bigint;
  readonly validBytes: number;
  readonly batches: number;
  readonly records: number;
  /** The batch was already written (same producer, epoch and sequences): acknowledged, not appended. */
  readonly duplicate: boolean;
}

/**
 * How far a read may go (Kafka's FetchIsolation): a follower to the LEO, a read_uncommitted
 * consumer to the HW, a read_committed one to the LSO, with the aborted transactions it needs.
 */
export type FetchIsolation = 'log-end' | 'high-watermark' | 'txn-committed';

/**
 * Who appends as leader (Kafka's AppendOrigin): a client's batches are checked for duplicates and
 * sequences and may not be control batches; the coordinators write the COMMIT/ABORT markers and
 * the transactional offset commits, whose sequences are not checked (Kafka writes them at 0).
 */
export type AppendOrigin = 'client' | 'coordinator';

export interface TimestampAndOffset {
  readonly timestamp: bigint;
  readonly offset: bigint;
  readonly leaderEpoch: number | undefined;
}

export interface OpenLogParams {
  readonly dir: string;
  readonly topic: string;
  readonly partition: number;
  readonly config: LogConfig;
  readonly ctx: StorageContext;
  readonly recoveryPoint?: bigint;
  readonly logStartOffset?: bigint;
  readonly hadCleanShutdown: boolean;
  /**
   * `recoveryPoint` is what the log dir's recovery-point checkpoint held for this partition when
   * the dir was loaded (none: 0): the checkpoint holds no other value for it until this log's are
   * written. Then new leader epochs past the recovery points may be written in the background
   * (LeaderEpochFileCache.writeAssignmentsInBackground). A log created or reopened elsewhere may
   * have a stale entry of an earlier log of that name in the checkpoint: its epochs are written at once.
   */
  readonly recoveryPointFromCheckpoint?: boolean;
}

interface ScannedAppend {
  firstOffset: bigint;
  lastOffset: bigint;
  maxTimestamp: bigint;
  offsetOfMaxTimestamp: bigint;
  batches: number;
  records: number;
}

/** The leader's append walks the records of compressed batches too, as Kafka's LogValidator. */
const LEADER_CHECKS = { decompress: true } as const;

const CORRUPT_REASONS = new Set(['truncated', 'batch-length-too-small', 'bad-magic', 'crc-mismatch']);

function rejectBatch(name: string, v: BatchInvalid, pos: number): KafkaError {
  const message = `${name}: batch at byte ${pos} of the append is invalid: ${v.reason} (${v.detail})`;
  return CORRUPT_REASONS.has(v.reason) ? corruptRecord(message) : invalidRecord(message);
}

/** The marker of a control batch in an append: a malformed one refuses the append (INVALID_RECORD). */
function leaderMarker(records: Buffer, pos: number, name: string): EndTxnMarker | null {
  try {
    return readEndTxnMarker(records, pos);
  } catch (e) {
    throw invalidRecord(
      `${name}: control batch at byte ${pos}: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

/**
 * The marker of a control batch already in the log (recovery, rebuild): one that cannot be read
 * (it passed its CRC, so a writer's bug) ends no transaction, with a warning.
 */
function storedMarker(batch: Buffer, name: string, ctx: StorageContext): EndTxnMarker | null {
  try {
    return readEndTxnMarker(batch);
  } catch (e) {
    ctx.logger.warn(`${name}: unreadable transaction marker: ${e instanceof Error ? e.message : String(e)}`);
    return null;
  }
}

/** The names in `dir`; a directory that does not exist yet is made (a new log), with none. */
function listOrCreate(fs: FileSystem, dir: string): string[] {
  try {
    return fs.list(dir);
  } catch (e) {
    if (!isNotFound(e)) throw e;
    fs.mkdirp(dir);
    return [];
  }
}

/**
 * Reads every `.txnindex` of the log (few segments have one); deletes those that cannot be read.
 * Returns whether any was.
 */
function dropDamagedTxnIndexes(local: LocalLog, name: string, ctx: StorageContext): boolean {
  let damaged = false;
  // The load's listing told each segment whether its `.txnindex` exists: an absent one reads nothing.
  for (const segment of local.segments.values()) {
    try {
      segment.txnIndex.all();
    } catch (e) {
      ctx.logger.warn(
        `${name}: rebuilding the transaction indexes: ${e instanceof Error ? e.message : String(e)}`,
      );
      segment.txnIndex.deleteIfExists();
      damaged = true;
    }
  }
  return damaged;
}

/**
 * One partition's log (Kafka's UnifiedLog): the LocalLog plus the log start offset, the high
 * watermark and the leader epoch cache. Leader appends assign offsets and stamp the epoch; follower
 * appends keep the leader's offsets. Batches are written as received (zero copy); a leader append
 * rewrites baseOffset and partitionLeaderEpoch in the caller's buffer, both outside the CRC.
 * Owned by the log manager; callers serialise calls per partition (the partition's lock in Kafka).
 */
export class Log {
  private logStart: bigint;
  private hw: bigint;
  private hwMetadata: LogOffsetMetadata | null = null;
  /**
   * Header objects and batch positions reused by every appendAsLeader (calls are serialised per
   * partition and nothing keeps a header past the call), so a leader append allocates no header.
   * `write` hands the whole array down: the segment reads as many as the bytes hold batches.
   */
  private readonly appendHeaders: BatchHeader[] = [];
  private readonly appendPositions: number[] = [];
  /** recordChecks()'s memo: the config it was derived from. */
  private checksConfig: LogConfig | null = null;
  private checks!: RecordChecks;
  /**
   * Called after maybeIncrementLogStartOffset moved the log start (delete-records, a follower
   * following its leader's): the LogManager persists the log-start-offset-checkpoint then.
   */
  onLogStartOffsetIncremented: (() => void) | null = null;
  /**
   * Called after a truncation lowered the recovery point: the LogManager rewrites the log dir's
   * recovery-point-offset-checkpoint at once (Kafka's LogManager.truncateTo), or a crash would load
   * the bytes appended since then below the old, higher point without validating them.
   */
  onRecoveryPointLowered: (() => void) | null = null;
  private readonly topicIds: LogTopicId;

  private constructor(
    readonly topic: string,
    readonly partition: number,
    private localLog: LocalLog,
    private epochCache: LeaderEpochFileCache,
    private producers: ProducerStateManager,
    logStartOffset: bigint,
    private readonly ctx: StorageContext,
    producerStateReplayed = false,
  ) {
    this.logStart = logStartOffset;
    this.hw = logStartOffset;
    this.topicIds = new LogTopicId(ctx.fs, () => this.dir, this.name, ctx.logger);
    if (producerStateReplayed) {
      // Replayed from every batch of the log by the recovery: only the bookkeeping of a rebuild.
      this.producerState.deleteSnapshotsAbove(this.logEndOffset);
      this.producerState.onLogStartOffsetIncremented(logStartOffset);
    } else {
      this.rebuildProducerState();
    }
  }

  static open(p: OpenLogParams): Log {
    const name = topicPartitionKey(p.topic, p.partition);
    // One listing of the directory serves the load and the producer snapshots.
    const files = listOrCreate(p.ctx.fs, p.dir);
    const checkpoint = new CheckpointFile(
      p.ctx.fs,
      path.join(p.dir, LEADER_EPOCH_CHECKPOINT),
      epochEntryCodec,
    );
    let cache: LeaderEpochFileCache;
    let rebuildEpochs = false;
    try {
      cache = new LeaderEpochFileCache(checkpoint, p.ctx.logger, name);
    } catch (e) {
      if (!(e instanceof CorruptCheckpointError)) throw e;
      // The epochs can be read back from the batches: drop the file and validate the whole log,
      // which replays every batch's epoch into a fresh cache.
      p.ctx.logger.warn(`${name}: ${e.message}; rebuilding the leader epoch cache from the log`);
      p.ctx.fs.unlink(checkpoint.path);
      cache = new LeaderEpochFileCache(checkpoint, p.ctx.logger, name);
      rebuildEpochs = true;
    }
    // A recovery that validates the whole log replays its producer state in the same pass (as
    // Kafka's recoverSegment does), instead of a second scan of every batch header afterwards.
    // Batches below the log start are skipped, as the rebuild's replay skips them.
    const producers = new ProducerStateManager(p.ctx.fs, p.dir, p.ctx.logger, name);
    producers.findSnapshotsIn(files);
    const replayFrom = p.logStartOffset ?? 0n;
    producers.reset(replayFrom);
    const aborted: CompletedTxn[] = [];
    const loaded = loadLog({
      dir: p.dir,
      files,
      name,
      config: p.config,
      ctx: p.ctx,
      epochCache: cache,
      recoveryPoint: rebuildEpochs ? 0n : (p.recoveryPoint ?? 0n),
      logStartOffsetCheckpoint: replayFrom,
      hadCleanShutdown: p.hadCleanShutdown && !rebuildEpochs,
      onReplayedBatch: (h, reader, position, size) => {
        if (h.baseOffset + BigInt(h.lastOffsetDelta) < replayFrom) return;
        const marker = isControl(h.attributes)
          ? storedMarker(reader.view(position, size), name, p.ctx)
          : null;
        const completed = producers.update(h, marker);
        if (completed?.isAborted) aborted.push(completed);
      },
    });
    if (p.recoveryPointFromCheckpoint === true) {
      // The checkpoint holds what it held at the load (the recovery may have lowered it since, or
      // a corrupt epoch file made the load start at 0), or what the log had since.
      const { local } = loaded;
      const checkpointed = p.recoveryPoint ?? 0n;
      cache.writeAssignmentsInBackground(() =>
        local.highestRecoveryPoint > checkpointed ? local.highestRecoveryPoint : checkpointed,
      );
    }
    // A damaged `.txnindex` is deleted and every index rebuilt from the log start by a full
    // replay (without snapshots to start from), as Kafka recovers a segment whose index fails
    // its sanity check.
    if (dropDamagedTxnIndexes(loaded.local, name, p.ctx)) producers.deleteAllSnapshots();
    if (loaded.replayedAll) {
      // Every marker was replayed: the `.txnindex` files from the replay's start are its result.
      const replayed = loaded.local.segments.range(replayFrom, loaded.local.logEndOffset);
      for (const segment of replayed) segment.txnIndex.truncateTo(replayFrom);
      for (const t of aborted) loaded.local.segments.floor(t.lastOffset)?.txnIndex.append(t);
    }
    const log = new Log(
      p.topic,
      p.partition,
      loaded.local,
      cache,
      producers,
      loaded.logStartOffset,
      p.ctx,
      loaded.replayedAll,
    );
    // Read and checked: the `.log` files are opened again by the first read or append.
    for (const segment of log.local.segments.values()) segment.releaseHandle();
    return log;
  }

  /** The segments; replaced only by adoptFilesOf (an alter-log-dirs move). */
  get local(): LocalLog {
    return this.localLog;
  }

  get leaderEpochCache(): LeaderEpochFileCache {
    return this.epochCache;
  }

  get producerState(): ProducerStateManager {
    return this.producers;
  }

  /**
   * Alter-log-dirs (Kafka's replaceCurrentWithFutureLog): from now on this log lives in
   * `replacement`'s files — its copy in another log dir, closed and reopened at its final path,
   * with the same LEO. The log start offset and the HW stay this log's, and everything holding
   * this Log (partition, leader or follower state, parked requests) keeps a valid one. The caller
   * closed this log's own files first.
   */
  adoptFilesOf(replacement: Log): void {
    if (replacement.logEndOffset !== this.logEndOffset) {
      throw new Error(
        `${this.name}: cannot take over a log ending at ${replacement.logEndOffset}; this one ends at ${this.logEndOffset}`,
      );
    }
    this.localLog = replacement.localLog;
    this.epochCache = replacement.epochCache;
    this.producers = replacement.producers;
    this.hwMetadata = null;
    this.epochCache.truncateFromStart(this.logStart);
  }

  get name(): string {
    return this.local.name;
  }

  /** The cleaner swapped segments in: positions cached for offsets may point into old files. */
  onSegmentsReplaced(): void {
    this.hwMetadata = null;
  }

  /** The topic id in `partition.metadata`; null until assigned (a new log, or one from before the file). */
  get topicId(): string | null {
    return this.topicIds.get();
  }

  /**
   * Kafka's assignTopicId: records the topic id and writes `partition.metadata`; a log holding
   * another topic's id throws INCONSISTENT_TOPIC_ID (a directory left by an earlier topic of the
   * same name).
   */
  assignTopicId(topicId: string): void {
    this.topicIds.assign(topicId);
  }

  get dir(): string {
    return this.local.dir;
  }

  get config(): LogConfig {
    return this.local.logConfig;
  }

  get logEndOffset(): bigint {
    return this.local.logEndOffset;
  }

  get logStartOffset(): bigint {
    return this.logStart;
  }

  get highWatermark(): bigint {
    return this.hw;
  }

  get recoveryPoint(): bigint {
    return this.local.recoveryPoint;
  }

  /** Sum of the `.log` file sizes (DescribeLogDirs' partitionSize). */
  get size(): number {
    return this.local.segments.sizeInBytes();
  }

  /** Sets the HW, clamped to [log start offset, LEO]. Returns the value set. */
  updateHighWatermark(offset: bigint): bigint {
    let hw = offset < this.logStart ? this.logStart : offset;
    if (hw > this.logEndOffset) hw = this.logEndOffset;
    if (hw !== this.hw) this.hwMetadata = null;
    this.hw = hw;
    this.producerState.onHighWatermarkUpdated(hw);
    return hw;
  }

  /** Moves the HW forward only (the leader's rule); returns whether it moved. */
  maybeIncrementHighWatermark(offset: bigint): boolean {
    if (offset <= this.hw) return false;
    const before = this.hw;
    return this.updateHighWatermark(offset) > before;
  }

  /** The record checks of the current config, derived once per config object (configs are replaced, never changed). */
  private recordChecks(): RecordChecks {
    const config = this.config;
    if (this.checksConfig !== config) {
      this.checksConfig = config;
      this.checks = {
        compact: config.compact,
        createTime: config.messageTimestampType !== 'LogAppendTime',
        timestampBeforeMaxMs: config.messageTimestampBeforeMaxMs,
        timestampAfterMaxMs: config.messageTimestampAfterMaxMs,
      };
    }
    return this.checks;
  }

  /**
   * Validates, assigns offsets from the LEO, stamps `leaderEpoch` and appends. Each batch is
   * checked as Kafka's leader does: size against max.message.bytes, CRC, and the records of an
   * batch, decompressed when compressed (offset deltas 0..n-1), on a compacted topic that every record has a
   * key, and record timestamps against message.timestamp.before/after.max.ms. Throws a KafkaError
   * (CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE) or a RecordValidationError (keyless
   * records, refused timestamps) and appends nothing if any batch fails. Producer
   * state checks follow (sequences, epochs, transactions; a marker's coordinator epoch).
   */
  appendAsLeader(records: Buffer, leaderEpoch: number, origin: AppendOrigin = 'client'): LogAppendInfo {
    const logAppendTime = this.config.messageTimestampType === 'LogAppendTime';
    const maxMessageBytes = this.config.maxMessageBytes;
    const checks = this.recordChecks();
    // One parse per batch, into header objects this log reuses: the headers from validation are
    // carried through, updated in step with the bytes they describe.
    const headers = this.appendHeaders;
    const positions = this.appendPositions;
    const view = viewOf(records);
    // Allocated only when the append holds a control batch.
    let markers: (EndTxnMarker | null)[] | null = null;
    let count = 0;
    for (let pos = 0; pos < records.length; count++) {
      let h = headers[count];
      if (h === undefined) {
        h = emptyBatchHeader();
        headers.push(h);
      }
      const size = validateBatchInPlace(records, pos, records.length - pos, h, LEADER_CHECKS, view);
      if (typeof size !== 'number') throw rejectBatch(this.name, size, pos);
      if (size > maxMessageBytes) {
        throw recordTooLarge(
          `${this.name}: batch of ${size} bytes exceeds max.message.bytes ${maxMessageBytes}`,
        );
      }
      if (needsRecordChecks(h, checks)) {
        validateRecords(records, pos, h, checks, this.ctx.clock.nowMs(), `${this.topic}-${this.partition}`);
      }
      if (isControl(h.attributes)) {
        if (origin === 'client') {
          throw invalidRecord(`${this.name}: clients are not allowed to write control records`);
        }
        markers ??= [];
        markers[count] = leaderMarker(records, pos, this.name);
      }
      positions[count] = pos;
      pos += size;
    }
    let pending: Map<bigint, { epoch: number; lastSeq: number }> | null = null;
    for (let i = 0; i < count; i++) {
      const h = headers[i]!;
      // Batches without a producer id have no sequence to check (checkClientBatch's first test).
      if (h.producerId < 0n) continue;
      pending ??= new Map();
      const duplicate = this.producerState.checkClientBatch(
        h,
        pending,
        markers?.[i] ?? null,
        origin === 'client',
      );
      if (duplicate) return this.duplicateInfo(duplicate);
    }
    const now = logAppendTime ? BigInt(this.ctx.clock.nowMs()) : -1n;
    let next = this.logEndOffset;
    const scan: ScannedAppend = this.emptyScan(next);
    for (let i = 0; i < count; i++) {
      const h = headers[i]!;
      const pos = positions[i]!;
      setBaseOffset(records, pos, next);
      setPartitionLeaderEpoch(records, pos, leaderEpoch);
      h.baseOffset = next;
      h.partitionLeaderEpoch = leaderEpoch;
      if (logAppendTime) {
        setLogAppendTime(records, pos, now);
        h.maxTimestamp = now;
      }
      const last = lastOffset(h);
      this.addToScan(scan, next, last, h.maxTimestamp, h.recordsCount);
      next = last + 1n;
    }
    if (scan.batches === 0) return this.appendInfo(scan, records.length, -1n);
    this.write(records, scan, headers);
    // After the write: an epoch entry must never describe data that a failed write left out.
    if (leaderEpoch >= 0) this.leaderEpochCache.assign(leaderEpoch, scan.firstOffset);
    for (let i = 0; i < count; i++) this.applyToProducerState(headers[i]!, markers?.[i] ?? null);
    return this.appendInfo(scan, records.length, now);
  }

  /**
   * Appends the leader's batches with their offsets: CRC-checked, offsets increasing, starting at
   * or after the LEO. When this log is empty (LEO = log start) and the first batch straddles the
   * log start — the leader's log start moved inside a batch — the log restarts at that batch's base
   * offset, as Kafka's Partition does ("will start the log from offset N"). `quiet`: the caller
   * (a follower finishing a rebuild) reports that restart in its own line.
   */
  appendAsFollower(records: Buffer, opts: { readonly quiet?: boolean } = {}): LogAppendInfo {
    const scan = this.emptyScan(this.logEndOffset);
    let previousLast: bigint | null = null;
    const epochs: { epoch: number; baseOffset: bigint }[] = [];
    const headers: BatchHeader[] = [];
    const markers: (EndTxnMarker | null)[] = [];
    for (let pos = 0; pos < records.length; ) {
      const v = validateBatch(records, pos, records.length - pos);
      if (!v.ok) throw rejectBatch(this.name, v, pos);
      const h = v.header;
      markers.push(isControl(h.attributes) ? leaderMarker(records, pos, this.name) : null);
      if (previousLast !== null && h.baseOffset <= previousLast) {
        throw new OffsetsOutOfOrderError(
          `${this.name}: out of order offsets in append: ${h.baseOffset} after ${previousLast}`,
        );
      }
      previousLast = lastOffset(h);
      this.addToScan(scan, h.baseOffset, previousLast, h.maxTimestamp, h.recordsCount);
      epochs.push({ epoch: h.partitionLeaderEpoch, baseOffset: h.baseOffset });
      headers.push(h);
      pos += v.size;
    }
    if (scan.batches === 0) return this.appendInfo(scan, records.length, -1n);
    if (scan.firstOffset < this.logEndOffset) {
      const leo = this.logEndOffset;
      if (leo === this.logStart && scan.lastOffset >= leo) {
        if (opts.quiet !== true) {
          this.ctx.logger.info(
            `${this.name}: unexpected offset in append: first offset ${scan.firstOffset} is less than log start offset ${this.logStart}. Since this is the first record to be appended to the follower's log, will start the log from offset ${scan.firstOffset}.`,
          );
        }
        this.truncateFullyAndStartAt(scan.firstOffset, opts);
      } else {
        throw new UnexpectedAppendOffsetError(
          `${this.name}: unexpected offset in append: first offset ${scan.firstOffset} is less than the next offset ${leo}. Log start offset = ${this.logStart}`,
          scan.firstOffset,
          scan.lastOffset,
        );
      }
    }
    this.write(records, scan, headers);
    for (const e of epochs) if (e.epoch >= 0) this.leaderEpochCache.assign(e.epoch, e.baseOffset);
    for (let i = 0; i < headers.length; i++) this.applyToProducerState(headers[i]!, markers[i]!);
    return this.appendInfo(scan, records.length, -1n);
  }

  /**
   * A batch now in the log, into producer state; an ABORT that ends a transaction goes into the
   * `.txnindex` of the segment holding it (Kafka's updateTxnIndex), here the active one.
   */
  private applyToProducerState(h: BatchHeader, marker: EndTxnMarker | null): void {
    const completed = this.producerState.update(h, marker);
    if (completed?.isAborted) this.local.segments.active().txnIndex.append(completed);
  }

  private emptyScan(next: bigint): ScannedAppend {
    return {
      firstOffset: next,
      lastOffset: next - 1n,
      maxTimestamp: -1n,
      offsetOfMaxTimestamp: -1n,
      batches: 0,
      records: 0,
    };
  }

  private addToScan(s: ScannedAppend, base: bigint, last: bigint, maxTimestamp: bigint, count: number): void {
    if (s.batches === 0) s.firstOffset = base;
    s.lastOffset = last;
    if (maxTimestamp > s.maxTimestamp) {
      s.maxTimestamp = maxTimestamp;
      s.offsetOfMaxTimestamp = last;
    }
    s.batches++;
    s.records += count;
  }

  private write(records: Buffer, scan: ScannedAppend, headers: readonly BatchHeader[]): void {
    const before = this.local.segments.active();
    const segment = this.local.maybeRoll(
      records.length,
      scan.firstOffset,
      scan.lastOffset,
      scan.maxTimestamp,
    );
    // Kafka snapshots producer state at every roll, at the new segment's base offset.
    if (segment !== before) this.producerState.takeSnapshot();
    this.local.append(scan.lastOffset, records, scan.records, headers);
    this.local.maybeFlush();
  }

  private appendInfo(scan: ScannedAppend, validBytes: number, logAppendTimeMs: bigint): LogAppendInfo {
    return {
      firstOffset: scan.firstOffset,
      lastOffset: scan.lastOffset,
      maxTimestamp: scan.maxTimestamp,
      offsetOfMaxTimestamp: scan.offsetOfMaxTimestamp,
      logAppendTimeMs,
      logStartOffset: this.logStart,
      validBytes,
      batches: scan.batches,
      records: scan.records,
      duplicate: false,
    };
  }

  private duplicateInfo(d: BatchMetadata): LogAppendInfo {
    return {
      firstOffset: d.firstOffset,
      lastOffset: d.lastOffset,
      maxTimestamp: d.timestamp,
      offsetOfMaxTimestamp: d.lastOffset,
      logAppendTimeMs: -1n,
      logStartOffset: this.logStart,
      validBytes: 0,
      batches: 0,
      records: 0,
      duplicate: true,
    };
  }

  /**
   * Brings producer state to the LEO: the newest snapshot at or below it, then the batch headers
   * after it (Kafka's rebuildProducerState). Snapshots beyond the LEO are stale and go first.
   */
  private rebuildProducerState(): void {
    const ps = this.producerState;
    const leo = this.logEndOffset;
    ps.deleteSnapshotsAbove(leo);
    let from = ps.loadLatestSnapshot(leo);
    if (from === null || from < this.logStart) {
      ps.reset(this.logStart);
      from = this.logStart;
    }
    // The aborted transactions of the markers from `from` on are rebuilt with the state (the
    // replay meets each marker with the transactions that were ongoing when it was appended).
    const replayed = this.local.segments.range(from, leo);
    for (const segment of replayed) segment.txnIndex.truncateTo(from);
    for (const segment of replayed) {
      const reader = segment.reader();
      for (let pos = segment.offsetIndex.lookup(from).position; pos < segment.size; ) {
        const check = reader.check(pos, false);
        if (!check.ok) break;
        const h = check.header;
        if (lastOffset(h) >= from) {
          const marker = isControl(h.attributes)
            ? storedMarker(reader.view(pos, check.size), this.name, this.ctx)
            : null;
          const completed = ps.update(h, marker);
          if (completed?.isAborted) segment.txnIndex.append(completed);
        }
        pos += check.size;
      }
    }
    ps.onLogStartOffsetIncremented(this.logStart);
  }

  /**
   * Reads from `startOffset` up to `maxLength` bytes, stopping at the LEO or the HW. An offset
   * below the log start or above the LEO is OFFSET_OUT_OF_RANGE. `forSocket`: see LogSegment.read.
   */
  read(
    startOffset: bigint,
    maxLength: number,
    isolation: FetchIsolation,
    minOneMessage: boolean,
    forSocket = false,
  ): LogReadResult {
    const leo = this.logEndOffset;
    if (startOffset < this.logStart || startOffset > leo) {
      throw offsetOutOfRange(
        `${this.name}: received request for offset ${startOffset}, but we only have log segments from offset ${this.logStart} up to ${leo}.`,
      );
    }
    if (isolation === 'txn-committed')
      return this.readCommitted(startOffset, maxLength, minOneMessage, forSocket);
    const maxOffsetMetadata =
      isolation === 'log-end' ? this.local.logEndOffsetMetadata() : this.highWatermarkMetadata();
    return this.local.read(startOffset, maxLength, maxOffsetMetadata, minOneMessage, forSocket);
  }

  /**
   * A read up to the LSO with the transactions aborted in the range read (Kafka's
   * addAbortedTransactions): from the read's start to the next segment's base offset (or the
   * LEO), a bound that may name a few transactions past the records, never miss one.
   */
  private readCommitted(
    startOffset: bigint,
    maxLength: number,
    minOneMessage: boolean,
    forSocket: boolean,
  ): LogReadResult {
    const lso = this.lastStableOffset;
    const bound = lso === this.hw ? this.highWatermarkMetadata() : this.local.convertToOffsetMetadata(lso);
    const result = this.local.read(startOffset, maxLength, bound, minOneMessage, forSocket);
    if (result.records.length === 0) return { ...result, abortedTransactions: [] };
    const next = this.local.segments.higher(result.fetchOffset.segmentBaseOffset);
    const upperBoundOffset = next ? next.baseOffset : this.logEndOffset;
    return { ...result, abortedTransactions: this.collectAbortedTransactions(startOffset, upperBoundOffset) };
  }

  private highWatermarkMetadata(): LogOffsetMetadata {
    if (!this.hwMetadata || this.hwMetadata.offset !== this.hw) {
      this.hwMetadata = this.local.convertToOffsetMetadata(this.hw);
    }
    return this.hwMetadata;
  }

  /**
   * The first record with timestamp ≥ `timestamp` at or after the log start offset, as ListOffsets
   * answers; null when every record is older.
   */
  fetchOffsetByTimestamp(timestamp: bigint): TimestampAndOffset | null {
    for (const segment of this.local.segments.values()) {
      if (segment.largestTimestamp().timestamp < timestamp) continue;
      const found = segment.findBatchByTimestamp(timestamp, this.logStart);
      if (!found) continue;
      const bytes = segment.read(found.baseOffset, found.size, segment.size, true);
      if (!bytes) continue;
      const decoded = decodeRecords(bytes.records, { decompress: true });
      for (const r of decoded.records) {
        const offset = recordOffset(decoded.header, r);
        if (recordTimestamp(decoded.header, r) >= timestamp && offset >= this.logStart) {
          return {
            timestamp: recordTimestamp(decoded.header, r),
            offset,
            leaderEpoch:
              decoded.header.partitionLeaderEpoch >= 0 ? decoded.header.partitionLeaderEpoch : undefined,
          };
        }
      }
    }
    return null;
  }

  /**
   * ListOffsets' MAX_TIMESTAMP (-3): the largest batch timestamp at or after the log start and the
   * last offset of its batch; null for an empty log.
   */
  fetchOffsetOfMaxTimestamp(): TimestampAndOffset | null {
    let best: TimestampAndOffset | null = null;
    for (const segment of this.local.segments.values()) {
      const max = segment.largestTimestamp();
      if (max.timestamp < 0n || max.offset < this.logStart) continue;
      if (!best || max.timestamp > best.timestamp) {
        best = {
          timestamp: max.timestamp,
          offset: max.offset,
          leaderEpoch: this.leaderEpochCache.epochForOffset(max.offset),
        };
      }
    }
    return best;
  }

  /**
   * The last stable offset (Kafka's UnifiedLog.lastStableOffset): the first offset of the earliest
   * transaction that is ongoing or whose marker is not yet below the HW, when that is below the HW;
   * else the HW. read_committed consumers read up to it.
   */
  get lastStableOffset(): bigint {
    const firstUnstable = this.producerState.firstUnstableOffset();
    return firstUnstable !== null && firstUnstable < this.hw ? firstUnstable : this.hw;
  }

  /**
   * The transactions aborted in [startOffset, upperBoundOffset) for a read_committed fetch
   * (Kafka's collectAbortedTransactions): from the segment holding startOffset on, until a
   * segment's index shows no later one can start below upperBoundOffset.
   */
  collectAbortedTransactions(startOffset: bigint, upperBoundOffset: bigint): AbortedTxn[] {
    const out: AbortedTxn[] = [];
    for (const segment of this.local.segments.range(startOffset, this.logEndOffset + 1n)) {
      if (segment.txnIndex.collect(startOffset, upperBoundOffset, out)) break;
    }
    return out;
  }

  /** The end offset of `epoch` for OffsetsForLeaderEpoch and divergence checks. */
  endOffsetForEpoch(epoch: number): EpochEndOffset {
    return this.leaderEpochCache.endOffsetFor(epoch, this.logEndOffset);
  }

  /**
   * Raises the log start offset (DeleteRecords, or a follower following its leader). Beyond the HW
   * is OFFSET_OUT_OF_RANGE. Segments wholly below it go on the next retention pass. Returns whether
   * it moved.
   */
  maybeIncrementLogStartOffset(
    target: bigint,
    reason: string,
    opts: { readonly quiet?: boolean } = {},
  ): boolean {
    if (target > this.hw) {
      throw offsetOutOfRange(
        `${this.name}: cannot increment the log start offset to ${target} since it is larger than the high watermark ${this.hw}`,
      );
    }
    if (target <= this.logStart) return false;
    this.logStart = target;
    this.leaderEpochCache.truncateFromStart(target);
    this.producerState.onLogStartOffsetIncremented(target);
    this.onLogStartOffsetIncremented?.();
    if (opts.quiet !== true) {
      this.ctx.logger.info(`${this.name}: incremented log start offset to ${target} due to ${reason}`);
    }
    return true;
  }

  /**
   * Removes every offset ≥ `targetOffset` (a follower diverged from its leader). Returns whether
   * anything was removed. Below the first segment it becomes a full truncation. `quiet`: the
   * caller (a follower) logs the truncation in its own line.
   */
  truncateTo(targetOffset: bigint, opts: { readonly quiet?: boolean } = {}): boolean {
    if (targetOffset < 0n)
      throw new RangeError(`cannot truncate ${this.name} to a negative offset ${targetOffset}`);
    if (targetOffset >= this.logEndOffset) return false;
    const first = this.local.segments.first();
    if (first && targetOffset < first.baseOffset) {
      this.truncateFullyAndStartAt(targetOffset, opts);
      return true;
    }
    const before = this.logEndOffset;
    const recoveryPointBefore = this.local.recoveryPoint;
    const discarded = this.local.truncateTo(targetOffset);
    // The new LEO, not the target: a target inside a batch removes the whole batch, and an epoch
    // entry starting at or past the LEO would describe data that is gone.
    this.leaderEpochCache.truncateFromEnd(this.logEndOffset);
    if (this.logStart > targetOffset) this.logStart = targetOffset;
    this.rebuildProducerState();
    if (this.hw > this.logEndOffset) this.hw = this.logEndOffset;
    this.producerState.onHighWatermarkUpdated(this.hw);
    this.hwMetadata = null;
    if (this.local.recoveryPoint < recoveryPointBefore) this.onRecoveryPointLowered?.();
    if (opts.quiet !== true) {
      this.ctx.logger.info(
        `${this.name}: truncated to offset ${targetOffset}: LEO ${before} → ${this.logEndOffset}, ${discarded} bytes discarded`,
        {
          event: 'truncation',
          partitionName: this.name,
          truncationOffset: targetOffset,
          oldLogEndOffset: before,
          logEndOffset: this.logEndOffset,
          highWatermark: this.hw,
          bytesDiscarded: discarded,
        },
      );
    }
    return true;
  }

  /**
   * Discards the whole log and starts an empty one at `newOffset` (Kafka's rebuild primitive):
   * every segment is renamed `.deleted`, LSO = LEO = HW = `newOffset`, the epoch cache is cleared.
   * Returns the bytes discarded. `quiet`: the caller (a follower's rebuild) logs it in its own line.
   */
  truncateFullyAndStartAt(newOffset: bigint, opts: { readonly quiet?: boolean } = {}): number {
    const before = this.logEndOffset;
    const recoveryPointBefore = this.local.recoveryPoint;
    const discarded = this.local.truncateFullyAndStartAt(newOffset);
    this.leaderEpochCache.clearAndFlush();
    this.producerState.deleteAllSnapshots();
    this.producerState.reset(newOffset);
    this.logStart = newOffset;
    this.hw = newOffset;
    this.hwMetadata = null;
    if (this.local.recoveryPoint < recoveryPointBefore) this.onRecoveryPointLowered?.();
    if (opts.quiet !== true) {
      this.ctx.logger.warn(
        `${this.name}: truncated fully and restarted at offset ${newOffset}: LEO was ${before}, ${discarded} bytes discarded`,
        {
          event: 'truncation',
          partitionName: this.name,
          full: true,
          truncationOffset: newOffset,
          oldLogEndOffset: before,
          logEndOffset: newOffset,
          bytesDiscarded: discarded,
        },
      );
    }
    return discarded;
  }

  /**
   * Retention (Kafka's deleteOldSegments): segments wholly below the log start offset and, when
   * cleanup.policy has delete, older than retention.ms or beyond retention.bytes, oldest first, and only below the HW. The active
   * segment is rolled first when it qualifies. Returns the number of segments deleted.
   */
  deleteOldSegments(): number {
    const now = BigInt(this.ctx.clock.nowMs());
    // cleanup.policy without delete: only the log start offset deletes (Kafka's deleteOldSegments).
    const retentionMs = this.config.delete ? this.config.retentionMs : -1;
    const retentionBytes = this.config.delete ? this.config.retentionBytes : -1;
    let excessBytes = retentionBytes < 0 ? 0 : this.size - retentionBytes;
    const deletable = [];
    const all = this.local.segments.values();
    for (let i = 0; i < all.length; i++) {
      const s = all[i]!;
      const next = all[i + 1];
      const upper = next ? next.baseOffset : this.logEndOffset;
      if (upper > this.hw) break;
      const breached =
        (next !== undefined && next.baseOffset <= this.logStart) ||
        (retentionMs >= 0 && s.size > 0 && now - s.largestTimestamp().timestamp > BigInt(retentionMs)) ||
        (retentionBytes >= 0 && excessBytes - s.size >= 0);
      if (!breached) break;
      if (!next && s.size === 0) break;
      excessBytes -= s.size;
      deletable.push(s);
    }
    if (deletable.length === 0) return 0;
    if (deletable[deletable.length - 1] === this.local.segments.active()) this.local.roll();
    const segments = deletable.map((s) => ({ baseOffset: s.baseOffset, sizeBytes: s.size }));
    const bytes = segments.reduce((n, s) => n + s.sizeBytes, 0);
    this.local.removeAndDeleteSegments(deletable);
    const newStart = this.local.segments.first()!.baseOffset;
    this.ctx.logger.info(
      `${this.name}: deleting ${segments.length} segments (${bytes} bytes, base offsets ${segments.map((s) => s.baseOffset).join(',')}) by retention (log start offset ${this.logStart}, retention.ms ${retentionMs}, retention.bytes ${retentionBytes}); renamed .deleted until file.delete.delay.ms`,
      {
        event: 'segment-deletion',
        partitionName: this.name,
        segments,
        bytes,
        logStartOffset: newStart > this.logStart ? newStart : this.logStart,
        highWatermark: this.hw,
        retentionMs,
        retentionBytes,
      },
    );
    if (newStart > this.logStart) {
      this.logStart = newStart;
      this.leaderEpochCache.truncateFromStart(newStart);
      this.producerState.onLogStartOffsetIncremented(newStart);
      this.ctx.logger.info(
        `${this.name}: incremented log start offset to ${newStart} due to segment deletion`,
      );
    }
    return deletable.length;
  }

  flush(): void {
    this.local.flush();
  }

  /** Applies flush.ms; the log manager calls it periodically. */
  flushIfDue(): void {
    this.local.maybeFlush();
  }

  /** Clean close: flush, final index entries, trimmed indexes, files closed. */
  close(): void {
    this.local.flush();
    // A truncation not written yet (nothing appended since, so the flush above did not run).
    this.leaderEpochCache.flushIfChanged();
    this.producerState.takeSnapshot();
    this.local.close();
  }
}
