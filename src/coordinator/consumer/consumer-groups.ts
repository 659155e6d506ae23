/**
 * The consumer-protocol side of the group coordinator (KIP-848): ConsumerGroupHeartbeat and
 * ConsumerGroupDescribe on groups of the __consumer_offsets partitions this coordinator owns,
 * the offset-commit checks for their members, and the records that make the groups survive a
 * restart or a coordinator move. A group entry (ClassicGroup) holds the committed offsets of
 * either kind of group; `consumer` on it is set while it is a consumer-protocol group. Owned by
 * the GroupCoordinator; single-threaded.
 */
import type { Logger } from '../../common/logger.js';
import type {
  ConsumerGroupDescribeResponse,
  DescribedGroup,
} from '../../protocol/generated/ConsumerGroupDescribeResponse.js';
import type { ConsumerGroupHeartbeatRequest } from '../../protocol/generated/ConsumerGroupHeartbeatRequest.js';
import type { ConsumerGroupHeartbeatResponse } from '../../protocol/generated/ConsumerGroupHeartbeatResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { ClassicGroup } from '../group.js';
import type { AppendResult } from '../offsets.js';
import { type CoordinatorRecord, groupTombstone } from '../records.js';
import { consumerGroupHeartbeatError, describedConsumerGroup } from '../responses.js';
import type { Assignment } from './assignors.js';
import { ConsumerGroup } from './consumer-group.js';
import {
  type ConsumerGroupContext,
  ConsumerGroupHeartbeats,
  type GroupChange,
  HeartbeatError,
} from './heartbeat.js';
import {
  consumerGroupTombstones,
  currentAssignmentRecord,
  groupEpochRecord,
  memberSubscriptionRecord,
  memberTombstones,
  subscriptionMetadataRecord,
  targetAssignmentEpochRecord,
  targetAssignmentRecord,
} from './records.js';

export interface ConsumerGroupsHost extends Omit<ConsumerGroupContext, 'onChange' | 'afterTimer'> {
  readonly logger: Logger;
  /** NONE, or why requests for this group cannot be served here. */
  groupStatus(groupId: string, allowEmptyId: boolean): number;
  getGroup(groupId: string): ClassicGroup | undefined;
  createGroup(groupId: string): ClassicGroup;
  /** Appends a group's records; resolves to NONE or the error to answer with, never rejects. */
  append(partition: number, records: CoordinatorRecord[]): Promise<AppendResult>;
}

export class ConsumerGroups {
  readonly heartbeats: ConsumerGroupHeartbeats;
  /** Records of changes not yet handed to the log, per group. */
  private readonly pending = new Map<ConsumerGroup, CoordinatorRecord[]>();

  constructor(private readonly host: ConsumerGroupsHost) {
    this.heartbeats = new ConsumerGroupHeartbeats({
      ...host,
      onChange: (group, change) => this.record(group, change),
      afterTimer: (group) => {
        const entry = host.getGroup(group.groupId);
        if (entry?.consumer === group) this.flushTimerChanges(entry);
      },
    });
  }

  async heartbeat(
    req: ConsumerGroupHeartbeatRequest,
    clientId: string,
    clientHost: string,
  ): Promise<ConsumerGroupHeartbeatResponse> {
    let entry: ClassicGroup | undefined;
    let response: ConsumerGroupHeartbeatResponse;
    try {
      this.heartbeats.validate(req);
      const status = this.host.groupStatus(req.groupId, false);
      if (status !== ErrorCode.NONE) throw new HeartbeatError(status, '');
      entry = this.host.getGroup(req.groupId);
      if (req.memberEpoch < 0) {
        response = this.heartbeats.leave(entry?.consumer ?? undefined, req);
      } else {
        entry = this.groupFor(req, entry);
        response = this.heartbeats.heartbeat(entry.consumer!, req, clientId, clientHost);
      }
    } catch (e) {
      if (!(e instanceof HeartbeatError)) throw e;
      if (entry?.consumer) this.flush(entry);
      return consumerGroupHeartbeatError(e.code, e.message === '' ? null : e.message);
    }
    if (entry === undefined) return response;
    const { errorCode } = await this.flush(entry);
    return errorCode === ErrorCode.NONE ? response : consumerGroupHeartbeatError(errorCode, null);
  }

