/**
 * Which __consumer_offsets partition owns a group. Must agree with Kafka byte for byte: a group
 * moved between a Kafka cluster and a Skiff cluster (or read by Kafka's tools) is found where
 * Kafka would look for it: Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions.
 */

/** Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, in int32 arithmetic. */
export function javaStringHashCode(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
  return h;
}

/** Kafka's Utils.abs: Integer.MIN_VALUE maps to 0 instead of staying negative. */
export function kafkaAbs(n: number): number {
  return n === -2147483648 ? 0 : Math.abs(n);
}

export function partitionForGroup(groupId: string, numPartitions: number): number {
  return kafkaAbs(javaStringHashCode(groupId)) % numPartitions;
}
