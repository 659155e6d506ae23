/**
 * The transaction coordinator (Kafka's TransactionCoordinator with its TransactionStateManager):
 * the transactional ids whose __transaction_state partition this broker leads, each with its
 * TransactionMetadata. Every change is written to that partition (acks=all) before it is applied
 * or answered; completing a transaction sends its markers to the partition leaders, then writes
 * CompleteCommit/CompleteAbort. A partition's ids are loaded from its log when this broker becomes
 * its leader (load) and dropped when it stops (unload). Owned by the broker's
 * TransactionCoordination; single-threaded.
 */
import type { Clock } from '../../common/clock.js';
import type { Logger } from '../../common/logger.js';
import type { Scheduler } from '../../common/scheduler.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import { KafkaError } from '../../protocol/kafka-error.js';
import type { ReplayRecord } from '../loader.js';
import { partitionForGroup } from '../partitioner.js';
import type { CoordinatorLog } from '../records.js';
import type { TransactionCoordinatorConfig } from './config.js';
import { decodeTransactionLogRecord, transactionLogRecord, transactionTombstone } from './log-records.js';
import { TxnMarkerSender, type TxnMarkerTransport } from './markers.js';
import {
  IllegalTxnTransition,
  isEpochExhausted,
  NO_PRODUCER_EPOCH,
  NO_PRODUCER_ID,
  TransactionMetadata,
  TXN_STATE_NAMES,
  TxnState,
  type TxnTransit,
} from './metadata.js';
import {
  type DescribedTransaction,
  describeError,
  describeTransaction,
  type ListTransactionsResult,
  listTransactions,
} from './reads.js';

const {
  NONE,
  INVALID_REQUEST,
  NOT_COORDINATOR,
  COORDINATOR_LOAD_IN_PROGRESS,
  COORDINATOR_NOT_AVAILABLE,
  INVALID_TRANSACTION_TIMEOUT,
  INVALID_PRODUCER_EPOCH,
  INVALID_PRODUCER_ID_MAPPING,
  PRODUCER_FENCED,
  CONCURRENT_TRANSACTIONS,
  INVALID_TXN_STATE,
  UNKNOWN_SERVER_ERROR,
  TRANSACTION_ABORTABLE,
} = ErrorCode;

export interface TransactionCoordinatorOptions {
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly logger: Logger;
  /** Appends to a __transaction_state partition as its leader (acks=all). */
  readonly log: CoordinatorLog;
  readonly config: TransactionCoordinatorConfig;
  readonly markers: TxnMarkerTransport;
  /** A producer id never handed out before in this cluster. */
  nextProducerId(): bigint;
}

interface PartitionCache {
  state: 'loading' | 'active';
  /** The leader epoch of the partition when loaded: the coordinator epoch of its markers. */
  readonly epoch: number;
  readonly txns: Map<string, TransactionMetadata>;
}

type Lookup =
  | { readonly error: number }
  | {
      readonly error: null;
      readonly epoch: number;
      readonly cache: PartitionCache;
      readonly meta: TransactionMetadata | undefined;
    };

export interface InitProducerIdResult {
  readonly errorCode: number;
  readonly producerId: bigint;
  readonly producerEpoch: number;
}

/** topic → partitions */
export type TopicPartitions = ReadonlyMap<string, readonly number[]>;

export class TransactionCoordinator {
  readonly config: TransactionCoordinatorConfig;
  private readonly partitions = new Map<number, PartitionCache>();
  private readonly sender: TxnMarkerSender;
  private readonly timers: (() => void)[] = [];
  private stopped = false;

  constructor(private readonly o: TransactionCoordinatorOptions) {
    this.config = o.config;
    this.sender = new TxnMarkerSender(o.markers, o.scheduler, o.logger, o.config.markerRetryBackoffMs);
    this.every('txn-abort-timed-out', o.config.abortTimedOutTransactionsIntervalMs, () =>
      this.abortTimedOutTransactions(),
    );
    this.every('txn-expire-ids', o.config.removeExpiredTransactionalIdsIntervalMs, () =>
      this.removeExpiredTransactionalIds(),
    );
  }

