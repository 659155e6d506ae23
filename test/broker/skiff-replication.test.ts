/**
 * SkiffDescribeReplication (api key 10000) on a single in-process broker: advertised in ApiVersions,
 * answering for hosted partitions (role "none" without replication: the single-process metadata
 * does not replicate), UNKNOWN_TOPIC_OR_PARTITION for one it does not host; and the Fetch of
 * Kafka's debugging consumer (replica id -2) reading up to the HW.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ReplicationRole } from '../../src/broker/handlers/skiff-replication.js';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { ApiVersionsResponse } from '../../src/protocol/generated/ApiVersionsResponse.js';
import type { CreateTopicsResponse } from '../../src/protocol/generated/CreateTopicsResponse.js';
import { defaultFetchPartition, defaultFetchRequest } from '../../src/protocol/generated/FetchRequest.js';
import type { FetchResponse } from '../../src/protocol/generated/FetchResponse.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import type { SkiffDescribeReplicationResponse } from '../../src/protocol/generated/SkiffDescribeReplicationResponse.js';
import { batch, startBroker, type TestBroker } from './helpers.js';

describe('SkiffDescribeReplication on one broker', () => {
  let b: TestBroker;
  let conn: ClientConnection;
  before(async () => {
    b = await startBroker();
    conn = await b.connect();
    const r = await b.call<CreateTopicsResponse>(conn, 19, 7, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [{ name: 'sr', numPartitions: 2, replicationFactor: 1, assignments: [], configs: [] }],
    });
    assert.equal(r.topics[0]!.errorCode, 0);
    const p = await b.call<ProduceResponse>(conn, 0, 9, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 5000,
      topicData: [{ name: 'sr', partitionData: [{ index: 0, records: batch(5) }] }],
    });
    assert.equal(p.responses[0]!.partitionResponses[0]!.errorCode, 0);
  });
  after(async () => {
    await b.stop();
  });

  it('is advertised in ApiVersions at version 0, far above Kafka keys', async () => {
    const r = await b.call<ApiVersionsResponse>(conn, 18, 3, {
      clientSoftwareName: 't',
      clientSoftwareVersion: '1',
    });
    assert.deepEqual(
      r.apiKeys.find((k) => k.apiKey === 10000),
      { apiKey: 10000, minVersion: 0, maxVersion: 0 },
    );
  });

  it('describes hosted partitions and names the ones it does not host', async () => {
    const r = await b.call<SkiffDescribeReplicationResponse>(conn, 10000, 0, {
      topics: [{ name: 'sr', partitions: [0, 7] }],
      includeHistory: true,
    });
    assert.equal(r.errorCode, 0);
    assert.equal(r.brokerId, 1);
    assert.ok(r.nowMs > 0n);
    const parts = r.topics[0]!.partitions;
    assert.deepEqual(
      parts.map((p) => [p.partitionIndex, p.errorCode]),
      [
        [0, 0],
        [7, 3],
      ],
    );
    const p0 = parts[0]!;
    assert.equal(p0.role, ReplicationRole.none);
    assert.deepEqual([p0.leaderId, p0.logStartOffset, p0.logEndOffset, p0.highWatermark], [1, 0n, 5n, 5n]);
    assert.ok(p0.sizeBytes > 0n);
    assert.deepEqual(p0.isr, [1]);
    const all = await b.call<SkiffDescribeReplicationResponse>(conn, 10000, 0, {
      topics: null,
      includeHistory: false,
    });
    assert.deepEqual(
      all.topics.map((t) => [t.name, t.partitions.map((p) => p.partitionIndex)]),
      [['sr', [0, 1]]],
    );
  });

  it("serves Kafka's debugging consumer (replica id -2) up to the HW", async () => {
    const r = await b.call<FetchResponse>(conn, 1, 12, {
      ...defaultFetchRequest(),
      replicaId: -2,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      topics: [
        {
          topic: 'sr',
          topicId: 'AAAAAAAAAAAAAAAAAAAAAA',
          partitions: [
            { ...defaultFetchPartition(), partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 },
          ],
        },
      ],
    });
    const p = r.responses[0]!.partitions[0]!;
    assert.equal(p.errorCode, 0);
    assert.equal(p.highWatermark, 5n);
    assert.ok(p.records !== null && p.records.length > 0);
  });
});
