/**
 * The APIs the client speaks, each with the version range this library builds correctly. The codecs
 * cover every version; the ranges here are narrower where a newer version changes what a request
 * must carry (Fetch v13+ addresses topics by id only, so the client stops at v12).
 *
 * An API's codecs are imported the first time it is sent, so a tool loads the generated modules
 * of the APIs it uses and no others (issue 17: `skiff topics --list` sends ApiVersions and
 * Metadata; the ~40 modules of the rest would be most of its start-up).
 */
import type { MessageCodec } from '../protocol/codec-runtime.js';

export interface ApiCodecs<Req, Resp> {
  readonly request: MessageCodec<Req>;
  readonly response: MessageCodec<Resp>;
}

export interface Api<Req, Resp> {
  readonly key: number;
  readonly name: string;
  /** Lowest and highest version this client builds and reads correctly. */
  readonly min: number;
  readonly max: number;
  /** The request and response codecs, imported on the first call. */
  codecs(): Promise<ApiCodecs<Req, Resp>>;
}

/**
 * An API whose codecs `load` imports when first needed. The codecs must be `key`'s: a mismatch is
 * a bug in the table and fails the first request.
 */
export function lazyApi<Req, Resp>(
  key: number,
  name: string,
  min: number,
  max: number,
  load: () => Promise<ApiCodecs<Req, Resp>>,
): Api<Req, Resp> {
  let loaded: Promise<ApiCodecs<Req, Resp>> | undefined;
  const codecs = async (): Promise<ApiCodecs<Req, Resp>> => {
    const c = await load();
    if (c.request.apiKey !== key || c.response.apiKey !== key)
      throw new Error(`${name}: codecs of API keys ${c.request.apiKey}/${c.response.apiKey}, not ${key}`);
    return c;
  };
  return { key, name, min, max, codecs: () => (loaded ??= codecs()) };
}