  private every(name: string, intervalMs: number, task: () => void): void {
    const arm = (): void => {
      if (this.stopped) return;
      const cancel = this.o.scheduler.schedule(name, intervalMs, () => {
        this.timers.splice(this.timers.indexOf(cancel), 1);
        task();
        arm();
      });
      this.timers.push(cancel);
    };
    arm();
  }

  shutdown(): void {
    this.stopped = true;
    this.sender.stop();
    for (const cancel of this.timers.splice(0)) cancel();
    this.partitions.clear();
  }

  /** Kafka's partitionFor: Utils.abs(transactionalId.hashCode) % transaction.state.log.num.partitions. */
  partitionFor(transactionalId: string): number {
    return partitionForGroup(transactionalId, this.config.transactionStateLogNumPartitions);
  }

  // ---- loading -------------------------------------------------------------------------------

  /**
   * Becomes the coordinator of `partition` at leader epoch `epoch`: replays its records (last value
   * per id wins, tombstones remove), then resends the markers of transactions left in
   * PrepareCommit/PrepareAbort by the previous coordinator.
   */
  async load(
    partition: number,
    epoch: number,
    records: AsyncIterable<ReplayRecord> | Iterable<ReplayRecord>,
  ): Promise<void> {
    const cache: PartitionCache = { state: 'loading', epoch, txns: new Map() };
    this.partitions.set(partition, cache);
    const loaded = new Map<string, TxnTransit>();
    let skipped = 0;
    for await (const r of records) {
      if (r.key === null) {
        skipped++;
        continue;
      }
      try {
        const d = decodeTransactionLogRecord(r.key, r.value);
        if (d.value === null) loaded.delete(d.transactionalId);
        else loaded.set(d.transactionalId, d.value);
      } catch {
        skipped++;
      }
    }
    if (this.partitions.get(partition) !== cache) return;
    if (skipped > 0)
      this.o.logger.warn(`__transaction_state-${partition}: skipped ${skipped} unreadable records`);
    for (const [id, t] of loaded) {
      if (t.state === TxnState.Dead) continue;
      cache.txns.set(id, new TransactionMetadata(id, t));
    }
    cache.state = 'active';
    this.o.logger.info(
      `__transaction_state-${partition}: loaded ${cache.txns.size} transactional ids (coordinator epoch ${epoch})`,
    );
    for (const meta of cache.txns.values()) {
      if (meta.state === TxnState.PrepareCommit || meta.state === TxnState.PrepareAbort) {
        this.completeTransaction(meta.transactionalId, epoch, meta);
      }
    }
  }

  unload(partition: number): void {
    if (this.partitions.delete(partition)) {
      this.o.logger.info(`__transaction_state-${partition}: unloaded its transactional ids`);
    }
  }

  private lookup(transactionalId: string): Lookup {
    const cache = this.partitions.get(this.partitionFor(transactionalId));
    if (cache === undefined) return { error: NOT_COORDINATOR };
    if (cache.state === 'loading') return { error: COORDINATOR_LOAD_IN_PROGRESS };
    return { error: null, epoch: cache.epoch, cache, meta: cache.txns.get(transactionalId) };
  }

  /**
   * The id's metadata for a request naming `producerId`, or the error code Kafka answers first:
   * INVALID_REQUEST (empty id), NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, or
   * INVALID_PRODUCER_ID_MAPPING (unknown id, other producer id).
   */
  private forProducer(
    transactionalId: string,
    producerId: bigint,
  ): number | { epoch: number; meta: TransactionMetadata } {
    if (transactionalId === '') return INVALID_REQUEST;
    const l = this.lookup(transactionalId);
    if (l.error !== null) return l.error;
    if (l.meta === undefined || l.meta.producerId !== producerId) return INVALID_PRODUCER_ID_MAPPING;
    return { epoch: l.epoch, meta: l.meta };
  }

  /** Whether `meta` is still this coordinator's, at the epoch an operation started at. */
  private owns(transactionalId: string, epoch: number, meta: TransactionMetadata): boolean {
    if (this.stopped) return false;
    const l = this.lookup(transactionalId);
    return l.error === null && l.epoch === epoch && l.meta === meta;
  }

