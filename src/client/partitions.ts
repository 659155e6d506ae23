import { topicPartitionKey } from '../common/topic-partition.js';
import { ClientError, type KafkaResponseError, kafkaError } from './errors.js';
import { isRetriable, type KafkaClient } from './kafka-client.js';

export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

export function tpKey(tp: TopicPartition): string {
  return topicPartitionKey(tp.topic, tp.partition);
}

/** One partition's outcome: a value or the error the broker (or the client) gave for it. */
export type PartitionResult<T> =
  | { ok: true; value: T }
  | { ok: false; error: KafkaResponseError | ClientError };

/** What a per-leader request answered for one partition. */
export interface LeaderAnswer<T> {
  readonly errorCode: number;
  readonly value: T;
}

/**
 * Sends a partition-addressed request (ListOffsets, DeleteRecords, Produce) to each partition's
 * leader and collects one result per partition. Partitions that fail retriably (no leader yet, a
 * moved leader, a lost connection) are retried on fresh metadata, a bounded number of times; the
 * rest keep their first answer. Results are in the order of `tps`.
 */
export async function sendToLeaders<T>(
  client: KafkaClient,
  tps: readonly TopicPartition[],
  send: (leader: number, tps: TopicPartition[]) => Promise<Map<string, LeaderAnswer<T>>>,
  maxRounds = 6,
): Promise<Map<string, PartitionResult<T>>> {
  const results = new Map<string, PartitionResult<T>>();
  let pending = [...tps];
  let backoffMs = 100;
  for (let round = 0; pending.length > 0; round++) {
    const last = round + 1 >= maxRounds;
    const topics = [...new Set(pending.map((tp) => tp.topic))];
    // The cache is good enough for a first try; a retry means it was wrong, so ask again.
    const md = await client.retry(() =>
      round === 0 ? client.metadataFor(topics) : client.fetchMetadata(topics),
    );
    const byLeader = new Map<number, TopicPartition[]>();
    const retry: TopicPartition[] = [];
    const fail = (tp: TopicPartition, error: KafkaResponseError | ClientError): void => {
      if (!last && isRetriable(error)) retry.push(tp);
      else results.set(tpKey(tp), { ok: false, error });
    };
    for (const tp of pending) {
      const t = md.topics.get(tp.topic);
      const p = t?.partitions.find((x) => x.partition === tp.partition);
      if (t?.errorCode !== 0) fail(tp, kafkaError(t?.errorCode ?? 3));
      else if (!p) fail(tp, kafkaError(3, `Partition ${tp.partition} of topic ${tp.topic} does not exist.`));
      else if (p.leader < 0) fail(tp, kafkaError(5));
      else byLeader.set(p.leader, [...(byLeader.get(p.leader) ?? []), tp]);
    }
    await Promise.all(
      [...byLeader].map(async ([leader, group]) => {
        let answers: Map<string, LeaderAnswer<T>>;
        try {
          answers = await send(leader, group);
        } catch (e) {
          if (!(e instanceof ClientError)) throw e;
          for (const tp of group) fail(tp, e);
          return;
        }
        for (const tp of group) {
          const a = answers.get(tpKey(tp));
          if (!a) fail(tp, new ClientError(`broker ${leader} did not answer for ${tpKey(tp)}`));
          else if (a.errorCode !== 0) fail(tp, kafkaError(a.errorCode));
          else results.set(tpKey(tp), { ok: true, value: a.value });
        }
      }),
    );
    pending = retry;
    if (pending.length > 0) {
      await client.runtime.sleep(backoffMs);
      backoffMs = Math.min(backoffMs * 2, 1000);
    }
  }
  return results;
}
