import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import type { GroupApi } from '../../src/broker/group-api.js';
import { javaStringHashCode, partitionForGroup } from '../../src/coordinator/partitioner.js';
import { decodeCoordinatorRecord } from '../../src/coordinator/records.js';
import type { DeleteGroupsResponse } from '../../src/protocol/generated/DeleteGroupsResponse.js';
import type { DescribeGroupsResponse } from '../../src/protocol/generated/DescribeGroupsResponse.js';
import type { FindCoordinatorResponse } from '../../src/protocol/generated/FindCoordinatorResponse.js';
import type { ListGroupsResponse } from '../../src/protocol/generated/ListGroupsResponse.js';
import type { OffsetDeleteResponse } from '../../src/protocol/generated/OffsetDeleteResponse.js';
import { ErrorCode, Harness, subscription } from './helpers.js';

test('the coordinator is the broker GroupApi', () => {
  const h = new Harness();
  const api: GroupApi = h.coordinator;
  assert.deepEqual(api.versions.get(11), { min: 2, max: 9 });
});

test("the group's partition is Utils.abs(String.hashCode) % 50, as Kafka computes it", () => {
  // "a": 97. "abc": 97*31*31 + 98*31 + 99 = 93217 + 3038 + 99 = 96354.
  assert.equal(javaStringHashCode('a'), 97);
  assert.equal(javaStringHashCode('abc'), 96_354);
  assert.equal(partitionForGroup('a', 50), 47);
  assert.equal(partitionForGroup('abc', 50), 4);
  // Values printed by java.lang.String.hashCode on a JVM: overflow wraps to negative,
  // and Integer.MIN_VALUE ("polygenelubricants") maps to partition 0 through Utils.abs.
  assert.equal(javaStringHashCode('kafka-python-default-group'), -243_457_783);
  assert.equal(partitionForGroup('kafka-python-default-group', 50), 33);
  assert.equal(javaStringHashCode('KafkaExampleConsumer'), -1_647_479_910);
  assert.equal(partitionForGroup('KafkaExampleConsumer', 50), 10);
  assert.equal(javaStringHashCode('polygenelubricants'), -2_147_483_648);
  assert.equal(partitionForGroup('polygenelubricants', 50), 0);
  // UTF-16 code units, not UTF-8 bytes.
  assert.equal(javaStringHashCode('grüße-gruppe'), 80_269_105);
  assert.equal(partitionForGroup('my-consumer-group', 50), 13);
});

test('FindCoordinator: v0-v3 answer one key, v4+ a batch; no leader means COORDINATOR_NOT_AVAILABLE', async () => {
  const asked: number[] = [];
  const h = new Harness({
    locateCoordinator: (p) => {
      asked.push(p);
      return p === 0 ? null : { nodeId: p, host: `broker-${p}`, port: 9092 };
    },
  });
  const v3 = await h.call<FindCoordinatorResponse>('findCoordinator', 3, {
    key: 'abc',
    keyType: 0,
    coordinatorKeys: [],
  });
  assert.deepEqual([v3.errorCode, v3.nodeId, v3.host, v3.port], [0, 4, 'broker-4', 9092]);
  const v0 = await h.call<FindCoordinatorResponse>('findCoordinator', 0, {
    key: 'a',
    keyType: 0,
    coordinatorKeys: [],
  });
  assert.equal(v0.nodeId, 47);
  const v4 = await h.call<FindCoordinatorResponse>('findCoordinator', 4, {
    key: '',
    keyType: 0,
    coordinatorKeys: ['a', 'polygenelubricants'],
  });
  assert.deepEqual(
    v4.coordinators.map((c) => [c.key, c.nodeId, c.errorCode]),
    [
      ['a', 47, ErrorCode.NONE],
      ['polygenelubricants', -1, ErrorCode.COORDINATOR_NOT_AVAILABLE],
    ],
  );
  assert.deepEqual(asked, [4, 47, 47, 0]);
  const txn = await h.call<FindCoordinatorResponse>('findCoordinator', 4, {
    key: '',
    keyType: 1,
    coordinatorKeys: ['t'],
  });
  assert.equal(txn.coordinators[0]!.errorCode, ErrorCode.INVALID_REQUEST);
});

