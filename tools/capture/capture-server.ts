/**
 * A fixture recorder, not the broker. It accepts real Kafka clients on 127.0.0.1, records every
 * request frame they send, and answers just enough (ApiVersions, Metadata, Produce, Fetch,
 * ListOffsets, FindCoordinator, InitProducerId) for a client to connect, produce and consume one
 * partition per topic. Everything is in memory and nothing is checked; keep it about 300 lines:
 * the point is the recorded request bytes (test/fixtures/clients), which test our decoders against
 * what real peers send. Broker behaviour belongs in src/, not here.
 *
 * Run: node dist/tools/capture/capture-server.js --port P --out DIR   (appends DIR/frames.jsonl)
 */
import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { MessageCodec } from '../../src/protocol/codec-runtime.js';
import { FrameReader } from '../../src/protocol/framing.js';
import * as apiVersionsRes from '../../src/protocol/generated/ApiVersionsResponse.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import * as fetchReq from '../../src/protocol/generated/FetchRequest.js';
import * as fetchRes from '../../src/protocol/generated/FetchResponse.js';
import * as findCoordinatorReq from '../../src/protocol/generated/FindCoordinatorRequest.js';
import * as findCoordinatorRes from '../../src/protocol/generated/FindCoordinatorResponse.js';
import * as initProducerIdRes from '../../src/protocol/generated/InitProducerIdResponse.js';
import { API_MESSAGES } from '../../src/protocol/generated/index.js';
import * as listOffsetsReq from '../../src/protocol/generated/ListOffsetsRequest.js';
import * as listOffsetsRes from '../../src/protocol/generated/ListOffsetsResponse.js';
import * as metadataReq from '../../src/protocol/generated/MetadataRequest.js';
import * as metadataRes from '../../src/protocol/generated/MetadataResponse.js';
import * as produceReq from '../../src/protocol/generated/ProduceRequest.js';
import * as produceRes from '../../src/protocol/generated/ProduceResponse.js';
import { encodeResponse } from '../../src/protocol/messages.js';
import type { Reader } from '../../src/protocol/reader.js';
import { batchesIn, setBaseOffset } from '../../src/protocol/records/index.js';
import { readRequest } from '../../src/protocol/request-frame.js';

export interface CapturedFrame {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
  /** The whole frame as read from the socket, 4-byte size prefix included. */
  frame: Buffer;
}

export interface CaptureServerOptions {
  /** 0 picks a free port; Metadata then advertises the port actually bound. */
  port: number;
  onFrame: (frame: CapturedFrame) => void;
  /** Topics that exist before anyone asks (kcat -L lists these). */
  topics?: readonly string[];
  onError?: (error: Error) => void;
}

export interface CaptureServer {
  port: number;
  close(): Promise<void>;
}

const NODE_ID = 1;
const CLUSTER_ID = 'skiff-capture-cluster';
const LEADER_EPOCH = 0;
// A producer id handed out to clients that insist on idempotence.
const PRODUCER_ID = 4000n;
// Empty fetches are held this long (at most maxWaitMs) so polling clients do not spin.
const EMPTY_FETCH_WAIT_MS = 100;

/** APIs answered (see handlers), with the versions advertised: all the generated codecs cover. */
const SUPPORTED_APIS = [0, 1, 2, 3, 10, 18, 22].map((apiKey) => {
  const codec = API_MESSAGES.get(apiKey)?.request;
  if (!codec) throw new Error(`no generated codec for API ${apiKey}`);
  return { apiKey, minVersion: codec.minVersion, maxVersion: codec.maxVersion };
});

/** One partition's log: batches as produced, with base offsets assigned. */
interface PartitionLog {
  batches: { bytes: Buffer; lastOffset: bigint }[];
  nextOffset: bigint;
}

interface Response {
  codec: MessageCodec<unknown>;
  body: unknown;
  delayMs: number;
}

/** Decodes one request body and says what to answer, or undefined for no answer (acks=0). */
type Handler = (body: Reader, version: number) => Response | undefined;

/** Ties a body to its codec's type, so every answer is checked against the generated interface. */
function reply<T>(codec: MessageCodec<T>, body: T, delayMs = 0): Response {
  return { codec: codec as MessageCodec<unknown>, body, delayMs };
}

/** Kafka topic ids are random; a hash of the name keeps the recordings reproducible. */
export function topicIdOf(name: string): string {
  return createHash('sha256').update(name).digest().subarray(0, 16).toString('base64url');
}

