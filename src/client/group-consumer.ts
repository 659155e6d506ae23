/**
 * A consumer in a classic consumer group, as Kafka's KafkaConsumer with subscribe() and its
 * ConsumerCoordinator: it finds the group's coordinator, joins (JoinGroup, asking for its member id
 * first as v4+ requires), the leader assigns the partitions with Kafka's range assignor, SyncGroup
 * hands each member its share, positions start at the committed offsets (auto.offset.reset where
 * there are none), heartbeats keep the membership and notice a rebalance, offsets are committed
 * every auto.commit.interval.ms, before a rebalance and on close (enable.auto.commit), and close()
 * leaves the group. Owned by one tool run; poll() and close() must not overlap.
 */
import { topicPartitionKey } from '../common/topic-partition.js';
import { ConsumerProtocolAssignmentCodec } from '../protocol/generated/ConsumerProtocolAssignment.js';
import { ConsumerProtocolSubscriptionCodec } from '../protocol/generated/ConsumerProtocolSubscription.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import type { JoinGroupResponse } from '../protocol/generated/JoinGroupResponse.js';
import { Reader } from '../protocol/reader.js';
import { Writer } from '../protocol/writer.js';
import { groupByTopic } from './admin.js';
import { type Api, Apis } from './apis.js';
import { type ConsumedRecord, Consumer, type ConsumerOptions } from './consumer.js';
import { ClientError, KafkaResponseError, kafkaError } from './errors.js';
import { decodeAssignment, GroupAdmin, offsetCommitRequest } from './groups.js';
import { isRetriable, type KafkaClient } from './kafka-client.js';
import type { TopicPartition } from './partitions.js';

export interface GroupConsumerOptions {
  readonly groupId: string;
  /** group.instance.id: static membership (no LeaveGroup on close, as in Kafka). */
  readonly groupInstanceId: string | null;
  /** session.timeout.ms */
  readonly sessionTimeoutMs: number;
  /** max.poll.interval.ms, which Kafka's consumer sends as the rebalance timeout. */
  readonly rebalanceTimeoutMs: number;
  /** heartbeat.interval.ms */
  readonly heartbeatIntervalMs: number;
  /** enable.auto.commit */
  readonly autoCommit: boolean;
  /** auto.commit.interval.ms */
  readonly autoCommitIntervalMs: number;
}

/** Kafka's consumer defaults. */
export const DEFAULT_GROUP_OPTIONS: Omit<GroupConsumerOptions, 'groupId'> = {
  groupInstanceId: null,
  sessionTimeoutMs: 45_000,
  rebalanceTimeoutMs: 300_000,
  heartbeatIntervalMs: 3_000,
  autoCommit: true,
  autoCommitIntervalMs: 5_000,
};

/** The one assignor offered: Kafka's RangeAssignor ("range", the first of the consumer's defaults). */
const RANGE = 'range';
const CONSUMER_PROTOCOL_TYPE = 'consumer';
/** Join rounds that may fail retriably (coordinator moving, a rebalance racing) before giving up. */
const MAX_JOIN_ATTEMPTS = 20;
const JOIN_BACKOFF_MS = 100;

function encodeVersioned<T>(
  codec: { encode(w: Writer, v: T, version: number): void },
  version: number,
  v: T,
) {
  const w = new Writer(64);
  w.int16(version);
  codec.encode(w, v, version);
  return w.toBuffer();
}

/** The topics of a member's ConsumerProtocolSubscription (any version: later ones only append). */
export function decodeSubscription(bytes: Buffer): string[] {
  try {
    const r = new Reader(bytes);
    const version = Math.min(r.int16(), ConsumerProtocolSubscriptionCodec.maxVersion);
    return version < 0 ? [] : ConsumerProtocolSubscriptionCodec.decode(r, version).topics;
  } catch {
    return [];
  }
}

/**
 * Kafka's RangeAssignor: per topic, the members subscribed to it in order of their id (the
 * group.instance.id where set) each take a contiguous range of partitions, the first
 * `partitions % members` of them one more.
 */
