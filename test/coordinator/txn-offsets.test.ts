import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { coordinatorBatch, recordsInBatches } from '../../src/coordinator/batches.js';
import { offsetCommitRecord } from '../../src/coordinator/records.js';
import type { OffsetCommitResponse } from '../../src/protocol/generated/OffsetCommitResponse.js';
import type { OffsetFetchResponse } from '../../src/protocol/generated/OffsetFetchResponse.js';
import type { TxnOffsetCommitResponse } from '../../src/protocol/generated/TxnOffsetCommitResponse.js';
import { KafkaError } from '../../src/protocol/kafka-error.js';
import { isControl, isTransactional, readBatchHeader } from '../../src/protocol/records/batch.js';
import { encodeEndTxnMarkerBatch } from '../../src/protocol/records/end-txn-marker.js';
import { commitOne, ErrorCode, Harness } from './helpers.js';

const PID = 4000n;

interface TxnArgs {
  groupId?: string;
  producerId?: bigint;
  producerEpoch?: number;
  generationId?: number;
  memberId?: string;
  groupInstanceId?: string | null;
  partitions?: { topic: string; partition: number; offset: bigint; metadata?: string }[];
}

async function txnCommit(h: Harness, version: number, a: TxnArgs = {}): Promise<number[]> {
  const byTopic = new Map<
    string,
    {
      partitionIndex: number;
      committedOffset: bigint;
      committedLeaderEpoch: number;
      committedMetadata: string | null;
    }[]
  >();
  for (const p of a.partitions ?? [{ topic: 't', partition: 0, offset: 10n }]) {
    const list = byTopic.get(p.topic) ?? [];
    list.push({
      partitionIndex: p.partition,
      committedOffset: p.offset,
      committedLeaderEpoch: 3,
      committedMetadata: p.metadata ?? 'm',
    });
    byTopic.set(p.topic, list);
  }
  const r = await h.call<TxnOffsetCommitResponse>('txnOffsetCommit', version, {
    transactionalId: 'tx',
    groupId: a.groupId ?? 'g',
    producerId: a.producerId ?? PID,
    producerEpoch: a.producerEpoch ?? 0,
    generationId: a.generationId ?? -1,
    memberId: a.memberId ?? '',
    groupInstanceId: a.groupInstanceId ?? null,
    topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })),
  });
  return r.topics.flatMap((t) => t.partitions.map((p) => p.errorCode));
}

/** OffsetFetch v7 for t-0 (and t-1): [offset, error] per partition. */
async function fetch(h: Harness, requireStable: boolean, groupId = 'g'): Promise<[bigint, number][]> {
  const r = await h.call<OffsetFetchResponse>('offsetFetch', 7, {
    groupId,
    topics: [{ name: 't', partitionIndexes: [0, 1] }],
    groups: [],
    requireStable,
  });
  assert.equal(r.errorCode, ErrorCode.NONE);
  return r.topics[0]!.partitions.map((p) => [p.committedOffset, p.errorCode]);
}

function marker(h: Harness, producerId: bigint, commit: boolean, groupId = 'g'): number {
  const p = h.coordinator.partitionFor(groupId);
  h.log.appendMarker(p, producerId, commit);
  return h.coordinator.onTransactionMarker(p, producerId, 0, commit);
}

test('a transactional commit is pending until its COMMIT marker; requireStable sees UNSTABLE_OFFSET_COMMIT', async () => {
  const h = new Harness();
  await h.loadAll();
  assert.deepEqual(await txnCommit(h, 3), [ErrorCode.NONE]);
  const stored = h.log.partition(h.coordinator.partitionFor('g'));
  assert.equal(stored.length, 1);
  assert.equal(stored[0]!.transactional, true, 'written as a transactional batch');
  assert.equal(stored[0]!.producerId, PID);
  assert.deepEqual(await fetch(h, false), [
    [-1n, ErrorCode.NONE],
    [-1n, ErrorCode.NONE],
  ]);
  assert.deepEqual(await fetch(h, true), [
    [-1n, ErrorCode.UNSTABLE_OFFSET_COMMIT],
    [-1n, ErrorCode.NONE],
  ]);
  // Another producer's marker, or a marker on another partition, completes nothing.
  assert.equal(marker(h, PID + 1n, true), 0);
  assert.equal(h.coordinator.onTransactionMarker(h.coordinator.partitionFor('g') + 1, PID, 0, true), 0);
  assert.equal(marker(h, PID, true), 1);
  assert.deepEqual(await fetch(h, true), [
    [10n, ErrorCode.NONE],
    [-1n, ErrorCode.NONE],
  ]);
});

test('an ABORT marker drops the transaction offsets and keeps the committed ones', async () => {
  const h = new Harness();
  await h.loadAll();
  await txnCommit(h, 3, { partitions: [{ topic: 't', partition: 0, offset: 5n }] });
  marker(h, PID, true);
  await txnCommit(h, 3, {
    partitions: [
      { topic: 't', partition: 0, offset: 9n },
      { topic: 't', partition: 1, offset: 9n },
    ],
  });
  assert.equal(marker(h, PID, false), 0);
  assert.deepEqual(await fetch(h, true), [
    [5n, ErrorCode.NONE],
    [-1n, ErrorCode.NONE],
  ]);
});

