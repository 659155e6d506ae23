import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { CreateTopicsResponse } from '../../src/protocol/generated/CreateTopicsResponse.js';
import type { DeleteRecordsResponse } from '../../src/protocol/generated/DeleteRecordsResponse.js';
import {
  defaultFetchPartition,
  defaultFetchRequest,
  type FetchRequest,
} from '../../src/protocol/generated/FetchRequest.js';
import type { FetchResponse } from '../../src/protocol/generated/FetchResponse.js';
import type { InitProducerIdResponse } from '../../src/protocol/generated/InitProducerIdResponse.js';
import type { ListOffsetsResponse } from '../../src/protocol/generated/ListOffsetsResponse.js';
import { ProduceRequestCodec } from '../../src/protocol/generated/ProduceRequest.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import { decodeRecords } from '../../src/protocol/records/codec.js';
import { batchesIn } from '../../src/protocol/records/validate.js';
import { batch, startBroker, type TestBroker } from './helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function produce(
  b: TestBroker,
  conn: ClientConnection,
  topic: string,
  partition: number,
  records: Buffer,
  acks = -1,
  version = 9,
) {
  return b.call<ProduceResponse>(conn, 0, version, {
    transactionalId: null,
    acks,
    timeoutMs: 5000,
    topicData: [{ name: topic, partitionData: [{ index: partition, records }] }],
  });
}

function fetchReq(
  topic: string,
  partition: number,
  fetchOffset: bigint,
  extra: Partial<FetchRequest> = {},
): FetchRequest {
  return {
    ...defaultFetchRequest(),
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 1 << 20,
    topics: [
      {
        topic,
        topicId: 'AAAAAAAAAAAAAAAAAAAAAA',
        partitions: [{ ...defaultFetchPartition(), partition, fetchOffset, partitionMaxBytes: 1 << 20 }],
      },
    ],
    ...extra,
  };
}

function values(records: Buffer | null): string[] {
  const out: string[] = [];
  if (!records) return out;
  for (const e of batchesIn(records)) {
    const d = decodeRecords(records.subarray(e.pos, e.pos + e.size), { decompress: true });
    for (const r of d.records) out.push(r.value!.toString());
  }
  return out;
}

function listOffsets(b: TestBroker, conn: ClientConnection, topic: string, timestamp: bigint, version = 7) {
  return b.call<ListOffsetsResponse>(conn, 2, version, {
    replicaId: -1,
    isolationLevel: 0,
    timeoutMs: 1000,
    topics: [
      {
        name: topic,
        partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp, maxNumOffsets: 1 }],
      },
    ],
  });
}

