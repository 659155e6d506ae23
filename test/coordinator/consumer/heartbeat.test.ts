/**
 * ConsumerGroupHeartbeat through the GroupCoordinator with an in-memory __consumer_offsets and a
 * manual clock: joins, revocation before assignment, leaving, session expiry, static members,
 * the heartbeat's errors, offset commits at member epochs, and a reload from the log.
 */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TopicsImage } from '../../../src/coordinator/consumer/subscriptions.js';
import type { ConsumerGroupDescribeResponse } from '../../../src/protocol/generated/ConsumerGroupDescribeResponse.js';
import {
  type ConsumerGroupHeartbeatRequest,
  defaultConsumerGroupHeartbeatRequest,
} from '../../../src/protocol/generated/ConsumerGroupHeartbeatRequest.js';
import type { ConsumerGroupHeartbeatResponse } from '../../../src/protocol/generated/ConsumerGroupHeartbeatResponse.js';
import type { ListGroupsResponse } from '../../../src/protocol/generated/ListGroupsResponse.js';
import type { OffsetCommitResponse } from '../../../src/protocol/generated/OffsetCommitResponse.js';
import { commitOne, ErrorCode, Harness, MemoryCoordinatorLog } from '../helpers.js';

const TOPIC_ID = 'AAAAAAAAAAAAAAAAAAAAAQ';
const GROUP = 'g';

function topics(partitions: number, version = 1): TopicsImage {
  return {
    version,
    topics: new Map([['t', { topicId: TOPIC_ID, numPartitions: partitions, internal: false }]]),
  };
}

class Members {
  image = topics(6);
  readonly h: Harness;
  constructor(log?: MemoryCoordinatorLog, config: Record<string, unknown> = {}) {
    this.h = new Harness(
      {
        topics: () => this.image,
        config: { consumerGroupSessionTimeoutMs: 10_000, consumerGroupHeartbeatIntervalMs: 1_000, ...config },
      },
      log,
    );
  }
  hb(req: Partial<ConsumerGroupHeartbeatRequest>): Promise<ConsumerGroupHeartbeatResponse> {
    return this.h.call('consumerGroupHeartbeat', 1, {
      ...defaultConsumerGroupHeartbeatRequest(),
      groupId: GROUP,
      ...req,
    });
  }
  join(extra: Partial<ConsumerGroupHeartbeatRequest> = {}) {
    return this.hb({
      memberEpoch: 0,
      rebalanceTimeoutMs: 30_000,
      subscribedTopicNames: ['t'],
      topicPartitions: [],
      ...extra,
    });
  }
}

const parts = (r: ConsumerGroupHeartbeatResponse) =>
  (r.assignment?.topicPartitions ?? []).flatMap((t) => t.partitions).sort((a, b) => a - b);
const owned = (p: number[]) => [{ topicId: TOPIC_ID, partitions: p }];

test('members join, the first gives up what the second gets, and only after revoking it', async () => {
  const m = new Members();
  await m.h.loadAll();
  const a = await m.join();
  assert.equal(a.errorCode, ErrorCode.NONE);
  assert.equal(a.memberEpoch, 1);
  assert.equal(a.heartbeatIntervalMs, 1_000);
  assert.deepEqual(parts(a), [0, 1, 2, 3, 4, 5]);
  const b = await m.join();
  assert.equal(b.memberEpoch, 2);
  // b's partitions are still a's: none yet.
  assert.deepEqual(parts(b), []);
  // a heartbeats still owning everything: asked to revoke three, stays at epoch 1.
  const a2 = await m.hb({
    memberId: a.memberId!,
    memberEpoch: 1,
    topicPartitions: owned([0, 1, 2, 3, 4, 5]),
  });
  assert.equal(a2.memberEpoch, 1);
  const kept = parts(a2);
  assert.equal(kept.length, 3);
  const b2 = await m.hb({ memberId: b.memberId!, memberEpoch: 2, topicPartitions: [] });
  assert.equal(b2.assignment, null, 'nothing released yet');
  // a acknowledges the revocation: epoch 2, and b gets the released partitions.
  const a3 = await m.hb({ memberId: a.memberId!, memberEpoch: 1, topicPartitions: owned(kept) });
  assert.equal(a3.memberEpoch, 2);
  const b3 = await m.hb({ memberId: b.memberId!, memberEpoch: 2, topicPartitions: [] });
  assert.deepEqual(
    parts(b3),
    [0, 1, 2, 3, 4, 5].filter((p) => !kept.includes(p)),
  );
  const d = await m.h.call<ConsumerGroupDescribeResponse>('consumerGroupDescribe', 0, {
    groupIds: [GROUP],
    includeAuthorizedOperations: false,
  });
  assert.equal(d.groups[0]!.groupState, 'Stable');
  assert.equal(d.groups[0]!.groupEpoch, 2);
  assert.equal(d.groups[0]!.assignorName, 'uniform');
  const list = await m.h.call<ListGroupsResponse>('listGroups', 5, {
    statesFilter: [],
    typesFilter: ['consumer'],
  });
  assert.deepEqual(
    list.groups.map((g) => [g.groupId, g.groupType, g.groupState]),
    [[GROUP, 'consumer', 'Stable']],
  );
  const classic = await m.h.call<ListGroupsResponse>('listGroups', 5, {
    statesFilter: [],
    typesFilter: ['classic'],
  });
  assert.deepEqual(classic.groups, []);
});

