/**
 * Session timeouts of group members: one self-re-arming timer per member watches its heartbeat
 * deadline, so a heartbeat costs an assignment instead of a cancel and a reschedule. Owned by
 * Membership; `onExpire` is called for a member whose deadline passed while it was not parked
 * in a rebalance (parked members are bounded by the rebalance timeout instead, as in Kafka).
 */
import type { Clock } from '../common/clock.js';
import type { Scheduler } from '../common/scheduler.js';
import type { ClassicGroup, MemberMetadata } from './group.js';

export class SessionTimers {
  constructor(
    private readonly clock: Clock,
    private readonly scheduler: Scheduler,
    private readonly onExpire: (group: ClassicGroup, member: MemberMetadata, reason: string) => void,
  ) {}

  /** Records a sign of life and makes sure one timer watches the new deadline. */
  schedule(group: ClassicGroup, member: MemberMetadata, timeoutMs: number): void {
    const deadlineMs = this.clock.nowMs() + timeoutMs;
    const shortened = deadlineMs < member.heartbeatDeadlineMs;
    member.heartbeatDeadlineMs = deadlineMs;
    // One outstanding timer per member that re-arms itself is cheaper than cancelling and
    // rescheduling on every heartbeat; only a shorter deadline needs a new timer.
    if (member.cancelHeartbeatTimer !== null && !shortened) return;
    member.cancelHeartbeatTimer?.();
    this.arm(group, member, timeoutMs);
  }

  private arm(group: ClassicGroup, member: MemberMetadata, delayMs: number): void {
    member.cancelHeartbeatTimer = this.scheduler.schedule(
      `heartbeat ${group.groupId}/${member.memberId}`,
      Math.max(delayMs, 0),
      () => {
        member.cancelHeartbeatTimer = null;
        this.onTimer(group, member);
      },
    );
  }

  private onTimer(group: ClassicGroup, member: MemberMetadata): void {
    if (group.members.get(member.memberId) !== member) return;
    const now = this.clock.nowMs();
    const expired = now >= member.heartbeatDeadlineMs;
    if (!member.isNew && (member.awaitingJoin !== null || member.awaitingSync !== null)) {
      // Parked in a rebalance: the rebalance timeout, not the session, decides; look again later.
      member.heartbeatDeadlineMs = now + member.sessionTimeoutMs;
      this.arm(group, member, member.sessionTimeoutMs);
    } else if (expired) {
      this.onExpire(
        group,
        member,
        member.isNew ? 'new member did not complete its join in time' : 'session timeout expired',
      );
    } else {
      this.arm(group, member, member.heartbeatDeadlineMs - now);
    }
  }

  cancel(member: MemberMetadata): void {
    member.cancelHeartbeatTimer?.();
    member.cancelHeartbeatTimer = null;
  }
}
