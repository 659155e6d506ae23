/**
 * Consumer group administration for `skiff consumer-groups`: find a group's coordinator, list,
 * describe (members with their assignments, committed offsets), commit offsets for a reset, delete.
 * Classic groups through DescribeGroups, consumer-protocol groups (KIP-848) through
 * ConsumerGroupDescribe, as Kafka's admin client.
 */
import { topicPartitionKey } from '../common/topic-partition.js';
import type { ConsumerGroupDescribeResponse } from '../protocol/generated/ConsumerGroupDescribeResponse.js';
import { ConsumerProtocolAssignmentCodec } from '../protocol/generated/ConsumerProtocolAssignment.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import type { ListGroupsResponse } from '../protocol/generated/ListGroupsResponse.js';
import type { OffsetCommitRequest } from '../protocol/generated/OffsetCommitRequest.js';
import { Reader } from '../protocol/reader.js';
import { Apis } from './apis.js';
import { ClientError, checkCode, KafkaResponseError, kafkaError } from './errors.js';
import { type KafkaClient, UnsupportedApiError } from './kafka-client.js';
import type { TopicPartition } from './partitions.js';

export interface GroupListing {
  readonly groupId: string;
  readonly protocolType: string;
  readonly state: string;
}

export interface GroupMember {
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly clientId: string;
  readonly host: string;
  readonly assignment: readonly TopicPartition[];
  /** A consumer-protocol member's epoch and target assignment (absent for a classic member). */
  readonly memberEpoch?: number;
  readonly targetAssignment?: readonly TopicPartition[];
}

export interface GroupDescription {
  readonly groupId: string;
  /** Kafka's state names: Stable, Empty, Dead, PreparingRebalance, CompletingRebalance. */
  readonly state: string;
  readonly protocolType: string;
  readonly protocol: string;
  readonly coordinator: number;
  readonly members: readonly GroupMember[];
  readonly type: 'classic' | 'consumer';
  /** A consumer-protocol group's epoch and its target assignment's epoch. */
  readonly groupEpoch?: number;
  readonly targetAssignmentEpoch?: number;
}

/**
 * The partitions of a consumer member's assignment. The bytes start with an int16 version; newer
 * versions only append fields, so one we do not know is read as the newest we do.
 */
export function decodeAssignment(bytes: Buffer): TopicPartition[] {
  if (bytes.length < 2) return [];
  try {
    const r = new Reader(bytes);
    const version = Math.min(r.int16(), ConsumerProtocolAssignmentCodec.maxVersion);
    if (version < 0) return [];
    const a = ConsumerProtocolAssignmentCodec.decode(r, version);
    return a.assignedPartitions.flatMap((t) =>
      t.partitions.map((partition) => ({ topic: t.topic, partition })),
    );
  } catch {
    return [];
  }
}

/** Who commits: a member of a generation, or (generation -1, no member id) an admin. */
export interface Committer {
  readonly generationId: number;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
}

const ADMIN_COMMIT: Committer = { generationId: -1, memberId: '', groupInstanceId: null };

/** An OffsetCommit of `offsets` (no metadata, no leader epoch, the broker's retention). */
export function offsetCommitRequest(
  groupId: string,
  by: Committer,
  offsets: readonly { tp: TopicPartition; offset: bigint }[],
): OffsetCommitRequest {
  const byTopic = new Map<string, { partitionIndex: number; offset: bigint }[]>();
  for (const o of offsets)
    byTopic.set(o.tp.topic, [
      ...(byTopic.get(o.tp.topic) ?? []),
      { partitionIndex: o.tp.partition, offset: o.offset },
    ]);
  return {
    groupId,
    generationIdOrMemberEpoch: by.generationId,
    memberId: by.memberId,
    groupInstanceId: by.groupInstanceId,
    retentionTimeMs: -1n,
    topics: [...byTopic].map(([name, parts]) => ({
      name,
      partitions: parts.map((p) => ({
        partitionIndex: p.partitionIndex,
        committedOffset: p.offset,
        committedLeaderEpoch: -1,
        commitTimestamp: -1n,
        committedMetadata: '',
      })),
    })),
  };
}

export class GroupAdmin {
  constructor(private readonly client: KafkaClient) {}

  async coordinator(groupId: string): Promise<number> {
    return this.client.retry(async () => {
      const resp = await this.client.send({ kind: 'any' }, Apis.FindCoordinator, () => ({
        key: groupId,
        keyType: 0,
        coordinatorKeys: [],
      }));
      checkCode(resp.errorCode, resp.errorMessage);
      return resp.nodeId;
    });
  }

  /**
   * Consumer groups on every broker (each lists the groups it coordinates), sorted by id. A broker
   * that cannot be reached (stopped, not yet fenced by the controller) is left out and named in
   * `unreachable` with its error, so the live brokers' groups are still listed; when none answers,
   * the first error is thrown.
   */
  async list(): Promise<{ groups: GroupListing[]; unreachable: Map<number, ClientError> }> {
    const md = await this.client.retry(() => this.client.fetchMetadata([]));
    const all = new Map<string, GroupListing>();
    const unreachable = new Map<number, ClientError>();
    const ids = [...md.brokers.keys()].sort((a, b) => a - b);
    await Promise.all(
      ids.map(async (id) => {
        let resp: ListGroupsResponse;
        try {
          resp = await this.client.retry(() =>
            this.client.send({ kind: 'node', id }, Apis.ListGroups, () => ({
              statesFilter: [],
              typesFilter: [],
            })),
          );
        } catch (e) {
          if (!(e instanceof ClientError) || e instanceof KafkaResponseError) throw e;
          unreachable.set(id, e);
          return;
        }
        checkCode(resp.errorCode);
        for (const g of resp.groups) {
          if (g.protocolType !== 'consumer' && g.protocolType !== '') continue;
          all.set(g.groupId, { groupId: g.groupId, protocolType: g.protocolType, state: g.groupState });
        }
      }),
    );
    if (ids.length > 0 && unreachable.size === ids.length) throw unreachable.get(ids[0]!)!;
    const groups = [...all.values()].sort((a, b) =>
      a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0,
    );
    return { groups, unreachable };
  }