  /**
   * The consumer group a join or heartbeat is for: created on a join, converted from an empty
   * classic group on a join (Kafka's online upgrade of a group with no members; its offsets
   * stay), refused for a classic group with members.
   */
  private groupFor(req: ConsumerGroupHeartbeatRequest, entry: ClassicGroup | undefined): ClassicGroup {
    const joining = req.memberEpoch === 0;
    if (entry === undefined || entry.is('Dead')) {
      // A coordinator that does not know the group (moved, or the group expired) sends the
      // member back to join: Kafka answers so, and librdkafka takes GROUP_ID_NOT_FOUND as fatal.
      if (!joining)
        throw new HeartbeatError(
          ErrorCode.UNKNOWN_MEMBER_ID,
          `Member ${req.memberId} is not a member of group ${req.groupId}.`,
        );
      entry = this.host.createGroup(req.groupId);
    }
    if (entry.consumer === null) {
      const convertible = entry.is('Empty') && entry.size === 0 && entry.pendingMembers.size === 0;
      if (!convertible)
        throw new HeartbeatError(
          ErrorCode.GROUP_ID_NOT_FOUND,
          `Group ${req.groupId} is not a consumer group.`,
        );
      // A member of a consumer group this coordinator holds only offsets of: back to join, as
      // for a group it does not know (Kafka would answer GROUP_ID_NOT_FOUND, fatal to librdkafka).
      if (!joining)
        throw new HeartbeatError(
          ErrorCode.UNKNOWN_MEMBER_ID,
          `Member ${req.memberId} is not a member of group ${req.groupId}.`,
        );
      entry.consumer = new ConsumerGroup(req.groupId);
      this.pendingOf(entry.consumer).push(groupTombstone(req.groupId));
      this.host.logger.info(`group ${req.groupId}: an empty classic group becomes a consumer group`);
    }
    return entry;
  }

  /**
   * A classic member joins a consumer group: refused while it has members (Kafka with
   * group.consumer.migration.policy 'disabled'); one without members goes back to the classic
   * protocol, as Kafka lets it. Resolves to NONE or the error for the JoinGroup.
   */
  async toClassic(entry: ClassicGroup): Promise<number> {
    const group = entry.consumer!;
    if (group.members.size > 0) return ErrorCode.GROUP_ID_NOT_FOUND;
    const { errorCode } = await this.host.append(entry.partition, consumerGroupTombstones(group));
    if (errorCode === ErrorCode.NONE && entry.consumer === group) {
      this.heartbeats.cancelTimers(group);
      entry.consumer = null;
    }
    return errorCode;
  }

  /** A group loaded from the log: every member gets a full session to reach this coordinator (Kafka's onLoaded). */
  onLoaded(group: ConsumerGroup): void {
    for (const id of group.members.keys()) this.heartbeats.touchSession(group, id);
  }

  /** Hands the records of the group's changes to the log; heartbeats answer after this. */
  flush(entry: ClassicGroup): Promise<AppendResult> {
    const records = entry.consumer === null ? undefined : this.pending.get(entry.consumer);
    if (records === undefined || records.length === 0)
      return Promise.resolve({ errorCode: ErrorCode.NONE, baseOffset: -1n });
    this.pending.delete(entry.consumer!);
    return this.host.append(entry.partition, records);
  }

  private pendingOf(group: ConsumerGroup): CoordinatorRecord[] {
    let list = this.pending.get(group);
    if (list === undefined) {
      list = [];
      this.pending.set(group, list);
    }
    return list;
  }

  private record(group: ConsumerGroup, change: GroupChange): void {
    const out = this.pendingOf(group);
    const id = group.groupId;
    switch (change.kind) {
      case 'member':
        out.push(memberSubscriptionRecord(id, change.member));
        break;
      case 'assignment':
        out.push(currentAssignmentRecord(id, change.member));
        break;
      case 'removed':
        out.push(...memberTombstones(id, change.memberId));
        break;
      case 'epoch':
        out.push(groupEpochRecord(id, group.groupEpoch));
        break;
      case 'subscription-metadata':
        out.push(subscriptionMetadataRecord(id, group.subscriptionMetadata));
        break;
      case 'target':
        for (const m of change.memberIds)
          out.push(targetAssignmentRecord(id, m, group.targetAssignment.get(m)!));
        out.push(targetAssignmentEpochRecord(id, group.targetAssignmentEpoch));
        break;
    }
  }

