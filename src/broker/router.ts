/**
 * The request router (Kafka's KafkaApis.handle): reads the header, refuses what is not
 * implemented, decodes the body, calls the handler of its API and encodes the response.
 * What Kafka answers and what it closes the connection for:
 *  - ApiVersions at a version above ours: a v0 response with UNSUPPORTED_VERSION and our ranges.
 *  - an unknown API key, or an API or version not implemented: the connection is closed.
 *  - a body that does not decode: the connection is closed.
 * Owned by the Broker; stateless between requests.
 */

import { KEY_TYPE_TRANSACTION } from '../coordinator/find-coordinator.js';
import {
  CloseConnectionError,
  type ConnectionInfo,
  type RequestHandler,
} from '../network/request-handler.js';
import type { MessageCodec } from '../protocol/codec-runtime.js';
import type { ApiVersion } from '../protocol/generated/ApiVersionsResponse.js';
import { ApiVersionsResponseCodec } from '../protocol/generated/ApiVersionsResponse.js';
import { API_MESSAGES, ApiKey } from '../protocol/generated/index.js';
import { encodeResponse } from '../protocol/messages.js';
import { ProtocolError } from '../protocol/protocol-error.js';
import { readRequest } from '../protocol/request-frame.js';
import type { SaslServerAuthenticator } from '../security/sasl-authenticator.js';
import {
  BROKER_API_VERSIONS,
  GROUP_API_KEYS,
  TRANSACTION_API_VERSIONS,
  type VersionRange,
} from './api-versions.js';
import type { ApiMetrics } from './broker-metrics.js';
import { CLUSTER_CHECKS } from './cluster-authorization.js';
import type { GroupApi } from './group-api.js';
import { authorizedGroupApi } from './group-authorization.js';
import type { BrokerServices, RequestContext } from './handler-context.js';
import { handleCreateAcls, handleDeleteAcls, handleDescribeAcls } from './handlers/acls.js';
import {
  handleCreatePartitions,
  handleCreateTopics,
  handleDeleteRecords,
  handleDeleteTopics,
} from './handlers/admin.js';
import { handleAlterReplicaLogDirs } from './handlers/alter-replica-log-dirs.js';
import { handleAlterClientQuotas, handleDescribeClientQuotas } from './handlers/client-quotas.js';
import {
  handleApiVersions,
  handleDescribeCluster,
  handleInitProducerId,
  unsupportedApiVersionsResponse,
} from './handlers/cluster.js';
import {
  handleAlterConfigs,
  handleDescribeConfigs,
  handleIncrementalAlterConfigs,
} from './handlers/configs.js';
import { handleElectLeaders } from './handlers/elect-leaders.js';
import { handleFetch } from './handlers/fetch.js';
import { handleDescribeLogDirs } from './handlers/log-dirs.js';
import { handleMetadata } from './handlers/metadata.js';
import { handleListOffsets, handleOffsetForLeaderEpoch } from './handlers/offsets.js';
import { handleProduce } from './handlers/produce.js';
import { handleDescribeProducers } from './handlers/producers.js';
import {
  handleAlterPartitionReassignments,
  handleListPartitionReassignments,
} from './handlers/reassignments.js';
import { handleSaslAuthenticate, handleSaslHandshake, saslStep } from './handlers/sasl.js';
import {
  handleAlterUserScramCredentials,
  handleDescribeUserScramCredentials,
} from './handlers/scram-credentials.js';
import { handleSkiffDescribeReplication } from './handlers/skiff-replication.js';
import type { TransactionApi } from './handlers/transactions.js';
import { authorizedTransactionApi } from './transaction-authorization.js';

// biome-ignore lint/suspicious/noExplicitAny: each route is typed by its own handler; the table erases it.
type Handler = (ctx: RequestContext, body: any) => Promise<unknown | null>;

interface Route {
  readonly versions: VersionRange;
  readonly handler: Handler;
  /** This API's request metrics (null: the broker keeps none); Fetch's are its consumers'. */
  readonly metrics: ApiMetrics | null;
}

