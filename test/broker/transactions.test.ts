/**
 * The transaction coordinator's APIs on the wire, one broker: FindCoordinator TRANSACTION in its
 * batched form, InitProducerId errors by version, AddPartitionsToTxn (client form, unknown
 * topics, the broker form's verifyOnly), AddOffsetsToTxn, EndTxn, ListTransactions and
 * DescribeTransactions, and a transactional produce committed through WriteTxnMarkers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { AddOffsetsToTxnResponse } from '../../src/protocol/generated/AddOffsetsToTxnResponse.js';
import type { AddPartitionsToTxnResponse } from '../../src/protocol/generated/AddPartitionsToTxnResponse.js';
import type { DescribeTransactionsResponse } from '../../src/protocol/generated/DescribeTransactionsResponse.js';
import type { EndTxnResponse } from '../../src/protocol/generated/EndTxnResponse.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import { defaultFindCoordinatorRequest } from '../../src/protocol/generated/FindCoordinatorRequest.js';
import type { FindCoordinatorResponse } from '../../src/protocol/generated/FindCoordinatorResponse.js';
import type { InitProducerIdResponse } from '../../src/protocol/generated/InitProducerIdResponse.js';
import type { ListTransactionsResponse } from '../../src/protocol/generated/ListTransactionsResponse.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import { encodeBatch } from '../../src/protocol/records/codec.js';
import { createTopic, startBroker, type TestBroker } from './helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('transaction coordinator APIs on the broker', () => {
  let b: TestBroker;
  let conn: ClientConnection;
  before(async () => {
    b = await startBroker({
      'transaction.state.log.num.partitions': '2',
      'transaction.state.log.replication.factor': '1',
      'transaction.max.timeout.ms': '60000',
    });
    conn = await b.connect();
    await createTopic(b, conn, 'orders', 2);
  });
  after(async () => {
    await b?.stop();
  });

  const init = (version: number, id: string, timeoutMs: number, producerId = -1n, producerEpoch = -1) =>
    b.call<InitProducerIdResponse>(conn, 22, version, {
      transactionalId: id,
      transactionTimeoutMs: timeoutMs,
      producerId,
      producerEpoch,
    });

  /** InitProducerId until __transaction_state is created and loaded. */
  async function initReady(id: string): Promise<InitProducerIdResponse> {
    for (let i = 0; i < 300; i++) {
      const r = await init(4, id, 30_000);
      if (r.errorCode === 0) return r;
      assert.ok(
        [ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS].includes(r.errorCode as 16),
        `InitProducerId: error ${r.errorCode}`,
      );
      await sleep(10);
    }
    assert.fail('the transaction coordinator never loaded');
  }

  it('FindCoordinator TRANSACTION, batched (v4): COORDINATOR_NOT_AVAILABLE until __transaction_state exists, then this broker', async () => {
    let r: FindCoordinatorResponse | null = null;
    for (let i = 0; i < 300; i++) {
      r = await b.call<FindCoordinatorResponse>(conn, 10, 4, {
        ...defaultFindCoordinatorRequest(),
        keyType: 1,
        coordinatorKeys: ['tx-a', 'tx-b'],
      });
      if (r.coordinators.every((c) => c.errorCode === 0)) break;
      for (const c of r.coordinators) assert.equal(c.errorCode, ErrorCode.COORDINATOR_NOT_AVAILABLE);
      await sleep(10);
    }
    assert.deepEqual(
      r!.coordinators.map((c) => [c.key, c.nodeId, c.port]),
      [
        ['tx-a', 1, b.port],
        ['tx-b', 1, b.port],
      ],
    );
    // Key type 2 (share groups) is not coordinated here.
    const share = await b.call<FindCoordinatorResponse>(conn, 10, 4, {
      ...defaultFindCoordinatorRequest(),
      keyType: 2,
      coordinatorKeys: ['s'],
    });
    assert.equal(share.coordinators[0]!.errorCode, ErrorCode.INVALID_REQUEST);
  });

  it('InitProducerId: epochs, timeouts, and PRODUCER_FENCED as INVALID_PRODUCER_EPOCH before v4', async () => {
    const first = await initReady('tx-init');
    assert.equal(first.producerEpoch, 0);
    const second = await init(4, 'tx-init', 30_000);
    assert.deepEqual([second.errorCode, second.producerId, second.producerEpoch], [0, first.producerId, 1]);
    assert.equal((await init(4, 'tx-init', 60_001)).errorCode, ErrorCode.INVALID_TRANSACTION_TIMEOUT);
    assert.equal(
      (await init(4, 'tx-init', 30_000, first.producerId, -1)).errorCode,
      ErrorCode.INVALID_REQUEST,
    );
    assert.equal((await init(4, '', 30_000)).errorCode, ErrorCode.INVALID_REQUEST);
    // A zombie naming epoch 0 after the bump to 1.
    assert.equal(
      (await init(4, 'tx-init', 30_000, first.producerId, 0)).errorCode,
      ErrorCode.PRODUCER_FENCED,
    );
    assert.equal(
      (await init(3, 'tx-init', 30_000, first.producerId, 0)).errorCode,
      ErrorCode.INVALID_PRODUCER_EPOCH,
    );
  });

  it('a transaction: AddPartitionsToTxn, a transactional produce, AddOffsetsToTxn, verifyOnly, List/Describe, EndTxn', async () => {
    const { producerId, producerEpoch } = await initReady('tx-flow');
    const add = (version: number, topics: { name: string; partitions: number[] }[]) =>
      b.call<AddPartitionsToTxnResponse>(conn, 24, version, {
        transactions: [],
        v3AndBelowTransactionalId: 'tx-flow',
        v3AndBelowProducerId: producerId,
        v3AndBelowProducerEpoch: producerEpoch,
        v3AndBelowTopics: topics,
      });
    const unknown = await add(3, [
      { name: 'orders', partitions: [0] },
      { name: 'nope', partitions: [0] },
    ]);
    assert.deepEqual(
      unknown.resultsByTopicV3AndBelow.map((t) => [t.name, t.resultsByPartition[0]!.partitionErrorCode]),
      [
        ['orders', ErrorCode.OPERATION_NOT_ATTEMPTED],
        ['nope', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
      ],
    );
    const added = await add(3, [{ name: 'orders', partitions: [0] }]);
    assert.equal(added.resultsByTopicV3AndBelow[0]!.resultsByPartition[0]!.partitionErrorCode, 0);
    const records = encodeBatch({
      producerId,
      producerEpoch,
      baseSequence: 0,
      isTransactional: true,
      baseTimestamp: 1_700_000_000_000n,
      records: [{ key: null, value: Buffer.from('in-txn') }],
    });
    const produced = await b.call<ProduceResponse>(conn, 0, 9, {
      transactionalId: 'tx-flow',
      acks: -1,
      timeoutMs: 5000,
      topicData: [{ name: 'orders', partitionData: [{ index: 0, records }] }],
    });
    assert.equal(produced.responses[0]!.partitionResponses[0]!.errorCode, 0);
    const offsets = await b.call<AddOffsetsToTxnResponse>(conn, 25, 3, {
      transactionalId: 'tx-flow',
      producerId,
      producerEpoch,
      groupId: 'app',
    });
    assert.equal(offsets.errorCode, 0);
    const verify = await b.call<AddPartitionsToTxnResponse>(conn, 24, 4, {
      v3AndBelowTransactionalId: '',
      v3AndBelowProducerId: 0n,
      v3AndBelowProducerEpoch: 0,
      v3AndBelowTopics: [],
      transactions: [
        {
          transactionalId: 'tx-flow',
          producerId,
          producerEpoch,
          verifyOnly: true,
          topics: [{ name: 'orders', partitions: [0, 1] }],
        },
      ],
    });
    assert.deepEqual(
      verify.resultsByTransaction[0]!.topicResults[0]!.resultsByPartition.map((p) => p.partitionErrorCode),
      [ErrorCode.NONE, ErrorCode.TRANSACTION_ABORTABLE],
    );
    const listed = await b.call<ListTransactionsResponse>(conn, 66, 1, {
      stateFilters: ['Ongoing', 'Nope'],
      producerIdFilters: [],
      durationFilter: -1n,
    });
    assert.deepEqual(listed.unknownStateFilters, ['Nope']);
    assert.deepEqual(
      listed.transactionStates.map((t) => [t.transactionalId, t.producerId, t.transactionState]),
      [['tx-flow', producerId, 'Ongoing']],
    );
    const described = await b.call<DescribeTransactionsResponse>(conn, 65, 0, {
      transactionalIds: ['tx-flow', 'tx-none'],
    });
    const [d, none] = described.transactionStates;
    assert.equal(d!.transactionState, 'Ongoing');
    assert.deepEqual(d!.topics.map((t) => t.topic).sort(), ['__consumer_offsets', 'orders']);
    assert.equal(none!.errorCode, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND);
    const stale = await b.call<EndTxnResponse>(conn, 26, 1, {
      transactionalId: 'tx-flow',
      producerId,
      producerEpoch: producerEpoch - 1,
      committed: true,
    });
    assert.equal(stale.errorCode, ErrorCode.INVALID_PRODUCER_EPOCH);
    const ended = await b.call<EndTxnResponse>(conn, 26, 3, {
      transactionalId: 'tx-flow',
      producerId,
      producerEpoch,
      committed: true,
    });
    assert.equal(ended.errorCode, 0);
    // The markers go out after the answer: CompleteCommit once both partitions have theirs.
    let state = '';
    for (let i = 0; i < 300 && state !== 'CompleteCommit'; i++) {
      const r = await b.call<DescribeTransactionsResponse>(conn, 65, 0, { transactionalIds: ['tx-flow'] });
      state = r.transactionStates[0]!.transactionState;
      if (state !== 'CompleteCommit') await sleep(10);
    }
    assert.equal(state, 'CompleteCommit');
  });

  it('KIP-890: a transactional write to a partition not added to the transaction is INVALID_TXN_STATE', async () => {
    const { producerId, producerEpoch } = await initReady('tx-verify');
    const add = await b.call<AddPartitionsToTxnResponse>(conn, 24, 3, {
      transactions: [],
      v3AndBelowTransactionalId: 'tx-verify',
      v3AndBelowProducerId: producerId,
      v3AndBelowProducerEpoch: producerEpoch,
      v3AndBelowTopics: [{ name: 'orders', partitions: [0] }],
    });
    assert.equal(add.resultsByTopicV3AndBelow[0]!.resultsByPartition[0]!.partitionErrorCode, 0);
    const produce = (partition: number, baseSequence: number) =>
      b.call<ProduceResponse>(conn, 0, 9, {
        transactionalId: 'tx-verify',
        acks: -1,
        timeoutMs: 5000,
        topicData: [
          {
            name: 'orders',
            partitionData: [
              {
                index: partition,
                records: encodeBatch({
                  producerId,
                  producerEpoch,
                  baseSequence,
                  isTransactional: true,
                  baseTimestamp: 1_700_000_000_000n,
                  records: [{ key: null, value: Buffer.from(`p${partition}`) }],
                }),
              },
            ],
          },
        ],
      });
    const added = await produce(0, 0);
    assert.equal(added.responses[0]!.partitionResponses[0]!.errorCode, 0);
    const notAdded = await produce(1, 0);
    const refused = notAdded.responses[0]!.partitionResponses[0]!;
    assert.equal(refused.errorCode, ErrorCode.INVALID_TXN_STATE);
    assert.equal(refused.errorMessage, 'Partition was not added to the transaction');
    // Off (a dynamic broker config), the leader takes the write as Kafka before KIP-890 did.
    const alter = await b.call<{ responses: { errorCode: number }[] }>(conn, 44, 1, {
      validateOnly: false,
      resources: [
        {
          resourceType: 4,
          resourceName: '',
          configs: [
            { name: 'transaction.partition.verification.enable', configOperation: 0, value: 'false' },
          ],
        },
      ],
    });
    assert.equal(alter.responses[0]!.errorCode, 0);
    let code = -1;
    for (let i = 0; i < 100 && code !== 0; i++) {
      code = (await produce(1, 0)).responses[0]!.partitionResponses[0]!.errorCode;
      if (code !== 0) await sleep(10);
    }
    assert.equal(code, 0);
  });
});
