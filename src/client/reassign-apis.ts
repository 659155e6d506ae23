/**
 * The client side of the reassignment APIs (AlterPartitionReassignments, ListPartitionReassignments,
 * AlterReplicaLogDirs), kept beside apis.ts with the same shape: codec pair and the version range
 * this library builds correctly.
 */
import {
  type AlterPartitionReassignmentsRequest,
  AlterPartitionReassignmentsRequestCodec,
} from '../protocol/generated/AlterPartitionReassignmentsRequest.js';
import {
  type AlterPartitionReassignmentsResponse,
  AlterPartitionReassignmentsResponseCodec,
} from '../protocol/generated/AlterPartitionReassignmentsResponse.js';
import {
  type AlterReplicaLogDirsRequest,
  AlterReplicaLogDirsRequestCodec,
} from '../protocol/generated/AlterReplicaLogDirsRequest.js';
import {
  type AlterReplicaLogDirsResponse,
  AlterReplicaLogDirsResponseCodec,
} from '../protocol/generated/AlterReplicaLogDirsResponse.js';
import {
  type ListPartitionReassignmentsRequest,
  ListPartitionReassignmentsRequestCodec,
} from '../protocol/generated/ListPartitionReassignmentsRequest.js';
import {
  type ListPartitionReassignmentsResponse,
  ListPartitionReassignmentsResponseCodec,
} from '../protocol/generated/ListPartitionReassignmentsResponse.js';
import type { Api } from './apis.js';

export const AlterPartitionReassignmentsApi: Api<
  AlterPartitionReassignmentsRequest,
  AlterPartitionReassignmentsResponse
> = {
  key: AlterPartitionReassignmentsRequestCodec.apiKey,
  name: 'AlterPartitionReassignments',
  request: AlterPartitionReassignmentsRequestCodec,
  response: AlterPartitionReassignmentsResponseCodec,
  min: 0,
  max: 0,
};

export const ListPartitionReassignmentsApi: Api<
  ListPartitionReassignmentsRequest,
  ListPartitionReassignmentsResponse
> = {
  key: ListPartitionReassignmentsRequestCodec.apiKey,
  name: 'ListPartitionReassignments',
  request: ListPartitionReassignmentsRequestCodec,
  response: ListPartitionReassignmentsResponseCodec,
  min: 0,
  max: 0,
};

export const AlterReplicaLogDirsApi: Api<AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse> = {
  key: AlterReplicaLogDirsRequestCodec.apiKey,
  name: 'AlterReplicaLogDirs',
  request: AlterReplicaLogDirsRequestCodec,
  response: AlterReplicaLogDirsResponseCodec,
  min: 0,
  max: 2,
};
