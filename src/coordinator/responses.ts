/**
 * Response bodies shaped for the request's version: the generated encoders refuse a value in a
 * field the version does not have, and a null where the version has no null, so every
 * version-dependent choice is made here rather than scattered through the coordinator.
 */
import type { DescribedGroup as DescribedConsumerGroup } from '../protocol/generated/ConsumerGroupDescribeResponse.js';
import type { ConsumerGroupHeartbeatResponse } from '../protocol/generated/ConsumerGroupHeartbeatResponse.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import type { JoinGroupResponse } from '../protocol/generated/JoinGroupResponse.js';
import type { LeaveGroupResponse } from '../protocol/generated/LeaveGroupResponse.js';
import type { OffsetFetchResponsePartition } from '../protocol/generated/OffsetFetchResponse.js';
import type { SyncGroupResponse } from '../protocol/generated/SyncGroupResponse.js';
import type { JoinResult } from './group.js';

const EMPTY = Buffer.alloc(0);

export function join(version: number, memberId: string, errorCode: number): JoinGroupResponse {
  return joinResult(
    version,
    {
      errorCode,
      memberId,
      generationId: -1,
      protocolName: null,
      leaderId: '',
      members: [],
      skipAssignment: false,
    },
    null,
  );
}

export function joinResult(version: number, r: JoinResult, protocolType: string | null): JoinGroupResponse {
  const ok = r.errorCode === ErrorCode.NONE;
  return {
    throttleTimeMs: 0,
    errorCode: r.errorCode,
    generationId: r.generationId,
    // Before v7 neither field is nullable (and protocolType is not sent at all).
    protocolType: version >= 7 ? (ok ? protocolType : null) : null,
    protocolName: version >= 7 ? r.protocolName : (r.protocolName ?? ''),
    leader: r.leaderId,
    skipAssignment: version >= 9 ? r.skipAssignment : false,
    memberId: r.memberId,
    members: r.members.map((m) => ({
      memberId: m.memberId,
      groupInstanceId: version >= 5 ? m.groupInstanceId : null,
      metadata: m.metadata,
    })),
  };
}

export function sync(
  version: number,
  errorCode: number,
  assignment: Buffer = EMPTY,
  protocolType: string | null = null,
  protocolName: string | null = null,
): SyncGroupResponse {
  const ok = errorCode === ErrorCode.NONE;
  return {
    throttleTimeMs: 0,
    errorCode,
    protocolType: version >= 5 && ok ? protocolType : null,
    protocolName: version >= 5 && ok ? protocolName : null,
    assignment: ok ? assignment : EMPTY,
  };
}

/**
 * v0-v2 leave one member and report its error at the top level; v3+ report per member, the top
 * level only for errors that concern the whole request (coordinator errors).
 */
export function leave(
  version: number,
  topLevel: number,
  members: { memberId: string; groupInstanceId: string | null }[],
  memberErrors: number[],
): LeaveGroupResponse {
  if (version < 3) {
    return {
      throttleTimeMs: 0,
      errorCode: topLevel !== ErrorCode.NONE ? topLevel : (memberErrors[0] ?? ErrorCode.NONE),
      members: [],
    };
  }
  return {
    throttleTimeMs: 0,
    errorCode: topLevel,
    members:
      topLevel !== ErrorCode.NONE
        ? []
        : members.map((m, i) => ({
            memberId: m.memberId,
            groupInstanceId: m.groupInstanceId,
            errorCode: memberErrors[i]!,
          })),
  };
}

/** OffsetFetch partitions before v5 have no leader epoch. */
export function fetchPartition(
  version: number,
  p: OffsetFetchResponsePartition,
): OffsetFetchResponsePartition {
  return version >= 5 ? p : { ...p, committedLeaderEpoch: -1 };
}

/** A ConsumerGroupHeartbeat refused as a whole. */
export function consumerGroupHeartbeatError(
  errorCode: number,
  errorMessage: string | null,
): ConsumerGroupHeartbeatResponse {
  return {
    throttleTimeMs: 0,
    errorCode,
    errorMessage,
    memberId: null,
    memberEpoch: 0,
    heartbeatIntervalMs: 0,
    assignment: null,
  };
}

/** A group of ConsumerGroupDescribe with nothing to describe but an error (NONE: fill in the rest). */
export function describedConsumerGroup(
  groupId: string,
  errorCode: number,
  errorMessage: string | null = null,
): DescribedConsumerGroup {
  return {
    errorCode,
    errorMessage,
    groupId,
    groupState: '',
    groupEpoch: 0,
    assignmentEpoch: 0,
    assignorName: '',
    members: [],
    authorizedOperations: -2147483648,
  };
}
