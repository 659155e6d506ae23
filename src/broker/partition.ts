/**
 * One partition replica hosted by this broker (Kafka's Partition): its log, its role (leader or
 * follower) and leader epoch from the metadata image, and the HW rule
 * of a leader — the smallest LEO among the ISR. Follower LEOs arrive through follower fetches
 * (`updateFollowerFetchState`); with an ISR of one the HW follows the LEO at once.
 * Owned by the ReplicaManager; every call is synchronous, so calls are serialised by the event loop.
 */
import type { PartitionState } from '../metadata/cluster-metadata.js';
import { KafkaError } from '../protocol/kafka-error.js';
import { batchSize, readBatchHeader } from '../protocol/records/batch.js';
import type { PartitionLeaderState } from '../replication/leader-state.js';
import { localOffsetLag, offsetLag, UNKNOWN_OFFSET_LAG } from '../replication/offset-lag.js';
import type { ReplicationManager } from '../replication/replication-manager.js';
import type { LogReadResult } from '../storage/local-log.js';
import type { FetchIsolation, Log, LogAppendInfo } from '../storage/log.js';

const NOT_LEADER_OR_FOLLOWER = 6;
const NOT_ENOUGH_REPLICAS = 19;
const INVALID_TXN_STATE = 48;
const FENCED_LEADER_EPOCH = 74;
const UNKNOWN_LEADER_EPOCH = 75;
const INVALID_RECORD = 87;

export class Partition {
  private state: PartitionState;
  /** Retried producer batches answered from the producer state instead of appended (a metric). */
  duplicateBatches = 0;
  /** Follower LEOs as last reported by their fetches, for the HW. */
  private readonly followerLeos = new Map<number, bigint>();
  /**
   * The leader's LEO as this follower last learned it (replication feeds it from fetch responses'
   * HW/LEO); null until then. Only a follower uses it, for offsetLag.
   */
  private leaderLeo: bigint | null = null;

