/**
 * The __consumer_offsets records of KIP-848 consumer groups, in Kafka's layout (the key version
 * names the type, as GroupCoordinatorRecordHelpers writes them): ConsumerGroupMetadata (the group
 * epoch, key 3), ConsumerGroupMemberMetadata (a member's subscription, key 5),
 * ConsumerGroupTargetAssignmentMetadata (the target's epoch, key 6) and
 * ConsumerGroupTargetAssignmentMember (a member's target, key 7),
 * ConsumerGroupCurrentMemberAssignment (a member's epoch, state and partitions, key 8), and
 * ConsumerGroupPartitionMetadata (the subscribed topics the target was computed from, key 4, as
 * Kafka 4.0 writes it; 4.1's KIP-1101 replaces it with a hash in a newer ConsumerGroupMetadata
 * version, which the record schemas here do not have yet); a null value deletes. Pure.
 */
import { ConsumerGroupCurrentMemberAssignmentKeyCodec } from '../../protocol/generated/coordinator/ConsumerGroupCurrentMemberAssignmentKey.js';
import { ConsumerGroupCurrentMemberAssignmentValueCodec } from '../../protocol/generated/coordinator/ConsumerGroupCurrentMemberAssignmentValue.js';
import { ConsumerGroupMemberMetadataKeyCodec } from '../../protocol/generated/coordinator/ConsumerGroupMemberMetadataKey.js';
import {
  type ConsumerGroupMemberMetadataValue,
  ConsumerGroupMemberMetadataValueCodec,
} from '../../protocol/generated/coordinator/ConsumerGroupMemberMetadataValue.js';
import { ConsumerGroupMetadataKeyCodec } from '../../protocol/generated/coordinator/ConsumerGroupMetadataKey.js';
import { ConsumerGroupMetadataValueCodec } from '../../protocol/generated/coordinator/ConsumerGroupMetadataValue.js';
import { ConsumerGroupPartitionMetadataKeyCodec } from '../../protocol/generated/coordinator/ConsumerGroupPartitionMetadataKey.js';
import { ConsumerGroupPartitionMetadataValueCodec } from '../../protocol/generated/coordinator/ConsumerGroupPartitionMetadataValue.js';
import { ConsumerGroupTargetAssignmentMemberKeyCodec } from '../../protocol/generated/coordinator/ConsumerGroupTargetAssignmentMemberKey.js';
import { ConsumerGroupTargetAssignmentMemberValueCodec } from '../../protocol/generated/coordinator/ConsumerGroupTargetAssignmentMemberValue.js';
import { ConsumerGroupTargetAssignmentMetadataKeyCodec } from '../../protocol/generated/coordinator/ConsumerGroupTargetAssignmentMetadataKey.js';
import { ConsumerGroupTargetAssignmentMetadataValueCodec } from '../../protocol/generated/coordinator/ConsumerGroupTargetAssignmentMetadataValue.js';
import { type CoordinatorRecord, decodeVersioned, encodeVersioned } from '../records.js';
import type { Assignment } from './assignors.js';
import type { ConsumerGroup, ConsumerGroupMember, SubscriptionMetadata } from './consumer-group.js';
import { MEMBER_STATE_VALUE, type MemberState } from './reconciliation.js';

export const CONSUMER_GROUP_METADATA_KEY_VERSION = 3;
export const CONSUMER_GROUP_PARTITION_METADATA_KEY_VERSION = 4;
export const CONSUMER_GROUP_MEMBER_METADATA_KEY_VERSION = 5;
export const CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_VERSION = 6;
export const CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_VERSION = 7;
export const CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_VERSION = 8;
const VALUE_VERSION = 0;

const encode = encodeVersioned;
const decode = decodeVersioned;

const partitionsOf = (a: Assignment) =>
  [...a].map(([topicId, parts]) => ({ topicId, partitions: [...parts].sort((x, y) => x - y) }));

function assignmentOf(list: readonly { topicId: string; partitions: readonly number[] }[]): Assignment {
  return new Map(list.map((t) => [t.topicId, new Set(t.partitions)]));
}

const groupKey = (groupId: string) =>
  encode(ConsumerGroupMetadataKeyCodec, CONSUMER_GROUP_METADATA_KEY_VERSION, { groupId });
