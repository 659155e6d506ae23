import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { ManualClock } from '../../../src/common/clock.js';
import { ManualScheduler } from '../../../src/common/scheduler.js';
import type { CoordinatorRecord } from '../../../src/coordinator/records.js';
import { DEFAULT_TRANSACTION_COORDINATOR_CONFIG } from '../../../src/coordinator/transaction/config.js';
import { TransactionCoordinator } from '../../../src/coordinator/transaction/coordinator.js';
import { decodeTransactionLogRecord } from '../../../src/coordinator/transaction/log-records.js';
import { TxnState } from '../../../src/coordinator/transaction/metadata.js';
import { ErrorCode } from '../../../src/protocol/generated/errors.js';
import type { WriteTxnMarkersRequest } from '../../../src/protocol/generated/WriteTxnMarkersRequest.js';
import type { WriteTxnMarkersResponse } from '../../../src/protocol/generated/WriteTxnMarkersResponse.js';
import { KafkaError } from '../../../src/protocol/kafka-error.js';

const quiet = { info() {}, warn() {} };
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

class Harness {
  readonly clock = new ManualClock();
  readonly scheduler = new ManualScheduler(this.clock);
  /** Every record written, by __transaction_state partition. */
  readonly written = new Map<number, CoordinatorRecord[]>();
  appendError: number | null = null;
  readonly markers: { brokerId: number; req: WriteTxnMarkersRequest }[] = [];
  markerError: number = ErrorCode.NONE;
  nextPid = 1000n;
  readonly coordinator: TransactionCoordinator;

  constructor(overrides: Partial<typeof DEFAULT_TRANSACTION_COORDINATOR_CONFIG> = {}) {
    this.coordinator = new TransactionCoordinator({
      clock: this.clock,
      scheduler: this.scheduler,
      logger: quiet,
      config: {
        ...DEFAULT_TRANSACTION_COORDINATOR_CONFIG,
        transactionStateLogNumPartitions: 1,
        ...overrides,
      },
      nextProducerId: () => this.nextPid++,
      log: {
        append: async (partition, records) => {
          if (this.appendError !== null) throw KafkaError.fromCode(this.appendError);
          const before = this.written.get(partition) ?? [];
          this.written.set(partition, [...before, ...records]);
          return BigInt(before.length);
        },
      },
      markers: {
        leaderOf: (topic) => (topic === 'gone' ? undefined : 1),
        writeTxnMarkers: async (brokerId, req): Promise<WriteTxnMarkersResponse> => {
          this.markers.push({ brokerId, req });
          return {
            markers: req.markers.map((m) => ({
              producerId: m.producerId,
              topics: m.topics.map((t) => ({
                name: t.name,
                partitions: t.partitionIndexes.map((partitionIndex) => ({
                  partitionIndex,
                  errorCode: this.markerError,
                })),
              })),
            })),
          };
        },
      },
    });
  }

  states(): { state: number; epoch: number }[] {
    return (this.written.get(0) ?? []).map((r) => {
      const d = decodeTransactionLogRecord(r.key, r.value);
      return { state: d.value?.state ?? -1, epoch: d.value?.producerEpoch ?? -1 };
    });
  }
}