test('generation and member are checked (v3+), older versions carry none; bad input gets Kafka errors', async () => {
  const h = new Harness();
  await h.loadAll();
  const j = h.join(3, {});
  await h.advance(6_000);
  const m = await j;
  // Between JoinGroup and SyncGroup a transactional commit is taken (Kafka checks no state here).
  assert.deepEqual(await txnCommit(h, 3, { generationId: 1, memberId: m.memberId }), [ErrorCode.NONE]);
  assert.deepEqual(await txnCommit(h, 3, { generationId: 2, memberId: m.memberId }), [
    ErrorCode.ILLEGAL_GENERATION,
  ]);
  assert.deepEqual(await txnCommit(h, 3, { generationId: 1, memberId: 'stranger' }), [
    ErrorCode.UNKNOWN_MEMBER_ID,
  ]);
  assert.deepEqual(await txnCommit(h, 3, { generationId: 1, memberId: m.memberId, groupInstanceId: 'i' }), [
    ErrorCode.UNKNOWN_MEMBER_ID,
  ]);
  // v0-v2 have no generation or member: a group with members takes them (pre-KIP-447 producers).
  assert.deepEqual(await txnCommit(h, 2), [ErrorCode.NONE]);
  assert.deepEqual(await txnCommit(h, 3, { groupId: '' }), [ErrorCode.INVALID_GROUP_ID]);
  const unknown = new Harness({ partitionExists: (t) => t === 't' });
  await unknown.loadAll();
  assert.deepEqual(
    await txnCommit(unknown, 3, {
      partitions: [
        { topic: 'gone', partition: 0, offset: 1n },
        { topic: 't', partition: 0, offset: 1n, metadata: 'x'.repeat(5000) },
        { topic: 't', partition: 1, offset: 1n },
      ],
    }),
    [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.OFFSET_METADATA_TOO_LARGE, ErrorCode.NONE],
  );
  assert.equal(unknown.log.partition(unknown.coordinator.partitionFor('g')).length, 1, 'one record written');
});

test('v0-v1 see COORDINATOR_NOT_AVAILABLE where v2+ see COORDINATOR_LOAD_IN_PROGRESS; a failed append is not pending', async () => {
  const h = new Harness();
  const p = h.coordinator.partitionFor('g');
  let release = () => {};
  const loading = h.coordinator.load(
    p,
    (async function* () {
      await new Promise<void>((r) => {
        release = r;
      });
      yield* [];
    })(),
  );
  assert.deepEqual(await txnCommit(h, 1), [ErrorCode.COORDINATOR_NOT_AVAILABLE]);
  assert.deepEqual(await txnCommit(h, 2), [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]);
  release();
  await loading;
  h.log.failWith = KafkaError.fromCode(ErrorCode.NOT_LEADER_OR_FOLLOWER, 'moved');
  assert.deepEqual(await txnCommit(h, 3), [ErrorCode.NOT_COORDINATOR]);
  h.log.failWith = KafkaError.fromCode(ErrorCode.INVALID_PRODUCER_EPOCH, 'fenced');
  assert.deepEqual(await txnCommit(h, 3), [ErrorCode.INVALID_PRODUCER_EPOCH]);
  assert.deepEqual(await fetch(h, true), [
    [-1n, ErrorCode.NONE],
    [-1n, ErrorCode.NONE],
  ]);
  assert.equal(h.coordinator.groupState('g'), undefined, 'the group the failed commit created is gone');
});

test('a reload replays transactions: committed ones applied, aborted dropped, open ones pending until their marker', async () => {
  const first = new Harness();
  await first.loadAll();
  await txnCommit(first, 3, { producerId: 1n, partitions: [{ topic: 't', partition: 0, offset: 100n }] });
  await txnCommit(first, 3, { producerId: 2n, partitions: [{ topic: 't', partition: 1, offset: 200n }] });
  marker(first, 1n, true);
  await txnCommit(first, 3, { producerId: 3n, partitions: [{ topic: 't', partition: 1, offset: 300n }] });
  marker(first, 3n, false);
  // Producer 2's transaction is still open.
  const h = new Harness({}, first.log);
  await h.loadAll();
  assert.deepEqual(await fetch(h, true), [
    [100n, ErrorCode.NONE],
    [-1n, ErrorCode.UNSTABLE_OFFSET_COMMIT],
  ]);
  assert.equal(marker(h, 2n, true), 1);
  assert.deepEqual(await fetch(h, true), [
    [100n, ErrorCode.NONE],
    [200n, ErrorCode.NONE],
  ]);
  // And once more from the log, with the marker in it: the same state.
  const again = new Harness({}, first.log);
  await again.loadAll();
  assert.deepEqual(await fetch(again, true), await fetch(h, true));
});

