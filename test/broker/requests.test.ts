import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  BROKER_API_VERSIONS,
  GROUP_API_KEYS,
  TRANSACTION_API_VERSIONS,
} from '../../src/broker/api-versions.js';
import { groupApiVersions } from '../../src/coordinator/group-api.js';
import type { ClientConnection } from '../../src/network/client-connection.js';
import { frame } from '../../src/protocol/framing.js';
import type { ApiVersionsResponse } from '../../src/protocol/generated/ApiVersionsResponse.js';
import { ApiVersionsResponseCodec } from '../../src/protocol/generated/ApiVersionsResponse.js';
import type { CreatePartitionsResponse } from '../../src/protocol/generated/CreatePartitionsResponse.js';
import type { CreateTopicsResponse } from '../../src/protocol/generated/CreateTopicsResponse.js';
import type { DeleteTopicsResponse } from '../../src/protocol/generated/DeleteTopicsResponse.js';
import type { DescribeClusterResponse } from '../../src/protocol/generated/DescribeClusterResponse.js';
import type { ElectLeadersResponse } from '../../src/protocol/generated/ElectLeadersResponse.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import { defaultMetadataRequest } from '../../src/protocol/generated/MetadataRequest.js';
import type { MetadataResponse } from '../../src/protocol/generated/MetadataResponse.js';
import { defaultProduceRequest, ProduceRequestCodec } from '../../src/protocol/generated/ProduceRequest.js';
import { readResponse } from '../../src/protocol/messages.js';
import { Writer } from '../../src/protocol/writer.js';
import { startBroker, type TestBroker } from './helpers.js';

/** A request frame written by hand: header v2 (flexible), so any API key and version can be sent. */
function rawRequest(apiKey: number, version: number, correlationId: number, flexible: boolean): Buffer {
  const w = new Writer();
  w.int16(apiKey);
  w.int16(version);
  w.int32(correlationId);
  w.int16(4);
  w.raw(Buffer.from('raw1'));
  if (flexible) w.uvarint(0); // header tagged fields
  w.uvarint(0); // an empty flexible body's tagged fields
  return Buffer.concat(frame(w.chunksView()));
}

async function nextFrame(conn: ClientConnection): Promise<Buffer | null> {
  // Reads the socket directly: the ClientConnection only accepts responses it asked for.
  const socket = (conn as unknown as { socket: import('node:net').Socket }).socket;
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    socket.removeAllListeners('data');
    socket.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      if (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0))
        resolve(buf.subarray(4, 4 + buf.readInt32BE(0)));
    });
    socket.once('close', () => resolve(null));
  });
}

