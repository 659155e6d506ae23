/**
 * One transactional id's state at its coordinator, with Kafka's TransactionMetadata state machine:
 * a change is first prepared (the target state is pending, which refuses concurrent changes with
 * CONCURRENT_TRANSACTIONS), written to __transaction_state, and applied only once the write is
 * acknowledged — or dropped when it fails. Owned by the TransactionCoordinator's partition cache;
 * single-threaded.
 */

/** Kafka's TransactionState ids, as __transaction_state stores them (TransactionLogValue.transactionStatus). */
export const TxnState = {
  Empty: 0,
  Ongoing: 1,
  PrepareCommit: 2,
  PrepareAbort: 3,
  CompleteCommit: 4,
  CompleteAbort: 5,
  Dead: 6,
  PrepareEpochFence: 7,
} as const;
export type TxnState = (typeof TxnState)[keyof typeof TxnState];

/** The names ListTransactions and DescribeTransactions report (Kafka's TransactionState.name). */
export const TXN_STATE_NAMES: readonly string[] = [
  'Empty',
  'Ongoing',
  'PrepareCommit',
  'PrepareAbort',
  'CompleteCommit',
  'CompleteAbort',
  'Dead',
  'PrepareEpochFence',
];

export function txnStateFromName(name: string): TxnState | null {
  const i = TXN_STATE_NAMES.indexOf(name);
  return i < 0 ? null : (i as TxnState);
}

/** From which states each state may be entered (Kafka's validPreviousStates). */
const VALID_PREVIOUS: ReadonlyMap<TxnState, readonly TxnState[]> = new Map<TxnState, TxnState[]>([
  [TxnState.Empty, [TxnState.Empty, TxnState.CompleteCommit, TxnState.CompleteAbort]],
  [TxnState.Ongoing, [TxnState.Ongoing, TxnState.Empty, TxnState.CompleteCommit, TxnState.CompleteAbort]],
  [TxnState.PrepareCommit, [TxnState.Ongoing]],
  [TxnState.PrepareAbort, [TxnState.Ongoing, TxnState.PrepareEpochFence]],
  [TxnState.CompleteCommit, [TxnState.PrepareCommit]],
  [TxnState.CompleteAbort, [TxnState.PrepareAbort]],
  [TxnState.Dead, [TxnState.Empty, TxnState.CompleteCommit, TxnState.CompleteAbort]],
  [TxnState.PrepareEpochFence, [TxnState.Ongoing]],
]);

export function isValidTransition(from: TxnState, to: TxnState): boolean {
  return VALID_PREVIOUS.get(to)!.includes(from);
}

export const NO_PRODUCER_ID = -1n;
export const NO_PRODUCER_EPOCH = -1;
/** Epochs stop one short of Short.MAX_VALUE: the last one is kept for the fencing bump. */
export const MAX_PRODUCER_EPOCH = 32767;

/** Kafka's isEpochExhausted: at this epoch the next bump needs a new producer id instead. */
export function isEpochExhausted(epoch: number): boolean {
  return epoch >= MAX_PRODUCER_EPOCH - 1;
}

/** What a transition writes to the log and, once written, applies (Kafka's TxnTransitMetadata). */
export interface TxnTransit {
  readonly producerId: bigint;
  readonly prevProducerId: bigint;
  readonly nextProducerId: bigint;
  readonly producerEpoch: number;
  readonly lastProducerEpoch: number;
  readonly txnTimeoutMs: number;
  readonly state: TxnState;
  /** topic → partitions, each sorted. */
  readonly partitions: ReadonlyMap<string, readonly number[]>;
  readonly txnStartTimestamp: number;
  readonly txnLastUpdateTimestamp: number;
}

/** A transition the state machine does not allow (Kafka's IllegalStateException). */
export class IllegalTxnTransition extends Error {}

export class TransactionMetadata {
  producerId: bigint;
  prevProducerId: bigint;
  nextProducerId: bigint;
  producerEpoch: number;
  lastProducerEpoch: number;
  txnTimeoutMs: number;
  state: TxnState;
  readonly partitions = new Map<string, Set<number>>();
  txnStartTimestamp: number;
  txnLastUpdateTimestamp: number;
  /** The state being written; null when no write is under way. */
  pendingState: TxnState | null = null;
  /** The epoch fence's bump failed to be written: the next fence reuses the bumped epoch. */
  hasFailedEpochFence = false;