/**
 * The client's address as Kafka's DescribeGroups reports it: Java's InetAddress.toString() of an
 * unresolved address, `/127.0.0.1` (no port; an IPv4-mapped IPv6 address as its IPv4 form).
 */
export function kafkaClientHost(remoteAddress: string): string {
  const colon = remoteAddress.lastIndexOf(':');
  const host = colon < 0 ? remoteAddress : remoteAddress.slice(0, colon);
  return `/${host.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '')}`;
}

function groupHandler(b: BrokerServices, g: GroupApi, apiKey: number): Handler {
  const gctx = (ctx: RequestContext) => ({
    apiVersion: ctx.apiVersion,
    clientId: ctx.clientId,
    clientHost: kafkaClientHost(ctx.connection.remoteAddress),
    listenerName: ctx.connection.listenerName,
    connection: ctx.connection,
  });
  const a = authorizedGroupApi(b, g);
  const table: Record<number, Handler> = {
    [ApiKey.FindCoordinator]: (c, r) => a.findCoordinator(gctx(c), r),
    [ApiKey.JoinGroup]: (c, r) => a.joinGroup(gctx(c), r),
    [ApiKey.SyncGroup]: (c, r) => a.syncGroup(gctx(c), r),
    [ApiKey.Heartbeat]: (c, r) => a.heartbeat(gctx(c), r),
    [ApiKey.LeaveGroup]: (c, r) => a.leaveGroup(gctx(c), r),
    [ApiKey.OffsetCommit]: (c, r) => a.offsetCommit(gctx(c), r),
    [ApiKey.OffsetFetch]: (c, r) => a.offsetFetch(gctx(c), r),
    [ApiKey.ListGroups]: (c, r) => a.listGroups(gctx(c), r),
    [ApiKey.DescribeGroups]: (c, r) => a.describeGroups(gctx(c), r),
    [ApiKey.DeleteGroups]: (c, r) => a.deleteGroups(gctx(c), r),
    [ApiKey.OffsetDelete]: (c, r) => a.offsetDelete(gctx(c), r),
    [ApiKey.TxnOffsetCommit]: (c, r) => a.txnOffsetCommit(gctx(c), r),
    [ApiKey.ConsumerGroupHeartbeat]: (c, r) => a.consumerGroupHeartbeat(gctx(c), r),
    [ApiKey.ConsumerGroupDescribe]: (c, r) => a.consumerGroupDescribe(gctx(c), r),
  };
  return table[apiKey]!;
}

export class RequestRouter implements RequestHandler {
  private readonly routes = new Map<number, Route>();
  private readonly saslAuthenticators = new WeakMap<ConnectionInfo, SaslServerAuthenticator>();
  private readonly services: BrokerServices;
  private readonly apiKeys: ApiVersion[];
  /** Replica fetches are their own request kind in Kafka's metrics (FetchFollower). */
  private readonly followerFetchMetrics: ApiMetrics | null;

