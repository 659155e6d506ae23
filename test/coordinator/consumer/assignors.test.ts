import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type Assignment,
  type AssignmentMemberSpec,
  rangeAssignor,
  uniformAssignor,
} from '../../../src/coordinator/consumer/assignors.js';
import { type ReconciledState, reconcile } from '../../../src/coordinator/consumer/reconciliation.js';

const member = (
  memberId: string,
  topics: string[],
  currentTarget: Assignment = new Map(),
): AssignmentMemberSpec => ({
  memberId,
  subscribedTopicIds: new Set(topics),
  currentTarget,
});
const count = (a: Assignment | undefined) => [...(a ?? new Map()).values()].reduce((n, s) => n + s.size, 0);
const keys = (a: Assignment | undefined) =>
  [...(a ?? new Map<string, Set<number>>())].flatMap(([t, ps]) => [...ps].map((p) => `${t}-${p}`)).sort();

test('uniform: every partition once, loads within one of each other', () => {
  const topicPartitions = new Map([
    ['A', 7],
    ['B', 3],
  ]);
  const result = uniformAssignor.assign({
    members: ['m1', 'm2', 'm3'].map((m) => member(m, ['A', 'B'])),
    topicPartitions,
  });
  const all = [...result.values()].flatMap((a) => keys(a));
  assert.equal(all.length, 10);
  assert.equal(new Set(all).size, 10);
  const loads = [...result.values()].map(count).sort();
  assert.deepEqual(loads, [3, 3, 4]);
});

test('uniform: a joining member takes only what balance needs; the others keep the rest', () => {
  const topicPartitions = new Map([['A', 6]]);
  const first = uniformAssignor.assign({
    members: [member('m1', ['A']), member('m2', ['A'])],
    topicPartitions,
  });
  const second = uniformAssignor.assign({
    members: [
      member('m1', ['A'], first.get('m1')),
      member('m2', ['A'], first.get('m2')),
      member('m3', ['A']),
    ],
    topicPartitions,
  });
  for (const m of ['m1', 'm2']) {
    assert.equal(count(second.get(m)), 2);
    for (const k of keys(second.get(m))) assert.ok(keys(first.get(m)).includes(k), `${m} kept ${k}`);
  }
  assert.equal(count(second.get('m3')), 2);
});

test('uniform: a leaving member’s partitions go to the others, who keep their own', () => {
  const topicPartitions = new Map([['A', 9]]);
  const first = uniformAssignor.assign({
    members: ['m1', 'm2', 'm3'].map((m) => member(m, ['A'])),
    topicPartitions,
  });
  const second = uniformAssignor.assign({
    members: [member('m1', ['A'], first.get('m1')), member('m2', ['A'], first.get('m2'))],
    topicPartitions,
  });
  for (const m of ['m1', 'm2'])
    for (const k of keys(first.get(m))) assert.ok(keys(second.get(m)).includes(k));
  assert.deepEqual([count(second.get('m1')), count(second.get('m2'))].sort(), [4, 5]);
});

test('uniform: different subscriptions get only their topics, balanced where they overlap', () => {
  const result = uniformAssignor.assign({
    members: [member('m1', ['A']), member('m2', ['A', 'B']), member('m3', ['B'])],
    topicPartitions: new Map([
      ['A', 4],
      ['B', 4],
    ]),
  });
  assert.ok(keys(result.get('m1')).every((k) => k.startsWith('A-')));
  assert.ok(keys(result.get('m3')).every((k) => k.startsWith('B-')));
  assert.deepEqual([...result.values()].map(count).sort(), [2, 3, 3]);
});

test('range: contiguous ranges per topic, the first members one more', () => {
  const result = rangeAssignor.assign({
    members: [member('b', ['A']), member('a', ['A']), member('c', ['A'])],
    topicPartitions: new Map([['A', 7]]),
  });
  assert.deepEqual(keys(result.get('a')), ['A-0', 'A-1', 'A-2']);
  assert.deepEqual(keys(result.get('b')), ['A-3', 'A-4']);
  assert.deepEqual(keys(result.get('c')), ['A-5', 'A-6']);
});

const stable = (epoch: number, assigned: Assignment): ReconciledState => ({
  state: 'STABLE',
  memberEpoch: epoch,
  previousMemberEpoch: epoch - 1,
  assignedPartitions: assigned,
  partitionsPendingRevocation: new Map(),
});
const owned = (a: Assignment) => [...a].map(([topicId, ps]) => ({ topicId, partitions: [...ps] }));

test('reconciliation: revocation first, the epoch moves only once the member stops owning them', () => {
  const current = new Map([['A', new Set([0, 1, 2])]]);
  const target = new Map([['A', new Set([0, 1])]]);
  const free = () => -1;
  const revoking = reconcile(stable(3, current), {
    targetEpoch: 4,
    target,
    currentPartitionEpoch: free,
    owned: owned(current),
  });
  assert.equal(revoking.state, 'UNREVOKED_PARTITIONS');
  assert.equal(revoking.memberEpoch, 3);
  assert.deepEqual(keys(revoking.partitionsPendingRevocation), ['A-2']);
  // Still owning A-2: no progress.
  assert.equal(
    reconcile(revoking, { targetEpoch: 4, target, currentPartitionEpoch: free, owned: owned(current) }),
    revoking,
  );
  const done = reconcile(revoking, {
    targetEpoch: 4,
    target,
    currentPartitionEpoch: free,
    owned: owned(target),
  });
  assert.equal(done.state, 'STABLE');
  assert.equal(done.memberEpoch, 4);
  assert.equal(done.previousMemberEpoch, 3);
  assert.deepEqual(keys(done.assignedPartitions), ['A-0', 'A-1']);
});

test('reconciliation: a partition another member still holds is not assigned until released', () => {
  const target = new Map([['A', new Set([0, 1])]]);
  let heldBy = 5;
  const input = () => ({
    targetEpoch: 6,
    target,
    currentPartitionEpoch: (_t: string, p: number) => (p === 1 ? heldBy : -1),
    owned: owned(new Map([['A', new Set([0])]])),
  });
  const waiting = reconcile(stable(5, new Map([['A', new Set([0])]])), input());
  assert.equal(waiting.state, 'UNRELEASED_PARTITIONS');
  assert.equal(waiting.memberEpoch, 6);
  assert.deepEqual(keys(waiting.assignedPartitions), ['A-0']);
  heldBy = -1;
  const done = reconcile(waiting, input());
  assert.equal(done.state, 'STABLE');
  assert.deepEqual(keys(done.assignedPartitions), ['A-0', 'A-1']);
});
