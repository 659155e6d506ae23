import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeCoordinatorRecord } from '../../src/coordinator/records.js';
import type { OffsetCommitResponse } from '../../src/protocol/generated/OffsetCommitResponse.js';
import type { OffsetFetchResponse } from '../../src/protocol/generated/OffsetFetchResponse.js';
import { KafkaError } from '../../src/protocol/kafka-error.js';
import { ErrorCode, Harness, isSettled } from './helpers.js';

interface CommitArgs {
  groupId?: string;
  generation?: number;
  memberId?: string;
  groupInstanceId?: string | null;
  retentionTimeMs?: bigint;
  partitions?: {
    topic: string;
    partition: number;
    offset: bigint;
    metadata?: string | null;
    leaderEpoch?: number;
  }[];
}

function commitRequest(a: CommitArgs) {
  const topics = new Map<
    string,
    {
      partitionIndex: number;
      committedOffset: bigint;
      committedLeaderEpoch: number;
      commitTimestamp: bigint;
      committedMetadata: string | null;
    }[]
  >();
  for (const p of a.partitions ?? [{ topic: 't', partition: 0, offset: 42n }]) {
    const list = topics.get(p.topic) ?? [];
    list.push({
      partitionIndex: p.partition,
      committedOffset: p.offset,
      committedLeaderEpoch: p.leaderEpoch ?? -1,
      commitTimestamp: -1n,
      committedMetadata: p.metadata === undefined ? 'meta' : p.metadata,
    });
    topics.set(p.topic, list);
  }
  return {
    groupId: a.groupId ?? 'g',
    generationIdOrMemberEpoch: a.generation ?? -1,
    memberId: a.memberId ?? '',
    groupInstanceId: a.groupInstanceId ?? null,
    retentionTimeMs: a.retentionTimeMs ?? -1n,
    topics: [...topics].map(([name, partitions]) => ({ name, partitions })),
  };
}

function commitErrors(r: OffsetCommitResponse): number[] {
  return r.topics.flatMap((t) => t.partitions.map((p) => p.errorCode));
}

async function commit(h: Harness, version: number, a: CommitArgs): Promise<number[]> {
  return commitErrors(await h.call<OffsetCommitResponse>('offsetCommit', version, commitRequest(a)));
}

async function fetchV1(h: Harness, groupId: string, topic: string, partitions: number[]) {
  const r = await h.call<OffsetFetchResponse>('offsetFetch', 1, {
    groupId,
    topics: [{ name: topic, partitionIndexes: partitions }],
    groups: [],
    requireStable: false,
  });
  return r.topics[0]!.partitions.map((p) => [p.partitionIndex, p.committedOffset, p.metadata, p.errorCode]);
}

test('standalone commits (generation -1) create an Empty group; fetch returns them and -1 for the rest', async () => {
  const h = new Harness();
  await h.loadAll();
  assert.deepEqual(
    await commit(h, 2, {
      partitions: [
        { topic: 't', partition: 0, offset: 10n },
        { topic: 't', partition: 1, offset: 11n, metadata: null },
        { topic: 'u', partition: 0, offset: 5n },
      ],
    }),
    [0, 0, 0],
  );
  assert.equal(h.coordinator.groupState('g'), 'Empty');
  assert.deepEqual(await fetchV1(h, 'g', 't', [0, 1, 2]), [
    [0, 10n, 'meta', 0],
    [1, 11n, '', 0],
    [2, -1n, '', 0],
  ]);
  assert.deepEqual(await fetchV1(h, 'unknown-group', 't', [0]), [[0, -1n, '', 0]]);
  // v2+: null topics asks for every committed offset of the group.
  const all = await h.call<OffsetFetchResponse>('offsetFetch', 7, {
    groupId: 'g',
    topics: null,
    groups: [],
    requireStable: false,
  });
  assert.equal(all.errorCode, ErrorCode.NONE);
  assert.deepEqual(
    all.topics.map((t) => [t.name, t.partitions.map((p) => p.committedOffset)]),
    [
      ['t', [10n, 11n]],
      ['u', [5n]],
    ],
  );
});