  /** Changes made by a timer (a session or revocation that ran out) are written at once. */
  flushTimerChanges(entry: ClassicGroup): void {
    void this.flush(entry).then(({ errorCode }) => {
      if (errorCode !== ErrorCode.NONE)
        this.host.logger.warn(
          `group ${entry.groupId}: writing a fenced member's records failed (error ${errorCode})`,
        );
    });
  }

  describe(groupIds: readonly string[]): ConsumerGroupDescribeResponse {
    return { throttleTimeMs: 0, groups: groupIds.map((id) => this.describeGroup(id)) };
  }

  private describeGroup(groupId: string): DescribedGroup {
    const base = describedConsumerGroup(groupId, ErrorCode.NONE);
    const status = this.host.groupStatus(groupId, true);
    if (status !== ErrorCode.NONE) return describedConsumerGroup(groupId, status);
    const group = this.host.getGroup(groupId)?.consumer;
    if (group === undefined || group === null)
      return {
        ...base,
        errorCode: ErrorCode.GROUP_ID_NOT_FOUND,
        errorMessage: `Group ${groupId} not found.`,
      };
    const image = this.host.topics();
    const names = new Map<string, string>();
    for (const [name, t] of image.topics) names.set(t.topicId, name);
    const described = (a: Assignment | undefined) => ({
      topicPartitions: [...(a ?? new Map<string, Set<number>>())]
        .filter(([t]) => names.has(t))
        .map(([topicId, parts]) => ({
          topicId,
          topicName: names.get(topicId)!,
          partitions: [...parts].sort((x, y) => x - y),
        })),
    });
    return {
      ...base,
      groupState: group.state,
      groupEpoch: group.groupEpoch,
      assignmentEpoch: group.targetAssignmentEpoch,
      assignorName: this.heartbeats.preferredAssignor(group) ?? this.host.config.consumerGroupAssignors[0]!,
      members: [...group.members.values()].map((m) => ({
        memberId: m.memberId,
        instanceId: m.instanceId,
        rackId: m.rackId,
        memberEpoch: m.memberEpoch,
        clientId: m.clientId,
        clientHost: m.clientHost,
        subscribedTopicNames: [...m.subscribedTopicNames],
        subscribedTopicRegex: m.subscribedTopicRegex,
        assignment: described(m.assignedPartitions),
        targetAssignment: described(group.targetAssignment.get(m.memberId)),
      })),
    };
  }
}

/**
 * Kafka's ConsumerGroup.validateOffsetCommit: a commit without a member epoch is taken only
 * while the group has no members; a consumer-protocol member commits at its current epoch
 * (STALE_MEMBER_EPOCH otherwise) with OffsetCommit v9 or later.
 */
export function validateConsumerOffsetCommit(
  group: ConsumerGroup,
  memberId: string,
  memberEpoch: number,
  apiVersion: number,
  isTransactional: boolean,
): number {
  if (memberEpoch < 0 && group.members.size === 0) return ErrorCode.NONE;
  const m = group.members.get(memberId);
  if (m === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
  if (!isTransactional && apiVersion < 9) return ErrorCode.UNSUPPORTED_VERSION;
  return memberEpoch === m.memberEpoch ? ErrorCode.NONE : ErrorCode.STALE_MEMBER_EPOCH;
}

/** Kafka's ConsumerGroup.validateOffsetFetch (OffsetFetch v9+ names the member and its epoch). */
export function validateConsumerOffsetFetch(
  group: ConsumerGroup,
  memberId: string | null,
  memberEpoch: number,
): number {
  if (memberId === null && memberEpoch < 0) return ErrorCode.NONE;
  const m = memberId === null ? undefined : group.members.get(memberId);
  if (m === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
  return memberEpoch === m.memberEpoch ? ErrorCode.NONE : ErrorCode.STALE_MEMBER_EPOCH;
}
