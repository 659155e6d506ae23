/**
 * The APIs Kafka guards with one operation on the CLUSTER for the whole request
 * (AuthHelper.authorizeClusterOperation and its kin), and the answer each gives when refused:
 * CLUSTER_AUTHORIZATION_FAILED where the response has a place for it. The router checks these
 * before calling the handler, so the handlers stay free of it. The Skiff-only
 * SkiffDescribeReplication is a cluster DESCRIBE, as Kafka's own describe APIs.
 */
import type { AlterClientQuotasRequest } from '../protocol/generated/AlterClientQuotasRequest.js';
import type { AlterPartitionReassignmentsRequest } from '../protocol/generated/AlterPartitionReassignmentsRequest.js';
import type { AlterReplicaLogDirsRequest } from '../protocol/generated/AlterReplicaLogDirsRequest.js';
import type { AlterUserScramCredentialsRequest } from '../protocol/generated/AlterUserScramCredentialsRequest.js';
import type { ElectLeadersRequest } from '../protocol/generated/ElectLeadersRequest.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { API_MESSAGES, ApiKey } from '../protocol/generated/index.js';
import { AclOperation, type Operation } from '../security/acl.js';

const CODE = ErrorCode.CLUSTER_AUTHORIZATION_FAILED;
const MESSAGE = 'Cluster authorization failed.';

export interface ClusterCheck {
  readonly operation: Operation;
  /** The response to a refused request, at its version. */
  // biome-ignore lint/suspicious/noExplicitAny: each entry is typed by its own request; the table erases it.
  refuse(req: any, version: number): unknown;
}

function defaults(apiKey: number): Record<string, unknown> {
  return API_MESSAGES.get(apiKey)!.response.defaults() as Record<string, unknown>;
}

export const CLUSTER_CHECKS: ReadonlyMap<number, ClusterCheck> = new Map<number, ClusterCheck>([
  [
    ApiKey.DescribeLogDirs,
    {
      operation: AclOperation.DESCRIBE,
      refuse: (_req, version) => ({
        ...defaults(ApiKey.DescribeLogDirs),
        errorCode: version >= 3 ? CODE : 0,
      }),
    },
  ],
  [
    ApiKey.ElectLeaders,
    {
      operation: AclOperation.ALTER,
      refuse: (req: ElectLeadersRequest, version) => ({
        throttleTimeMs: 0,
        errorCode: version >= 1 ? CODE : 0,
        replicaElectionResults: (req.topicPartitions ?? []).map((t) => ({
          topic: t.topic,
          partitionResult: t.partitions.map((partitionId) => ({
            partitionId,
            errorCode: CODE,
            errorMessage: null,
          })),
        })),
      }),
    },
  ],
  [
    ApiKey.DescribeClientQuotas,
    {
      operation: AclOperation.DESCRIBE_CONFIGS,
      refuse: () => ({ throttleTimeMs: 0, errorCode: CODE, errorMessage: MESSAGE, entries: null }),
    },
  ],
  [
    ApiKey.AlterClientQuotas,
    {
      operation: AclOperation.ALTER_CONFIGS,
      refuse: (req: AlterClientQuotasRequest) => ({
        throttleTimeMs: 0,
        entries: req.entries.map((e) => ({
          errorCode: CODE,
          errorMessage: MESSAGE,
          entity: e.entity.map((c) => ({ entityType: c.entityType, entityName: c.entityName })),
        })),
      }),
    },
  ],
  [
    ApiKey.AlterPartitionReassignments,
    {
      operation: AclOperation.ALTER,
      refuse: (req: AlterPartitionReassignmentsRequest) => ({
        throttleTimeMs: 0,
        errorCode: CODE,
        errorMessage: MESSAGE,
        responses: req.topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            errorCode: CODE,
            errorMessage: MESSAGE,
          })),
        })),
      }),
    },
  ],
  [
    ApiKey.ListPartitionReassignments,
    {
      operation: AclOperation.DESCRIBE,
      refuse: () => ({ throttleTimeMs: 0, errorCode: CODE, errorMessage: MESSAGE, topics: [] }),
    },
  ],
  [
    ApiKey.AlterReplicaLogDirs,
    {
      operation: AclOperation.ALTER,
      refuse: (req: AlterReplicaLogDirsRequest) => {
        const byTopic = new Map<string, { partitionIndex: number; errorCode: number }[]>();
        for (const dir of req.dirs)
          for (const t of dir.topics) {
            const list = byTopic.get(t.name) ?? [];
            byTopic.set(t.name, list);
            for (const partitionIndex of t.partitions) list.push({ partitionIndex, errorCode: CODE });
          }
        return {
          throttleTimeMs: 0,
          results: [...byTopic].map(([topicName, partitions]) => ({ topicName, partitions })),
        };
      },
    },
  ],
  [
    ApiKey.DescribeUserScramCredentials,
    {
      operation: AclOperation.DESCRIBE,
      refuse: () => ({ throttleTimeMs: 0, errorCode: CODE, errorMessage: MESSAGE, results: [] }),
    },
  ],
  [
    ApiKey.AlterUserScramCredentials,
    {
      operation: AclOperation.ALTER,
      refuse: (req: AlterUserScramCredentialsRequest) => ({
        throttleTimeMs: 0,
        results: [
          ...new Set([...req.deletions.map((d) => d.name), ...req.upsertions.map((u) => u.name)]),
        ].map((user) => ({ user, errorCode: CODE, errorMessage: MESSAGE })),
      }),
    },
  ],
  [
    ApiKey.SkiffDescribeReplication,
    {
      operation: AclOperation.DESCRIBE,
      refuse: () => ({ ...defaults(ApiKey.SkiffDescribeReplication), errorCode: CODE }),
    },
  ],
]);
