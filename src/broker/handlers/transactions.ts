/**
 * The transaction APIs (Kafka's KafkaApis handlers for them): the coordinator's InitProducerId
 * (with a transactional id), AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, ListTransactions,
 * DescribeTransactions and FindCoordinator for key type TRANSACTION; and WriteTxnMarkers, which a
 * partition leader answers by appending the COMMIT/ABORT control batch to each partition.
 * Request checks and the version-dependent error mapping live here; the state machine is the
 * coordinator's. Stateless; owned by the Broker.
 */
import { CONSUMER_OFFSETS_TOPIC } from '../../coordinator/config.js';
import { findCoordinator, KEY_TYPE_TRANSACTION } from '../../coordinator/find-coordinator.js';
import type { TopicPartitions } from '../../coordinator/transaction/coordinator.js';
import type { AddOffsetsToTxnRequest } from '../../protocol/generated/AddOffsetsToTxnRequest.js';
import type { AddOffsetsToTxnResponse } from '../../protocol/generated/AddOffsetsToTxnResponse.js';
import type { AddPartitionsToTxnRequest } from '../../protocol/generated/AddPartitionsToTxnRequest.js';
import type {
  AddPartitionsToTxnResponse,
  AddPartitionsToTxnResult,
  AddPartitionsToTxnTopicResult,
} from '../../protocol/generated/AddPartitionsToTxnResponse.js';
import type { DescribeTransactionsRequest } from '../../protocol/generated/DescribeTransactionsRequest.js';
import type { DescribeTransactionsResponse } from '../../protocol/generated/DescribeTransactionsResponse.js';
import type { EndTxnRequest } from '../../protocol/generated/EndTxnRequest.js';
import type { EndTxnResponse } from '../../protocol/generated/EndTxnResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { FindCoordinatorRequest } from '../../protocol/generated/FindCoordinatorRequest.js';
import type { FindCoordinatorResponse } from '../../protocol/generated/FindCoordinatorResponse.js';
import type { InitProducerIdRequest } from '../../protocol/generated/InitProducerIdRequest.js';
import type { InitProducerIdResponse } from '../../protocol/generated/InitProducerIdResponse.js';
import type { ListTransactionsRequest } from '../../protocol/generated/ListTransactionsRequest.js';
import type { ListTransactionsResponse } from '../../protocol/generated/ListTransactionsResponse.js';
import type { WriteTxnMarkersRequest } from '../../protocol/generated/WriteTxnMarkersRequest.js';
import type {
  WritableTxnMarkerTopicResult,
  WriteTxnMarkersResponse,
} from '../../protocol/generated/WriteTxnMarkersResponse.js';
import { KafkaError } from '../../protocol/kafka-error.js';
import { encodeEndTxnMarkerBatch } from '../../protocol/records/end-txn-marker.js';
import type { PendingAcks } from '../../replication/delayed-produce.js';
import { awaitAcks } from '../../replication/delayed-produce.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';
import type { TransactionCoordination } from '../transaction-coordination.js';
import { handleInitProducerId } from './cluster.js';

const { NONE, PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, INVALID_REQUEST, UNKNOWN_TOPIC_OR_PARTITION } =
  ErrorCode;

/**
 * Told of every marker this broker writes to a __consumer_offsets partition it leads, once the
 * marker is replicated: the group coordinator then makes the transaction's offset commits
 * visible (COMMIT) or drops them (ABORT) — Kafka's GroupCoordinator.onTransactionCompleted.
 * A throw (or rejection) fails that partition's marker (the coordinator retries it). The group
 * coordinator implements it (GroupCoordinator.onTransactionMarker).
 */
export interface TransactionMarkerHook {
  onTransactionMarker(partition: number, producerId: bigint, producerEpoch: number, commit: boolean): unknown;
}

/** Clients before PRODUCER_FENCED existed get INVALID_PRODUCER_EPOCH in its place (KafkaApis). */
function fencedForVersion(code: number, version: number, firstVersionWithFenced: number): number {
  return code === PRODUCER_FENCED && version < firstVersionWithFenced ? INVALID_PRODUCER_EPOCH : code;
}

export class TransactionApi {
  constructor(
    private readonly b: BrokerServices,
    private readonly txn: TransactionCoordination,
    /** The group coordinator's side of markers on __consumer_offsets; null when no group coordinator runs here. */
    private readonly markerHook: () => TransactionMarkerHook | null,
    /** request.timeout.ms: how long a marker waits for its replication. */
    private readonly requestTimeoutMs: () => number,
  ) {}

