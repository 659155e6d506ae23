import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { coordinatorBatch, recordsInBatches } from '../../src/coordinator/batches.js';
import {
  decodeCoordinatorRecord,
  groupMetadataKey,
  groupMetadataValue,
  offsetCommitKey,
  offsetCommitValue,
} from '../../src/coordinator/records.js';
import type { DescribeGroupsResponse } from '../../src/protocol/generated/DescribeGroupsResponse.js';
import type { OffsetFetchResponse } from '../../src/protocol/generated/OffsetFetchResponse.js';
import { commitOne, ErrorCode, Harness, subscription } from './helpers.js';

// Kafka's primitive encodings, written out by hand: int16/int32/int64 big-endian, a string is an
// int16 length and UTF-8 bytes (-1 for null), bytes an int32 length and the bytes.
const i16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const i32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const i64 = (n: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(n);
  return b;
};
const str = (s: string | null) =>
  s === null ? i16(-1) : Buffer.concat([i16(Buffer.byteLength(s)), Buffer.from(s)]);
const bytes = (b: Buffer) => Buffer.concat([i32(b.length), b]);

test('OffsetCommitKey v1 / OffsetCommitValue v3 and v1: version prefix, then the struct', () => {
  assert.deepEqual(
    offsetCommitKey('grp', 'topic', 7),
    Buffer.concat([i16(1), str('grp'), str('topic'), i32(7)]),
  );
  const value = {
    offset: 1234n,
    leaderEpoch: 5,
    metadata: 'md',
    commitTimestampMs: 1_700_000_000_000n,
    expireTimestampMs: -1n,
  };
  assert.deepEqual(
    offsetCommitValue(value),
    Buffer.concat([i16(3), i64(1234n), i32(5), str('md'), i64(1_700_000_000_000n)]),
  );
  assert.deepEqual(
    offsetCommitValue({ ...value, expireTimestampMs: 1_700_000_060_000n }),
    Buffer.concat([i16(1), i64(1234n), str('md'), i64(1_700_000_000_000n), i64(1_700_000_060_000n)]),
  );
});

test('GroupMetadataKey v2 / GroupMetadataValue v3: version prefix, then the struct', () => {
  assert.deepEqual(groupMetadataKey('grp'), Buffer.concat([i16(2), str('grp')]));
  const sub = Buffer.from([0, 0, 0, 0, 0, 1, 0, 1, 0x74, 0xff, 0xff, 0xff, 0xff]);
  const encoded = groupMetadataValue({
    protocolType: 'consumer',
    generation: 3,
    protocol: 'range',
    leader: 'm1',
    currentStateTimestamp: 1_700_000_000_000n,
    members: [
      {
        memberId: 'm1',
        groupInstanceId: null,
        clientId: 'c1',
        clientHost: '/10.0.0.1',
        rebalanceTimeout: 300_000,
        sessionTimeout: 45_000,
        subscription: sub,
        assignment: Buffer.from('as'),
      },
    ],
  });
  assert.deepEqual(
    encoded,
    Buffer.concat([
      i16(3),
      str('consumer'),
      i32(3),
      str('range'),
      str('m1'),
      i64(1_700_000_000_000n),
      i32(1),
      str('m1'),
      str(null),
      str('c1'),
      str('/10.0.0.1'),
      i32(300_000),
      i32(45_000),
      bytes(sub),
      bytes(Buffer.from('as')),
    ]),
  );
});

test('records as older Kafka versions wrote them decode too (key v0, value v0/v1), others are told apart', () => {
  const key = Buffer.concat([i16(0), str('g'), str('t'), i32(2)]);
  const valueV1 = Buffer.concat([i16(1), i64(77n), str(''), i64(10n), i64(20n)]);
  assert.deepEqual(decodeCoordinatorRecord(key, valueV1), {
    type: 'offset',
    group: 'g',
    topic: 't',
    partition: 2,
    value: { offset: 77n, leaderEpoch: -1, metadata: '', commitTimestampMs: 10n, expireTimestampMs: 20n },
  });
  const valueV0 = Buffer.concat([i16(0), i64(78n), str('x'), i64(11n)]);
  assert.equal(decodeCoordinatorRecord(key, valueV0).type, 'offset');
  // Key version 3 is the new consumer-group protocol's metadata: not ours, skipped on replay.
  assert.deepEqual(decodeCoordinatorRecord(Buffer.concat([i16(3), str('g')]), Buffer.alloc(0)), {
    type: 'other',
    keyVersion: 3,
  });
});

/** A Stable two-member group with offsets, a standalone group, and a deleted group, all in the log. */
async function populate(h: Harness): Promise<{ a: string; b: string }> {
  await h.loadAll();
  // v5 clients go through MEMBER_ID_REQUIRED first, as KafkaJS and librdkafka do.
  const idA = (await h.join(5, {}, 'ca')).memberId;
  const idB = (await h.join(5, {}, 'cb')).memberId;
  const ja = h.join(
    5,
    { memberId: idA, protocols: [{ name: 'range', metadata: subscription('t', 'u') }] },
    'ca',
  );
  const jb = h.join(5, { memberId: idB }, 'cb');
  await h.advance(6_000);
  const [a, b] = await Promise.all([ja, jb]);
  await Promise.all([
    h.sync(5, 'g', b.memberId, 1),
    h.sync(5, 'g', a.memberId, 1, [
      { memberId: a.memberId, assignment: Buffer.from('A') },
      { memberId: b.memberId, assignment: Buffer.from('B') },
    ]),
  ]);
  const commit = (groupId: string, generation: number, memberId: string, offset: bigint, partition = 0) =>
    h.call('offsetCommit', 5, commitOne(groupId, generation, memberId, offset, partition, 'm'));
  await commit('g', 1, a.memberId, 100n);
  await commit('g', 1, b.memberId, 200n, 1);
  await commit('g', 1, a.memberId, 101n); // last write wins
  await commit('solo', -1, '', 5n);
  await commit('solo', -1, '', 6n, 1);
  await commit('gone', -1, '', 9n);
  await h.call('deleteGroups', 2, { groupsNames: ['gone'] });
  await h.call('offsetDelete', 0, {
    groupId: 'solo',
    topics: [{ name: 't', partitions: [{ partitionIndex: 1 }] }],
  });
  return { a: a.memberId, b: b.memberId };
}

