/**
 * Plugs the transaction coordinator (src/coordinator/transaction) into the broker: creates
 * `__transaction_state` on first need (compacted, transaction.state.log.* configs), answers
 * FindCoordinator for transactional ids with the leader of their partition, writes the
 * coordinator's records as that partition's leader (acks=-1), loads / unloads transactional ids as
 * this broker gains and loses leadership of the topic's partitions, and carries the coordinator's
 * WriteTxnMarkers to partition leaders (itself included). Kafka splits this between KafkaApis,
 * TransactionStateManager and TransactionMarkerChannelManager. Owned by the Broker; single-threaded.
 */
import type { CoordinatorNode } from '../coordinator/find-coordinator.js';
import type { CoordinatorLog, CoordinatorRecord } from '../coordinator/records.js';
import { TRANSACTION_STATE_TOPIC } from '../coordinator/transaction/config.js';
import { type TopicPartitions, TransactionCoordinator } from '../coordinator/transaction/coordinator.js';
import type { TxnMarkerTransport } from '../coordinator/transaction/markers.js';
import type { MetadataImage } from '../metadata/cluster-metadata.js';
import type { AddPartitionsToTxnRequest } from '../protocol/generated/AddPartitionsToTxnRequest.js';
import type { AddPartitionsToTxnResponse } from '../protocol/generated/AddPartitionsToTxnResponse.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import type { WriteTxnMarkersRequest } from '../protocol/generated/WriteTxnMarkersRequest.js';
import type { WriteTxnMarkersResponse } from '../protocol/generated/WriteTxnMarkersResponse.js';
import type { Partition } from '../replication/partition.js';
import {
  CoordinatorAppends,
  coordinatorNode,
  createInternalTopic,
  followLeadership,
} from './coordinator-topics.js';
import { replayLog } from './group-coordination.js';
import type { BrokerServices } from './handler-context.js';

export interface TransactionCoordinationDeps
  extends Pick<
    BrokerServices,
    'config' | 'clock' | 'scheduler' | 'logger' | 'metadata' | 'replicaManager' | 'nextProducerId'
  > {
  /** Answers WriteTxnMarkers as a partition leader (this broker's own markers take this path too). */
  writeTxnMarkers(request: WriteTxnMarkersRequest): Promise<WriteTxnMarkersResponse>;
  /** Sends AddPartitionsToTxn (verifyOnly) to another broker's transaction coordinator. */
  sendAddPartitionsToTxn(
    brokerId: number,
    request: AddPartitionsToTxnRequest,
  ): Promise<AddPartitionsToTxnResponse>;
  /** transaction.partition.verification.enable, read at each produce (a dynamic config). */
  verificationEnabled(): boolean;
  /** Sends WriteTxnMarkers to another broker (over the inter-broker listener). */
  sendTxnMarkers(brokerId: number, request: WriteTxnMarkersRequest): Promise<WriteTxnMarkersResponse>;
  /** request.timeout.ms: how long a coordinator write waits for its replication. */
  requestTimeoutMs(): number;
}

