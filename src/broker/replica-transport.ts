/**
 * The broker's ReplicaTransport: follower Fetch (v12: topic names, replicaId at the top level,
 * lastFetchedEpoch and divergingEpoch) and ListOffsets (-2 / -1 with this broker's replica id) to
 * a leader, over one ClientConnection per leader broker, addressed from the current metadata
 * image. A failed connection is dropped and reopened by the next request (the fetcher backs off
 * in between). Owned by the Broker; close() ends every connection.
 */

import type * as tls from 'node:tls';
import type { Scheduler } from '../common/scheduler.js';
import { type ClusterMetadata, endpointOf } from '../metadata/cluster-metadata.js';
import { ClientConnection } from '../network/client-connection.js';
import type { SaslClientCredentials } from '../network/sasl-client-auth.js';
import { FramePool } from '../protocol/framing.js';
import {
  type AddPartitionsToTxnRequest,
  AddPartitionsToTxnRequestCodec,
} from '../protocol/generated/AddPartitionsToTxnRequest.js';
import {
  type AddPartitionsToTxnResponse,
  AddPartitionsToTxnResponseCodec,
} from '../protocol/generated/AddPartitionsToTxnResponse.js';
import {
  defaultReplicaState,
  type FetchRequest,
  FetchRequestCodec,
} from '../protocol/generated/FetchRequest.js';
import { type FetchResponse, FetchResponseCodec } from '../protocol/generated/FetchResponse.js';
import { ApiKey } from '../protocol/generated/index.js';
import {
  defaultListOffsetsRequest,
  ListOffsetsRequestCodec,
} from '../protocol/generated/ListOffsetsRequest.js';
import { ListOffsetsResponseCodec } from '../protocol/generated/ListOffsetsResponse.js';
import {
  type WriteTxnMarkersRequest,
  WriteTxnMarkersRequestCodec,
} from '../protocol/generated/WriteTxnMarkersRequest.js';
import {
  type WriteTxnMarkersResponse,
  WriteTxnMarkersResponseCodec,
} from '../protocol/generated/WriteTxnMarkersResponse.js';
import { KafkaError } from '../protocol/kafka-error.js';
import type { LeaderOffsets, ReplicaTransport } from '../replication/fetcher.js';

const FETCH_VERSION = 12;
/** The broker form of AddPartitionsToTxn, with TRANSACTION_ABORTABLE (KIP-890). */
const ADD_PARTITIONS_TO_TXN_VERSION = 5;
/** The flexible version of WriteTxnMarkers. */
const WRITE_TXN_MARKERS_VERSION = 1;
const LIST_OFFSETS_VERSION = 7;
/**
 * Idle assembly buffers kept for the fetchers' responses: a follower catching up gets one
 * replica.fetch.response.max.bytes answer after the other, and a fresh buffer for each costs a page
 * fault per 4 KiB touched (the copy into fresh memory was ~40% of a catch-up's CPU).
 */
const FRAME_POOL_BYTES = 64 * 1024 * 1024;

export class BrokerReplicaTransport implements ReplicaTransport {
  /** By `leaderId/fetcherId`: one connection per fetcher (num.replica.fetchers), as Kafka's threads. */
  private readonly conns = new Map<string, { key: string; conn: Promise<ClientConnection> }>();
  private closed = false;
  private readonly framePool = new FramePool(FRAME_POOL_BYTES);

  constructor(
    private readonly localBrokerId: number,
    private readonly metadata: ClusterMetadata,
    private readonly scheduler: Scheduler,
    /** replica.socket.timeout.ms: an unanswered request fails the connection. */
    private readonly requestTimeoutMs: () => number,
    /** inter.broker.listener.name: the leader's endpoint on this listener is the one fetched from. */
    private readonly listenerName: string = 'PLAINTEXT',
    /** The TLS options when that listener is SSL or SASL_SSL. */
    private readonly tls?: tls.ConnectionOptions,
    /** This broker's SASL credentials when that listener is SASL_PLAINTEXT or SASL_SSL. */
    private readonly sasl?: SaslClientCredentials,
  ) {}

