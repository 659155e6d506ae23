/**
 * Rebuilds consumer groups from their records in __consumer_offsets (Kafka's replay in
 * GroupMetadataManager): the last value of each key wins, tombstones delete, and the group
 * exists while its ConsumerGroupMetadata record does. The subscription metadata comes back from
 * ConsumerGroupPartitionMetadata, so a reload alone does not start a rebalance. Pure.
 */
import type { ConsumerGroupMemberMetadataValue } from '../../protocol/generated/coordinator/ConsumerGroupMemberMetadataValue.js';
import type { Assignment } from './assignors.js';
import { ConsumerGroup, type ConsumerGroupMember, type SubscriptionMetadata } from './consumer-group.js';
import { type ConsumerGroupRecord, decodeConsumerGroupRecord } from './records.js';

type Current = Extract<ConsumerGroupRecord, { type: 'current' }>['value'];

/** What the records of one consumer group said, so far. */
export interface ConsumerGroupReplay {
  epoch: number | null;
  targetEpoch: number;
  members: Map<string, ConsumerGroupMemberMetadataValue>;
  current: Map<string, NonNullable<Current>>;
  targets: Map<string, Assignment>;
  metadata: SubscriptionMetadata | null;
}

/** Applies one record whose key version is a consumer group's; throws on bytes that do not decode. */
export function replayConsumerGroupRecord(
  keyVersion: number,
  key: Buffer,
  value: Buffer | null,
  entry: (groupId: string) => { consumer: ConsumerGroupReplay | null },
): void {
  const r = decodeConsumerGroupRecord(keyVersion, key, value);
  // Share groups and types of later versions: not this coordinator's.
  if (r === undefined) return;
  const e = entry(r.groupId);
  if (e.consumer === null) {
    e.consumer = {
      epoch: null,
      targetEpoch: 0,
      members: new Map(),
      current: new Map(),
      targets: new Map(),
      metadata: null,
    };
  }
  const g = e.consumer;
  switch (r.type) {
    case 'epoch':
      g.epoch = r.epoch;
      break;
    case 'partition-metadata':
      g.metadata = r.metadata;
      break;
    case 'target-epoch':
      g.targetEpoch = r.epoch ?? 0;
      break;
    case 'member':
      if (r.value === null) g.members.delete(r.memberId);
      else g.members.set(r.memberId, r.value);
      break;
    case 'current':
      if (r.value === null) g.current.delete(r.memberId);
      else g.current.set(r.memberId, r.value);
      break;
    case 'target':
      if (r.assignment === null) g.targets.delete(r.memberId);
      else g.targets.set(r.memberId, r.assignment);
      break;
  }
}

/** The group the records describe; null when its epoch record was deleted (or never written). */
export function consumerGroupFromReplay(groupId: string, g: ConsumerGroupReplay): ConsumerGroup | null {
  if (g.epoch === null) return null;
  const group = new ConsumerGroup(groupId);
  group.groupEpoch = g.epoch;
  group.targetAssignmentEpoch = g.targetEpoch;
  if (g.metadata !== null) group.subscriptionMetadata = g.metadata;
  for (const [memberId, m] of g.members) {
    const c = g.current.get(memberId);
    const member: ConsumerGroupMember = {
      memberId,
      instanceId: m.instanceId,
      rackId: m.rackId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      rebalanceTimeoutMs: m.rebalanceTimeoutMs,
      subscribedTopicNames: m.subscribedTopicNames,
      subscribedTopicRegex: m.subscribedTopicRegex,
      serverAssignor: m.serverAssignor,
      state: c?.state ?? 'STABLE',
      memberEpoch: c?.memberEpoch ?? 0,
      previousMemberEpoch: c?.previousMemberEpoch ?? 0,
      assignedPartitions: c?.assignedPartitions ?? new Map(),
      partitionsPendingRevocation: c?.partitionsPendingRevocation ?? new Map(),
    };
    group.updateMember(member);
  }
  for (const [memberId, a] of g.targets)
    if (group.members.has(memberId)) group.targetAssignment.set(memberId, a);
  return group;
}