  constructor(
    readonly topicId: string,
    readonly log: Log,
    readonly localBrokerId: number,
    state: PartitionState,
    /**
     * The broker's replication roles (multi-broker metadata): when set, the leader's HW, ISR and
     * acks rules are replication's PartitionLeaderState, and this class's own HW rule is off.
     */
    readonly replication: ReplicationManager | null = null,
  ) {
    this.state = state;
    this.maybeIncrementHighWatermark();
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

  private get key(): string {
    return `${this.state.topic}-${this.state.partition}`;
  }

  /** Replication's leader state while this broker leads the partition (replicated brokers only). */
  get leaderState(): PartitionLeaderState | undefined {
    return this.replication?.leader(this.key);
  }

  /** Applies a new partition state from the metadata image (leader, epoch, ISR). */
  applyState(state: PartitionState): void {
    const newEpoch = state.leaderEpoch !== this.state.leaderEpoch;
    const becameLeader = state.leader === this.localBrokerId && newEpoch;
    // A new leader's LEO is unknown until its first fetch response.
    if (newEpoch) this.leaderLeo = null;
    this.state = state;
    for (const id of [...this.followerLeos.keys()])
      if (!state.replicas.includes(id)) this.followerLeos.delete(id);
    if (becameLeader) this.followerLeos.clear();
    this.maybeIncrementHighWatermark();
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
   * A leader append (Produce): offsets, epoch and idempotence checks are the log's (a retried
   * batch already in the log comes back with `duplicate` and its first append's offsets).
   */
  appendAsLeader(records: Buffer, requiredAcks: number, minInsyncReplicas: number): LogAppendInfo {
    this.checkLeader();
    if (this.replication) {
      const ls = this.leaderState;
      if (!ls) {
        throw KafkaError.fromCode(
          NOT_LEADER_OR_FOLLOWER,
          `${this.log.name}: broker ${this.localBrokerId} has not taken leadership yet`,
        );
      }
      ls.checkBeforeAppend(requiredAcks);
      this.refuseTransactionalBatches(records);
      const info = ls.appendAsLeader(records, requiredAcks);
      if (info.duplicate) this.duplicateBatches++;
      return info;
    }
    if (requiredAcks === -1 && this.state.isr.length < minInsyncReplicas) {
      throw KafkaError.fromCode(
        NOT_ENOUGH_REPLICAS,
        `${this.log.name}: the ISR [${this.state.isr.join(',')}] is smaller than min.insync.replicas ${minInsyncReplicas}`,
      );
    }
    this.refuseTransactionalBatches(records);
    const info = this.log.appendAsLeader(records, this.state.leaderEpoch);
    if (info.duplicate) this.duplicateBatches++;
    this.maybeIncrementHighWatermark();
    return info;
  }

  // Transactions (markers, LSO, aborted lists) are not implemented: refuse their batches instead
  // of storing data whose visibility rules we would get wrong. The log validates everything else.
  private refuseTransactionalBatches(records: Buffer): void {
    for (let pos = 0; pos + 61 <= records.length; ) {
      const h = readBatchHeader(records, pos);
      if (h.batchLength <= 0) return;
      if ((h.attributes & 0x10) !== 0) {
        throw KafkaError.fromCode(INVALID_TXN_STATE, `${this.log.name}: transactions are not supported yet`);
      }
      if ((h.attributes & 0x20) !== 0) {
        throw KafkaError.fromCode(
          INVALID_RECORD,
          `${this.log.name}: producers may not write control batches`,
        );
      }
      pos += batchSize(h);
    }
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

  /** A follower fetched at `fetchOffset`: its LEO; may move the HW. Returns whether the HW moved. */
  updateFollowerFetchState(replicaId: number, fetchOffset: bigint): boolean {
    if (!this.state.replicas.includes(replicaId)) return false;
    this.followerLeos.set(replicaId, fetchOffset);
    return this.maybeIncrementHighWatermark();
  }

  /** A follower learned the leader's LEO (from a fetch response). */
  updateLeaderLogEndOffset(leo: bigint): void {
    this.leaderLeo = leo;
  }

  /**
   * How far this replica is behind its leader, in offsets: the leader's LEO minus this replica's
   * LEO, for every replica alike (DescribeLogDirs' offsetLag; Skiff's rule, see ARCHITECTURE.md
   * "Where Skiff is better" — Kafka reports the HW-based lag only for future replicas). A leader
   * is its own leader, so 0; a follower that has not heard from a leader yet, or a replica of an
   * offline partition, reports -1 (unknown).
   * The rule itself is replication's (offset-lag.ts), so DescribeLogDirs and replication agree.
   * Replicated: the leader reports 0 for itself (its leaderState.replicaLags() has every replica's
   * exact lag); a follower reports max(leader HW from its latest Fetch answer, own LEO) − own LEO
   * (localOffsetLag), a lower bound of the true lag since Kafka's Fetch carries no leader LEO.
   */
  offsetLag(): bigint {
    if (this.replication) {
      const leader = this.leaderState;
      if (leader) return localOffsetLag({ leader });
      const follower = this.replication.follower(this.key);
      if (follower) return localOffsetLag({ follower });
      // No leader to follow (offline partition) or no state yet: unknown, not "in sync".
      return UNKNOWN_OFFSET_LAG;
    }
    const leo = this.log.logEndOffset;
    return offsetLag(this.isLeader ? leo : (this.leaderLeo ?? leo), leo);
  }

  /** HW = min LEO over the ISR, moving forward only; only a leader advances it. */
  maybeIncrementHighWatermark(): boolean {
    if (!this.isLeader || this.replication) return false;
    let hw = this.log.logEndOffset;
    for (const id of this.state.isr) {
      if (id === this.localBrokerId) continue;
      const leo = this.followerLeos.get(id) ?? this.log.logStartOffset;
      if (leo < hw) hw = leo;
    }
    return this.log.maybeIncrementHighWatermark(hw);
  }
}