export function rangeAssign(
  members: readonly { memberId: string; groupInstanceId: string | null; topics: readonly string[] }[],
  partitionCounts: ReadonlyMap<string, number>,
): Map<string, TopicPartition[]> {
  const out = new Map<string, TopicPartition[]>(members.map((m) => [m.memberId, []]));
  const sortKey = (m: { memberId: string; groupInstanceId: string | null }) =>
    m.groupInstanceId ?? m.memberId;
  const topics = [...new Set(members.flatMap((m) => m.topics))].sort();
  for (const topic of topics) {
    const count = partitionCounts.get(topic);
    if (count === undefined) continue;
    const subscribed = members
      .filter((m) => m.topics.includes(topic))
      .sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : sortKey(a) > sortKey(b) ? 1 : 0));
    const per = Math.floor(count / subscribed.length);
    const extra = count % subscribed.length;
    subscribed.forEach((m, i) => {
      const start = per * i + Math.min(i, extra);
      const length = per + (i < extra ? 1 : 0);
      for (let p = start; p < start + length; p++) out.get(m.memberId)!.push({ topic, partition: p });
    });
  }
  return out;
}

export class GroupConsumer {
  private memberId = '';
  private generationId = -1;
  private protocolName: string | null = null;
  private coordinator: number | null = null;
  private topics: readonly string[] = [];
  private needsJoin = true;
  private nextHeartbeatMs = 0;
  private nextCommitMs = 0;
  private readonly consumer: Consumer;
  private readonly groups: GroupAdmin;
  private readonly options: GroupConsumerOptions;

  constructor(
    private readonly client: KafkaClient,
    options: Partial<GroupConsumerOptions> & { groupId: string },
    consumerOptions: Partial<ConsumerOptions> = {},
  ) {
    this.options = { ...DEFAULT_GROUP_OPTIONS, ...options };
    this.consumer = new Consumer(client, consumerOptions);
    this.groups = new GroupAdmin(client);
  }

  /** The member id the coordinator gave this consumer ('' before the first join). */
  get member(): { memberId: string; generationId: number } {
    return { memberId: this.memberId, generationId: this.generationId };
  }

  /** The partitions the group assigned to this member, with their positions. */
  assignment(): { tp: TopicPartition; offset: bigint }[] {
    return this.consumer.assignment();
  }

  subscribe(topics: readonly string[]): void {
    this.topics = [...topics];
    this.needsJoin = true;
  }

  /** Joins or rejoins when needed, heartbeats and auto-commits when due, then one fetch round. */
  async poll(): Promise<ConsumedRecord[]> {
    if (this.needsJoin) await this.join();
    await this.maybeHeartbeat();
    if (this.needsJoin) return [];
    if (this.options.autoCommit && this.now() >= this.nextCommitMs) {
      this.nextCommitMs = this.now() + this.options.autoCommitIntervalMs;
      await this.commit();
    }
    return this.consumer.poll();
  }

  /** Kafka's seek: the next poll (and the next commit) starts `tp` at `offset`. */
  seek(tp: TopicPartition, offset: bigint): void {
    this.consumer.seek(tp, offset);
  }

  /** Commits the positions (enable.auto.commit) and leaves the group (not a static member). */
  async close(): Promise<void> {
    if (this.generationId < 0 || this.memberId === '') return;
    try {
      if (this.options.autoCommit && !this.needsJoin) await this.commit();
    } finally {
      if (this.options.groupInstanceId === null) await this.leave();
    }
  }

  /**
   * Commits every assigned partition's position. false when the group has moved on (a rebalance,
   * an expired member): then the consumer rejoins, as Kafka's does after a failed auto-commit.
   */
  async commit(): Promise<boolean> {
    const positions = this.consumer.assignment();
    if (positions.length === 0) return true;
    const resp = await this.toCoordinator(Apis.OffsetCommit, () =>
      offsetCommitRequest(
        this.options.groupId,
        {
          generationId: this.generationId,
          memberId: this.memberId,
          groupInstanceId: this.options.groupInstanceId,
        },
        positions,
      ),
    );
    for (const t of resp.topics) {
      for (const p of t.partitions) {
        if (p.errorCode === 0) continue;
        if (this.lostMembership(p.errorCode)) return false;
        throw kafkaError(p.errorCode);
      }
    }
    return true;
  }

  private now(): number {
    return this.client.runtime.clock.nowMs();
  }

