/**
 * Our request decoders against bytes real clients sent (test/fixtures/clients, recorded by
 * `npm run fixtures`). Every frame goes through FrameReader, readRequest and the generated codec,
 * must be consumed to the last byte, must carry the values the recording session used, and must
 * re-encode to the identical bytes. Needs none of the clients installed.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ZERO_UUID } from '../../src/protocol/codec-runtime.js';
import { FrameReader } from '../../src/protocol/framing.js';
import type { ApiVersionsRequest } from '../../src/protocol/generated/ApiVersionsRequest.js';
import type { FetchRequest } from '../../src/protocol/generated/FetchRequest.js';
import { API_MESSAGES, requestHeaderVersion } from '../../src/protocol/generated/index.js';
import type { ListOffsetsRequest } from '../../src/protocol/generated/ListOffsetsRequest.js';
import type { MetadataRequest } from '../../src/protocol/generated/MetadataRequest.js';
import type { ProduceRequest } from '../../src/protocol/generated/ProduceRequest.js';
import { encodeRequest } from '../../src/protocol/messages.js';
import {
  batchesIn,
  CompressionCodec,
  compressionCodec,
  decodeRecords,
  NO_PRODUCER_ID,
  validateBatch,
  validateBatchDeep,
} from '../../src/protocol/records/index.js';
import { readRequest } from '../../src/protocol/request-frame.js';
import { topicIdOf } from '../../tools/capture/capture-server.js';

const FIXTURES = resolve(fileURLToPath(import.meta.url), '../../../../test/fixtures/clients');

interface Fixture {
  client: string;
  apiKey: number;
  apiVersion: number;
  clientId: string | null;
  frameHex: string;
  note: string;
}

/** What each recording session did (tools/capture/record-fixtures.ts), hence what its frames hold. */
interface ClientExpectations {
  files: string[];
  clientId: RegExp;
  /** ApiVersions v3+ only: ClientSoftwareName / ClientSoftwareVersion. */
  software?: { name: string; version: string };
  topic: string;
  acks: number;
  produceTimeoutMs: number;
  compression: number;
  recordHeaders: { key: string; value: string }[];
  isolationLevel: number;
  /** -1: no fetch session (librdkafka 2.0, kafka-python); 0: a full fetch opening one. */
  fetchSessionEpoch: number;
}

const RECORDS = [
  { key: 'k0', value: 'v0' },
  { key: 'k1', value: 'v1' },
  { key: 'k2', value: 'v2' },
];

const CLIENTS: Record<string, ClientExpectations> = {
  kcat: {
    files: ['ApiVersions-v3', 'Fetch-v11', 'ListOffsets-v2', 'Metadata-v4', 'Produce-v7'],
    // librdkafka's default client.id; kcat does not set one.
    clientId: /^rdkafka$/,
    software: { name: 'librdkafka', version: '2.0.2' },
    topic: 'skiff-kcat',
    acks: -1,
    produceTimeoutMs: 30_000,
    compression: CompressionCodec.none,
    recordHeaders: [],
    // librdkafka's isolation.level defaults to read_committed.
    isolationLevel: 1,
    fetchSessionEpoch: -1,
  },
  'kafka-python': {
    files: ['ApiVersions-v0', 'Fetch-v4', 'ListOffsets-v1', 'Metadata-v0', 'Metadata-v1', 'Produce-v7'],
    // kafka-python-producer-1 for the producer, kafka-python-2.0.2 for the consumer.
    clientId: /^kafka-python-(producer-1|2\.0\.2)$/,
    topic: 'skiff-kafka-python',
    acks: 1,
    produceTimeoutMs: 30_000,
    compression: CompressionCodec.none,
    recordHeaders: [],
    isolationLevel: 0,
    fetchSessionEpoch: -1,
  },
  kafkajs: {
    files: ['ApiVersions-v2', 'Fetch-v11', 'Metadata-v6', 'Produce-v7'],
    clientId: /^skiff-fixtures-kafkajs$/,
    topic: 'skiff-kafkajs',
    acks: -1,
    produceTimeoutMs: 30_000,
    compression: CompressionCodec.gzip,
    recordHeaders: [{ key: 'source', value: 'kafkajs' }],
    isolationLevel: 0,
    fetchSessionEpoch: -1,
  },
  'platformatic-kafka': {
    files: ['ApiVersions-v3', 'Fetch-v17', 'ListOffsets-v9', 'Metadata-v12', 'Produce-v11'],
    clientId: /^skiff-fixtures-platformatic$/,
    software: { name: 'platformatic-kafka', version: '2.12.1' },
    topic: 'skiff-platformatic',
    acks: 1,
    produceTimeoutMs: 5_000,
    compression: CompressionCodec.none,
    recordHeaders: [{ key: 'source', value: 'platformatic' }],
    isolationLevel: 0,
    fetchSessionEpoch: 0,
  },
};

