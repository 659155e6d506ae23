import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeCoordinatorRecord } from '../../src/coordinator/records.js';
import type { DescribeGroupsResponse } from '../../src/protocol/generated/DescribeGroupsResponse.js';
import type { JoinGroupResponse } from '../../src/protocol/generated/JoinGroupResponse.js';
import { KafkaError } from '../../src/protocol/kafka-error.js';
import { ErrorCode, Harness, isSettled, subscription } from './helpers.js';

const A = Buffer.from('assignment-a');
const B = Buffer.from('assignment-b');

/** Two dynamic members (v3: no MEMBER_ID_REQUIRED round) joined and synced into generation 1. */
async function stableGroupOfTwo(h: Harness): Promise<{ a: JoinGroupResponse; b: JoinGroupResponse }> {
  await h.loadAll();
  const ja = h.join(3, {}, 'client-a');
  const jb = h.join(3, {}, 'client-b');
  await h.advance(6_000);
  const [a, b] = await Promise.all([ja, jb]);
  const sb = h.sync(3, 'g', b.memberId, b.generationId);
  const sa = h.sync(3, 'g', a.memberId, a.generationId, [
    { memberId: a.memberId, assignment: A },
    { memberId: b.memberId, assignment: B },
  ]);
  const [ra, rb] = await Promise.all([sa, sb]);
  assert.equal(ra.errorCode, ErrorCode.NONE);
  assert.deepEqual(ra.assignment, A);
  assert.deepEqual(rb.assignment, B);
  return { a, b };
}

test('two members: join, leader gets the members, sync distributes the assignment, heartbeats succeed', async () => {
  const h = new Harness();
  const { a, b } = await stableGroupOfTwo(h);
  assert.equal(a.errorCode, ErrorCode.NONE);
  assert.equal(a.memberId, 'client-a-uuid1');
  assert.equal(b.memberId, 'client-b-uuid2');
  assert.equal(a.generationId, 1);
  assert.equal(b.generationId, 1);
  assert.equal(a.leader, a.memberId);
  assert.equal(b.leader, a.memberId);
  assert.equal(a.protocolName, 'range');
  assert.deepEqual(
    a.members.map((m) => m.memberId),
    [a.memberId, b.memberId],
  );
  assert.deepEqual(b.members, [], 'followers do not get the member list');
  assert.equal(h.coordinator.groupState('g'), 'Stable');
  assert.equal(await h.heartbeat('g', a.memberId, 1), ErrorCode.NONE);
  assert.equal(await h.heartbeat('g', b.memberId, 1), ErrorCode.NONE);
  assert.equal(await h.heartbeat('g', b.memberId, 0), ErrorCode.ILLEGAL_GENERATION);
  assert.equal(await h.heartbeat('g', 'nobody', 1), ErrorCode.UNKNOWN_MEMBER_ID);
  assert.equal(await h.heartbeat('other', 'nobody', 1), ErrorCode.UNKNOWN_MEMBER_ID);

  // The assignment was persisted as a GroupMetadata record before the sync was answered.
  const p = h.coordinator.partitionFor('g');
  const last = h.log.partition(p).at(-1)!;
  const decoded = decodeCoordinatorRecord(last.key, last.value);
  assert.equal(decoded.type, 'group');
  if (decoded.type !== 'group' || decoded.value === null) throw new Error('expected group metadata');
  assert.equal(decoded.value.generation, 1);
  assert.equal(decoded.value.leader, a.memberId);
  assert.deepEqual(
    decoded.value.members.map((m) => [m.memberId, m.assignment.toString()]),
    [
      [a.memberId, 'assignment-a'],
      [b.memberId, 'assignment-b'],
    ],
  );
});

