/**
 * The partitions this broker hosts (Kafka's ReplicaManager, leader side): follows the metadata
 * image — creating a Partition and its log for every replica assigned here, applying leader /
 * epoch / ISR changes, deleting logs of deleted topics. The roles themselves (leader state,
 * followers and their fetchers) and the purgatory of requests waiting on a partition are the
 * ReplicationManager's. Owned by the Broker; applied images arrive in revision order.
 */

import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { runInSlices, runToEnd } from '../common/slices.js';
import { topicPartitionKey } from '../common/topic-partition.js';
import type { MetadataImage } from '../metadata/cluster-metadata.js';
import { Partition } from '../replication/partition.js';
import type { ReplicationManager } from '../replication/replication-manager.js';
import type { LogConfig } from '../storage/log-config.js';
import type { LogManager } from '../storage/log-manager.js';

export class ReplicaManager {
  private readonly partitions = new Map<string, Partition>();
  private strayLogsChecked = false;

  constructor(
    readonly brokerId: number,
    private readonly logManager: LogManager,
    /** The replication roles: leaders' ISR and HW, followers' fetchers. */
    readonly replication: ReplicationManager,
    private readonly topicConfig: (topic: string) => LogConfig,
    private readonly logger: Logger,
  ) {}

  get partitionCount(): number {
    return this.partitions.size;
  }

  getPartition(topic: string, partition: number): Partition | undefined {
    return this.partitions.get(topicPartitionKey(topic, partition));
  }

  /** The log dir holding a hosted partition's log. */
  logDirOf(topic: string, partition: number): string | undefined {
    return this.logManager.logDirOf(topic, partition);
  }

  allPartitions(): Partition[] {
    return [...this.partitions.values()];
  }

  /** Brings the hosted partitions in line with `image`. */
  applyImage(image: MetadataImage): void {
    runToEnd(this.applying(image));
  }

  /**
   * applyImage for the first image at start-up, giving the event loop a turn whenever `sliceMs`
   * of it have passed (becoming leader writes each partition's leader-epoch-checkpoint: thousands
   * of partitions take seconds, and the broker's heartbeats must go on meanwhile). The image may
   * move on during the slices: the caller applies the latest one afterwards.
   */
  applyFirstImageInSlices(image: MetadataImage, clock: Clock, sliceMs: number): Promise<void> {
    return runInSlices(this.applying(image), clock, sliceMs);
  }

  /** applyImage's work, yielding after each partition. */
  private *applying(image: MetadataImage): Generator<void, void, undefined> {
    const wanted = new Set<string>();
    for (const topic of image.topics.values()) {
      for (const state of topic.partitions) {
        if (!state.replicas.includes(this.brokerId)) continue;
        const key = topicPartitionKey(topic.name, state.partition);
        wanted.add(key);
        let p = this.partitions.get(key);
        if (p && p.topicId !== topic.topicId) {
          // Same name, new topic id: the topic was deleted and created again.
          this.remove(key, p);
          p = undefined;
        }
        if (!p) {
          this.removeLogOfEarlierTopic(topic.name, state.partition, topic.topicId);
          const log = this.logManager.getOrCreateLog(
            topic.name,
            state.partition,
            this.topicConfig(topic.name),
            topic.topicId,
          );
          p = new Partition(topic.topicId, log, this.brokerId, state, this.replication);
          this.partitions.set(key, p);
        } else {
          p.applyState(state);
        }
        this.replication.applyPartitionState(state, p.log, topic.topicId);
        this.replication.partitionChanged(key);
        yield;
      }
    }
    for (const [key, p] of [...this.partitions]) if (!wanted.has(key)) this.remove(key, p);
    if (!this.strayLogsChecked) this.removeStrayLogs(wanted);
  }

  /**
   * Logs found on disk at start-up that the first image does not assign to this broker: replicas
   * moved away (reassigned, topic deleted) while it was down. Deleted as Kafka deletes its stray
   * logs — deferred, through the log manager. Only on the first image: later removals go through
   * remove().
   */
  private removeStrayLogs(wanted: ReadonlySet<string>): void {
    this.strayLogsChecked = true;
    for (const log of this.logManager.allLogs()) {
      const key = topicPartitionKey(log.topic, log.partition);
      if (wanted.has(key)) continue;
      this.logManager.deleteLog(log.topic, log.partition);
      this.logger.info(`${key}: stray log (not assigned to broker ${this.brokerId} by the metadata) deleted`);
    }
  }

  /**
   * A log on disk whose `partition.metadata` names another topic id than the image's topic of that
   * name: a directory of an earlier topic, deleted while this broker was down and created again.
   * Kafka refuses it for the new topic (InconsistentTopicIdException) and sets it aside as a stray
   * log; Skiff deletes it as it deletes its other stray logs, and the partition gets a new log.
   */
  private removeLogOfEarlierTopic(topic: string, partition: number, topicId: string): void {
    const held = this.logManager.getLog(topic, partition)?.topicId;
    if (held === undefined || held === null || held === topicId) return;
    this.logManager.deleteLog(topic, partition);
    this.logger.warn(
      `${topicPartitionKey(topic, partition)}: its log holds topic id ${held}, not ${topicId}: a log of an earlier topic of this name, deleted as a stray log`,
    );
  }

  private remove(key: string, p: Partition): void {
    this.partitions.delete(key);
    this.replication.removePartition(key);
    this.logManager.deleteLog(p.topic, p.index);
    this.logger.info(`stopped hosting ${key} (topic id ${p.topicId}): its log was deleted`);
    // Parked requests on it complete now and find the partition gone.
    this.replication.partitionChanged(key);
  }

  /** Resolves once the log start offsets moved so far are in the log dirs' checkpoints. */
  whenLogStartOffsetsPersisted(): Promise<void> {
    return this.logManager.whenLogStartOffsetsPersisted();
  }
}