  async findCoordinator(ctx: RequestContext, req: FindCoordinatorRequest): Promise<FindCoordinatorResponse> {
    const listener = ctx.connection.listenerName;
    return findCoordinator(ctx.apiVersion, req, (id) => this.txn.locate(id, listener), KEY_TYPE_TRANSACTION);
  }

  async initProducerId(ctx: RequestContext, req: InitProducerIdRequest): Promise<InitProducerIdResponse> {
    if (req.transactionalId === null) return handleInitProducerId(this.b, ctx, req);
    const fail = (errorCode: number): InitProducerIdResponse => ({
      throttleTimeMs: 0,
      errorCode,
      producerId: -1n,
      producerEpoch: -1,
    });
    const noId = req.producerId === -1n;
    const noEpoch = req.producerEpoch === -1;
    if (noId !== noEpoch) return fail(INVALID_REQUEST);
    const r = await this.txn.coordinator.initProducerId(
      req.transactionalId,
      req.transactionTimeoutMs,
      noId ? null : { producerId: req.producerId, producerEpoch: req.producerEpoch },
    );
    return {
      throttleTimeMs: 0,
      errorCode: fencedForVersion(r.errorCode, ctx.apiVersion, 4),
      producerId: r.producerId,
      producerEpoch: r.producerEpoch,
    };
  }

  async addPartitionsToTxn(
    ctx: RequestContext,
    req: AddPartitionsToTxnRequest,
  ): Promise<AddPartitionsToTxnResponse> {
    const v = ctx.apiVersion;
    if (v <= 3) {
      const result = await this.addOne(v, {
        transactionalId: req.v3AndBelowTransactionalId,
        producerId: req.v3AndBelowProducerId,
        producerEpoch: req.v3AndBelowProducerEpoch,
        verifyOnly: false,
        topics: req.v3AndBelowTopics,
      });
      return {
        throttleTimeMs: 0,
        errorCode: NONE,
        resultsByTransaction: [],
        resultsByTopicV3AndBelow: result,
      };
    }
    const resultsByTransaction: AddPartitionsToTxnResult[] = [];
    for (const t of req.transactions) {
      resultsByTransaction.push({
        transactionalId: t.transactionalId,
        topicResults: await this.addOne(v, t),
      });
    }
    return { throttleTimeMs: 0, errorCode: NONE, resultsByTransaction, resultsByTopicV3AndBelow: [] };
  }

  private async addOne(
    version: number,
    t: {
      transactionalId: string;
      producerId: bigint;
      producerEpoch: number;
      verifyOnly: boolean;
      topics: { name: string; partitions: number[] }[];
    },
  ): Promise<AddPartitionsToTxnTopicResult[]> {
    const image = this.b.metadata.image();
    const partitions = new Map<string, number[]>();
    const unknown = new Set<string>();
    for (const topic of t.topics) {
      const known = image.topics.get(topic.name);
      for (const p of topic.partitions) {
        if (known === undefined || p < 0 || p >= known.partitions.length)
          unknown.add(`${topic.name}\u0000${p}`);
        const list = partitions.get(topic.name) ?? [];
        if (!list.includes(p)) list.push(p);
        partitions.set(topic.name, list);
      }
    }
    const results = (codeOf: (topic: string, p: number) => number): AddPartitionsToTxnTopicResult[] =>
      [...partitions].map(([name, ps]) => ({
        name,
        resultsByPartition: ps.map((partitionIndex) => ({
          partitionIndex,
          partitionErrorCode: codeOf(name, partitionIndex),
        })),
      }));
    if (unknown.size > 0) {
      return results((topic, p) =>
        unknown.has(`${topic}\u0000${p}`) ? UNKNOWN_TOPIC_OR_PARTITION : ErrorCode.OPERATION_NOT_ATTEMPTED,
      );
    }
    const c = this.txn.coordinator;
    if (t.verifyOnly) {
      const codes = c.verifyPartitions(t.transactionalId, t.producerId, t.producerEpoch, partitions);
      return results((topic, p) => codes.get(topic)?.get(p) ?? NONE);
    }
    const code = await c.addPartitions(t.transactionalId, t.producerId, t.producerEpoch, partitions);
    const mapped = fencedForVersion(code, version, 2);
    return results(() => mapped);
  }

  async addOffsetsToTxn(ctx: RequestContext, req: AddOffsetsToTxnRequest): Promise<AddOffsetsToTxnResponse> {
    const c = this.txn.coordinator;
    const partitions: TopicPartitions = new Map([
      [CONSUMER_OFFSETS_TOPIC, [c.offsetsPartitionFor(req.groupId)]],
    ]);
    const code = await c.addPartitions(req.transactionalId, req.producerId, req.producerEpoch, partitions);
    return { throttleTimeMs: 0, errorCode: fencedForVersion(code, ctx.apiVersion, 2) };
  }

