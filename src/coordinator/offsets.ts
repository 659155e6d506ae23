/**
 * OffsetCommit, OffsetFetch, OffsetDelete and offset expiry, as Kafka's GroupCoordinator and
 * GroupMetadataManager do them. Owned by the GroupCoordinator, which resolves ownership and
 * passes groups in through OffsetHost. A commit is applied to memory only after its records
 * are appended, so an OffsetFetch never returns an offset a failover could lose.
 */
import type { Clock } from '../common/clock.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import type { OffsetCommitRequest } from '../protocol/generated/OffsetCommitRequest.js';
import type { OffsetCommitResponseTopic } from '../protocol/generated/OffsetCommitResponse.js';
import type { OffsetDeleteRequest } from '../protocol/generated/OffsetDeleteRequest.js';
import type { OffsetDeleteResponse } from '../protocol/generated/OffsetDeleteResponse.js';
import type { OffsetFetchResponsePartition } from '../protocol/generated/OffsetFetchResponse.js';
import type { GroupCoordinatorConfig } from './config.js';
import { validateConsumerOffsetCommit, validateConsumerOffsetFetch } from './consumer/consumer-groups.js';
import { consumerGroupTombstones } from './consumer/records.js';
import { type ClassicGroup, offsetKey } from './group.js';
import { type Membership, validateCurrentMember } from './membership.js';
import {
  type CoordinatorRecord,
  groupTombstone,
  type OffsetAndMetadata,
  offsetCommitRecord,
  offsetTombstone,
  type TxnProducer,
} from './records.js';

export interface OffsetHost {
  readonly config: GroupCoordinatorConfig;
  readonly clock: Clock;
  readonly membership: Membership;
  /**
   * NONE, or why requests for this group cannot be served here (NOT_COORDINATOR, ...); the group
   * id "" is valid unless `allowEmptyId` is false.
   */
  groupStatus(groupId: string, allowEmptyId?: boolean): number;
  getGroup(groupId: string): ClassicGroup | undefined;
  /** Adds an Empty group for a standalone consumer's first commit. */
  createGroup(groupId: string): ClassicGroup;
  removeGroup(group: ClassicGroup): void;
  /**
   * Appends to the group's partition (a transactional batch of `txn`'s producer when given);
   * resolves to NONE and the batch's base offset, or the error for an offset request.
   */
  appendOffsets(partition: number, records: CoordinatorRecord[], txn?: TxnProducer): Promise<AppendResult>;
  partitionExists(topic: string, partition: number): boolean;
  /**
   * KIP-890: whether the transaction coordinator has `partition` of __consumer_offsets in the
   * producer's ongoing transaction (AddOffsetsToTxn added it); NONE or the error. Null when there
   * is nothing to ask: verification is off, or the transaction already wrote to the partition.
   */
  verifyTxnPartition?(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    partition: number,
  ): Promise<number> | null;
}

export interface AppendResult {
  readonly errorCode: number;
  /** The base offset of the appended batch; -1 when the append failed. */
  readonly baseOffset: bigint;
}

interface PendingCommit {
  topic: string;
  partition: number;
  value: OffsetAndMetadata;
}

export class OffsetManager {
  constructor(private readonly host: OffsetHost) {}

