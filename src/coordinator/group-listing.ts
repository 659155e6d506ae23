/**
 * ListGroups and DescribeGroups answers over the coordinator's groups of both protocols, as
 * Kafka's GroupMetadataManager.listGroups / describeGroups build them. Pure: the coordinator
 * passes the groups and their serving status in.
 */
import type { DescribedGroup } from '../protocol/generated/DescribeGroupsResponse.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import type { ListGroupsRequest } from '../protocol/generated/ListGroupsRequest.js';
import type { ListGroupsResponse } from '../protocol/generated/ListGroupsResponse.js';
import { CONSUMER_PROTOCOL_TYPE } from './consumer-protocol.js';
import type { ClassicGroup } from './group.js';

/** The groups matching the request's state and type filters (v4 and v5), with their type and state. */
export function listGroups(
  v: number,
  req: ListGroupsRequest,
  groups: Iterable<ClassicGroup>,
  loading: boolean,
): ListGroupsResponse {
  const states =
    v >= 4 && req.statesFilter.length > 0 ? new Set(req.statesFilter.map((s) => s.toLowerCase())) : null;
  const types =
    v >= 5 && req.typesFilter.length > 0 ? new Set(req.typesFilter.map((s) => s.toLowerCase())) : null;
  const listed = [...groups]
    .filter((g) => !g.is('Dead'))
    .map((g) => {
      const consumer = g.consumer !== null;
      return {
        groupId: g.groupId,
        // Kafka lists a consumer group with the consumer protocol's type.
        protocolType: consumer ? CONSUMER_PROTOCOL_TYPE : (g.protocolType ?? ''),
        groupState: g.consumer?.state ?? g.state,
        groupType: consumer ? 'consumer' : 'classic',
      };
    })
    .filter(
      (g) =>
        (states === null || states.has(g.groupState.toLowerCase())) &&
        (types === null || types.has(g.groupType)),
    )
    .map((g) => ({ ...g, groupState: v >= 4 ? g.groupState : '', groupType: v >= 5 ? g.groupType : '' }));
  return {
    throttleTimeMs: 0,
    errorCode: loading ? ErrorCode.COORDINATOR_LOAD_IN_PROGRESS : ErrorCode.NONE,
    groups: listed,
  };
}

/** One group as DescribeGroups answers it; `status` is NONE or why it is not served here. */
export function describeGroup(
  v: number,
  groupId: string,
  status: number,
  group: ClassicGroup | undefined,
): DescribedGroup {
  const base = {
    groupId,
    protocolType: '',
    protocolData: '',
    members: [],
    authorizedOperations: -2147483648,
  };
  if (status !== ErrorCode.NONE) return { ...base, errorCode: status, groupState: '' };
  // DescribeGroups describes classic groups; Kafka answers Dead for a consumer group before v6.
  if (group === undefined || group.consumer !== null)
    return { ...base, errorCode: ErrorCode.NONE, groupState: 'Dead' };
  // Member metadata and assignments are only meaningful once the generation's assignment is in.
  const stable = group.is('Stable') && group.protocolName !== null;
  return {
    ...base,
    errorCode: ErrorCode.NONE,
    groupState: group.state,
    protocolType: group.protocolType ?? '',
    protocolData: stable ? group.protocolName! : '',
    members: [...group.members.values()].map((m) => ({
      memberId: m.memberId,
      groupInstanceId: v >= 4 ? m.groupInstanceId : null,
      clientId: m.clientId,
      clientHost: m.clientHost,
      memberMetadata: stable ? m.metadataFor(group.protocolName!) : Buffer.alloc(0),
      memberAssignment: stable ? m.assignment : Buffer.alloc(0),
    })),
  };
}
