import { BROKER_API_VERSIONS } from '../src/broker/api-versions.js';
import { SystemClock } from '../src/common/clock.js';
import { silentLogger } from '../src/common/logger.js';
import { TimerScheduler } from '../src/common/scheduler.js';
import type { RequestHandler } from '../src/network/request-handler.js';
import { SocketServer } from '../src/network/socket-server.js';
import type { MessageCodec } from '../src/protocol/codec-runtime.js';
import type { FetchRequest } from '../src/protocol/generated/FetchRequest.js';
import { defaultFetchResponse, defaultPartitionData } from '../src/protocol/generated/FetchResponse.js';
import { API_MESSAGES, ApiKey } from '../src/protocol/generated/index.js';
import type { ListOffsetsRequest } from '../src/protocol/generated/ListOffsetsRequest.js';
import { defaultListOffsetsPartitionResponse } from '../src/protocol/generated/ListOffsetsResponse.js';
import type { MetadataRequest } from '../src/protocol/generated/MetadataRequest.js';
import {
  defaultMetadataResponse,
  defaultMetadataResponseBroker,
  defaultMetadataResponsePartition,
  defaultMetadataResponseTopic,
} from '../src/protocol/generated/MetadataResponse.js';
import type { ProduceRequest } from '../src/protocol/generated/ProduceRequest.js';
import { defaultPartitionProduceResponse } from '../src/protocol/generated/ProduceResponse.js';
import { encodeResponse } from '../src/protocol/messages.js';
import { readRequest } from '../src/protocol/request-frame.js';
import type { TlsServerSettings } from '../src/security/tls.js';

/**
 * The ceiling a produce or consume benchmark can reach on this machine: a Kafka endpoint that
 * answers ApiVersions, Metadata (every topic: one partition, led by itself), Produce (success, at
 * once, the records dropped: no validation, no log, no disk), and ListOffsets and Fetch from a log
 * held in memory (`log`: batches with consecutive offsets from 0, answered as whole batches up to
 * the partition's byte limit, no copy). It reads and writes through Skiff's network layer, so what
 * it measures is the client plus the bytes crossing loopback; a broker cannot go faster.
 */
export class KafkaSink {
  private nextOffset = 0n;
  /** Base offset of each batch of `log`, and the offset after the last one. */
  private readonly baseOffsets: bigint[] = [];
  private readonly endOffset: bigint;

  private constructor(
    private readonly server: SocketServer,
    readonly port: number,
    private readonly log: readonly Buffer[],
  ) {
    let next = 0n;
    for (const b of log) {
      this.baseOffsets.push(b.readBigInt64BE(0));
      next = b.readBigInt64BE(0) + BigInt(b.readInt32BE(23)) + 1n; // lastOffsetDelta at byte 23
    }
    this.endOffset = next;
  }

  /** `tls`: an SSL endpoint (the ceiling of a client through TLS). */
  static async start(log: readonly Buffer[] = [], tls?: TlsServerSettings): Promise<KafkaSink> {
    const clock = new SystemClock();
    let port = 0;
    const handler: RequestHandler = { handle: async (frame) => sink.answer(frame, port) };
    const server = new SocketServer(
      {
        ...(tls !== undefined && { securityProtocol: 'SSL' as const, tls }),
        host: '127.0.0.1',
        port: 0,
        maxFrameBytes: 100 * 1024 * 1024,
        maxQueuedRequestsPerConnection: 500,
        maxQueuedBytesPerConnection: 100 * 1024 * 1024,
        connectionsMaxIdleMs: 600_000,
        maxConnections: 100,
      },
      handler,
      clock,
      new TimerScheduler(),
      silentLogger,
    );
    port = (await server.listen()).port;
    const sink: KafkaSink = new KafkaSink(server, port, log);
    return sink;
  }

  get bootstrap(): string {
    return `127.0.0.1:${this.port}`;
  }

  close(): Promise<void> {
    return this.server.close();
  }