  /**
   * Writes `transit` and applies it once acknowledged (Kafka's appendTransactionToLog), mapping
   * append errors as Kafka does; a failed write leaves the metadata as it was.
   */
  private async write(meta: TransactionMetadata, epoch: number, transit: TxnTransit): Promise<number> {
    const id = meta.transactionalId;
    const record =
      transit.state === TxnState.Dead ? transactionTombstone(id) : transactionLogRecord(id, transit);
    let code: number = NONE;
    try {
      await this.o.log.append(this.partitionFor(id), [record]);
    } catch (e) {
      code = appendErrorCode(e);
      this.o.logger.warn(
        `transaction ${id}: writing ${stateName(transit.state)} failed: ${(e as Error).message}`,
      );
    }
    if (!this.owns(id, epoch, meta)) return NOT_COORDINATOR;
    if (code !== NONE) {
      meta.abortTransition();
      return code;
    }
    meta.completeTransition(transit);
    return NONE;
  }

  // ---- InitProducerId ------------------------------------------------------------------------

  async initProducerId(
    transactionalId: string,
    transactionTimeoutMs: number,
    expected: { producerId: bigint; producerEpoch: number } | null,
  ): Promise<InitProducerIdResult> {
    const fail = (errorCode: number): InitProducerIdResult => ({
      errorCode,
      producerId: NO_PRODUCER_ID,
      producerEpoch: NO_PRODUCER_EPOCH,
    });
    if (transactionalId === '') return fail(INVALID_REQUEST);
    if (transactionTimeoutMs <= 0 || transactionTimeoutMs > this.config.transactionMaxTimeoutMs) {
      return fail(INVALID_TRANSACTION_TIMEOUT);
    }
    const l = this.lookup(transactionalId);
    if (l.error !== null) return fail(l.error);
    const now = this.o.clock.nowMs();
    let meta = l.meta;
    if (meta === undefined) {
      meta = new TransactionMetadata(transactionalId, {
        producerId: this.o.nextProducerId(),
        prevProducerId: NO_PRODUCER_ID,
        nextProducerId: NO_PRODUCER_ID,
        producerEpoch: NO_PRODUCER_EPOCH,
        lastProducerEpoch: NO_PRODUCER_EPOCH,
        txnTimeoutMs: transactionTimeoutMs,
        state: TxnState.Empty,
        txnStartTimestamp: -1,
        txnLastUpdateTimestamp: now,
      });
      l.cache.txns.set(transactionalId, meta);
    }
    if (expected !== null && !isValidProducerId(meta, expected)) return fail(INVALID_PRODUCER_EPOCH);
    if (meta.pendingTransitionInProgress) return fail(CONCURRENT_TRANSACTIONS);
    let transit: TxnTransit;
    try {
      switch (meta.state) {
        case TxnState.PrepareAbort:
        case TxnState.PrepareCommit:
          return fail(CONCURRENT_TRANSACTIONS);
        case TxnState.CompleteAbort:
        case TxnState.CompleteCommit:
        case TxnState.Empty:
          if (
            isEpochExhausted(meta.producerEpoch) &&
            (expected === null || expected.producerEpoch === meta.producerEpoch)
          ) {
            transit = meta.prepareProducerIdRotation(
              this.o.nextProducerId(),
              transactionTimeoutMs,
              now,
              expected !== null,
            );
          } else {
            const r = meta.prepareIncrementProducerEpoch(
              transactionTimeoutMs,
              expected?.producerEpoch ?? null,
              now,
            );
            if (r === 'PRODUCER_FENCED') return fail(PRODUCER_FENCED);
            transit = r;
          }
          break;
        case TxnState.Ongoing: {
          // A new instance of the producer: fence the old one by aborting its transaction with a
          // bumped epoch; the client retries on CONCURRENT_TRANSACTIONS until the abort completes.
          const fence = meta.prepareFenceProducerEpoch();
          const code = await this.endTransaction(
            transactionalId,
            fence.producerId,
            fence.producerEpoch,
            false,
            false,
          );
          return fail(code === NONE ? CONCURRENT_TRANSACTIONS : code);
        }
        default:
          this.o.logger.warn(
            `transaction ${transactionalId}: InitProducerId found it in state ${stateName(meta.state)}`,
          );
          return fail(UNKNOWN_SERVER_ERROR);
      }
    } catch (e) {
      if (e instanceof IllegalTxnTransition) {
        this.o.logger.warn(e.message);
        return fail(UNKNOWN_SERVER_ERROR);
      }
      throw e;
    }
    const code = await this.write(meta, l.epoch, transit);
    if (code !== NONE) return fail(code);
    return { errorCode: NONE, producerId: transit.producerId, producerEpoch: transit.producerEpoch };
  }

