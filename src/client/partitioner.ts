/**
 * Kafka's default partitioner for keyed records: murmur2 of the key bytes, made positive, modulo
 * the partition count. Using the same hash keeps a key on the same partition whichever client
 * (Java, librdkafka with murmur2_random, this one) wrote it.
 */
export function murmur2(data: Buffer): number {
  const m = 0x5bd1e995;
  const length = data.length;
  let h = (0x9747b28c ^ length) | 0;
  const whole = length >> 2;
  for (let i = 0; i < whole; i++) {
    let k = data.readInt32LE(i * 4);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  const tail = whole * 4;
  const rest = length & 3;
  if (rest === 3) h ^= data[tail + 2]! << 16;
  if (rest >= 2) h ^= data[tail + 1]! << 8;
  if (rest >= 1) {
    h ^= data[tail]!;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition for a key among `numPartitions` (Utils.toPositive(murmur2(key)) % n). */
export function partitionForKey(key: Buffer, numPartitions: number): number {
  return (murmur2(key) & 0x7fffffff) % numPartitions;
}