/** Group "busy" Stable with one consumer subscribed to topic t; "idle" Empty with offsets on t and u. */
async function twoGroups(h: Harness): Promise<string> {
  await h.loadAll();
  const commit = (groupId: string, topic: string, generation = -1, memberId = '') =>
    h.call('offsetCommit', 2, {
      groupId,
      generationIdOrMemberEpoch: generation,
      memberId,
      groupInstanceId: null,
      retentionTimeMs: -1n,
      topics: [
        {
          name: topic,
          partitions: [
            {
              partitionIndex: 0,
              committedOffset: 1n,
              committedLeaderEpoch: -1,
              commitTimestamp: -1n,
              committedMetadata: '',
            },
          ],
        },
      ],
    });
  await commit('idle', 't');
  await commit('idle', 'u');
  const j = h.join(
    3,
    { groupId: 'busy', protocols: [{ name: 'range', metadata: subscription('t') }] },
    'consumer-1',
  );
  await h.advance(3_000);
  const m = await j;
  await h.sync(3, 'busy', m.memberId, 1, [{ memberId: m.memberId, assignment: Buffer.from('x') }]);
  await commit('busy', 't', 1, m.memberId);
  await commit('busy', 'old-topic', 1, m.memberId);
  return m.memberId;
}

test('ListGroups: every group, filtered by state (v4+) and type (v5+)', async () => {
  const h = new Harness();
  await twoGroups(h);
  const all = await h.call<ListGroupsResponse>('listGroups', 0, { statesFilter: [], typesFilter: [] });
  assert.deepEqual(all.groups.map((g) => [g.groupId, g.protocolType]).sort(), [
    ['busy', 'consumer'],
    ['idle', ''],
  ]);
  const stable = await h.call<ListGroupsResponse>('listGroups', 4, {
    statesFilter: ['stable'],
    typesFilter: [],
  });
  assert.deepEqual(
    stable.groups.map((g) => [g.groupId, g.groupState]),
    [['busy', 'Stable']],
  );
  const classic = await h.call<ListGroupsResponse>('listGroups', 5, {
    statesFilter: [],
    typesFilter: ['Classic'],
  });
  assert.equal(classic.groups.length, 2);
  assert.equal(classic.groups[0]!.groupType, 'classic');
  const consumer = await h.call<ListGroupsResponse>('listGroups', 5, {
    statesFilter: [],
    typesFilter: ['consumer'],
  });
  assert.equal(consumer.groups.length, 0);
});

test('DescribeGroups: members with metadata and assignment when Stable; unknown groups are Dead', async () => {
  const h = new Harness();
  const memberId = await twoGroups(h);
  for (const version of [0, 3, 5]) {
    const r = await h.call<DescribeGroupsResponse>('describeGroups', version, {
      groups: ['busy', 'idle', 'nope'],
      includeAuthorizedOperations: false,
    });
    assert.deepEqual(
      r.groups.map((g) => [
        g.groupId,
        g.errorCode,
        g.groupState,
        g.protocolType,
        g.protocolData,
        g.members.length,
      ]),
      [
        ['busy', 0, 'Stable', 'consumer', 'range', 1],
        ['idle', 0, 'Empty', '', '', 0],
        ['nope', 0, 'Dead', '', '', 0],
      ],
    );
    const m = r.groups[0]!.members[0]!;
    assert.deepEqual(
      [m.memberId, m.clientId, m.clientHost, m.memberAssignment.toString()],
      [memberId, 'consumer-1', '/127.0.0.1', 'x'],
    );
    assert.deepEqual(m.memberMetadata, subscription('t'));
  }
});