describe('broker requests: versions, bad input, metadata, admin', () => {
  let b: TestBroker;
  let conn: ClientConnection;
  before(async () => {
    b = await startBroker({ 'num.partitions': '2' });
    conn = await b.connect();
  });
  after(async () => {
    await b.stop();
  });

  it("ApiVersions reports exactly the implemented APIs, the group and transaction APIs at their coordinators' versions", async () => {
    const r = await b.call<ApiVersionsResponse>(conn, 18, 3, {
      clientSoftwareName: 'test',
      clientSoftwareVersion: '1',
    });
    assert.equal(r.errorCode, 0);
    // KIP-848's APIs too: group.coordinator.rebalance.protocols lists consumer by default.
    const served = groupApiVersions(['classic', 'consumer']);
    const groupVersions = GROUP_API_KEYS.map((k) => [k, served.get(k)!] as const);
    const expected = [
      ...BROKER_API_VERSIONS.entries(),
      ...groupVersions,
      ...TRANSACTION_API_VERSIONS.entries(),
    ]
      .sort((x, y) => x[0] - y[0])
      .map(([apiKey, v]) => ({
        apiKey,
        minVersion: 'advertisedMin' in v ? v.advertisedMin : v.min,
        maxVersion: v.max,
      }));
    assert.deepEqual(r.apiKeys, expected);
    // Kafka 4.x's row (KAFKA-18659): listed from 0, served from 3 (the test below: v2 closes the connection).
    assert.deepEqual(
      r.apiKeys.find((k) => k.apiKey === 0),
      { apiKey: 0, minVersion: 0, maxVersion: 11 },
    );
    for (const key of [32, 33, 35, 44, 11, 10, 8, 9]) {
      assert.ok(
        r.apiKeys.some((k) => k.apiKey === key),
        `API ${key} is offered`,
      );
    }
    const v0 = await b.call<ApiVersionsResponse>(conn, 18, 0, {});
    assert.deepEqual(v0.apiKeys, expected);
  });

  it('ApiVersions at an unknown version: a v0 answer with UNSUPPORTED_VERSION and the ranges', async () => {
    const c = await b.connect();
    const reply = nextFrame(c);
    c.writeRaw(rawRequest(18, 9, 77, true));
    const f = await reply;
    assert.ok(f);
    const { correlationId, body } = readResponse(f, 18, 0, ApiVersionsResponseCodec);
    assert.equal(correlationId, 77);
    assert.equal(body.errorCode, 35);
    assert.ok(body.apiKeys.some((k) => k.apiKey === 18 && k.maxVersion === 4));
  });

  it('an unknown API key closes that connection with one log line naming the client', async () => {
    const c = await b.connect('bad-client');
    const closed = c.closed();
    c.writeRaw(rawRequest(999, 0, 1, false));
    await closed;
    const lines = b.logger.lines.filter((l) => l.includes('key 999'));
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /clientId "raw1"/);
    assert.match(lines[0]!, /127\.0\.0\.1:\d+/);
    // Other connections are unaffected.
    const r = await b.call<ApiVersionsResponse>(conn, 18, 3, {
      clientSoftwareName: 'x',
      clientSoftwareVersion: '1',
    });
    assert.equal(r.errorCode, 0);
  });

  it('an unsupported version of another API (Produce v2) closes the connection', async () => {
    const c = await b.connect();
    const closed = c.closed();
    await c.sendOneWay(0, 2, ProduceRequestCodec, { ...defaultProduceRequest(), acks: 1, timeoutMs: 1000 });
    await closed;
    assert.ok(b.logger.lines.some((l) => l.includes('unsupported version 2 of Produce')));
  });

  it('SaslHandshake and SaslAuthenticate on a PLAINTEXT listener: ILLEGAL_SASL_STATE, as Kafka answers them', async () => {
    const h = await b.call<{ errorCode: number; mechanisms: string[] }>(conn, 17, 1, { mechanism: 'PLAIN' });
    assert.deepEqual(h, { errorCode: ErrorCode.ILLEGAL_SASL_STATE, mechanisms: [] });
    const a = await b.call<{ errorCode: number; errorMessage: string | null }>(conn, 36, 2, {
      authBytes: Buffer.from('x'),
    });
    assert.equal(a.errorCode, ErrorCode.ILLEGAL_SASL_STATE);
    assert.equal(a.errorMessage, 'SaslAuthenticate request received after successful authentication');
  });

  it('a malformed body closes the connection', async () => {
    const c = await b.connect();
    const closed = c.closed();
    const w = new Writer();
    w.int16(3); // Metadata v1, topics array claims 1000 entries that are not there
    w.int16(1);
    w.int32(5);
    w.int16(-1);
    w.int32(1000);
    c.writeRaw(Buffer.concat(frame(w.chunksView())));
    await closed;
  });

  it('Metadata auto-creates a topic with num.partitions, and lists brokers and controller', async () => {
    const r = await b.call<MetadataResponse>(conn, 3, 12, {
      ...defaultMetadataRequest(),
      topics: [{ topicId: 'AAAAAAAAAAAAAAAAAAAAAA', name: 'auto1' }],
      allowAutoTopicCreation: true,
    });
    assert.equal(r.brokers.length, 1);
    assert.equal(r.brokers[0]!.port, b.port);
    assert.equal(r.controllerId, 1);
    assert.equal(r.clusterId, b.metadata.image().clusterId);
    assert.match(r.clusterId!, /^[A-Za-z0-9_-]{22}$/, 'a Kafka Uuid in base64url');
    const t = r.topics[0]!;
    assert.equal(t.errorCode, 0);
    assert.equal(t.partitions.length, 2);
    assert.deepEqual(t.partitions[0]!.isrNodes, [1]);
    assert.notEqual(t.topicId, 'AAAAAAAAAAAAAAAAAAAAAA');
    // v0: an empty list means every topic.
    const all = await b.call<MetadataResponse>(conn, 3, 0, { ...defaultMetadataRequest(), topics: [] });
    assert.ok(all.topics.some((x) => x.name === 'auto1'));
  });

  it('Metadata without auto-creation answers UNKNOWN_TOPIC_OR_PARTITION; a bad name INVALID_TOPIC_EXCEPTION', async () => {
    const r = await b.call<MetadataResponse>(conn, 3, 9, {
      ...defaultMetadataRequest(),
      topics: [
        { topicId: 'AAAAAAAAAAAAAAAAAAAAAA', name: 'nope' },
        { topicId: 'AAAAAAAAAAAAAAAAAAAAAA', name: 'bad/name' },
      ],
      allowAutoTopicCreation: false,
    });
    assert.equal(r.topics[0]!.errorCode, 3);
    assert.equal(r.topics[1]!.errorCode, 17);
  });

  it('CreateTopics validates, creates, and refuses duplicates', async () => {
    const r = await b.call<CreateTopicsResponse>(conn, 19, 7, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [
        { name: 'ct1', numPartitions: 3, replicationFactor: 1, assignments: [], configs: [] },
        { name: 'ct2', numPartitions: 0, replicationFactor: 1, assignments: [], configs: [] },
        { name: 'ct3', numPartitions: 1, replicationFactor: 2, assignments: [], configs: [] },
        { name: 'dup', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] },
        { name: 'dup', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] },
      ],
    });
    const byName = new Map(r.topics.map((t) => [t.name, t]));
    assert.equal(byName.get('ct1')!.errorCode, 0);
    assert.equal(byName.get('ct1')!.numPartitions, 3);
    assert.equal(byName.get('ct2')!.errorCode, 37);
    assert.equal(byName.get('ct3')!.errorCode, 38);
    assert.equal(byName.get('dup')!.errorCode, 42);
    const again = await b.call<CreateTopicsResponse>(conn, 19, 4, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [{ name: 'ct1', numPartitions: 3, replicationFactor: 1, assignments: [], configs: [] }],
    });
    assert.equal(again.topics[0]!.errorCode, 36);
    assert.equal(b.broker.replicaManager.getPartition('ct1', 2)?.isLeader, true);
  });

  it('ElectLeaders on one broker: the only replica already leads (ELECTION_NOT_NEEDED); unknown partitions are named', async () => {
    await b.call<CreateTopicsResponse>(conn, 19, 5, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [{ name: 'elect', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
    });
    for (const version of [0, 2]) {
      const r = await b.call<ElectLeadersResponse>(conn, 43, version, {
        electionType: 0,
        topicPartitions: [{ topic: 'elect', partitions: [0, 5] }],
        timeoutMs: 1000,
      });
      assert.equal(r.errorCode, 0);
      assert.deepEqual(
        r.replicaElectionResults[0]!.partitionResult.map((p) => [p.partitionId, p.errorCode]),
        [
          [0, 84],
          [5, 3],
        ],
      );
    }
  });

  it('CreatePartitions grows a topic; DeleteTopics removes it and its logs', async () => {
    await b.call<CreateTopicsResponse>(conn, 19, 5, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [{ name: 'grow', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
    });
    const cp = await b.call<CreatePartitionsResponse>(conn, 37, 3, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [
        { name: 'grow', count: 4, assignments: null },
        { name: 'missing', count: 4, assignments: null },
      ],
    });
    assert.deepEqual(
      cp.results.map((x) => x.errorCode),
      [0, 3],
    );
    assert.ok(b.broker.replicaManager.getPartition('grow', 3));
    const shrink = await b.call<CreatePartitionsResponse>(conn, 37, 1, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [{ name: 'grow', count: 2, assignments: null }],
    });
    assert.equal(shrink.results[0]!.errorCode, 37);
    const log = b.broker.replicaManager.getPartition('grow', 0)!.log;
    const dt = await b.call<DeleteTopicsResponse>(conn, 20, 4, {
      topics: [],
      topicNames: ['grow', 'ghost'],
      timeoutMs: 1000,
    });
    assert.deepEqual(
      dt.responses.map((x) => [x.name, x.errorCode]),
      [
        ['grow', 0],
        ['ghost', 3],
      ],
    );
    assert.equal(b.broker.replicaManager.getPartition('grow', 0), undefined);
    const fs = await import('node:fs');
    assert.equal(fs.existsSync(log.dir), false);
  });

  it('DescribeCluster lists the broker; a controller endpoint type is refused', async () => {
    const r = await b.call<DescribeClusterResponse>(conn, 60, 1, {
      includeClusterAuthorizedOperations: false,
      endpointType: 1,
    });
    assert.equal(r.errorCode, 0);
    assert.deepEqual(
      r.brokers.map((x) => [x.brokerId, x.port]),
      [[1, b.port]],
    );
    const c = await b.call<DescribeClusterResponse>(conn, 60, 1, {
      includeClusterAuthorizedOperations: false,
      endpointType: 2,
    });
    assert.equal(c.errorCode, 115);
  });
});
