/**
 * The key of one partition in maps, purgatory watches and log lines: Kafka's TopicPartition
 * string form, `<topic>-<partition>` (also the partition's directory name in a log dir).
 */
export function topicPartitionKey(topic: string, partition: number): string {
  return `${topic}-${partition}`;
}