test('OffsetFetch v8+: several groups in one request, each with its own error', async () => {
  const h = new Harness();
  // Own every partition except the one of "elsewhere".
  const foreign = h.coordinator.partitionFor('elsewhere');
  for (let p = 0; p < 50; p++) if (p !== foreign) await h.coordinator.load(p, []);
  await commit(h, 8, { partitions: [{ topic: 't', partition: 3, offset: 7n, leaderEpoch: 4 }] });
  const r = await h.call<OffsetFetchResponse>('offsetFetch', 8, {
    groupId: '',
    topics: [],
    requireStable: false,
    groups: [
      { groupId: 'g', memberId: null, memberEpoch: -1, topics: null },
      { groupId: 'g', memberId: null, memberEpoch: -1, topics: [{ name: 't', partitionIndexes: [3, 4] }] },
      { groupId: 'elsewhere', memberId: null, memberEpoch: -1, topics: null },
    ],
  });
  assert.deepEqual(
    r.groups.map((g) => [
      g.groupId,
      g.errorCode,
      g.topics.flatMap((t) =>
        t.partitions.map((p) => [t.name, p.partitionIndex, p.committedOffset, p.committedLeaderEpoch]),
      ),
    ]),
    [
      ['g', 0, [['t', 3, 7n, 4]]],
      [
        'g',
        0,
        [
          ['t', 3, 7n, 4],
          ['t', 4, -1n, -1],
        ],
      ],
      ['elsewhere', ErrorCode.NOT_COORDINATOR, []],
    ],
  );
  // Before v8: the error at the top level from v2 on, per partition in v0-v1.
  const v3 = await h.call<OffsetFetchResponse>('offsetFetch', 3, {
    groupId: 'elsewhere',
    topics: [{ name: 't', partitionIndexes: [0] }],
    groups: [],
    requireStable: false,
  });
  assert.deepEqual([v3.errorCode, v3.topics], [ErrorCode.NOT_COORDINATOR, []]);
  assert.deepEqual(await fetchV1(h, 'elsewhere', 't', [0]), [[0, -1n, '', ErrorCode.NOT_COORDINATOR]]);
});

test('member commits are checked against the generation and the membership', async () => {
  const h = new Harness();
  await h.loadAll();
  const ja = h.join(3, {});
  const jb = h.join(3, {});
  await h.advance(6_000);
  const [a, b] = await Promise.all([ja, jb]);
  // Assignment not distributed yet.
  assert.deepEqual(await commit(h, 5, { generation: 1, memberId: a.memberId }), [
    ErrorCode.REBALANCE_IN_PROGRESS,
  ]);
  await Promise.all([h.sync(3, 'g', b.memberId, 1), h.sync(3, 'g', a.memberId, 1)]);
  assert.deepEqual(await commit(h, 5, { generation: 1, memberId: a.memberId }), [ErrorCode.NONE]);
  assert.deepEqual(await commit(h, 5, { generation: 2, memberId: a.memberId }), [
    ErrorCode.ILLEGAL_GENERATION,
  ]);
  assert.deepEqual(await commit(h, 5, { generation: 1, memberId: 'stranger' }), [
    ErrorCode.UNKNOWN_MEMBER_ID,
  ]);
  // A standalone commit into a group with members is refused: it has no member id.
  assert.deepEqual(await commit(h, 5, { generation: -1 }), [ErrorCode.UNKNOWN_MEMBER_ID]);
  // A generation for a group the coordinator does not know is stale.
  assert.deepEqual(await commit(h, 5, { groupId: 'other', generation: 3, memberId: 'm' }), [
    ErrorCode.ILLEGAL_GENERATION,
  ]);
  // During PreparingRebalance commits of the current generation are still taken.
  void h.join(3, { memberId: a.memberId });
  await h.advance(0);
  assert.equal(h.coordinator.groupState('g'), 'PreparingRebalance');
  assert.deepEqual(
    await commit(h, 5, {
      generation: 1,
      memberId: b.memberId,
      partitions: [{ topic: 't', partition: 0, offset: 43n }],
    }),
    [ErrorCode.NONE],
  );
  assert.deepEqual(await fetchV1(h, 'g', 't', [0]), [[0, 43n, 'meta', 0]]);
});