  async describe(groupId: string): Promise<GroupDescription> {
    return this.client.retry(async () => {
      const coordinator = await this.coordinator(groupId);
      const resp = await this.client.send({ kind: 'node', id: coordinator }, Apis.DescribeGroups, () => ({
        groups: [groupId],
        includeAuthorizedOperations: false,
      }));
      const g = resp.groups[0];
      if (!g) throw new ClientError(`DescribeGroups answered nothing for group ${groupId}`);
      checkCode(g.errorCode);
      // Dead: no classic group of that id; it may be a consumer-protocol group.
      if (g.groupState === 'Dead') {
        const consumer = await this.describeConsumerGroup(groupId, coordinator);
        if (consumer !== null) return consumer;
      }
      return {
        groupId,
        type: 'classic' as const,
        state: g.groupState,
        protocolType: g.protocolType,
        protocol: g.protocolData,
        coordinator,
        members: g.members.map((m) => ({
          memberId: m.memberId,
          groupInstanceId: m.groupInstanceId,
          clientId: m.clientId,
          host: m.clientHost,
          assignment: g.protocolType === 'consumer' ? decodeAssignment(m.memberAssignment) : [],
        })),
      };
    });
  }

  /** A consumer-protocol group, or null when there is none (or the broker has no ConsumerGroupDescribe). */
  private async describeConsumerGroup(
    groupId: string,
    coordinator: number,
  ): Promise<GroupDescription | null> {
    let resp: ConsumerGroupDescribeResponse;
    try {
      resp = await this.client.send({ kind: 'node', id: coordinator }, Apis.ConsumerGroupDescribe, () => ({
        groupIds: [groupId],
        includeAuthorizedOperations: false,
      }));
    } catch (e) {
      if (e instanceof UnsupportedApiError) return null;
      throw e;
    }
    const g = resp.groups[0];
    if (!g || g.errorCode === ErrorCode.GROUP_ID_NOT_FOUND) return null;
    checkCode(g.errorCode);
    const partitions = (a: { topicPartitions: { topicName: string; partitions: number[] }[] }) =>
      a.topicPartitions.flatMap((t) => t.partitions.map((partition) => ({ topic: t.topicName, partition })));
    return {
      groupId,
      type: 'consumer',
      state: g.groupState,
      protocolType: 'consumer',
      protocol: g.assignorName,
      coordinator,
      groupEpoch: g.groupEpoch,
      targetAssignmentEpoch: g.assignmentEpoch,
      members: g.members.map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.instanceId,
        clientId: m.clientId,
        host: m.clientHost,
        assignment: partitions(m.assignment),
        memberEpoch: m.memberEpoch,
        targetAssignment: partitions(m.targetAssignment),
      })),
    };
  }

  /** Committed offsets of every partition the group has one for. */
  async committedOffsets(groupId: string): Promise<Map<string, { tp: TopicPartition; offset: bigint }>> {
    return this.client.retry(async () => {
      const coordinator = await this.coordinator(groupId);
      const resp = await this.client.send({ kind: 'node', id: coordinator }, Apis.OffsetFetch, () => ({
        groupId,
        topics: null,
        groups: [],
        requireStable: false,
      }));
      checkCode(resp.errorCode);
      const out = new Map<string, { tp: TopicPartition; offset: bigint }>();
      for (const t of resp.topics) {
        for (const p of t.partitions) {
          if (p.errorCode !== 0 || p.committedOffset < 0n) continue;
          out.set(topicPartitionKey(t.name, p.partitionIndex), {
            tp: { topic: t.name, partition: p.partitionIndex },
            offset: p.committedOffset,
          });
        }
      }
      return out;
    });
  }

  /** Commits offsets as an admin (no member, no generation), which an empty group accepts. */
  async commitOffsets(
    groupId: string,
    offsets: readonly { tp: TopicPartition; offset: bigint }[],
  ): Promise<void> {
    await this.client.retry(async () => {
      const coordinator = await this.coordinator(groupId);
      const resp = await this.client.send({ kind: 'node', id: coordinator }, Apis.OffsetCommit, () =>
        offsetCommitRequest(groupId, ADMIN_COMMIT, offsets),
      );
      for (const t of resp.topics) for (const p of t.partitions) checkCode(p.errorCode);
    });
  }

  /** Deletes groups; the result maps each group to its error, or null. */
  async delete(groupIds: readonly string[]): Promise<Map<string, KafkaResponseError | null>> {
    const out = new Map<string, KafkaResponseError | null>();
    for (const groupId of groupIds) {
      const code = await this.client.retry(async () => {
        const coordinator = await this.coordinator(groupId);
        const resp = await this.client.send({ kind: 'node', id: coordinator }, Apis.DeleteGroups, () => ({
          groupsNames: [groupId],
        }));
        const r = resp.results.find((x) => x.groupId === groupId);
        if (!r) throw new ClientError(`DeleteGroups answered nothing for group ${groupId}`);
        // Retriable coordinator errors go round again; the rest are the group's answer.
        if (r.errorCode !== 0 && kafkaError(r.errorCode).retriable) throw kafkaError(r.errorCode);
        return r.errorCode;
      });
      out.set(groupId, code === 0 ? null : kafkaError(code));
    }
    return out;
  }
}
