/**
 * DescribeProducers (API 61) on the broker: each replica answers from its log's producer state;
 * errors per partition as Kafka's KafkaApis and ReplicaManager.activeProducerState give them.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { DescribeProducersResponse } from '../../src/protocol/generated/DescribeProducersResponse.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import { batch, createTopic, startBroker } from './helpers.js';

it('lists the producers of a hosted partition and answers Kafka errors for the rest', async () => {
  const b = await startBroker();
  try {
    const conn = await b.connect();
    await createTopic(b, conn, 't', 2);
    const produced = await b.call<ProduceResponse>(conn, 0, 9, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 5000,
      topicData: [{ name: 't', partitionData: [{ index: 1, records: batch(4, { producerId: 77n }) }] }],
    });
    assert.equal(produced.responses[0]!.partitionResponses[0]!.errorCode, 0);
    const r = await b.call<DescribeProducersResponse>(conn, 61, 0, {
      topics: [
        { name: 't', partitionIndexes: [0, 1, 2] },
        { name: 'missing', partitionIndexes: [0] },
        { name: 'bad/name', partitionIndexes: [0] },
      ],
    });
    const [t, missing, bad] = r.topics;
    assert.deepEqual(
      t!.partitions.map((p) => [p.partitionIndex, p.errorCode, p.activeProducers.length]),
      [
        [0, 0, 0],
        [1, 0, 1],
        [2, 3, 0],
      ],
      'partition 2 does not exist: UNKNOWN_TOPIC_OR_PARTITION',
    );
    assert.deepEqual(t!.partitions[1]!.activeProducers[0], {
      producerId: 77n,
      producerEpoch: 0,
      lastSequence: 3,
      lastTimestamp: 1_700_000_000_003n,
      coordinatorEpoch: -1,
      currentTxnStartOffset: -1n,
    });
    assert.deepEqual(
      missing!.partitions.map((p) => p.errorCode),
      [3],
    );
    assert.equal(bad!.partitions[0]!.errorCode, 17, 'INVALID_TOPIC_EXCEPTION');
    assert.match(bad!.partitions[0]!.errorMessage ?? '', /illegal/);
  } finally {
    await b.stop();
  }
});