export async function startCaptureServer(options: CaptureServerOptions): Promise<CaptureServer> {
  // Per server, so that each recording session starts from empty logs.
  const logs = new Map<string, PartitionLog>();
  const topicsById = new Map<string, string>();
  const onError = options.onError ?? ((e: Error) => process.stderr.write(`capture: ${e.message}\n`));
  const topic = (name: string): PartitionLog => {
    let log = logs.get(name);
    if (!log) {
      log = { batches: [], nextOffset: 0n };
      logs.set(name, log);
      topicsById.set(topicIdOf(name), name);
    }
    return log;
  };
  for (const name of options.topics ?? []) topic(name);
  // Known once listening (options.port may be 0); no request arrives before that.
  let port = options.port;

  const node = { nodeId: NODE_ID, host: '127.0.0.1' };

  const metadata: Handler = (body, version) => {
    const req = metadataReq.MetadataRequestCodec.decode(body, version);
    const names =
      req.topics === null || req.topics.length === 0
        ? [...logs.keys()]
        : req.topics.map((t) => t.name ?? topicsById.get(t.topicId) ?? t.topicId);
    const partition = { ...metadataRes.defaultMetadataResponsePartition(), leaderId: NODE_ID };
    const partitions = [
      { ...partition, leaderEpoch: LEADER_EPOCH, replicaNodes: [NODE_ID], isrNodes: [NODE_ID] },
    ];
    const topics = names.map((name) => {
      topic(name);
      return { ...metadataRes.defaultMetadataResponseTopic(), name, topicId: topicIdOf(name), partitions };
    });
    const brokers = [{ ...node, port, rack: null }];
    const response = { brokers, clusterId: CLUSTER_ID, controllerId: NODE_ID, topics };
    return reply(metadataRes.MetadataResponseCodec, {
      ...metadataRes.defaultMetadataResponse(),
      ...response,
    });
  };

  const produce: Handler = (body, version) => {
    const req = produceReq.ProduceRequestCodec.decode(body, version);
    const responses = req.topicData.map((t) => ({
      name: t.name,
      partitionResponses: t.partitionData.map((p) => {
        const log = topic(t.name);
        const baseOffset = log.nextOffset;
        // A copy: the request's records are a view of a frame buffer the socket may reuse.
        const records = Buffer.from(p.records ?? Buffer.alloc(0));
        for (const b of batchesIn(records)) {
          const bytes = records.subarray(b.pos, b.pos + b.size);
          // The base offset is outside the CRC, so rewriting it keeps the client's batch valid.
          setBaseOffset(bytes, 0, log.nextOffset);
          log.nextOffset += BigInt(b.header.lastOffsetDelta) + 1n;
          log.batches.push({ bytes, lastOffset: log.nextOffset - 1n });
        }
        const response = { index: p.index, baseOffset, logStartOffset: 0n };
        return { ...produceRes.defaultPartitionProduceResponse(), ...response };
      }),
    }));
    // acks=0: Kafka sends no response at all.
    if (req.acks === 0) return undefined;
    return reply(produceRes.ProduceResponseCodec, { ...produceRes.defaultProduceResponse(), responses });
  };

  const fetch: Handler = (body, version) => {
    const req = fetchReq.FetchRequestCodec.decode(body, version);
    let bytes = 0;
    const responses = req.topics.map((t) => {
      // Since v13 a fetch names the topic by the id Metadata gave.
      const name = t.topic !== '' ? t.topic : (topicsById.get(t.topicId) ?? '');
      const log = topic(name);
      const partitions = t.partitions.map((p) => {
        const wanted = log.batches.filter((b) => b.lastOffset >= p.fetchOffset);
        const records = Buffer.concat(wanted.map((b) => b.bytes));
        bytes += records.length;
        const end = log.nextOffset;
        const data = { highWatermark: end, lastStableOffset: end, logStartOffset: 0n, records };
        return { ...fetchRes.defaultPartitionData(), partitionIndex: p.partition, ...data };
      });
      return {
        ...fetchRes.defaultFetchableTopicResponse(),
        topic: name,
        topicId: topicIdOf(name),
        partitions,
      };
    });
    const delayMs = bytes > 0 ? 0 : Math.min(req.maxWaitMs, EMPTY_FETCH_WAIT_MS);
    return reply(fetchRes.FetchResponseCodec, { ...fetchRes.defaultFetchResponse(), responses }, delayMs);
  };

  const listOffsets: Handler = (body, version) => {
    const req = listOffsetsReq.ListOffsetsRequestCodec.decode(body, version);
    const topics = req.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => {
        // -1 asks for the log end offset, -2 (and any timestamp, here) for the log start offset.
        const offset = p.timestamp === -1n ? topic(t.name).nextOffset : 0n;
        const partition = {
          ...listOffsetsRes.defaultListOffsetsPartitionResponse(),
          partitionIndex: p.partitionIndex,
        };
        // The encoder refuses a value at a version that cannot carry it, so each goes where it exists.
        if (version === 0) return { ...partition, oldStyleOffsets: [offset] };
        return { ...partition, offset, leaderEpoch: version >= 4 ? LEADER_EPOCH : -1 };
      }),
    }));
    return reply(listOffsetsRes.ListOffsetsResponseCodec, {
      ...listOffsetsRes.defaultListOffsetsResponse(),
      topics,
    });
  };

  const findCoordinator: Handler = (body, version) => {
    const req = findCoordinatorReq.FindCoordinatorRequestCodec.decode(body, version);
    const response = findCoordinatorRes.defaultFindCoordinatorResponse();
    const codec = findCoordinatorRes.FindCoordinatorResponseCodec;
    // v4 batched the keys: one coordinator per key instead of one at the top level.
    if (version < 4) return reply(codec, { ...response, ...node, port });
    const coordinators = req.coordinatorKeys.map((key) => ({
      ...findCoordinatorRes.defaultCoordinator(),
      ...node,
      port,
      key,
    }));
    return reply(codec, { ...response, coordinators });
  };

  const apiVersions: Handler = (_body, version) => {
    // Kafka answers a too-new ApiVersions at v0 (see serve) so that any client can read the error.
    const errorCode =
      version > apiVersionsRes.ApiVersionsResponseCodec.maxVersion ? ErrorCode.UNSUPPORTED_VERSION : 0;
    const response = { ...apiVersionsRes.defaultApiVersionsResponse(), errorCode, apiKeys: SUPPORTED_APIS };
    return reply(apiVersionsRes.ApiVersionsResponseCodec, response);
  };

  const initProducerId: Handler = () => {
    const response = { ...initProducerIdRes.defaultInitProducerIdResponse(), producerId: PRODUCER_ID };
    return reply(initProducerIdRes.InitProducerIdResponseCodec, response);
  };

  const handlers = new Map<number, Handler>([
    [0, produce],
    [1, fetch],
    [2, listOffsets],
    [3, metadata],
    [10, findCoordinator],
    [18, apiVersions],
    [22, initProducerId],
  ]);

  const serve = (socket: Socket): void => {
    const frames = new FrameReader();
    // Responses leave in request order even when an empty fetch is held back, as Kafka guarantees.
    let queue = Promise.resolve();
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: Buffer) => {
      try {
        for (const payload of frames.push(chunk)) {
          const { header, body } = readRequest(payload);
          const { requestApiKey: apiKey, requestApiVersion: version, correlationId } = header;
          const frame = Buffer.concat([Buffer.alloc(4), payload]);
          frame.writeInt32BE(payload.length, 0);
          options.onFrame({ apiKey, apiVersion: version, correlationId, clientId: header.clientId, frame });
          const handler = handlers.get(apiKey);
          if (!handler) throw new Error(`API ${apiKey} v${version} is not answered by the capture server`);
          const response = handler(body, version);
          if (!response) continue;
          const { codec, body: answer, delayMs } = response;
          const at = apiKey === 18 && version > codec.maxVersion ? 0 : version;
          const chunks = encodeResponse(correlationId, apiKey, at, codec, answer);
          queue = queue
            .then(() => (delayMs > 0 ? new Promise((resolve) => setTimeout(resolve, delayMs)) : undefined))
            .then(() => {
              if (!socket.destroyed) for (const c of chunks) socket.write(c);
            });
        }
      } catch (e) {
        onError(e instanceof Error ? e : new Error(String(e)));
        socket.destroy();
      }
    });
  };

  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    serve(socket);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  port = typeof address === 'object' && address !== null ? address.port : options.port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { port: { type: 'string', default: '9092' }, out: { type: 'string' } },
  });
  const out = values.out;
  if (out !== undefined) mkdirSync(out, { recursive: true });
  const server = await startCaptureServer({
    port: Number(values.port),
    topics: ['skiff-capture'],
    onFrame: ({ apiKey, apiVersion, clientId, frame }) => {
      const line = JSON.stringify({ apiKey, apiVersion, clientId, frameHex: frame.toString('hex') });
      if (out !== undefined) appendFileSync(join(out, 'frames.jsonl'), `${line}\n`);
      process.stdout.write(`${API_MESSAGES.get(apiKey)?.name ?? apiKey} v${apiVersion} from ${clientId}\n`);
    },
  });
  process.stdout.write(`capture server on 127.0.0.1:${server.port}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
