import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BROKER_API_VERSIONS } from '../../src/broker/api-versions.js';
import { brokerConfigFromProperties, parseProperties, topicLogConfig } from '../../src/broker/config.js';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { CreateTopicsResponse } from '../../src/protocol/generated/CreateTopicsResponse.js';
import { defaultFetchPartition, defaultFetchRequest } from '../../src/protocol/generated/FetchRequest.js';
import type { FetchResponse } from '../../src/protocol/generated/FetchResponse.js';
import { API_MESSAGES } from '../../src/protocol/generated/index.js';
import type { OffsetForLeaderEpochResponse } from '../../src/protocol/generated/OffsetForLeaderEpochResponse.js';
import { ProduceRequestCodec } from '../../src/protocol/generated/ProduceRequest.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import { batchesIn } from '../../src/protocol/records/validate.js';
import { logConfig } from '../../src/storage/log-config.js';
import { batch, startBroker, type TestBroker } from './helpers.js';

describe('the implemented API list', () => {
  it('only claims versions the generated codecs can read and write', () => {
    for (const [apiKey, v] of BROKER_API_VERSIONS) {
      const api = API_MESSAGES.get(apiKey)!;
      assert.ok(v.min >= api.request.minVersion && v.max <= api.request.maxVersion, api.name);
      assert.ok(v.min >= api.response.minVersion && v.max <= api.response.maxVersion, api.name);
    }
  });
});

describe('server.properties', () => {
  it("reads Kafka's names, defaults and listeners", () => {
    const c = brokerConfigFromProperties(
      parseProperties(
        [
          '# a comment',
          'node.id=3',
          'listeners=PLAINTEXT://0.0.0.0:9099',
          'log.dirs=/a, /b',
          'num.partitions=6',
          'auto.create.topics.enable=false',
          'log.retention.hours=1',
          'message.max.bytes: 2000',
        ].join('\n'),
      ),
    );
    assert.equal(c.nodeId, 3);
    assert.deepEqual(c.listeners, [
      { listenerName: 'PLAINTEXT', securityProtocol: 'PLAINTEXT', host: '0.0.0.0', port: 9099 },
    ]);
    assert.equal(c.advertisedListeners[0]!.host, '127.0.0.1');
    assert.equal(c.advertisedListeners[0]!.port, 9099);
    assert.deepEqual(c.logDirs, ['/a', '/b']);
    assert.equal(c.numPartitions, 6);
    assert.equal(c.autoCreateTopicsEnable, false);
    assert.equal(c.log.retentionMs, 3_600_000);
    assert.equal(c.log.maxMessageBytes, 2000);
    assert.equal(c.connectionsMaxIdleMs, 600_000);
    assert.throws(() => brokerConfigFromProperties(parseProperties('num.partitions=zero')), /num.partitions/);
    assert.throws(
      () => brokerConfigFromProperties(parseProperties('listeners=FOO://h:1')),
      /No security protocol defined for listener FOO/,
    );
    const warnings: string[] = [];
    brokerConfigFromProperties(parseProperties('frobnicate=1'), (w) => warnings.push(w));
    assert.match(warnings[0]!, /frobnicate/);
  });

  it('applies topic overrides on the broker log config', () => {
    const c = topicLogConfig(logConfig(), {
      'retention.ms': '10',
      'max.message.bytes': '99',
      'message.timestamp.type': 'LogAppendTime',
      'message.timestamp.before.max.ms': '3600000',
      'message.timestamp.after.max.ms': '9223372036854775807',
    });
    assert.equal(c.retentionMs, 10);
    assert.equal(c.maxMessageBytes, 99);
    assert.equal(c.messageTimestampType, 'LogAppendTime');
    assert.equal(c.messageTimestampBeforeMaxMs, 3_600_000);
    assert.equal(c.messageTimestampAfterMaxMs, Number.POSITIVE_INFINITY);
    const b = brokerConfigFromProperties(parseProperties('log.message.timestamp.after.max.ms=5000'));
    assert.equal(b.log.messageTimestampAfterMaxMs, 5000);
    assert.equal(b.log.messageTimestampBeforeMaxMs, Number.POSITIVE_INFINITY);
    assert.equal(
      brokerConfigFromProperties(parseProperties('log.roll.jitter.hours=2')).log.segmentJitterMs,
      7_200_000,
    );
    assert.equal(brokerConfigFromProperties(parseProperties('log.roll.jitter.ms=5')).log.segmentJitterMs, 5);
    assert.equal(topicLogConfig(logConfig(), { 'segment.jitter.ms': '7' }).segmentJitterMs, 7);
    assert.equal(topicLogConfig(logConfig(), { preallocate: 'true' }).preallocate, true);
    assert.equal(brokerConfigFromProperties(parseProperties('log.preallocate=true')).log.preallocate, true);
  });
});

