/**
 * ListOffsets and OffsetForLeaderEpoch: offset lookups on a partition leader.
 * ListOffsets' special timestamps: -2 earliest (log start offset), -1 latest (HW; the LSO for
 * read_committed, equal to the HW until transactions exist), -3 the batch with the largest
 * timestamp, -4 earliest local (the log start offset: no tiered storage), -5 latest tiered (none:
 * offset -1, as Kafka answers for a topic without remote storage). v10's timeout bounds Kafka's
 * lookups in remote storage only, so it has nothing to bound here.
 */

import { ErrorCode } from '../../protocol/generated/errors.js';
import type { ListOffsetsRequest } from '../../protocol/generated/ListOffsetsRequest.js';
import {
  defaultListOffsetsPartitionResponse,
  type ListOffsetsPartitionResponse,
  type ListOffsetsResponse,
} from '../../protocol/generated/ListOffsetsResponse.js';
import type { OffsetForLeaderEpochRequest } from '../../protocol/generated/OffsetForLeaderEpochRequest.js';
import type { OffsetForLeaderEpochResponse } from '../../protocol/generated/OffsetForLeaderEpochResponse.js';
import { lastOffsetForLeaderEpoch } from '../../replication/leader-fetch.js';
import { AclOperation, ResourceType } from '../../security/acl.js';
import type { Log } from '../../storage/log.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';
import { errorCodeOf, notHostedError } from './partition-errors.js';

const { INVALID_REQUEST, TOPIC_AUTHORIZATION_FAILED } = ErrorCode;

/** The items allowed, then the refused ones: the order of Kafka's partitionSeqByAuthorized answers. */
export function authorizedFirst<T>(items: readonly T[], allowed: (item: T) => boolean): T[] {
  const yes = items.filter(allowed);
  return yes.length === items.length ? [...items] : [...yes, ...items.filter((i) => !allowed(i))];
}

export const EARLIEST_TIMESTAMP = -2n;
export const LATEST_TIMESTAMP = -1n;
export const MAX_TIMESTAMP = -3n;
export const EARLIEST_LOCAL_TIMESTAMP = -4n;
export const LATEST_TIERED_TIMESTAMP = -5n;

/** Replica id of Kafka's debugging consumers, which may read from followers. */
const DEBUGGING_REPLICA_ID = -2;

function lookup(
  log: Log,
  timestamp: bigint,
  leaderEpoch: number,
  readCommitted: boolean,
  /** A follower asking (replica id ≥ 0): latest is the LEO, as Kafka answers replicas. */
  fromReplica = false,
): Partial<ListOffsetsPartitionResponse> {
  const epochAt = (offset: bigint): number => log.leaderEpochCache.epochForOffset(offset) ?? -1;
  // Kafka's lastFetchableOffset: what the asker may read (a replica its leader's LEO, a
  // read_committed consumer the LSO, any other the HW); a lookup landing at or past it finds none.
  const lastFetchable = fromReplica
    ? log.logEndOffset
    : readCommitted
      ? log.lastStableOffset
      : log.highWatermark;
  const none = { timestamp: -1n, offset: -1n, leaderEpoch: -1 };
  switch (timestamp) {
    case EARLIEST_TIMESTAMP:
    case EARLIEST_LOCAL_TIMESTAMP:
      return { timestamp: -1n, offset: log.logStartOffset, leaderEpoch: epochAt(log.logStartOffset) };
    case LATEST_TIMESTAMP:
      return { timestamp: -1n, offset: lastFetchable, leaderEpoch };
    case LATEST_TIERED_TIMESTAMP:
      return none;
    case MAX_TIMESTAMP: {
      const found = log.fetchOffsetOfMaxTimestamp();
      if (!found || found.offset >= lastFetchable) return none;
      return { timestamp: found.timestamp, offset: found.offset, leaderEpoch: found.leaderEpoch ?? -1 };
    }
    default: {
      if (timestamp < 0n)
        throw Object.assign(new Error(`unknown special timestamp ${timestamp}`), { invalid: true });
      const found = log.fetchOffsetByTimestamp(timestamp);
      if (!found || found.offset >= lastFetchable) return none;
      return { timestamp: found.timestamp, offset: found.offset, leaderEpoch: found.leaderEpoch ?? -1 };
    }
  }
}

