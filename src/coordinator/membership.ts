/**
 * The classic rebalance protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the timers that
 * drive them (initial rebalance delay, rebalance timeout, session timeouts, pending-sync timeout),
 * following Kafka's GroupCoordinator. Owned by the GroupCoordinator, which looks groups up,
 * checks ownership of their __consumer_offsets partition and passes a live group in; this class
 * never reads the OS clock and never touches the log except through `storeGroup`.
 */

import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import type { GroupCoordinatorConfig } from './config.js';
import {
  type ClassicGroup,
  type JoinResult,
  joinError,
  MemberMetadata,
  type Protocol,
  type SyncResult,
} from './group.js';
import { SessionTimers } from './session-timers.js';
import { rejoinStaticMember } from './static-membership.js';

/** What the rebalance logic needs from its owner. */
export interface MembershipContext {
  readonly config: GroupCoordinatorConfig;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly logger: Logger;
  /** A fresh member id: `${prefix}-${uuid}` as Kafka builds them. */
  newMemberId(prefix: string): string;
  /** Writes the group's metadata record; resolves to NONE or the Kafka error to answer with. Never rejects. */
  storeGroup(group: ClassicGroup, assignment: ReadonlyMap<string, Buffer>): Promise<number>;
}

export interface JoinParams {
  memberId: string;
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  rebalanceTimeoutMs: number;
  sessionTimeoutMs: number;
  protocolType: string;
  protocols: Protocol[];
  /** JoinGroup v4+: a dynamic member without an id gets MEMBER_ID_REQUIRED and a fresh id. */
  requireKnownMemberId: boolean;
  /** JoinGroup v9+: a replaced static leader can be told to skip the assignment. */
  supportSkippingAssignment: boolean;
  reason: string | null;
}

export interface SyncParams {
  memberId: string;
  groupInstanceId: string | null;
  generationId: number;
  protocolType: string | null;
  protocolName: string | null;
  assignments: { memberId: string; assignment: Buffer }[];
}

const EMPTY = Buffer.alloc(0);

export class Membership {
  private readonly timers: SessionTimers;

  constructor(private readonly ctx: MembershipContext) {
    this.timers = new SessionTimers(ctx.clock, ctx.scheduler, (group, member, reason) =>
      this.removeMemberAndUpdateGroup(group, member, reason),
    );
  }

  private now(): number {
    return this.ctx.clock.nowMs();
  }

  // ---- JoinGroup ----------------------------------------------------------------------------

  join(group: ClassicGroup, p: JoinParams): Promise<JoinResult> {
    return new Promise((resolve) => {
      this.doJoin(group, p, resolve);
      this.tryCompleteJoin(group);
    });
  }

  private doJoin(group: ClassicGroup, p: JoinParams, respond: (r: JoinResult) => void): void {
    const isUnknown = p.memberId === '';
    const existing = group.members.get(p.memberId);
    const overCapacity = group.size > this.ctx.config.groupMaxSize;
    // A static member rejoining under a new member id takes its own place: it adds no one.
    const isNewcomer = isUnknown && group.staticMemberId(p.groupInstanceId) === undefined;
    if (
      (overCapacity && existing !== undefined && existing.awaitingJoin === null) ||
      (isNewcomer && group.size + group.pendingMembers.size >= this.ctx.config.groupMaxSize)
    ) {
      if (existing !== undefined) this.removeMemberAndUpdateGroup(group, existing, 'group over capacity');
      respond(joinError('', ErrorCode.GROUP_MAX_SIZE_REACHED));
      return;
    }
    if (group.is('Dead')) {
      respond(joinError(p.memberId, ErrorCode.COORDINATOR_NOT_AVAILABLE));
    } else if (!group.supportsProtocols(p.protocolType, p.protocols)) {
      respond(joinError(p.memberId, ErrorCode.INCONSISTENT_GROUP_PROTOCOL));
    } else if (isUnknown) {
      this.doUnknownJoin(group, p, respond);
    } else {
      this.doCurrentMemberJoin(group, p, respond);
    }
  }