  constructor(
    b: BrokerServices,
    groupApi: GroupApi | null,
    /** A monotonic clock with sub-millisecond resolution: the request quota's measure of handling time. */
    private readonly monotonicMs: () => number,
    /** The transaction coordinator's APIs; absent: transactional ids are refused, as before it existed. */
    transactions: TransactionApi | null = null,
  ) {
    this.services = b;
    const metricsOf = (apiKey: number): ApiMetrics | null => {
      const name = API_MESSAGES.get(apiKey)!.name;
      return b.metrics?.api(apiKey === ApiKey.Fetch ? 'FetchConsumer' : name) ?? null;
    };
    this.followerFetchMetrics = b.metrics?.api('FetchFollower') ?? null;
    const handlers: Record<number, Handler> = {
      [ApiKey.Produce]: (c, r) => handleProduce(b, c, r),
      [ApiKey.Fetch]: (c, r) => handleFetch(b, c, r),
      [ApiKey.ListOffsets]: (c, r) => handleListOffsets(b, c, r),
      [ApiKey.Metadata]: (c, r) => handleMetadata(b, c, r),
      [ApiKey.ApiVersions]: (c, r) => handleApiVersions(() => this.apiKeys, c, r),
      [ApiKey.CreateTopics]: (c, r) => handleCreateTopics(b, c, r),
      [ApiKey.DeleteTopics]: (c, r) => handleDeleteTopics(b, c, r),
      [ApiKey.DeleteRecords]: (c, r) => handleDeleteRecords(b, c, r),
      [ApiKey.InitProducerId]: (c, r) => handleInitProducerId(b, c, r),
      [ApiKey.OffsetForLeaderEpoch]: (c, r) => handleOffsetForLeaderEpoch(b, c, r),
      [ApiKey.CreatePartitions]: (c, r) => handleCreatePartitions(b, c, r),
      [ApiKey.DescribeCluster]: (c, r) => handleDescribeCluster(b, c, r),
      [ApiKey.DescribeAcls]: (c, r) => handleDescribeAcls(b, c, r),
      [ApiKey.CreateAcls]: (c, r) => handleCreateAcls(b, c, r),
      [ApiKey.DeleteAcls]: (c, r) => handleDeleteAcls(b, c, r),
      [ApiKey.DescribeConfigs]: (c, r) => handleDescribeConfigs(b, c, r),
      [ApiKey.AlterConfigs]: (c, r) => handleAlterConfigs(b, c, r),
      [ApiKey.IncrementalAlterConfigs]: (c, r) => handleIncrementalAlterConfigs(b, c, r),
      [ApiKey.DescribeLogDirs]: (c, r) => handleDescribeLogDirs(b, c, r),
      [ApiKey.ElectLeaders]: (c, r) => handleElectLeaders(b, c, r),
      [ApiKey.DescribeClientQuotas]: (c, r) => handleDescribeClientQuotas(b, c, r),
      [ApiKey.AlterClientQuotas]: (c, r) => handleAlterClientQuotas(b, c, r),
      [ApiKey.SkiffDescribeReplication]: (c, r) => handleSkiffDescribeReplication(b, c, r),
      [ApiKey.AlterPartitionReassignments]: (c, r) => handleAlterPartitionReassignments(b, c, r),
      [ApiKey.ListPartitionReassignments]: (c, r) => handleListPartitionReassignments(b, c, r),
      [ApiKey.AlterReplicaLogDirs]: (c, r) => handleAlterReplicaLogDirs(b, c, r),
      [ApiKey.SaslHandshake]: (c, r) => handleSaslHandshake(c, r),
      [ApiKey.SaslAuthenticate]: (c, r) => handleSaslAuthenticate(c, r),
      [ApiKey.DescribeUserScramCredentials]: (c, r) => handleDescribeUserScramCredentials(b, c, r),
      [ApiKey.AlterUserScramCredentials]: (c, r) => handleAlterUserScramCredentials(b, c, r),
      [ApiKey.DescribeProducers]: (c, r) => handleDescribeProducers(b, c, r),
    };
    for (const [apiKey, versions] of BROKER_API_VERSIONS) {
      const handler = handlers[apiKey];
      if (!handler) throw new Error(`BROKER_API_VERSIONS lists API ${apiKey} but no handler exists`);
      this.routes.set(apiKey, { versions, handler, metrics: metricsOf(apiKey) });
    }
    if (groupApi) {
      for (const apiKey of GROUP_API_KEYS) {
        const v = groupApi.versions.get(apiKey);
        const codec = API_MESSAGES.get(apiKey)!.request;
        if (!v) continue;
        const versions = { min: Math.max(v.min, codec.minVersion), max: Math.min(v.max, codec.maxVersion) };
        if (versions.min <= versions.max)
          this.routes.set(apiKey, {
            versions,
            handler: groupHandler(b, groupApi, apiKey),
            metrics: metricsOf(apiKey),
          });
      }
    }
    if (transactions) this.routeTransactions(transactions, metricsOf);
    this.apiKeys = [...this.routes.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([apiKey, r]) => ({
        apiKey,
        minVersion: r.versions.advertisedMin ?? r.versions.min,
        maxVersion: r.versions.max,
      }));
  }

