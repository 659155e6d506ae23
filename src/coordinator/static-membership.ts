/**
 * KIP-345 static membership: a member with a known group.instance.id that joins without a member
 * id (typically the same instance after a restart) takes over the old member id's place, its
 * assignment and, if it led, the leadership. In a Stable group whose selected protocol would not
 * change this costs no rebalance, only a metadata write; otherwise the group rebalances.
 * A helper of Membership, called with the group already validated.
 */
import { ErrorCode } from '../protocol/generated/errors.js';
import { type ClassicGroup, type JoinResult, joinError } from './group.js';
import type { JoinParams, Membership, MembershipContext } from './membership.js';

/**
 * A static member (known group.instance.id) joined without a member id: typically a restarted
 * instance. It takes over the old member id's place; in a Stable group whose protocol would not
 * change, without a rebalance (KIP-345), once the new id is persisted.
 */
export function rejoinStaticMember(
  ctx: MembershipContext,
  membership: Membership,
  group: ClassicGroup,
  oldMemberId: string,
  newMemberId: string,
  p: JoinParams,
  respond: (r: JoinResult) => void,
): void {
  const currentLeader = group.leaderId ?? '';
  const oldMember = group.members.get(oldMemberId)!;
  const old = {
    protocols: oldMember.protocols,
    rebalanceTimeoutMs: oldMember.rebalanceTimeoutMs,
    sessionTimeoutMs: oldMember.sessionTimeoutMs,
  };
  const member = group.replaceStaticMember(oldMemberId, newMemberId);
  member.protocols = p.protocols;
  member.rebalanceTimeoutMs = p.rebalanceTimeoutMs;
  member.sessionTimeoutMs = p.sessionTimeoutMs;
  member.clientId = p.clientId;
  member.clientHost = p.clientHost;
  membership.scheduleHeartbeat(group, member, member.sessionTimeoutMs);
  ctx.logger.info(
    `group ${group.groupId}: static member ${p.groupInstanceId} rejoined; member id ${oldMemberId} replaced by ${newMemberId}`,
  );
  switch (group.state) {
    case 'Stable': {
      if (group.selectProtocol() !== group.protocolName) {
        group.setAwaitingJoin(member, respond);
        membership.prepareRebalance(
          group,
          `static member ${p.groupInstanceId} changed the selected protocol`,
        );
        return;
      }
      const generationId = group.generationId;
      const assignment = new Map([...group.members.values()].map((m) => [m.memberId, m.assignment]));
      void ctx.storeGroup(group, assignment).then((error) => {
        if (error !== ErrorCode.NONE) {
          ctx.logger.warn(
            `group ${group.groupId}: could not persist static member ${newMemberId}: error ${error}`,
          );
          if (group.members.get(newMemberId) === member && !group.is('Dead')) {
            group.replaceStaticMember(newMemberId, oldMemberId);
            Object.assign(member, old);
            membership.scheduleHeartbeat(group, member, member.sessionTimeoutMs);
          }
          respond(joinError('', error));
          return;
        }
        const isLeader = group.isLeader(newMemberId);
        const skip = isLeader && p.supportSkippingAssignment;
        respond({
          errorCode: ErrorCode.NONE,
          memberId: newMemberId,
          generationId,
          protocolName: group.protocolName,
          // An old client that was leader must not think it still is: it would compute an
          // assignment that a Stable group never distributes. v9+ leaders are told to skip it.
          leaderId: skip ? newMemberId : currentLeader,
          members: skip ? group.currentMemberMetadata() : [],
          skipAssignment: skip,
        });
      });
      return;
    }
    case 'CompletingRebalance':
      // The leader may already be assigning to the old member id; start over so the new id gets an assignment.
      group.setAwaitingJoin(member, respond);
      membership.prepareRebalance(
        group,
        `static member ${p.groupInstanceId} rejoined during CompletingRebalance`,
      );
      return;
    case 'PreparingRebalance':
      group.setAwaitingJoin(member, respond);
      return;
    default:
      throw new Error(`group ${group.groupId}: static member rejoined in state ${group.state}`);
  }
}