describe('broker limits and edge cases', () => {
  let b: TestBroker;
  let conn: ClientConnection;
  before(async () => {
    b = await startBroker();
    conn = await b.connect();
    await b.call<CreateTopicsResponse>(conn, 19, 7, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [
        { name: 'lim', numPartitions: 2, replicationFactor: 1, assignments: [], configs: [] },
        {
          name: 'small',
          numPartitions: 1,
          replicationFactor: 1,
          assignments: [],
          configs: [{ name: 'max.message.bytes', value: '200' }],
        },
      ],
    });
  });
  after(async () => {
    await b.stop();
  });

  const produce = (topic: string, partition: number, records: Buffer) =>
    b.call<ProduceResponse>(conn, 0, 9, {
      transactionalId: null,
      acks: 1,
      timeoutMs: 1000,
      topicData: [{ name: topic, partitionData: [{ index: partition, records }] }],
    });

  it('refuses a batch above the topic max.message.bytes with MESSAGE_TOO_LARGE', async () => {
    const r = await produce('small', 0, batch(50));
    assert.equal(r.responses[0]!.partitionResponses[0]!.errorCode, 10);
  });

  it('keeps per-partition and response byte limits, returning at least one batch first', async () => {
    for (let i = 0; i < 3; i++) {
      await produce('lim', 0, batch(20, { from: i * 20 }));
      await produce('lim', 1, batch(20, { from: i * 20 }));
    }
    // Three batches of nearly equal size; the response limit is one and a half of them.
    const one = Math.floor(b.broker.replicaManager.getPartition('lim', 0)!.log.size / 3);
    const r = await b.call<FetchResponse>(conn, 1, 11, {
      ...defaultFetchRequest(),
      maxBytes: Math.floor(one * 1.5),
      topics: [
        {
          topic: 'lim',
          topicId: 'AAAAAAAAAAAAAAAAAAAAAA',
          partitions: [
            { ...defaultFetchPartition(), partition: 0, fetchOffset: 0n, partitionMaxBytes: 10 },
            { ...defaultFetchPartition(), partition: 1, fetchOffset: 0n, partitionMaxBytes: 1 << 20 },
          ],
        },
      ],
    });
    const [p0, p1] = r.responses[0]!.partitions;
    // A 10-byte partition limit still returns the first whole batch (minOneMessage)...
    assert.equal([...batchesIn(p0!.records!)].length, 1);
    const first = p0!.records!.length;
    // ...and the second partition gets only what is left of the response limit: no whole batch.
    assert.equal(p1!.records!.length, Math.floor(one * 1.5) - first);
    assert.equal([...batchesIn(p1!.records!)].length, 0);
  });

  it('OffsetForLeaderEpoch answers the end offset of an epoch', async () => {
    const r = await b.call<OffsetForLeaderEpochResponse>(conn, 23, 4, {
      replicaId: -1,
      topics: [{ topic: 'lim', partitions: [{ partition: 0, currentLeaderEpoch: 0, leaderEpoch: 0 }] }],
    });
    const p = r.topics[0]!.partitions[0]!;
    assert.equal(p.errorCode, 0);
    assert.deepEqual([p.leaderEpoch, p.endOffset], [0, 60n]);
    const fenced = await b.call<OffsetForLeaderEpochResponse>(conn, 23, 4, {
      replicaId: -1,
      topics: [{ topic: 'lim', partitions: [{ partition: 0, currentLeaderEpoch: 5, leaderEpoch: 0 }] }],
    });
    assert.equal(fenced.topics[0]!.partitions[0]!.errorCode, 75);
  });

  it('acks=0 with a failed partition closes the connection so the producer notices', async () => {
    const c = await b.connect('acks0');
    const closed = c.closed();
    await c.sendOneWay(0, 9, ProduceRequestCodec, {
      transactionalId: null,
      acks: 0,
      timeoutMs: 1000,
      topicData: [{ name: 'nope', partitionData: [{ index: 0, records: batch(1) }] }],
    });
    await closed;
    assert.ok(b.logger.lines.some((l) => l.includes('acks=0 produce failed for nope-0')));
  });
});