export class TransactionCoordination implements CoordinatorLog, TxnMarkerTransport {
  readonly coordinator: TransactionCoordinator;
  /** __transaction_state partitions this broker leads, with the leader epoch it loaded them at. */
  private readonly led = new Map<number, number>();
  private readonly appends: CoordinatorAppends;
  /** Verifications in flight, by topic, partition and producer id: the markers written meanwhile. */
  private readonly verifying = new Map<string, { watchers: number; markers: number }>();
  private creating: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly deps: TransactionCoordinationDeps) {
    const { config, clock, scheduler, logger } = deps;
    const t = config.transactions;
    this.appends = new CoordinatorAppends({
      topic: TRANSACTION_STATE_TOPIC,
      nodeId: config.nodeId,
      clock,
      scheduler,
      replicaManager: deps.replicaManager,
      timeout: () => ({ ms: deps.requestTimeoutMs(), config: 'request.timeout.ms' }),
    });
    this.coordinator = new TransactionCoordinator({
      clock,
      scheduler,
      logger,
      log: this,
      markers: this,
      nextProducerId: deps.nextProducerId,
      config: {
        transactionStateLogNumPartitions: t.stateLogNumPartitions,
        transactionMaxTimeoutMs: t.maxTimeoutMs,
        transactionalIdExpirationMs: t.idExpirationMs,
        abortTimedOutTransactionsIntervalMs: t.abortTimedOutIntervalMs,
        removeExpiredTransactionalIdsIntervalMs: t.removeExpiredIntervalMs,
        offsetsTopicNumPartitions: config.offsetsTopicNumPartitions,
        markerRetryBackoffMs: 100,
      },
    });
  }

  /** Call after the replica manager applied `image` (start-up and every metadata change). */
  applyImage(image: MetadataImage): void {
    if (this.stopped) return;
    followLeadership(
      TRANSACTION_STATE_TOPIC,
      image,
      this.deps.replicaManager,
      this.led,
      (p) => this.load(p),
      (partition) => this.coordinator.unload(partition),
    );
  }

  shutdown(): void {
    this.stopped = true;
    this.coordinator.shutdown();
  }

  private load(p: Partition): void {
    const partition = p.index;
    this.deps.logger.info(
      `${TRANSACTION_STATE_TOPIC}-${partition}: loading transactional ids (leader epoch ${p.leaderEpoch})`,
    );
    this.coordinator.load(partition, p.leaderEpoch, replayLog(p)).catch((e: unknown) => {
      this.deps.logger.warn(`${TRANSACTION_STATE_TOPIC}-${partition}: load failed: ${(e as Error).message}`);
      this.coordinator.unload(partition);
      this.led.delete(partition);
    });
  }

  /** The broker leading the transactional id's partition; null (COORDINATOR_NOT_AVAILABLE) while none does. */
  locate(transactionalId: string, listenerName: string): CoordinatorNode | null {
    const image = this.deps.metadata.image();
    if (!image.topics.has(TRANSACTION_STATE_TOPIC)) {
      this.ensureTopic();
      return null;
    }
    const partition = this.coordinator.partitionFor(transactionalId);
    return coordinatorNode(image, TRANSACTION_STATE_TOPIC, partition, listenerName);
  }

  /** Creates __transaction_state once (Kafka: on the first FindCoordinator for a transactional id). */
  private ensureTopic(): void {
    if (this.creating !== null || this.stopped) return;
    const { config, metadata, logger } = this.deps;
    const t = config.transactions;
    this.creating = createInternalTopic(metadata, logger, {
      name: TRANSACTION_STATE_TOPIC,
      numPartitions: t.stateLogNumPartitions,
      replicationFactor: t.stateLogReplicationFactor,
      // As the replication factor is capped by the live brokers, so is min.insync.replicas: a
      // one-broker cluster must be able to write its transactions.
      configs: (replicationFactor) => ({
        'cleanup.policy': 'compact',
        'compression.type': 'uncompressed',
        'min.insync.replicas': String(Math.min(t.stateLogMinIsr, replicationFactor)),
        'segment.bytes': String(t.stateLogSegmentBytes),
        'unclean.leader.election.enable': 'false',
      }),
    }).finally(() => {
      this.creating = null;
    });
  }

  // ---- CoordinatorLog ------------------------------------------------------------------------

  append(partition: number, records: CoordinatorRecord[]): Promise<bigint> {
    return this.appends.append(partition, records);
  }

  // ---- KIP-890 verification (the partition leader's side) -------------------------------------

  /**
   * Asks the transactional id's coordinator (this broker's, or another's over the network) which
   * of `partitions` its ongoing transaction holds — Kafka's AddPartitionsToTxnManager. Errors as
   * Kafka maps them for the produce: PRODUCER_FENCED as INVALID_PRODUCER_EPOCH, a partition not
   * added (TRANSACTION_ABORTABLE) as INVALID_TXN_STATE, an unreachable coordinator as
   * NETWORK_EXCEPTION. Null when transaction.partition.verification.enable is off.
   */
  verifyTransaction(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    partitions: TopicPartitions,
  ): Promise<ReadonlyMap<string, ReadonlyMap<number, number>>> | null {
    if (!this.deps.verificationEnabled()) return null;
    // Kafka's VerificationGuard: a marker for this producer written to one of the partitions while
    // the coordinator was asked ended the transaction that answer was about — the write would
    // start a transaction no coordinator knows of, so it is refused instead.
    const guards = [...partitions].flatMap(([t, ps]) => ps.map((p) => this.guard(t, p, producerId)));
    return this.askCoordinator(transactionalId, producerId, producerEpoch, partitions).then((codes) => {
      const guarded = new Map<string, Map<number, number>>();
      for (const [t, m] of codes) guarded.set(t, new Map(m));
      for (const g of guards) {
        if (g.release() && guarded.get(g.topic)?.get(g.partition) === ErrorCode.NONE) {
          guarded.get(g.topic)!.set(g.partition, ErrorCode.INVALID_TXN_STATE);
        }
      }
      return guarded;
    });
  }

  /**
   * Watches for markers of `producerId` on a partition while a verification is in flight;
   * release() ends the watch and tells whether one was written meanwhile.
   */
  private guard(topic: string, partition: number, producerId: bigint) {
    const key = `${topic}\u0000${partition}\u0000${producerId}`;
    const entry = this.verifying.get(key) ?? { watchers: 0, markers: 0 };
    entry.watchers++;
    this.verifying.set(key, entry);
    const markersBefore = entry.markers;
    return {
      topic,
      partition,
      release: (): boolean => {
        entry.watchers--;
        if (entry.watchers === 0) this.verifying.delete(key);
        return entry.markers !== markersBefore;
      },
    };
  }

  /** A COMMIT/ABORT marker of `producerId` was appended to the partition as its leader. */
  markerAppended(topic: string, partition: number, producerId: bigint): void {
    const entry = this.verifying.get(`${topic}\u0000${partition}\u0000${producerId}`);
    if (entry !== undefined) entry.markers++;
  }

  private askCoordinator(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    partitions: TopicPartitions,
  ): Promise<ReadonlyMap<string, ReadonlyMap<number, number>>> {
    const all = (code: number) =>
      new Map([...partitions].map(([t, ps]) => [t, new Map(ps.map((p) => [p, code]))]));
    const mapped = (codes: ReadonlyMap<string, ReadonlyMap<number, number>>) =>
      new Map(
        [...codes].map(([t, m]) => [t, new Map([...m].map(([p, code]) => [p, verificationError(code)]))]),
      );
    const image = this.deps.metadata.image();
    const state =
      image.topics.get(TRANSACTION_STATE_TOPIC)?.partitions[this.coordinator.partitionFor(transactionalId)];
    const leader = state?.leader ?? -1;
    if (leader < 0) return Promise.resolve(all(ErrorCode.COORDINATOR_NOT_AVAILABLE));
    if (leader === this.deps.config.nodeId) {
      return Promise.resolve(
        mapped(this.coordinator.verifyPartitions(transactionalId, producerId, producerEpoch, partitions)),
      );
    }
    const request: AddPartitionsToTxnRequest = {
      v3AndBelowTransactionalId: '',
      v3AndBelowProducerId: 0n,
      v3AndBelowProducerEpoch: 0,
      v3AndBelowTopics: [],
      transactions: [
        {
          transactionalId,
          producerId,
          producerEpoch,
          verifyOnly: true,
          topics: [...partitions].map(([name, ps]) => ({ name, partitions: [...ps] })),
        },
      ],
    };
    return this.deps.sendAddPartitionsToTxn(leader, request).then(
      (resp) => {
        if (resp.errorCode !== ErrorCode.NONE) {
          return all(
            resp.errorCode === ErrorCode.CLUSTER_AUTHORIZATION_FAILED
              ? ErrorCode.INVALID_TXN_STATE
              : resp.errorCode,
          );
        }
        const codes = new Map<string, Map<number, number>>();
        for (const r of resp.resultsByTransaction) {
          for (const t of r.topicResults) {
            const m = codes.get(t.name) ?? new Map<number, number>();
            for (const p of t.resultsByPartition) m.set(p.partitionIndex, p.partitionErrorCode);
            codes.set(t.name, m);
          }
        }
        return mapped(codes);
      },
      () => all(ErrorCode.NETWORK_EXCEPTION),
    );
  }

  // ---- TxnMarkerTransport --------------------------------------------------------------------

  leaderOf(topic: string, partition: number): number | null | undefined {
    const t = this.deps.metadata.image().topics.get(topic);
    const p = t?.partitions[partition];
    if (p === undefined) return undefined;
    return p.leader >= 0 ? p.leader : null;
  }

  writeTxnMarkers(brokerId: number, request: WriteTxnMarkersRequest): Promise<WriteTxnMarkersResponse> {
    if (brokerId === this.deps.config.nodeId) return this.deps.writeTxnMarkers(request);
    return this.deps.sendTxnMarkers(brokerId, request);
  }
}

/** A coordinator's verification answer as the partition leader reports it (AddPartitionsToTxnManager). */
function verificationError(code: number): number {
  if (code === ErrorCode.PRODUCER_FENCED) return ErrorCode.INVALID_PRODUCER_EPOCH;
  if (code === ErrorCode.TRANSACTION_ABORTABLE) return ErrorCode.INVALID_TXN_STATE;
  return code;
}