test('a COMMIT marker does not overwrite an offset committed by a later batch, in memory and on replay', async () => {
  const h = new Harness();
  await h.loadAll();
  await txnCommit(h, 3, { partitions: [{ topic: 't', partition: 0, offset: 7n }] });
  const plain = await h.call<OffsetCommitResponse>('offsetCommit', 2, commitOne('g', -1, '', 50n));
  assert.equal(plain.topics[0]!.partitions[0]!.errorCode, ErrorCode.NONE);
  assert.equal(marker(h, PID, true), 0);
  assert.deepEqual((await fetch(h, false))[0], [50n, ErrorCode.NONE]);
  const reloaded = new Harness({}, h.log);
  await reloaded.loadAll();
  assert.deepEqual((await fetch(reloaded, false))[0], [50n, ErrorCode.NONE]);
});

test('transactional batches and markers travel through __consumer_offsets batches to the replay', () => {
  const record = offsetCommitRecord('g', 't', 0, {
    offset: 12n,
    leaderEpoch: -1,
    metadata: '',
    commitTimestampMs: 1n,
    expireTimestampMs: -1n,
  });
  const data = coordinatorBatch([record], 1_000, { producerId: 77n, producerEpoch: 2 });
  const h = readBatchHeader(data, 0);
  assert.ok(isTransactional(h.attributes));
  assert.deepEqual([h.producerId, h.producerEpoch, h.baseSequence], [77n, 2, 0]);
  const commit = encodeEndTxnMarkerBatch({
    producerId: 77n,
    producerEpoch: 2,
    coordinatorEpoch: 5,
    commit: true,
    timestamp: 1_001n,
  });
  commit.writeBigInt64BE(1n, 0);
  assert.ok(isControl(readBatchHeader(commit, 0).attributes));
  const replayed = [...recordsInBatches(Buffer.concat([data, commit]))];
  assert.equal(replayed.length, 2);
  assert.deepEqual(
    replayed.map((r) => [r.batchOffset, r.producerId, r.transactional, r.marker]),
    [
      [0n, 77n, true, undefined],
      [1n, 77n, undefined, 'COMMIT'],
    ],
  );
});

test('a marker written while the partition loads is applied once the load completes', async () => {
  const first = new Harness();
  await first.loadAll();
  await txnCommit(first, 3, { partitions: [{ topic: 't', partition: 0, offset: 21n }] });
  const p = first.coordinator.partitionFor('g');
  const h = new Harness({}, first.log);
  let release = () => {};
  const records = first.log.replay(p).slice();
  const loading = h.coordinator.load(
    p,
    (async function* () {
      yield* records;
      // The replay has read the log; the marker lands before the load completes.
      await new Promise<void>((r) => {
        release = r;
      });
    })(),
  );
  await new Promise((r) => setImmediate(r));
  first.log.appendMarker(p, PID, true);
  assert.equal(h.coordinator.onTransactionMarker(p, PID, 0, true), 0, 'nothing to apply yet');
  release();
  await loading;
  assert.deepEqual((await fetch(h, true))[0], [21n, ErrorCode.NONE]);
});

test("KIP-890: the commit waits for the coordinator's verification and answers its refusal as Kafka maps it", async () => {
  let answer: number | null = ErrorCode.INVALID_TXN_STATE;
  const asked: [string, bigint, number, number][] = [];
  const h = new Harness({
    verifyTxnPartition: (transactionalId, producerId, producerEpoch, partition) => {
      asked.push([transactionalId, producerId, producerEpoch, partition]);
      return answer === null ? null : Promise.resolve(answer);
    },
  });
  await h.loadAll();
  assert.deepEqual(await txnCommit(h, 3, { producerEpoch: 4 }), [ErrorCode.INVALID_TXN_STATE]);
  assert.deepEqual(asked, [['tx', PID, 4, h.coordinator.partitionFor('g')]]);
  assert.equal(h.log.partition(h.coordinator.partitionFor('g')).length, 0, 'nothing written');
  assert.equal(h.coordinator.groupState('g'), undefined, 'no group left behind');
  answer = ErrorCode.NETWORK_EXCEPTION;
  assert.deepEqual(await txnCommit(h, 3), [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]);
  assert.deepEqual(await txnCommit(h, 1), [ErrorCode.COORDINATOR_NOT_AVAILABLE]);
  answer = ErrorCode.NOT_ENOUGH_REPLICAS;
  assert.deepEqual(await txnCommit(h, 3), [ErrorCode.COORDINATOR_NOT_AVAILABLE]);
  answer = ErrorCode.NONE;
  assert.deepEqual(await txnCommit(h, 3), [ErrorCode.NONE]);
  // Nothing to ask (verification off, or the transaction already wrote here): written at once.
  answer = null;
  assert.deepEqual(await txnCommit(h, 3), [ErrorCode.NONE]);
  assert.equal(h.log.partition(h.coordinator.partitionFor('g')).length, 2);
});
