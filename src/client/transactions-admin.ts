/**
 * The transaction calls of Kafka's Admin that `skiff transactions` uses: describeProducers
 * (DescribeProducers, KIP-664) to a partition's leader or a named broker, listTransactions
 * (ListTransactions) to every broker, describeTransactions (DescribeTransactions) to the
 * transactional id's coordinator, abortTransaction (WriteTxnMarkers) to the partition's leader.
 */
import { topicPartitionKey } from '../common/topic-partition.js';
import type { ProducerState } from '../protocol/generated/DescribeProducersResponse.js';
import { Apis, lazyApi } from './apis.js';
import { ClientError, kafkaError } from './errors.js';
import type { KafkaClient } from './kafka-client.js';
import { type PartitionResult, sendToLeaders, type TopicPartition } from './partitions.js';

export type { ProducerState } from '../protocol/generated/DescribeProducersResponse.js';

export const DescribeProducersApi = lazyApi(61, 'DescribeProducers', 0, 0, async () => ({
  request: (await import('../protocol/generated/DescribeProducersRequest.js')).DescribeProducersRequestCodec,
  response: (await import('../protocol/generated/DescribeProducersResponse.js'))
    .DescribeProducersResponseCodec,
}));

/**
 * The active producers of partitions, as their leaders' producer states hold them, or as broker
 * `brokerId`'s replicas do when given (Kafka's DescribeProducersOptions.brokerId): no retry on
 * another broker then, since the operator asked for that one. One result per partition.
 */
export async function describeProducers(
  client: KafkaClient,
  tps: readonly TopicPartition[],
  brokerId?: number,
): Promise<Map<string, PartitionResult<ProducerState[]>>> {
  const ask = async (id: number, group: readonly TopicPartition[]) => {
    const byTopic = new Map<string, number[]>();
    for (const tp of group) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
    const resp = await client.send({ kind: 'node', id }, DescribeProducersApi, () => ({
      topics: [...byTopic].map(([name, partitionIndexes]) => ({ name, partitionIndexes })),
    }));
    const answers = new Map<
      string,
      { errorCode: number; errorMessage: string | null; value: ProducerState[] }
    >();
    for (const t of resp.topics)
      for (const p of t.partitions)
        answers.set(topicPartitionKey(t.name, p.partitionIndex), {
          errorCode: p.errorCode,
          errorMessage: p.errorMessage,
          value: p.activeProducers,
        });
    return answers;
  };
  if (brokerId === undefined) return sendToLeaders(client, tps, (leader, group) => ask(leader, group));
  const answers = await client.retry(() => ask(brokerId, tps));
  const out = new Map<string, PartitionResult<ProducerState[]>>();
  for (const tp of tps) {
    const key = topicPartitionKey(tp.topic, tp.partition);
    const a = answers.get(key);
    if (a === undefined)
      out.set(key, { ok: false, error: new ClientError(`broker ${brokerId} did not answer for ${key}`) });
    else if (a.errorCode !== 0) out.set(key, { ok: false, error: kafkaError(a.errorCode, a.errorMessage) });
    else out.set(key, { ok: true, value: a.value });
  }
  return out;
}

export const ListTransactionsApi = lazyApi(66, 'ListTransactions', 0, 1, async () => ({
  request: (await import('../protocol/generated/ListTransactionsRequest.js')).ListTransactionsRequestCodec,
  response: (await import('../protocol/generated/ListTransactionsResponse.js')).ListTransactionsResponseCodec,
}));

export const DescribeTransactionsApi = lazyApi(65, 'DescribeTransactions', 0, 0, async () => ({
  request: (await import('../protocol/generated/DescribeTransactionsRequest.js'))
    .DescribeTransactionsRequestCodec,
  response: (await import('../protocol/generated/DescribeTransactionsResponse.js'))
    .DescribeTransactionsResponseCodec,
}));

export const WriteTxnMarkersApi = lazyApi(27, 'WriteTxnMarkers', 0, 1, async () => ({
  request: (await import('../protocol/generated/WriteTxnMarkersRequest.js')).WriteTxnMarkersRequestCodec,
  response: (await import('../protocol/generated/WriteTxnMarkersResponse.js')).WriteTxnMarkersResponseCodec,
}));

/** FindCoordinator's key type of a transactional id. */
const TRANSACTION_KEY_TYPE = 1;

export interface TransactionListing {
  readonly transactionalId: string;
  readonly producerId: bigint;
  readonly state: string;
}

export interface TransactionListFilters {
  /** Only transactions running longer than this (ms); ListTransactions v1. */
  readonly durationMs?: bigint;
  readonly producerIds?: readonly bigint[];
  readonly states?: readonly string[];
}

