/**
 * What startCluster() (in the caller's process) and the cluster process it forks say to each
 * other on their IPC channel. The spec travels in an environment variable; requests carry a
 * sequence number their reply repeats.
 */

/** The environment variable carrying the ClusterSpec as JSON. */
export const CLUSTER_SPEC_ENV = 'SKIFF_CLUSTER_SPEC';

export interface ClusterSpec {
  readonly brokers: number;
  /** server.properties for every broker (test defaults already merged in). */
  readonly config: Readonly<Record<string, string>>;
  /** null: a new temporary directory. */
  readonly dataDir: string | null;
  /** Keep a temporary data dir when the cluster stops. */
  readonly keepData: boolean;
  /** Broker i's port; null: free ports chosen by the cluster process. */
  readonly ports: readonly number[] | null;
}

export interface BrokerInfo {
  readonly id: number;
  readonly host: string;
  readonly port: number;
  /** null while stopped. */
  readonly pid: number | null;
  readonly logDir: string;
  readonly running: boolean;
}

export interface TopicSpec {
  readonly name: string;
  readonly partitions: number;
  /** -1: the brokers' default.replication.factor. */
  readonly replicationFactor: number;
  readonly config: Readonly<Record<string, string>>;
}

export type ClusterRequest =
  | { readonly seq: number; readonly op: 'stopBroker'; readonly id: number; readonly kill: boolean }
  | { readonly seq: number; readonly op: 'startBroker'; readonly id: number }
  | { readonly seq: number; readonly op: 'createTopic'; readonly topic: TopicSpec };

export type ClusterMessage =
  | {
      readonly skiffCluster: 'ready';
      readonly clusterId: string;
      readonly dataDir: string;
      /** The live dashboard on the launcher's HTTP port. */
      readonly dashboardUrl: string;
      readonly brokers: readonly BrokerInfo[];
    }
  | { readonly skiffCluster: 'failed'; readonly message: string }
  | {
      readonly skiffCluster: 'reply';
      readonly seq: number;
      readonly error: string | null;
      readonly brokers: readonly BrokerInfo[];
    }
  | { readonly skiffCluster: 'log'; readonly line: string };

export function isClusterMessage(m: unknown): m is ClusterMessage {
  return (
    typeof m === 'object' && m !== null && typeof (m as { skiffCluster?: unknown }).skiffCluster === 'string'
  );
}
