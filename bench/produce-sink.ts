import { ApiKey, BROKER_API_VERSIONS } from '../src/broker/api-versions.js';
import { SystemClock } from '../src/common/clock.js';
import type { RequestHandler } from '../src/network/request-handler.js';
import { SocketServer } from '../src/network/socket-server.js';
import type { MessageCodec } from '../src/protocol/codec-runtime.js';
import { API_MESSAGES } from '../src/protocol/generated/index.js';
import type { MetadataRequest } from '../src/protocol/generated/MetadataRequest.js';
import {
  defaultMetadataResponse,
  defaultMetadataResponseBroker,
  defaultMetadataResponsePartition,
  defaultMetadataResponseTopic,
} from '../src/protocol/generated/MetadataResponse.js';
import type { ProduceRequest } from '../src/protocol/generated/ProduceRequest.js';
import { defaultPartitionProduceResponse } from '../src/protocol/generated/ProduceResponse.js';
import { encodeResponse, readRequest } from '../src/protocol/messages.js';
import { silentLogger } from '../src/storage/logger.js';
import { TimerScheduler } from '../src/storage/scheduler.js';

/**
 * The ceiling a produce benchmark can reach on this machine: a Kafka endpoint that answers
 * ApiVersions, Metadata (every topic: one partition, led by itself) and Produce (success, at once)
 * and stores nothing — no validation, no log, no disk. It reads through Skiff's network layer, so
 * what it measures is the client plus the bytes crossing loopback; a broker cannot produce faster.
 */
export class ProduceSink {
  private nextOffset = 0n;
  private constructor(
    private readonly server: SocketServer,
    readonly port: number,
  ) {}

  static async start(): Promise<ProduceSink> {
    const clock = new SystemClock();
    let port = 0;
    const handler: RequestHandler = { handle: async (frame) => sink.answer(frame, port) };
    const server = new SocketServer(
      {
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
    const sink: ProduceSink = new ProduceSink(server, port);
    return sink;
  }

  get bootstrap(): string {
    return `127.0.0.1:${this.port}`;
  }

  close(): Promise<void> {
    return this.server.close();
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
          apiKeys: [ApiKey.Produce, ApiKey.Metadata, ApiKey.ApiVersions].map((k) => ({
            apiKey: k,
            minVersion: BROKER_API_VERSIONS.get(k)!.min,
            maxVersion: BROKER_API_VERSIONS.get(k)!.max,
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
      default:
        throw new Error(`the produce sink does not answer API key ${apiKey}`);
    }
  }
}
