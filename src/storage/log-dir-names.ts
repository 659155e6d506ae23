/** The names of the directories in a log dir: a partition's, and those Kafka sets aside. */

export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/**
 * `orders-3` → (orders, 3); null for anything that is not a live partition directory, such as
 * Kafka's `<topic>-<p>.<id>-delete`, `-future` and `-stray` directories. Topic names may hold dots.
 */
export function parseTopicPartitionDir(name: string): TopicPartition | null {
  if (/\.[A-Za-z0-9_-]+-(delete|future|stray)$/.test(name)) return null;
  const m = /^(.+)-(\d+)$/.exec(name);
  return m ? { topic: m[1]!, partition: Number(m[2]) } : null;
}

/** `orders-3.<id>-future` → (orders, 3); null for anything else. */
export function parseFutureDir(name: string): TopicPartition | null {
  const m = /^(.+)-(\d+)\.[A-Za-z0-9_]+-future$/.exec(name);
  return m ? { topic: m[1]!, partition: Number(m[2]) } : null;
}