test('a third member triggers a rebalance; members learn it from heartbeats and rejoin', async () => {
  const h = new Harness();
  const { a, b } = await stableGroupOfTwo(h);
  const jc = h.join(3, {}, 'client-c');
  await h.advance(0);
  assert.equal(h.coordinator.groupState('g'), 'PreparingRebalance');
  assert.equal(await isSettled(jc), false, 'the new member waits for the others to rejoin');
  assert.equal(await h.heartbeat('g', a.memberId, 1), ErrorCode.REBALANCE_IN_PROGRESS);
  assert.equal(await h.heartbeat('g', b.memberId, 1), ErrorCode.REBALANCE_IN_PROGRESS);
  const ja = h.join(3, { memberId: a.memberId }, 'client-a');
  const jb = h.join(3, { memberId: b.memberId }, 'client-b');
  // No initial delay for a group that is not empty: the join completes when all have rejoined.
  const [ra, rb, rc] = await Promise.all([ja, jb, jc]);
  for (const r of [ra, rb, rc]) {
    assert.equal(r.errorCode, ErrorCode.NONE);
    assert.equal(r.generationId, 2);
    assert.equal(r.leader, a.memberId);
  }
  assert.equal(ra.members.length, 3);
  assert.equal(h.coordinator.groupState('g'), 'CompletingRebalance');
  // Heartbeats are fine while waiting for the assignment; commits are not.
  assert.equal(await h.heartbeat('g', rc.memberId, 2), ErrorCode.NONE);
  const sc = h.sync(3, 'g', rc.memberId, 2);
  const sa = h.sync(3, 'g', ra.memberId, 2, [{ memberId: rc.memberId, assignment: Buffer.from('c') }]);
  const sb = h.sync(3, 'g', rb.memberId, 2);
  const [xa, xb, xc] = await Promise.all([sa, sb, sc]);
  assert.deepEqual(xc.assignment, Buffer.from('c'));
  assert.deepEqual(xa.assignment, Buffer.alloc(0), 'members missing from the assignment get an empty one');
  assert.deepEqual(xb.assignment, Buffer.alloc(0));
  assert.equal(h.coordinator.groupState('g'), 'Stable');
});

test('a member that does not rejoin within the rebalance timeout is removed', async () => {
  const h = new Harness();
  const { a, b } = await stableGroupOfTwo(h);
  const ja = h.join(3, { memberId: a.memberId }, 'client-a');
  // b keeps heartbeating (so its session does not expire) but never rejoins.
  for (let t = 0; t < 25_000; t += 5_000) {
    await h.advance(5_000);
    assert.equal(await h.heartbeat('g', b.memberId, 1), ErrorCode.REBALANCE_IN_PROGRESS);
  }
  await h.advance(4_999);
  assert.equal(await isSettled(ja), false);
  await h.advance(1);
  const ra = await ja;
  assert.equal(ra.generationId, 2);
  assert.deepEqual(
    ra.members.map((m) => m.memberId),
    [a.memberId],
  );
  assert.equal(await h.heartbeat('g', b.memberId, 1), ErrorCode.UNKNOWN_MEMBER_ID);
});

test('leave: the group rebalances without the member; the last leave empties the group', async () => {
  const h = new Harness();
  const { a, b } = await stableGroupOfTwo(h);
  const left = await h.call<{ errorCode: number; members: { errorCode: number }[] }>('leaveGroup', 3, {
    groupId: 'g',
    memberId: '',
    members: [
      { memberId: b.memberId, groupInstanceId: null, reason: null },
      { memberId: 'ghost', groupInstanceId: null, reason: null },
    ],
  });
  assert.equal(left.errorCode, ErrorCode.NONE);
  assert.deepEqual(
    left.members.map((m) => m.errorCode),
    [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID],
  );
  assert.equal(h.coordinator.groupState('g'), 'PreparingRebalance');
  const ra = await h.join(3, { memberId: a.memberId }, 'client-a');
  assert.equal(ra.generationId, 2);
  assert.equal(ra.members.length, 1);

  // v0 LeaveGroup: one member, error at the top level.
  const v0 = await h.call<{ errorCode: number }>('leaveGroup', 0, {
    groupId: 'g',
    memberId: a.memberId,
    members: [],
  });
  assert.equal(v0.errorCode, ErrorCode.NONE);
  await h.advance(0);
  assert.equal(h.coordinator.groupState('g'), 'Empty');
  const again = await h.call<{ errorCode: number }>('leaveGroup', 0, {
    groupId: 'g',
    memberId: a.memberId,
    members: [],
  });
  assert.equal(again.errorCode, ErrorCode.UNKNOWN_MEMBER_ID);
  // The empty generation is persisted: generation 3, no members, no protocol.
  const last = h.log.partition(h.coordinator.partitionFor('g')).at(-1)!;
  const d = decodeCoordinatorRecord(last.key, last.value);
  if (d.type !== 'group' || d.value === null) throw new Error('expected group metadata');
  assert.equal(d.value.generation, 3);
  assert.equal(d.value.members.length, 0);
  assert.equal(d.value.protocol, null);
});

