/**
 * KIP-890's verification guard on the partition leader: a COMMIT/ABORT marker of the producer
 * written to the partition while the transaction coordinator was being asked voids that answer,
 * so the write that would open a transaction nobody tracks is refused INVALID_TXN_STATE.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { brokerConfig } from '../../src/broker/config.js';
import type { ReplicaManager } from '../../src/broker/replica-manager.js';
import { TransactionCoordination } from '../../src/broker/transaction-coordination.js';
import { ManualClock } from '../../src/common/clock.js';
import { ManualScheduler } from '../../src/common/scheduler.js';
import type { ClusterMetadata, MetadataImage } from '../../src/metadata/cluster-metadata.js';
import type { AddPartitionsToTxnResponse } from '../../src/protocol/generated/AddPartitionsToTxnResponse.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';

function coordination(answer: () => Promise<AddPartitionsToTxnResponse>) {
  const clock = new ManualClock();
  // __transaction_state (one partition) led by broker 2: this broker (1) asks it over the network.
  const image = {
    topics: new Map([['__transaction_state', { partitions: [{ partition: 0, leader: 2 }] }]]),
  } as unknown as MetadataImage;
  const c = new TransactionCoordination({
    config: brokerConfig({
      nodeId: 1,
      transactions: { ...brokerConfig().transactions, stateLogNumPartitions: 1 },
    }),
    clock,
    scheduler: new ManualScheduler(clock),
    logger: { info() {}, warn() {} },
    metadata: { image: () => image } as unknown as ClusterMetadata,
    replicaManager: {} as ReplicaManager,
    nextProducerId: () => 1n,
    writeTxnMarkers: () => Promise.reject(new Error('not used')),
    sendTxnMarkers: () => Promise.reject(new Error('not used')),
    sendAddPartitionsToTxn: answer,
    verificationEnabled: () => true,
    requestTimeoutMs: () => 1000,
  });
  return c;
}

const added = (partitions: number[]): AddPartitionsToTxnResponse => ({
  throttleTimeMs: 0,
  errorCode: 0,
  resultsByTopicV3AndBelow: [],
  resultsByTransaction: [
    {
      transactionalId: 'tx',
      topicResults: [
        {
          name: 'orders',
          resultsByPartition: partitions.map((partitionIndex) => ({ partitionIndex, partitionErrorCode: 0 })),
        },
      ],
    },
  ],
});

describe('transaction verification guard', () => {
  it('a marker of the producer written while the coordinator answers voids the answer for that partition', async () => {
    let release!: (r: AddPartitionsToTxnResponse) => void;
    const c = coordination(() => new Promise((r) => (release = r)));
    const asked = c.verifyTransaction('tx', 7n, 0, new Map([['orders', [0, 1]]]))!;
    c.markerAppended('orders', 0, 7n); // the previous transaction's marker lands on partition 0
    c.markerAppended('orders', 1, 8n); // another producer's marker changes nothing
    release(added([0, 1]));
    const codes = await asked;
    assert.equal(codes.get('orders')!.get(0), ErrorCode.INVALID_TXN_STATE);
    assert.equal(codes.get('orders')!.get(1), ErrorCode.NONE);
    c.shutdown();
  });

  it("the coordinator's refusals as the leader reports them; an unreachable coordinator is NETWORK_EXCEPTION", async () => {
    const fenced = coordination(async () => ({
      ...added([0]),
      resultsByTransaction: [
        {
          transactionalId: 'tx',
          topicResults: [
            {
              name: 'orders',
              resultsByPartition: [
                { partitionIndex: 0, partitionErrorCode: ErrorCode.PRODUCER_FENCED },
                { partitionIndex: 1, partitionErrorCode: ErrorCode.TRANSACTION_ABORTABLE },
              ],
            },
          ],
        },
      ],
    }));
    const codes = await fenced.verifyTransaction('tx', 7n, 0, new Map([['orders', [0, 1]]]))!;
    assert.equal(codes.get('orders')!.get(0), ErrorCode.INVALID_PRODUCER_EPOCH);
    assert.equal(codes.get('orders')!.get(1), ErrorCode.INVALID_TXN_STATE);
    fenced.shutdown();
    const down = coordination(() => Promise.reject(new Error('connection refused')));
    const unreachable = await down.verifyTransaction('tx', 7n, 0, new Map([['orders', [0]]]))!;
    assert.equal(unreachable.get('orders')!.get(0), ErrorCode.NETWORK_EXCEPTION);
    down.shutdown();
  });
});