  // ---- AddPartitionsToTxn / AddOffsetsToTxn --------------------------------------------------

  /** Adds partitions to the ongoing transaction (starting it); one error code for all of them. */
  async addPartitions(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    partitions: TopicPartitions,
  ): Promise<number> {
    const l = this.forProducer(transactionalId, producerId);
    if (typeof l === 'number') return l;
    const { meta } = l;
    if (meta.producerEpoch !== producerEpoch) return PRODUCER_FENCED;
    if (meta.pendingTransitionInProgress) return CONCURRENT_TRANSACTIONS;
    if (meta.state === TxnState.PrepareCommit || meta.state === TxnState.PrepareAbort)
      return CONCURRENT_TRANSACTIONS;
    const all = [...partitions].every(([t, ps]) => ps.every((p) => meta.hasPartition(t, p)));
    if (meta.state === TxnState.Ongoing && all) return NONE;
    let transit: TxnTransit;
    try {
      transit = meta.prepareAddPartitions(partitions, this.o.clock.nowMs());
    } catch (e) {
      if (!(e instanceof IllegalTxnTransition)) throw e;
      this.o.logger.warn(e.message);
      return INVALID_TXN_STATE;
    }
    return this.write(meta, l.epoch, transit);
  }

  /** AddPartitionsToTxn with verifyOnly (KIP-890): which partitions the ongoing transaction holds. */
  verifyPartitions(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    partitions: TopicPartitions,
  ): Map<string, Map<number, number>> {
    const all = (code: number) =>
      new Map([...partitions].map(([t, ps]) => [t, new Map(ps.map((p) => [p, code]))]));
    if (transactionalId === '') return all(INVALID_REQUEST);
    const l = this.lookup(transactionalId);
    if (l.error !== null) return all(l.error);
    const meta = l.meta;
    if (meta === undefined || meta.producerId !== producerId) return all(INVALID_PRODUCER_ID_MAPPING);
    if (meta.producerEpoch !== producerEpoch) return all(PRODUCER_FENCED);
    if (meta.state === TxnState.PrepareCommit || meta.state === TxnState.PrepareAbort) {
      return all(CONCURRENT_TRANSACTIONS);
    }
    return new Map(
      [...partitions].map(([t, ps]) => [
        t,
        new Map(ps.map((p) => [p, meta.hasPartition(t, p) ? NONE : TRANSACTION_ABORTABLE])),
      ]),
    );
  }

  /** The __consumer_offsets partition AddOffsetsToTxn adds for a group. */
  offsetsPartitionFor(groupId: string): number {
    return partitionForGroup(groupId, this.config.offsetsTopicNumPartitions);
  }

  // ---- EndTxn --------------------------------------------------------------------------------

