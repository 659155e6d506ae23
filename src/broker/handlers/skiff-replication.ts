/**
 * SkiffDescribeReplication (Skiff's admin API, key 10000; spec in tools/codegen/skiff-specs): what
 * only this broker knows about the replication of the partitions it hosts. As a leader: its view
 * of every replica (LEO as of the replica's latest Fetch, log start, lastCaughtUpTimeMs,
 * lastFetchTimeMs, in ISR, lag = leader LEO − replica LEO, and the bytes of the leader's log the
 * replica still has to copy). For every hosted partition: its durable ISR/leadership history,
 * read from the metadata store (src/metadata/isr-history.ts, the same on every broker). The observed replication rates (Kafka's windowed Rate in
 * src/replication/quota.ts): per broker side (leader out, follower in; all and throttled
 * partitions) beside the throttle rates in effect, per partition the follower's bytes/s in and
 * whether each side's throttled-replicas list names it here. Read-only; answers from the event
 * loop's current state.
 */

import { fieldsJson } from '../../common/logger.js';
import { topicPartitionKey } from '../../common/topic-partition.js';
import { type IsrChangeRecord, isrHistoryBounds } from '../../metadata/isr-history.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { SkiffDescribeReplicationRequest } from '../../protocol/generated/SkiffDescribeReplicationRequest.js';
import type {
  DescribeReplicationPartitionResult,
  DescribeReplicationTopicResult,
  IsrChangeEntry,
  ReplicationEventEntry,
  ReplicaView,
  SkiffDescribeReplicationResponse,
} from '../../protocol/generated/SkiffDescribeReplicationResponse.js';
import type { PartitionLeaderState } from '../../replication/leader-state.js';
import type { Partition } from '../../replication/partition.js';
import type {
  ObservedReplicationRate,
  ReplicationQuota,
  ReplicationQuotas,
} from '../../replication/quota.js';
import type { Log } from '../../storage/log.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';

/** The Role field. */
export const ReplicationRole = { leader: 0, follower: 1, none: 2 } as const;

/** Bytes of `log` from `offset` (clamped to the log start) to its LEO: what a replica at `offset` must copy. */
export function bytesFrom(log: Log, offset: bigint): bigint {
  const from = offset < log.logStartOffset ? log.logStartOffset : offset;
  if (from >= log.logEndOffset) return 0n;
  const at = log.local.convertToOffsetMetadata(from);
  let bytes = 0n;
  for (const s of log.local.segments.values()) {
    if (s.baseOffset < at.segmentBaseOffset) continue;
    bytes += BigInt(s.baseOffset === at.segmentBaseOffset ? s.size - at.position : s.size);
  }
  return bytes;
}

/** The broker-level rate fields of the response. */
export interface BrokerReplicationRates {
  readonly leaderReplicationBytesPerSec: bigint;
  readonly leaderThrottledReplicationBytesPerSec: bigint;
  readonly followerReplicationBytesPerSec: bigint;
  readonly followerThrottledReplicationBytesPerSec: bigint;
  readonly leaderThrottleRate: bigint;
  readonly followerThrottleRate: bigint;
}

const NOT_MEASURED: BrokerReplicationRates = {
  leaderReplicationBytesPerSec: -1n,
  leaderThrottledReplicationBytesPerSec: -1n,
  followerReplicationBytesPerSec: -1n,
  followerThrottledReplicationBytesPerSec: -1n,
  leaderThrottleRate: -1n,
  followerThrottleRate: -1n,
};

/** Both sides' observed rates now, once per request (observed() also forgets idle partitions). */
export interface ObservedRates {
  readonly quotas: ReplicationQuotas;
  readonly leader: ObservedReplicationRate;
  readonly follower: ObservedReplicationRate;
}

export function observeRates(quotas: ReplicationQuotas | undefined, nowMs: number): ObservedRates | null {
  if (!quotas) return null;
  return { quotas, leader: quotas.leader.observed(nowMs), follower: quotas.follower.observed(nowMs) };
}

const bytesPerSec = (n: number): bigint => BigInt(Math.round(n));