const memberKey = (groupId: string, memberId: string) =>
  encode(ConsumerGroupMemberMetadataKeyCodec, CONSUMER_GROUP_MEMBER_METADATA_KEY_VERSION, {
    groupId,
    memberId,
  });
const targetMetadataKey = (groupId: string) =>
  encode(
    ConsumerGroupTargetAssignmentMetadataKeyCodec,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_VERSION,
    {
      groupId,
    },
  );
const targetMemberKey = (groupId: string, memberId: string) =>
  encode(ConsumerGroupTargetAssignmentMemberKeyCodec, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_VERSION, {
    groupId,
    memberId,
  });
const currentKey = (groupId: string, memberId: string) =>
  encode(ConsumerGroupCurrentMemberAssignmentKeyCodec, CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_VERSION, {
    groupId,
    memberId,
  });

export function groupEpochRecord(groupId: string, epoch: number): CoordinatorRecord {
  return { key: groupKey(groupId), value: encode(ConsumerGroupMetadataValueCodec, VALUE_VERSION, { epoch }) };
}

const partitionMetadataKey = (groupId: string) =>
  encode(ConsumerGroupPartitionMetadataKeyCodec, CONSUMER_GROUP_PARTITION_METADATA_KEY_VERSION, { groupId });

/** Racks are not tracked (no rack-aware assignment): each topic's partition list is empty. */
export function subscriptionMetadataRecord(
  groupId: string,
  metadata: SubscriptionMetadata,
): CoordinatorRecord {
  return {
    key: partitionMetadataKey(groupId),
    value: encode(ConsumerGroupPartitionMetadataValueCodec, VALUE_VERSION, {
      topics: [...metadata].map(([topicName, t]) => ({
        topicId: t.topicId,
        topicName,
        numPartitions: t.numPartitions,
        partitionMetadata: [],
      })),
    }),
  };
}

export function memberSubscriptionRecord(groupId: string, m: ConsumerGroupMember): CoordinatorRecord {
  const value: ConsumerGroupMemberMetadataValue = {
    instanceId: m.instanceId,
    rackId: m.rackId,
    clientId: m.clientId,
    clientHost: m.clientHost,
    subscribedTopicNames: [...m.subscribedTopicNames],
    subscribedTopicRegex: m.subscribedTopicRegex,
    rebalanceTimeoutMs: m.rebalanceTimeoutMs,
    serverAssignor: m.serverAssignor,
    classicMemberMetadata: null,
  };
  return {
    key: memberKey(groupId, m.memberId),
    value: encode(ConsumerGroupMemberMetadataValueCodec, VALUE_VERSION, value),
  };
}

export function targetAssignmentRecord(groupId: string, memberId: string, a: Assignment): CoordinatorRecord {
  return {
    key: targetMemberKey(groupId, memberId),
    value: encode(ConsumerGroupTargetAssignmentMemberValueCodec, VALUE_VERSION, {
      topicPartitions: partitionsOf(a),
    }),
  };
}

export function targetAssignmentEpochRecord(groupId: string, assignmentEpoch: number): CoordinatorRecord {
  return {
    key: targetMetadataKey(groupId),
    value: encode(ConsumerGroupTargetAssignmentMetadataValueCodec, VALUE_VERSION, { assignmentEpoch }),
  };
}

export function currentAssignmentRecord(groupId: string, m: ConsumerGroupMember): CoordinatorRecord {
  return {
    key: currentKey(groupId, m.memberId),
    value: encode(ConsumerGroupCurrentMemberAssignmentValueCodec, VALUE_VERSION, {
      memberEpoch: m.memberEpoch,
      previousMemberEpoch: m.previousMemberEpoch,
      state: MEMBER_STATE_VALUE[m.state],
      assignedPartitions: partitionsOf(m.assignedPartitions),
      partitionsPendingRevocation: partitionsOf(m.partitionsPendingRevocation),
    }),
  };
}

/** Kafka's order for a leaving member: its current assignment, then its target, then its subscription. */
export function memberTombstones(groupId: string, memberId: string): CoordinatorRecord[] {
  return [
    { key: currentKey(groupId, memberId), value: null },
    { key: targetMemberKey(groupId, memberId), value: null },
    { key: memberKey(groupId, memberId), value: null },
  ];
}