  /**
   * The transaction APIs, InitProducerId with a transactional id, and FindCoordinator for key type
   * TRANSACTION (other key types stay with the group coordinator's route).
   */
  private routeTransactions(api: TransactionApi, metricsOf: (apiKey: number) => ApiMetrics | null): void {
    const t = authorizedTransactionApi(this.services, api);
    const handlers: Record<number, Handler> = {
      [ApiKey.AddPartitionsToTxn]: (c, r) => t.addPartitionsToTxn(c, r),
      [ApiKey.AddOffsetsToTxn]: (c, r) => t.addOffsetsToTxn(c, r),
      [ApiKey.EndTxn]: (c, r) => t.endTxn(c, r),
      [ApiKey.WriteTxnMarkers]: (c, r) => t.writeTxnMarkers(c, r),
      [ApiKey.DescribeTransactions]: (c, r) => t.describeTransactions(c, r),
      [ApiKey.ListTransactions]: (c, r) => t.listTransactions(c, r),
    };
    for (const [apiKey, versions] of TRANSACTION_API_VERSIONS) {
      this.routes.set(apiKey, { versions, handler: handlers[apiKey]!, metrics: metricsOf(apiKey) });
    }
    const init = this.routes.get(ApiKey.InitProducerId)!;
    this.routes.set(ApiKey.InitProducerId, { ...init, handler: (c, r) => t.initProducerId(c, r) });
    const find = this.routes.get(ApiKey.FindCoordinator);
    if (find) {
      this.routes.set(ApiKey.FindCoordinator, {
        ...find,
        handler: (c, r) =>
          c.apiVersion >= 1 && r.keyType === KEY_TYPE_TRANSACTION
            ? t.findCoordinator(c, r)
            : find.handler(c, r),
      });
    }
  }

  /** What ApiVersions reports: exactly the routed APIs. */
  supportedApis(): readonly ApiVersion[] {
    return this.apiKeys;
  }

