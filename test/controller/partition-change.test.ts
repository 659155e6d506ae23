import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type BrokerView,
  electLeader,
  imbalancedPartitions,
  partitionView,
  reconcilePartition,
  validateAlterPartition,
} from '../../src/controller/partition-change.js';
import type { BrokerInfo } from '../../src/metadata/cluster-metadata.js';
import type { PartitionRecord } from '../../src/metadata/keys.js';

function view(live: number[], opts: { shuttingDown?: number[]; restarted?: number[] } = {}): BrokerView {
  const brokers = new Map<number, BrokerInfo>(
    live.map((id) => [
      id,
      {
        id,
        host: 'h',
        port: id,
        endpoints: [],
        rack: null,
        epoch: BigInt(100 + id),
        inControlledShutdown: opts.shuttingDown?.includes(id) ?? false,
      },
    ]),
  );
  return { brokers, restarted: new Set(opts.restarted ?? []) };
}

function rec(leader: number, isr: number[], replicas = [1, 2, 3]): PartitionRecord {
  return {
    leader,
    leaderEpoch: 5,
    partitionEpoch: 9,
    replicas,
    isr,
    addingReplicas: [],
    removingReplicas: [],
  };
}

describe('reconcilePartition', () => {
  it('changes nothing when every ISR member is alive', () => {
    assert.equal(reconcilePartition(rec(1, [1, 2, 3]), view([1, 2, 3]), false), null);
  });

  it('elects the first ISR member in assignment order, not ISR order', () => {
    const r = reconcilePartition(rec(1, [1, 3, 2]), view([2, 3]), false)!;
    assert.deepEqual(
      [r.next.leader, r.next.isr, r.next.leaderEpoch, r.next.partitionEpoch],
      [2, [3, 2], 6, 10],
    );
  });

  it('a dead follower leaves the ISR without a new leader epoch', () => {
    const r = reconcilePartition(rec(1, [1, 2, 3]), view([1, 2]), false)!;
    assert.deepEqual(
      [r.next.leader, r.next.isr, r.next.leaderEpoch, r.next.partitionEpoch],
      [1, [1, 2], 5, 10],
    );
  });

  it('keeps the last ISR member and leaves the partition leaderless; unclean elects a live replica', () => {
    const clean = reconcilePartition(rec(1, [1]), view([2, 3]), false)!;
    assert.deepEqual([clean.next.leader, clean.next.isr, clean.unclean], [-1, [1], false]);
    const unclean = reconcilePartition(rec(-1, [1]), view([2, 3]), true)!;
    assert.deepEqual([unclean.next.leader, unclean.next.isr, unclean.unclean], [2, [2], true]);
    // Nothing live at all: leaderless, unchanged afterwards.
    assert.equal(reconcilePartition(rec(-1, [1]), view([]), true), null);
  });

  it('a restarted leader is re-elected with a new epoch if it is the only ISR member', () => {
    const r = reconcilePartition(rec(1, [1]), view([1, 2, 3], { restarted: [1] }), false)!;
    assert.deepEqual([r.next.leader, r.next.isr, r.next.leaderEpoch], [1, [1], 6]);
    const moved = reconcilePartition(rec(1, [1, 2]), view([1, 2, 3], { restarted: [1] }), false)!;
    assert.deepEqual([moved.next.leader, moved.next.isr, moved.next.leaderEpoch], [2, [2], 6]);
  });

  it('controlled shutdown: leadership and ISR membership move, unless it is the only member', () => {
    const r = reconcilePartition(rec(1, [1, 2]), view([1, 2, 3], { shuttingDown: [1] }), false)!;
    assert.deepEqual([r.next.leader, r.next.isr], [2, [2]]);
    assert.equal(reconcilePartition(rec(1, [1]), view([1, 2, 3], { shuttingDown: [1] }), false), null);
  });
});