async function offsetsOf(h: Harness, groupId: string): Promise<[string, number, bigint][]> {
  const r = await h.call<OffsetFetchResponse>('offsetFetch', 7, {
    groupId,
    topics: null,
    groups: [],
    requireStable: false,
  });
  return r.topics.flatMap((t) =>
    t.partitions.map((p) => [t.name, p.partitionIndex, p.committedOffset] as [string, number, bigint]),
  );
}

test('a new coordinator replaying the log restores groups, members, assignments and offsets', async () => {
  const first = new Harness();
  const { a, b } = await populate(first);
  first.coordinator.shutdown();

  const h = new Harness({}, first.log);
  h.clock.setMs(first.clock.nowMs());
  await h.loadAll();
  assert.equal(h.coordinator.groupState('g'), 'Stable');
  assert.equal(h.coordinator.groupState('solo'), 'Empty');
  assert.equal(h.coordinator.groupState('gone'), undefined);
  assert.deepEqual(await offsetsOf(h, 'g'), [
    ['t', 0, 101n],
    ['t', 1, 200n],
  ]);
  assert.deepEqual(await offsetsOf(h, 'solo'), [['t', 0, 5n]]);
  assert.deepEqual(await offsetsOf(h, 'gone'), []);
  const d = await h.call<DescribeGroupsResponse>('describeGroups', 5, {
    groups: ['g'],
    includeAuthorizedOperations: false,
  });
  const g = d.groups[0]!;
  assert.equal(g.groupState, 'Stable');
  assert.equal(g.protocolType, 'consumer');
  assert.equal(g.protocolData, 'range');
  assert.deepEqual(
    g.members.map((m) => [m.memberId, m.clientId, m.memberAssignment.toString()]),
    [
      [a, 'ca', 'A'],
      [b, 'cb', 'B'],
    ],
  );
  assert.deepEqual(g.members[0]!.memberMetadata, subscription('t', 'u'));

  // The members carry on in generation 1; one that stays silent is dropped after its session timeout.
  assert.equal(await h.heartbeat('g', a, 1), ErrorCode.NONE);
  assert.equal((await h.sync(5, 'g', b, 1)).errorCode, ErrorCode.NONE);
  await h.advance(9_999);
  assert.equal(await h.heartbeat('g', a, 1), ErrorCode.NONE);
  await h.advance(1);
  assert.equal(await h.heartbeat('g', b, 1), ErrorCode.UNKNOWN_MEMBER_ID);
  assert.equal(await h.heartbeat('g', a, 1), ErrorCode.REBALANCE_IN_PROGRESS);
  const rejoin = await h.join(5, { memberId: a });
  assert.equal(rejoin.generationId, 2);
  assert.equal(rejoin.leader, a);
});

test('replay skips records it cannot decode and keeps going', async () => {
  const first = new Harness();
  await first.loadAll();
  await first.call('offsetCommit', 2, commitOne('g', -1, '', 3n));
  const p = first.coordinator.partitionFor('g');
  const warnings: string[] = [];
  const h = new Harness({ logger: { info() {}, warn: (l) => warnings.push(l) } });
  await h.coordinator.load(p, [
    { key: Buffer.from([0, 1, 0]), value: Buffer.from([1]) },
    { key: null, value: null },
    // A share group's record (ShareGroupMetadataKey, version 11): not this coordinator's, passed over.
    { key: Buffer.concat([i16(11), str('g')]), value: Buffer.alloc(3) },
    ...first.log.partition(p),
  ]);
  assert.equal(warnings.length, 2);
  assert.equal(h.coordinator.groupState('g'), 'Empty');
  assert.deepEqual(await offsetsOf(h, 'g'), [['t', 0, 3n]]);
});

test('records travel through __consumer_offsets batches: encoded per append, replayed from the concatenated log', async () => {
  const first = new Harness();
  await populate(first);
  // What the broker would store: one batch per append, offsets assigned in order.
  const p = first.coordinator.partitionFor('g');
  const batches: Buffer[] = [];
  let next = 0n;
  for (const r of first.log.partition(p)) {
    const batch = coordinatorBatch([r], first.clock.nowMs());
    batch.writeBigInt64BE(next, 0);
    next += 1n;
    batches.push(batch);
  }
  const replayed = [...recordsInBatches(Buffer.concat(batches))];
  assert.equal(replayed.length, first.log.partition(p).length);
  const h = new Harness();
  h.clock.setMs(first.clock.nowMs());
  await h.coordinator.load(p, replayed);
  assert.equal(h.coordinator.groupState('g'), 'Stable');
  assert.deepEqual(await offsetsOf(h, 'g'), [
    ['t', 0, 101n],
    ['t', 1, 200n],
  ]);
});