test('per-partition errors: metadata too large, unknown partitions; the rest is committed', async () => {
  const h = new Harness({ partitionExists: (topic) => topic !== 'missing' });
  await h.loadAll();
  const errors = await commit(h, 3, {
    partitions: [
      { topic: 't', partition: 0, offset: 1n, metadata: 'x'.repeat(4_097) },
      { topic: 't', partition: 1, offset: 2n, metadata: 'x'.repeat(4_096) },
      { topic: 'missing', partition: 0, offset: 3n },
    ],
  });
  assert.deepEqual(errors, [
    ErrorCode.OFFSET_METADATA_TOO_LARGE,
    ErrorCode.NONE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  ]);
  assert.deepEqual(
    (await fetchV1(h, 'g', 't', [0, 1])).map((p) => p[1]),
    [-1n, 2n],
  );
});

test('a commit is acknowledged only after its append resolves, and is invisible until then', async () => {
  const h = new Harness();
  await h.loadAll();
  h.log.hold = true;
  const pending = commit(h, 2, {});
  assert.equal(await isSettled(pending), false);
  assert.equal(h.log.heldCount, 1);
  assert.deepEqual(await fetchV1(h, 'g', 't', [0]), [[0, -1n, '', 0]]);
  h.log.release();
  assert.deepEqual(await pending, [ErrorCode.NONE]);
  assert.deepEqual(await fetchV1(h, 'g', 't', [0]), [[0, 42n, 'meta', 0]]);
});

test('append failures map to Kafka errors and leave the offsets untouched', async () => {
  const h = new Harness();
  await h.loadAll();
  h.log.failWith = KafkaError.fromCode(ErrorCode.NOT_LEADER_OR_FOLLOWER);
  assert.deepEqual(await commit(h, 2, {}), [ErrorCode.NOT_COORDINATOR]);
  h.log.failWith = KafkaError.fromCode(ErrorCode.MESSAGE_TOO_LARGE);
  assert.deepEqual(await commit(h, 2, {}), [ErrorCode.INVALID_COMMIT_OFFSET_SIZE]);
  h.log.failWith = KafkaError.fromCode(ErrorCode.NOT_ENOUGH_REPLICAS);
  assert.deepEqual(await commit(h, 2, {}), [ErrorCode.COORDINATOR_NOT_AVAILABLE]);
  h.log.failWith = new Error('disk on fire');
  assert.deepEqual(await commit(h, 2, {}), [ErrorCode.UNKNOWN_SERVER_ERROR]);
  assert.equal(
    h.coordinator.groupState('g'),
    undefined,
    'the group created for the failed commit is dropped',
  );
  h.log.failWith = null;
  assert.deepEqual(await fetchV1(h, 'g', 't', [0]), [[0, -1n, '', 0]]);
});

