import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Broker } from '../../src/broker/broker.js';
import { StoreBroker } from '../../src/cluster/store-broker.js';
import { SystemClock } from '../../src/common/clock.js';
import { MemoryLogger } from '../../src/common/logger.js';
import { TimerScheduler } from '../../src/common/scheduler.js';
import type { StoreClusterMetadata } from '../../src/metadata/store-cluster-metadata.js';
import { ClientConnection } from '../../src/network/client-connection.js';
import type { MessageCodec } from '../../src/protocol/codec-runtime.js';
import type { CreateTopicsResponse } from '../../src/protocol/generated/CreateTopicsResponse.js';
import { API_MESSAGES } from '../../src/protocol/generated/index.js';
import type { ListOffsetsResponse } from '../../src/protocol/generated/ListOffsetsResponse.js';
import { encodeBatch } from '../../src/protocol/records/codec.js';
import { NodeFileSystem } from '../../src/storage/fs.js';

/** Deterministic bytes (xorshift32) for topic ids and session ids. */
export function seededRandomBytes(seed = 42): (n: number) => Buffer {
  let x = seed >>> 0 || 1;
  return (n) => {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) {
      x ^= x << 13;
      x >>>= 0;
      x ^= x >>> 17;
      x ^= x << 5;
      x >>>= 0;
      b[i] = x & 0xff;
    }
    return b;
  };
}

export interface TestBroker {
  readonly broker: Broker;
  /** The one-broker cluster's metadata (its embedded store lives in the log dir). */
  readonly metadata: StoreClusterMetadata;
  readonly logger: MemoryLogger;
  readonly port: number;
  readonly dir: string;
  connect(clientId?: string): Promise<ClientConnection>;
  /** Sends `body` for the API and version; codecs from the generated table. */
  call<Resp>(conn: ClientConnection, apiKey: number, version: number, body: unknown): Promise<Resp>;
  stop(): Promise<void>;
}

/**
 * The temp dirs startBroker made, removed when this test file's process exits: a test may stop a
 * broker and start another on its predecessor's dir, so stop() leaves them (they were left in /tmp
 * for good, eleven per test run).
 */
const madeDirs: string[] = [];
process.once('exit', () => {
  for (const d of madeDirs) fs.rmSync(d, { recursive: true, force: true });
});

function freshBrokerDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-broker-'));
  madeDirs.push(dir);
  return dir;
}

/**
 * A broker on 127.0.0.1 with a free port, real time, logs in `dir` (a fresh temp dir by default):
 * what `skiff broker` without etcd runs, a cluster of one. `props`: server.properties entries
 * (Kafka's names) on top of node.id=1, the listener and log.dirs.
 */
export async function startBroker(
  props: Readonly<Record<string, string>> = {},
  dir = freshBrokerDir(),
): Promise<TestBroker> {
  const logger = new MemoryLogger();
  const randomBytes = seededRandomBytes();
  const random = seededRandomBytes(7);
  const sb = await StoreBroker.start({
    props: new Map(
      Object.entries({
        'node.id': '1',
        listeners: 'PLAINTEXT://127.0.0.1:0',
        'log.dirs': path.join(dir, 'logs'),
        ...props,
      }),
    ),
    clock: new SystemClock(),
    scheduler: new TimerScheduler(),
    fs: new NodeFileSystem(),
    logger,
    randomBytes,
    randomInt: (n) => random(4).readUInt32BE(0) % n,
    monotonicMs: () => performance.now(),
  });
  const port = sb.address.port;
  const conns: ClientConnection[] = [];
  return {
    broker: sb.broker,
    metadata: sb.metadata,
    logger,
    port,
    dir,
    async connect(clientId = 'skiff-test') {
      const c = await ClientConnection.connect('127.0.0.1', port, { clientId });
      conns.push(c);
      return c;
    },
    call<Resp>(conn: ClientConnection, apiKey: number, version: number, body: unknown): Promise<Resp> {
      const api = API_MESSAGES.get(apiKey)!;
      return conn.send(apiKey, version, api.request, body, api.response as MessageCodec<Resp>);
    },
    async stop() {
      for (const c of conns) c.close();
      await sb.stop();
    },
  };
}

/** A producer's batch of `count` records `key-i` → `value-i`. */
export function batch(
  count: number,
  opts: { from?: number; producerId?: bigint; baseSequence?: number; timestamp?: bigint } = {},
): Buffer {
  const from = opts.from ?? 0;
  return encodeBatch({
    baseTimestamp: opts.timestamp ?? 1_700_000_000_000n,
    ...(opts.producerId !== undefined && {
      producerId: opts.producerId,
      producerEpoch: 0,
      baseSequence: opts.baseSequence ?? 0,
    }),
    records: Array.from({ length: count }, (_, i) => ({
      key: Buffer.from(`key-${from + i}`),
      value: Buffer.from(`value-${from + i}`),
      timestampDelta: BigInt(i),
    })),
  });
}

/** Creates `name` with RF 1 (and topic `configs`) through CreateTopics v7 and checks that it was. */
export async function createTopic(
  b: TestBroker,
  conn: ClientConnection,
  name: string,
  numPartitions = 1,
  configs: Readonly<Record<string, string>> = {},
): Promise<void> {
  const r = await b.call<CreateTopicsResponse>(conn, 19, 7, {
    timeoutMs: 1000,
    validateOnly: false,
    topics: [
      {
        name,
        numPartitions,
        replicationFactor: 1,
        assignments: [],
        configs: Object.entries(configs).map(([n, value]) => ({ name: n, value })),
      },
    ],
  });
  assert.equal(r.topics[0]!.errorCode, 0, `create ${name}`);
}

/** The latest offset of `topic`-`partition` by ListOffsets v7 (the LEO's answer to a consumer: the HW), checked for no error. */
export async function latestOffset(
  b: TestBroker,
  conn: ClientConnection,
  topic: string,
  partition = 0,
): Promise<bigint> {
  const r = await b.call<ListOffsetsResponse>(conn, 2, 7, {
    replicaId: -1,
    isolationLevel: 0,
    timeoutMs: 0,
    topics: [
      {
        name: topic,
        partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp: -1n, maxNumOffsets: 1 }],
      },
    ],
  });
  const p = r.topics[0]!.partitions[0]!;
  assert.equal(p.errorCode, 0, `ListOffsets ${topic}-${partition}: error ${p.errorCode}`);
  return p.offset;
}