  async endTxn(ctx: RequestContext, req: EndTxnRequest): Promise<EndTxnResponse> {
    const code = await this.txn.coordinator.endTransaction(
      req.transactionalId,
      req.producerId,
      req.producerEpoch,
      req.committed,
      true,
    );
    return {
      throttleTimeMs: 0,
      errorCode: fencedForVersion(code, ctx.apiVersion, 2),
      producerId: -1n,
      producerEpoch: -1,
    };
  }

  async listTransactions(
    ctx: RequestContext,
    req: ListTransactionsRequest,
  ): Promise<ListTransactionsResponse> {
    const r = this.txn.coordinator.listTransactions(
      req.stateFilters,
      req.producerIdFilters,
      ctx.apiVersion >= 1 ? req.durationFilter : -1n,
    );
    return { throttleTimeMs: 0, ...r };
  }

  async describeTransactions(
    _ctx: RequestContext,
    req: DescribeTransactionsRequest,
  ): Promise<DescribeTransactionsResponse> {
    return {
      throttleTimeMs: 0,
      transactionStates: req.transactionalIds.map((id) => this.txn.coordinator.describeTransaction(id)),
    };
  }

  async writeTxnMarkers(_ctx: RequestContext, req: WriteTxnMarkersRequest): Promise<WriteTxnMarkersResponse> {
    return this.writeTxnMarkersAsLeader(req);
  }

  /**
   * Appends each marker's control batch to each of its partitions this broker leads (as the
   * coordinator's append, acks=-1) and answers per partition once replicated; markers on
   * __consumer_offsets then go to the group coordinator.
   */
  async writeTxnMarkersAsLeader(req: WriteTxnMarkersRequest): Promise<WriteTxnMarkersResponse> {
    const { b } = this;
    const markers = await Promise.all(
      req.markers.map(async (m) => {
        const now = BigInt(b.clock.nowMs());
        const batch = () =>
          encodeEndTxnMarkerBatch({
            producerId: m.producerId,
            producerEpoch: m.producerEpoch,
            coordinatorEpoch: m.coordinatorEpoch,
            commit: m.transactionResult,
            timestamp: now,
          });
        const codes = new Map<string, Map<number, number>>();
        const waits: { topic: string; partition: number; acks: PendingAcks }[] = [];
        for (const t of m.topics) {
          const byPartition = new Map<number, number>();
          codes.set(t.name, byPartition);
          for (const partition of t.partitionIndexes) {
            const p = b.replicaManager.getPartition(t.name, partition);
            if (p === undefined) {
              const known = b.metadata.image().topics.get(t.name)?.partitions[partition] !== undefined;
              byPartition.set(
                partition,
                known ? ErrorCode.NOT_LEADER_OR_FOLLOWER : UNKNOWN_TOPIC_OR_PARTITION,
              );
              continue;
            }
            try {
              const { acks } = p.appendAsLeader(batch(), -1, 'coordinator');
              this.txn.markerAppended(t.name, partition, m.producerId);
              waits.push({ topic: t.name, partition, acks });
            } catch (e) {
              byPartition.set(partition, e instanceof KafkaError ? e.code : ErrorCode.UNKNOWN_SERVER_ERROR);
            }
          }
        }
        if (waits.length > 0) {
          const acked = await awaitAcks(
            b.replicaManager.replication.purgatory,
            b.scheduler,
            waits.map((w) => w.acks),
            this.requestTimeoutMs(),
          );
          await Promise.all(
            waits.map(async (w, i) => {
              let code = acked[i]!;
              if (code === NONE && w.topic === CONSUMER_OFFSETS_TOPIC) {
                const hook = this.markerHook();
                if (hook !== null) {
                  try {
                    await hook.onTransactionMarker(
                      w.partition,
                      m.producerId,
                      m.producerEpoch,
                      m.transactionResult,
                    );
                  } catch (e) {
                    code = e instanceof KafkaError ? e.code : ErrorCode.UNKNOWN_SERVER_ERROR;
                  }
                }
              }
              codes.get(w.topic)!.set(w.partition, code);
            }),
          );
        }
        const topics: WritableTxnMarkerTopicResult[] = m.topics.map((t) => ({
          name: t.name,
          partitions: t.partitionIndexes.map((partitionIndex) => ({
            partitionIndex,
            errorCode: codes.get(t.name)?.get(partitionIndex) ?? ErrorCode.UNKNOWN_SERVER_ERROR,
          })),
        }));
        return { producerId: m.producerId, topics };
      }),
    );
    return { markers };
  }
}
