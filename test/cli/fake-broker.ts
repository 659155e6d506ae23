/**
 * A scripted Kafka peer for tool tests of APIs the real broker does not serve yet
 * (DescribeConfigs, IncrementalAlterConfigs, DescribeLogDirs): it answers ApiVersions with the
 * APIs it has handlers for, Metadata with one broker (itself, id 1), and records every request so
 * a test can check what the tool built. Handlers return response bodies built by the test.
 */
import * as net from 'node:net';
import { DEFAULT_MAX_FRAME_BYTES, FrameReader } from '../../src/protocol/framing.js';
import { API_MESSAGES, type ApiMessages } from '../../src/protocol/generated/index.js';
import { encodeResponse } from '../../src/protocol/messages.js';
import { readRequest } from '../../src/protocol/request-frame.js';

export interface RecordedRequest {
  apiKey: number;
  apiVersion: number;
  body: unknown;
}

export type Handler = (body: unknown, version: number) => unknown;

export interface FakeBroker {
  readonly bootstrap: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

/** Versions the fake answers at (the latest of each, as a current Kafka broker would). */
const MAX_VERSIONS: Record<number, number> = { 3: 12, 18: 3, 32: 4, 35: 4, 44: 1, 60: 1 };

export async function startFakeBroker(
  handlers: ReadonlyMap<number, Handler>,
  topics: readonly { name: string; partitions: number }[] = [],
  /** Highest version advertised per API key, overriding MAX_VERSIONS. */
  maxVersions: Readonly<Record<number, number>> = {},
  /** More brokers for Metadata to list beside the fake (id 1), and the controller it names. */
  cluster: { brokers?: readonly { nodeId: number; port: number }[]; controllerId?: number } = {},
): Promise<FakeBroker> {
  const requests: RecordedRequest[] = [];
  const sockets = new Set<net.Socket>();
  let port = 0;
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const reader = new FrameReader({ maxFrameBytes: DEFAULT_MAX_FRAME_BYTES });
    socket.on('data', (chunk: Buffer) => {
      for (const frame of reader.push(chunk)) {
        const { header, body } = readRequest(frame);
        const { requestApiKey: key, requestApiVersion: version, correlationId } = header;
        const api = API_MESSAGES.get(key)!;
        const decoded = api.request.decode(body, version);
        requests.push({ apiKey: key, apiVersion: version, body: decoded });
        let resp: unknown;
        try {
          resp = respond(key, api, decoded, version);
          if (resp === undefined) continue;
          for (const c of encodeResponse(correlationId, key, version, api.response, resp)) socket.write(c);
        } catch (e) {
          // A bad scripted response is a test bug: fail the client at once instead of letting it time out.
          console.error(`fake broker: cannot answer API ${key} v${version}:`, e);
          socket.destroy();
        }
      }
    });
  });
  const respond = (key: number, api: ApiMessages, decoded: unknown, version: number): unknown => {
    let resp: unknown;
    if (key === 18) {
      resp = {
        ...(api.response.defaults() as object),
        apiKeys: [3, 18, ...handlers.keys()].map((k) => ({
          apiKey: k,
          minVersion: 0,
          maxVersion: maxVersions[k] ?? MAX_VERSIONS[k] ?? 0,
        })),
      };
    } else if (key === 3) {
      resp = {
        ...(api.response.defaults() as object),
        brokers: [
          { nodeId: 1, host: '127.0.0.1', port, rack: null },
          ...(cluster.brokers ?? []).map((b) => ({ ...b, host: '127.0.0.1', rack: null })),
        ],
        clusterId: 'fake-cluster',
        controllerId: cluster.controllerId ?? 1,
        topics: topics.map((t) => ({
          errorCode: 0,
          name: t.name,
          topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
          isInternal: false,
          partitions: Array.from({ length: t.partitions }, (_, i) => ({
            errorCode: 0,
            partitionIndex: i,
            leaderId: 1,
            leaderEpoch: 0,
            replicaNodes: [1],
            isrNodes: [1],
            offlineReplicas: [],
          })),
          topicAuthorizedOperations: -2147483648,
        })),
      };
    } else {
      resp = handlers.get(key)!(decoded, version);
    }
    return resp;
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
  return {
    bootstrap: `127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