  /** Errors that mean this member must join again; UNKNOWN_MEMBER_ID also drops its member id. */
  private lostMembership(code: number): boolean {
    if (code === ErrorCode.UNKNOWN_MEMBER_ID || code === ErrorCode.FENCED_INSTANCE_ID) this.memberId = '';
    if (
      code === ErrorCode.REBALANCE_IN_PROGRESS ||
      code === ErrorCode.ILLEGAL_GENERATION ||
      code === ErrorCode.UNKNOWN_MEMBER_ID
    ) {
      this.needsJoin = true;
      return true;
    }
    if (code === ErrorCode.NOT_COORDINATOR || code === ErrorCode.COORDINATOR_NOT_AVAILABLE)
      this.coordinator = null;
    return false;
  }

  /** One request to the group's coordinator; a lost connection forgets the coordinator. */
  private async toCoordinator<Req, Resp>(
    api: Api<Req, Resp>,
    build: (version: number) => Req,
  ): Promise<Resp> {
    this.coordinator ??= await this.groups.coordinator(this.options.groupId);
    try {
      return await this.client.send({ kind: 'node', id: this.coordinator }, api, build);
    } catch (e) {
      if (isRetriable(e)) this.coordinator = null;
      throw e;
    }
  }

  private subscription(): Buffer {
    return encodeVersioned(ConsumerProtocolSubscriptionCodec, ConsumerProtocolSubscriptionCodec.maxVersion, {
      topics: [...this.topics],
      userData: null,
      // The eager protocol gives every partition up before it joins.
      ownedPartitions: [],
      generationId: this.generationId,
      rackId: null,
    });
  }

  /** JoinGroup then SyncGroup until this member has an assignment of the current generation. */
  private async join(): Promise<void> {
    // Eager rebalance: commit what was consumed, then give every partition up.
    if (this.options.autoCommit && this.generationId >= 0 && this.consumer.assignment().length > 0)
      await this.commit().catch((e: unknown) => {
        if (!(e instanceof ClientError)) throw e;
      });
    this.consumer.unassign();
    let failures = 0;
    const retry = async (e: Error) => {
      if (++failures >= MAX_JOIN_ATTEMPTS) throw e;
      await this.client.runtime.sleep(JOIN_BACKOFF_MS);
    };
    for (;;) {
      let joined: JoinGroupResponse;
      try {
        joined = await this.joinGroup();
      } catch (e) {
        if (!isRetriable(e)) throw e;
        await retry(e as Error);
        continue;
      }
      if (joined.errorCode === ErrorCode.MEMBER_ID_REQUIRED) {
        this.memberId = joined.memberId;
        continue;
      }
      if (joined.errorCode !== 0) {
        const err = kafkaError(joined.errorCode);
        if (!this.lostMembership(joined.errorCode) && !err.retriable) throw err;
        await retry(err);
        continue;
      }
      this.memberId = joined.memberId;
      this.generationId = joined.generationId;
      this.protocolName = joined.protocolName;
      const assignments = joined.leader === joined.memberId ? await this.assign(joined.members) : [];
      let synced: { errorCode: number; assignment: Buffer };
      try {
        synced = await this.toCoordinator(Apis.SyncGroup, () => ({
          groupId: this.options.groupId,
          generationId: this.generationId,
          memberId: this.memberId,
          groupInstanceId: this.options.groupInstanceId,
          protocolType: CONSUMER_PROTOCOL_TYPE,
          protocolName: this.protocolName,
          assignments,
        }));
      } catch (e) {
        if (!isRetriable(e)) throw e;
        await retry(e as Error);
        continue;
      }
      if (synced.errorCode !== 0) {
        const err = kafkaError(synced.errorCode);
        if (!this.lostMembership(synced.errorCode) && !err.retriable) throw err;
        await retry(err);
        continue;
      }
      await this.startPositions(decodeAssignment(synced.assignment));
      this.needsJoin = false;
      this.nextHeartbeatMs = this.now() + this.options.heartbeatIntervalMs;
      this.nextCommitMs = this.now() + this.options.autoCommitIntervalMs;
      return;
    }
  }

  private joinGroup(): Promise<JoinGroupResponse> {
    return this.toCoordinator(Apis.JoinGroup, () => ({
      groupId: this.options.groupId,
      sessionTimeoutMs: this.options.sessionTimeoutMs,
      rebalanceTimeoutMs: this.options.rebalanceTimeoutMs,
      memberId: this.memberId,
      groupInstanceId: this.options.groupInstanceId,
      protocolType: CONSUMER_PROTOCOL_TYPE,
      protocols: [{ name: RANGE, metadata: this.subscription() }],
      reason: null,
    }));
  }

