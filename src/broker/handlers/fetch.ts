/**
 * Fetch (Kafka's KafkaApis.handleFetchRequest + ReplicaManager.fetchMessages + DelayedFetch):
 * reads each partition up to its per-partition limit and the response limit, consumers up to
 * the HW and followers up to the LEO; when fewer than minBytes are available and maxWaitMs > 0
 * the request is parked and re-read whenever one of its partitions changes, until minBytes or
 * the timeout. Fetch sessions (v7+) decide which partitions a response carries.
 */

import { topicPartitionKey } from '../../common/topic-partition.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { FetchRequest } from '../../protocol/generated/FetchRequest.js';
import {
  defaultFetchResponse,
  defaultPartitionData,
  type FetchableTopicResponse,
  type FetchResponse,
  type PartitionData,
} from '../../protocol/generated/FetchResponse.js';
import { ZERO_UUID } from '../../protocol/uuid.js';
import { awaitCondition } from '../../replication/purgatory.js';
import { AclOperation, ResourceType } from '../../security/acl.js';
import { readBuffers } from '../../storage/read-buffers.js';
import type { AbortedTxn } from '../../storage/transaction-index.js';
import { quotaUser } from '../client-quota-manager.js';
import { type FetchContext, type SessionPartition, sessionPartitionKey } from '../fetch-session.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';
import { errorCodeOf, notHostedError } from './partition-errors.js';

const { UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED } = ErrorCode;

/**
 * Kafka's FetchRequest.DEBUGGING_CONSUMER_ID: a consumer allowed to read any replica, followers
 * included, up to that replica's HW (replica-verification compares every replica this way).
 */
export const DEBUGGING_CONSUMER_ID = -2;
const EMPTY = Buffer.alloc(0);

interface PartitionRead {
  readonly sp: SessionPartition;
  readonly errorCode: number;
  readonly highWatermark: bigint;
  readonly lastStableOffset: bigint;
  readonly logStartOffset: bigint;
  readonly records: Buffer;
  /** read_committed: the aborted transactions of the range read; null for read_uncommitted. */
  readonly abortedTransactions?: readonly AbortedTxn[] | null;
  /** Where the follower's log diverges from the leader's (replica fetches). */
  readonly divergingEpoch?: { readonly epoch: number; readonly endOffset: bigint } | undefined;
  /** Records withheld by the leader's replication throttle. */
  readonly throttled?: boolean;
}