test('session expiry removes a silent member and rebalances the rest', async () => {
  const h = new Harness();
  const { a, b } = await stableGroupOfTwo(h);
  for (let i = 0; i < 2; i++) {
    await h.advance(4_000);
    assert.equal(await h.heartbeat('g', a.memberId, 1), ErrorCode.NONE);
  }
  await h.advance(1_999);
  assert.equal(h.coordinator.groupState('g'), 'Stable');
  // b has been silent for its whole 10 s session timeout.
  await h.advance(1);
  assert.equal(h.coordinator.groupState('g'), 'PreparingRebalance');
  assert.equal(await h.heartbeat('g', b.memberId, 1), ErrorCode.UNKNOWN_MEMBER_ID);
  assert.equal(await h.heartbeat('g', a.memberId, 1), ErrorCode.REBALANCE_IN_PROGRESS);
  const ra = await h.join(3, { memberId: a.memberId });
  assert.equal(ra.generationId, 2);
  assert.equal(ra.members.length, 1);
});

test('MEMBER_ID_REQUIRED (v4+): the first join gets an id and must rejoin with it; unused ids expire', async () => {
  const h = new Harness();
  await h.loadAll();
  const first = await h.join(4, {}, 'kafkajs');
  assert.equal(first.errorCode, ErrorCode.MEMBER_ID_REQUIRED);
  assert.equal(first.memberId, 'kafkajs-uuid1');
  assert.equal(first.generationId, -1);
  // A second client asks for an id and never comes back.
  const ghost = await h.join(4, {}, 'ghost');
  assert.equal(ghost.errorCode, ErrorCode.MEMBER_ID_REQUIRED);
  const joined = h.join(4, { memberId: first.memberId }, 'kafkajs');
  // The initial delay ends the first join phase whatever ids are still pending, as in Kafka.
  await h.advance(3_000);
  const r = await joined;
  assert.equal(r.errorCode, ErrorCode.NONE);
  assert.equal(r.memberId, 'kafkajs-uuid1');
  assert.equal(r.members.length, 1);
  await h.sync(4, 'g', r.memberId, 1);
  // In a later rebalance an outstanding id holds the join phase open until it is used or expires
  // (one session timeout after it was handed out, t=10 s).
  await h.advance(1_000);
  const rejoin = h.join(4, { memberId: r.memberId }, 'kafkajs');
  await h.advance(5_999);
  assert.equal(await isSettled(rejoin), false);
  assert.equal(await h.heartbeat('g', r.memberId, 1), ErrorCode.REBALANCE_IN_PROGRESS);
  await h.advance(1);
  assert.equal((await rejoin).generationId, 2);
  // The expired id is unknown now.
  const late = await h.join(4, { memberId: ghost.memberId });
  assert.equal(late.errorCode, ErrorCode.UNKNOWN_MEMBER_ID);
});

test('initial rebalance delay: 3 s, extended while members keep arriving, capped by the rebalance timeout', async () => {
  const h = new Harness();
  await h.loadAll();
  const j1 = h.join(3, { rebalanceTimeoutMs: 7_000 });
  await h.advance(2_999);
  assert.equal(await isSettled(j1), false);
  const j2 = h.join(3, {});
  await h.advance(1); // t=3000: a member arrived during the delay, so wait another 3 s
  assert.equal(await isSettled(j1), false);
  const j3 = h.join(3, {});
  await h.advance(3_000); // t=6000: another arrival, but only 1 s of the 7 s rebalance timeout is left
  assert.equal(await isSettled(j1), false);
  await h.advance(999);
  assert.equal(await isSettled(j1), false);
  await h.advance(1); // t=7000
  const rs = await Promise.all([j1, j2, j3]);
  assert.deepEqual(
    rs.map((r) => r.generationId),
    [1, 1, 1],
  );

  // A lone member of a fresh group waits exactly the initial delay.
  const j = h.join(3, { groupId: 'solo' });
  await h.advance(2_999);
  assert.equal(await isSettled(j), false);
  await h.advance(1);
  assert.equal((await j).generationId, 1);
});

