import { LIMITS } from '../common/limits.js';
import type { MetadataStore } from '../metadata/store.js';

/**
 * The cluster id shared by every process on one metadata store (the embedded store of `skiff up`,
 * or an etcd cluster). It lives at a fixed key outside any cluster's prefix, created once with a
 * compare-and-set so that brokers starting at the same moment agree on one id: whoever loses the
 * race reads the winner's.
 */
export const CLUSTER_ID_KEY = '/skiff-cluster-id';

/** Kafka cluster ids are 22 characters of base64url (a Uuid). */
const CLUSTER_ID = /^[A-Za-z0-9_-]{1,64}$/;

export async function resolveClusterId(
  store: MetadataStore,
  randomBytes: (n: number) => Buffer,
): Promise<string> {
  for (let attempt = 0; attempt < LIMITS.clusterIdAttempts; attempt++) {
    const existing = await store.get(CLUSTER_ID_KEY);
    if (existing !== null) {
      if (!CLUSTER_ID.test(existing.value))
        throw new Error(`the metadata store holds a malformed cluster id '${existing.value}'`);
      return existing.value;
    }
    const id = randomBytes(16).toString('base64url');
    const r = await store.txn({
      compare: [{ key: CLUSTER_ID_KEY, target: 'absent' }],
      success: [{ type: 'put', key: CLUSTER_ID_KEY, value: id }],
    });
    if (r.succeeded) return id;
  }
  throw new Error(`could not read or create the cluster id after ${LIMITS.clusterIdAttempts} attempts`);
}