export async function handleFetch(
  b: BrokerServices,
  ctx: RequestContext,
  req: FetchRequest,
): Promise<FetchResponse> {
  const useTopicIds = ctx.apiVersion >= 13;
  const replicaId = ctx.apiVersion >= 15 ? req.replicaState.replicaId : req.replicaId;
  const image = b.metadata.image();
  const nameOfId = new Map<string, string>();
  if (useTopicIds) for (const t of image.topics.values()) nameOfId.set(t.topicId, t.name);

  const requested: SessionPartition[] = [];
  for (const t of req.topics) {
    const topic = useTopicIds ? (nameOfId.get(t.topicId) ?? '') : t.topic;
    const topicId = useTopicIds ? t.topicId : (image.topics.get(topic)?.topicId ?? ZERO_UUID);
    for (const p of t.partitions) {
      requested.push({
        key: sessionPartitionKey(t.topic, t.topicId, p.partition, useTopicIds),
        topic,
        topicId,
        partition: p.partition,
        fetchOffset: p.fetchOffset,
        maxBytes: p.partitionMaxBytes,
        currentLeaderEpoch: p.currentLeaderEpoch,
        logStartOffset: p.logStartOffset,
        lastFetchedEpoch: p.lastFetchedEpoch,
        sentHighWatermark: -1n,
        sentLogStartOffset: -1n,
      });
    }
  }
  const forgotten = req.forgottenTopicsData.flatMap((f) =>
    f.partitions.map((p) => sessionPartitionKey(f.topic, f.topicId, p, useTopicIds)),
  );
  const fc = b.fetchSessions.context(req.sessionId, req.sessionEpoch, requested, forgotten);
  if (fc.kind === 'error') return { ...defaultFetchResponse(), errorCode: fc.errorCode, sessionId: 0 };

  const replicaEpoch = ctx.apiVersion >= 15 ? req.replicaState.replicaEpoch : -1n;
  // A consumer takes at most what it could without being certain to be throttled (Kafka's
  // getMaxValueInQuotaWindow): a larger response would only be thrown away.
  const quotas = replicaId >= 0 ? undefined : b.clientQuotas;
  const maxBytes = Math.min(
    req.maxBytes,
    quotas?.fetch.maxValueInQuotaWindow(quotaUser(ctx), ctx.clientId ?? '', b.clock.nowMs()) ?? Infinity,
  );
  const minBytes = Math.min(req.minBytes, maxBytes);
  // Stored bytes may reach the socket as file regions (sendfile) instead of through memory.
  const forSocket = ctx.connection.sendsFileRegions === true;
  // Kafka's checks: a replica's fetch needs CLUSTER_ACTION, a consumer's READ on each topic; the
  // partitions refused are answered at once with TOPIC_AUTHORIZATION_FAILED, the others read.
  const readable = fetchAuthorized(b, ctx, replicaId, fc.partitions);
  const refused = fc.partitions
    .filter((sp) => !readable(sp.topic))
    .map((sp) => failedRead(sp, TOPIC_AUTHORIZATION_FAILED));
  const partitions = refused.length === 0 ? fc.partitions : fc.partitions.filter((sp) => readable(sp.topic));
  const readAll = (): PartitionRead[] =>
    replicaId >= 0
      ? readForFollowers(b, partitions, maxBytes, replicaId, replicaEpoch, forSocket)
      : readPartitions(b, partitions, maxBytes, replicaId, forSocket, req.isolationLevel === 1);
  let reads = readAll();
  const enough = (rs: PartitionRead[]): boolean =>
    rs.some((r) => r.errorCode !== 0 || r.divergingEpoch !== undefined) ||
    rs.reduce((n, r) => n + r.records.length, 0) >= minBytes;
  if (req.maxWaitMs > 0 && partitions.length > 0 && !enough(reads)) {
    ctx.localComplete();
    const keys = partitions.map((sp) => topicPartitionKey(sp.topic, sp.partition));
    // Withheld by the replication throttle: answer once the leader's budget refills.
    const quota = replicaId >= 0 ? b.replicaManager.replication.quotas?.leader : undefined;
    const waitMs =
      quota && reads.some((r) => r.throttled) ? quota.withheldWaitMs(req.maxWaitMs) : req.maxWaitMs;
    const passed = await awaitCondition(
      b.replicaManager.replication.purgatory,
      b.scheduler,
      keys,
      waitMs,
      () => {
        reads = readAll();
        return enough(reads);
      },
      (abort) => ctx.connection.whenClosed(abort),
    );
    if (!passed) reads = readAll();
  }
  if (quotas !== undefined) {
    const throttleMs = throttleFetch(quotas, b, ctx, responseSize(reads));
    // Throttled: an empty answer (Kafka's getThrottledResponse), the session left as it was.
    if (throttleMs > 0) {
      for (const r of reads) readBuffers.release(r.records);
      const sessionId = fc.kind === 'incremental' ? (fc.session?.id ?? 0) : 0;
      return { ...defaultFetchResponse(), throttleTimeMs: throttleMs, sessionId, responses: [] };
    }
  }
  // Consumer bytes only: what followers fetch is replication bytes out (the leader's quota meter).
  if (replicaId < 0 && b.metrics) for (const r of reads) b.metrics.fetched(r.sp.topic, r.records.length);
  return buildResponse(fc, refused.length === 0 ? reads : [...refused, ...reads]);
}

