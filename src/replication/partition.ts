/**
 * One partition replica hosted by this broker (Kafka's core/cluster/Partition): its log, its role
 * (leader or follower) and leader epoch from the metadata image. The leader's HW, ISR and acks
 * rules are PartitionLeaderState's, the follower's fetch state PartitionFollower's; an append or a
 * log start move here tries what waits on the partition in the ReplicationManager's purgatory.
 * Owned by the broker's ReplicaManager; every call is synchronous, serialised by the event loop.
 */
import { topicPartitionKey } from '../common/topic-partition.js';
import type { PartitionState } from '../metadata/cluster-metadata.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { KafkaError } from '../protocol/kafka-error.js';
import type { LogReadResult } from '../storage/local-log.js';
import type { AppendOrigin, FetchIsolation, Log, LogAppendInfo } from '../storage/log.js';
import type { PendingAcks } from './delayed-produce.js';
import type { PartitionLeaderState } from './leader-state.js';
import { localOffsetLag, UNKNOWN_OFFSET_LAG } from './offset-lag.js';
import type { ReplicationManager } from './replication-manager.js';

const {
  NOT_LEADER_OR_FOLLOWER,
  FENCED_LEADER_EPOCH,
  UNKNOWN_LEADER_EPOCH,
  OFFSET_OUT_OF_RANGE,
  POLICY_VIOLATION,
} = ErrorCode;

/** DeleteRecords' offset that stands for the high watermark (Kafka's DeleteRecordsRequest.HIGH_WATERMARK). */
const DELETE_TO_HIGH_WATERMARK = -1n;

/** A leader append: where it went, and what acknowledges it with acks=all. */
export interface LeaderAppend {
  readonly info: LogAppendInfo;
  readonly acks: PendingAcks;
}

export class Partition {
  private state: PartitionState;
  /** Retried producer batches answered from the producer state instead of appended (a metric). */
  duplicateBatches = 0;
  /** `<topic>-<partition>`: the key of this partition in the purgatory and in replication. */
  readonly key: string;

  constructor(
    readonly topicId: string,
    readonly log: Log,
    readonly localBrokerId: number,
    state: PartitionState,
    /** The broker's replication roles: the leader state and follower of this partition. */
    readonly replication: ReplicationManager,
  ) {
    this.state = state;
    // A partition's topic and index never change (a new topic id makes a new Partition).
    this.key = topicPartitionKey(state.topic, state.partition);
  }

  get topic(): string {
    return this.state.topic;
  }

  get index(): number {
    return this.state.partition;
  }

  get leaderId(): number {
    return this.state.leader;
  }

  get leaderEpoch(): number {
    return this.state.leaderEpoch;
  }

  get isr(): readonly number[] {
    return this.state.isr;
  }

  get isLeader(): boolean {
    return this.state.leader === this.localBrokerId;
  }

  /** Replication's leader state while this broker leads the partition. */
  get leaderState(): PartitionLeaderState | undefined {
    return this.replication.leader(this.key);
  }

  /** Applies a new partition state from the metadata image (leader, epoch, ISR). */
  applyState(state: PartitionState): void {
    this.state = state;
  }

  /** NOT_LEADER_OR_FOLLOWER unless this replica leads. */
  checkLeader(): void {
    if (!this.isLeader) {
      throw KafkaError.fromCode(
        NOT_LEADER_OR_FOLLOWER,
        `${this.log.name}: broker ${this.localBrokerId} is not the leader (leader is ${this.state.leader})`,
      );
    }
  }

  /** Kafka's currentLeaderEpoch check: -1 skips it, older is fenced, newer is not known yet. */
  checkLeaderEpoch(requestEpoch: number): void {
    if (requestEpoch === -1) return;
    if (requestEpoch < this.state.leaderEpoch) {
      throw KafkaError.fromCode(
        FENCED_LEADER_EPOCH,
        `${this.log.name}: request epoch ${requestEpoch} is older than the current leader epoch ${this.state.leaderEpoch}`,
      );
    }
    if (requestEpoch > this.state.leaderEpoch) {
      throw KafkaError.fromCode(
        UNKNOWN_LEADER_EPOCH,
        `${this.log.name}: request epoch ${requestEpoch} is newer than the current leader epoch ${this.state.leaderEpoch}`,
      );
    }
  }