  private doUnknownJoin(group: ClassicGroup, p: JoinParams, respond: (r: JoinResult) => void): void {
    const newMemberId = this.ctx.newMemberId(p.groupInstanceId ?? p.clientId);
    const oldMemberId = group.staticMemberId(p.groupInstanceId);
    if (oldMemberId !== undefined) {
      rejoinStaticMember(this.ctx, this, group, oldMemberId, newMemberId, p, respond);
    } else if (p.requireKnownMemberId && p.groupInstanceId === null) {
      // The id travels back to the client first, so a client that gives up before its second
      // JoinGroup never becomes a member; the pending id expires after one session timeout.
      const cancel = this.ctx.scheduler.schedule(`pending-member ${newMemberId}`, p.sessionTimeoutMs, () =>
        this.onExpirePendingMember(group, newMemberId),
      );
      group.pendingMembers.set(newMemberId, cancel);
      respond(joinError(newMemberId, ErrorCode.MEMBER_ID_REQUIRED));
    } else {
      this.addMemberAndRebalance(group, newMemberId, p, respond);
    }
  }

  private doCurrentMemberJoin(group: ClassicGroup, p: JoinParams, respond: (r: JoinResult) => void): void {
    const cancelPending = group.pendingMembers.get(p.memberId);
    if (cancelPending !== undefined) {
      cancelPending();
      group.pendingMembers.delete(p.memberId);
      this.addMemberAndRebalance(group, p.memberId, p, respond);
      return;
    }
    const error = validateCurrentMember(group, p.memberId, p.groupInstanceId);
    if (error !== ErrorCode.NONE) {
      respond(joinError(p.memberId, error));
      return;
    }
    const member = group.members.get(p.memberId)!;
    switch (group.state) {
      case 'PreparingRebalance':
        this.updateMemberAndRebalance(group, member, p, respond);
        return;
      case 'CompletingRebalance':
        // Same metadata: most likely the JoinGroup response was lost, so repeat it.
        if (member.matches(p.protocols))
          respond(this.currentJoinResult(group, member, group.isLeader(member.memberId)));
        else this.updateMemberAndRebalance(group, member, p, respond);
        return;
      case 'Stable':
        // A leader's rejoin forces a rebalance: it is how a consumer reacts to metadata changes
        // (new partitions, a regex matching a new topic) that do not change its own subscription.
        if (group.isLeader(member.memberId) || !member.matches(p.protocols)) {
          this.updateMemberAndRebalance(group, member, p, respond);
        } else {
          respond(this.currentJoinResult(group, member, false));
        }
        return;
      default:
        respond(joinError(p.memberId, ErrorCode.UNKNOWN_MEMBER_ID));
    }
  }

  private currentJoinResult(group: ClassicGroup, member: MemberMetadata, withMembers: boolean): JoinResult {
    return {
      errorCode: ErrorCode.NONE,
      memberId: member.memberId,
      generationId: group.generationId,
      protocolName: group.protocolName,
      leaderId: group.leaderId ?? '',
      members: withMembers ? group.currentMemberMetadata() : [],
      skipAssignment: false,
    };
  }

  private addMemberAndRebalance(
    group: ClassicGroup,
    memberId: string,
    p: JoinParams,
    respond: (r: JoinResult) => void,
  ): void {
    const member = new MemberMetadata(
      memberId,
      p.groupInstanceId,
      p.clientId,
      p.clientHost,
      p.rebalanceTimeoutMs,
      p.sessionTimeoutMs,
      p.protocolType,
      p.protocols,
    );
    member.isNew = true;
    if (group.is('PreparingRebalance') && group.inInitialDelay) group.newMemberAdded = true;
    group.add(member, respond);
    // A new member cannot heartbeat while its JoinGroup is parked; bound how long it may sit there.
    this.scheduleHeartbeat(group, member, this.ctx.config.newMemberJoinTimeoutMs);
    this.maybePrepareRebalance(group, `adding new member ${memberId}${reasonSuffix(p.reason)}`);
  }