/** Which topics the fetch may read (Kafka: CLUSTER_ACTION for a replica, else READ per topic). */
function fetchAuthorized(
  b: BrokerServices,
  ctx: RequestContext,
  replicaId: number,
  partitions: readonly SessionPartition[],
): (topic: string) => boolean {
  const auth = b.authorization;
  if (!auth.enabled) return () => true;
  if (replicaId >= 0) {
    const ok = auth.authorizeCluster(ctx, AclOperation.CLUSTER_ACTION);
    return () => ok;
  }
  const allowed = auth.filter(
    ctx,
    AclOperation.READ,
    ResourceType.TOPIC,
    partitions.map((sp) => sp.topic),
  );
  // An unknown topic id (no name) is answered UNKNOWN_TOPIC_ID before any authorization, as Kafka.
  return (topic) => topic === '' || allowed.has(topic);
}

/**
 * The size of the response `reads` make, as the fetch quota meters it (Kafka's
 * FetchContext.getResponseSize): the record bytes plus each partition's and topic's fixed fields.
 */
function responseSize(reads: readonly PartitionRead[]): number {
  let bytes = FETCH_RESPONSE_FIXED_BYTES;
  let topic: string | null = null;
  for (const r of reads) {
    if (r.sp.topic !== topic) {
      topic = r.sp.topic;
      bytes += FETCH_TOPIC_FIXED_BYTES + Buffer.byteLength(topic);
    }
    bytes += FETCH_PARTITION_FIXED_BYTES + r.records.length;
  }
  return bytes;
}

// Header, throttle time, error code, session id, topic count; a topic's name or id and partition
// count; a partition's index, error code, HW, LSO, log start offset, aborted transactions, preferred
// read replica and records length.
const FETCH_RESPONSE_FIXED_BYTES = 4 + 4 + 2 + 4 + 4;
const FETCH_TOPIC_FIXED_BYTES = 2 + 4;
const FETCH_PARTITION_FIXED_BYTES = 4 + 2 + 8 + 8 + 8 + 4 + 4 + 4;

/**
 * Kafka's handleFetchRequest for a consumer: the request's handling time against
 * request_percentage, the response's size against consumer_byte_rate; over either, the size is
 * un-recorded (nothing is sent), the connection muted for the longer throttle, which is returned.
 */
function throttleFetch(
  quotas: NonNullable<BrokerServices['clientQuotas']>,
  b: BrokerServices,
  ctx: RequestContext,
  sizeBytes: number,
): number {
  const nowMs = b.clock.nowMs();
  const clientId = ctx.clientId ?? '';
  const requestMs = quotas.recordRequestTime(ctx, ctx.handlingMs(), nowMs);
  const bandwidthMs = quotas.fetch.recordAndGetThrottleTimeMs(quotaUser(ctx), clientId, sizeBytes, nowMs);
  const ms = Math.max(bandwidthMs, requestMs);
  if (ms <= 0) return 0;
  quotas.fetch.recordNoThrottle(quotaUser(ctx), clientId, -sizeBytes, nowMs);
  quotas.throttle(bandwidthMs > requestMs ? quotas.fetch : quotas.request, ctx, ms, nowMs);
  return ms;
}

/** A partition answered with an error: no data, and -1 for every offset. */
function failedRead(sp: SessionPartition, errorCode: number): PartitionRead {
  return { sp, errorCode, highWatermark: -1n, lastStableOffset: -1n, logStartOffset: -1n, records: EMPTY };
}

/** A replica's Fetch: replication's leader side reads each partition it leads here. */
function readForFollowers(
  b: BrokerServices,
  partitions: readonly SessionPartition[],
  responseMaxBytes: number,
  replicaId: number,
  replicaEpoch: bigint,
  forSocket: boolean,
): PartitionRead[] {
  const results = b.replicaManager.replication.readForFollower(
    replicaId,
    replicaEpoch,
    partitions,
    responseMaxBytes,
    forSocket,
  );
  return partitions.map((sp, i) => {
    if (sp.topic === '') return failedRead(sp, UNKNOWN_TOPIC_ID);
    const r = results[i];
    if (r === undefined) return failedRead(sp, notHostedError(b, sp.topic, sp.partition));
    return {
      sp,
      errorCode: r.errorCode,
      highWatermark: r.highWatermark,
      lastStableOffset: r.lastStableOffset,
      logStartOffset: r.logStartOffset,
      records: r.records,
      divergingEpoch: r.divergingEpoch ?? undefined,
      throttled: r.throttled === true,
    };
  });
}

