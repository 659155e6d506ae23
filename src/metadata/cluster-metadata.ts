import type { AclRecord } from './acls.js';
import type {
  AlterPartitionRequest,
  AlterPartitionResult,
  ElectLeadersResult,
  PartitionResults,
} from './controller-requests.js';
import type { IsrChangeRecord, IsrHistoryBounds } from './isr-history.js';

/**
 * What a broker knows about the cluster, and how it asks for changes. The broker's request
 * handlers read the current MetadataImage and never write it; every change goes through the
 * controller (ControllerClient) and comes back as a new image, applied in revision order.
 * One implementation: StoreClusterMetadata (store-cluster-metadata.ts), on the embedded store (a
 * cluster of one, `skiff up`) or etcd. Beyond the image: the broker's registration epoch, ISR
 * proposals to the controller (AlterPartition), leader elections (ElectLeaders), reassignments and
 * controlled shutdown.
 */

/** One advertised listener of a broker, as Kafka's BrokerRegistration lists its endpoints. */
export interface BrokerEndpoint {
  readonly listenerName: string;
  readonly host: string;
  readonly port: number;
  /** PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. */
  readonly securityProtocol: string;
}

export interface BrokerInfo {
  readonly id: number;
  /** The first advertised listener's address (what `skiff up` and the dashboard show). */
  readonly host: string;
  readonly port: number;
  /** Every advertised listener; clients are answered with the one their request came in on. */
  readonly endpoints: readonly BrokerEndpoint[];
  readonly rack: string | null;
  /** Incarnation of this broker's registration; fences requests from a replaced process. */
  readonly epoch: bigint;
  /** True while the broker is shutting down in a controlled way (no new leadership). */
  readonly inControlledShutdown: boolean;
  /** Its failed log dirs (Kafka's offline dirs); absent: none. */
  readonly offlineLogDirs?: readonly string[];
  /**
   * The replicas it holds in those dirs, by topicPartitionKey: offline (Metadata's
   * offlineReplicas), never leader or ISR member until the broker restarts. Absent: none.
   */
  readonly offlineReplicas?: ReadonlySet<string>;
}

/** Whether broker `id`'s replica of the partition is online: registered and not in a failed log dir. */
export function isReplicaOnline(
  brokers: ReadonlyMap<number, BrokerInfo>,
  id: number,
  topicPartition: string,
): boolean {
  const b = brokers.get(id);
  return b !== undefined && b.offlineReplicas?.has(topicPartition) !== true;
}

export interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  /** -1 when no replica can lead ("Leader: none"). */
  readonly leader: number;
  readonly leaderEpoch: number;
  /** Bumped on every change to this state (ISR, leader, replicas). */
  readonly partitionEpoch: number;
  /** Assignment order; the first live ISR member is the preferred leader. */
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  readonly addingReplicas: readonly number[];
  readonly removingReplicas: readonly number[];
}

export interface TopicInfo {
  readonly name: string;
  /** Kafka Uuid in its base64url form. */
  readonly topicId: string;
  readonly internal: boolean;
  /** Indexed by partition number. */
  readonly partitions: readonly PartitionState[];
}

/** Dynamic configs as stored: only the keys that were set. */
export type ConfigMap = Readonly<Record<string, string>>;

export interface MetadataImage {
  readonly clusterId: string;
  /** The store revision this image reflects: the broker's "metadata offset". */
  readonly revision: bigint;
  readonly controllerId: number;
  /** Registered (live, unfenced) brokers. */
  readonly brokers: ReadonlyMap<number, BrokerInfo>;
  readonly topics: ReadonlyMap<string, TopicInfo>;
  readonly topicConfigs: ReadonlyMap<string, ConfigMap>;
  /** Per-broker dynamic configs by broker id as a string, and cluster defaults under '<default>'. */
  readonly brokerConfigs: ReadonlyMap<string, ConfigMap>;
  /** Client quotas by canonical entity key (client-quotas.ts); absent means none. */
  readonly clientQuotas?: ReadonlyMap<string, ConfigMap>;
  /** SCRAM credentials by user: mechanism name → stored credential (scram-credentials.ts); absent means none. */
  readonly scramCredentials?: ReadonlyMap<string, ConfigMap>;
  /** ACL bindings by id (acls.ts); absent means none. */
  readonly acls?: ReadonlyMap<string, AclRecord>;
}

export interface CreateTopicRequest {
  readonly name: string;
  /** -1: the broker default num.partitions. */
  readonly numPartitions: number;
  /** -1: the broker default default.replication.factor. */
  readonly replicationFactor: number;
  /** Explicit assignment, partition index → replicas; when given, the two counts above are -1. */
  readonly assignments?: ReadonlyMap<number, readonly number[]>;
  readonly configs: ConfigMap;
}

