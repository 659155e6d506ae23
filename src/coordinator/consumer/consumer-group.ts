/**
 * The state of one KIP-848 consumer group (Kafka's ConsumerGroup): the group epoch, the target
 * assignment and its epoch, the members with their current assignments, and which member epoch
 * holds each partition. It answers questions and applies changes; the heartbeat logic
 * (heartbeat.ts) decides them. Owned by the ClassicGroup entry that also holds the group's
 * committed offsets (one map of groups per coordinator); single-threaded.
 */
import type { Assignment } from './assignors.js';
import { isReconciledTo, type ReconciledState } from './reconciliation.js';

export type ConsumerGroupState = 'Empty' | 'Assigning' | 'Reconciling' | 'Stable';

export interface ConsumerGroupMember extends ReconciledState {
  readonly memberId: string;
  readonly instanceId: string | null;
  readonly rackId: string | null;
  readonly clientId: string;
  readonly clientHost: string;
  readonly rebalanceTimeoutMs: number;
  readonly subscribedTopicNames: readonly string[];
  readonly subscribedTopicRegex: string | null;
  readonly serverAssignor: string | null;
}

/** Topic name → its id and partition count, as the target assignment last saw them. */
export type SubscriptionMetadata = Map<string, { readonly topicId: string; readonly numPartitions: number }>;

/** Timers of one member, cancelled when it leaves. */
export interface MemberTimers {
  /** The session expires at this time unless a heartbeat moves it. */
  sessionDeadlineMs: number;
  cancelSession: (() => void) | null;
  cancelRebalance: (() => void) | null;
}

export class ConsumerGroup {
  groupEpoch = 0;
  targetAssignmentEpoch = 0;
  readonly members = new Map<string, ConsumerGroupMember>();
  readonly timers = new Map<string, MemberTimers>();
  /** group.instance.id → member id. */
  readonly staticMembers = new Map<string, string>();
  /** Member id → its target assignment at targetAssignmentEpoch. */
  readonly targetAssignment = new Map<string, Assignment>();
  /** Topic id → partition → the epoch of the member holding it. */
  private readonly partitionEpochs = new Map<string, Map<number, number>>();
  subscriptionMetadata: SubscriptionMetadata = new Map();
  /** The metadata version subscriptionMetadata was computed at (-1: never). */
  metadataVersion = -1;

  constructor(readonly groupId: string) {}

  get state(): ConsumerGroupState {
    if (this.members.size === 0) return 'Empty';
    if (this.groupEpoch > this.targetAssignmentEpoch) return 'Assigning';
    for (const m of this.members.values())
      if (!isReconciledTo(m, this.targetAssignmentEpoch)) return 'Reconciling';
    return 'Stable';
  }

  staticMember(instanceId: string): ConsumerGroupMember | undefined {
    const id = this.staticMembers.get(instanceId);
    return id === undefined ? undefined : this.members.get(id);
  }

  currentPartitionEpoch(topicId: string, partition: number): number {
    return this.partitionEpochs.get(topicId)?.get(partition) ?? -1;
  }

  /** Adds or replaces a member, moving its partitions' epochs with it. */
  updateMember(m: ConsumerGroupMember): void {
    const old = this.members.get(m.memberId);
    if (old !== undefined) this.releasePartitions(old);
    this.members.set(m.memberId, m);
    if (m.instanceId !== null) this.staticMembers.set(m.instanceId, m.memberId);
    this.holdPartitions(m);
  }

  removeMember(memberId: string): ConsumerGroupMember | undefined {
    const m = this.members.get(memberId);
    if (m === undefined) return undefined;
    this.releasePartitions(m);
    this.members.delete(memberId);
    this.targetAssignment.delete(memberId);
    if (m.instanceId !== null && this.staticMembers.get(m.instanceId) === memberId)
      this.staticMembers.delete(m.instanceId);
    return m;
  }

  /** Topic names any member subscribes to by name. */
  subscribedTopicNames(): Set<string> {
    const names = new Set<string>();
    for (const m of this.members.values()) for (const t of m.subscribedTopicNames) names.add(t);
    return names;
  }

  /** Whether the group consumes the topic now (offset retention and OffsetDelete ask). */
  isSubscribedToTopic(topic: string): boolean {
    return this.members.size > 0 && this.subscriptionMetadata.has(topic);
  }

  private holdPartitions(m: ConsumerGroupMember): void {
    for (const a of [m.assignedPartitions, m.partitionsPendingRevocation])
      for (const [t, parts] of a) {
        let epochs = this.partitionEpochs.get(t);
        if (epochs === undefined) {
          epochs = new Map();
          this.partitionEpochs.set(t, epochs);
        }
        for (const p of parts) epochs.set(p, m.memberEpoch);
      }
  }

  private releasePartitions(m: ConsumerGroupMember): void {
    for (const a of [m.assignedPartitions, m.partitionsPendingRevocation])
      for (const [t, parts] of a) {
        const epochs = this.partitionEpochs.get(t);
        if (epochs === undefined) continue;
        for (const p of parts) if (epochs.get(p) === m.memberEpoch) epochs.delete(p);
        if (epochs.size === 0) this.partitionEpochs.delete(t);
      }
  }
}