  private updateMemberAndRebalance(
    group: ClassicGroup,
    member: MemberMetadata,
    p: JoinParams,
    respond: (r: JoinResult) => void,
  ): void {
    // A second JoinGroup while one is parked (a client that timed out and retried): the first
    // one is answered now, so no request is left unanswered.
    member.awaitingJoin?.(joinError(member.memberId, ErrorCode.REBALANCE_IN_PROGRESS));
    member.protocols = p.protocols;
    member.rebalanceTimeoutMs = p.rebalanceTimeoutMs;
    member.sessionTimeoutMs = p.sessionTimeoutMs;
    group.setAwaitingJoin(member, respond);
    this.maybePrepareRebalance(group, `member ${member.memberId} rejoined${reasonSuffix(p.reason)}`);
  }

  private onExpirePendingMember(group: ClassicGroup, memberId: string): void {
    if (!group.pendingMembers.delete(memberId)) return;
    this.ctx.logger.info(`group ${group.groupId}: pending member ${memberId} expired before rejoining`);
    this.tryCompleteJoin(group);
  }

  // ---- Rebalance phases ---------------------------------------------------------------------

  private maybePrepareRebalance(group: ClassicGroup, reason: string): void {
    if (group.is('Stable') || group.is('CompletingRebalance') || group.is('Empty')) {
      this.prepareRebalance(group, reason);
    }
  }

  prepareRebalance(group: ClassicGroup, reason: string): void {
    if (group.is('CompletingRebalance'))
      this.resetAndPropagateAssignmentError(group, ErrorCode.REBALANCE_IN_PROGRESS);
    this.cancelSyncTimer(group);
    group.pendingSyncMembers.clear();
    this.cancelJoinTimer(group);
    const initialDelayMs = this.ctx.config.groupInitialRebalanceDelayMs;
    if (group.is('Empty')) {
      // The first generation of an empty group waits a little for more members, so that a
      // fleet of consumers starting together costs one rebalance instead of one per member.
      group.inInitialDelay = true;
      group.newMemberAdded = false;
      const remainingMs = Math.max(group.rebalanceTimeoutMs - initialDelayMs, 0);
      this.scheduleInitialDelay(group, initialDelayMs, remainingMs);
    } else {
      group.cancelJoinTimer = this.ctx.scheduler.schedule(
        `join ${group.groupId}`,
        group.rebalanceTimeoutMs,
        () => this.onJoinTimeout(group),
      );
    }
    group.transitionTo('PreparingRebalance', this.now());
    this.ctx.logger.info(
      `group ${group.groupId}: preparing to rebalance, old generation ${group.generationId} (__consumer_offsets-${group.partition}) (reason: ${reason})`,
    );
    this.tryCompleteJoin(group);
  }

  private scheduleInitialDelay(group: ClassicGroup, delayMs: number, remainingMs: number): void {
    group.cancelJoinTimer = this.ctx.scheduler.schedule(`initial-join ${group.groupId}`, delayMs, () => {
      group.cancelJoinTimer = null;
      if (!group.is('PreparingRebalance')) return;
      const initialDelayMs = this.ctx.config.groupInitialRebalanceDelayMs;
      if (group.newMemberAdded && remainingMs > 0) {
        group.newMemberAdded = false;
        this.scheduleInitialDelay(
          group,
          Math.min(initialDelayMs, remainingMs),
          Math.max(remainingMs - initialDelayMs, 0),
        );
      } else {
        group.inInitialDelay = false;
        this.completeJoin(group);
      }
    });
  }

  private onJoinTimeout(group: ClassicGroup): void {
    group.cancelJoinTimer = null;
    if (group.is('PreparingRebalance')) this.completeJoin(group);
  }

  tryCompleteJoin(group: ClassicGroup): void {
    if (group.is('PreparingRebalance') && !group.inInitialDelay && group.hasAllMembersJoined()) {
      this.completeJoin(group);
    }
  }