test('static membership: a restarted instance takes over without a rebalance; the old id is fenced', async () => {
  const h = new Harness();
  await h.loadAll();
  const ja = h.join(5, { groupInstanceId: 'instance-a' }, 'a');
  const jb = h.join(5, { groupInstanceId: 'instance-b' }, 'b');
  await h.advance(6_000);
  const [a, b] = await Promise.all([ja, jb]);
  assert.equal(a.memberId, 'instance-a-uuid1', 'static member ids start with the instance id');
  assert.equal(a.members[0]!.groupInstanceId, 'instance-a');
  const sb = h.sync(5, 'g', b.memberId, 1, [], 'instance-b');
  await h.sync(
    5,
    'g',
    a.memberId,
    1,
    [
      { memberId: a.memberId, assignment: A },
      { memberId: b.memberId, assignment: B },
    ],
    'instance-a',
  );
  await sb;

  // instance-b restarts: it joins with no member id but the same instance id.
  const rejoin = await h.join(5, { groupInstanceId: 'instance-b' }, 'b');
  assert.equal(rejoin.errorCode, ErrorCode.NONE);
  assert.notEqual(rejoin.memberId, b.memberId);
  assert.equal(rejoin.generationId, 1, 'same generation: no rebalance');
  assert.equal(h.coordinator.groupState('g'), 'Stable');
  const sync = await h.sync(5, 'g', rejoin.memberId, 1, [], 'instance-b');
  assert.deepEqual(sync.assignment, B, 'the new id inherits the assignment');
  // The old incarnation is a zombie now.
  assert.equal(await h.heartbeat('g', b.memberId, 1, 'instance-b'), ErrorCode.FENCED_INSTANCE_ID);
  assert.equal(await h.heartbeat('g', rejoin.memberId, 1, 'instance-b'), ErrorCode.NONE);
  assert.equal(await h.heartbeat('g', a.memberId, 1, 'instance-a'), ErrorCode.NONE);
  const zombieJoin = await h.join(5, { memberId: b.memberId, groupInstanceId: 'instance-b' });
  assert.equal(zombieJoin.errorCode, ErrorCode.FENCED_INSTANCE_ID);

  // A static leader restarting with v9 is told to skip the assignment; older versions are not told it leads.
  const leaderV9 = await h.join(9, { groupInstanceId: 'instance-a' }, 'a');
  assert.equal(leaderV9.skipAssignment, true);
  assert.equal(leaderV9.leader, leaderV9.memberId);
  assert.equal(leaderV9.members.length, 2);
  const leaderV5 = await h.join(5, { groupInstanceId: 'instance-a' }, 'a');
  assert.equal(leaderV5.leader, leaderV9.memberId, 'the previous leader id, not the new member id');
  assert.equal(leaderV5.members.length, 0);
  assert.equal(h.coordinator.groupState('g'), 'Stable');
});

test('static members are not removed at join completion: they keep their place until their session expires', async () => {
  const h = new Harness();
  await h.loadAll();
  const ja = h.join(5, { groupInstanceId: 'sa' });
  const jb = h.join(5, { groupInstanceId: 'sb', sessionTimeoutMs: 60_000 });
  await h.advance(6_000);
  const [a, b] = await Promise.all([ja, jb]);
  await Promise.all([h.sync(5, 'g', b.memberId, 1, [], 'sb'), h.sync(5, 'g', a.memberId, 1, [], 'sa')]);
  // The leader rejoins (forcing a rebalance); sb stays silent but within its session.
  const ra = h.join(5, { memberId: a.memberId, groupInstanceId: 'sa' });
  await h.advance(30_000);
  const r = await ra;
  assert.equal(r.generationId, 2);
  assert.equal(r.members.length, 2, 'the silent static member is still listed');
});

