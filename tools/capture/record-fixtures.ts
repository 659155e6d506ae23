/**
 * Records the request frames real Kafka clients send and keeps the first frame of each
 * (client, API, version) as a fixture in test/fixtures/clients/<client>/<Api>-v<version>.json,
 * for test/protocol/client-fixtures.test.ts. Each client gets its own capture server (fresh logs)
 * and runs the same small session: connect, metadata, produce, and consume where the client can
 * without a consumer group. Needs kcat, /usr/bin/python3 with kafka-python, and the kafkajs and
 * @platformatic/kafka devDependencies; the test that reads the fixtures needs none of them.
 *
 * Run: npm run fixtures
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Connection,
  fetchV17,
  listOffsetsV9,
  metadataV12,
  Producer,
  stringSerializers,
} from '@platformatic/kafka';
import { CompressionTypes, Kafka, logLevel } from 'kafkajs';
import { FetchResponseCodec } from '../../src/protocol/generated/FetchResponse.js';
import { API_MESSAGES } from '../../src/protocol/generated/index.js';
import { readResponse } from '../../src/protocol/messages.js';
import { decodeRecords } from '../../src/protocol/records/codec.js';
import { batchesIn } from '../../src/protocol/records/validate.js';
import { type CapturedFrame, startCaptureServer } from './capture-server.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const FIXTURES = join(ROOT, 'test', 'fixtures', 'clients');
const PYTHON = '/usr/bin/python3';
// Every client process or session is bounded: a client that cannot get through fails the run.
const CLIENT_TIMEOUT_MS = 60_000;

/** What the test expects to find in the fixtures; keep in step with client-fixtures.test.ts. */
const KAFKAJS_CLIENT_ID = 'skiff-fixtures-kafkajs';
const PLATFORMATIC_CLIENT_ID = 'skiff-fixtures-platformatic';
const RECORDS = [
  { key: 'k0', value: 'v0' },
  { key: 'k1', value: 'v1' },
  { key: 'k2', value: 'v2' },
];

interface Step {
  /** Recorded in each fixture's note: what produced the frame. */
  label: string;
  run: (broker: string) => Promise<void>;
}

interface ClientSession {
  client: string;
  version: string;
  topic: string;
  steps: Step[];
}

interface Fixture {
  client: string;
  apiKey: number;
  apiVersion: number;
  clientId: string | null;
  frameHex: string;
  note: string;
}

function run(cmd: string, args: string[], input = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], timeout: CLIENT_TIMEOUT_MS });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve(stdout);
      else reject(new Error(`${cmd} ${args.join(' ')} exited ${code ?? signal}: ${stderr}`));
    });
    // A child that exits before reading its input fails through its exit code, not EPIPE here.
    child.stdin.on('error', () => {});
    child.stdin.end(input);
  });
}

