/**
 * The seam between the request router and the group coordinator (src/coordinator, written
 * separately). One method per consumer-group API: it takes the decoded request body and resolves
 * to the response body at the same version. The router routes these APIs only when a GroupApi
 * is plugged into the broker, and ApiVersions lists them only then, with the versions below.
 */
import type { ConsumerGroupDescribeRequest } from '../protocol/generated/ConsumerGroupDescribeRequest.js';
import type { ConsumerGroupDescribeResponse } from '../protocol/generated/ConsumerGroupDescribeResponse.js';
import type { ConsumerGroupHeartbeatRequest } from '../protocol/generated/ConsumerGroupHeartbeatRequest.js';
import type { ConsumerGroupHeartbeatResponse } from '../protocol/generated/ConsumerGroupHeartbeatResponse.js';
import type { DeleteGroupsRequest } from '../protocol/generated/DeleteGroupsRequest.js';
import type { DeleteGroupsResponse } from '../protocol/generated/DeleteGroupsResponse.js';
import type { DescribeGroupsRequest } from '../protocol/generated/DescribeGroupsRequest.js';
import type { DescribeGroupsResponse } from '../protocol/generated/DescribeGroupsResponse.js';
import type { FindCoordinatorRequest } from '../protocol/generated/FindCoordinatorRequest.js';
import type { FindCoordinatorResponse } from '../protocol/generated/FindCoordinatorResponse.js';
import type { HeartbeatRequest } from '../protocol/generated/HeartbeatRequest.js';
import type { HeartbeatResponse } from '../protocol/generated/HeartbeatResponse.js';
import type { JoinGroupRequest } from '../protocol/generated/JoinGroupRequest.js';
import type { JoinGroupResponse } from '../protocol/generated/JoinGroupResponse.js';
import type { LeaveGroupRequest } from '../protocol/generated/LeaveGroupRequest.js';
import type { LeaveGroupResponse } from '../protocol/generated/LeaveGroupResponse.js';
import type { ListGroupsRequest } from '../protocol/generated/ListGroupsRequest.js';
import type { ListGroupsResponse } from '../protocol/generated/ListGroupsResponse.js';
import type { OffsetCommitRequest } from '../protocol/generated/OffsetCommitRequest.js';
import type { OffsetCommitResponse } from '../protocol/generated/OffsetCommitResponse.js';
import type { OffsetDeleteRequest } from '../protocol/generated/OffsetDeleteRequest.js';
import type { OffsetDeleteResponse } from '../protocol/generated/OffsetDeleteResponse.js';
import type { OffsetFetchRequest } from '../protocol/generated/OffsetFetchRequest.js';
import type { OffsetFetchResponse } from '../protocol/generated/OffsetFetchResponse.js';
import type { SyncGroupRequest } from '../protocol/generated/SyncGroupRequest.js';
import type { SyncGroupResponse } from '../protocol/generated/SyncGroupResponse.js';
import type { TxnOffsetCommitRequest } from '../protocol/generated/TxnOffsetCommitRequest.js';
import type { TxnOffsetCommitResponse } from '../protocol/generated/TxnOffsetCommitResponse.js';

/** What the coordinator learns about the request besides its body. */
export interface GroupRequestContext {
  readonly apiVersion: number;
  readonly clientId: string | null;
  /** The client's address, for DescribeGroups' clientHost. */
  readonly clientHost: string;
  /** The listener the request came in on: FindCoordinator answers with its endpoint (absent: PLAINTEXT). */
  readonly listenerName?: string;
}

export interface GroupApi {
  /**
   * The versions the implementation supports, by API key; ApiVersions reports these (intersected
   * with what the codecs know), and the router closes connections that ask for others.
   */
  readonly versions: ReadonlyMap<number, { readonly min: number; readonly max: number }>;
  findCoordinator(ctx: GroupRequestContext, req: FindCoordinatorRequest): Promise<FindCoordinatorResponse>;
  joinGroup(ctx: GroupRequestContext, req: JoinGroupRequest): Promise<JoinGroupResponse>;
  syncGroup(ctx: GroupRequestContext, req: SyncGroupRequest): Promise<SyncGroupResponse>;
  heartbeat(ctx: GroupRequestContext, req: HeartbeatRequest): Promise<HeartbeatResponse>;
  leaveGroup(ctx: GroupRequestContext, req: LeaveGroupRequest): Promise<LeaveGroupResponse>;
  offsetCommit(ctx: GroupRequestContext, req: OffsetCommitRequest): Promise<OffsetCommitResponse>;
  offsetFetch(ctx: GroupRequestContext, req: OffsetFetchRequest): Promise<OffsetFetchResponse>;
  listGroups(ctx: GroupRequestContext, req: ListGroupsRequest): Promise<ListGroupsResponse>;
  describeGroups(ctx: GroupRequestContext, req: DescribeGroupsRequest): Promise<DescribeGroupsResponse>;
  deleteGroups(ctx: GroupRequestContext, req: DeleteGroupsRequest): Promise<DeleteGroupsResponse>;
  offsetDelete(ctx: GroupRequestContext, req: OffsetDeleteRequest): Promise<OffsetDeleteResponse>;
  txnOffsetCommit(ctx: GroupRequestContext, req: TxnOffsetCommitRequest): Promise<TxnOffsetCommitResponse>;
  consumerGroupHeartbeat(
    ctx: GroupRequestContext,
    req: ConsumerGroupHeartbeatRequest,
  ): Promise<ConsumerGroupHeartbeatResponse>;
  consumerGroupDescribe(
    ctx: GroupRequestContext,
    req: ConsumerGroupDescribeRequest,
  ): Promise<ConsumerGroupDescribeResponse>;
}