/** The topics each Metadata frame asked for: null and (before v1) [] both mean "all topics". */
const METADATA_REQUESTS: Record<string, { topics: string[] | null; allowAutoTopicCreation: boolean }> = {
  // librdkafka's first request only learns the brokers: an empty list (v1+), not "all topics".
  'kcat/Metadata-v4': { topics: [], allowAutoTopicCreation: false },
  'kafka-python/Metadata-v0': { topics: [], allowAutoTopicCreation: true },
  'kafka-python/Metadata-v1': { topics: null, allowAutoTopicCreation: true },
  'kafkajs/Metadata-v6': { topics: ['skiff-kafkajs'], allowAutoTopicCreation: true },
  'platformatic-kafka/Metadata-v12': { topics: ['skiff-platformatic'], allowAutoTopicCreation: false },
};

function loadFixtures(): { file: string; fixture: Fixture }[] {
  const out: { file: string; fixture: Fixture }[] = [];
  for (const client of readdirSync(FIXTURES, { withFileTypes: true })) {
    if (!client.isDirectory()) continue;
    for (const name of readdirSync(join(FIXTURES, client.name)).sort()) {
      const fixture = JSON.parse(readFileSync(join(FIXTURES, client.name, name), 'utf8')) as Fixture;
      out.push({ file: `${client.name}/${name.replace(/\.json$/, '')}`, fixture });
    }
  }
  return out;
}

const fixtures = loadFixtures();

function expectationsOf(f: Fixture): ClientExpectations {
  const e = CLIENTS[f.client];
  assert.ok(e, `no expectations for client ${f.client}`);
  return e;
}

function checkApiVersions(f: Fixture, body: ApiVersionsRequest): void {
  const { software } = expectationsOf(f);
  if (f.apiVersion >= 3) {
    assert.ok(software, `${f.client} sent ApiVersions v${f.apiVersion} but no software name is expected`);
    assert.equal(body.clientSoftwareName, software.name);
    assert.equal(body.clientSoftwareVersion, software.version);
  } else {
    // Not on the wire before v3: the decoder fills the defaults.
    assert.equal(body.clientSoftwareName, '');
    assert.equal(body.clientSoftwareVersion, '');
  }
}

function checkMetadata(file: string, body: MetadataRequest): void {
  const expected = METADATA_REQUESTS[file];
  assert.ok(expected, `no expectations for ${file}`);
  assert.deepEqual(body.topics?.map((t) => t.name) ?? null, expected.topics);
  // Clients name topics; none of them asks by topic id.
  for (const t of body.topics ?? []) assert.equal(t.topicId, ZERO_UUID);
  assert.equal(body.allowAutoTopicCreation, expected.allowAutoTopicCreation);
}

function checkProduce(f: Fixture, body: ProduceRequest): void {
  const e = expectationsOf(f);
  assert.equal(body.acks, e.acks);
  assert.equal(body.timeoutMs, e.produceTimeoutMs);
  assert.equal(body.transactionalId, null);
  assert.equal(body.topicData.length, 1);
  const [topic] = body.topicData;
  assert.equal(topic?.name, e.topic);
  assert.equal(topic?.partitionData.length, 1);
  const [partition] = topic?.partitionData ?? [];
  assert.equal(partition?.index, 0);
  const records = partition?.records;
  assert.ok(records, 'Produce carries records');

  const scan = batchesIn(records);
  const batches = [...scan];
  assert.equal(scan.invalid, null);
  assert.equal(scan.validEnd, records.length);
  assert.equal(batches.length, 1, 'all three records in one batch');
  const shallow = validateBatch(records, 0);
  assert.ok(shallow.ok, `batch invalid: ${shallow.ok ? '' : shallow.detail}`);
  // Deep validation is the broker's produce-side check: records parse, offsetDeltas are 0..n-1.
  const deep = validateBatchDeep(records, 0, records.length, { decompress: true });
  assert.ok(deep.ok, `batch invalid: ${deep.ok ? '' : deep.detail}`);

  const { header, records: decoded } = decodeRecords(records, { decompress: true });
  assert.equal(header.magic, 2);
  assert.equal(header.baseOffset, 0n);
  assert.equal(compressionCodec(header.attributes), e.compression);
  // None of the sessions is idempotent.
  assert.equal(header.producerId, NO_PRODUCER_ID);
  assert.equal(header.recordsCount, RECORDS.length);
  assert.deepEqual(
    decoded.map((r) => ({
      key: r.key?.toString(),
      value: r.value?.toString(),
      headers: r.headers.map((h) => ({ key: h.key, value: h.value?.toString() })),
    })),
    RECORDS.map((r) => ({ ...r, headers: e.recordHeaders })),
  );
  assert.deepEqual(
    decoded.map((r) => r.offsetDelta),
    [0, 1, 2],
  );
}