  private completeJoin(group: ClassicGroup): void {
    this.cancelJoinTimer(group);
    group.inInitialDelay = false;
    // Dynamic members that did not rejoin within the rebalance timeout are gone; static members
    // keep their place (they may be restarting) and are left to their session timeout.
    for (const m of group.notYetRejoinedMembers()) {
      if (m.isStatic) continue;
      this.cancelHeartbeat(m);
      group.remove(m.memberId);
    }
    if (group.is('Dead')) return;
    if (!group.maybeElectNewJoinedLeader() && group.size > 0) {
      // Only static members that did not rejoin are left: wait another rebalance timeout.
      this.ctx.logger.warn(`group ${group.groupId}: no member rejoined; waiting another rebalance timeout`);
      group.cancelJoinTimer = this.ctx.scheduler.schedule(
        `join ${group.groupId}`,
        group.rebalanceTimeoutMs,
        () => this.onJoinTimeout(group),
      );
      return;
    }
    group.initNextGeneration(this.now());
    if (group.is('Empty')) {
      this.ctx.logger.info(`group ${group.groupId}: generation ${group.generationId} is empty`);
      // If this write is lost, a replay brings back the previous generation, whose members then
      // time out; there is no one to tell, so a failure is only logged (as Kafka does).
      void this.ctx.storeGroup(group, new Map()).then((error) => {
        if (error !== ErrorCode.NONE) {
          this.ctx.logger.warn(
            `group ${group.groupId}: could not write empty group metadata: error ${error}`,
          );
        }
      });
      return;
    }
    this.ctx.logger.info(
      `group ${group.groupId}: generation ${group.generationId} with ${group.size} members, protocol ${group.protocolName}`,
    );
    for (const m of group.members.values()) {
      const respond = m.awaitingJoin;
      group.setAwaitingJoin(m, null);
      respond?.(this.currentJoinResult(group, m, group.isLeader(m.memberId)));
      this.scheduleHeartbeat(group, m, m.sessionTimeoutMs);
      m.isNew = false;
      group.pendingSyncMembers.add(m.memberId);
    }
    // Members that never send SyncGroup would leave the others waiting forever for an assignment.
    const generationId = group.generationId;
    group.cancelSyncTimer = this.ctx.scheduler.schedule(
      `sync ${group.groupId}`,
      group.rebalanceTimeoutMs,
      () => this.onExpirePendingSync(group, generationId),
    );
  }

  private onExpirePendingSync(group: ClassicGroup, generationId: number): void {
    group.cancelSyncTimer = null;
    if (generationId !== group.generationId) return;
    if (!(group.is('CompletingRebalance') || group.is('Stable')) || group.pendingSyncMembers.size === 0)
      return;
    const missing = [...group.pendingSyncMembers];
    this.ctx.logger.info(
      `group ${group.groupId}: members ${missing.join(', ')} sent no SyncGroup; removing them`,
    );
    for (const id of missing) {
      const m = group.members.get(id);
      if (m !== undefined) {
        this.cancelHeartbeat(m);
        m.awaitingSync?.({ errorCode: ErrorCode.UNKNOWN_MEMBER_ID, assignment: EMPTY });
        m.awaitingSync = null;
        group.remove(id);
      }
    }
    this.prepareRebalance(group, 'members missed the SyncGroup deadline');
  }

  private resetAndPropagateAssignmentError(group: ClassicGroup, errorCode: number): void {
    for (const m of group.members.values()) m.assignment = EMPTY;
    this.propagateAssignment(group, errorCode);
  }

  private propagateAssignment(group: ClassicGroup, errorCode: number): void {
    for (const m of group.members.values()) {
      const respond = m.awaitingSync;
      if (respond === null) continue;
      m.awaitingSync = null;
      respond({ errorCode, assignment: m.assignment });
      // Expirations were not acted on while the member waited for the assignment; restart its session now.
      this.scheduleHeartbeat(group, m, m.sessionTimeoutMs);
    }
  }

  // ---- SyncGroup ----------------------------------------------------------------------------

  sync(group: ClassicGroup, p: SyncParams): Promise<SyncResult> {
    return new Promise((resolve) => this.doSync(group, p, resolve));
  }