export async function handleListOffsets(
  b: BrokerServices,
  ctx: RequestContext,
  req: ListOffsetsRequest,
): Promise<ListOffsetsResponse> {
  // Kafka: DESCRIBE on each topic; the refused topics are answered after the others.
  const allowed = b.authorization.filter(
    ctx,
    AclOperation.DESCRIBE,
    ResourceType.TOPIC,
    req.topics.map((t) => t.name),
  );
  return {
    throttleTimeMs: 0,
    topics: authorizedFirst(req.topics, (t) => allowed.has(t.name)).map((t) => ({
      name: t.name,
      partitions: t.partitions.map((rp) => {
        const base = { ...defaultListOffsetsPartitionResponse(), partitionIndex: rp.partitionIndex };
        if (!allowed.has(t.name)) return { ...base, errorCode: TOPIC_AUTHORIZATION_FAILED };
        const p = b.replicaManager.getPartition(t.name, rp.partitionIndex);
        if (!p) return { ...base, errorCode: notHostedError(b, t.name, rp.partitionIndex) };
        try {
          if (req.replicaId !== DEBUGGING_REPLICA_ID) p.checkLeader();
          p.checkLeaderEpoch(rp.currentLeaderEpoch);
          const found = lookup(
            p.log,
            rp.timestamp,
            p.leaderEpoch,
            req.isolationLevel === 1,
            req.replicaId >= 0,
          );
          // The leader epoch is a v4+ field; the codec refuses a value it cannot carry.
          return { ...base, ...found, ...(ctx.apiVersion < 4 && { leaderEpoch: -1 }) };
        } catch (e) {
          if ((e as { invalid?: boolean }).invalid) return { ...base, errorCode: INVALID_REQUEST };
          return {
            ...base,
            errorCode: errorCodeOf(e, b, `list offsets of ${t.name}-${rp.partitionIndex}`).code,
          };
        }
      }),
    })),
  };
}

export async function handleOffsetForLeaderEpoch(
  b: BrokerServices,
  ctx: RequestContext,
  req: OffsetForLeaderEpochRequest,
): Promise<OffsetForLeaderEpochResponse> {
  // Kafka: a replica's CLUSTER_ACTION covers every topic, else DESCRIBE on each.
  const auth = b.authorization;
  const names = req.topics.map((t) => t.topic);
  const allowed = auth.authorizeCluster(ctx, AclOperation.CLUSTER_ACTION)
    ? new Set(names)
    : auth.filter(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names);
  return {
    throttleTimeMs: 0,
    topics: authorizedFirst(req.topics, (t) => allowed.has(t.topic)).map((t) => ({
      topic: t.topic,
      partitions: t.partitions.map((rp) => {
        const base = { errorCode: 0, partition: rp.partition, leaderEpoch: -1, endOffset: -1n };
        if (!allowed.has(t.topic)) return { ...base, errorCode: TOPIC_AUTHORIZATION_FAILED };
        const p = b.replicaManager.getPartition(t.topic, rp.partition);
        if (!p) return { ...base, errorCode: notHostedError(b, t.topic, rp.partition) };
        try {
          const leader = p.leaderState;
          if (leader) {
            const r = lastOffsetForLeaderEpoch(leader, rp.currentLeaderEpoch, rp.leaderEpoch);
            return { ...base, errorCode: r.errorCode, leaderEpoch: r.leaderEpoch, endOffset: r.endOffset };
          }
          p.checkLeader();
          p.checkLeaderEpoch(rp.currentLeaderEpoch);
          const e = p.log.endOffsetForEpoch(rp.leaderEpoch);
          return { ...base, leaderEpoch: e.epoch, endOffset: e.endOffset };
        } catch (e) {
          return {
            ...base,
            errorCode: errorCodeOf(e, b, `offset for leader epoch of ${t.topic}-${rp.partition}`).code,
          };
        }
      }),
    })),
  };
}