function checkFetch(f: Fixture, body: FetchRequest): void {
  const e = expectationsOf(f);
  assert.equal(body.replicaId, -1);
  assert.equal(body.replicaState.replicaId, -1);
  assert.equal(body.maxWaitMs, 500);
  assert.equal(body.minBytes, 1);
  assert.equal(body.isolationLevel, e.isolationLevel);
  assert.equal(body.sessionId, 0);
  assert.equal(body.sessionEpoch, e.fetchSessionEpoch);
  assert.equal(body.topics.length, 1);
  const [topic] = body.topics;
  // v13 replaced the topic name by the topic id the Metadata response gave.
  if (f.apiVersion >= 13) {
    assert.equal(topic?.topic, '');
    assert.equal(topic?.topicId, topicIdOf(e.topic));
  } else {
    assert.equal(topic?.topic, e.topic);
    assert.equal(topic?.topicId, ZERO_UUID);
  }
  assert.equal(topic?.partitions.length, 1);
  const [p] = topic?.partitions ?? [];
  assert.equal(p?.partition, 0);
  assert.equal(p?.fetchOffset, 0n);
  assert.equal(p?.partitionMaxBytes, 1_048_576);
  assert.deepEqual(body.forgottenTopicsData, []);
}

function checkListOffsets(f: Fixture, body: ListOffsetsRequest): void {
  const e = expectationsOf(f);
  assert.equal(body.replicaId, -1);
  assert.equal(body.topics.length, 1);
  assert.equal(body.topics[0]?.name, e.topic);
  const [p] = body.topics[0]?.partitions ?? [];
  assert.equal(p?.partitionIndex, 0);
  // -2: the earliest offset, what "from the beginning" asks for.
  assert.equal(p?.timestamp, -2n);
}

describe('request frames recorded from real clients', () => {
  it('has the fixtures every client session produced', () => {
    for (const [client, e] of Object.entries(CLIENTS)) {
      const files = fixtures.filter((x) => x.fixture.client === client).map((x) => x.file);
      assert.deepEqual(
        files.sort(),
        e.files.map((name) => `${client}/${name}`),
      );
    }
    assert.equal(
      fixtures.length,
      Object.values(CLIENTS).reduce((n, e) => n + e.files.length, 0),
    );
  });

  for (const { file, fixture: f } of fixtures) {
    it(`${file} decodes to the last byte, holds what was sent and re-encodes identically`, () => {
      const bytes = Buffer.from(f.frameHex, 'hex');
      const reader = new FrameReader();
      const frames = reader.push(bytes);
      assert.equal(frames.length, 1);
      assert.equal(reader.bufferedBytes, 0);
      const frame = frames[0] as Buffer;

      const { header, headerVersion, body } = readRequest(frame);
      assert.equal(header.requestApiKey, f.apiKey);
      assert.equal(header.requestApiVersion, f.apiVersion);
      assert.equal(headerVersion, requestHeaderVersion(f.apiKey, f.apiVersion));
      assert.equal(header.clientId, f.clientId);
      assert.match(header.clientId ?? '', expectationsOf(f).clientId);

      const api = API_MESSAGES.get(f.apiKey);
      assert.ok(api, `unknown API key ${f.apiKey}`);
      assert.equal(file, `${f.client}/${api.name}-v${f.apiVersion}`);
      const decoded = api.request.decode(body, f.apiVersion);
      assert.equal(body.remaining, 0, `${body.remaining} bytes left after the body`);

      switch (api.name) {
        case 'ApiVersions':
          checkApiVersions(f, decoded as ApiVersionsRequest);
          break;
        case 'Metadata':
          checkMetadata(file, decoded as MetadataRequest);
          break;
        case 'Produce':
          checkProduce(f, decoded as ProduceRequest);
          break;
        case 'Fetch':
          checkFetch(f, decoded as FetchRequest);
          break;
        case 'ListOffsets':
          checkListOffsets(f, decoded as ListOffsetsRequest);
          break;
        default:
          assert.fail(`no field checks for ${api.name}`);
      }

      // Every recorded client writes canonical encodings (minimal varints, no unknown tagged
      // fields, the header version its API version implies), so the round trip is exact. A client
      // that does not would need an exception here, with the reason.
      const reencoded = Buffer.concat(encodeRequest(header, api.request, decoded));
      assert.equal(reencoded.toString('hex'), f.frameHex);
    });
  }
});