test('records written: value v3 normally, v1 with an expire timestamp when v2-v4 ask for a retention', async () => {
  const h = new Harness();
  await h.loadAll();
  await commit(h, 6, { partitions: [{ topic: 't', partition: 0, offset: 9n, leaderEpoch: 2 }] });
  await commit(h, 2, { partitions: [{ topic: 't', partition: 1, offset: 8n }], retentionTimeMs: 60_000n });
  const records = h.log.partition(h.coordinator.partitionFor('g'));
  assert.equal(records.length, 2);
  assert.equal(records[0]!.key.readInt16BE(0), 1, 'OffsetCommitKey v1');
  assert.equal(records[0]!.value!.readInt16BE(0), 3, 'OffsetCommitValue v3');
  assert.equal(records[1]!.value!.readInt16BE(0), 1, 'OffsetCommitValue v1');
  const now = BigInt(h.clock.nowMs());
  const v0 = decodeCoordinatorRecord(records[0]!.key, records[0]!.value);
  const v1 = decodeCoordinatorRecord(records[1]!.key, records[1]!.value);
  assert.deepEqual(v0, {
    type: 'offset',
    group: 'g',
    topic: 't',
    partition: 0,
    value: { offset: 9n, leaderEpoch: 2, metadata: 'meta', commitTimestampMs: now, expireTimestampMs: -1n },
  });
  assert.deepEqual(v1, {
    type: 'offset',
    group: 'g',
    topic: 't',
    partition: 1,
    value: {
      offset: 8n,
      leaderEpoch: -1,
      metadata: 'meta',
      commitTimestampMs: now,
      expireTimestampMs: now + 60_000n,
    },
  });
});

test('offset retention: an empty group loses its offsets once empty for offsets.retention.ms, then the group goes', async () => {
  const retentionMs = 60 * 60 * 1000;
  const h = new Harness({
    config: { offsetsRetentionMs: retentionMs, offsetsRetentionCheckIntervalMs: 600_000 },
  });
  await h.loadAll();
  await commit(h, 2, { groupId: 'standalone' });
  const j = h.join(3, {});
  await h.advance(3_000);
  const m = await j;
  await h.sync(3, 'g', m.memberId, 1);
  await commit(h, 2, { generation: 1, memberId: m.memberId });
  // The member leaves at t=3 s: the group is Empty from then on.
  await h.call('leaveGroup', 1, { groupId: 'g', memberId: m.memberId, members: [] });
  await h.advance(0);
  assert.equal(h.coordinator.groupState('g'), 'Empty');
  assert.equal(await h.coordinator.cleanupExpiredOffsets(), 0);
  h.clock.advance(retentionMs - 3_000);
  // The standalone offsets were committed at t=0: exactly one retention ago.
  assert.equal(await h.coordinator.cleanupExpiredOffsets(), 1);
  assert.equal(h.coordinator.groupState('standalone'), undefined);
  assert.equal(h.coordinator.groupState('g'), 'Empty');
  h.clock.advance(3_000);
  assert.equal(await h.coordinator.cleanupExpiredOffsets(), 1);
  assert.equal(h.coordinator.groupState('g'), undefined);
  // Tombstones for the offsets and the group metadata are in the log.
  const last = h.log.partition(h.coordinator.partitionFor('g')).slice(-2);
  assert.deepEqual(
    last.map((r) => [decodeCoordinatorRecord(r.key, r.value).type, r.value]),
    [
      ['offset', null],
      ['group', null],
    ],
  );
});

test('deleting a topic deletes its offsets in every group, with tombstones', async () => {
  const h = new Harness();
  await h.loadAll();
  await commit(h, 2, {
    partitions: [
      { topic: 'gone', partition: 0, offset: 1n },
      { topic: 'gone', partition: 1, offset: 2n },
      { topic: 'kept', partition: 0, offset: 3n },
    ],
  });
  await commit(h, 2, { groupId: 'other', partitions: [{ topic: 'gone', partition: 0, offset: 4n }] });
  assert.equal(await h.coordinator.onTopicsDeleted(['gone']), 3);
  assert.deepEqual(await fetchV1(h, 'g', 'gone', [0, 1]), [
    [0, -1n, '', 0],
    [1, -1n, '', 0],
  ]);
  assert.deepEqual(await fetchV1(h, 'g', 'kept', [0]), [[0, 3n, 'meta', 0]]);
  const replayed = new Harness({}, h.log);
  await replayed.loadAll();
  assert.deepEqual(await fetchV1(replayed, 'other', 'gone', [0]), [[0, -1n, '', 0]]);
  assert.deepEqual(await fetchV1(replayed, 'g', 'kept', [0]), [[0, 3n, 'meta', 0]]);
});