describe('broker data path: produce, fetch, offsets, idempotence, sessions', () => {
  let b: TestBroker;
  let conn: ClientConnection;
  before(async () => {
    b = await startBroker();
    conn = await b.connect();
    const r = await b.call<CreateTopicsResponse>(conn, 19, 7, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: ['t', 'lp', 'sess', 'idem', 'lo', 'dr'].map((name) => ({
        name,
        numPartitions: 1,
        replicationFactor: 1,
        assignments: [],
        configs: [],
      })),
    });
    assert.ok(r.topics.every((t) => t.errorCode === 0));
  });
  after(async () => {
    await b.stop();
  });

  it('produces with acks=1 and -1 and fetches the records back', async () => {
    const p1 = await produce(b, conn, 't', 0, batch(3), 1);
    assert.equal(p1.responses[0]!.partitionResponses[0]!.errorCode, 0);
    assert.equal(p1.responses[0]!.partitionResponses[0]!.baseOffset, 0n);
    const p2 = await produce(b, conn, 't', 0, batch(2, { from: 3 }), -1, 3);
    assert.equal(p2.responses[0]!.partitionResponses[0]!.baseOffset, 3n);
    const f = await b.call<FetchResponse>(conn, 1, 11, fetchReq('t', 0, 0n));
    const pd = f.responses[0]!.partitions[0]!;
    assert.equal(pd.errorCode, 0);
    assert.equal(pd.highWatermark, 5n);
    assert.deepEqual(values(pd.records), ['value-0', 'value-1', 'value-2', 'value-3', 'value-4']);
    // Fetch v13+ names the topic by id.
    const topicId = b.metadata.image().topics.get('t')!.topicId;
    const byId = fetchReq('t', 0, 3n);
    byId.topics[0]!.topicId = topicId;
    const f13 = await b.call<FetchResponse>(conn, 1, 13, byId);
    assert.equal(f13.responses[0]!.topicId, topicId);
    assert.deepEqual(values(f13.responses[0]!.partitions[0]!.records), ['value-3', 'value-4']);
  });

  it('answers per-partition errors and INVALID_REQUIRED_ACKS', async () => {
    const unknown = await produce(b, conn, 'no-such-topic', 0, batch(1));
    assert.equal(unknown.responses[0]!.partitionResponses[0]!.errorCode, 3);
    const badAcks = await produce(b, conn, 't', 0, batch(1), 2);
    assert.equal(badAcks.responses[0]!.partitionResponses[0]!.errorCode, 21);
    const corrupt = batch(2);
    corrupt[corrupt.length - 1]! ^= 0xff;
    const c = await produce(b, conn, 't', 0, corrupt);
    assert.equal(c.responses[0]!.partitionResponses[0]!.errorCode, 2);
    const oor = await b.call<FetchResponse>(conn, 1, 11, fetchReq('t', 0, 1000n));
    assert.equal(oor.responses[0]!.partitions[0]!.errorCode, 1);
    const badId = fetchReq('t', 0, 0n);
    badId.topics[0]!.topicId = 'AAAAAAAAAAAAAAAAAAAAAQ';
    const f = await b.call<FetchResponse>(conn, 1, 13, badId);
    assert.equal(f.responses[0]!.partitions[0]!.errorCode, 100);
  });

  it('acks=0 gets no response; later requests on the connection are answered in order', async () => {
    await conn.sendOneWay(0, 9, ProduceRequestCodec, {
      transactionalId: null,
      acks: 0,
      timeoutMs: 1000,
      topicData: [{ name: 't', partitionData: [{ index: 0, records: batch(1, { from: 100 }) }] }],
    });
    const f = await b.call<FetchResponse>(conn, 1, 11, fetchReq('t', 0, 5n));
    assert.deepEqual(values(f.responses[0]!.partitions[0]!.records), ['value-100']);
  });

  it('long-polls: a fetch at the LEO waits until an append, or until maxWaitMs', async () => {
    const started = Date.now();
    const empty = await b.call<FetchResponse>(
      conn,
      1,
      11,
      fetchReq('lp', 0, 0n, { maxWaitMs: 150, minBytes: 1 }),
    );
    assert.ok(Date.now() - started >= 140, 'waited for maxWaitMs');
    assert.equal(empty.responses[0]!.partitions[0]!.records!.length, 0);
    const other = await b.connect();
    const t0 = Date.now();
    const waiting = b.call<FetchResponse>(
      conn,
      1,
      11,
      fetchReq('lp', 0, 0n, { maxWaitMs: 10_000, minBytes: 1 }),
    );
    await sleep(50);
    await produce(b, other, 'lp', 0, batch(2));
    const r = await waiting;
    assert.ok(Date.now() - t0 < 2000, 'woken by the append, not the timeout');
    assert.deepEqual(values(r.responses[0]!.partitions[0]!.records), ['value-0', 'value-1']);
  });

  it('a parked fetch ends when its client disconnects', async () => {
    const c = await b.connect();
    const atLeo = fetchReq('lp', 0, b.broker.replicaManager.getPartition('lp', 0)!.log.logEndOffset, {
      maxWaitMs: 60_000,
      minBytes: 1,
    });
    const parked = b.call<FetchResponse>(c, 1, 11, atLeo);
    parked.catch(() => {});
    const purgatory = b.broker.replication.purgatory;
    const until = Date.now() + 2000;
    while (purgatory.watched === 0 && Date.now() < until) await sleep(5);
    assert.equal(purgatory.watched, 1);
    c.close();
    while (purgatory.watched > 0 && Date.now() < until) await sleep(5);
    assert.equal(purgatory.watched, 0);
  });

  it('fetch sessions: full, then incremental answers carry only partitions with news', async () => {
    await produce(b, conn, 'sess', 0, batch(1));
    const full = await b.call<FetchResponse>(
      conn,
      1,
      12,
      fetchReq('sess', 0, 0n, { sessionId: 0, sessionEpoch: 0 }),
    );
    assert.notEqual(full.sessionId, 0);
    assert.deepEqual(values(full.responses[0]!.partitions[0]!.records), ['value-0']);
    const id = full.sessionId;
    const inc1 = await b.call<FetchResponse>(
      conn,
      1,
      12,
      fetchReq('sess', 0, 1n, { sessionId: id, sessionEpoch: 1 }),
    );
    assert.equal(inc1.errorCode, 0);
    assert.equal(inc1.responses.length, 0, 'nothing new: no partitions');
    await produce(b, conn, 'sess', 0, batch(1, { from: 1 }));
    const inc2 = await b.call<FetchResponse>(conn, 1, 12, {
      ...defaultFetchRequest(),
      maxBytes: 1 << 20,
      sessionId: id,
      sessionEpoch: 2,
    });
    assert.deepEqual(values(inc2.responses[0]!.partitions[0]!.records), ['value-1']);
    const stale = await b.call<FetchResponse>(conn, 1, 12, {
      ...defaultFetchRequest(),
      sessionId: id,
      sessionEpoch: 2,
    });
    assert.equal(stale.errorCode, 71);
    const unknown = await b.call<FetchResponse>(conn, 1, 12, {
      ...defaultFetchRequest(),
      sessionId: 12345,
      sessionEpoch: 1,
    });
    assert.equal(unknown.errorCode, 70);
    const closed = await b.call<FetchResponse>(
      conn,
      1,
      12,
      fetchReq('sess', 0, 0n, { sessionId: id, sessionEpoch: -1 }),
    );
    assert.equal(closed.sessionId, 0);
  });

  it('ListOffsets: earliest, latest, max timestamp and by timestamp', async () => {
    await produce(b, conn, 'lo', 0, batch(3, { timestamp: 1000n }));
    await produce(b, conn, 'lo', 0, batch(3, { timestamp: 5000n }));
    await produce(b, conn, 'lo', 0, batch(1, { timestamp: 2000n }));
    const at = async (ts: bigint) => (await listOffsets(b, conn, 'lo', ts)).topics[0]!.partitions[0]!;
    assert.equal((await at(-2n)).offset, 0n);
    assert.equal((await at(-1n)).offset, 7n);
    const max = await at(-3n);
    assert.deepEqual([max.offset, max.timestamp], [5n, 5002n]);
    const byTs = await at(1001n);
    assert.deepEqual([byTs.offset, byTs.timestamp], [1n, 1001n]);
    assert.equal((await at(99_999n)).offset, -1n);
    // v9 asks for the last tiered offset (KIP-1005), v10 adds a timeout for lookups in remote
    // storage (KIP-1075); without tiered storage there is none, and the earliest local is the log start.
    for (const version of [9, 10]) {
      const p = async (ts: bigint) =>
        (await listOffsets(b, conn, 'lo', ts, version)).topics[0]!.partitions[0]!;
      const tiered = await p(-5n);
      assert.deepEqual(
        [tiered.errorCode, tiered.offset, tiered.timestamp, tiered.leaderEpoch],
        [0, -1n, -1n, -1],
      );
      const local = await p(-4n);
      assert.deepEqual([local.errorCode, local.offset, local.timestamp], [0, 0n, -1n]);
      assert.equal((await p(-1n)).offset, 7n);
    }
  });

  it('DeleteRecords moves the log start offset; fetching below it is OFFSET_OUT_OF_RANGE', async () => {
    await produce(b, conn, 'dr', 0, batch(5));
    const r = await b.call<DeleteRecordsResponse>(conn, 21, 2, {
      timeoutMs: 1000,
      topics: [{ name: 'dr', partitions: [{ partitionIndex: 0, offset: 3n }] }],
    });
    assert.equal(r.topics[0]!.partitions[0]!.errorCode, 0);
    assert.equal(r.topics[0]!.partitions[0]!.lowWatermark, 3n);
    assert.equal((await listOffsets(b, conn, 'dr', -2n)).topics[0]!.partitions[0]!.offset, 3n);
    const f = await b.call<FetchResponse>(conn, 1, 11, fetchReq('dr', 0, 1n));
    assert.equal(f.responses[0]!.partitions[0]!.errorCode, 1);
    const beyond = await b.call<DeleteRecordsResponse>(conn, 21, 1, {
      timeoutMs: 1000,
      topics: [{ name: 'dr', partitions: [{ partitionIndex: 0, offset: 99n }] }],
    });
    assert.equal(beyond.topics[0]!.partitions[0]!.errorCode, 1);
  });

  it("DeleteRecords refuses what Kafka's deleteRecordsOnLeader refuses: bad offsets, compacted logs, internal topics", async () => {
    const created = await b.call<CreateTopicsResponse>(conn, 19, 7, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [
        {
          name: 'dr-compact',
          numPartitions: 1,
          replicationFactor: 1,
          assignments: [],
          configs: [{ name: 'cleanup.policy', value: 'compact' }],
        },
      ],
    });
    assert.equal(created.topics[0]!.errorCode, 0);
    const answer = async (name: string, offset: bigint) => {
      const r = await b.call<DeleteRecordsResponse>(conn, 21, 2, {
        timeoutMs: 1000,
        topics: [{ name, partitions: [{ partitionIndex: 0, offset }] }],
      });
      const p = r.topics[0]!.partitions[0]!;
      return [p.errorCode, p.lowWatermark];
    };
    assert.deepEqual(await answer('dr', -1001n), [1, -1n]); // OFFSET_OUT_OF_RANGE
    assert.deepEqual(await answer('dr', -2n), [1, -1n]);
    assert.deepEqual(await answer('dr-compact', 0n), [44, -1n]); // POLICY_VIOLATION
    // By name, as Kafka's Topic.isInternal: before looking for the partition.
    assert.deepEqual(await answer('__consumer_offsets', 0n), [17, -1n]); // INVALID_TOPIC_EXCEPTION
  });

  it('idempotent producer: a retried batch gets its original offset, a gap is OUT_OF_ORDER_SEQUENCE_NUMBER', async () => {
    const init = await b.call<InitProducerIdResponse>(conn, 22, 4, {
      transactionalId: null,
      transactionTimeoutMs: 60_000,
      producerId: -1n,
      producerEpoch: -1,
    });
    assert.equal(init.errorCode, 0);
    const pid = init.producerId;
    const first = await produce(b, conn, 'idem', 0, batch(2, { producerId: pid, baseSequence: 0 }));
    assert.equal(first.responses[0]!.partitionResponses[0]!.baseOffset, 0n);
    await produce(b, conn, 'idem', 0, batch(1, { producerId: pid, baseSequence: 2 }));
    const retry = await produce(b, conn, 'idem', 0, batch(2, { producerId: pid, baseSequence: 0 }));
    assert.equal(retry.responses[0]!.partitionResponses[0]!.errorCode, 0);
    assert.equal(retry.responses[0]!.partitionResponses[0]!.baseOffset, 0n);
    assert.equal(
      b.broker.replicaManager.getPartition('idem', 0)!.log.logEndOffset,
      3n,
      'no duplicate written',
    );
    const gap = await produce(b, conn, 'idem', 0, batch(1, { producerId: pid, baseSequence: 7 }));
    assert.equal(gap.responses[0]!.partitionResponses[0]!.errorCode, 45);
    const txn = await b.call<InitProducerIdResponse>(conn, 22, 4, {
      transactionalId: 'tx',
      transactionTimeoutMs: 60_000,
      producerId: -1n,
      producerEpoch: -1,
    });
    assert.notEqual(txn.errorCode, 0);
  });
});

