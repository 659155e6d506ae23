/**
 * Produce into a compacted topic over the wire: a batch with keyless records is refused with
 * INVALID_RECORD and, from ProduceResponse v8, Kafka's RecordErrors; nothing of the request is
 * appended. cleanup.policy set at creation and by a later AlterConfigs both apply.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { CreateTopicsResponse } from '../../src/protocol/generated/CreateTopicsResponse.js';
import type { IncrementalAlterConfigsResponse } from '../../src/protocol/generated/IncrementalAlterConfigsResponse.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import { encodeBatch } from '../../src/protocol/records/codec.js';
import { batch, startBroker, type TestBroker } from './helpers.js';

function keyless(count: number): Buffer {
  return encodeBatch({
    baseTimestamp: 1_700_000_000_000n,
    records: Array.from({ length: count }, (_, i) => ({
      key: i === 0 ? Buffer.from('has-a-key') : null,
      value: Buffer.from(`v${i}`),
      timestampDelta: BigInt(i),
    })),
  });
}

describe('produce into a compacted topic', () => {
  let b: TestBroker;
  let conn: ClientConnection;
  const produce = (topic: string, records: Buffer, version = 9) =>
    b.call<ProduceResponse>(conn, 0, version, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 5000,
      topicData: [{ name: topic, partitionData: [{ index: 0, records }] }],
    });
  before(async () => {
    b = await startBroker();
    conn = await b.connect();
    const r = await b.call<CreateTopicsResponse>(conn, 19, 7, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [
        { name: 'compacted', configs: [{ name: 'cleanup.policy', value: 'compact' }] },
        { name: 'both', configs: [{ name: 'cleanup.policy', value: 'compact,delete' }] },
        { name: 'plain', configs: [] },
      ].map((t) => ({ ...t, numPartitions: 1, replicationFactor: 1, assignments: [] })),
    });
    assert.deepEqual(
      r.topics.map((t) => t.errorCode),
      [0, 0, 0],
    );
  });
  after(async () => {
    await b.stop();
  });

  it('refuses keyless records with INVALID_RECORD and RecordErrors (v9), appending nothing', async () => {
    for (const topic of ['compacted', 'both']) {
      assert.equal((await produce(topic, batch(2))).responses[0]!.partitionResponses[0]!.errorCode, 0);
      const r = (await produce(topic, keyless(3))).responses[0]!.partitionResponses[0]!;
      assert.equal(r.errorCode, 87, topic); // INVALID_RECORD
      assert.equal(r.baseOffset, -1n);
      const message = `Compacted topic cannot accept message without key in topic partition ${topic}-0`;
      assert.deepEqual(r.recordErrors, [
        { batchIndex: 1, batchIndexErrorMessage: message },
        { batchIndex: 2, batchIndexErrorMessage: message },
      ]);
      assert.match(
        r.errorMessage!,
        /^One or more records have been rejected due to 2 record errors in total/,
      );
      // Nothing of the refused request: the next append gets offset 2.
      assert.equal((await produce(topic, batch(1))).responses[0]!.partitionResponses[0]!.baseOffset, 2n);
    }
  });

  it('before v8 the response carries the code alone', async () => {
    const r = (await produce('compacted', keyless(2), 7)).responses[0]!.partitionResponses[0]!;
    assert.equal(r.errorCode, 87);
    assert.deepEqual(r.recordErrors, []);
  });

  it('a topic altered to compact starts refusing; one without compact accepts keyless records', async () => {
    assert.equal((await produce('plain', keyless(2))).responses[0]!.partitionResponses[0]!.errorCode, 0);
    const alter = await b.call<IncrementalAlterConfigsResponse>(conn, 44, 1, {
      validateOnly: false,
      resources: [
        {
          resourceType: 2,
          resourceName: 'plain',
          configs: [{ name: 'cleanup.policy', configOperation: 0, value: 'compact' }],
        },
      ],
    });
    assert.equal(alter.responses[0]!.errorCode, 0);
    const deadline = Date.now() + 5000;
    let code = 0;
    while (Date.now() < deadline) {
      code = (await produce('plain', keyless(2))).responses[0]!.partitionResponses[0]!.errorCode;
      if (code !== 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(code, 87);
  });
});