/** The broker-level fields: observed bytes/s per side (all, throttled) and the rates in effect (-1: none). */
export function brokerReplicationRates(o: ObservedRates | null): BrokerReplicationRates {
  if (o === null) return NOT_MEASURED;
  return {
    leaderReplicationBytesPerSec: bytesPerSec(o.leader.bytesPerSec),
    leaderThrottledReplicationBytesPerSec: bytesPerSec(o.leader.throttledBytesPerSec),
    followerReplicationBytesPerSec: bytesPerSec(o.follower.bytesPerSec),
    followerThrottledReplicationBytesPerSec: bytesPerSec(o.follower.throttledBytesPerSec),
    leaderThrottleRate: o.leader.throttleRate === null ? -1n : bytesPerSec(o.leader.throttleRate),
    followerThrottleRate: o.follower.throttleRate === null ? -1n : bytesPerSec(o.follower.throttleRate),
  };
}

/** The per-partition rate fields: follower bytes/s in (when `following`), each side's throttled flag. */
export function partitionReplicationRates(
  o: ObservedRates | null,
  topic: string,
  partition: number,
  following: boolean,
): Pick<
  DescribeReplicationPartitionResult,
  'followerReplicationBytesPerSec' | 'leaderThrottled' | 'followerThrottled'
> {
  if (o === null)
    return { followerReplicationBytesPerSec: -1n, leaderThrottled: false, followerThrottled: false };
  return {
    followerReplicationBytesPerSec: following
      ? bytesPerSec(o.follower.partitions.get(topicPartitionKey(topic, partition)) ?? 0)
      : -1n,
    leaderThrottled: o.quotas.leader.isThrottled(topic, partition),
    followerThrottled: o.quotas.follower.isThrottled(topic, partition),
  };
}

function historyEntries(history: readonly IsrChangeRecord[]): IsrChangeEntry[] {
  return history.map((h) => ({
    brokerId: h.broker,
    cause: h.cause,
    timeMs: BigInt(h.timeMs),
    kind: h.kind,
    leaderId: h.leader,
    leaderEpoch: h.leaderEpoch,
    partitionEpoch: h.partitionEpoch,
    oldIsr: [...h.oldIsr],
    newIsr: [...h.newIsr],
    reason: h.reason,
  }));
}

export function replicaViews(
  leader: PartitionLeaderState,
  localBrokerId: number,
  nowMs: number,
  quota: ReplicationQuota | undefined,
): ReplicaView[] {
  const log = leader.log;
  const leo = log.logEndOffset;
  const isr = new Set(leader.isr);
  return leader.replicas.map((brokerId): ReplicaView => {
    if (brokerId === localBrokerId) {
      return {
        brokerId,
        logEndOffset: leo,
        logStartOffset: log.logStartOffset,
        lastCaughtUpTimeMs: BigInt(nowMs),
        lastFetchTimeMs: BigInt(nowMs),
        inIsr: isr.has(brokerId),
        lag: 0n,
        bytesToCatchUp: 0n,
        observedReplicationBytesPerSec: -1n,
      };
    }
    const s = leader.followerState(brokerId);
    const known = s !== undefined && s.logEndOffset >= 0n;
    return {
      brokerId,
      logEndOffset: s?.logEndOffset ?? -1n,
      logStartOffset: s?.logStartOffset ?? -1n,
      lastCaughtUpTimeMs: BigInt(s?.lastCaughtUpTimeMs ?? 0),
      lastFetchTimeMs: BigInt(s?.lastFetchTimeMs ?? 0),
      inIsr: isr.has(brokerId),
      lag: known ? leo - s.logEndOffset : -1n,
      bytesToCatchUp: known ? bytesFrom(log, s.logEndOffset) : -1n,
      observedReplicationBytesPerSec: BigInt(
        Math.round(quota?.replicaRate(leader.name, brokerId, nowMs) ?? -1),
      ),
    };
  });
}

function describePartition(
  b: BrokerServices,
  p: Partition,
  nowMs: number,
  rates: ObservedRates | null,
): DescribeReplicationPartitionResult {
  const log = p.log;
  const base: DescribeReplicationPartitionResult = {
    partitionIndex: p.index,
    errorCode: ErrorCode.NONE,
    role: ReplicationRole.none,
    leaderId: p.leaderId,
    leaderEpoch: p.leaderEpoch,
    partitionEpoch: -1,
    highWatermark: log.highWatermark,
    logEndOffset: log.logEndOffset,
    logStartOffset: log.logStartOffset,
    sizeBytes: BigInt(log.size),
    isr: [...p.isr],
    ...partitionReplicationRates(rates, p.topic, p.index, false),
    replicas: [],
    history: [],
  };
  const state = b.metadata.image().topics.get(p.topic)?.partitions[p.index];
  if (state) base.partitionEpoch = state.partitionEpoch;
  const replication = b.replicaManager.replication;
  const d = replication.describe(topicPartitionKey(p.topic, p.index));
  if (d.leader) {
    return {
      ...base,
      role: ReplicationRole.leader,
      leaderId: b.config.nodeId,
      leaderEpoch: d.leader.leaderEpoch,
      partitionEpoch: d.leader.partitionEpoch,
      isr: [...d.leader.isr],
      replicas: replicaViews(d.leader, b.config.nodeId, nowMs, replication.quotas?.leader),
    };
  }
  if (d.follower) {
    return {
      ...base,
      ...partitionReplicationRates(rates, p.topic, p.index, true),
      role: ReplicationRole.follower,
      leaderId: d.follower.leaderId,
    };
  }
  return base;
}