describe('broker restart', () => {
  it('keeps topics, topic ids and records across a clean restart', async () => {
    const first = await startBroker();
    const c1 = await first.connect();
    await first.call<CreateTopicsResponse>(c1, 19, 7, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [{ name: 'keep', numPartitions: 2, replicationFactor: 1, assignments: [], configs: [] }],
    });
    await produce(first, c1, 'keep', 1, batch(4));
    const topicId = first.metadata.image().topics.get('keep')!.topicId;
    await first.stop();
    const second = await startBroker({}, first.dir);
    try {
      assert.equal(second.metadata.image().topics.get('keep')!.topicId, topicId);
      const c2 = await second.connect();
      const f = await second.call<FetchResponse>(c2, 1, 11, fetchReq('keep', 1, 0n));
      assert.equal(f.responses[0]!.partitions[0]!.highWatermark, 4n);
      assert.deepEqual(values(f.responses[0]!.partitions[0]!.records), [
        'value-0',
        'value-1',
        'value-2',
        'value-3',
      ]);
      assert.ok(second.logger.lines.some((l) => l.includes('clean shutdown')));
    } finally {
      await second.stop();
    }
  });

  it("partition.metadata: Kafka's topic id file in each partition directory, checked against the metadata at start-up", async () => {
    const first = await startBroker();
    const c1 = await first.connect();
    await first.call<CreateTopicsResponse>(c1, 19, 7, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [{ name: 'ids', numPartitions: 3, replicationFactor: 1, assignments: [], configs: [] }],
    });
    for (const p of [0, 1, 2]) await produce(first, c1, 'ids', p, batch(2));
    const topicId = first.metadata.image().topics.get('ids')!.topicId;
    await first.stop();
    const logDir = path.join(first.dir, 'logs');
    const file = (p: number) => path.join(logDir, `ids-${p}`, 'partition.metadata');
    for (const p of [0, 1, 2]) {
      assert.deepEqual(fs.readFileSync(file(p)), Buffer.from(`version: 0\ntopic_id: ${topicId}`, 'utf8'));
    }
    // ids-1 as an earlier topic named `ids` left it; ids-2 as a Skiff before the file left it.
    const earlier = 'q1w2e3r4t5y6u7i8o9p0aQ';
    fs.writeFileSync(file(1), `version: 0\ntopic_id: ${earlier}`);
    fs.rmSync(file(2));
    const second = await startBroker({}, first.dir);
    try {
      const c2 = await second.connect();
      const hw = async (p: number) =>
        (await second.call<FetchResponse>(c2, 1, 11, fetchReq('ids', p, 0n))).responses[0]!.partitions[0]!
          .highWatermark;
      assert.deepEqual(await Promise.all([0, 1, 2].map(hw)), [2n, 0n, 2n]);
      assert.ok(
        second.logger.lines.some((l) =>
          l.includes(`ids-1: its log holds topic id ${earlier}, not ${topicId}: a log of an earlier topic`),
        ),
      );
      assert.ok(fs.readdirSync(logDir).some((n) => n.startsWith('ids-1.') && n.endsWith('-delete')));
      for (const p of [0, 1, 2])
        assert.equal(fs.readFileSync(file(p), 'utf8'), `version: 0\ntopic_id: ${topicId}`);
    } finally {
      await second.stop();
    }
  });

  it('imports the skiff-metadata.json of a pre-one-model single broker: same cluster, topics, ids, configs, records', async () => {
    const first = await startBroker();
    const c1 = await first.connect();
    await first.call<CreateTopicsResponse>(c1, 19, 7, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [{ name: 'old', numPartitions: 2, replicationFactor: 1, assignments: [], configs: [] }],
    });
    await produce(first, c1, 'old', 1, batch(3));
    const image = first.metadata.image();
    const topicId = image.topics.get('old')!.topicId;
    await first.stop();
    // The log dir as the in-memory metadata left it: its JSON file, no metadata store.
    const logDir = path.join(first.dir, 'logs');
    fs.rmSync(path.join(logDir, 'skiff-metadata'), { recursive: true });
    const legacy = {
      version: 1,
      clusterId: image.clusterId,
      topics: [{ name: 'old', topicId, internal: false, replicas: [[1], [1]] }],
      topicConfigs: { old: { 'retention.ms': '86400000' } },
      brokerConfigs: { '<default>': { 'log.segment.bytes': '2097152' } },
    };
    fs.writeFileSync(path.join(logDir, 'skiff-metadata.json'), JSON.stringify(legacy));
    const second = await startBroker({}, first.dir);
    try {
      const now = second.metadata.image();
      assert.equal(now.clusterId, image.clusterId);
      assert.equal(now.topics.get('old')!.topicId, topicId);
      assert.deepEqual(now.topicConfigs.get('old'), { 'retention.ms': '86400000' });
      assert.deepEqual(now.brokerConfigs.get('<default>'), { 'log.segment.bytes': '2097152' });
      const c2 = await second.connect();
      const f = await second.call<FetchResponse>(c2, 1, 11, fetchReq('old', 1, 0n));
      assert.deepEqual(values(f.responses[0]!.partitions[0]!.records), ['value-0', 'value-1', 'value-2']);
      assert.ok(fs.existsSync(path.join(logDir, 'skiff-metadata.json.imported')));
      assert.ok(!fs.existsSync(path.join(logDir, 'skiff-metadata.json')));
      assert.ok(second.logger.lines.some((l) => l.includes('imported 1 topics of cluster')));
    } finally {
      await second.stop();
    }
  });

  it("refuses to start on another node's log dir (meta.properties)", async () => {
    const first = await startBroker({ 'node.id': '1' });
    await first.stop();
    const meta = fs.readFileSync(path.join(first.dir, 'logs', 'meta.properties'), 'utf8');
    assert.match(meta, /node\.id=1/);
    assert.ok(meta.includes(`cluster.id=${first.metadata.image().clusterId}`));
    await assert.rejects(
      startBroker({ 'node.id': '2' }, first.dir),
      /stored node id 1 doesn't match the configured node.id 2/,
    );
  });
});