  /** `fetcherId` 'txn-markers': the transaction requests' own connection to that broker (markers, verification). */
  private connection(leaderId: number, fetcherId: number | 'txn-markers' = 0): Promise<ClientConnection> {
    if (this.closed) return Promise.reject(new Error('replica transport closed'));
    const b = this.metadata.image().brokers.get(leaderId);
    if (!b) return Promise.reject(new Error(`broker ${leaderId} is not registered`));
    const endpoint = endpointOf(b, this.listenerName);
    if (!endpoint)
      return Promise.reject(
        new Error(`broker ${leaderId} has no endpoint for the inter-broker listener ${this.listenerName}`),
      );
    const key = `${endpoint.host}:${endpoint.port}`;
    const slot = `${leaderId}/${fetcherId}`;
    const cur = this.conns.get(slot);
    if (cur && cur.key === key) return cur.conn;
    if (cur) void cur.conn.then((c) => c.close()).catch(() => {});
    const conn = ClientConnection.connect(endpoint.host, endpoint.port, {
      clientId:
        fetcherId === 'txn-markers'
          ? `skiff-txn-marker-sender-${this.localBrokerId}-to-${leaderId}`
          : `skiff-replica-fetcher-${this.localBrokerId}-to-${leaderId}${fetcherId === 0 ? '' : `-${fetcherId}`}`,
      maxInFlight: 2,
      maxFrameBytes: 256 * 1024 * 1024,
      requestTimeoutMs: this.requestTimeoutMs(),
      scheduler: this.scheduler,
      framePool: this.framePool,
      // One response is up to replica.fetch.response.max.bytes (10 MiB by default).
      readBufferBytes: 1024 * 1024,
      ...(this.tls && { tls: this.tls }),
      ...(this.sasl && { sasl: this.sasl }),
    });
    const entry = { key, conn };
    this.conns.set(slot, entry);
    conn.then(
      (c) =>
        void c.closed().then(() => {
          if (this.conns.get(slot) === entry) this.conns.delete(slot);
        }),
      () => {
        if (this.conns.get(slot) === entry) this.conns.delete(slot);
      },
    );
    return conn;
  }

  async fetch(leaderId: number, request: FetchRequest, fetcherId = 0): Promise<FetchResponse> {
    const conn = await this.connection(leaderId, fetcherId);
    // v12 carries the replica id at the top level; ReplicaState (with the broker epoch) is v15+.
    const v12 = { ...request, replicaState: defaultReplicaState() };
    return conn.send(ApiKey.Fetch, FETCH_VERSION, FetchRequestCodec, v12, FetchResponseCodec);
  }

  /** AddPartitionsToTxn (the broker form: verifyOnly) from a partition leader to a transaction coordinator. */
  async addPartitionsToTxn(
    brokerId: number,
    request: AddPartitionsToTxnRequest,
  ): Promise<AddPartitionsToTxnResponse> {
    const conn = await this.connection(brokerId, 'txn-markers');
    return conn.send(
      ApiKey.AddPartitionsToTxn,
      ADD_PARTITIONS_TO_TXN_VERSION,
      AddPartitionsToTxnRequestCodec,
      request,
      AddPartitionsToTxnResponseCodec,
    );
  }

  /** WriteTxnMarkers from this broker's transaction coordinator to a partition leader, over the inter-broker listener. */
  async writeTxnMarkers(brokerId: number, request: WriteTxnMarkersRequest): Promise<WriteTxnMarkersResponse> {
    const conn = await this.connection(brokerId, 'txn-markers');
    return conn.send(
      ApiKey.WriteTxnMarkers,
      WRITE_TXN_MARKERS_VERSION,
      WriteTxnMarkersRequestCodec,
      request,
      WriteTxnMarkersResponseCodec,
    );
  }

  /** The fetcher has appended the response's records: their frame's buffer goes back to the pool. */
  release(response: FetchResponse): void {
    for (const t of response.responses)
      for (const p of t.partitions) if (p.records !== null) this.framePool.release(p.records);
  }

  async leaderOffsets(
    leaderId: number,
    topic: string,
    partition: number,
    currentLeaderEpoch: number,
  ): Promise<LeaderOffsets> {
    const conn = await this.connection(leaderId);
    const ask = async (timestamp: bigint): Promise<bigint> => {
      const resp = await conn.send(
        ApiKey.ListOffsets,
        LIST_OFFSETS_VERSION,
        ListOffsetsRequestCodec,
        {
          ...defaultListOffsetsRequest(),
          replicaId: this.localBrokerId,
          isolationLevel: 0,
          topics: [
            {
              name: topic,
              partitions: [{ partitionIndex: partition, currentLeaderEpoch, timestamp, maxNumOffsets: 1 }],
            },
          ],
        },
        ListOffsetsResponseCodec,
      );
      const p = resp.topics[0]?.partitions[0];
      if (!p) throw new Error(`ListOffsets to broker ${leaderId}: no answer for ${topic}-${partition}`);
      if (p.errorCode !== 0) throw KafkaError.fromCode(p.errorCode, `ListOffsets ${topic}-${partition}`);
      return p.offset;
    };
    const logStartOffset = await ask(-2n);
    const logEndOffset = await ask(-1n);
    return { logStartOffset, logEndOffset };
  }

  close(): void {
    this.closed = true;
    for (const { conn } of this.conns.values()) void conn.then((c) => c.close()).catch(() => {});
    this.conns.clear();
  }
}