/** A deleted group (DeleteGroups, offset expiry): every member's records, its target epoch, its epoch. */
export function consumerGroupTombstones(group: ConsumerGroup): CoordinatorRecord[] {
  const ids = new Set([...group.members.keys(), ...group.targetAssignment.keys()]);
  return [
    ...[...ids].flatMap((id) => memberTombstones(group.groupId, id)),
    { key: partitionMetadataKey(group.groupId), value: null },
    { key: targetMetadataKey(group.groupId), value: null },
    { key: groupKey(group.groupId), value: null },
  ];
}

const STATE_BY_VALUE = new Map<number, MemberState>(
  Object.entries(MEMBER_STATE_VALUE).map(([k, v]) => [v, k as MemberState]),
);

/** A replayed consumer-group record, decoded; undefined for key versions that are not one. */
export type ConsumerGroupRecord =
  | { type: 'epoch'; groupId: string; epoch: number | null }
  | { type: 'partition-metadata'; groupId: string; metadata: SubscriptionMetadata | null }
  | { type: 'member'; groupId: string; memberId: string; value: ConsumerGroupMemberMetadataValue | null }
  | { type: 'target-epoch'; groupId: string; epoch: number | null }
  | { type: 'target'; groupId: string; memberId: string; assignment: Assignment | null }
  | {
      type: 'current';
      groupId: string;
      memberId: string;
      value: {
        memberEpoch: number;
        previousMemberEpoch: number;
        state: MemberState;
        assignedPartitions: Assignment;
        partitionsPendingRevocation: Assignment;
      } | null;
    };

/** Throws on bytes that do not decode (the loader skips those, as it does other bad records). */
export function decodeConsumerGroupRecord(
  keyVersion: number,
  key: Buffer,
  value: Buffer | null,
): ConsumerGroupRecord | undefined {
  switch (keyVersion) {
    case CONSUMER_GROUP_METADATA_KEY_VERSION: {
      const { groupId } = decode(ConsumerGroupMetadataKeyCodec, key);
      return {
        type: 'epoch',
        groupId,
        epoch: value === null ? null : decode(ConsumerGroupMetadataValueCodec, value).epoch,
      };
    }
    case CONSUMER_GROUP_PARTITION_METADATA_KEY_VERSION: {
      const { groupId } = decode(ConsumerGroupPartitionMetadataKeyCodec, key);
      if (value === null) return { type: 'partition-metadata', groupId, metadata: null };
      const v = decode(ConsumerGroupPartitionMetadataValueCodec, value);
      const metadata: SubscriptionMetadata = new Map(
        v.topics.map((t) => [t.topicName, { topicId: t.topicId, numPartitions: t.numPartitions }]),
      );
      return { type: 'partition-metadata', groupId, metadata };
    }
    case CONSUMER_GROUP_MEMBER_METADATA_KEY_VERSION: {
      const k = decode(ConsumerGroupMemberMetadataKeyCodec, key);
      return {
        type: 'member',
        ...k,
        value: value === null ? null : decode(ConsumerGroupMemberMetadataValueCodec, value),
      };
    }
    case CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_VERSION: {
      const { groupId } = decode(ConsumerGroupTargetAssignmentMetadataKeyCodec, key);
      const epoch =
        value === null
          ? null
          : decode(ConsumerGroupTargetAssignmentMetadataValueCodec, value).assignmentEpoch;
      return { type: 'target-epoch', groupId, epoch };
    }
    case CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_VERSION: {
      const k = decode(ConsumerGroupTargetAssignmentMemberKeyCodec, key);
      const assignment =
        value === null
          ? null
          : assignmentOf(decode(ConsumerGroupTargetAssignmentMemberValueCodec, value).topicPartitions);
      return { type: 'target', ...k, assignment };
    }
    case CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_VERSION: {
      const k = decode(ConsumerGroupCurrentMemberAssignmentKeyCodec, key);
      if (value === null) return { type: 'current', ...k, value: null };
      const v = decode(ConsumerGroupCurrentMemberAssignmentValueCodec, value);
      return {
        type: 'current',
        ...k,
        value: {
          memberEpoch: v.memberEpoch,
          previousMemberEpoch: v.previousMemberEpoch,
          // A state this coordinator does not know: reconcile the member again from scratch.
          state: STATE_BY_VALUE.get(v.state) ?? 'UNRELEASED_PARTITIONS',
          assignedPartitions: assignmentOf(v.assignedPartitions),
          partitionsPendingRevocation: assignmentOf(v.partitionsPendingRevocation),
        },
      };
    }
    default:
      return undefined;
  }
}