  /**
   * Commits or aborts (Kafka's endTransaction): PrepareCommit/PrepareAbort is written and answered,
   * then the markers go out and CompleteCommit/CompleteAbort follows. `fromClient` false: the
   * coordinator aborts on its own (a fenced producer, a timed-out transaction) with a bumped epoch.
   */
  async endTransaction(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    commit: boolean,
    fromClient: boolean,
  ): Promise<number> {
    const l = this.forProducer(transactionalId, producerId);
    if (typeof l === 'number') return l;
    const { meta } = l;
    if ((fromClient && producerEpoch !== meta.producerEpoch) || producerEpoch < meta.producerEpoch) {
      return PRODUCER_FENCED;
    }
    if (meta.pendingTransitionInProgress && meta.pendingState !== TxnState.PrepareEpochFence) {
      return CONCURRENT_TRANSACTIONS;
    }
    let isEpochFence = false;
    let transit: TxnTransit;
    switch (meta.state) {
      case TxnState.Ongoing: {
        const next = commit ? TxnState.PrepareCommit : TxnState.PrepareAbort;
        if (next === TxnState.PrepareAbort && meta.pendingState === TxnState.PrepareEpochFence) {
          // The fence's epoch bump is carried by the abort record.
          isEpochFence = true;
          meta.abortTransition();
          meta.producerEpoch = producerEpoch;
          meta.lastProducerEpoch = NO_PRODUCER_EPOCH;
        }
        try {
          transit = meta.prepareAbortOrCommit(next, this.o.clock.nowMs());
        } catch (e) {
          if (!(e instanceof IllegalTxnTransition)) throw e;
          this.o.logger.warn(e.message);
          return CONCURRENT_TRANSACTIONS;
        }
        break;
      }
      case TxnState.CompleteCommit:
        return commit ? NONE : INVALID_TXN_STATE;
      case TxnState.CompleteAbort:
        return commit ? INVALID_TXN_STATE : NONE;
      case TxnState.PrepareCommit:
        return commit ? CONCURRENT_TRANSACTIONS : INVALID_TXN_STATE;
      case TxnState.PrepareAbort:
        return commit ? INVALID_TXN_STATE : CONCURRENT_TRANSACTIONS;
      case TxnState.Empty:
        return INVALID_TXN_STATE;
      default:
        this.o.logger.warn(
          `transaction ${transactionalId}: EndTxn found it in state ${stateName(meta.state)}`,
        );
        return UNKNOWN_SERVER_ERROR;
    }
    const code = await this.write(meta, l.epoch, transit);
    if (code !== NONE) {
      if (isEpochFence && this.owns(transactionalId, l.epoch, meta)) meta.hasFailedEpochFence = true;
      return code;
    }
    meta.hasFailedEpochFence = false;
    this.completeTransaction(transactionalId, l.epoch, meta);
    return NONE;
  }

  /** Sends the markers of a prepared transaction, then writes its Complete state (in the background). */
  private completeTransaction(transactionalId: string, epoch: number, meta: TransactionMetadata): void {
    const prepared = meta.state;
    const producerEpoch = meta.producerEpoch;
    const stillOwned = () =>
      this.owns(transactionalId, epoch, meta) &&
      meta.state === prepared &&
      meta.producerEpoch === producerEpoch;
    void this.sender
      .send({
        transactionalId,
        producerId: meta.producerId,
        producerEpoch,
        coordinatorEpoch: epoch,
        commit: prepared === TxnState.PrepareCommit,
        pending: new Map([...meta.partitions].map(([t, s]) => [t, new Set(s)])),
        stillOwned,
      })
      .then(async (outcome) => {
        while (outcome === 'written' && stillOwned() && !meta.pendingTransitionInProgress) {
          const code = await this.write(meta, epoch, meta.prepareComplete(this.o.clock.nowMs()));
          if (code === NONE || code === NOT_COORDINATOR) return;
          await new Promise<void>((resolve) =>
            this.o.scheduler.schedule('txn-complete-retry', this.config.markerRetryBackoffMs, resolve),
          );
        }
      })
      .catch((e: unknown) =>
        this.o.logger.warn(`transaction ${transactionalId}: completing failed: ${(e as Error).message}`),
      );
  }

  // ---- timers ------------------------------------------------------------------------------

  /** Kafka's abortTimedOutTransactions: Ongoing past transaction.timeout.ms is fenced and aborted. */
  abortTimedOutTransactions(): void {
    const now = this.o.clock.nowMs();
    for (const cache of this.partitions.values()) {
      if (cache.state !== 'active') continue;
      for (const meta of cache.txns.values()) {
        if (meta.state !== TxnState.Ongoing || meta.pendingTransitionInProgress) continue;
        if (meta.txnStartTimestamp + meta.txnTimeoutMs >= now) continue;
        if (meta.producerEpoch >= 32767) continue;
        const fence = meta.prepareFenceProducerEpoch();
        this.o.logger.info(
          `transaction ${meta.transactionalId}: aborting after its timeout of ${meta.txnTimeoutMs} ms (producer ${meta.producerId}, epoch bumped to ${fence.producerEpoch})`,
        );
        void this.endTransaction(
          meta.transactionalId,
          fence.producerId,
          fence.producerEpoch,
          false,
          false,
        ).then((code) => {
          if (code !== NONE && meta.pendingState === TxnState.PrepareEpochFence) meta.abortTransition();
        });
      }
    }
  }