  private doSync(group: ClassicGroup, p: SyncParams, respond: (r: SyncResult) => void): void {
    const error = validateSync(group, p);
    if (error !== ErrorCode.NONE) {
      respond({ errorCode: error, assignment: EMPTY });
      return;
    }
    const member = group.members.get(p.memberId)!;
    switch (group.state) {
      case 'Empty':
        respond({ errorCode: ErrorCode.UNKNOWN_MEMBER_ID, assignment: EMPTY });
        return;
      case 'PreparingRebalance':
        respond({ errorCode: ErrorCode.REBALANCE_IN_PROGRESS, assignment: EMPTY });
        return;
      case 'CompletingRebalance':
        member.awaitingSync?.({ errorCode: ErrorCode.REBALANCE_IN_PROGRESS, assignment: EMPTY });
        member.awaitingSync = respond;
        this.removePendingSyncMember(group, member.memberId);
        if (group.isLeader(member.memberId)) this.storeLeaderAssignment(group, p);
        return;
      case 'Stable':
        this.removePendingSyncMember(group, member.memberId);
        respond({ errorCode: ErrorCode.NONE, assignment: member.assignment });
        this.scheduleHeartbeat(group, member, member.sessionTimeoutMs);
        return;
      default:
        respond({ errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, assignment: EMPTY });
    }
  }

  private storeLeaderAssignment(group: ClassicGroup, p: SyncParams): void {
    const given = new Map(p.assignments.map((a) => [a.memberId, a.assignment]));
    const assignment = new Map<string, Buffer>();
    for (const id of group.members.keys()) assignment.set(id, Buffer.from(given.get(id) ?? EMPTY));
    const generationId = group.generationId;
    this.ctx.logger.info(
      `group ${group.groupId}: assignment received from leader ${p.memberId} for generation ${generationId}`,
    );
    void this.ctx.storeGroup(group, assignment).then((error) => {
      // A member may have joined or left while the record was written; then this generation is over.
      if (!group.is('CompletingRebalance') || group.generationId !== generationId) return;
      if (error !== ErrorCode.NONE) {
        this.resetAndPropagateAssignmentError(group, error);
        this.maybePrepareRebalance(group, `error ${error} storing the assignment`);
        return;
      }
      for (const m of group.members.values()) m.assignment = assignment.get(m.memberId) ?? EMPTY;
      this.propagateAssignment(group, ErrorCode.NONE);
      group.transitionTo('Stable', this.now());
    });
  }

  private removePendingSyncMember(group: ClassicGroup, memberId: string): void {
    group.pendingSyncMembers.delete(memberId);
    if (group.pendingSyncMembers.size === 0) this.cancelSyncTimer(group);
  }

  // ---- Heartbeat and LeaveGroup -------------------------------------------------------------