export const Apis = {
  // Produce v3 is the first with record batch v2, the only format Skiff stores.
  Produce: lazyApi(0, 'Produce', 3, 11, async () => ({
    request: (await import('../protocol/generated/ProduceRequest.js')).ProduceRequestCodec,
    response: (await import('../protocol/generated/ProduceResponse.js')).ProduceResponseCodec,
  })),
  Fetch: lazyApi(1, 'Fetch', 4, 12, async () => ({
    request: (await import('../protocol/generated/FetchRequest.js')).FetchRequestCodec,
    response: (await import('../protocol/generated/FetchResponse.js')).FetchResponseCodec,
  })),
  ListOffsets: lazyApi(2, 'ListOffsets', 1, 8, async () => ({
    request: (await import('../protocol/generated/ListOffsetsRequest.js')).ListOffsetsRequestCodec,
    response: (await import('../protocol/generated/ListOffsetsResponse.js')).ListOffsetsResponseCodec,
  })),
  Metadata: lazyApi(3, 'Metadata', 1, 12, async () => ({
    request: (await import('../protocol/generated/MetadataRequest.js')).MetadataRequestCodec,
    response: (await import('../protocol/generated/MetadataResponse.js')).MetadataResponseCodec,
  })),
  ApiVersions: lazyApi(18, 'ApiVersions', 3, 3, async () => ({
    request: (await import('../protocol/generated/ApiVersionsRequest.js')).ApiVersionsRequestCodec,
    response: (await import('../protocol/generated/ApiVersionsResponse.js')).ApiVersionsResponseCodec,
  })),
  CreateTopics: lazyApi(19, 'CreateTopics', 2, 7, async () => ({
    request: (await import('../protocol/generated/CreateTopicsRequest.js')).CreateTopicsRequestCodec,
    response: (await import('../protocol/generated/CreateTopicsResponse.js')).CreateTopicsResponseCodec,
  })),
  DeleteTopics: lazyApi(20, 'DeleteTopics', 1, 6, async () => ({
    request: (await import('../protocol/generated/DeleteTopicsRequest.js')).DeleteTopicsRequestCodec,
    response: (await import('../protocol/generated/DeleteTopicsResponse.js')).DeleteTopicsResponseCodec,
  })),
  DeleteRecords: lazyApi(21, 'DeleteRecords', 0, 2, async () => ({
    request: (await import('../protocol/generated/DeleteRecordsRequest.js')).DeleteRecordsRequestCodec,
    response: (await import('../protocol/generated/DeleteRecordsResponse.js')).DeleteRecordsResponseCodec,
  })),
  InitProducerId: lazyApi(22, 'InitProducerId', 0, 5, async () => ({
    request: (await import('../protocol/generated/InitProducerIdRequest.js')).InitProducerIdRequestCodec,
    response: (await import('../protocol/generated/InitProducerIdResponse.js')).InitProducerIdResponseCodec,
  })),
  DescribeConfigs: lazyApi(32, 'DescribeConfigs', 1, 4, async () => ({
    request: (await import('../protocol/generated/DescribeConfigsRequest.js')).DescribeConfigsRequestCodec,
    response: (await import('../protocol/generated/DescribeConfigsResponse.js')).DescribeConfigsResponseCodec,
  })),
  DescribeLogDirs: lazyApi(35, 'DescribeLogDirs', 1, 4, async () => ({
    request: (await import('../protocol/generated/DescribeLogDirsRequest.js')).DescribeLogDirsRequestCodec,
    response: (await import('../protocol/generated/DescribeLogDirsResponse.js')).DescribeLogDirsResponseCodec,
  })),
  CreatePartitions: lazyApi(37, 'CreatePartitions', 0, 3, async () => ({
    request: (await import('../protocol/generated/CreatePartitionsRequest.js')).CreatePartitionsRequestCodec,
    response: (await import('../protocol/generated/CreatePartitionsResponse.js'))
      .CreatePartitionsResponseCodec,
  })),
  IncrementalAlterConfigs: lazyApi(44, 'IncrementalAlterConfigs', 0, 1, async () => ({
    request: (await import('../protocol/generated/IncrementalAlterConfigsRequest.js'))
      .IncrementalAlterConfigsRequestCodec,
    response: (await import('../protocol/generated/IncrementalAlterConfigsResponse.js'))
      .IncrementalAlterConfigsResponseCodec,
  })),
  ElectLeaders: lazyApi(43, 'ElectLeaders', 0, 2, async () => ({
    request: (await import('../protocol/generated/ElectLeadersRequest.js')).ElectLeadersRequestCodec,
    response: (await import('../protocol/generated/ElectLeadersResponse.js')).ElectLeadersResponseCodec,
  })),
  DescribeCluster: lazyApi(60, 'DescribeCluster', 0, 1, async () => ({
    request: (await import('../protocol/generated/DescribeClusterRequest.js')).DescribeClusterRequestCodec,
    response: (await import('../protocol/generated/DescribeClusterResponse.js')).DescribeClusterResponseCodec,
  })),
  // The group APIs, capped below the versions that address groups in batches (FindCoordinator v4+,
  // OffsetFetch v8+) or by member epoch (OffsetCommit v9): the tools handle one group at a time.
  FindCoordinator: lazyApi(10, 'FindCoordinator', 0, 3, async () => ({
    request: (await import('../protocol/generated/FindCoordinatorRequest.js')).FindCoordinatorRequestCodec,
    response: (await import('../protocol/generated/FindCoordinatorResponse.js')).FindCoordinatorResponseCodec,
  })),
  ListGroups: lazyApi(16, 'ListGroups', 0, 5, async () => ({
    request: (await import('../protocol/generated/ListGroupsRequest.js')).ListGroupsRequestCodec,
    response: (await import('../protocol/generated/ListGroupsResponse.js')).ListGroupsResponseCodec,
  })),
  DescribeGroups: lazyApi(15, 'DescribeGroups', 0, 5, async () => ({
    request: (await import('../protocol/generated/DescribeGroupsRequest.js')).DescribeGroupsRequestCodec,
    response: (await import('../protocol/generated/DescribeGroupsResponse.js')).DescribeGroupsResponseCodec,
  })),
  OffsetFetch: lazyApi(9, 'OffsetFetch', 1, 7, async () => ({
    request: (await import('../protocol/generated/OffsetFetchRequest.js')).OffsetFetchRequestCodec,
    response: (await import('../protocol/generated/OffsetFetchResponse.js')).OffsetFetchResponseCodec,
  })),
  OffsetCommit: lazyApi(8, 'OffsetCommit', 2, 8, async () => ({
    request: (await import('../protocol/generated/OffsetCommitRequest.js')).OffsetCommitRequestCodec,
    response: (await import('../protocol/generated/OffsetCommitResponse.js')).OffsetCommitResponseCodec,
  })),
  // The classic group membership of a consumer (JoinGroup v4+ asks for the member id first).
  JoinGroup: lazyApi(11, 'JoinGroup', 0, 9, async () => ({
    request: (await import('../protocol/generated/JoinGroupRequest.js')).JoinGroupRequestCodec,
    response: (await import('../protocol/generated/JoinGroupResponse.js')).JoinGroupResponseCodec,
  })),
  SyncGroup: lazyApi(14, 'SyncGroup', 0, 5, async () => ({
    request: (await import('../protocol/generated/SyncGroupRequest.js')).SyncGroupRequestCodec,
    response: (await import('../protocol/generated/SyncGroupResponse.js')).SyncGroupResponseCodec,
  })),
  Heartbeat: lazyApi(12, 'Heartbeat', 0, 4, async () => ({
    request: (await import('../protocol/generated/HeartbeatRequest.js')).HeartbeatRequestCodec,
    response: (await import('../protocol/generated/HeartbeatResponse.js')).HeartbeatResponseCodec,
  })),
  LeaveGroup: lazyApi(13, 'LeaveGroup', 0, 5, async () => ({
    request: (await import('../protocol/generated/LeaveGroupRequest.js')).LeaveGroupRequestCodec,
    response: (await import('../protocol/generated/LeaveGroupResponse.js')).LeaveGroupResponseCodec,
  })),
  // KIP-848's groups: asked only of a group DescribeGroups does not know (a consumer-protocol group).
  ConsumerGroupDescribe: lazyApi(69, 'ConsumerGroupDescribe', 0, 0, async () => ({
    request: (await import('../protocol/generated/ConsumerGroupDescribeRequest.js'))
      .ConsumerGroupDescribeRequestCodec,
    response: (await import('../protocol/generated/ConsumerGroupDescribeResponse.js'))
      .ConsumerGroupDescribeResponseCodec,
  })),
  DeleteGroups: lazyApi(42, 'DeleteGroups', 0, 2, async () => ({
    request: (await import('../protocol/generated/DeleteGroupsRequest.js')).DeleteGroupsRequestCodec,
    response: (await import('../protocol/generated/DeleteGroupsResponse.js')).DeleteGroupsResponseCodec,
  })),
} as const;
