/**
 * The one list of what this broker implements: API key → supported version range. ApiVersions
 * reports exactly this (plus the group APIs when a GroupApi is plugged in), and the router closes
 * a connection that asks for anything else. The ranges are those a Kafka 4.0 broker lists, with
 * KIP-896's floors (the versions Kafka 4 removed are not served), but for the differences in
 * KAFKA_4_DIFFERENCES, each with its reason; test/broker/api-versions.test.ts holds Kafka 4.0's
 * table and checks that these are the only ones.
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
  [ApiKey.ListOffsets, { min: 1, max: 10 }],
  [ApiKey.Metadata, { min: 0, max: 12 }],
  [ApiKey.ApiVersions, { min: 0, max: 4 }],
  [ApiKey.CreateTopics, { min: 2, max: 7 }],
  [ApiKey.DeleteTopics, { min: 1, max: 6 }],
  [ApiKey.DeleteRecords, { min: 0, max: 2 }],
  [ApiKey.InitProducerId, { min: 0, max: 5 }],
  [ApiKey.OffsetForLeaderEpoch, { min: 2, max: 4 }],
  [ApiKey.SaslHandshake, { min: 0, max: 1 }],
  [ApiKey.SaslAuthenticate, { min: 0, max: 2 }],
  [ApiKey.DescribeAcls, { min: 1, max: 3 }],
  [ApiKey.CreateAcls, { min: 1, max: 3 }],
  [ApiKey.DeleteAcls, { min: 1, max: 3 }],
  [ApiKey.DescribeConfigs, { min: 1, max: 4 }],
  [ApiKey.AlterConfigs, { min: 0, max: 2 }],
  [ApiKey.AlterReplicaLogDirs, { min: 1, max: 2 }],
  [ApiKey.DescribeLogDirs, { min: 1, max: 4 }],
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
  ApiKey.ConsumerGroupHeartbeat,
  ApiKey.ConsumerGroupDescribe,
];

/** Routed to the transaction coordinator (EndTxn v5 is transaction version 2, not served). */
export const TRANSACTION_API_VERSIONS: ReadonlyMap<number, VersionRange> = new Map([
  [ApiKey.AddPartitionsToTxn, { min: 0, max: 5 }],
  [ApiKey.AddOffsetsToTxn, { min: 0, max: 4 }],
  [ApiKey.EndTxn, { min: 0, max: 4 }],
  [ApiKey.WriteTxnMarkers, { min: 1, max: 1 }],
  [ApiKey.DescribeTransactions, { min: 0, max: 0 }],
  [ApiKey.ListTransactions, { min: 0, max: 1 }],
]);

/** An API whose served range is not the one a Kafka 4.0 broker lists, and why. */
export interface Kafka4Difference {
  /** What a Kafka 4.0 broker lists in ApiVersions. */
  readonly kafka: { readonly min: number; readonly max: number };
  readonly why: string;
}

const NOT_IN_SPECS =
  "is not in the message specs Skiff's codecs are generated from (Kafka's of 2024-10, before 4.0)";
const TRANSACTION_V2 =
  'means transaction version 2 (KIP-890 part 2, an epoch bump per transaction), which Skiff does not implement';

/**
 * Every served API whose ApiVersions range differs from Kafka 4.0's (docs/compatibility.md lists
 * them; test/broker/api-versions.test.ts fails on any other difference, or on one listed here that
 * is no longer true). Produce's listed minimum is Kafka's, so it is not one of them.
 */
export const KAFKA_4_DIFFERENCES: ReadonlyMap<number, Kafka4Difference> = new Map([
  [
    ApiKey.Produce,
    {
      kafka: { min: 0, max: 12 },
      why: `v12 in a transaction ${TRANSACTION_V2} (the produce adds its partition to the transaction)`,
    },
  ],
  [
    ApiKey.Metadata,
    { kafka: { min: 0, max: 13 }, why: `v13 (a top-level error code, KIP-1102) ${NOT_IN_SPECS}` },
  ],
  [
    ApiKey.DescribeGroups,
    {
      kafka: { min: 0, max: 6 },
      why: `v6 (GROUP_ID_NOT_FOUND for an unknown group, KIP-1043) ${NOT_IN_SPECS}`,
    },
  ],
  [ApiKey.EndTxn, { kafka: { min: 0, max: 5 }, why: `v5 ${TRANSACTION_V2}` }],
  [
    ApiKey.TxnOffsetCommit,
    {
      kafka: { min: 0, max: 5 },
      why: `v5 ${TRANSACTION_V2} (the commit adds the offsets to the transaction)`,
    },
  ],
  [
    ApiKey.DescribeCluster,
    { kafka: { min: 0, max: 2 }, why: `v2 (fenced brokers listed on request, KIP-1073) ${NOT_IN_SPECS}` },
  ],
  [
    ApiKey.ConsumerGroupDescribe,
    {
      kafka: { min: 0, max: 1 },
      why: `v1 (each member's type, classic or consumer, KIP-1099) ${NOT_IN_SPECS}`,
    },
  ],
]);