describe('TransactionCoordinator', () => {
  let h: Harness;
  beforeEach(async () => {
    h = new Harness();
    await h.coordinator.load(0, 5, []);
  });

  it('InitProducerId, AddPartitions, EndTxn commit: markers to the leaders, then CompleteCommit', async () => {
    const c = h.coordinator;
    const init = await c.initProducerId('tx', 60_000, null);
    assert.deepEqual(init, { errorCode: 0, producerId: 1000n, producerEpoch: 0 });
    assert.equal(await c.addPartitions('tx', 1000n, 0, new Map([['t', [0, 1]]])), 0);
    assert.equal(c.metadataOf('tx')!.state, TxnState.Ongoing);
    assert.equal(await c.endTransaction('tx', 1000n, 0, true, true), 0);
    await settle();
    assert.equal(h.markers.length, 1);
    const m = h.markers[0]!.req.markers[0]!;
    assert.deepEqual(
      [m.producerId, m.producerEpoch, m.transactionResult, m.coordinatorEpoch],
      [1000n, 0, true, 5],
    );
    assert.deepEqual(m.topics, [{ name: 't', partitionIndexes: [0, 1] }]);
    assert.equal(c.metadataOf('tx')!.state, TxnState.CompleteCommit);
    assert.deepEqual(
      h.states().map((s) => s.state),
      [TxnState.Empty, TxnState.Ongoing, TxnState.PrepareCommit, TxnState.CompleteCommit],
    );
    // A retried EndTxn commit is answered NONE; an abort now is INVALID_TXN_STATE.
    assert.equal(await c.endTransaction('tx', 1000n, 0, true, true), 0);
    assert.equal(await c.endTransaction('tx', 1000n, 0, false, true), ErrorCode.INVALID_TXN_STATE);
  });

  it('errors where Kafka returns them', async () => {
    const c = h.coordinator;
    assert.equal(
      (await c.initProducerId('tx', 900_001, null)).errorCode,
      ErrorCode.INVALID_TRANSACTION_TIMEOUT,
    );
    assert.equal((await c.initProducerId('', 1000, null)).errorCode, ErrorCode.INVALID_REQUEST);
    assert.equal(
      await c.addPartitions('unknown', 1n, 0, new Map([['t', [0]]])),
      ErrorCode.INVALID_PRODUCER_ID_MAPPING,
    );
    await c.initProducerId('tx', 60_000, null);
    assert.equal(
      await c.addPartitions('tx', 999n, 0, new Map([['t', [0]]])),
      ErrorCode.INVALID_PRODUCER_ID_MAPPING,
    );
    assert.equal(await c.addPartitions('tx', 1000n, 7, new Map([['t', [0]]])), ErrorCode.PRODUCER_FENCED);
    assert.equal(await c.endTransaction('tx', 1000n, 0, true, true), ErrorCode.INVALID_TXN_STATE);
    // Markers that cannot be written keep the transaction in PrepareCommit: CONCURRENT_TRANSACTIONS.
    h.markerError = ErrorCode.NOT_LEADER_OR_FOLLOWER;
    await c.addPartitions('tx', 1000n, 0, new Map([['t', [0]]]));
    assert.equal(await c.endTransaction('tx', 1000n, 0, true, true), 0);
    await settle();
    assert.equal(
      await c.addPartitions('tx', 1000n, 0, new Map([['t', [1]]])),
      ErrorCode.CONCURRENT_TRANSACTIONS,
    );
    assert.equal(await c.endTransaction('tx', 1000n, 0, true, true), ErrorCode.CONCURRENT_TRANSACTIONS);
    assert.equal(await c.endTransaction('tx', 1000n, 0, false, true), ErrorCode.INVALID_TXN_STATE);
    assert.equal((await c.initProducerId('tx', 60_000, null)).errorCode, ErrorCode.CONCURRENT_TRANSACTIONS);
    // The leader comes back: the retry writes the markers and completes.
    h.markerError = ErrorCode.NONE;
    h.clock.advance(100);
    h.scheduler.runDue();
    await settle();
    assert.equal(c.metadataOf('tx')!.state, TxnState.CompleteCommit);
  });

  it('not the coordinator, still loading', async () => {
    const other = new Harness();
    assert.equal(
      (await other.coordinator.initProducerId('tx', 1000, null)).errorCode,
      ErrorCode.NOT_COORDINATOR,
    );
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    async function* slow(): AsyncGenerator<{ key: Buffer | null; value: Buffer | null }> {
      await gate;
      yield* [];
    }
    const loading = other.coordinator.load(0, 1, slow());
    assert.equal(
      (await other.coordinator.initProducerId('tx', 1000, null)).errorCode,
      ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    );
    assert.equal(
      other.coordinator.listTransactions([], [], -1n).errorCode,
      ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    );
    release();
    await loading;
    assert.equal((await other.coordinator.initProducerId('tx', 1000, null)).errorCode, 0);
  });

  it('a new instance fences an ongoing transaction: aborted with a bumped epoch, the old epoch is PRODUCER_FENCED', async () => {
    const c = h.coordinator;
    await c.initProducerId('tx', 60_000, null);
    await c.addPartitions('tx', 1000n, 0, new Map([['t', [0]]]));
    const second = await c.initProducerId('tx', 60_000, null);
    assert.equal(second.errorCode, ErrorCode.CONCURRENT_TRANSACTIONS);
    await settle();
    assert.equal(h.markers[0]!.req.markers[0]!.transactionResult, false);
    assert.equal(h.markers[0]!.req.markers[0]!.producerEpoch, 1);
    assert.equal(c.metadataOf('tx')!.state, TxnState.CompleteAbort);
    const retried = await c.initProducerId('tx', 60_000, null);
    assert.deepEqual(retried, { errorCode: 0, producerId: 1000n, producerEpoch: 2 });
    assert.equal(await c.endTransaction('tx', 1000n, 0, true, true), ErrorCode.PRODUCER_FENCED);
    assert.equal(await c.addPartitions('tx', 1000n, 1, new Map([['t', [0]]])), ErrorCode.PRODUCER_FENCED);
  });

  it('KIP-360: a producer naming its current epoch gets the next one; a stale one INVALID_PRODUCER_EPOCH or PRODUCER_FENCED', async () => {
    const c = h.coordinator;
    await c.initProducerId('tx', 60_000, null);
    const bumped = await c.initProducerId('tx', 60_000, { producerId: 1000n, producerEpoch: 0 });
    assert.deepEqual(bumped, { errorCode: 0, producerId: 1000n, producerEpoch: 1 });
    // The same request again (its answer was lost): the same epoch.
    assert.deepEqual(await c.initProducerId('tx', 60_000, { producerId: 1000n, producerEpoch: 0 }), bumped);
    assert.equal(
      (await c.initProducerId('tx', 60_000, { producerId: 77n, producerEpoch: 3 })).errorCode,
      ErrorCode.INVALID_PRODUCER_EPOCH,
    );
    await c.initProducerId('tx', 60_000, { producerId: 1000n, producerEpoch: 1 });
    assert.equal(
      (await c.initProducerId('tx', 60_000, { producerId: 1000n, producerEpoch: 0 })).errorCode,
      ErrorCode.PRODUCER_FENCED,
    );
  });

  it('append errors map as Kafka maps them and leave the state unchanged', async () => {
    const c = h.coordinator;
    await c.initProducerId('tx', 60_000, null);
    h.appendError = ErrorCode.NOT_ENOUGH_REPLICAS;
    assert.equal(
      await c.addPartitions('tx', 1000n, 0, new Map([['t', [0]]])),
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
    );
    h.appendError = ErrorCode.NOT_LEADER_OR_FOLLOWER;
    assert.equal(await c.addPartitions('tx', 1000n, 0, new Map([['t', [0]]])), ErrorCode.NOT_COORDINATOR);
    assert.equal(c.metadataOf('tx')!.state, TxnState.Empty);
    assert.equal(c.metadataOf('tx')!.pendingState, null);
  });

  it('transaction.timeout.ms: an ongoing transaction past it is aborted and its producer fenced', async () => {
    const c = h.coordinator;
    await c.initProducerId('tx', 20_000, null);
    await c.addPartitions('tx', 1000n, 0, new Map([['t', [0]]]));
    h.clock.advance(DEFAULT_TRANSACTION_COORDINATOR_CONFIG.abortTimedOutTransactionsIntervalMs);
    h.scheduler.runDue();
    await settle();
    assert.equal(c.metadataOf('tx')!.state, TxnState.Ongoing, 'not yet past its timeout');
    h.clock.advance(DEFAULT_TRANSACTION_COORDINATOR_CONFIG.abortTimedOutTransactionsIntervalMs * 2);
    h.scheduler.runDue();
    await settle();
    assert.equal(c.metadataOf('tx')!.state, TxnState.CompleteAbort);
    assert.equal(c.metadataOf('tx')!.producerEpoch, 1);
    assert.equal(await c.endTransaction('tx', 1000n, 0, true, true), ErrorCode.PRODUCER_FENCED);
  });

  it('transactional.id.expiration.ms removes an idle id with a tombstone', async () => {
    const e = new Harness({
      transactionalIdExpirationMs: 5_000,
      removeExpiredTransactionalIdsIntervalMs: 1_000,
    });
    await e.coordinator.load(0, 1, []);
    await e.coordinator.initProducerId('idle', 60_000, null);
    e.clock.advance(5_000);
    e.scheduler.runDue();
    await settle();
    assert.equal(e.coordinator.metadataOf('idle'), undefined);
    const last = e.written.get(0)!.at(-1)!;
    assert.equal(last.value, null);
    assert.equal(e.coordinator.describeTransaction('idle').errorCode, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND);
  });

  it('a new coordinator loads the log and finishes a prepared transaction', async () => {
    h.markerError = ErrorCode.NOT_LEADER_OR_FOLLOWER;
    const c = h.coordinator;
    await c.initProducerId('tx', 60_000, null);
    await c.addPartitions('tx', 1000n, 0, new Map([['t', [2]]]));
    await c.endTransaction('tx', 1000n, 0, false, true);
    await settle();
    c.unload(0);
    const next = new Harness();
    await next.coordinator.load(0, 6, h.written.get(0)!);
    await settle();
    assert.equal(next.markers.length, 1);
    assert.equal(next.markers[0]!.req.markers[0]!.coordinatorEpoch, 6);
    assert.equal(next.coordinator.metadataOf('tx')!.state, TxnState.CompleteAbort);
    h.coordinator.shutdown();
  });

  it('ListTransactions and DescribeTransactions filters', async () => {
    const c = h.coordinator;
    await c.initProducerId('a', 60_000, null);
    await c.initProducerId('b', 60_000, null);
    await c.addPartitions('b', 1001n, 0, new Map([['t', [3, 1]]]));
    h.clock.advance(10_000);
    const names = (r: { transactionStates: { transactionalId: string }[] }) =>
      r.transactionStates.map((s) => s.transactionalId).sort();
    assert.deepEqual(names(c.listTransactions([], [], -1n)), ['a', 'b']);
    assert.deepEqual(names(c.listTransactions(['Ongoing'], [], -1n)), ['b']);
    assert.deepEqual(names(c.listTransactions([], [1000n], -1n)), ['a']);
    // Running longer than the duration: b started 10 s ago; a never started (start time -1, as Kafka counts it).
    assert.deepEqual(names(c.listTransactions([], [], 5_000n)), ['a', 'b']);
    assert.deepEqual(names(c.listTransactions([], [], 15_000n)), ['a']);
    assert.deepEqual(c.listTransactions(['Bogus'], [], -1n).unknownStateFilters, ['Bogus']);
    const d = c.describeTransaction('b');
    assert.equal(d.transactionState, 'Ongoing');
    assert.deepEqual(d.topics, [{ topic: 't', partitions: [1, 3] }]);
    assert.equal(d.producerId, 1001n);
    assert.equal(c.describeTransaction('').errorCode, ErrorCode.INVALID_REQUEST);
  });
});
