import type { AclRecord } from './acls.js';
import type {
  ApiResult,
  ClientQuotaResource,
  ConfigAlteration,
  ConfigResource,
  CreateTopicResult,
  ScramUserResource,
} from './cluster-metadata.js';

/**
 * What brokers ask of the controller, as stored under `requests/<id>` (JSON). The controller is the
 * only writer of topics, partitions and configs; brokers put a request on their own lease and wait
 * for `responses/<broker>/<id>`. Requests of a broker that dies vanish with its lease.
 */

export interface CreateTopicSpec {
  readonly name: string;
  readonly numPartitions: number;
  readonly replicationFactor: number;
  /** [partition, replicas] pairs: JSON has no Map. */
  readonly assignments?: readonly (readonly [number, readonly number[]])[];
  readonly configs: Readonly<Record<string, string>>;
}

export interface CreatePartitionsSpec {
  readonly name: string;
  readonly totalCount: number;
  readonly assignments?: readonly (readonly number[])[];
}

export interface AlterPartitionItem {
  readonly partition: number;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly newIsr: readonly number[];
  /**
   * The broker epoch the leader saw for each new ISR member (AlterPartition v3+ NewIsrWithEpochs),
   * as decimal strings in newIsr order; -1 or absent: not checked. A mismatch means the member
   * restarted since it last fetched: INELIGIBLE_REPLICA.
   */
  readonly newIsrEpochs?: readonly string[];
  /**
   * Skiff only (this JSON is not Kafka's AlterPartition, which has no such field): why the leader
   * proposes the change — lag or fetch-timeout for a shrink, caught-up for an expand — and its
   * log line's numbers, for the durable history (isr-history.ts).
   */
  readonly cause?: string;
  readonly reason?: string;
}

export interface AlterPartitionRequest {
  readonly brokerId: number;
  /** The sender's registration epoch (as a string in JSON). */
  readonly brokerEpoch: bigint;
  readonly topics: readonly { readonly topic: string; readonly partitions: readonly AlterPartitionItem[] }[];
}

export interface AlterPartitionPartitionResult {
  readonly partition: number;
  readonly errorCode: number;
  readonly leaderId: number;
  readonly leaderEpoch: number;
  readonly isr: readonly number[];
  readonly partitionEpoch: number;
}

export interface AlterPartitionResult {
  /** Request-level error (STALE_BROKER_EPOCH, NOT_CONTROLLER, REQUEST_TIMED_OUT). */
  readonly errorCode: number;
  readonly topics: readonly {
    readonly topic: string;
    readonly partitions: readonly AlterPartitionPartitionResult[];
  }[];
}

export type ControllerRequestBody =
  | {
      readonly kind: 'createTopics';
      readonly topics: readonly CreateTopicSpec[];
      readonly validateOnly: boolean;
    }
  | { readonly kind: 'deleteTopics'; readonly names: readonly string[] }
  | {
      readonly kind: 'createPartitions';
      readonly topics: readonly CreatePartitionsSpec[];
      readonly validateOnly: boolean;
    }
  | {
      readonly kind: 'alterConfigs';
      readonly resource: ConfigResource | ClientQuotaResource | ScramUserResource;
      readonly alterations: readonly ConfigAlteration[];
      readonly incremental: boolean;
      readonly validateOnly: boolean;
    }
  | {
      readonly kind: 'alterPartitionReassignments';
      /** replicas null cancels the reassignment in progress. */
      readonly topics: readonly {
        readonly topic: string;
        readonly partitions: readonly {
          readonly partition: number;
          readonly replicas: readonly number[] | null;
        }[];
      }[];
    }
  | {
      readonly kind: 'electLeaders';
      readonly electionType: 'preferred' | 'unclean';
      /** null: every partition. */
      readonly topics: readonly { readonly topic: string; readonly partitions: readonly number[] }[] | null;
    }
  | { readonly kind: 'createAcls'; readonly acls: readonly AclRecord[] }
  | { readonly kind: 'deleteAcls'; readonly ids: readonly string[] }
  | {
      readonly kind: 'alterPartition';
      readonly brokerId: number;
      readonly brokerEpoch: string;
      readonly topics: AlterPartitionRequest['topics'];
    };

export interface ControllerRequest {
  readonly from: number;
  readonly body: ControllerRequestBody;
}

export type ControllerResponse =
  | { readonly kind: 'createTopics'; readonly results: CreateTopicResult[] }
  | { readonly kind: 'deleteTopics'; readonly results: (ApiResult & { name: string })[] }
  | { readonly kind: 'createPartitions'; readonly results: (ApiResult & { name: string })[] }
  | { readonly kind: 'alterConfigs'; readonly result: ApiResult }
  | { readonly kind: 'createAcls' | 'deleteAcls'; readonly result: ApiResult }
  | { readonly kind: 'alterPartition'; readonly result: AlterPartitionResult }
  | { readonly kind: 'electLeaders'; readonly result: ElectLeadersResult }
  | { readonly kind: 'alterPartitionReassignments'; readonly result: PartitionResults };

/** Per-partition outcomes (ElectLeaders, AlterPartitionReassignments). */
export type PartitionResults = ElectLeadersResult;

export interface ElectLeadersResult {
  /** Request-level error (REQUEST_TIMED_OUT when no controller answered). */
  readonly errorCode: number;
  readonly topics: readonly {
    readonly topic: string;
    readonly partitions: readonly {
      readonly partition: number;
      readonly errorCode: number;
      readonly errorMessage: string | null;
    }[];
  }[];
}
