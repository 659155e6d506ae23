/**
 * The APIs the client speaks, each with the version range this library builds correctly. The codecs
 * cover every version; the ranges here are narrower where a newer version changes what a request
 * must carry (Fetch v13+ addresses topics by id only, so the client stops at v12).
 */
import type { MessageCodec } from '../protocol/codec-runtime.js';
import {
  type ApiVersionsRequest,
  ApiVersionsRequestCodec,
} from '../protocol/generated/ApiVersionsRequest.js';
import {
  type ApiVersionsResponse,
  ApiVersionsResponseCodec,
} from '../protocol/generated/ApiVersionsResponse.js';
import {
  type CreatePartitionsRequest,
  CreatePartitionsRequestCodec,
} from '../protocol/generated/CreatePartitionsRequest.js';
import {
  type CreatePartitionsResponse,
  CreatePartitionsResponseCodec,
} from '../protocol/generated/CreatePartitionsResponse.js';
import {
  type CreateTopicsRequest,
  CreateTopicsRequestCodec,
} from '../protocol/generated/CreateTopicsRequest.js';
import {
  type CreateTopicsResponse,
  CreateTopicsResponseCodec,
} from '../protocol/generated/CreateTopicsResponse.js';
import {
  type DeleteGroupsRequest,
  DeleteGroupsRequestCodec,
} from '../protocol/generated/DeleteGroupsRequest.js';
import {
  type DeleteGroupsResponse,
  DeleteGroupsResponseCodec,
} from '../protocol/generated/DeleteGroupsResponse.js';
import {
  type DeleteRecordsRequest,
  DeleteRecordsRequestCodec,
} from '../protocol/generated/DeleteRecordsRequest.js';
import {
  type DeleteRecordsResponse,
  DeleteRecordsResponseCodec,
} from '../protocol/generated/DeleteRecordsResponse.js';
import {
  type DeleteTopicsRequest,
  DeleteTopicsRequestCodec,
} from '../protocol/generated/DeleteTopicsRequest.js';
import {
  type DeleteTopicsResponse,
  DeleteTopicsResponseCodec,
} from '../protocol/generated/DeleteTopicsResponse.js';
import {
  type DescribeClusterRequest,
  DescribeClusterRequestCodec,
} from '../protocol/generated/DescribeClusterRequest.js';
import {
  type DescribeClusterResponse,
  DescribeClusterResponseCodec,
} from '../protocol/generated/DescribeClusterResponse.js';
import {
  type DescribeConfigsRequest,
  DescribeConfigsRequestCodec,
} from '../protocol/generated/DescribeConfigsRequest.js';
import {
  type DescribeConfigsResponse,
  DescribeConfigsResponseCodec,
} from '../protocol/generated/DescribeConfigsResponse.js';
import {
  type DescribeGroupsRequest,
  DescribeGroupsRequestCodec,
} from '../protocol/generated/DescribeGroupsRequest.js';
import {
  type DescribeGroupsResponse,
  DescribeGroupsResponseCodec,
} from '../protocol/generated/DescribeGroupsResponse.js';
import {
  type DescribeLogDirsRequest,
  DescribeLogDirsRequestCodec,
} from '../protocol/generated/DescribeLogDirsRequest.js';
import {
  type DescribeLogDirsResponse,
  DescribeLogDirsResponseCodec,
} from '../protocol/generated/DescribeLogDirsResponse.js';
import { type FetchRequest, FetchRequestCodec } from '../protocol/generated/FetchRequest.js';
import { type FetchResponse, FetchResponseCodec } from '../protocol/generated/FetchResponse.js';
import {
  type FindCoordinatorRequest,
  FindCoordinatorRequestCodec,
} from '../protocol/generated/FindCoordinatorRequest.js';
import {
  type FindCoordinatorResponse,
  FindCoordinatorResponseCodec,
} from '../protocol/generated/FindCoordinatorResponse.js';
import {
  type IncrementalAlterConfigsRequest,
  IncrementalAlterConfigsRequestCodec,
} from '../protocol/generated/IncrementalAlterConfigsRequest.js';
import {
  type IncrementalAlterConfigsResponse,
  IncrementalAlterConfigsResponseCodec,
} from '../protocol/generated/IncrementalAlterConfigsResponse.js';
import { type ListGroupsRequest, ListGroupsRequestCodec } from '../protocol/generated/ListGroupsRequest.js';
import {
  type ListGroupsResponse,
  ListGroupsResponseCodec,
} from '../protocol/generated/ListGroupsResponse.js';
import {
  type ListOffsetsRequest,
  ListOffsetsRequestCodec,
} from '../protocol/generated/ListOffsetsRequest.js';
import {
  type ListOffsetsResponse,
  ListOffsetsResponseCodec,
} from '../protocol/generated/ListOffsetsResponse.js';
import { type MetadataRequest, MetadataRequestCodec } from '../protocol/generated/MetadataRequest.js';
import { type MetadataResponse, MetadataResponseCodec } from '../protocol/generated/MetadataResponse.js';
import {
  type OffsetCommitRequest,
  OffsetCommitRequestCodec,
} from '../protocol/generated/OffsetCommitRequest.js';
import {
  type OffsetCommitResponse,
  OffsetCommitResponseCodec,
} from '../protocol/generated/OffsetCommitResponse.js';
import {
  type OffsetFetchRequest,
  OffsetFetchRequestCodec,
} from '../protocol/generated/OffsetFetchRequest.js';
import {
  type OffsetFetchResponse,
  OffsetFetchResponseCodec,
} from '../protocol/generated/OffsetFetchResponse.js';
import { type ProduceRequest, ProduceRequestCodec } from '../protocol/generated/ProduceRequest.js';
import { type ProduceResponse, ProduceResponseCodec } from '../protocol/generated/ProduceResponse.js';