/**
 * Every transaction coordinator's transactions, by broker id (Kafka's Admin.listTransactions
 * allByBrokerId): each broker lists the transactional ids of the __transaction_state partitions
 * it leads.
 */
export async function listTransactions(
  client: KafkaClient,
  filters: TransactionListFilters = {},
): Promise<Map<number, TransactionListing[]>> {
  const md = await client.retry(() => client.fetchMetadata([]));
  const ids = [...md.brokers.keys()].sort((a, b) => a - b);
  const out = new Map<number, TransactionListing[]>();
  await Promise.all(
    ids.map(async (id) => {
      const resp = await client.retry(async () => {
        const r = await client.send({ kind: 'node', id }, ListTransactionsApi, (version) => {
          if (version < 1 && filters.durationMs !== undefined && filters.durationMs >= 0n)
            throw new ClientError(`broker ${id} does not support filtering transactions on duration`);
          return {
            stateFilters: [...(filters.states ?? [])],
            producerIdFilters: [...(filters.producerIds ?? [])],
            durationFilter: filters.durationMs ?? -1n,
          };
        });
        if (r.errorCode !== 0) throw kafkaError(r.errorCode);
        return r;
      });
      out.set(
        id,
        resp.transactionStates.map((s) => ({
          transactionalId: s.transactionalId,
          producerId: s.producerId,
          state: s.transactionState,
        })),
      );
    }),
  );
  return out;
}

export interface TransactionDescription {
  readonly coordinatorId: number;
  readonly state: string;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly transactionTimeoutMs: number;
  /** -1 when no transaction is open. */
  readonly transactionStartTimeMs: bigint;
  readonly topicPartitions: readonly TopicPartition[];
}

/**
 * A transactional id's state at its coordinator (Kafka's Admin.describeTransactions): the
 * coordinator is found with FindCoordinator (key type TRANSACTION), then asked. A coordinator that
 * moved or is loading is looked up again; TRANSACTIONAL_ID_NOT_FOUND and the rest are thrown.
 */
export async function describeTransaction(
  client: KafkaClient,
  transactionalId: string,
): Promise<TransactionDescription> {
  return client.retry(async () => {
    const found = await client.send({ kind: 'any' }, Apis.FindCoordinator, () => ({
      key: transactionalId,
      keyType: TRANSACTION_KEY_TYPE,
      coordinatorKeys: [],
    }));
    if (found.errorCode !== 0) throw kafkaError(found.errorCode, found.errorMessage);
    const coordinatorId = found.nodeId;
    const resp = await client.send({ kind: 'node', id: coordinatorId }, DescribeTransactionsApi, () => ({
      transactionalIds: [transactionalId],
    }));
    const s = resp.transactionStates.find((t) => t.transactionalId === transactionalId);
    if (s === undefined) throw new ClientError(`broker ${coordinatorId} did not describe ${transactionalId}`);
    if (s.errorCode !== 0) throw kafkaError(s.errorCode);
    return {
      coordinatorId,
      state: s.transactionState,
      producerId: s.producerId,
      producerEpoch: s.producerEpoch,
      transactionTimeoutMs: s.transactionTimeoutMs,
      transactionStartTimeMs: s.transactionStartTimeMs,
      topicPartitions: s.topics.flatMap((t) =>
        t.partitions.map((partition) => ({ topic: t.topic, partition })),
      ),
    };
  });
}

export interface AbortTransactionSpec {
  readonly topicPartition: TopicPartition;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly coordinatorEpoch: number;
}

/**
 * Writes an ABORT marker for a hanging transaction straight to the partition's leader (Kafka's
 * Admin.abortTransaction: WriteTxnMarkers, as a transaction coordinator would send it).
 */
export async function abortTransaction(client: KafkaClient, spec: AbortTransactionSpec): Promise<void> {
  const { topic, partition } = spec.topicPartition;
  const results = await sendToLeaders(client, [spec.topicPartition], async (leader) => {
    const resp = await client.send({ kind: 'node', id: leader }, WriteTxnMarkersApi, () => ({
      markers: [
        {
          producerId: spec.producerId,
          producerEpoch: spec.producerEpoch,
          transactionResult: false,
          topics: [{ name: topic, partitionIndexes: [partition] }],
          coordinatorEpoch: spec.coordinatorEpoch,
        },
      ],
    }));
    const p = resp.markers
      .find((m) => m.producerId === spec.producerId)
      ?.topics.find((t) => t.name === topic)
      ?.partitions.find((x) => x.partitionIndex === partition);
    if (p === undefined)
      throw new ClientError(`broker ${leader} did not answer for ${topicPartitionKey(topic, partition)}`);
    return new Map([[topicPartitionKey(topic, partition), { errorCode: p.errorCode, value: undefined }]]);
  });
  const r = results.get(topicPartitionKey(topic, partition))!;
  if (!r.ok) throw r.error;
}