  constructor(
    readonly transactionalId: string,
    init: Omit<TxnTransit, 'partitions'> & { partitions?: ReadonlyMap<string, readonly number[]> },
  ) {
    this.producerId = init.producerId;
    this.prevProducerId = init.prevProducerId;
    this.nextProducerId = init.nextProducerId;
    this.producerEpoch = init.producerEpoch;
    this.lastProducerEpoch = init.lastProducerEpoch;
    this.txnTimeoutMs = init.txnTimeoutMs;
    this.state = init.state;
    this.txnStartTimestamp = init.txnStartTimestamp;
    this.txnLastUpdateTimestamp = init.txnLastUpdateTimestamp;
    for (const [t, ps] of init.partitions ?? []) this.partitions.set(t, new Set(ps));
  }

  get pendingTransitionInProgress(): boolean {
    return this.pendingState !== null;
  }

  hasPartition(topic: string, partition: number): boolean {
    return this.partitions.get(topic)?.has(partition) ?? false;
  }

  partitionCount(): number {
    let n = 0;
    for (const s of this.partitions.values()) n += s.size;
    return n;
  }

  removePartition(topic: string, partition: number): void {
    const s = this.partitions.get(topic);
    if (s === undefined) return;
    s.delete(partition);
    if (s.size === 0) this.partitions.delete(topic);
  }