test('a leaving or silent member’s partitions go to the others; stale epochs are fenced', async () => {
  const m = new Members();
  await m.h.loadAll();
  const a = await m.join();
  const b = await m.join();
  const a2 = await m.hb({ memberId: a.memberId!, memberEpoch: 1, topicPartitions: owned(parts(a)) });
  await m.hb({ memberId: a.memberId!, memberEpoch: 1, topicPartitions: owned(parts(a2)) });
  const left = await m.hb({ memberId: b.memberId!, memberEpoch: -1 });
  assert.equal(left.memberEpoch, -1);
  const a4 = await m.hb({ memberId: a.memberId!, memberEpoch: 2, topicPartitions: owned(parts(a2)) });
  assert.equal(a4.memberEpoch, 3);
  assert.deepEqual(parts(a4), [0, 1, 2, 3, 4, 5]);
  const fenced = await m.hb({ memberId: a.memberId!, memberEpoch: 7, topicPartitions: owned([]) });
  assert.equal(fenced.errorCode, ErrorCode.FENCED_MEMBER_EPOCH);
  const unknown = await m.hb({ memberId: b.memberId!, memberEpoch: 2 });
  assert.equal(unknown.errorCode, ErrorCode.UNKNOWN_MEMBER_ID);
  // a goes silent: fenced after the session timeout, the group empties.
  await m.h.advance(10_001);
  const after = await m.hb({ memberId: a.memberId!, memberEpoch: 3 });
  assert.equal(after.errorCode, ErrorCode.UNKNOWN_MEMBER_ID);
});

test('more partitions on a subscribed topic start a new assignment', async () => {
  const m = new Members();
  await m.h.loadAll();
  const a = await m.join();
  m.image = topics(8, 2);
  const a2 = await m.hb({ memberId: a.memberId!, memberEpoch: 1, topicPartitions: owned(parts(a)) });
  assert.equal(a2.memberEpoch, 2);
  assert.deepEqual(parts(a2), [0, 1, 2, 3, 4, 5, 6, 7]);
});

test('regex subscriptions match whole topic names', async () => {
  const m = new Members();
  m.image = {
    version: 1,
    topics: new Map([
      ['orders-eu', { topicId: TOPIC_ID, numPartitions: 2, internal: false }],
      ['orders-eu-dlq', { topicId: 'AAAAAAAAAAAAAAAAAAAAAg', numPartitions: 2, internal: false }],
      ['__consumer_offsets', { topicId: 'AAAAAAAAAAAAAAAAAAAAAw', numPartitions: 2, internal: true }],
    ]),
  };
  await m.h.loadAll();
  const a = await m.join({ subscribedTopicNames: null, subscribedTopicRegex: 'orders-[a-z]+|__.*' });
  assert.deepEqual(
    a.assignment?.topicPartitions.map((t) => t.topicId),
    [TOPIC_ID],
  );
  const bad = await m.join({ subscribedTopicNames: null, subscribedTopicRegex: '(' });
  assert.equal(bad.errorCode, ErrorCode.INVALID_REGULAR_EXPRESSION);
});