export interface Api<Req, Resp> {
  readonly key: number;
  readonly name: string;
  readonly request: MessageCodec<Req>;
  readonly response: MessageCodec<Resp>;
  /** Lowest and highest version this client builds and reads correctly. */
  readonly min: number;
  readonly max: number;
}

function api<Req, Resp>(
  request: MessageCodec<Req>,
  response: MessageCodec<Resp>,
  name: string,
  min: number,
  max: number,
): Api<Req, Resp> {
  return { key: request.apiKey, name, request, response, min, max };
}

export const Apis = {
  // Produce v3 is the first with record batch v2, the only format Skiff stores.
  Produce: api<ProduceRequest, ProduceResponse>(ProduceRequestCodec, ProduceResponseCodec, 'Produce', 3, 11),
  Fetch: api<FetchRequest, FetchResponse>(FetchRequestCodec, FetchResponseCodec, 'Fetch', 4, 12),
  ListOffsets: api<ListOffsetsRequest, ListOffsetsResponse>(
    ListOffsetsRequestCodec,
    ListOffsetsResponseCodec,
    'ListOffsets',
    1,
    8,
  ),
  Metadata: api<MetadataRequest, MetadataResponse>(
    MetadataRequestCodec,
    MetadataResponseCodec,
    'Metadata',
    1,
    12,
  ),
  ApiVersions: api<ApiVersionsRequest, ApiVersionsResponse>(
    ApiVersionsRequestCodec,
    ApiVersionsResponseCodec,
    'ApiVersions',
    3,
    3,
  ),
  CreateTopics: api<CreateTopicsRequest, CreateTopicsResponse>(
    CreateTopicsRequestCodec,
    CreateTopicsResponseCodec,
    'CreateTopics',
    2,
    7,
  ),
  DeleteTopics: api<DeleteTopicsRequest, DeleteTopicsResponse>(
    DeleteTopicsRequestCodec,
    DeleteTopicsResponseCodec,
    'DeleteTopics',
    1,
    6,
  ),
  DeleteRecords: api<DeleteRecordsRequest, DeleteRecordsResponse>(
    DeleteRecordsRequestCodec,
    DeleteRecordsResponseCodec,
    'DeleteRecords',
    0,
    2,
  ),
  DescribeConfigs: api<DescribeConfigsRequest, DescribeConfigsResponse>(
    DescribeConfigsRequestCodec,
    DescribeConfigsResponseCodec,
    'DescribeConfigs',
    1,
    4,
  ),
  DescribeLogDirs: api<DescribeLogDirsRequest, DescribeLogDirsResponse>(
    DescribeLogDirsRequestCodec,
    DescribeLogDirsResponseCodec,
    'DescribeLogDirs',
    1,
    4,
  ),
  CreatePartitions: api<CreatePartitionsRequest, CreatePartitionsResponse>(
    CreatePartitionsRequestCodec,
    CreatePartitionsResponseCodec,
    'CreatePartitions',
    0,
    3,
  ),
  IncrementalAlterConfigs: api<IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse>(
    IncrementalAlterConfigsRequestCodec,
    IncrementalAlterConfigsResponseCodec,
    'IncrementalAlterConfigs',
    0,
    1,
  ),
  DescribeCluster: api<DescribeClusterRequest, DescribeClusterResponse>(
    DescribeClusterRequestCodec,
    DescribeClusterResponseCodec,
    'DescribeCluster',
    0,
    1,
  ),
  // The group APIs, capped below the versions that address groups in batches (FindCoordinator v4+,
  // OffsetFetch v8+) or by member epoch (OffsetCommit v9): the tools handle one group at a time.
  FindCoordinator: api<FindCoordinatorRequest, FindCoordinatorResponse>(
    FindCoordinatorRequestCodec,
    FindCoordinatorResponseCodec,
    'FindCoordinator',
    0,
    3,
  ),
  ListGroups: api<ListGroupsRequest, ListGroupsResponse>(
    ListGroupsRequestCodec,
    ListGroupsResponseCodec,
    'ListGroups',
    0,
    5,
  ),
  DescribeGroups: api<DescribeGroupsRequest, DescribeGroupsResponse>(
    DescribeGroupsRequestCodec,
    DescribeGroupsResponseCodec,
    'DescribeGroups',
    0,
    5,
  ),
  OffsetFetch: api<OffsetFetchRequest, OffsetFetchResponse>(
    OffsetFetchRequestCodec,
    OffsetFetchResponseCodec,
    'OffsetFetch',
    1,
    7,
  ),
  OffsetCommit: api<OffsetCommitRequest, OffsetCommitResponse>(
    OffsetCommitRequestCodec,
    OffsetCommitResponseCodec,
    'OffsetCommit',
    2,
    8,
  ),
  DeleteGroups: api<DeleteGroupsRequest, DeleteGroupsResponse>(
    DeleteGroupsRequestCodec,
    DeleteGroupsResponseCodec,
    'DeleteGroups',
    0,
    2,
  ),
} as const;
