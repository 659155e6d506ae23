/**
 * ConsumerGroupHeartbeat (API 68) on one consumer group, as Kafka's GroupMetadataManager does it:
 * the member joins (epoch 0), heartbeats, leaves (-1) or, static, leaves for a while (-2); a
 * change of subscription, of the subscribed topics' metadata or of membership bumps the group
 * epoch; a group epoch ahead of the target assignment's has the server-side assignor compute a
 * new target; each member then reconciles towards it (reconciliation.ts). Members are fenced when
 * their session (group.consumer.session.timeout.ms) or their revocation (the member's rebalance
 * timeout) runs out. Owned by the GroupCoordinator, which resolves the group and persists the
 * records this returns; time and timers come from the injected clock and scheduler.
 */
import type { Clock } from '../../common/clock.js';
import type { Logger } from '../../common/logger.js';
import type { Scheduler } from '../../common/scheduler.js';
import type { ConsumerGroupHeartbeatRequest } from '../../protocol/generated/ConsumerGroupHeartbeatRequest.js';
import type { ConsumerGroupHeartbeatResponse } from '../../protocol/generated/ConsumerGroupHeartbeatResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { GroupCoordinatorConfig } from '../config.js';
import { type Assignment, CONSUMER_GROUP_ASSIGNORS, type ConsumerGroupAssignor } from './assignors.js';
import type { ConsumerGroup, ConsumerGroupMember } from './consumer-group.js';
import { type OwnedPartitions, reconcile } from './reconciliation.js';
import { sameSubscriptionMetadata, TopicMatcher, type TopicsImage } from './subscriptions.js';

export const LEAVE_GROUP_MEMBER_EPOCH = -1;
export const LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2;

/** A heartbeat refused with a Kafka error code and message. */
export class HeartbeatError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export interface ConsumerGroupContext {
  readonly config: GroupCoordinatorConfig;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly logger: Logger;
  readonly topics: () => TopicsImage;
  readonly newMemberId: () => string;
  /** Every change to a group's members, epochs or assignments (persistence hooks in here). */
  readonly onChange: (group: ConsumerGroup, change: GroupChange) => void;
  /** A timer (session or revocation) changed the group: its records are to be written now. */
  readonly afterTimer: (group: ConsumerGroup) => void;
}

/** What changed, for the records that persist it. */
export type GroupChange =
  | { kind: 'member'; member: ConsumerGroupMember }
  | { kind: 'assignment'; member: ConsumerGroupMember }
  | { kind: 'removed'; memberId: string }
  | { kind: 'epoch' }
  | { kind: 'subscription-metadata' }
  | { kind: 'target'; memberIds: readonly string[] };

function invalid(message: string): HeartbeatError {
  return new HeartbeatError(ErrorCode.INVALID_REQUEST, message);
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const s = new Set(a);
  return b.every((x) => s.has(x));
}

function assignmentEquals(a: Assignment, b: Assignment): boolean {
  if (a.size !== b.size) return false;
  for (const [t, parts] of a) {
    const o = b.get(t);
    if (o === undefined || o.size !== parts.size) return false;
    for (const p of parts) if (!o.has(p)) return false;
  }
  return true;
}

export function toTopicPartitions(a: Assignment): { topicId: string; partitions: number[] }[] {
  return [...a].map(([topicId, parts]) => ({ topicId, partitions: [...parts].sort((x, y) => x - y) }));
}

export class ConsumerGroupHeartbeats {
  readonly matcher = new TopicMatcher();

  constructor(private readonly ctx: ConsumerGroupContext) {}

  assignor(name: string | null): ConsumerGroupAssignor | undefined {
    return CONSUMER_GROUP_ASSIGNORS.get(name ?? this.ctx.config.consumerGroupAssignors[0]!);
  }

