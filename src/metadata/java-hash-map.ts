/**
 * The iteration order of a java.util.HashMap, for the answers whose order in Kafka is that of a
 * HashMap (client quotas: ClientQuotaImage, ClientQuotaEntity, the controller's result map).
 *
 * A HashMap iterates its table bucket by bucket; a bucket's entries in the order they were put
 * (a resize splits a bucket keeping that order). The bucket of a key is (h ^ (h >>> 16)) masked by
 * the table size, h the key's hashCode. The table size: a power of two, 16 for `new HashMap<>()`,
 * the next power of two of `n` (at least 1) for `new HashMap<>(n)`, doubled while the entries
 * outnumber three quarters of it. Bins turned into trees (8+ keys in one bucket of a 64+ table)
 * are not modelled.
 */

/** Java's String.hashCode over UTF-16 code units, as a signed 32-bit int. */
export function javaStringHash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
  return h;
}

/** Map<String, String>.hashCode: the sum of (key hash ^ value hash), a null value hashing 0. */
export function javaStringMapHash(entries: Iterable<readonly [string, string | null]>): number {
  let h = 0;
  for (const [k, v] of entries) h = (h + (javaStringHash(k) ^ (v === null ? 0 : javaStringHash(v)))) | 0;
  return h;
}

/**
 * The table size of a HashMap made with `initialCapacity` (undefined: the no-argument
 * constructor) after `size` distinct keys were put into it.
 */
export function javaHashMapCapacity(initialCapacity: number | undefined, size: number): number {
  let cap = 16;
  if (initialCapacity !== undefined) {
    cap = 1;
    while (cap < initialCapacity) cap *= 2;
  }
  while (size > Math.floor(cap * 0.75)) cap *= 2;
  return cap;
}

/** The keys, given in the order they were first put, in the order a HashMap of `capacity` iterates them. */
export function javaHashMapOrder<K>(
  insertion: readonly K[],
  hashOf: (key: K) => number,
  capacity: number,
): K[] {
  const bucket = (k: K): number => {
    const h = hashOf(k);
    return (h ^ (h >>> 16)) & (capacity - 1);
  };
  return insertion
    .map((key, i) => ({ key, i, b: bucket(key) }))
    .sort((x, y) => x.b - y.b || x.i - y.i)
    .map((e) => e.key);
}
