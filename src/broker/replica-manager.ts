/**
 * The partitions this broker hosts (Kafka's ReplicaManager, leader side): follows the metadata
 * image — creating a Partition and its log for every replica assigned here, applying leader /
 * epoch / ISR changes, deleting logs of deleted topics. The roles themselves (leader state,
 * followers and their fetchers) and the purgatory of requests waiting on a partition are the
 * ReplicationManager's. Owned by the Broker; applied images arrive in revision order.
 */

import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { nextTurn, runFirstSliceNow, runInSlices, runToEnd } from '../common/slices.js';
import { topicPartitionKey } from '../common/topic-partition.js';
import type { MetadataImage, PartitionState } from '../metadata/cluster-metadata.js';
import { Partition } from '../replication/partition.js';
import type { ReplicationManager } from '../replication/replication-manager.js';
import type { Log } from '../storage/log.js';
import type { LogConfig } from '../storage/log-config.js';
import { isStorageError } from '../storage/log-dir-failure.js';
import type { LogManager, TopicPartition } from '../storage/log-manager.js';

export class ReplicaManager {
  private readonly partitions = new Map<string, Partition>();
  /**
   * Partitions whose log is in a failed log dir (Kafka's HostedPartition.Offline): not served,
   * requests for them answer KAFKA_STORAGE_ERROR, until the broker restarts.
   */
  private readonly offline = new Map<string, TopicPartition>();
  private strayLogsChecked = false;

  constructor(
    readonly brokerId: number,
    private readonly logManager: LogManager,
    /** The replication roles: leaders' ISR and HW, followers' fetchers. */
    readonly replication: ReplicationManager,
    private readonly topicConfig: (topic: string) => LogConfig,
    private readonly logger: Logger,
    /** Runs when replicas here go offline (the broker tells the controller). */
    private readonly onOffline: () => void = () => {},
  ) {}

  get partitionCount(): number {
    return this.partitions.size;
  }

  getPartition(topic: string, partition: number): Partition | undefined {
    return this.partitions.get(topicPartitionKey(topic, partition));
  }

  /** Whether the partition's replica here is in an offline log dir. */
  isOffline(topic: string, partition: number): boolean {
    return this.offline.has(topicPartitionKey(topic, partition));
  }

  /** Whether `logDir` (as configured) failed and is offline. */
  isLogDirOffline(logDir: string): boolean {
    return !this.logManager.liveLogDirs.includes(logDir);
  }

  /** The partitions whose replica here is in an offline log dir. */
  offlinePartitions(): TopicPartition[] {
    return [...this.offline.values()];
  }

  /**
   * Stops serving every replica in a failed log dir (Kafka's ReplicaManager.handleLogDirFailure):
   * leaders resign and followers stop fetching, requests waiting on them complete, the partitions
   * are marked offline, then the log manager drops their logs. Returns the partitions taken
   * offline; the caller tells the controller.
   */
  handleLogDirFailure(dir: string): string[] {
    const newOffline: string[] = [];
    for (const [key, p] of [...this.partitions]) {
      if (this.logManager.logDirOf(p.topic, p.index) !== dir) continue;
      this.partitions.delete(key);
      this.offline.set(key, { topic: p.topic, partition: p.index });
      this.replication.removePartition(key);
      newOffline.push(key);
    }
    const { future } = this.logManager.handleLogDirFailure(dir);
    const moving = future.map((tp) => topicPartitionKey(tp.topic, tp.partition));
    this.logger.warn(
      `Broker ${this.brokerId} stopped fetcher for partitions ${newOffline.join(',')} and stopped moving logs for partitions ${moving.join(',')} because they are in the failed log directory ${dir}.`,
    );
    // Parked requests on them complete now and find the partition offline.
    for (const key of newOffline) this.replication.partitionChanged(key);
    this.logger.info(`Stopped serving replicas in dir ${dir}`);
    this.onOffline();
    return newOffline;
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

  /**
   * applyImage for the images after start-up: at once when it takes under `sliceMs` (null), else
   * the rest in slices (creating thousands of new partitions' logs takes tens of seconds of
   * synchronous disk work, and the broker's heartbeats and its controller must go on meanwhile).
   * `stopped` ends the work between partitions; `betweenSlices` runs before each turn given away
   * (what follows the partitions set up so far). The caller applies one image at a time.
   */
  applyImageInSlices(
    image: MetadataImage,
    clock: Clock,
    sliceMs: number,
    stopped: () => boolean,
    betweenSlices: () => void,
  ): Promise<void> | null {
    return runFirstSliceNow(untilStopped(this.applying(image), stopped), clock, sliceMs, () => {
      betweenSlices();
      return nextTurn();
    });
  }

  /** applyImage's work, yielding after each partition. */
  private *applying(image: MetadataImage): Generator<void, void, undefined> {
    const wanted = new Set<string>();
    for (const topic of image.topics.values()) {
      for (const state of topic.partitions) {
        if (!state.replicas.includes(this.brokerId)) continue;
        const key = topicPartitionKey(topic.name, state.partition);
        wanted.add(key);
        // An offline replica stays so until the restart, whatever the metadata says of it.
        if (this.offline.has(key)) continue;
        let p = this.partitions.get(key);
        if (p && p.topicId !== topic.topicId) {
          // Same name, new topic id: the topic was deleted and created again.
          this.remove(key, p);
          p = undefined;
        }
        if (!p) {
          this.removeLogOfEarlierTopic(topic.name, state.partition, topic.topicId);
          const log = this.openLog(topic.name, state, topic.topicId);
          if (log === null) continue;
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
    for (const key of [...this.offline.keys()]) if (!wanted.has(key)) this.offline.delete(key);
    if (!this.strayLogsChecked) this.removeStrayLogs(wanted);
  }

  /**
   * The partition's log, created if it is new; null when it cannot be served because it is (or
   * may be) in a failed log dir: the partition is then offline here (Kafka's getOrCreateLog
   * refuses to create a log that is not new while some log dir is offline).
   */
  private openLog(topic: string, state: PartitionState, topicId: string): Log | null {
    // Kafka's isNew: the partition as created, no leader or ISR change since.
    const isNew = state.leaderEpoch === 0 && state.partitionEpoch === 0;
    const { partition } = state;
    try {
      return this.logManager.getOrCreateLog(topic, partition, this.topicConfig(topic), topicId, isNew);
    } catch (e) {
      if (!isStorageError(e)) throw e;
      this.offline.set(topicPartitionKey(topic, partition), { topic, partition });
      this.logger.warn(`${topicPartitionKey(topic, partition)}: offline here: ${e.message}`);
      this.onOffline();
      return null;
    }
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

/** `steps`, ended early once `stopped()` says so (checked before each step). */
function* untilStopped(steps: Iterable<void>, stopped: () => boolean): Generator<void, void, undefined> {
  for (const step of steps) {
    yield step;
    if (stopped()) return;
  }
}
