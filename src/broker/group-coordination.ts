/**
 * Plugs the classic group coordinator (src/coordinator) into the broker: creates
 * `__consumer_offsets` on first need, answers FindCoordinator with the leader of a group's
 * partition, writes the coordinator's records as the leader of that partition (acks=-1), and
 * loads / unloads groups as this broker gains and loses leadership of offsets partitions.
 * Kafka splits this between KafkaApis (topic auto-creation for FindCoordinator),
 * GroupMetadataManager (storeGroup/storeOffsets, doLoadGroupsAndOffsets) and the
 * leadership callbacks of ReplicaManager. Owned by the Broker; single-threaded.
 */
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import { recordsInBatches } from '../coordinator/batches.js';
import { CONSUMER_OFFSETS_TOPIC } from '../coordinator/config.js';
import type { TopicsImage, TopicView } from '../coordinator/consumer/subscriptions.js';
import type { CoordinatorNode } from '../coordinator/find-coordinator.js';
import { GroupCoordinator } from '../coordinator/group-coordinator.js';
import type { ReplayRecord } from '../coordinator/loader.js';
import type { CoordinatorLog, CoordinatorRecord, TxnProducer } from '../coordinator/records.js';
import type { ClusterMetadata, MetadataImage } from '../metadata/cluster-metadata.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { batchSize, lastOffset, readBatchHeader } from '../protocol/records/batch.js';
import type { Partition } from '../replication/partition.js';
import type { BrokerConfig } from './config.js';
import {
  CoordinatorAppends,
  coordinatorNode,
  createInternalTopic,
  followLeadership,
} from './coordinator-topics.js';
import type { BrokerServices } from './handler-context.js';
import type { ReplicaManager } from './replica-manager.js';

/** Bytes read per step while replaying an offsets partition: bounds the memory of a load. */
const LOAD_READ_BYTES = 1024 * 1024;
/** A batch header is 61 bytes; fewer left in a read means a cut batch. */
const BATCH_HEADER_BYTES = 61;

export interface GroupCoordinationDeps {
  readonly config: BrokerConfig;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly logger: Logger;
  readonly metadata: ClusterMetadata;
  readonly replicaManager: ReplicaManager;
  /** KIP-890's verification through the transaction coordinator (BrokerServices.verifyTransaction). */
  verifyTransaction?: BrokerServices['verifyTransaction'];
}

export class GroupCoordination implements CoordinatorLog {
  readonly coordinator: GroupCoordinator;
  /** Offsets partitions this broker leads, with the leader epoch it loaded them at. */
  private readonly led = new Map<number, number>();
  /** The tail of each partition's append chain: appends resolve in issue order. */
  private readonly appends: CoordinatorAppends;
  private creating: Promise<void> | null = null;
  private stopped = false;
  private topicsCache: { revision: bigint; image: TopicsImage } | null = null;

  constructor(private readonly deps: GroupCoordinationDeps) {
    const { config, clock, scheduler, logger } = deps;
    this.appends = new CoordinatorAppends({
      topic: CONSUMER_OFFSETS_TOPIC,
      nodeId: config.nodeId,
      clock,
      scheduler,
      replicaManager: deps.replicaManager,
      timeout: () => ({ ms: config.offsetsCommitTimeoutMs, config: 'offsets.commit.timeout.ms' }),
    });
    this.coordinator = new GroupCoordinator({
      clock,
      scheduler,
      log: this,
      logger,
      config: {
        groupMinSessionTimeoutMs: config.groupMinSessionTimeoutMs,
        groupMaxSessionTimeoutMs: config.groupMaxSessionTimeoutMs,
        groupInitialRebalanceDelayMs: config.groupInitialRebalanceDelayMs,
        groupMaxSize: config.groupMaxSize,
        offsetsTopicNumPartitions: config.offsetsTopicNumPartitions,
        offsetsRetentionMs: config.offsetsRetentionMs,
        ...config.consumerGroup,
      },
      topics: () => this.topicsImage(),
      locateCoordinator: (p, listenerName) => this.locate(p, listenerName),
      partitionExists: (topic, partition) => {
        const t = deps.metadata.image().topics.get(topic);
        return t !== undefined && partition >= 0 && partition < t.partitions.length;
      },
      verifyTxnPartition: (transactionalId, producerId, producerEpoch, partition) => {
        // A transaction that already wrote to the partition was verified then (Kafka's
        // maybeStartTransactionVerification: no guard while the producer's transaction is open).
        const p = deps.replicaManager.getPartition(CONSUMER_OFFSETS_TOPIC, partition);
        if ((p?.log.producerState.entry(producerId)?.currentTxnFirstOffset ?? -1n) >= 0n) return null;
        const asked = deps.verifyTransaction?.(
          transactionalId,
          producerId,
          producerEpoch,
          new Map([[CONSUMER_OFFSETS_TOPIC, [partition]]]),
        );
        if (asked === undefined || asked === null) return null;
        return asked.then((codes) => codes.get(CONSUMER_OFFSETS_TOPIC)?.get(partition) ?? ErrorCode.NONE);
      },
    });
  }