describe('validateAlterPartition', () => {
  const item = (newIsr: number[], extra: { newIsrEpochs?: string[] } = {}) => ({
    partition: 0,
    leaderEpoch: 5,
    partitionEpoch: 9,
    newIsr,
    ...extra,
  });

  it('checks the broker epochs of new ISR members when the leader sends them', () => {
    const v = view([1, 2, 3]);
    assert.equal(
      validateAlterPartition(rec(1, [1, 2]), 1, item([1, 2, 3], { newIsrEpochs: ['101', '102', '103'] }), v)
        .errorCode,
      0,
    );
    assert.equal(
      validateAlterPartition(rec(1, [1, 2]), 1, item([1, 2, 3], { newIsrEpochs: ['101', '102', '99'] }), v)
        .errorCode,
      107,
    );
    assert.equal(
      validateAlterPartition(rec(1, [1, 2]), 1, item([1, 2, 3], { newIsrEpochs: ['-1', '-1', '-1'] }), v)
        .errorCode,
      0,
    );
  });

  it('an unchanged ISR commits nothing', () => {
    const d = validateAlterPartition(rec(1, [1, 2]), 1, item([2, 1]), view([1, 2, 3]));
    assert.deepEqual(d, { errorCode: 0, next: null });
  });
});

describe('electLeader and imbalance', () => {
  it('preferred election needs the preferred replica in the ISR', () => {
    assert.equal(electLeader(rec(2, [1, 2]), view([1, 2]), 'preferred').next?.leader, 1);
    assert.equal(electLeader(rec(2, [2]), view([1, 2]), 'preferred').errorCode, 80);
    assert.equal(electLeader(rec(1, [1]), view([1, 2]), 'preferred').errorCode, 84);
    assert.equal(electLeader(rec(-1, [1]), view([]), 'unclean').errorCode, 83);
  });

  it('moves leadership back only for brokers over the threshold', () => {
    const parts = [
      { topic: 't', partition: 0, rec: rec(2, [1, 2]) },
      { topic: 't', partition: 1, rec: rec(1, [1, 2]) },
      { topic: 't', partition: 2, rec: rec(1, [1, 2]) },
      { topic: 't', partition: 3, rec: rec(1, [1, 2]) },
    ];
    assert.deepEqual(imbalancedPartitions(parts, view([1, 2]), 10), [{ topic: 't', partition: 0 }]);
    assert.deepEqual(imbalancedPartitions(parts, view([1, 2]), 30), []);
  });
});

describe('a replica in a failed log dir (partitionView)', () => {
  const withOffline = (v: BrokerView, id: number, keys: string[]): BrokerView => {
    const brokers = new Map(v.brokers);
    brokers.set(id, { ...brokers.get(id)!, offlineLogDirs: ['/data/b'], offlineReplicas: new Set(keys) });
    return { ...v, brokers };
  };

  it('moves leadership to another ISR member and drops the replica from the ISR', () => {
    const v = withOffline(view([1, 2, 3]), 1, ['t-0']);
    const out = reconcilePartition(rec(1, [1, 2, 3]), partitionView(v, 't-0'), false);
    assert.equal(out?.next.leader, 2);
    assert.deepEqual(out?.next.isr, [2, 3]);
    assert.equal(out?.next.leaderEpoch, 6);
    assert.deepEqual(reconcilePartition(rec(1, [1, 2, 3]), v, false, { topic: 't', partition: 0 }), out);
  });

  it('leaves the broker leading and in the ISR of its partitions in other dirs', () => {
    const v = withOffline(view([1, 2, 3]), 1, ['t-0']);
    assert.equal(partitionView(v, 't-1'), v);
    assert.equal(reconcilePartition(rec(1, [1, 2, 3]), partitionView(v, 't-1'), false), null);
  });

  it('refuses the offline replica back into the ISR and as preferred leader', () => {
    const v = partitionView(withOffline(view([1, 2, 3]), 1, ['t-0']), 't-0');
    const item = { partition: 0, leaderEpoch: 5, partitionEpoch: 9, newIsr: [1, 2, 3] };
    assert.equal(validateAlterPartition(rec(2, [2, 3]), 2, item, v).errorCode, 107);
    assert.equal(electLeader(rec(2, [1, 2, 3]), v, 'preferred').errorCode, 80);
  });
});