  /** The partitions as a transit carries them (sorted copies). */
  partitionsSnapshot(): Map<string, number[]> {
    const m = new Map<string, number[]>();
    for (const [t, s] of [...this.partitions].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)))
      m.set(
        t,
        [...s].sort((a, b) => a - b),
      );
    return m;
  }

  private current(): TxnTransit {
    return {
      producerId: this.producerId,
      prevProducerId: this.prevProducerId,
      nextProducerId: this.nextProducerId,
      producerEpoch: this.producerEpoch,
      lastProducerEpoch: this.lastProducerEpoch,
      txnTimeoutMs: this.txnTimeoutMs,
      state: this.state,
      partitions: this.partitionsSnapshot(),
      txnStartTimestamp: this.txnStartTimestamp,
      txnLastUpdateTimestamp: this.txnLastUpdateTimestamp,
    };
  }

  /** Marks `next.state` pending after checking the state machine allows it. */
  private prepare(changes: Partial<TxnTransit> & { state: TxnState }): TxnTransit {
    if (this.pendingState !== null) {
      throw new IllegalTxnTransition(
        `${this.transactionalId}: cannot prepare ${TXN_STATE_NAMES[changes.state]} while ${TXN_STATE_NAMES[this.pendingState]} is pending`,
      );
    }
    if (!isValidTransition(this.state, changes.state)) {
      throw new IllegalTxnTransition(
        `${this.transactionalId}: ${TXN_STATE_NAMES[this.state]} cannot move to ${TXN_STATE_NAMES[changes.state]}`,
      );
    }
    this.pendingState = changes.state;
    return { ...this.current(), ...changes };
  }

  /** InitProducerId on an idle id: a new epoch (Kafka's prepareIncrementProducerEpoch). */
  prepareIncrementProducerEpoch(
    newTxnTimeoutMs: number,
    expectedProducerEpoch: number | null,
    nowMs: number,
  ): TxnTransit | 'PRODUCER_FENCED' {
    if (this.producerEpoch === MAX_PRODUCER_EPOCH) {
      throw new IllegalTxnTransition(`${this.transactionalId}: cannot bump the epoch past its maximum`);
    }
    const bumped = this.producerEpoch + 1;
    let next: number;
    let last: number;
    if (expectedProducerEpoch === null) {
      next = bumped;
      last = NO_PRODUCER_EPOCH;
    } else if (this.producerEpoch === NO_PRODUCER_EPOCH || expectedProducerEpoch === this.producerEpoch) {
      next = bumped;
      last = this.producerEpoch;
    } else if (expectedProducerEpoch === this.lastProducerEpoch) {
      // A retry of a bump whose answer the producer lost: hand out the same epoch again.
      next = this.producerEpoch;
      last = this.lastProducerEpoch;
    } else {
      return 'PRODUCER_FENCED';
    }
    return this.prepare({
      state: TxnState.Empty,
      producerEpoch: next,
      lastProducerEpoch: last,
      txnTimeoutMs: newTxnTimeoutMs,
      partitions: new Map(),
      txnStartTimestamp: -1,
      txnLastUpdateTimestamp: nowMs,
    });
  }

  /** InitProducerId when the epoch is exhausted: a new producer id at epoch 0 (prepareProducerIdRotation). */
  prepareProducerIdRotation(
    newProducerId: bigint,
    newTxnTimeoutMs: number,
    nowMs: number,
    recordLastEpoch: boolean,
  ): TxnTransit {
    return this.prepare({
      state: TxnState.Empty,
      producerId: newProducerId,
      prevProducerId: this.producerId,
      nextProducerId: NO_PRODUCER_ID,
      producerEpoch: 0,
      lastProducerEpoch: recordLastEpoch ? this.producerEpoch : NO_PRODUCER_EPOCH,
      txnTimeoutMs: newTxnTimeoutMs,
      partitions: new Map(),
      txnStartTimestamp: -1,
      txnLastUpdateTimestamp: nowMs,
    });
  }

  /**
   * Fences the current producer of an ongoing transaction (InitProducerId from a new instance, or
   * the transaction timed out): the epoch is bumped in memory only, the abort that follows writes it.
   */
  prepareFenceProducerEpoch(): TxnTransit {
    if (this.producerEpoch === MAX_PRODUCER_EPOCH) {
      throw new IllegalTxnTransition(
        `${this.transactionalId}: cannot fence producer epoch ${this.producerEpoch}`,
      );
    }
    const epoch = this.hasFailedEpochFence ? this.producerEpoch : this.producerEpoch + 1;
    return this.prepare({
      state: TxnState.PrepareEpochFence,
      producerEpoch: epoch,
      lastProducerEpoch: NO_PRODUCER_EPOCH,
    });
  }

  /** AddPartitionsToTxn / AddOffsetsToTxn: the transaction is Ongoing with these partitions added. */
  prepareAddPartitions(added: ReadonlyMap<string, readonly number[]>, nowMs: number): TxnTransit {
    const starts =
      this.state === TxnState.Empty ||
      this.state === TxnState.CompleteCommit ||
      this.state === TxnState.CompleteAbort;
    const partitions = this.partitionsSnapshot();
    if (starts) partitions.clear();
    for (const [t, ps] of added) {
      const merged = new Set([...(partitions.get(t) ?? []), ...ps]);
      partitions.set(
        t,
        [...merged].sort((a, b) => a - b),
      );
    }
    return this.prepare({
      state: TxnState.Ongoing,
      partitions,
      txnStartTimestamp: starts ? nowMs : this.txnStartTimestamp,
      txnLastUpdateTimestamp: nowMs,
    });
  }

  /** EndTxn (or an abort the coordinator starts): PrepareCommit or PrepareAbort. */
  prepareAbortOrCommit(
    state: typeof TxnState.PrepareCommit | typeof TxnState.PrepareAbort,
    nowMs: number,
  ): TxnTransit {
    return this.prepare({ state, txnLastUpdateTimestamp: nowMs });
  }

  /** All markers are written: CompleteCommit or CompleteAbort, with no partitions left. */
  prepareComplete(nowMs: number): TxnTransit {
    const state = this.state === TxnState.PrepareCommit ? TxnState.CompleteCommit : TxnState.CompleteAbort;
    return this.prepare({ state, partitions: new Map(), txnLastUpdateTimestamp: nowMs });
  }

  /** transactional.id.expiration.ms passed: the id goes (a tombstone follows). */
  prepareDead(): TxnTransit {
    return this.prepare({ state: TxnState.Dead, partitions: new Map() });
  }

  /**
   * The write of `t` succeeded: its values become current. The epoch-fence bump is dropped for the
   * abort that supersedes it (endTransaction clears the pending fence before preparing the abort).
   */
  completeTransition(t: TxnTransit): void {
    if (this.pendingState !== t.state) {
      throw new IllegalTxnTransition(
        `${this.transactionalId}: completing ${TXN_STATE_NAMES[t.state]} but ${this.pendingState === null ? 'nothing' : TXN_STATE_NAMES[this.pendingState]} is pending`,
      );
    }
    this.producerId = t.producerId;
    this.prevProducerId = t.prevProducerId;
    this.nextProducerId = t.nextProducerId;
    this.producerEpoch = t.producerEpoch;
    this.lastProducerEpoch = t.lastProducerEpoch;
    this.txnTimeoutMs = t.txnTimeoutMs;
    this.state = t.state;
    this.partitions.clear();
    for (const [topic, ps] of t.partitions) this.partitions.set(topic, new Set(ps));
    this.txnStartTimestamp = t.txnStartTimestamp;
    this.txnLastUpdateTimestamp = t.txnLastUpdateTimestamp;
    this.pendingState = null;
  }

  /** The write failed: the pending change is forgotten. */
  abortTransition(): void {
    this.pendingState = null;
  }
}