test('join validation: session timeout bounds, protocol mismatches, unknown member ids', async () => {
  const h = new Harness();
  await h.loadAll();
  assert.equal((await h.join(3, { sessionTimeoutMs: 5_999 })).errorCode, ErrorCode.INVALID_SESSION_TIMEOUT);
  assert.equal(
    (await h.join(3, { sessionTimeoutMs: 1_800_001 })).errorCode,
    ErrorCode.INVALID_SESSION_TIMEOUT,
  );
  assert.equal((await h.join(3, { protocols: [] })).errorCode, ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
  assert.equal((await h.join(3, { groupId: '' })).errorCode, ErrorCode.INVALID_GROUP_ID);
  assert.equal((await h.join(3, { memberId: 'stale' })).errorCode, ErrorCode.UNKNOWN_MEMBER_ID);
  assert.equal(h.coordinator.groupState('g'), undefined, 'failed joins leave no group behind');
  const first = h.join(3, { protocols: [{ name: 'range', metadata: subscription('t') }] });
  const other = await h.join(3, { protocols: [{ name: 'sticky', metadata: subscription('t') }] });
  assert.equal(other.errorCode, ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
  const otherType = await h.join(3, { protocolType: 'connect' });
  assert.equal(otherType.errorCode, ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
  await h.advance(3_000);
  assert.equal((await first).errorCode, ErrorCode.NONE);
});

test('protocol selection: the protocol most members prefer among those all support', async () => {
  const h = new Harness();
  await h.loadAll();
  const both = (first: string, second: string) => [
    { name: first, metadata: subscription('t') },
    { name: second, metadata: subscription('t') },
  ];
  const j1 = h.join(3, { protocols: both('range', 'roundrobin') });
  const j2 = h.join(3, { protocols: both('roundrobin', 'range') });
  const j3 = h.join(3, { protocols: both('roundrobin', 'range') });
  await h.advance(9_000);
  const rs = await Promise.all([j1, j2, j3]);
  assert.deepEqual(
    rs.map((r) => r.protocolName),
    ['roundrobin', 'roundrobin', 'roundrobin'],
  );
});

test('group.max.size: joins beyond the bound get GROUP_MAX_SIZE_REACHED; a static member may still rejoin', async () => {
  const h = new Harness({ config: { groupMaxSize: 2 } });
  await h.loadAll();
  const j1 = h.join(5, { groupInstanceId: 'i1' });
  const j2 = h.join(5, { groupInstanceId: 'i2' });
  const j3 = await h.join(5, { groupInstanceId: 'i3' });
  assert.equal(j3.errorCode, ErrorCode.GROUP_MAX_SIZE_REACHED);
  // Ids handed out with MEMBER_ID_REQUIRED count too, so a looping client cannot grow the group.
  assert.equal((await h.join(5, {})).errorCode, ErrorCode.GROUP_MAX_SIZE_REACHED);
  await h.advance(6_000);
  const r1 = await j1;
  assert.equal(r1.errorCode, ErrorCode.NONE);
  assert.equal((await j2).errorCode, ErrorCode.NONE);
  await Promise.all([
    h.sync(5, 'g', r1.memberId, 1, [], 'i1'),
    h.sync(5, 'g', (await j2).memberId, 1, [], 'i2'),
  ]);
  const restarted = await h.join(5, { groupInstanceId: 'i2' });
  assert.equal(restarted.errorCode, ErrorCode.NONE);
});

test('a member that never sends SyncGroup is removed after the rebalance timeout', async () => {
  const h = new Harness();
  await h.loadAll();
  const ja = h.join(3, {});
  const jb = h.join(3, {});
  await h.advance(6_000);
  const [a, b] = await Promise.all([ja, jb]);
  const sa = h.sync(3, 'g', a.memberId, 1, []);
  // b heartbeats but never syncs.
  for (let t = 0; t < 30_000; t += 5_000) {
    await h.advance(5_000);
    if (t + 5_000 < 30_000) {
      assert.equal(await h.heartbeat('g', a.memberId, 1), ErrorCode.NONE);
      assert.equal(await h.heartbeat('g', b.memberId, 1), ErrorCode.NONE);
    }
  }
  const ra = await sa;
  assert.equal(ra.errorCode, ErrorCode.NONE);
  assert.equal(h.coordinator.groupState('g'), 'PreparingRebalance');
  assert.equal(await h.heartbeat('g', b.memberId, 1), ErrorCode.UNKNOWN_MEMBER_ID);
});

test('sync errors: unknown member, wrong generation, rebalance in progress', async () => {
  const h = new Harness();
  const { a } = await stableGroupOfTwo(h);
  assert.equal((await h.sync(3, 'g', 'nobody', 1)).errorCode, ErrorCode.UNKNOWN_MEMBER_ID);
  assert.equal((await h.sync(3, 'g', a.memberId, 7)).errorCode, ErrorCode.ILLEGAL_GENERATION);
  assert.equal((await h.sync(3, 'nogroup', a.memberId, 1)).errorCode, ErrorCode.UNKNOWN_MEMBER_ID);
  void h.join(3, { memberId: a.memberId });
  await h.advance(0);
  assert.equal((await h.sync(3, 'g', a.memberId, 1)).errorCode, ErrorCode.REBALANCE_IN_PROGRESS);
});

test('unloading a partition answers parked joins with NOT_COORDINATOR; a loading partition answers COORDINATOR_LOAD_IN_PROGRESS', async () => {
  const h = new Harness();
  await h.loadAll();
  const j = h.join(3, {});
  await h.advance(0);
  h.coordinator.unload(h.coordinator.partitionFor('g'));
  const r = await j;
  assert.equal(r.errorCode, ErrorCode.NOT_COORDINATOR);
  assert.equal((await h.join(3, {})).errorCode, ErrorCode.NOT_COORDINATOR);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  async function* slowReplay(): AsyncGenerator<{ key: Buffer; value: Buffer | null }> {
    await gate;
    yield* [];
  }
  const loading = h.coordinator.load(h.coordinator.partitionFor('g'), slowReplay());
  assert.equal((await h.join(3, {})).errorCode, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
  assert.equal(
    await h.heartbeat('g', 'm', 1),
    ErrorCode.NONE,
    'heartbeats are answered blindly while loading',
  );
  assert.equal((await h.sync(3, 'g', 'm', 1)).errorCode, ErrorCode.REBALANCE_IN_PROGRESS);
  release();
  await loading;
  assert.deepEqual(
    h.coordinator.ownedPartitions().sort((x, y) => x - y),
    [...Array(50).keys()],
  );
});

test('a failed assignment write answers every parked SyncGroup with the error and starts a new rebalance', async () => {
  const h = new Harness();
  await h.loadAll();
  const ja = h.join(3, {});
  const jb = h.join(3, {});
  await h.advance(6_000);
  const [a, b] = await Promise.all([ja, jb]);
  const sb = h.sync(3, 'g', b.memberId, 1);
  h.log.failWith = KafkaError.fromCode(ErrorCode.NOT_LEADER_OR_FOLLOWER);
  const sa = h.sync(3, 'g', a.memberId, 1, [{ memberId: b.memberId, assignment: B }]);
  const [ra, rb] = await Promise.all([sa, sb]);
  assert.equal(ra.errorCode, ErrorCode.NOT_COORDINATOR);
  assert.equal(rb.errorCode, ErrorCode.NOT_COORDINATOR);
  assert.deepEqual(rb.assignment, Buffer.alloc(0));
  assert.equal(h.coordinator.groupState('g'), 'PreparingRebalance');
});

test('a second JoinGroup from a parked member answers the first one, so no request is left hanging', async () => {
  const h = new Harness();
  const { a, b } = await stableGroupOfTwo(h);
  const first = h.join(3, { memberId: a.memberId });
  await h.advance(0);
  const second = h.join(3, { memberId: a.memberId });
  assert.equal((await first).errorCode, ErrorCode.REBALANCE_IN_PROGRESS);
  const rb = h.join(3, { memberId: b.memberId });
  const [ra2, rb2] = await Promise.all([second, rb]);
  assert.equal(ra2.generationId, 2);
  assert.equal(rb2.generationId, 2);
});

test('DescribeGroups during a rebalance lists members without metadata or assignment', async () => {
  const h = new Harness();
  const { a } = await stableGroupOfTwo(h);
  void h.join(3, { memberId: a.memberId });
  await h.advance(0);
  const d = await h.call<DescribeGroupsResponse>('describeGroups', 1, {
    groups: ['g'],
    includeAuthorizedOperations: false,
  });
  const g = d.groups[0]!;
  assert.equal(g.groupState, 'PreparingRebalance');
  assert.equal(g.protocolData, '');
  assert.deepEqual(
    g.members.map((m) => [m.memberMetadata.length, m.memberAssignment.length]),
    [
      [0, 0],
      [0, 0],
    ],
  );
});