  /** The leader's part: every member's share, by the range assignor over the topics' partitions. */
  private async assign(
    members: readonly { memberId: string; groupInstanceId: string | null; metadata: Buffer }[],
  ): Promise<{ memberId: string; assignment: Buffer }[]> {
    const subscribed = members.map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      topics: decodeSubscription(m.metadata),
    }));
    const topics = [...new Set(subscribed.flatMap((m) => m.topics))];
    const md = await this.client.retry(() => this.client.fetchMetadata(topics));
    const counts = new Map<string, number>();
    for (const t of topics) {
      const tm = md.topics.get(t);
      if (tm?.errorCode === 0) counts.set(t, tm.partitions.length);
    }
    const shares = rangeAssign(subscribed, counts);
    return [...shares].map(([memberId, tps]) => {
      const byTopic = new Map<string, number[]>();
      for (const tp of tps) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
      return {
        memberId,
        assignment: encodeVersioned(
          ConsumerProtocolAssignmentCodec,
          ConsumerProtocolAssignmentCodec.maxVersion,
          {
            assignedPartitions: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })),
            userData: null,
          },
        ),
      };
    });
  }

  /** Positions at the committed offsets; partitions without one start by auto.offset.reset. */
  private async startPositions(tps: readonly TopicPartition[]): Promise<void> {
    if (tps.length === 0) return;
    const committed = await this.client.retry(async () => {
      const resp = await this.toCoordinator(Apis.OffsetFetch, () => ({
        groupId: this.options.groupId,
        topics: [...groupByTopic(tps)].map(([name, partitionIndexes]) => ({ name, partitionIndexes })),
        groups: [],
        requireStable: false,
      }));
      if (resp.errorCode !== 0) throw kafkaError(resp.errorCode);
      const out = new Map<string, bigint>();
      for (const t of resp.topics)
        for (const p of t.partitions) {
          if (p.errorCode !== 0) throw kafkaError(p.errorCode);
          if (p.committedOffset >= 0n)
            out.set(topicPartitionKey(t.name, p.partitionIndex), p.committedOffset);
        }
      return out;
    });
    const fresh: TopicPartition[] = [];
    for (const tp of tps) {
      const offset = committed.get(topicPartitionKey(tp.topic, tp.partition));
      if (offset === undefined) fresh.push(tp);
      else await this.consumer.assign([tp], offset);
    }
    if (fresh.length > 0) await this.consumer.assign(fresh, this.consumer.resetTo);
  }

  private async maybeHeartbeat(): Promise<void> {
    if (this.needsJoin || this.now() < this.nextHeartbeatMs) return;
    this.nextHeartbeatMs = this.now() + this.options.heartbeatIntervalMs;
    let code: number;
    try {
      const resp = await this.toCoordinator(Apis.Heartbeat, () => ({
        groupId: this.options.groupId,
        generationId: this.generationId,
        memberId: this.memberId,
        groupInstanceId: this.options.groupInstanceId,
      }));
      code = resp.errorCode;
    } catch (e) {
      // The coordinator moved or is restarting: found again at the next heartbeat.
      if (isRetriable(e)) return;
      throw e;
    }
    if (code === 0 || this.lostMembership(code) || kafkaError(code).retriable) return;
    throw kafkaError(code);
  }

  private async leave(): Promise<void> {
    try {
      const resp = await this.toCoordinator(Apis.LeaveGroup, (v) => ({
        groupId: this.options.groupId,
        memberId: v < 3 ? this.memberId : '',
        members:
          v < 3
            ? []
            : [
                {
                  memberId: this.memberId,
                  groupInstanceId: null,
                  reason: v >= 5 ? 'the consumer is being closed' : null,
                },
              ],
      }));
      // A member the coordinator already dropped has left anyway.
      if (resp.errorCode !== 0 && resp.errorCode !== ErrorCode.UNKNOWN_MEMBER_ID)
        throw kafkaError(resp.errorCode);
    } catch (e) {
      if (!(e instanceof KafkaResponseError) && !isRetriable(e)) throw e;
      // The session timeout removes it instead, as when Kafka's consumer fails to leave.
    } finally {
      this.memberId = '';
      this.generationId = -1;
    }
  }
}