  /** The topics as the consumer protocol's subscriptions see them, rebuilt only when the image moves. */
  private topicsImage(): TopicsImage {
    const image = this.deps.metadata.image();
    if (this.topicsCache?.revision !== image.revision) {
      const topics = new Map<string, TopicView>();
      for (const t of image.topics.values())
        topics.set(t.name, { topicId: t.topicId, numPartitions: t.partitions.length, internal: t.internal });
      this.topicsCache = { revision: image.revision, image: { version: Number(image.revision), topics } };
    }
    return this.topicsCache.image;
  }

  /** Call after the replica manager applied `image` (start-up and every metadata change). */
  applyImage(image: MetadataImage, previous: MetadataImage | null): void {
    if (this.stopped) return;
    followLeadership(
      CONSUMER_OFFSETS_TOPIC,
      image,
      this.deps.replicaManager,
      this.led,
      (p) => this.load(p),
      (partition) => this.coordinator.unload(partition),
    );
    if (previous !== null) {
      const deleted = [...previous.topics.values()]
        .filter((t) => image.topics.get(t.name)?.topicId !== t.topicId)
        .map((t) => t.name);
      if (deleted.length > 0) void this.coordinator.onTopicsDeleted(deleted);
    }
  }

  shutdown(): void {
    this.stopped = true;
    this.coordinator.shutdown();
  }

  private load(p: Partition): void {
    const partition = p.index;
    this.deps.logger.info(
      `${CONSUMER_OFFSETS_TOPIC}-${partition}: loading groups (leader epoch ${p.leaderEpoch})`,
    );
    this.coordinator.load(partition, replayLog(p)).catch((e: unknown) => {
      // A log that cannot be read leaves the partition unserved (NOT_COORDINATOR) rather than
      // serving groups built from part of it.
      this.deps.logger.warn(`${CONSUMER_OFFSETS_TOPIC}-${partition}: load failed: ${(e as Error).message}`);
      this.coordinator.unload(partition);
      this.led.delete(partition);
    });
  }

  /** The broker leading the group's offsets partition; null (COORDINATOR_NOT_AVAILABLE) while none does. */
  private locate(partition: number, listenerName: string): CoordinatorNode | null {
    const image = this.deps.metadata.image();
    if (!image.topics.has(CONSUMER_OFFSETS_TOPIC)) {
      this.ensureOffsetsTopic();
      return null;
    }
    return coordinatorNode(image, CONSUMER_OFFSETS_TOPIC, partition, listenerName);
  }

  /** Creates __consumer_offsets once (Kafka: on the first FindCoordinator for a group). */
  private ensureOffsetsTopic(): void {
    if (this.creating !== null || this.stopped) return;
    const { config, metadata, logger } = this.deps;
    this.creating = createInternalTopic(metadata, logger, {
      name: CONSUMER_OFFSETS_TOPIC,
      numPartitions: config.offsetsTopicNumPartitions,
      replicationFactor: config.offsetsTopicReplicationFactor,
      configs: () => ({
        'cleanup.policy': 'compact',
        'segment.bytes': String(config.offsetsTopicSegmentBytes),
        'compression.type': 'producer',
      }),
    }).finally(() => {
      // Let a later FindCoordinator try again if this attempt did not produce the topic.
      this.creating = null;
    });
  }

  // ---- CoordinatorLog ------------------------------------------------------------------------

  append(partition: number, records: CoordinatorRecord[], txn?: TxnProducer): Promise<bigint> {
    return this.appends.append(partition, records, txn);
  }
}

/**
 * The records of a partition from its log start to its LEO, read a bounded chunk at a time.
 * Yields between chunks so a long replay does not hold the event loop.
 */
export async function* replayLog(p: Partition): AsyncGenerator<ReplayRecord> {
  let offset = p.log.logStartOffset;
  const end = p.log.logEndOffset;
  while (offset < end) {
    const { records } = p.read(offset, LOAD_READ_BYTES, 'log-end', true);
    let pos = 0;
    let next = offset;
    while (pos + BATCH_HEADER_BYTES <= records.length) {
      const h = readBatchHeader(records, pos);
      const size = batchSize(h);
      if (h.batchLength <= 0 || pos + size > records.length) break;
      next = lastOffset(h) + 1n;
      pos += size;
    }
    if (pos === 0) return;
    yield* recordsInBatches(records.subarray(0, pos));
    offset = next;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