  /** Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid. */
  validate(req: ConsumerGroupHeartbeatRequest): void {
    if (req.groupId === '') throw invalid("GroupId can't be empty.");
    if (req.instanceId === '') throw invalid("InstanceId can't be empty.");
    if (req.rackId === '') throw invalid("RackId can't be empty.");
    const e = req.memberEpoch;
    if (e > 0 || e === LEAVE_GROUP_MEMBER_EPOCH) {
      if (req.memberId === '') throw invalid("MemberId can't be empty.");
    } else if (e === 0) {
      if (req.rebalanceTimeoutMs === -1)
        throw invalid('RebalanceTimeoutMs must be provided in first request.');
      if (req.topicPartitions === null || req.topicPartitions.length > 0)
        throw invalid('TopicPartitions must be empty when (re-)joining.');
      const names = req.subscribedTopicNames !== null && req.subscribedTopicNames.length > 0;
      if (!names && req.subscribedTopicRegex === null)
        throw invalid(
          'Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.',
        );
    } else if (e === LEAVE_GROUP_STATIC_MEMBER_EPOCH) {
      if (req.memberId === '') throw invalid("MemberId can't be empty.");
      if (req.instanceId === null) throw invalid("InstanceId can't be null.");
    } else {
      throw invalid('MemberEpoch is invalid.');
    }
    if (req.subscribedTopicRegex !== null && req.subscribedTopicRegex !== '') {
      const why = this.matcher.invalidReason(req.subscribedTopicRegex);
      if (why !== null)
        throw new HeartbeatError(
          ErrorCode.INVALID_REGULAR_EXPRESSION,
          `SubscribedTopicRegex \`${req.subscribedTopicRegex}\` is not a valid regular expression: ${why}.`,
        );
    }
    const assignors = this.ctx.config.consumerGroupAssignors;
    if (req.serverAssignor !== null && !assignors.includes(req.serverAssignor))
      throw new HeartbeatError(
        ErrorCode.UNSUPPORTED_ASSIGNOR,
        `ServerAssignor ${req.serverAssignor} is not supported. Supported assignors: ${assignors.join(', ')}.`,
      );
  }