  /**
   * A leader append (Produce, the coordinators; `coordinator` origin for transaction markers): offsets, epoch and idempotence checks are
   * the log's (a retried batch already in the log comes back with `duplicate` and its first
   * append's offsets). What waits on this partition is tried once the records are in.
   */
  appendAsLeader(records: Buffer, requiredAcks: number, origin: AppendOrigin = 'client'): LeaderAppend {
    this.checkLeader();
    const ls = this.leaderState;
    if (!ls) {
      throw KafkaError.fromCode(
        NOT_LEADER_OR_FOLLOWER,
        `${this.log.name}: broker ${this.localBrokerId} has not taken leadership yet`,
      );
    }
    ls.checkBeforeAppend(requiredAcks);
    const info = ls.appendAsLeader(records, requiredAcks, origin);
    if (info.duplicate) this.duplicateBatches++;
    else this.replication.partitionChanged(this.key);
    return { info, acks: { key: this.key, leader: ls, requiredOffset: info.lastOffset + 1n } };
  }

  /**
   * DeleteRecords on the leader (Kafka's deleteRecordsOnLeader): `-1` stands for the HW; any other
   * negative offset, or one beyond the HW, is OFFSET_OUT_OF_RANGE; a log whose cleanup.policy lacks
   * delete refuses with POLICY_VIOLATION. Moves the log start to the offset when that is ahead of
   * it, and tries what waits on the partition then. Returns the offset asked for (the one the low
   * watermark must reach) and whether the log start moved.
   */
  deleteRecordsOnLeader(offset: bigint): { readonly requestedOffset: bigint; readonly moved: boolean } {
    this.checkLeader();
    if (!this.log.config.delete) {
      throw KafkaError.fromCode(
        POLICY_VIOLATION,
        `Records of partition ${this.log.name} can not be deleted due to the configured policy`,
      );
    }
    const requestedOffset = offset === DELETE_TO_HIGH_WATERMARK ? this.log.highWatermark : offset;
    if (requestedOffset < 0n) {
      throw KafkaError.fromCode(
        OFFSET_OUT_OF_RANGE,
        `The offset ${requestedOffset} for partition ${this.log.name} is not valid`,
      );
    }
    const moved = this.log.maybeIncrementLogStartOffset(requestedOffset, 'client delete records request');
    if (moved) this.replication.partitionChanged(this.key);
    return { requestedOffset, moved };
  }

  /** Reads for a consumer (up to the HW) or a follower (up to the LEO); `forSocket`: see LogSegment.read. */
  read(
    fetchOffset: bigint,
    maxBytes: number,
    isolation: FetchIsolation,
    minOneMessage: boolean,
    forSocket = false,
  ): LogReadResult {
    return this.log.read(fetchOffset, maxBytes, isolation, minOneMessage, forSocket);
  }

  /**
   * How far this replica is behind its leader, in offsets: the leader's LEO minus this replica's
   * LEO, for every replica alike (DescribeLogDirs' offsetLag; Skiff's rule, see ARCHITECTURE.md
   * "Where Skiff is better" — Kafka reports the HW-based lag only for future replicas). A leader
   * is its own leader, so 0; a follower that has not heard from a leader yet, or a replica of an
   * offline partition, reports -1 (unknown).
   * The rule itself is replication's (offset-lag.ts), so DescribeLogDirs and replication agree:
   * the leader reports 0 for itself (its leaderState.replicaLags() has every replica's exact lag);
   * a follower reports max(leader HW from its latest Fetch answer, own LEO) − own LEO
   * (localOffsetLag), a lower bound of the true lag since Kafka's Fetch carries no leader LEO.
   */
  offsetLag(): bigint {
    const leader = this.leaderState;
    if (leader) return localOffsetLag({ leader });
    const follower = this.replication.follower(this.key);
    if (follower) return localOffsetLag({ follower });
    // No leader to follow (offline partition) or no state yet: unknown, not "in sync".
    return UNKNOWN_OFFSET_LAG;
  }
}
