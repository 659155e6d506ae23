/**
 * The client side of the reassignment APIs (AlterPartitionReassignments, ListPartitionReassignments,
 * AlterReplicaLogDirs), kept beside apis.ts with the same shape: codecs imported when first sent,
 * and the version range this library builds correctly.
 */
import { lazyApi } from './apis.js';

export const AlterPartitionReassignmentsApi = lazyApi(45, 'AlterPartitionReassignments', 0, 0, async () => ({
  request: (await import('../protocol/generated/AlterPartitionReassignmentsRequest.js'))
    .AlterPartitionReassignmentsRequestCodec,
  response: (await import('../protocol/generated/AlterPartitionReassignmentsResponse.js'))
    .AlterPartitionReassignmentsResponseCodec,
}));

export const ListPartitionReassignmentsApi = lazyApi(46, 'ListPartitionReassignments', 0, 0, async () => ({
  request: (await import('../protocol/generated/ListPartitionReassignmentsRequest.js'))
    .ListPartitionReassignmentsRequestCodec,
  response: (await import('../protocol/generated/ListPartitionReassignmentsResponse.js'))
    .ListPartitionReassignmentsResponseCodec,
}));

export const AlterReplicaLogDirsApi = lazyApi(34, 'AlterReplicaLogDirs', 0, 2, async () => ({
  request: (await import('../protocol/generated/AlterReplicaLogDirsRequest.js'))
    .AlterReplicaLogDirsRequestCodec,
  response: (await import('../protocol/generated/AlterReplicaLogDirsResponse.js'))
    .AlterReplicaLogDirsResponseCodec,
}));
