/**
 * A fixture recorder, not the broker. It accepts real Kafka clients on 127.0.0.1, records every
 * request frame they send, and answers just enough (ApiVersions, Metadata, Produce, Fetch,
 * ListOffsets, FindCoordinator, InitProducerId) for a client to connect,
 * produce and consume one partition per topic. Everything is in memory, nothing is checked, and
 * it stays under ~300 lines on purpose: the point is the recorded request bytes
 * (test/fixtures/clients), which test our decoders against what real peers actually send.
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
import { encodeResponse, readRequest } from '../../src/protocol/messages.js';
import type { Reader } from '../../src/protocol/reader.js';
import { batchesIn, setBaseOffset } from '../../src/protocol/records/index.js';

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

/** APIs answered, with the versions advertised: everything the generated codecs cover. */
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

/** Ties a body to its codec's type, so every answer is checked against the generated interface. */
function reply<T>(codec: MessageCodec<T>, body: T, delayMs = 0): Response {
  return { codec: codec as MessageCodec<unknown>, body, delayMs };
}

/** Kafka topic ids are random; a hash of the name keeps the recordings reproducible. */
function topicIdOf(name: string): string {
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
  let port = options.port;

  const metadata = (req: metadataReq.MetadataRequest) => {
    const names =
      req.topics === null || req.topics.length === 0
        ? [...logs.keys()]
        : req.topics.map((t) => t.name ?? topicsById.get(t.topicId) ?? t.topicId);
    return {
      ...metadataRes.MetadataResponseCodec.defaults(),
      brokers: [{ nodeId: NODE_ID, host: '127.0.0.1', port, rack: null }],
      clusterId: CLUSTER_ID,
      controllerId: NODE_ID,
      topics: names.map((name) => {
        topic(name);
        const partition = { ...metadataRes.defaultMetadataResponsePartition(), leaderId: NODE_ID };
        return {
          ...metadataRes.defaultMetadataResponseTopic(),
          name,
          topicId: topicIdOf(name),
          partitions: [
            { ...partition, leaderEpoch: LEADER_EPOCH, replicaNodes: [NODE_ID], isrNodes: [NODE_ID] },
          ],
        };
      }),
    };
  };

  const produce = (req: produceReq.ProduceRequest) => ({
    ...produceRes.ProduceResponseCodec.defaults(),
    responses: req.topicData.map((t) => ({
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
        return {
          ...produceRes.defaultPartitionProduceResponse(),
          index: p.index,
          baseOffset,
          logStartOffset: 0n,
        };
      }),
    })),
  });

  const fetch = (req: fetchReq.FetchRequest): Response => {
    let bytes = 0;
    const responses = req.topics.map((t) => {
      const name = t.topic !== '' ? t.topic : (topicsById.get(t.topicId) ?? '');
      const log = topic(name);
      return {
        ...fetchRes.defaultFetchableTopicResponse(),
        topic: name,
        topicId: topicIdOf(name),
        partitions: t.partitions.map((p) => {
          const wanted = log.batches.filter((b) => b.lastOffset >= p.fetchOffset);
          const records = Buffer.concat(wanted.map((b) => b.bytes));
          bytes += records.length;
          const end = log.nextOffset;
          return {
            ...fetchRes.defaultPartitionData(),
            partitionIndex: p.partition,
            highWatermark: end,
            lastStableOffset: end,
            logStartOffset: 0n,
            records,
          };
        }),
      };
    });
    const delayMs = bytes > 0 ? 0 : Math.min(req.maxWaitMs, EMPTY_FETCH_WAIT_MS);
    return reply(
      fetchRes.FetchResponseCodec,
      { ...fetchRes.FetchResponseCodec.defaults(), responses },
      delayMs,
    );
  };

  const listOffsets = (req: listOffsetsReq.ListOffsetsRequest, version: number) => ({
    ...listOffsetsRes.ListOffsetsResponseCodec.defaults(),
    topics: req.topics.map((t) => ({
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
    })),
  });

  const findCoordinator = (req: findCoordinatorReq.FindCoordinatorRequest, version: number) => {
    const node = { nodeId: NODE_ID, host: '127.0.0.1', port };
    const response = findCoordinatorRes.defaultFindCoordinatorResponse();
    // v4 batched the keys: one coordinator per key instead of one at the top level.
    if (version < 4) return { ...response, ...node };
    const coordinators = req.coordinatorKeys.map((key) => ({
      ...findCoordinatorRes.defaultCoordinator(),
      ...node,
      key,
    }));
    return { ...response, coordinators };
  };

  const answer = (apiKey: number, version: number, body: Reader): Response | undefined => {
    switch (apiKey) {
      case 18: {
        const max = SUPPORTED_APIS.find((a) => a.apiKey === 18)?.maxVersion ?? 0;
        // Kafka answers a too-new ApiVersions at v0 so that any client can read the error.
        const errorCode = version > max ? ErrorCode.UNSUPPORTED_VERSION : 0;
        const apiKeys = SUPPORTED_APIS;
        return reply(apiVersionsRes.ApiVersionsResponseCodec, {
          ...apiVersionsRes.ApiVersionsResponseCodec.defaults(),
          errorCode,
          apiKeys,
        });
      }
      case 3:
        return reply(
          metadataRes.MetadataResponseCodec,
          metadata(metadataReq.MetadataRequestCodec.decode(body, version)),
        );
      case 0: {
        const req = produceReq.ProduceRequestCodec.decode(body, version);
        // acks=0: Kafka sends no response at all.
        return req.acks === 0 ? undefined : reply(produceRes.ProduceResponseCodec, produce(req));
      }
      case 1:
        return fetch(fetchReq.FetchRequestCodec.decode(body, version));
      case 2:
        return reply(
          listOffsetsRes.ListOffsetsResponseCodec,
          listOffsets(listOffsetsReq.ListOffsetsRequestCodec.decode(body, version), version),
        );
      case 10:
        return reply(
          findCoordinatorRes.FindCoordinatorResponseCodec,
          findCoordinator(findCoordinatorReq.FindCoordinatorRequestCodec.decode(body, version), version),
        );
      case 22: {
        const producerId = PRODUCER_ID;
        return reply(initProducerIdRes.InitProducerIdResponseCodec, {
          ...initProducerIdRes.InitProducerIdResponseCodec.defaults(),
          producerId,
        });
      }
      default:
        throw new Error(`API ${apiKey} v${version} is not answered by the capture server`);
    }
  };

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
          const prefix = Buffer.alloc(4);
          prefix.writeInt32BE(payload.length);
          options.onFrame({
            apiKey,
            apiVersion: version,
            correlationId,
            clientId: header.clientId,
            frame: Buffer.concat([prefix, payload]),
          });
          const response = answer(apiKey, version, body);
          if (!response) continue;
          const tooNew = apiKey === 18 && version > response.codec.maxVersion;
          const chunks = encodeResponse(
            correlationId,
            apiKey,
            tooNew ? 0 : version,
            response.codec,
            response.body,
          );
          const delayMs = response.delayMs;
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
    onFrame: (f) => {
      const line = {
        apiKey: f.apiKey,
        apiVersion: f.apiVersion,
        clientId: f.clientId,
        frameHex: f.frame.toString('hex'),
      };
      if (out !== undefined) appendFileSync(join(out, 'frames.jsonl'), `${JSON.stringify(line)}\n`);
      process.stdout.write(
        `${API_MESSAGES.get(f.apiKey)?.name ?? f.apiKey} v${f.apiVersion} from ${f.clientId}\n`,
      );
    },
  });
  process.stdout.write(`capture server on 127.0.0.1:${server.port}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