async function withTimeout<T>(label: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${label}: no result after ${CLIENT_TIMEOUT_MS} ms`)),
      CLIENT_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function expectOutput(label: string, actual: string, expected: string): void {
  if (actual.trim() !== expected.trim()) throw new Error(`${label}: got ${JSON.stringify(actual)}`);
}

function packageVersion(name: string): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8'));
  return `${name} ${pkg.version}`;
}

// librdkafka's 5 ms default may split the three lines into several batches; one batch keeps the
// fixture the same from one recording to the next.
const LINGER = 'linger.ms=200';

async function kcatSession(): Promise<ClientSession> {
  const v = (await run('kcat', ['-V'])).match(/Version (\S+) .*librdkafka (\S+)/);
  const topic = 'skiff-kcat';
  const keyed = RECORDS.map((r) => `${r.key}:${r.value}\n`).join('');
  return {
    client: 'kcat',
    version: v ? `kcat ${v[1]}, librdkafka ${v[2]}` : 'kcat (unknown version)',
    topic,
    steps: [
      { label: 'kcat -L', run: async (b) => void (await run('kcat', ['-b', b, '-L'])) },
      {
        label: `kcat -P -K: -X ${LINGER} -t ${topic}`,
        run: async (b) => void (await run('kcat', ['-b', b, '-P', '-K:', '-X', LINGER, '-t', topic], keyed)),
      },
      {
        label: `kcat -C -o beginning -e -K: -t ${topic}`,
        run: async (b) => {
          const out = await run('kcat', ['-b', b, '-C', '-o', 'beginning', '-e', '-K:', '-t', topic]);
          expectOutput('kcat consume', out, keyed);
        },
      },
    ],
  };
}

// Assign (no group) so that the consumer needs only ListOffsets and Fetch; linger_ms as for kcat.
const KAFKA_PYTHON_SCRIPT = `
import sys
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
broker, topic, mode = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == 'produce':
    p = KafkaProducer(bootstrap_servers=broker, linger_ms=200)
    for k, v in [('k0', 'v0'), ('k1', 'v1'), ('k2', 'v2')]:
        p.send(topic, key=k.encode(), value=v.encode())
    p.flush()
    p.close()
else:
    c = KafkaConsumer(bootstrap_servers=broker, group_id=None, enable_auto_commit=False)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = []
    for _ in range(40):
        for records in c.poll(timeout_ms=250).values():
            got += ['%s:%s' % (r.key.decode(), r.value.decode()) for r in records]
        if len(got) >= 3:
            break
    c.close()
    print('\\n'.join(got))
`;

async function kafkaPythonSession(): Promise<ClientSession> {
  const version = (await run(PYTHON, ['-c', 'import kafka; print(kafka.__version__)'])).trim();
  const topic = 'skiff-kafka-python';
  const script = (mode: string) => async (b: string) =>
    run(PYTHON, ['-c', KAFKA_PYTHON_SCRIPT, b, topic, mode]);
  return {
    client: 'kafka-python',
    version: `kafka-python ${version}`,
    topic,
    steps: [
      { label: 'KafkaProducer send + flush', run: async (b) => void (await script('produce')(b)) },
      {
        label: 'KafkaConsumer assign + seek_to_beginning + poll',
        run: async (b) => {
          const out = await script('consume')(b);
          expectOutput('kafka-python consume', out, RECORDS.map((r) => `${r.key}:${r.value}`).join('\n'));
        },
      },
    ],
  };
}

function kafkajsSession(): ClientSession {
  const topic = 'skiff-kafkajs';
  const kafka = (b: string) =>
    new Kafka({ clientId: KAFKAJS_CLIENT_ID, brokers: [b], logLevel: logLevel.NOTHING });
  return {
    client: 'kafkajs',
    version: packageVersion('kafkajs'),
    topic,
    steps: [
      {
        label: 'producer.send, gzip, acks -1, a header per record',
        run: async (b) => {
          const producer = kafka(b).producer();
          await producer.connect();
          const messages = RECORDS.map((r) => ({ ...r, headers: { source: 'kafkajs' } }));
          await producer.send({ topic, acks: -1, compression: CompressionTypes.GZIP, messages });
          await producer.disconnect();
        },
      },
      {
        label: 'admin.fetchTopicMetadata',
        run: async (b) => {
          const admin = kafka(b).admin();
          await admin.connect();
          await admin.fetchTopicMetadata({ topics: [topic] });
          await admin.disconnect();
        },
      },
      {
        // Its Consumer always joins a group, which the capture server does not serve; this is the
        // Fetch request builder and frame encoder the Consumer's broker connection uses, so the
        // bytes are the ones it sends (with maxWaitTime 500 and read_uncommitted set here).
        label: "KafkaJS's own Fetch v11 request builder and frame encoder (the Consumer without a group)",
        run: (b) => kafkajsFetch(b, topic),
      },
    ],
  };
}

interface KafkajsRequest {
  apiKey: number;
  apiVersion: number;
  encode(): Promise<unknown>;
}

async function kafkajsFetch(broker: string, topic: string): Promise<void> {
  const require = createRequire(import.meta.url);
  const fetchV11 = require('kafkajs/src/protocol/requests/fetch/v11/request.js') as (
    a: object,
  ) => KafkajsRequest;
  const encodeFrame = require('kafkajs/src/protocol/request.js') as (
    a: object,
  ) => Promise<{ buffer: Buffer }>;
  const request = fetchV11({
    replicaId: -1,
    maxWaitTime: 500,
    minBytes: 1,
    maxBytes: 10_485_760,
    isolationLevel: 0,
    topics: [{ topic, partitions: [{ partition: 0, fetchOffset: '0', maxBytes: 1_048_576 }] }],
  });
  const frame = await encodeFrame({ correlationId: 1, clientId: KAFKAJS_CLIENT_ID, request });
  const [host = '', port = ''] = broker.split(':');
  const response = await new Promise<Buffer>((resolve, reject) => {
    const socket = connect(Number(port), host, () => socket.write(frame.buffer));
    let got = Buffer.alloc(0);
    socket.on('data', (c: Buffer) => {
      got = Buffer.concat([got, c]);
      if (got.length >= 4 && got.length >= 4 + got.readInt32BE(0)) {
        socket.end();
        resolve(got.subarray(4, 4 + got.readInt32BE(0)));
      }
    });
    socket.on('error', reject);
  });
  const body = readResponse(response, 1, 11, FetchResponseCodec).body;
  const records = body.responses[0]?.partitions[0]?.records ?? Buffer.alloc(0);
  const got: string[] = [];
  for (const { pos } of batchesIn(records)) {
    for (const r of decodeRecords(records, { decompress: true }, pos).records) {
      got.push(`${r.key?.toString()}:${r.value?.toString()}`);
    }
  }
  expectOutput('kafkajs fetch', got.join('\n'), RECORDS.map((r) => `${r.key}:${r.value}`).join('\n'));
}

function platformaticSession(): ClientSession {
  const topic = 'skiff-platformatic';
  return {
    client: 'platformatic-kafka',
    version: packageVersion('@platformatic/kafka'),
    topic,
    steps: [
      {
        label: 'Producer.send, a header per record',
        run: async (b) => {
          const producer = new Producer({
            clientId: PLATFORMATIC_CLIENT_ID,
            bootstrapBrokers: [b],
            serializers: stringSerializers,
          });
          try {
            const messages = RECORDS.map((r) => ({ ...r, topic, headers: { source: 'platformatic' } }));
            await producer.send({ messages });
          } finally {
            await producer.close();
          }
        },
      },
      {
        // Its Consumer always joins a group, which the capture server does not serve; these are the
        // same request builders the Consumer uses, so the bytes are the ones it would send.
        label: 'Connection + metadataV12, listOffsetsV9, fetchV17 APIs (the Consumer without a group)',
        run: (b) => platformaticConsume(b, topic),
      },
    ],
  };
}

async function platformaticConsume(broker: string, topic: string): Promise<void> {
  const [host = '', port = ''] = broker.split(':');
  const connection = new Connection(PLATFORMATIC_CLIENT_ID);
  await connection.connect(host, Number(port));
  try {
    const metadata = await metadataV12.api.async(connection, [topic], false, false);
    const topicId = metadata.topics[0]?.topicId ?? '';
    const earliest = { partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -2n };
    await listOffsetsV9.api.async(connection, -1, 0, [{ name: topic, partitions: [earliest] }]);
    const partition = {
      partition: 0,
      currentLeaderEpoch: -1,
      fetchOffset: 0n,
      lastFetchedEpoch: -1,
      partitionMaxBytes: 1_048_576,
    };
    // sessionId 0 and epoch 0: a full fetch that asks for a new fetch session, as the Consumer starts.
    const fetched = await fetchV17.api.async(
      connection,
      500,
      1,
      10_485_760,
      0,
      0,
      0,
      [{ topicId, partitions: [partition] }],
      [],
      '',
    );
    const batches = fetched.responses[0]?.partitions[0]?.records ?? [];
    const got = batches.flatMap((batch) => batch.records.map((r) => `${r.key}:${r.value}`));
    expectOutput('platformatic fetch', got.join('\n'), RECORDS.map((r) => `${r.key}:${r.value}`).join('\n'));
  } finally {
    await connection.close();
  }
}

/** Runs one client against a fresh capture server; returns the first frame of each (API, version). */
async function record(session: ClientSession): Promise<Fixture[]> {
  const first = new Map<string, Fixture>();
  let step = '';
  const onFrame = (f: CapturedFrame): void => {
    const key = `${f.apiKey}-${f.apiVersion}`;
    if (first.has(key)) return;
    const note = `first ${apiName(f.apiKey)} v${f.apiVersion} request of: ${step} (${session.version})`;
    const { apiKey, apiVersion, clientId } = f;
    first.set(key, {
      client: session.client,
      apiKey,
      apiVersion,
      clientId,
      frameHex: f.frame.toString('hex'),
      note,
    });
  };
  const errors: Error[] = [];
  const server = await startCaptureServer({
    port: 0,
    onFrame,
    topics: [session.topic],
    onError: (e) => errors.push(e),
  });
  try {
    for (const s of session.steps) {
      step = s.label;
      await withTimeout(`${session.client}: ${s.label}`, s.run(`127.0.0.1:${server.port}`));
    }
  } finally {
    await server.close();
  }
  if (errors.length > 0) throw new Error(`${session.client}: ${errors.map((e) => e.message).join('; ')}`);
  return [...first.values()].sort((a, b) => a.apiKey - b.apiKey || a.apiVersion - b.apiVersion);
}

function apiName(apiKey: number): string {
  return API_MESSAGES.get(apiKey)?.name ?? `Api${apiKey}`;
}

function write(fixtures: Fixture[]): void {
  for (const f of fixtures) {
    const dir = join(FIXTURES, f.client);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${apiName(f.apiKey)}-v${f.apiVersion}.json`), `${JSON.stringify(f, null, 2)}\n`);
  }
}

/** `npm run fixtures [-- client ...]`: every client, or only the named ones (e.g. kafkajs). */
async function main(only: string[]): Promise<void> {
  const all = [await kcatSession(), await kafkaPythonSession(), kafkajsSession(), platformaticSession()];
  const sessions = only.length === 0 ? all : all.filter((s) => only.includes(s.client));
  if (sessions.length === 0) throw new Error(`no such client: ${only.join(', ')}`);
  for (const session of sessions) {
    const fixtures = await record(session);
    // A client's fixtures are replaced as a set, so a frame the client no longer sends disappears.
    rmSync(join(FIXTURES, session.client), { recursive: true, force: true });
    write(fixtures);
    const names = fixtures.map((f) => `${apiName(f.apiKey)} v${f.apiVersion}`).join(', ');
    process.stdout.write(`${session.client} (${session.version}): ${names}\n`);
  }
}

await main(process.argv.slice(2));
