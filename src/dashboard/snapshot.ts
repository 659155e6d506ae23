/**
 * What the live dashboard shows, as the server sends it (JSON over server-sent events) and the page
 * renders it. Types only: the page's bundle imports this file too. Offsets and bytes are numbers
 * (JSON has no bigint; below 2^53 they are exact).
 */

export interface BrokerView {
  readonly id: number;
  readonly port: number;
  /** The launcher's state: starting, running, stopping, stopped, killed, exited, failed. */
  readonly state: string;
  readonly pid: number | null;
  /** Registered in the metadata (a killed broker stays until its session expires). */
  readonly registered: boolean;
  readonly controller: boolean;
  /** Answered this poll's SkiffDescribeReplication. */
  readonly up: boolean;
  /** Replication bytes/s this broker sends as leader and fetches as follower (-1: unknown). */
  readonly leaderBytesPerSec: number;
  readonly followerBytesPerSec: number;
  /** leader./follower.replication.throttled.rate (-1: none). */
  readonly leaderThrottleRate: number;
  readonly followerThrottleRate: number;
}

export interface ReplicaLag {
  readonly broker: number;
  readonly inIsr: boolean;
  /** Offsets behind the leader's LEO (-1: unknown). */
  readonly lagOffsets: number;
  /** Bytes of the leader's log beyond this replica's LEO (-1: unknown). */
  readonly lagBytes: number;
  readonly logEndOffset: number;
}

export interface PartitionView {
  readonly topic: string;
  readonly partition: number;
  /** -1: offline. */
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  readonly highWatermark: number;
  readonly logEndOffset: number;
  readonly sizeBytes: number;
  /** The leader's view of every replica; empty while the leader is unknown or silent. */
  readonly lag: readonly ReplicaLag[];
}

export interface IsrChangeView {
  readonly timeMs: number;
  readonly topic: string;
  readonly partition: number;
  readonly kind: string;
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly oldIsr: readonly number[];
  readonly newIsr: readonly number[];
  readonly reason: string;
}

/** A recovery, truncation, rebuild or segment deletion on one broker, as it logged it. */
export interface EventView {
  readonly timeMs: number;
  readonly broker: number;
  readonly event: string;
  readonly level: string;
  /** `topic-partition`, when the event is about one. */
  readonly partition: string | null;
  /** Bytes the event removed from the replica (truncated, discarded or deleted); -1: none said. */
  readonly bytesDiscarded: number;
  readonly message: string;
}

export interface Snapshot {
  readonly timeMs: number;
  readonly clusterId: string;
  readonly controllerId: number;
  readonly brokers: readonly BrokerView[];
  readonly partitions: readonly PartitionView[];
  readonly underReplicated: number;
  readonly offline: number;
  /** Newest last, bounded. */
  readonly isrChanges: readonly IsrChangeView[];
  /** Every live broker's latest recoveries, truncations, rebuilds and deletions, newest last. */
  readonly events: readonly EventView[];
  /** Why the last poll could not see everything (a broker down, no broker answering). */
  readonly problems: readonly string[];
}