test('DeleteGroups: NON_EMPTY_GROUP for active groups, GROUP_ID_NOT_FOUND for unknown ones, tombstones for deleted ones', async () => {
  const h = new Harness();
  // Not owning the partition of "foreign".
  await twoGroups(h);
  const foreign = h.coordinator.partitionFor('foreign');
  h.coordinator.unload(foreign);
  const r = await h.call<DeleteGroupsResponse>('deleteGroups', 2, {
    groupsNames: ['busy', 'idle', 'nope', 'foreign'],
  });
  assert.deepEqual(
    r.results.map((x) => [x.groupId, x.errorCode]),
    [
      ['busy', ErrorCode.NON_EMPTY_GROUP],
      ['idle', ErrorCode.NONE],
      ['nope', ErrorCode.GROUP_ID_NOT_FOUND],
      ['foreign', ErrorCode.NOT_COORDINATOR],
    ],
  );
  assert.equal(h.coordinator.groupState('idle'), undefined);
  const again = await h.call<DeleteGroupsResponse>('deleteGroups', 0, { groupsNames: ['idle'] });
  assert.equal(again.results[0]!.errorCode, ErrorCode.GROUP_ID_NOT_FOUND);
  const tail = h.log.partition(h.coordinator.partitionFor('idle')).slice(-3);
  assert.deepEqual(
    tail.map((rec) => {
      const d = decodeCoordinatorRecord(rec.key, rec.value);
      return [d.type, d.type === 'offset' ? d.topic : '', rec.value];
    }),
    [
      ['offset', 't', null],
      ['offset', 'u', null],
      ['group', '', null],
    ],
  );
});

test('OffsetDelete: GROUP_SUBSCRIBED_TO_TOPIC for a topic an active consumer group reads; others are deleted', async () => {
  const h = new Harness();
  await twoGroups(h);
  const del = (groupId: string, topics: string[]) =>
    h.call<OffsetDeleteResponse>('offsetDelete', 0, {
      groupId,
      topics: topics.map((name) => ({ name, partitions: [{ partitionIndex: 0 }] })),
    });
  const busy = await del('busy', ['t', 'old-topic']);
  assert.equal(busy.errorCode, ErrorCode.NONE);
  assert.deepEqual(
    busy.topics.map((t) => [t.name, t.partitions[0]!.errorCode]),
    [
      ['t', ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC],
      ['old-topic', ErrorCode.NONE],
    ],
  );
  const idle = await del('idle', ['t', 'u', 'never-committed']);
  assert.deepEqual(
    idle.topics.map((t) => t.partitions[0]!.errorCode),
    [0, 0, 0],
  );
  assert.equal((await del('nope', ['t'])).errorCode, ErrorCode.GROUP_ID_NOT_FOUND);
  const fetched = await h.call<{ topics: { name: string }[] }>('offsetFetch', 7, {
    groupId: 'busy',
    topics: null,
    groups: [],
    requireStable: false,
  });
  assert.deepEqual(
    fetched.topics.map((t) => t.name),
    ['t'],
  );
  // A non-consumer protocol's subscriptions cannot be read: no offsets are deleted while it has members.
  const j = h.join(3, {
    groupId: 'connect',
    protocolType: 'connect',
    protocols: [{ name: 'v1', metadata: Buffer.from('?') }],
  });
  await h.advance(3_000);
  await j;
  assert.equal((await del('connect', ['t'])).errorCode, ErrorCode.NON_EMPTY_GROUP);
});

test('DeleteGroups also tombstones a commit still in flight, so a replay cannot bring it back', async () => {
  const h = new Harness();
  await h.loadAll();
  const commit = (partition: number) =>
    h.call<{ topics: { partitions: { errorCode: number }[] }[] }>('offsetCommit', 2, {
      groupId: 'g',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1n,
      topics: [
        {
          name: 't',
          partitions: [
            {
              partitionIndex: partition,
              committedOffset: 1n,
              committedLeaderEpoch: -1,
              commitTimestamp: -1n,
              committedMetadata: '',
            },
          ],
        },
      ],
    });
  await commit(0);
  h.log.hold = true;
  const inFlight = commit(1);
  await h.advance(0);
  const deleted = h.call<DeleteGroupsResponse>('deleteGroups', 2, { groupsNames: ['g'] });
  await h.advance(0);
  h.log.release();
  assert.equal((await inFlight).topics[0]!.partitions[0]!.errorCode, ErrorCode.NONE);
  assert.equal((await deleted).results[0]!.errorCode, ErrorCode.NONE);
  assert.equal(h.coordinator.groupState('g'), undefined);
  const replayed = new Harness({}, h.log);
  await replayed.loadAll();
  assert.equal(replayed.coordinator.groupState('g'), undefined);
});