  async commit(req: OffsetCommitRequest, apiVersion: number): Promise<OffsetCommitResponseTopic[]> {
    const uniform = (code: number) =>
      req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: code })),
      }));
    const status = this.host.groupStatus(req.groupId);
    if (status !== ErrorCode.NONE) return uniform(status);
    const generationId = req.generationIdOrMemberEpoch;
    let group = this.host.getGroup(req.groupId);
    let created = false;
    if (group === undefined) {
      // No group: a consumer that assigns partitions itself and only stores offsets here.
      // With a generation, it is a member of a group this coordinator does not know (any more).
      if (generationId >= 0) return uniform(ErrorCode.ILLEGAL_GENERATION);
      group = this.host.createGroup(req.groupId);
      created = true;
    }
    const error =
      group.consumer !== null
        ? validateConsumerOffsetCommit(group.consumer, req.memberId, generationId, apiVersion, false)
        : this.validateCommit(group, req.memberId, req.groupInstanceId, generationId);
    if (error !== ErrorCode.NONE) {
      if (created) this.host.removeGroup(group);
      return uniform(error);
    }

    const nowMs = BigInt(this.host.clock.nowMs());
    const errors = new Map<string, number>();
    const pending: PendingCommit[] = [];
    for (const t of req.topics) {
      for (const p of t.partitions) {
        const code = this.partitionError(t.name, p.partitionIndex, p.committedMetadata);
        if (code !== ErrorCode.NONE) {
          errors.set(offsetKey(t.name, p.partitionIndex), code);
          continue;
        }
        // v1 carries the commit time per partition (-1: now); v2-v4 a retention that sets an expiry.
        const commitTimestampMs = apiVersion === 1 && p.commitTimestamp >= 0n ? p.commitTimestamp : nowMs;
        const expireTimestampMs = req.retentionTimeMs >= 0n ? commitTimestampMs + req.retentionTimeMs : -1n;
        pending.push({
          topic: t.name,
          partition: p.partitionIndex,
          value: {
            offset: p.committedOffset,
            leaderEpoch: apiVersion >= 6 ? p.committedLeaderEpoch : -1,
            metadata: p.committedMetadata ?? '',
            commitTimestampMs,
            expireTimestampMs,
          },
        });
      }
    }
    let appendError: number = ErrorCode.NONE;
    if (pending.length > 0) {
      const records = pending.map((c) => offsetCommitRecord(req.groupId, c.topic, c.partition, c.value));
      const keys = pending.map((c) => offsetKey(c.topic, c.partition));
      for (const k of keys) group.pendingOffsetCommits.set(k, (group.pendingOffsetCommits.get(k) ?? 0) + 1);
      const appended = await this.host.appendOffsets(group.partition, records);
      appendError = appended.errorCode;
      for (const k of keys) {
        const n = group.pendingOffsetCommits.get(k)! - 1;
        if (n === 0) group.pendingOffsetCommits.delete(k);
        else group.pendingOffsetCommits.set(k, n);
      }
      // A group deleted meanwhile stays deleted: its tombstones covered this commit too.
      if (appendError === ErrorCode.NONE && !group.is('Dead')) {
        for (const c of pending) group.setOffset(c.topic, c.partition, c.value, appended.baseOffset);
      } else if (
        created &&
        group.is('Empty') &&
        group.size === 0 &&
        group.hasNoOffsets() &&
        group.generationId === 0
      ) {
        this.host.removeGroup(group);
      }
    }
    return req.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: errors.get(offsetKey(t.name, p.partitionIndex)) ?? appendError,
      })),
    }));
  }

  private validateCommit(
    group: ClassicGroup,
    memberId: string,
    groupInstanceId: string | null,
    generationId: number,
  ): number {
    if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    if (generationId < 0 && memberId === '' && groupInstanceId === null) {
      // Without group management the group only stores offsets: nothing to check, unless the
      // group has members, whose offsets an outsider must not overwrite.
      return group.is('Empty') ? ErrorCode.NONE : ErrorCode.UNKNOWN_MEMBER_ID;
    }
    const memberError = validateCurrentMember(group, memberId, groupInstanceId);
    if (memberError !== ErrorCode.NONE) return memberError;
    if (generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION;
    // A member that got its JoinGroup response but not its assignment has nothing valid to commit.
    if (group.is('CompletingRebalance')) return ErrorCode.REBALANCE_IN_PROGRESS;
    const member = group.members.get(memberId)!;
    // During PreparingRebalance commits are still taken: members commit before they rejoin.
    this.host.membership.scheduleHeartbeat(group, member, member.sessionTimeoutMs);
    return ErrorCode.NONE;
  }

  private partitionError(topic: string, partition: number, metadata: string | null): number {
    if (metadata !== null && Buffer.byteLength(metadata, 'utf8') > this.host.config.offsetMetadataMaxBytes) {
      return ErrorCode.OFFSET_METADATA_TOO_LARGE;
    }
    if (!this.host.partitionExists(topic, partition)) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    return ErrorCode.NONE;
  }

  /**
   * Committed offsets of one group: the requested partitions (absent ones as -1), or every
   * committed partition when `topics` is null. Served whatever the group's state, since
   * standalone consumers fetch without ever joining.
   */
  fetch(
    groupId: string,
    topics: { name: string; partitionIndexes: number[] }[] | null,
    requireStable = false,
    member: { memberId: string | null; memberEpoch: number } = { memberId: null, memberEpoch: -1 },
  ): { errorCode: number; topics: { name: string; partitions: OffsetFetchResponsePartition[] }[] } {
    let status = this.host.groupStatus(groupId);
    const group = status === ErrorCode.NONE ? this.host.getGroup(groupId) : undefined;
    if (group?.consumer) {
      status = validateConsumerOffsetFetch(group.consumer, member.memberId, member.memberEpoch);
      if (status !== ErrorCode.NONE) return { errorCode: status, topics: [] };
    }
    const entry = (partitionIndex: number, o: OffsetAndMetadata | undefined, errorCode: number) => ({
      partitionIndex,
      committedOffset: o?.offset ?? -1n,
      committedLeaderEpoch: o?.leaderEpoch ?? -1,
      metadata: o?.metadata ?? '',
      errorCode,
    });
    // KIP-447: a consumer that asks for stable offsets waits out commits not yet settled, an
    // open transaction's above all, rather than start from an offset about to change.
    const stored = (topic: string, i: number) =>
      requireStable && group !== undefined && !group.is('Dead') && group.hasPendingOffsetCommit(topic, i)
        ? entry(i, undefined, ErrorCode.UNSTABLE_OFFSET_COMMIT)
        : entry(i, group?.getOffset(topic, i), ErrorCode.NONE);
    if (topics === null) {
      if (group === undefined) return { errorCode: status, topics: [] };
      const all = [...group.offsets].map(([name, parts]) => ({
        name,
        partitions: [...parts].sort((a, b) => a[0] - b[0]).map(([i]) => stored(name, i)),
      }));
      return { errorCode: status, topics: all };
    }
    return {
      errorCode: status,
      topics: topics.map((t) => ({
        name: t.name,
        partitions: t.partitionIndexes.map((i) =>
          status === ErrorCode.NONE ? stored(t.name, i) : entry(i, undefined, status),
        ),
      })),
    };
  }

  async delete(req: OffsetDeleteRequest): Promise<OffsetDeleteResponse> {
    const topLevel = (errorCode: number): OffsetDeleteResponse => ({
      errorCode,
      throttleTimeMs: 0,
      topics: [],
    });
    const status = this.host.groupStatus(req.groupId);
    if (status !== ErrorCode.NONE) return topLevel(status);
    const group = this.host.getGroup(req.groupId);
    if (group === undefined || group.is('Dead')) return topLevel(ErrorCode.GROUP_ID_NOT_FOUND);
    // An active group may lose offsets only of topics it does not consume; a non-consumer
    // protocol's subscriptions cannot be read, so its offsets stay while it has members.
    if (!group.isEmptyGroup() && !group.isConsumerGroup && group.consumer === null)
      return topLevel(ErrorCode.NON_EMPTY_GROUP);
    const records: CoordinatorRecord[] = [];
    const removals: [string, number][] = [];
    const topics = req.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => {
        let errorCode: number = ErrorCode.NONE;
        if (!this.host.partitionExists(t.name, p.partitionIndex))
          errorCode = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
        else if (!group.isEmptyGroup() && group.isSubscribedToTopic(t.name))
          errorCode = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC;
        else if (group.getOffset(t.name, p.partitionIndex) !== undefined) {
          records.push(offsetTombstone(req.groupId, t.name, p.partitionIndex));
          removals.push([t.name, p.partitionIndex]);
        }
        return { partitionIndex: p.partitionIndex, errorCode };
      }),
    }));
    if (records.length > 0) {
      const { errorCode } = await this.host.appendOffsets(group.partition, records);
      if (errorCode !== ErrorCode.NONE) return topLevel(errorCode);
      for (const [topic, partition] of removals) group.removeOffset(topic, partition);
    }
    return { errorCode: ErrorCode.NONE, throttleTimeMs: 0, topics };
  }

  /**
   * Kafka's offset retention (KIP-211): offsets of an Empty consumer group expire
   * offsets.retention.ms after the group became empty; those of a standalone consumer (no
   * protocol type) that long after their commit; an active consumer group keeps the offsets of
   * topics it subscribes to. A commit's own expire timestamp (v2-v4 retention) wins.
   * An Empty group left without offsets is deleted.
   */
  expiredRecords(
    group: ClassicGroup,
    nowMs: number,
  ): { records: CoordinatorRecord[]; expired: [string, number][]; deleteGroup: boolean } {
    const retentionMs = BigInt(this.host.config.offsetsRetentionMs);
    const now = BigInt(nowMs);
    let base: ((o: OffsetAndMetadata, topic: string) => bigint | undefined) | undefined;
    if (group.consumer !== null) {
      // Kafka's consumer groups: an offset expires from its commit unless its topic is consumed.
      base = (o, topic) => (group.isSubscribedToTopic(topic) ? undefined : o.commitTimestampMs);
    } else if (group.protocolType === null || group.protocolType === '') {
      if (group.is('Empty')) base = (o) => o.commitTimestampMs;
    } else if (group.is('Empty')) {
      base = () => BigInt(group.currentStateTimestampMs);
    } else if (group.isConsumerGroup && group.is('Stable') && group.subscribedTopics !== undefined) {
      base = (o, topic) => (group.isSubscribedToTopic(topic) ? undefined : o.commitTimestampMs);
    }
    const records: CoordinatorRecord[] = [];
    const expired: [string, number][] = [];
    if (base !== undefined) {
      for (const [topic, parts] of group.offsets) {
        for (const [partition, o] of parts) {
          const from = base(o, topic);
          if (from === undefined) continue;
          const isExpired =
            o.expireTimestampMs >= 0n ? now >= o.expireTimestampMs : now - from >= retentionMs;
          if (isExpired) {
            records.push(offsetTombstone(group.groupId, topic, partition));
            expired.push([topic, partition]);
          }
        }
      }
    }
    const deleteGroup =
      group.isEmptyGroup() &&
      group.offsetCount() === expired.length &&
      group.pendingMembers.size === 0 &&
      group.pendingTxnOffsets.size === 0;
    if (deleteGroup)
      records.push(
        ...(group.consumer !== null
          ? consumerGroupTombstones(group.consumer)
          : [groupTombstone(group.groupId)]),
      );
    return { records, expired, deleteGroup };
  }
}

export { offsetKey };