  heartbeat(
    group: ClassicGroup,
    memberId: string,
    groupInstanceId: string | null,
    generationId: number,
  ): number {
    if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const error = validateCurrentMember(group, memberId, groupInstanceId);
    if (error !== ErrorCode.NONE) return error;
    if (generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION;
    const member = group.members.get(memberId)!;
    switch (group.state) {
      case 'Empty':
        return ErrorCode.UNKNOWN_MEMBER_ID;
      case 'CompletingRebalance':
      case 'Stable':
        this.scheduleHeartbeat(group, member, member.sessionTimeoutMs);
        return ErrorCode.NONE;
      case 'PreparingRebalance':
        this.scheduleHeartbeat(group, member, member.sessionTimeoutMs);
        return ErrorCode.REBALANCE_IN_PROGRESS;
      default:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    }
  }

  /** One member of a LeaveGroup; a member id of "" names a static member by its instance id alone. */
  leave(
    group: ClassicGroup,
    memberId: string,
    groupInstanceId: string | null,
    reason: string | null,
  ): number {
    const why = `left the group${reasonSuffix(reason)}`;
    if (memberId === '') {
      const current = group.staticMemberId(groupInstanceId);
      if (current === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
      this.removeMemberAndUpdateGroup(group, group.members.get(current)!, why);
      return ErrorCode.NONE;
    }
    const cancelPending = group.pendingMembers.get(memberId);
    if (cancelPending !== undefined) {
      cancelPending();
      group.pendingMembers.delete(memberId);
      this.tryCompleteJoin(group);
      return ErrorCode.NONE;
    }
    const error = validateCurrentMember(group, memberId, groupInstanceId);
    if (error !== ErrorCode.NONE) return error;
    this.removeMemberAndUpdateGroup(group, group.members.get(memberId)!, why);
    return ErrorCode.NONE;
  }

  removeMemberAndUpdateGroup(group: ClassicGroup, member: MemberMetadata, reason: string): void {
    this.ctx.logger.info(`group ${group.groupId}: removing member ${member.memberId} (${reason})`);
    // Parked requests of a removed member are answered, so that the client rejoins instead of waiting.
    const join = member.awaitingJoin;
    group.setAwaitingJoin(member, null);
    join?.(joinError('', ErrorCode.UNKNOWN_MEMBER_ID));
    member.awaitingSync?.({ errorCode: ErrorCode.UNKNOWN_MEMBER_ID, assignment: EMPTY });
    member.awaitingSync = null;
    this.cancelHeartbeat(member);
    group.remove(member.memberId);
    if (group.is('Stable') || group.is('CompletingRebalance')) this.prepareRebalance(group, reason);
    else if (group.is('PreparingRebalance')) this.tryCompleteJoin(group);
  }

  // ---- Timers -------------------------------------------------------------------------------

  /** Records a sign of life of a member; it is removed if the next one is later than `timeoutMs`. */
  scheduleHeartbeat(group: ClassicGroup, member: MemberMetadata, timeoutMs: number): void {
    this.timers.schedule(group, member, timeoutMs);
  }

  cancelHeartbeat(member: MemberMetadata): void {
    this.timers.cancel(member);
  }

  private cancelJoinTimer(group: ClassicGroup): void {
    group.cancelJoinTimer?.();
    group.cancelJoinTimer = null;
  }

  private cancelSyncTimer(group: ClassicGroup): void {
    group.cancelSyncTimer?.();
    group.cancelSyncTimer = null;
  }

  /** Drops every timer and answers every parked request of a group that is being unloaded. */
  shutdownGroup(group: ClassicGroup, errorCode: number): void {
    this.cancelJoinTimer(group);
    this.cancelSyncTimer(group);
    for (const cancel of group.pendingMembers.values()) cancel();
    group.pendingMembers.clear();
    for (const m of group.members.values()) {
      this.cancelHeartbeat(m);
      const join = m.awaitingJoin;
      group.setAwaitingJoin(m, null);
      join?.(joinError(m.memberId, errorCode));
      m.awaitingSync?.({ errorCode, assignment: EMPTY });
      m.awaitingSync = null;
    }
  }
}

/** If a group.instance.id is given it must be held by this member id; the member id must be known. */
export function validateCurrentMember(
  group: ClassicGroup,
  memberId: string,
  groupInstanceId: string | null,
): number {
  if (groupInstanceId !== null) {
    const current = group.staticMemberId(groupInstanceId);
    if (current === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
    if (current !== memberId) return ErrorCode.FENCED_INSTANCE_ID;
  }
  return group.has(memberId) ? ErrorCode.NONE : ErrorCode.UNKNOWN_MEMBER_ID;
}

function validateSync(group: ClassicGroup, p: SyncParams): number {
  if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
  const error = validateCurrentMember(group, p.memberId, p.groupInstanceId);
  if (error !== ErrorCode.NONE) return error;
  if (p.generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION;
  if (p.protocolType !== null && p.protocolType !== group.protocolType)
    return ErrorCode.INCONSISTENT_GROUP_PROTOCOL;
  if (p.protocolName !== null && p.protocolName !== group.protocolName)
    return ErrorCode.INCONSISTENT_GROUP_PROTOCOL;
  return ErrorCode.NONE;
}

function reasonSuffix(reason: string | null): string {
  return reason === null || reason === '' ? '' : `; client reason: ${reason}`;
}