test('the heartbeat’s request errors', async () => {
  const m = new Members(undefined, { consumerGroupMaxSize: 1 });
  await m.h.loadAll();
  assert.equal((await m.join({ topicPartitions: null })).errorCode, ErrorCode.INVALID_REQUEST);
  assert.equal((await m.join({ rebalanceTimeoutMs: -1 })).errorCode, ErrorCode.INVALID_REQUEST);
  assert.equal((await m.join({ memberEpoch: -3 })).errorCode, ErrorCode.INVALID_REQUEST);
  assert.equal((await m.join({ serverAssignor: 'sticky' })).errorCode, ErrorCode.UNSUPPORTED_ASSIGNOR);
  assert.equal((await m.join({ serverAssignor: 'range' })).errorCode, ErrorCode.NONE);
  assert.equal((await m.join()).errorCode, ErrorCode.GROUP_MAX_SIZE_REACHED);
});

test('a static member leaves for a while and comes back to its partitions; its id is not free meanwhile', async () => {
  const m = new Members();
  await m.h.loadAll();
  const a = await m.join({ instanceId: 'i1' });
  const taken = await m.join({ instanceId: 'i1' });
  assert.equal(taken.errorCode, ErrorCode.UNRELEASED_INSTANCE_ID);
  const away = await m.hb({ memberId: a.memberId!, memberEpoch: -2, instanceId: 'i1' });
  assert.equal(away.memberEpoch, -2);
  const back = await m.join({ instanceId: 'i1' });
  assert.equal(back.errorCode, ErrorCode.NONE);
  assert.notEqual(back.memberId, a.memberId);
  assert.deepEqual(parts(back), [0, 1, 2, 3, 4, 5]);
  assert.equal(back.memberEpoch, 1, 'no new group epoch for the same subscription');
});

test('offsets commit at the member epoch; the group and its offsets come back from the log', async () => {
  const log = new MemoryCoordinatorLog();
  const m = new Members(log);
  await m.h.loadAll();
  const a = await m.join();
  const commit = (epoch: number) =>
    m.h.call<OffsetCommitResponse>('offsetCommit', 9, commitOne(GROUP, epoch, a.memberId!, 42n));
  assert.equal((await commit(0)).topics[0]!.partitions[0]!.errorCode, ErrorCode.STALE_MEMBER_EPOCH);
  assert.equal((await commit(1)).topics[0]!.partitions[0]!.errorCode, ErrorCode.NONE);

  const m2 = new Members(log);
  await m2.h.loadAll();
  const again = await m2.hb({ memberId: a.memberId!, memberEpoch: 1, topicPartitions: owned(parts(a)) });
  assert.equal(again.errorCode, ErrorCode.NONE);
  assert.equal(again.memberEpoch, 1);
  const d = await m2.h.call<ConsumerGroupDescribeResponse>('consumerGroupDescribe', 0, {
    groupIds: [GROUP],
    includeAuthorizedOperations: false,
  });
  assert.equal(d.groups[0]!.groupEpoch, 1);
  assert.deepEqual(d.groups[0]!.members[0]!.assignment.topicPartitions[0]!.partitions, [0, 1, 2, 3, 4, 5]);
});

test('an empty classic group becomes a consumer group; a classic member cannot join a consumer group', async () => {
  const m = new Members();
  await m.h.loadAll();
  const standalone = await m.h.call<OffsetCommitResponse>('offsetCommit', 8, commitOne(GROUP, -1, '', 5n));
  assert.equal(standalone.topics[0]!.partitions[0]!.errorCode, ErrorCode.NONE);
  const a = await m.join();
  assert.equal(a.errorCode, ErrorCode.NONE);
  const classic = await m.h.join(5, { groupId: GROUP, memberId: '' });
  assert.equal(classic.errorCode, ErrorCode.GROUP_ID_NOT_FOUND);
});

test('a member that does not revoke within its rebalance timeout is fenced; the other gets the partitions', async () => {
  const m = new Members();
  await m.h.loadAll();
  const a = await m.join({ rebalanceTimeoutMs: 5_000 });
  const b = await m.join();
  // a is asked to revoke half and keeps heartbeating without doing it.
  const asked = await m.hb({ memberId: a.memberId!, memberEpoch: 1, topicPartitions: owned(parts(a)) });
  assert.equal(parts(asked).length, 3);
  await m.h.advance(5_001);
  const fenced = await m.hb({ memberId: a.memberId!, memberEpoch: 1, topicPartitions: owned(parts(a)) });
  assert.equal(fenced.errorCode, ErrorCode.UNKNOWN_MEMBER_ID);
  const b2 = await m.hb({ memberId: b.memberId!, memberEpoch: 2, topicPartitions: [] });
  assert.deepEqual(parts(b2), [0, 1, 2, 3, 4, 5]);
});