/** A Kafka error code (0 = none) and an optional message, per topic or entity. */
export interface ApiResult {
  readonly errorCode: number;
  readonly errorMessage: string | null;
}

export interface CreateTopicResult extends ApiResult {
  readonly name: string;
  readonly topicId: string;
  readonly numPartitions: number;
  readonly replicationFactor: number;
}

export type ConfigResource =
  | { readonly type: 'topic'; readonly name: string }
  | { readonly type: 'broker'; readonly id: string };

/** A client quota entity by its canonical key (client-quotas.ts): altered like a config resource. */
export interface ClientQuotaResource {
  readonly type: 'client-quota';
  readonly entity: string;
}

/**
 * A user's SCRAM credentials (AlterUserScramCredentials), altered like a config resource: the
 * names are mechanisms, the values stored credentials (never a password); deleting a mechanism
 * the user has not is refused with RESOURCE_NOT_FOUND.
 */
export interface ScramUserResource {
  readonly type: 'scram-user';
  readonly user: string;
}

export interface ConfigAlteration {
  readonly name: string;
  /** null deletes the dynamic value. */
  readonly value: string | null;
}

export interface ControllerClient {
  createTopics(requests: readonly CreateTopicRequest[], validateOnly: boolean): Promise<CreateTopicResult[]>;
  deleteTopics(names: readonly string[]): Promise<(ApiResult & { name: string })[]>;
  createPartitions(
    requests: readonly { name: string; totalCount: number; assignments?: readonly (readonly number[])[] }[],
    validateOnly: boolean,
  ): Promise<(ApiResult & { name: string })[]>;
  /** Replaces (incremental=false) or edits (incremental=true) the dynamic configs of a resource. */
  alterConfigs(
    resource: ConfigResource | ClientQuotaResource | ScramUserResource,
    alterations: readonly ConfigAlteration[],
    incremental: boolean,
    validateOnly: boolean,
  ): Promise<ApiResult>;
  /** Stores ACL bindings (validated by the caller); storing one that exists changes nothing. */
  createAcls(acls: readonly AclRecord[]): Promise<ApiResult>;
  /** Deletes the ACL bindings of these ids (those already gone are skipped). */
  deleteAcls(ids: readonly string[]): Promise<ApiResult>;
}

export interface ClusterMetadata {
  image(): MetadataImage;
  /** Called after each new image is applied, in revision order. Returns an unsubscribe function. */
  onChange(listener: (image: MetadataImage, previous: MetadataImage) => void): () => void;
  readonly controller: ControllerClient;
  /** This broker's registration epoch; fences requests from a replaced incarnation. */
  brokerEpoch(): bigint;
  alterPartition(topics: AlterPartitionRequest['topics']): Promise<AlterPartitionResult>;
  electLeaders(
    electionType: 'preferred' | 'unclean',
    topics: readonly { topic: string; partitions: readonly number[] }[] | null,
  ): Promise<ElectLeadersResult>;
  /** Moves replicas (replicas null cancels a move); progress shows as adding/removing replicas. */
  alterPartitionReassignments(
    topics: readonly {
      topic: string;
      partitions: readonly { partition: number; replicas: readonly number[] | null }[];
    }[],
  ): Promise<PartitionResults>;
  /**
   * Tells the controller this broker's failed log dirs and the replicas that were in them (all of
   * them, each time): it moves their leadership and ISR membership to the other replicas.
   */
  reportOfflineReplicas(report: {
    readonly offlineLogDirs: readonly string[];
    readonly offlineReplicas: readonly { readonly topic: string; readonly partition: number }[];
  }): Promise<void>;
  /** Moves leadership away from this broker; true once it leads nothing another replica could. */
  controlledShutdown(timeoutMs: number): Promise<boolean>;
  /**
   * The durable ISR/leadership history of a topic's partitions (null: all), oldest first, within
   * `bounds` as of `nowMs` (src/metadata/isr-history.ts): read from the store, not the image.
   */
  isrHistory(
    topic: string,
    partitions: readonly number[] | null,
    bounds: IsrHistoryBounds,
    nowMs: number,
  ): Promise<Map<number, IsrChangeRecord[]>>;
}

/** The broker's endpoint on `listenerName`; undefined when it has no such listener. */
export function endpointOf(broker: BrokerInfo, listenerName: string): BrokerEndpoint | undefined {
  return broker.endpoints.find((e) => e.listenerName === listenerName);
}
