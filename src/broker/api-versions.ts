/**
 * The one list of what this broker implements: API key → supported version range. ApiVersions
 * reports exactly this (plus the group APIs when a GroupApi is plugged in), and the router closes
 * a connection that asks for anything else. Kafka 4.0's floors are kept where older versions need
 * message formats v0/v1 (Produce < 3, Fetch < 4), which Skiff does not store; Produce's listed
 * minimum is Kafka 4's (below).
 */
import { ApiKey } from '../protocol/generated/index.js';

export interface VersionRange {
  readonly min: number;
  readonly max: number;
  /** What ApiVersions lists as the minimum when it is below `min` (requests below `min` still close the connection). */
  readonly advertisedMin?: number;
}

/**
 * Kafka 4.x lists Produce from version 0 in ApiVersions though it serves 3 and up (KAFKA-18659,
 * ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION): librdkafka before 2.8 looks for Produce v0 to
 * decide that gzip, snappy and lz4 are supported, and without it sends every batch uncompressed.
 */
const PRODUCE_ADVERTISED_MIN_VERSION = 0;

/** Implemented by the broker itself. */
export const BROKER_API_VERSIONS: ReadonlyMap<number, VersionRange> = new Map([
  [ApiKey.Produce, { min: 3, max: 11, advertisedMin: PRODUCE_ADVERTISED_MIN_VERSION }],
  [ApiKey.Fetch, { min: 4, max: 17 }],
  [ApiKey.ListOffsets, { min: 1, max: 8 }],
  [ApiKey.Metadata, { min: 0, max: 12 }],
  [ApiKey.ApiVersions, { min: 0, max: 4 }],
  [ApiKey.CreateTopics, { min: 0, max: 7 }],
  [ApiKey.DeleteTopics, { min: 0, max: 6 }],
  [ApiKey.DeleteRecords, { min: 0, max: 2 }],
  [ApiKey.InitProducerId, { min: 0, max: 5 }],
  [ApiKey.OffsetForLeaderEpoch, { min: 0, max: 4 }],
  [ApiKey.SaslHandshake, { min: 0, max: 1 }],
  [ApiKey.SaslAuthenticate, { min: 0, max: 2 }],
  [ApiKey.DescribeAcls, { min: 0, max: 3 }],
  [ApiKey.CreateAcls, { min: 0, max: 3 }],
  [ApiKey.DeleteAcls, { min: 0, max: 3 }],
  [ApiKey.DescribeConfigs, { min: 0, max: 4 }],
  [ApiKey.AlterConfigs, { min: 0, max: 2 }],
  [ApiKey.AlterReplicaLogDirs, { min: 0, max: 2 }],
  [ApiKey.DescribeLogDirs, { min: 0, max: 4 }],
  [ApiKey.CreatePartitions, { min: 0, max: 3 }],
  [ApiKey.ElectLeaders, { min: 0, max: 2 }],
  [ApiKey.IncrementalAlterConfigs, { min: 0, max: 1 }],
  [ApiKey.AlterPartitionReassignments, { min: 0, max: 0 }],
  [ApiKey.ListPartitionReassignments, { min: 0, max: 0 }],
  [ApiKey.DescribeClientQuotas, { min: 0, max: 1 }],
  [ApiKey.AlterClientQuotas, { min: 0, max: 1 }],
  [ApiKey.DescribeCluster, { min: 0, max: 1 }],
  [ApiKey.DescribeUserScramCredentials, { min: 0, max: 0 }],
  [ApiKey.AlterUserScramCredentials, { min: 0, max: 0 }],
  [ApiKey.DescribeProducers, { min: 0, max: 0 }],
  [ApiKey.SkiffDescribeReplication, { min: 0, max: 0 }],
]);

/** Routed to the GroupApi when one is plugged in; absent from ApiVersions otherwise. */
export const GROUP_API_KEYS: readonly number[] = [
  ApiKey.OffsetCommit,
  ApiKey.OffsetFetch,
  ApiKey.FindCoordinator,
  ApiKey.JoinGroup,
  ApiKey.Heartbeat,
  ApiKey.LeaveGroup,
  ApiKey.SyncGroup,
  ApiKey.DescribeGroups,
  ApiKey.ListGroups,
  ApiKey.DeleteGroups,
  ApiKey.OffsetDelete,
  ApiKey.TxnOffsetCommit,
];

/** Routed to the transaction coordinator (EndTxn v5 is transaction version 2, not served). */
export const TRANSACTION_API_VERSIONS: ReadonlyMap<number, VersionRange> = new Map([
  [ApiKey.AddPartitionsToTxn, { min: 0, max: 5 }],
  [ApiKey.AddOffsetsToTxn, { min: 0, max: 4 }],
  [ApiKey.EndTxn, { min: 0, max: 4 }],
  [ApiKey.WriteTxnMarkers, { min: 0, max: 1 }],
  [ApiKey.DescribeTransactions, { min: 0, max: 0 }],
  [ApiKey.ListTransactions, { min: 0, max: 1 }],
]);
