import { ClientError } from '../../client/errors.js';
import { topicPartitionKey } from '../../common/topic-partition.js';
import { assignReplicas } from '../../controller/replica-assignment.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import { UsageError } from './common.js';
import {
  duplicates,
  formatReassignmentJson,
  parseTopicsJson,
  type ReassignContext,
} from './reassign-plan.js';

export async function generate(
  ctx: ReassignContext,
  topicsJson: string,
  brokerList: string,
  rackAware: boolean,
): Promise<number> {
  const brokers = brokerList.split(',').map((b) => {
    if (!/^\s*-?\d+\s*$/.test(b)) throw new UsageError(`invalid broker id '${b}' in --broker-list`);
    return Number(b);
  });
  const dupBrokers = duplicates(brokers);
  if (dupBrokers.length > 0)
    throw new ClientError(`Broker list contains duplicate entries: ${dupBrokers.join(', ')}`);
  const topics = parseTopicsJson(topicsJson);
  const dupTopics = duplicates(topics);
  if (dupTopics.length > 0) {
    throw new ClientError(`List of topics to reassign contains duplicate entries: ${dupTopics.join(', ')}`);
  }
  const current = await currentAssignment(ctx, topics);
  const cluster = await ctx.admin.describeCluster();
  // Kafka's getBrokerMetadata: brokers of the list that are registered, with their racks unless
  // --disable-rack-aware; racks on some brokers only is an error.
  const live = brokers
    .filter((b) => cluster.brokers.has(b))
    .map((id) => ({ id, rack: rackAware ? (cluster.racks?.get(id) ?? null) : null }));
  const rackless = live.filter((b) => b.rack === null).length;
  if (rackAware && rackless !== 0 && rackless !== live.length) {
    throw new ClientError(
      'Not all brokers have rack information. Add --disable-rack-aware in command line to make replica assignment without rack information.',
    );
  }
  const proposed = new Map<string, { topic: string; partition: number; replicas: number[] }>();
  for (const topic of [...new Set(topics)]) {
    const parts = [...current.values()].filter((p) => p.topic === topic);
    const rf = parts[0]?.replicas.length ?? 0;
    if (rf > live.length) {
      throw new ClientError(`Replication factor: ${rf} larger than available brokers: ${live.length}.`);
    }
    const assigned = assignReplicas(live, parts.length, rf, (n) => Math.floor(Math.random() * n));
    assigned.forEach((replicas, partition) => {
      proposed.set(topicPartitionKey(topic, partition), { topic, partition, replicas });
    });
  }
  ctx.io.out('Current partition replica assignment');
  ctx.io.out(formatReassignmentJson(current));
  ctx.io.out('');
  ctx.io.out('Proposed partition reassignment configuration');
  ctx.io.out(formatReassignmentJson(proposed));
  return 0;
}

/** Replicas of every partition of `topics`; an unknown topic is an error. */
export async function currentAssignment(
  ctx: ReassignContext,
  topics: readonly string[],
): Promise<Map<string, { topic: string; partition: number; replicas: readonly number[] }>> {
  const described = await ctx.admin.describeTopics([...new Set(topics)]);
  const out = new Map<string, { topic: string; partition: number; replicas: readonly number[] }>();
  for (const [name, t] of described) {
    if (t instanceof Error) {
      if (t.code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) throw new ClientError(`Topic ${name} not found.`);
      throw t;
    }
    for (const p of t.partitions)
      out.set(topicPartitionKey(name, p.partition), {
        topic: name,
        partition: p.partition,
        replicas: p.replicas,
      });
  }
  return out;
}