/**
 * A consumer's Fetch (Kafka's debugging consumer included): each partition up to its HW, or up to
 * its LSO for read_committed (isolation_level 1), with the aborted transactions of what it read.
 */
function readPartitions(
  b: BrokerServices,
  partitions: readonly SessionPartition[],
  responseMaxBytes: number,
  replicaId: number,
  forSocket: boolean,
  readCommitted: boolean,
): PartitionRead[] {
  const isolation = readCommitted ? 'txn-committed' : 'high-watermark';
  let remaining = Math.max(0, responseMaxBytes);
  // Kafka returns at least one whole batch for the first partition with data, even above the
  // limits, so a consumer can never be stuck behind a batch larger than its fetch size.
  let minOneMessage = true;
  return partitions.map((sp) => {
    const fail = (errorCode: number): PartitionRead => failedRead(sp, errorCode);
    if (sp.topic === '') return fail(UNKNOWN_TOPIC_ID);
    const p = b.replicaManager.getPartition(sp.topic, sp.partition);
    if (!p) return fail(notHostedError(b, sp.topic, sp.partition));
    try {
      if (replicaId !== DEBUGGING_CONSUMER_ID) p.checkLeader();
      p.checkLeaderEpoch(sp.currentLeaderEpoch);
      const limit = Math.min(Math.max(0, sp.maxBytes), remaining);
      const result = p.read(sp.fetchOffset, limit, isolation, minOneMessage, forSocket);
      if (result.records.length > 0) minOneMessage = false;
      remaining = Math.max(0, remaining - result.records.length);
      return {
        sp,
        errorCode: 0,
        highWatermark: p.log.highWatermark,
        lastStableOffset: p.log.lastStableOffset,
        logStartOffset: p.log.logStartOffset,
        records: result.records,
        abortedTransactions: readCommitted ? (result.abortedTransactions ?? []) : null,
      };
    } catch (e) {
      const { code } = errorCodeOf(e, b, `fetch from ${sp.topic}-${sp.partition}`);
      return {
        sp,
        errorCode: code,
        highWatermark: p.log.highWatermark,
        lastStableOffset: p.log.lastStableOffset,
        logStartOffset: p.log.logStartOffset,
        records: EMPTY,
      };
    }
  });
}

function buildResponse(fc: Exclude<FetchContext, { kind: 'error' }>, reads: PartitionRead[]): FetchResponse {
  const responses: FetchableTopicResponse[] = [];
  for (const r of reads) {
    const changed =
      r.errorCode !== 0 ||
      r.divergingEpoch !== undefined ||
      r.records.length > 0 ||
      r.highWatermark !== r.sp.sentHighWatermark ||
      r.logStartOffset !== r.sp.sentLogStartOffset;
    if (fc.kind === 'incremental' && !changed) continue;
    r.sp.sentHighWatermark = r.highWatermark;
    r.sp.sentLogStartOffset = r.logStartOffset;
    const data: PartitionData = {
      ...defaultPartitionData(),
      partitionIndex: r.sp.partition,
      errorCode: r.errorCode,
      highWatermark: r.highWatermark,
      lastStableOffset: r.lastStableOffset,
      logStartOffset: r.logStartOffset,
      records: r.records,
      abortedTransactions:
        r.abortedTransactions?.map((t) => ({ producerId: t.producerId, firstOffset: t.firstOffset })) ?? null,
      ...(r.divergingEpoch && { divergingEpoch: { ...r.divergingEpoch } }),
    };
    const last = responses.at(-1);
    if (last && last.topic === r.sp.topic && last.topicId === r.sp.topicId) last.partitions.push(data);
    else responses.push({ topic: r.sp.topic, topicId: r.sp.topicId, partitions: [data] });
  }
  const sessionId = fc.kind === 'sessionless' ? 0 : (fc.session?.id ?? 0);
  return { ...defaultFetchResponse(), sessionId, responses };
}