  async handle(
    frame: Buffer,
    connection: ConnectionInfo,
    release: () => void = () => {},
  ): Promise<Buffer[] | null> {
    // A SASL listener's connection goes through its authentication first (handlers/sasl.ts).
    if (this.services.sasl !== undefined && connection.securityProtocol.startsWith('SASL_')) {
      const answer = await saslStep(this.services, this.saslAuthenticators, frame, connection);
      if (answer !== null) return answer;
    }
    if (frame.length < 8)
      throw new ProtocolError(`request frame of ${frame.length} bytes is too short for a header`);
    const apiKey = frame.readInt16BE(0);
    const apiVersion = frame.readInt16BE(2);
    const api = API_MESSAGES.get(apiKey);
    const route = this.routes.get(apiKey);
    const name = api ? api.name : `unknown API key ${apiKey}`;
    const refuse = (): CloseConnectionError =>
      new CloseConnectionError(
        `request for ${name} (key ${apiKey}) v${apiVersion}, which this broker does not implement`,
      );
    let parsed: ReturnType<typeof readRequest>;
    try {
      parsed = readRequest(frame);
    } catch (e) {
      if (!route || !api) throw refuse();
      throw e;
    }
    const { header, body } = parsed;
    connection.clientId = header.clientId;
    if (!route || !api) throw refuse();
    if (apiVersion < route.versions.min || apiVersion > route.versions.max) {
      if (apiKey === ApiKey.ApiVersions && apiVersion > route.versions.max) {
        // KIP-511: answer at v0 so any client can read the ranges and retry with a version we know.
        return encodeResponse(
          header.correlationId,
          apiKey,
          0,
          ApiVersionsResponseCodec,
          unsupportedApiVersionsResponse(this.apiKeys),
        );
      }
      throw new CloseConnectionError(
        `unsupported version ${apiVersion} of ${name} (supported ${route.versions.min}-${route.versions.max})`,
      );
    }
    const handlingStartMs = this.monotonicMs();
    const decoded = api.request.decode(body, apiVersion);
    let localMs: number | null = null;
    const ctx: RequestContext = {
      apiKey,
      apiVersion,
      correlationId: header.correlationId,
      clientId: header.clientId,
      connection,
      releaseConnection: release,
      sizeBytes: frame.length,
      localComplete: () => {
        localMs ??= this.monotonicMs() - handlingStartMs;
      },
      handlingMs: () => localMs ?? this.monotonicMs() - handlingStartMs,
    };
    const replicaFetch = apiKey === ApiKey.Fetch && isReplicaFetch(decoded);
    const metrics = replicaFetch ? this.followerFetchMetrics : route.metrics;
    const startedMs = metrics?.start() ?? 0;
    let response: unknown;
    const clusterCheck = CLUSTER_CHECKS.get(apiKey);
    try {
      response =
        clusterCheck !== undefined &&
        !this.services.authorization.authorizeCluster(ctx, clusterCheck.operation)
          ? clusterCheck.refuse(decoded, apiVersion)
          : await route.handler(ctx, decoded);
    } finally {
      metrics?.done(startedMs, response);
    }
    if (response === null) return null;
    // Produce, Fetch and the topic mutations weigh the request quota beside their own quotas
    // themselves; a follower's Fetch is exempt, as in Kafka (no other API Skiff serves is a
    // cluster action).
    if (!WEIGHS_REQUEST_QUOTA_ITSELF.has(apiKey)) requestQuotaThrottle(this.services, ctx, response);
    const encodeStartMs = this.monotonicMs();
    const encoded = encodeResponse(
      header.correlationId,
      apiKey,
      apiVersion,
      api.response as MessageCodec<unknown>,
      response,
    );
    // Kafka records the network thread's time on a response without throttling it (it weighs on
    // the client's next request); encoding is that part of a request's cost here.
    if (!replicaFetch) {
      this.services.clientQuotas?.recordResponseTime(
        ctx,
        this.monotonicMs() - encodeStartMs,
        this.services.clock.nowMs(),
      );
    }
    return encoded;
  }
}

/** The APIs whose handlers record the request quota with their own (produce, fetch, controller mutation). */
const WEIGHS_REQUEST_QUOTA_ITSELF: ReadonlySet<number> = new Set([
  ApiKey.Produce,
  ApiKey.Fetch,
  ApiKey.CreateTopics,
  ApiKey.DeleteTopics,
  ApiKey.CreatePartitions,
]);

/**
 * Kafka's RequestHandlerHelper.sendResponseMaybeThrottle: the request's handling time is recorded
 * against its client's request_percentage; over it, the response carries the throttle time and
 * the connection is muted for it.
 */
function requestQuotaThrottle(b: BrokerServices, ctx: RequestContext, response: unknown): void {
  const quotas = b.clientQuotas;
  if (!quotas?.request.enabled) return;
  const nowMs = b.clock.nowMs();
  const ms = quotas.recordRequestTime(ctx, ctx.handlingMs(), nowMs);
  if (ms <= 0) return;
  const r = response as { throttleTimeMs?: number };
  if (typeof r.throttleTimeMs === 'number') r.throttleTimeMs = Math.max(r.throttleTimeMs, ms);
  quotas.throttle(quotas.request, ctx, ms, nowMs);
}

/** A Fetch from a follower (replica id ≥ 0: in the body before v15, in ReplicaState from v15). */
function isReplicaFetch(body: unknown): boolean {
  const b = body as { replicaId?: number; replicaState?: { replicaId?: number } };
  return (b.replicaState?.replicaId ?? -1) >= 0 || (b.replicaId ?? -1) >= 0;
}
