/**
 * What the group and transaction coordinators share about their internal topics
 * (__consumer_offsets, __transaction_state): creating the topic on first need, following which of
 * its partitions this broker leads, and writing to a partition as its leader.
 */
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import { coordinatorBatch } from '../coordinator/batches.js';
import type { CoordinatorNode } from '../coordinator/find-coordinator.js';
import type { CoordinatorLog, CoordinatorRecord, TxnProducer } from '../coordinator/records.js';
import { type ClusterMetadata, endpointOf, type MetadataImage } from '../metadata/cluster-metadata.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { KafkaError } from '../protocol/kafka-error.js';
import { awaitAcks } from '../replication/delayed-produce.js';
import type { Partition } from '../replication/partition.js';
import type { ReplicaManager } from './replica-manager.js';

export interface CoordinatorAppendsDeps {
  readonly topic: string;
  readonly nodeId: number;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly replicaManager: ReplicaManager;
  /** How long an append waits for its replication, and the config that says so (for the error). */
  readonly timeout: () => { readonly ms: number; readonly config: string };
}

/**
 * A coordinator's writes as the leader of the partition written: one batch per append, acks=-1,
 * resolved with the batch's base offset once the HW covers it, in the order issued per partition.
 * Owned by the broker's GroupCoordination / TransactionCoordination; single-threaded.
 */
export class CoordinatorAppends implements CoordinatorLog {
  /** The tail of each partition's append chain: appends resolve in issue order. */
  private readonly tails = new Map<number, Promise<void>>();

  constructor(private readonly deps: CoordinatorAppendsDeps) {}

  append(partition: number, records: CoordinatorRecord[], txn?: TxnProducer): Promise<bigint> {
    const previous = this.tails.get(partition) ?? Promise.resolve();
    const run = () => this.appendNow(partition, records, txn);
    const next = previous.then(run, run);
    const tail = next.then(
      () => {},
      () => {},
    );
    this.tails.set(partition, tail);
    void tail.then(() => {
      if (this.tails.get(partition) === tail) this.tails.delete(partition);
    });
    return next;
  }

  /** One leader append with acks=-1: resolves to the batch's base offset once the HW covers it. */
  private async appendNow(
    partition: number,
    records: CoordinatorRecord[],
    txn?: TxnProducer,
  ): Promise<bigint> {
    const { replicaManager, topic, nodeId, clock, scheduler } = this.deps;
    const p = replicaManager.getPartition(topic, partition);
    if (p === undefined) {
      throw KafkaError.fromCode(
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        `${topic}-${partition} is not hosted by broker ${nodeId}`,
      );
    }
    // Throws NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS or MESSAGE_TOO_LARGE as a KafkaError, and
    // INVALID_PRODUCER_EPOCH for a transactional commit of a fenced producer epoch.
    const { info, acks } = p.appendAsLeader(coordinatorBatch(records, clock.nowMs(), txn), -1, 'coordinator');
    const timeout = this.deps.timeout();
    const [code] = await awaitAcks(replicaManager.replication.purgatory, scheduler, [acks], timeout.ms);
    if (code === ErrorCode.REQUEST_TIMED_OUT) {
      throw KafkaError.fromCode(
        code,
        `${p.log.name}: not replicated within ${timeout.config} (${timeout.ms} ms)`,
      );
    }
    if (code !== ErrorCode.NONE)
      throw KafkaError.fromCode(code!, `${p.log.name}: the append was not acknowledged`);
    return info.firstOffset;
  }
}

/**
 * Brings `led` (partition → the leader epoch it was loaded at) in line with the partitions of
 * `topic` this broker leads in `image`: `load` for each newly led one (or led at a new epoch),
 * `unload` for each no longer led.
 */
export function followLeadership(
  topic: string,
  image: MetadataImage,
  replicaManager: ReplicaManager,
  led: Map<number, number>,
  load: (p: Partition) => void,
  unload: (partition: number) => void,
): void {
  const stillLed = new Set<number>();
  for (const state of image.topics.get(topic)?.partitions ?? []) {
    const p = replicaManager.getPartition(topic, state.partition);
    if (!p?.isLeader) continue;
    stillLed.add(state.partition);
    if (led.get(state.partition) === p.leaderEpoch) continue;
    led.set(state.partition, p.leaderEpoch);
    load(p);
  }
  for (const partition of [...led.keys()]) {
    if (stillLed.has(partition)) continue;
    led.delete(partition);
    unload(partition);
  }
}

export interface InternalTopicSpec {
  readonly name: string;
  readonly numPartitions: number;
  /** Wanted; capped by the live brokers (a one-broker cluster still gets its topic). */
  readonly replicationFactor: number;
  readonly configs: (replicationFactor: number) => Readonly<Record<string, string>>;
}

/**
 * Creates an internal topic (Kafka: on the first FindCoordinator that needs it); resolves once the
 * attempt ends, with one log line either way. The caller lets a later request try again.
 */
export async function createInternalTopic(
  metadata: ClusterMetadata,
  logger: Logger,
  spec: InternalTopicSpec,
): Promise<void> {
  const live = metadata.image().brokers.size;
  const replicationFactor = Math.max(1, Math.min(spec.replicationFactor, live));
  try {
    const [r] = await metadata.controller.createTopics(
      [
        {
          name: spec.name,
          numPartitions: spec.numPartitions,
          replicationFactor,
          configs: { ...spec.configs(replicationFactor) },
        },
      ],
      false,
    );
    if (r && r.errorCode !== 0 && r.errorCode !== ErrorCode.TOPIC_ALREADY_EXISTS) {
      logger.warn(`could not create ${spec.name}: ${r.errorMessage ?? `error ${r.errorCode}`}`);
    } else if (r?.errorCode === 0) {
      logger.info(
        `created ${spec.name} (${spec.numPartitions} partitions, replication factor ${replicationFactor})`,
      );
    }
  } catch (e) {
    logger.warn(`could not create ${spec.name}: ${(e as Error).message}`);
  }
}

/**
 * The leader of `topic`'s `partition` as FindCoordinator answers it, at its endpoint on the
 * listener asked through; null (COORDINATOR_NOT_AVAILABLE) while there is none.
 */
export function coordinatorNode(
  image: MetadataImage,
  topic: string,
  partition: number,
  listenerName: string,
): CoordinatorNode | null {
  const leader = image.topics.get(topic)?.partitions[partition]?.leader ?? -1;
  const broker = image.brokers.get(leader);
  const endpoint = broker === undefined ? undefined : endpointOf(broker, listenerName);
  if (endpoint === undefined) return null;
  return { nodeId: leader, host: endpoint.host, port: endpoint.port };
}
