import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  IllegalTxnTransition,
  isValidTransition,
  TransactionMetadata,
  TxnState,
  type TxnTransit,
} from '../../../src/coordinator/transaction/metadata.js';

const S = TxnState;

function meta(state: TxnState, producerEpoch = 3, lastProducerEpoch = -1): TransactionMetadata {
  return new TransactionMetadata('tx', {
    producerId: 100n,
    prevProducerId: -1n,
    nextProducerId: -1n,
    producerEpoch,
    lastProducerEpoch,
    txnTimeoutMs: 60_000,
    state,
    txnStartTimestamp: state === S.Ongoing ? 1_000 : -1,
    txnLastUpdateTimestamp: 1_000,
    partitions: state === S.Ongoing ? new Map([['t', [0, 2]]]) : new Map(),
  });
}

describe('TransactionMetadata state machine', () => {
  it("allows exactly Kafka's transitions", () => {
    const allowed: [TxnState, TxnState[]][] = [
      [S.Empty, [S.Empty, S.CompleteCommit, S.CompleteAbort]],
      [S.Ongoing, [S.Ongoing, S.Empty, S.CompleteCommit, S.CompleteAbort]],
      [S.PrepareCommit, [S.Ongoing]],
      [S.PrepareAbort, [S.Ongoing, S.PrepareEpochFence]],
      [S.CompleteCommit, [S.PrepareCommit]],
      [S.CompleteAbort, [S.PrepareAbort]],
      [S.Dead, [S.Empty, S.CompleteCommit, S.CompleteAbort]],
      [S.PrepareEpochFence, [S.Ongoing]],
    ];
    for (const [to, froms] of allowed) {
      for (let from = 0; from <= 7; from++) {
        assert.equal(
          isValidTransition(from as TxnState, to),
          froms.includes(from as TxnState),
          `${from} -> ${to}`,
        );
      }
    }
  });

  it('a prepared change is pending until completed, and refuses another meanwhile', () => {
    const m = meta(S.Empty);
    const t = m.prepareAddPartitions(new Map([['t', [1]]]), 5_000);
    assert.equal(m.pendingState, S.Ongoing);
    assert.equal(m.state, S.Empty);
    assert.throws(() => m.prepareAbortOrCommit(S.PrepareCommit, 5_000), IllegalTxnTransition);
    m.completeTransition(t);
    assert.equal(m.state, S.Ongoing);
    assert.equal(m.pendingState, null);
    assert.equal(m.txnStartTimestamp, 5_000);
    assert.ok(m.hasPartition('t', 1));
  });

  it('a failed write leaves the metadata as it was', () => {
    const m = meta(S.Ongoing);
    m.prepareAbortOrCommit(S.PrepareCommit, 2_000);
    m.abortTransition();
    assert.equal(m.state, S.Ongoing);
    assert.equal(m.pendingState, null);
  });

  it('adding to an ongoing transaction keeps its start time and partitions', () => {
    const m = meta(S.Ongoing);
    const t = m.prepareAddPartitions(new Map([['u', [0]]]), 9_000);
    assert.equal(t.txnStartTimestamp, 1_000);
    assert.deepEqual(
      [...t.partitions],
      [
        ['t', [0, 2]],
        ['u', [0]],
      ],
    );
  });

  it('completing clears the partitions; Empty and Complete* cannot be prepared for commit', () => {
    const m = meta(S.Ongoing);
    m.completeTransition(m.prepareAbortOrCommit(S.PrepareAbort, 2_000));
    const done = m.prepareComplete(3_000);
    assert.equal(done.state, S.CompleteAbort);
    m.completeTransition(done);
    assert.equal(m.partitionCount(), 0);
    assert.throws(() => m.prepareAbortOrCommit(S.PrepareCommit, 4_000), IllegalTxnTransition);
  });

  it('InitProducerId epochs: bump, KIP-360 retry and fencing', () => {
    // No expected epoch (a new producer instance): bump.
    let t = meta(S.Empty, 3).prepareIncrementProducerEpoch(30_000, null, 10) as TxnTransit;
    assert.equal(t.producerEpoch, 4);
    assert.equal(t.lastProducerEpoch, -1);
    assert.equal(t.txnTimeoutMs, 30_000);
    // The producer names its current epoch: bump, remembering it.
    t = meta(S.CompleteCommit, 3).prepareIncrementProducerEpoch(30_000, 3, 10) as TxnTransit;
    assert.deepEqual([t.producerEpoch, t.lastProducerEpoch], [4, 3]);
    // A retry of that bump (the answer was lost): the same epoch again.
    t = meta(S.Empty, 4, 3).prepareIncrementProducerEpoch(30_000, 3, 10) as TxnTransit;
    assert.deepEqual([t.producerEpoch, t.lastProducerEpoch], [4, 3]);
    // Any other epoch is a zombie.
    assert.equal(meta(S.Empty, 4, 3).prepareIncrementProducerEpoch(30_000, 1, 10), 'PRODUCER_FENCED');
  });

  it('an epoch fence bumps the epoch once, even when retried after a failed write', () => {
    const m = meta(S.Ongoing, 7);
    assert.equal(m.prepareFenceProducerEpoch().producerEpoch, 8);
    m.abortTransition();
    m.hasFailedEpochFence = true;
    m.producerEpoch = 8;
    assert.equal(m.prepareFenceProducerEpoch().producerEpoch, 8);
  });

  it('an exhausted epoch rotates to a new producer id at epoch 0', () => {
    const m = meta(S.CompleteCommit, 32766);
    const t = m.prepareProducerIdRotation(200n, 30_000, 10, true);
    assert.deepEqual(
      [t.producerId, t.prevProducerId, t.producerEpoch, t.lastProducerEpoch],
      [200n, 100n, 0, 32766],
    );
  });
});