/** Each hosted partition's durable history; a store that does not answer leaves it empty. */
async function addHistory(b: BrokerServices, topics: DescribeReplicationTopicResult[], nowMs: number) {
  const image = b.metadata.image();
  const bounds = isrHistoryBounds(image.brokerConfigs.get('<default>') ?? {}, b.config.staticProps);
  for (const t of topics) {
    const hosted = t.partitions.filter((p) => p.errorCode === ErrorCode.NONE);
    if (hosted.length === 0) continue;
    try {
      const all = hosted.length > 1 && hosted.length === image.topics.get(t.name)?.partitions.length;
      const history = await b.metadata.isrHistory(
        t.name,
        all ? null : hosted.map((p) => p.partitionIndex),
        bounds,
        nowMs,
      );
      for (const p of hosted) p.history = historyEntries(history.get(p.partitionIndex) ?? []);
    } catch (e) {
      b.logger.warn(`ISR history of ${t.name} unavailable: ${(e as Error).message}`);
    }
  }
}

export async function handleSkiffDescribeReplication(
  b: BrokerServices,
  _ctx: RequestContext,
  req: SkiffDescribeReplicationRequest,
): Promise<SkiffDescribeReplicationResponse> {
  const nowMs = b.clock.nowMs();
  const hosted = b.replicaManager.allPartitions();
  const rates = observeRates(b.replicaManager.replication.quotas, nowMs);
  const byTopic = new Map<string, DescribeReplicationTopicResult>();
  const add = (topic: string, r: DescribeReplicationPartitionResult): void => {
    let t = byTopic.get(topic);
    if (!t) {
      t = { name: topic, partitions: [] };
      byTopic.set(topic, t);
    }
    t.partitions.push(r);
  };
  if (req.topics === null) {
    for (const p of hosted) add(p.topic, describePartition(b, p, nowMs, rates));
  } else {
    for (const t of req.topics) {
      const mine = hosted.filter((p) => p.topic === t.name);
      const wanted = t.partitions === null ? mine.map((p) => p.index) : t.partitions;
      for (const index of wanted) {
        const p = mine.find((x) => x.index === index);
        if (p) add(t.name, describePartition(b, p, nowMs, rates));
        // Not hosted here: the tools ask every broker, so this is an answer, not a failure.
        else
          add(t.name, {
            partitionIndex: index,
            errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            role: ReplicationRole.none,
            leaderId: -1,
            leaderEpoch: -1,
            partitionEpoch: -1,
            highWatermark: -1n,
            logEndOffset: -1n,
            logStartOffset: -1n,
            sizeBytes: -1n,
            isr: [],
            followerReplicationBytesPerSec: -1n,
            leaderThrottled: false,
            followerThrottled: false,
            replicas: [],
            history: [],
          });
      }
    }
  }
  const topics = [...byTopic.values()].sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
  for (const t of topics) t.partitions.sort((x, y) => x.partitionIndex - y.partitionIndex);
  if (req.includeHistory) await addHistory(b, topics, nowMs);
  return {
    throttleTimeMs: 0,
    errorCode: ErrorCode.NONE,
    brokerId: b.config.nodeId,
    nowMs: BigInt(nowMs),
    ...brokerReplicationRates(rates),
    topics,
    // Kept in memory, at most LIMITS.replicationEventsKept: always sent (the history costs store reads).
    events: journalEntries(b),
  };
}

/** The broker's latest recoveries, truncations, rebuilds and segment deletions, as logged. */
function journalEntries(b: BrokerServices): ReplicationEventEntry[] {
  return (b.events?.list() ?? []).map((e) => ({
    timeMs: BigInt(e.timeMs),
    event: e.event,
    level: e.level,
    message: e.message,
    fieldsJson: fieldsJson(e.fields),
  }));
}