  /** A validated join or heartbeat (member epoch ≥ 0). */
  heartbeat(
    group: ConsumerGroup,
    req: ConsumerGroupHeartbeatRequest,
    clientId: string,
    clientHost: string,
  ): ConsumerGroupHeartbeatResponse {
    const { config } = this.ctx;
    const joining = req.memberEpoch === 0;
    const knownMember =
      req.memberId !== '' &&
      (group.members.has(req.memberId) ||
        (req.instanceId !== null && group.staticMember(req.instanceId) !== undefined));
    if (group.members.size >= config.consumerGroupMaxSize && !knownMember)
      throw new HeartbeatError(
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        `The consumer group has reached its maximum capacity of ${config.consumerGroupMaxSize} members.`,
      );
    const memberId = req.memberId === '' ? this.ctx.newMemberId() : req.memberId;
    const member = this.memberFor(group, memberId, req);
    const updated: ConsumerGroupMember = {
      ...member,
      instanceId: req.instanceId ?? member.instanceId,
      rackId: req.rackId ?? member.rackId,
      rebalanceTimeoutMs: req.rebalanceTimeoutMs === -1 ? member.rebalanceTimeoutMs : req.rebalanceTimeoutMs,
      serverAssignor: req.serverAssignor ?? member.serverAssignor,
      subscribedTopicNames: req.subscribedTopicNames ?? member.subscribedTopicNames,
      subscribedTopicRegex: req.subscribedTopicRegex ?? member.subscribedTopicRegex,
      clientId,
      clientHost,
    };
    let bump =
      !sameNames(updated.subscribedTopicNames, member.subscribedTopicNames) ||
      updated.subscribedTopicRegex !== member.subscribedTopicRegex;
    if (bump || updated.serverAssignor !== member.serverAssignor || updated.rackId !== member.rackId)
      this.ctx.onChange(group, { kind: 'member', member: updated });
    // A static member taking over: the previous incarnation goes, its target comes along.
    const replaced = updated.instanceId !== null ? group.staticMember(updated.instanceId) : undefined;
    const image = this.ctx.topics();
    if (bump || group.metadataVersion !== image.version) {
      const others = [...group.members.values()].filter(
        (m) => m.memberId !== memberId && m.memberId !== replaced?.memberId,
      );
      const metadata = this.matcher.subscriptionMetadata([...others, updated], image);
      if (!sameSubscriptionMetadata(metadata, group.subscriptionMetadata)) {
        group.subscriptionMetadata = metadata;
        this.ctx.onChange(group, { kind: 'subscription-metadata' });
        bump = true;
      }
      group.metadataVersion = image.version;
    }
    if (replaced !== undefined && replaced.memberId !== memberId) {
      const target = group.targetAssignment.get(replaced.memberId);
      this.removeMember(group, replaced.memberId);
      if (target !== undefined) group.targetAssignment.set(memberId, target);
    }
    group.updateMember(updated);
    if (bump) {
      group.groupEpoch++;
      this.ctx.onChange(group, { kind: 'epoch' });
      this.ctx.logger.info(`group ${group.groupId}: bumped group epoch to ${group.groupEpoch}`);
    }
    if (group.groupEpoch > group.targetAssignmentEpoch) this.computeTargetAssignment(group, updated);
    const next = this.reconcileMember(group, updated, req.topicPartitions);
    this.touchSession(group, memberId);
    const full =
      joining ||
      (req.rebalanceTimeoutMs !== -1 && req.subscribedTopicNames !== null && req.topicPartitions !== null);
    const changed = !assignmentEquals(member.assignedPartitions, next.assignedPartitions);
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      memberId,
      memberEpoch: next.memberEpoch,
      heartbeatIntervalMs: config.consumerGroupHeartbeatIntervalMs,
      assignment: full || changed ? { topicPartitions: toTopicPartitions(next.assignedPartitions) } : null,
    };
  }

  /** Leaves (-1), or a static member leaving for a while (-2). */
  leave(
    group: ConsumerGroup | undefined,
    req: ConsumerGroupHeartbeatRequest,
  ): ConsumerGroupHeartbeatResponse {
    const answer = (memberEpoch: number): ConsumerGroupHeartbeatResponse => ({
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      memberId: req.memberId,
      memberEpoch,
      heartbeatIntervalMs: 0,
      assignment: null,
    });
    if (group === undefined)
      throw new HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, `Consumer group ${req.groupId} not found.`);
    if (req.instanceId === null) {
      this.knownMember(group, req.memberId);
      this.fence(group, req.memberId, 'the member left the group');
      return answer(req.memberEpoch);
    }
    const m = this.staticMemberOf(group, req.instanceId, req.memberId);
    if (req.memberEpoch === LEAVE_GROUP_STATIC_MEMBER_EPOCH) {
      // Its partitions stay its own until it comes back or its session ends: no rebalance.
      const away = {
        ...m,
        memberEpoch: LEAVE_GROUP_STATIC_MEMBER_EPOCH,
        partitionsPendingRevocation: new Map(),
      };
      group.updateMember(away);
      this.ctx.onChange(group, { kind: 'assignment', member: away });
      this.cancelRebalanceTimer(group, m.memberId);
      this.ctx.logger.info(
        `group ${group.groupId}: static member ${m.memberId} (instance ${req.instanceId}) left for a while`,
      );
      return answer(LEAVE_GROUP_STATIC_MEMBER_EPOCH);
    }
    this.fence(group, m.memberId, `static member (instance ${req.instanceId}) left the group`);
    return answer(req.memberEpoch);
  }

  /** Removes a member and bumps the group epoch (Kafka's consumerGroupFenceMember). */
  fence(group: ConsumerGroup, memberId: string, reason: string): void {
    if (!group.members.has(memberId)) return;
    this.removeMember(group, memberId);
    const metadata = this.matcher.subscriptionMetadata(group.members.values(), this.ctx.topics());
    if (!sameSubscriptionMetadata(metadata, group.subscriptionMetadata)) {
      group.subscriptionMetadata = metadata;
      this.ctx.onChange(group, { kind: 'subscription-metadata' });
    }
    group.groupEpoch++;
    this.ctx.onChange(group, { kind: 'epoch' });
    this.ctx.logger.info(
      `group ${group.groupId}: member ${memberId} fenced because ${reason}; group epoch ${group.groupEpoch}`,
    );
  }

  /** Cancels every timer of the group (unload, deletion, conversion). */
  cancelTimers(group: ConsumerGroup): void {
    for (const t of group.timers.values()) {
      t.cancelSession?.();
      t.cancelRebalance?.();
    }
    group.timers.clear();
  }

  private removeMember(group: ConsumerGroup, memberId: string): void {
    const t = group.timers.get(memberId);
    t?.cancelSession?.();
    t?.cancelRebalance?.();
    group.timers.delete(memberId);
    group.removeMember(memberId);
    this.ctx.onChange(group, { kind: 'removed', memberId });
  }

  private knownMember(group: ConsumerGroup, memberId: string): ConsumerGroupMember {
    const m = group.members.get(memberId);
    if (m === undefined)
      throw new HeartbeatError(
        ErrorCode.UNKNOWN_MEMBER_ID,
        `Member ${memberId} is not a member of group ${group.groupId}.`,
      );
    return m;
  }

  private staticMemberOf(group: ConsumerGroup, instanceId: string, memberId: string): ConsumerGroupMember {
    const m = group.staticMember(instanceId);
    if (m === undefined)
      throw new HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, `Instance id ${instanceId} is unknown.`);
    if (m.memberId !== memberId)
      throw new HeartbeatError(
        ErrorCode.FENCED_INSTANCE_ID,
        `Static member ${memberId} with instance id ${instanceId} was fenced by member ${m.memberId}.`,
      );
    return m;
  }

  /** The member a heartbeat is about, new on a join; the epoch checks of Kafka's getOrMaybeSubscribe*. */
  private memberFor(
    group: ConsumerGroup,
    memberId: string,
    req: ConsumerGroupHeartbeatRequest,
  ): ConsumerGroupMember {
    const joining = req.memberEpoch === 0;
    if (req.instanceId !== null) {
      const existing = group.staticMember(req.instanceId);
      if (joining) {
        if (existing === undefined) return group.members.get(memberId) ?? this.newMember(memberId);
        if (existing.memberId === memberId) return existing;
        if (existing.memberEpoch !== LEAVE_GROUP_STATIC_MEMBER_EPOCH)
          throw new HeartbeatError(
            ErrorCode.UNRELEASED_INSTANCE_ID,
            `Static member ${memberId} with instance id ${req.instanceId} cannot join the group because the instance id is owned by ${existing.memberId} member.`,
          );
        return { ...existing, memberId, memberEpoch: 0, previousMemberEpoch: 0 };
      }
      const m = this.staticMemberOf(group, req.instanceId, memberId);
      this.checkEpoch(m, req.memberEpoch, req.topicPartitions);
      return m;
    }
    const m = group.members.get(memberId);
    if (m === undefined) {
      if (joining) return this.newMember(memberId);
      return this.knownMember(group, memberId);
    }
    this.checkEpoch(m, req.memberEpoch, req.topicPartitions);
    return m;
  }

  private newMember(memberId: string): ConsumerGroupMember {
    return {
      memberId,
      instanceId: null,
      rackId: null,
      clientId: '',
      clientHost: '',
      rebalanceTimeoutMs: -1,
      subscribedTopicNames: [],
      subscribedTopicRegex: null,
      serverAssignor: null,
      state: 'STABLE',
      memberEpoch: 0,
      previousMemberEpoch: 0,
      assignedPartitions: new Map(),
      partitionsPendingRevocation: new Map(),
    };
  }

  /**
   * Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a member ahead of the coordinator, or
   * behind it other than by a lost answer (the previous epoch with owned partitions all still
   * assigned), must give up its partitions and rejoin. A join (epoch 0) of a known member is
   * such a rejoin.
   */
  private checkEpoch(m: ConsumerGroupMember, received: number, owned: OwnedPartitions): void {
    if (received > m.memberEpoch)
      throw new HeartbeatError(
        ErrorCode.FENCED_MEMBER_EPOCH,
        `The consumer group member has a greater member epoch (${received}) than the one known by the group coordinator (${m.memberEpoch}). The member must abandon all its partitions and rejoin.`,
      );
    if (
      received < m.memberEpoch &&
      (received !== m.previousMemberEpoch || !isSubset(owned, m.assignedPartitions))
    )
      throw new HeartbeatError(
        ErrorCode.FENCED_MEMBER_EPOCH,
        `The consumer group member has a smaller member epoch (${received}) than the one known by the group coordinator (${m.memberEpoch}). The member must abandon all its partitions and rejoin.`,
      );
  }

  /** A new target assignment at the group epoch, computed by the group's assignor. */
  private computeTargetAssignment(group: ConsumerGroup, updated: ConsumerGroupMember): void {
    const started = this.ctx.clock.nowMs();
    const image = this.ctx.topics();
    const assignor = this.assignor(this.preferredAssignor(group, updated))!;
    const topicPartitions = new Map<string, number>();
    for (const t of group.subscriptionMetadata.values()) topicPartitions.set(t.topicId, t.numPartitions);
    const members = [...group.members.values()].map((m) => {
      const ids = new Set<string>();
      for (const name of this.matcher.memberTopics(m, image)) {
        const t = group.subscriptionMetadata.get(name);
        if (t !== undefined) ids.add(t.topicId);
      }
      return {
        memberId: m.memberId,
        subscribedTopicIds: ids,
        currentTarget: group.targetAssignment.get(m.memberId) ?? new Map(),
      };
    });
    const result = assignor.assign({ members, topicPartitions });
    const changed: string[] = [];
    for (const [memberId, a] of result) {
      const before = group.targetAssignment.get(memberId);
      if (before === undefined || !assignmentEquals(before, a)) changed.push(memberId);
      group.targetAssignment.set(memberId, a);
    }
    group.targetAssignmentEpoch = group.groupEpoch;
    this.ctx.onChange(group, { kind: 'target', memberIds: changed });
    this.ctx.logger.info(
      `group ${group.groupId}: computed a new target assignment for epoch ${group.groupEpoch} with '${assignor.name}' assignor in ${this.ctx.clock.nowMs() - started}ms`,
    );
  }

  /** Kafka's computePreferredServerAssignor: the assignor most members ask for, else the default. */
  preferredAssignor(group: ConsumerGroup, updated?: ConsumerGroupMember): string | null {
    const counts = new Map<string, number>();
    for (const m of group.members.values()) {
      const a = m.memberId === updated?.memberId ? updated.serverAssignor : m.serverAssignor;
      if (a !== null) counts.set(a, (counts.get(a) ?? 0) + 1);
    }
    let best: string | null = null;
    for (const [a, n] of counts) if (best === null || n > counts.get(best)!) best = a;
    return best;
  }

  private reconcileMember(
    group: ConsumerGroup,
    member: ConsumerGroupMember,
    owned: OwnedPartitions,
  ): ConsumerGroupMember {
    const next = reconcile(member, {
      targetEpoch: group.targetAssignmentEpoch,
      target: group.targetAssignment.get(member.memberId) ?? new Map(),
      currentPartitionEpoch: (t, p) => group.currentPartitionEpoch(t, p),
      owned,
    });
    if (next === member) return member;
    group.updateMember(next);
    this.ctx.onChange(group, { kind: 'assignment', member: next });
    if (next.state === 'UNREVOKED_PARTITIONS') this.scheduleRebalanceTimer(group, next);
    else this.cancelRebalanceTimer(group, next.memberId);
    return next;
  }

  private timersOf(group: ConsumerGroup, memberId: string) {
    let t = group.timers.get(memberId);
    if (t === undefined) {
      t = { sessionDeadlineMs: 0, cancelSession: null, cancelRebalance: null };
      group.timers.set(memberId, t);
    }
    return t;
  }

  /** One timer per member watches a deadline each heartbeat moves: no timer churn per heartbeat. */
  touchSession(group: ConsumerGroup, memberId: string): void {
    const t = this.timersOf(group, memberId);
    const timeoutMs = this.ctx.config.consumerGroupSessionTimeoutMs;
    t.sessionDeadlineMs = this.ctx.clock.nowMs() + timeoutMs;
    if (t.cancelSession !== null) return;
    const arm = (delayMs: number) => {
      t.cancelSession = this.ctx.scheduler.schedule(`session ${group.groupId} ${memberId}`, delayMs, () => {
        t.cancelSession = null;
        const left = t.sessionDeadlineMs - this.ctx.clock.nowMs();
        if (left > 0) arm(left);
        else if (group.timers.get(memberId) === t) {
          this.fence(group, memberId, 'the member session expired');
          this.ctx.afterTimer(group);
        }
      });
    };
    arm(timeoutMs);
  }

  private scheduleRebalanceTimer(group: ConsumerGroup, m: ConsumerGroupMember): void {
    const t = this.timersOf(group, m.memberId);
    t.cancelRebalance?.();
    const epoch = m.memberEpoch;
    t.cancelRebalance = this.ctx.scheduler.schedule(
      `revocation ${group.groupId} ${m.memberId}`,
      Math.max(0, m.rebalanceTimeoutMs),
      () => {
        t.cancelRebalance = null;
        const now = group.members.get(m.memberId);
        if (now?.memberEpoch === epoch && now.state === 'UNREVOKED_PARTITIONS') {
          this.fence(
            group,
            m.memberId,
            'the member failed to revoke partitions within the rebalance timeout',
          );
          this.ctx.afterTimer(group);
        }
      },
    );
  }

  private cancelRebalanceTimer(group: ConsumerGroup, memberId: string): void {
    const t = group.timers.get(memberId);
    t?.cancelRebalance?.();
    if (t !== undefined) t.cancelRebalance = null;
  }
}

function isSubset(owned: OwnedPartitions, assigned: Assignment): boolean {
  if (owned === null) return false;
  for (const t of owned) {
    const parts = assigned.get(t.topicId);
    if (parts === undefined) return false;
    for (const p of t.partitions) if (!parts.has(p)) return false;
  }
  return true;
}
