/**
 * The broker's own group coordinator on __consumer_offsets: created on the first FindCoordinator
 * (COORDINATOR_NOT_AVAILABLE until then), offsets written as the partition leader and replayed
 * after a restart.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { AddOffsetsToTxnResponse } from '../../src/protocol/generated/AddOffsetsToTxnResponse.js';
import type { CreateTopicsResponse } from '../../src/protocol/generated/CreateTopicsResponse.js';
import type { DeleteTopicsResponse } from '../../src/protocol/generated/DeleteTopicsResponse.js';
import { defaultFindCoordinatorRequest } from '../../src/protocol/generated/FindCoordinatorRequest.js';
import type { FindCoordinatorResponse } from '../../src/protocol/generated/FindCoordinatorResponse.js';
import type { InitProducerIdResponse } from '../../src/protocol/generated/InitProducerIdResponse.js';
import { defaultJoinGroupRequest } from '../../src/protocol/generated/JoinGroupRequest.js';
import type { JoinGroupResponse } from '../../src/protocol/generated/JoinGroupResponse.js';
import {
  defaultOffsetCommitRequest,
  defaultOffsetCommitRequestPartition,
} from '../../src/protocol/generated/OffsetCommitRequest.js';
import type { OffsetCommitResponse } from '../../src/protocol/generated/OffsetCommitResponse.js';
import { defaultOffsetFetchRequest } from '../../src/protocol/generated/OffsetFetchRequest.js';
import type { OffsetFetchResponse } from '../../src/protocol/generated/OffsetFetchResponse.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import { defaultSyncGroupRequest } from '../../src/protocol/generated/SyncGroupRequest.js';
import type { SyncGroupResponse } from '../../src/protocol/generated/SyncGroupResponse.js';
import type { TxnOffsetCommitResponse } from '../../src/protocol/generated/TxnOffsetCommitResponse.js';
import { KafkaError } from '../../src/protocol/kafka-error.js';
import { batch, createTopic, startBroker, type TestBroker } from './helpers.js';

const GROUP = 'orders-app';

async function findCoordinator(b: TestBroker, conn: ClientConnection): Promise<FindCoordinatorResponse> {
  return b.call<FindCoordinatorResponse>(conn, 10, 3, { ...defaultFindCoordinatorRequest(), key: GROUP });
}

async function waitForCoordinator(b: TestBroker, conn: ClientConnection): Promise<FindCoordinatorResponse> {
  for (let i = 0; i < 100; i++) {
    const r = await findCoordinator(b, conn);
    if (r.errorCode === 0) return r;
    assert.equal(r.errorCode, 15, 'COORDINATOR_NOT_AVAILABLE while __consumer_offsets has no leaders');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail('no coordinator after 1 s');
}

async function fetchCommitted(b: TestBroker, conn: ClientConnection): Promise<bigint> {
  for (let i = 0; i < 100; i++) {
    const r = await b.call<OffsetFetchResponse>(conn, 9, 7, {
      ...defaultOffsetFetchRequest(),
      groupId: GROUP,
      topics: [{ name: 'orders', partitionIndexes: [0] }],
    });
    // COORDINATOR_LOAD_IN_PROGRESS while the partition replays.
    if (r.errorCode === 14) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      continue;
    }
    assert.equal(r.errorCode, 0);
    return r.topics[0]!.partitions[0]!.committedOffset;
  }
  assert.fail('offsets partition never loaded');
}

describe('group coordination on the broker', () => {
  it('creates __consumer_offsets on first need, commits as its leader, and replays it after a restart', async () => {
    const first = await startBroker({
      'group.initial.rebalance.delay.ms': '0',
      'offsets.topic.num.partitions': '50',
    });
    const conn = await first.connect();
    await first.call<CreateTopicsResponse>(conn, 19, 7, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [{ name: 'orders', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
    });
    const fc = await waitForCoordinator(first, conn);
    assert.equal(fc.nodeId, 1);
    assert.equal(fc.port, first.port);
    const offsets = first.metadata.image().topics.get('__consumer_offsets')!;
    assert.equal(offsets.partitions.length, 50);
    assert.ok(offsets.internal);
    assert.deepEqual(first.metadata.image().topicConfigs.get('__consumer_offsets'), {
      'cleanup.policy': 'compact',
      'segment.bytes': '104857600',
      'compression.type': 'producer',
    });
    const joinRequest = {
      ...defaultJoinGroupRequest(),
      groupId: GROUP,
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 10_000,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
    };
    // v4+: the first join hands out a member id (MEMBER_ID_REQUIRED) to join with. Until the
    // broker has set up the new partitions (applied in slices when many) its coordinator does not
    // own the group yet: NOT_COORDINATOR, retried as a client does.
    let first0 = await first.call<JoinGroupResponse>(conn, 11, 5, joinRequest);
    for (let i = 0; i < 200 && (first0.errorCode === 16 || first0.errorCode === 14); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      first0 = await first.call<JoinGroupResponse>(conn, 11, 5, joinRequest);
    }
    assert.equal(first0.errorCode, 79);
    const join = await first.call<JoinGroupResponse>(conn, 11, 5, {
      ...joinRequest,
      memberId: first0.memberId,
    });
    assert.equal(join.errorCode, 0);
    const sync = await first.call<SyncGroupResponse>(conn, 14, 3, {
      ...defaultSyncGroupRequest(),
      groupId: GROUP,
      generationId: join.generationId,
      memberId: join.memberId,
      assignments: [{ memberId: join.memberId, assignment: Buffer.from('a') }],
    });
    assert.equal(sync.errorCode, 0);
    const commit = await first.call<OffsetCommitResponse>(conn, 8, 7, {
      ...defaultOffsetCommitRequest(),
      groupId: GROUP,
      generationIdOrMemberEpoch: join.generationId,
      memberId: join.memberId,
      topics: [
        {
          name: 'orders',
          partitions: [{ ...defaultOffsetCommitRequestPartition(), partitionIndex: 0, committedOffset: 42n }],
        },
      ],
    });
    assert.equal(commit.topics[0]!.partitions[0]!.errorCode, 0);
    assert.equal(await fetchCommitted(first, conn), 42n);
    // The commit is a record in the group's partition, covered by the HW.
    const partition = first.broker.groups!.coordinator.partitionFor(GROUP);
    const log = first.broker.logManager.getLog('__consumer_offsets', partition)!;
    assert.ok(log.logEndOffset >= 2n, 'group metadata and the offset commit were appended');
    assert.equal(log.highWatermark, log.logEndOffset);
    const clientWrite = await first.call<ProduceResponse>(conn, 0, 9, {
      transactionalId: null,
      acks: 1,
      timeoutMs: 1000,
      topicData: [{ name: '__consumer_offsets', partitionData: [{ index: partition, records: batch(1) }] }],
    });
    assert.equal(
      clientWrite.responses[0]!.partitionResponses[0]!.errorCode,
      17,
      'clients cannot write internal topics',
    );
    await first.stop();

    const second = await startBroker({ 'group.initial.rebalance.delay.ms': '0' }, first.dir);
    try {
      const c2 = await second.connect();
      await waitForCoordinator(second, c2);
      assert.equal(await fetchCommitted(second, c2), 42n);
      // Deleting the topic deletes its committed offsets (a topic created again starts afresh).
      const del = await second.call<DeleteTopicsResponse>(c2, 20, 4, {
        topics: [],
        topicNames: ['orders'],
        timeoutMs: 1000,
      });
      assert.equal(del.responses[0]!.errorCode, 0);
      for (let i = 0; i < 100 && (await fetchCommitted(second, c2)) !== -1n; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.equal(await fetchCommitted(second, c2), -1n);
    } finally {
      await second.stop();
    }
  });
});

describe('the CoordinatorLog adapter', () => {
  it('appends as leader in issue order and reports failures as KafkaErrors', async () => {
    const b = await startBroker({ 'group.initial.rebalance.delay.ms': '0' });
    try {
      const conn = await b.connect();
      await waitForCoordinator(b, conn);
      const groups = b.broker.groups!;
      const record = (v: string) => ({ key: Buffer.from(`k-${v}`), value: Buffer.from(v) });
      const order: string[] = [];
      const baseOffsets = await Promise.all(
        ['a', 'b', 'c'].map((v) =>
          groups.append(3, [record(v)]).then((offset) => {
            order.push(v);
            return offset;
          }),
        ),
      );
      assert.deepEqual(order, ['a', 'b', 'c']);
      assert.deepEqual(baseOffsets, [0n, 1n, 2n], 'each append resolves to its batch base offset');
      const log = b.broker.logManager.getLog('__consumer_offsets', 3)!;
      assert.equal(log.logEndOffset, 3n);
      assert.equal(log.highWatermark, 3n);
      const codeOf = async (p: Promise<unknown>): Promise<number> => {
        try {
          await p;
          return 0;
        } catch (e) {
          assert.ok(e instanceof KafkaError, String(e));
          return e.code;
        }
      };
      assert.equal(await codeOf(groups.append(999, [record('x')])), 6, 'NOT_LEADER_OR_FOLLOWER');
      const tooLarge = { key: Buffer.from('big'), value: Buffer.alloc(2_000_000) };
      assert.equal(await codeOf(groups.append(3, [tooLarge])), 10, 'MESSAGE_TOO_LARGE');
      await b.metadata.controller.alterConfigs(
        { type: 'topic', name: '__consumer_offsets' },
        [{ name: 'min.insync.replicas', value: '2' }],
        true,
        false,
      );
      // min.insync.replicas above the RF counts as the RF (Kafka's effectiveMinIsr): accepted.
      assert.equal(await codeOf(groups.append(3, [record('y')])), 0);
      assert.equal(log.logEndOffset, 4n, 'only the accepted write was appended');
    } finally {
      await b.stop();
    }
  });
});

describe('TxnOffsetCommit on the broker', () => {
  it('writes a transactional batch of the producer to __consumer_offsets, epochs checked, pending until its marker', async () => {
    // Without KIP-890's check: this producer id has no transaction coordinator behind it.
    const b = await startBroker({
      'group.initial.rebalance.delay.ms': '0',
      'transaction.partition.verification.enable': 'false',
    });
    try {
      const conn = await b.connect();
      await waitForCoordinator(b, conn);
      await createTopic(b, conn, 'in', 1);
      const txnCommit = (producerEpoch: number, offset: bigint) =>
        b.call<TxnOffsetCommitResponse>(conn, 28, 3, {
          transactionalId: 'tx-1',
          groupId: GROUP,
          producerId: 9000n,
          producerEpoch,
          generationId: -1,
          memberId: '',
          groupInstanceId: null,
          topics: [
            {
              name: 'in',
              partitions: [
                {
                  partitionIndex: 0,
                  committedOffset: offset,
                  committedLeaderEpoch: -1,
                  committedMetadata: '',
                },
              ],
            },
          ],
        });
      const codes = (r: TxnOffsetCommitResponse) =>
        r.topics.flatMap((t) => t.partitions.map((p) => p.errorCode));
      assert.deepEqual(codes(await txnCommit(0, 11n)), [0]);
      const coordinator = b.broker.groups!.coordinator;
      const partition = coordinator.partitionFor(GROUP);
      const log = b.broker.logManager.getLog('__consumer_offsets', partition)!;
      const entry = log.producerState.entry(9000n);
      assert.ok(entry !== undefined, 'the producer is in the partition producer state');
      assert.equal(entry.currentTxnFirstOffset >= 0n, true, 'its transaction is open on the partition');
      assert.ok(log.lastStableOffset <= entry.currentTxnFirstOffset, 'the open transaction holds the LSO');
      // A new epoch's commit needs no sequence 0 (the coordinator's batches carry none to check);
      // the old epoch is fenced by the log.
      assert.deepEqual(codes(await txnCommit(1, 12n)), [0]);
      assert.deepEqual(codes(await txnCommit(0, 13n)), [47], 'INVALID_PRODUCER_EPOCH');
      const fetchStable = async () => {
        const r = await b.call<OffsetFetchResponse>(conn, 9, 7, {
          ...defaultOffsetFetchRequest(),
          groupId: GROUP,
          topics: [{ name: 'in', partitionIndexes: [0] }],
          requireStable: true,
        });
        const p = r.topics[0]!.partitions[0]!;
        return [p.committedOffset, p.errorCode];
      };
      assert.deepEqual(await fetchStable(), [-1n, 88], 'UNSTABLE_OFFSET_COMMIT');
      assert.equal(coordinator.onTransactionMarker(partition, 9000n, 1, true), 1);
      assert.deepEqual(await fetchStable(), [12n, 0]);
    } finally {
      await b.stop();
    }
  });

  it("is refused (INVALID_TXN_STATE) until AddOffsetsToTxn put the group's partition in the transaction (KIP-890)", async () => {
    const b = await startBroker({ 'group.initial.rebalance.delay.ms': '0' });
    try {
      const conn = await b.connect();
      await waitForCoordinator(b, conn);
      await createTopic(b, conn, 'in', 1);
      let pid: InitProducerIdResponse | null = null;
      for (let i = 0; i < 100 && pid?.errorCode !== 0; i++) {
        const found = await b.call<FindCoordinatorResponse>(conn, 10, 3, {
          ...defaultFindCoordinatorRequest(),
          key: 'tx-verify',
          keyType: 1,
        });
        if (found.errorCode === 0) {
          pid = await b.call<InitProducerIdResponse>(conn, 22, 4, {
            transactionalId: 'tx-verify',
            transactionTimeoutMs: 60_000,
            producerId: -1n,
            producerEpoch: -1,
          });
        }
        if (pid?.errorCode !== 0) await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(pid?.errorCode, 0, 'InitProducerId');
      const { producerId, producerEpoch } = pid!;
      const txnCommit = () =>
        b.call<TxnOffsetCommitResponse>(conn, 28, 3, {
          transactionalId: 'tx-verify',
          groupId: GROUP,
          producerId,
          producerEpoch,
          generationId: -1,
          memberId: '',
          groupInstanceId: null,
          topics: [
            {
              name: 'in',
              partitions: [
                { partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1, committedMetadata: '' },
              ],
            },
          ],
        });
      const codes = (r: TxnOffsetCommitResponse) =>
        r.topics.flatMap((t) => t.partitions.map((p) => p.errorCode));
      assert.deepEqual(codes(await txnCommit()), [48], 'INVALID_TXN_STATE');
      const coordinator = b.broker.groups!.coordinator;
      const log = b.broker.logManager.getLog('__consumer_offsets', coordinator.partitionFor(GROUP))!;
      assert.equal(log.producerState.entry(producerId), undefined, 'nothing written');
      const added = await b.call<AddOffsetsToTxnResponse>(conn, 25, 3, {
        transactionalId: 'tx-verify',
        producerId,
        producerEpoch,
        groupId: GROUP,
      });
      assert.equal(added.errorCode, 0);
      assert.deepEqual(codes(await txnCommit()), [0]);
    } finally {
      await b.stop();
    }
  });
});
