/**
 * The transaction calls of Kafka's Admin that `skiff transactions` uses: describeProducers
 * (DescribeProducers, KIP-664), sent to the partition's leader or to one named broker.
 */
import { topicPartitionKey } from '../common/topic-partition.js';
import type { ProducerState } from '../protocol/generated/DescribeProducersResponse.js';
import { lazyApi } from './apis.js';
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
 * The active producers of one partition, as its leader's producer state holds them, or as broker
 * `brokerId`'s replica does when given (Kafka's DescribeProducersOptions.brokerId): no retry on
 * another broker then, since the operator asked for that one.
 */
export async function describeProducers(
  client: KafkaClient,
  tp: TopicPartition,
  brokerId?: number,
): Promise<PartitionResult<ProducerState[]>> {
  const ask = async (id: number) => {
    const resp = await client.send({ kind: 'node', id }, DescribeProducersApi, () => ({
      topics: [{ name: tp.topic, partitionIndexes: [tp.partition] }],
    }));
    const p = resp.topics
      .find((t) => t.name === tp.topic)
      ?.partitions.find((x) => x.partitionIndex === tp.partition);
    if (p === undefined)
      throw new ClientError(`broker ${id} did not answer for ${topicPartitionKey(tp.topic, tp.partition)}`);
    return p;
  };
  if (brokerId !== undefined) {
    const p = await client.retry(() => ask(brokerId));
    return p.errorCode === 0
      ? { ok: true, value: p.activeProducers }
      : { ok: false, error: kafkaError(p.errorCode, p.errorMessage) };
  }
  const results = await sendToLeaders(client, [tp], async (leader) => {
    const p = await ask(leader);
    return new Map([
      [topicPartitionKey(tp.topic, tp.partition), { errorCode: p.errorCode, value: p.activeProducers }],
    ]);
  });
  return results.get(topicPartitionKey(tp.topic, tp.partition))!;
}