  // Whole batches from the one holding `offset`, at least one, then up to `maxBytes`.
  private read(offset: bigint, maxBytes: number): Buffer {
    if (offset < 0n || offset >= this.endOffset) return Buffer.alloc(0);
    let i = 0;
    while (i + 1 < this.baseOffsets.length && this.baseOffsets[i + 1]! <= offset) i++;
    const batches: Buffer[] = [];
    let bytes = 0;
    for (; i < this.log.length && (batches.length === 0 || bytes + this.log[i]!.length <= maxBytes); i++) {
      batches.push(this.log[i]!);
      bytes += this.log[i]!.length;
    }
    return batches.length === 1 ? batches[0]! : Buffer.concat(batches);
  }

  private answer(frame: Buffer, port: number): Buffer[] | null {
    const { header, body } = readRequest(frame);
    const apiKey = header.requestApiKey;
    const version = header.requestApiVersion;
    const api = API_MESSAGES.get(apiKey)!;
    const respond = (response: unknown): Buffer[] =>
      encodeResponse(header.correlationId, apiKey, version, api.response as MessageCodec<unknown>, response);
    switch (apiKey) {
      case ApiKey.ApiVersions:
        return respond({
          errorCode: 0,
          apiKeys: [
            ApiKey.Produce,
            ApiKey.Fetch,
            ApiKey.ListOffsets,
            ApiKey.Metadata,
            ApiKey.ApiVersions,
          ].map((k) => ({
            apiKey: k,
            minVersion: BROKER_API_VERSIONS.get(k)!.min,
            // Fetch by topic name: versions 13 and later name topics by id.
            maxVersion: k === ApiKey.Fetch ? 12 : BROKER_API_VERSIONS.get(k)!.max,
          })),
          throttleTimeMs: 0,
          supportedFeatures: [],
          finalizedFeaturesEpoch: -1n,
          finalizedFeatures: [],
          zkMigrationReady: false,
        });
      case ApiKey.Metadata: {
        const req = api.request.decode(body, version) as MetadataRequest;
        return respond({
          ...defaultMetadataResponse(),
          brokers: [{ ...defaultMetadataResponseBroker(), nodeId: 1, host: '127.0.0.1', port }],
          clusterId: 'produce-sink',
          controllerId: 1,
          topics: (req.topics ?? []).map((t) => ({
            ...defaultMetadataResponseTopic(),
            name: t.name,
            partitions: [
              {
                ...defaultMetadataResponsePartition(),
                leaderId: 1,
                leaderEpoch: 0,
                replicaNodes: [1],
                isrNodes: [1],
              },
            ],
          })),
        });
      }
      case ApiKey.Produce: {
        const req = api.request.decode(body, version) as ProduceRequest;
        const baseOffset = this.nextOffset;
        this.nextOffset += 1n;
        const response = {
          responses: req.topicData.map((t) => ({
            name: t.name,
            partitionResponses: t.partitionData.map((p) => ({
              ...defaultPartitionProduceResponse(),
              index: p.index,
              baseOffset,
            })),
          })),
          throttleTimeMs: 0,
          nodeEndpoints: [],
        };
        return req.acks === 0 ? null : respond(response);
      }
      case ApiKey.ListOffsets: {
        const req = api.request.decode(body, version) as ListOffsetsRequest;
        return respond({
          throttleTimeMs: 0,
          topics: req.topics.map((t) => ({
            name: t.name,
            partitions: t.partitions.map((p) => ({
              ...defaultListOffsetsPartitionResponse(),
              partitionIndex: p.partitionIndex,
              timestamp: -1n,
              // -2 asks for the earliest offset; anything else gets the end of the log.
              offset: p.timestamp === -2n ? 0n : this.endOffset,
            })),
          })),
        });
      }
      case ApiKey.Fetch: {
        const req = api.request.decode(body, version) as FetchRequest;
        return respond({
          ...defaultFetchResponse(),
          responses: req.topics.map((t) => ({
            topic: t.topic,
            topicId: t.topicId,
            partitions: t.partitions.map((p) => ({
              ...defaultPartitionData(),
              partitionIndex: p.partition,
              highWatermark: this.endOffset,
              lastStableOffset: this.endOffset,
              logStartOffset: 0n,
              abortedTransactions: null,
              records: this.read(p.fetchOffset, p.partitionMaxBytes),
            })),
          })),
        });
      }
      default:
        throw new Error(`the sink does not answer API key ${apiKey}`);
    }
  }
}