  /** Kafka's removeExpiredTransactionalIds: ids idle past transactional.id.expiration.ms go. */
  removeExpiredTransactionalIds(): void {
    const now = this.o.clock.nowMs();
    for (const cache of this.partitions.values()) {
      if (cache.state !== 'active') continue;
      for (const meta of [...cache.txns.values()]) {
        const idle =
          meta.state === TxnState.Empty ||
          meta.state === TxnState.CompleteCommit ||
          meta.state === TxnState.CompleteAbort;
        if (!idle || meta.pendingTransitionInProgress) continue;
        if (meta.txnLastUpdateTimestamp + this.config.transactionalIdExpirationMs > now) continue;
        const transit = meta.prepareDead();
        void this.write(meta, cache.epoch, transit).then((code) => {
          if (code === NONE && cache.txns.get(meta.transactionalId) === meta) {
            cache.txns.delete(meta.transactionalId);
            this.o.logger.info(`transaction ${meta.transactionalId}: expired and removed`);
          }
        });
      }
    }
  }

  // ---- reads ---------------------------------------------------------------------------------

  listTransactions(
    stateFilters: readonly string[],
    producerIdFilters: readonly bigint[],
    durationFilterMs: bigint,
  ): ListTransactionsResult {
    const caches = [...this.partitions.values()];
    if (caches.some((c) => c.state === 'loading')) {
      return {
        ...listTransactions([], stateFilters, producerIdFilters, durationFilterMs, 0),
        errorCode: COORDINATOR_LOAD_IN_PROGRESS,
        transactionStates: [],
      };
    }
    const all = caches.flatMap((c) => [...c.txns.values()]);
    return listTransactions(all, stateFilters, producerIdFilters, durationFilterMs, this.o.clock.nowMs());
  }

  describeTransaction(transactionalId: string): DescribedTransaction {
    if (this.stopped) return describeError(transactionalId, COORDINATOR_NOT_AVAILABLE);
    if (transactionalId === '') return describeError(transactionalId, INVALID_REQUEST);
    const l = this.lookup(transactionalId);
    if (l.error !== null) return describeError(transactionalId, l.error);
    return describeTransaction(transactionalId, l.meta);
  }

  /** For tests and tools: the metadata of an id this coordinator holds. */
  metadataOf(transactionalId: string): TransactionMetadata | undefined {
    const l = this.lookup(transactionalId);
    return l.error === null ? l.meta : undefined;
  }
}

function stateName(s: TxnState): string {
  return TXN_STATE_NAMES[s]!;
}

/**
 * KIP-360: an InitProducerId naming the producer's current id and epoch is valid when the id is
 * new (no epoch yet), names the current producer id, or names the previous one at an exhausted
 * epoch (a retry of a rotation whose answer was lost). Kafka's isValidProducerId.
 */
function isValidProducerId(
  meta: TransactionMetadata,
  expected: { producerId: bigint; producerEpoch: number },
): boolean {
  return (
    meta.producerEpoch === NO_PRODUCER_EPOCH ||
    expected.producerId === meta.producerId ||
    (expected.producerId === meta.prevProducerId && isEpochExhausted(expected.producerEpoch))
  );
}

/** Kafka's mapping of __transaction_state append errors (TransactionStateManager.appendTransactionToLog). */
function appendErrorCode(e: unknown): number {
  const code = e instanceof KafkaError ? e.code : UNKNOWN_SERVER_ERROR;
  switch (code) {
    case ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
    case ErrorCode.NOT_ENOUGH_REPLICAS:
    case ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case ErrorCode.REQUEST_TIMED_OUT:
      return COORDINATOR_NOT_AVAILABLE;
    case ErrorCode.NOT_LEADER_OR_FOLLOWER:
    case ErrorCode.KAFKA_STORAGE_ERROR:
      return NOT_COORDINATOR;
    default:
      return UNKNOWN_SERVER_ERROR;
  }
}
