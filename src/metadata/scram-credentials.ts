/**
 * SCRAM credentials in the metadata (Kafka's ScramImage / ScramControlManager): per user, a map of
 * mechanism name → stored credential text (`salt=…,stored_key=…,server_key=…,iterations=…`, see
 * security/scram.ts), kept under configs/users/<user> and changed through the controller like a
 * config resource. The password is never stored, nor sent: AlterUserScramCredentials carries a
 * salted password, from which the broker derives the stored and server keys.
 */
import { ErrorCode } from '../protocol/generated/errors.js';
import type { ApiResult, ConfigMap, MetadataImage } from './cluster-metadata.js';
import { javaHashMapCapacity, javaHashMapOrder, javaStringHash } from './java-hash-map.js';
import { decodeJson, encodeConfigMap, type MetadataKeys } from './keys.js';
import type { MetadataStore } from './store.js';

/** Kafka's org.apache.kafka.clients.admin.ScramMechanism: the wire type of each mechanism. */
export const SCRAM_MECHANISM_BY_TYPE: ReadonlyMap<number, string> = new Map([
  [1, 'SCRAM-SHA-256'],
  [2, 'SCRAM-SHA-512'],
]);

export function scramMechanismType(name: string): number {
  for (const [type, n] of SCRAM_MECHANISM_BY_TYPE) if (n === name) return type;
  return 0;
}

const STORED_FORM =
  /^salt=[A-Za-z0-9+/=]+,stored_key=[A-Za-z0-9+/=]+,server_key=[A-Za-z0-9+/=]+,iterations=\d+$/;

/** The controller's check of a change to one user's credentials against what is stored. */
export function validateScramAlterations(
  current: ConfigMap,
  changes: Readonly<Record<string, string | null>>,
): ApiResult {
  for (const [mechanism, value] of Object.entries(changes)) {
    if (scramMechanismType(mechanism) === 0) {
      return { errorCode: ErrorCode.UNSUPPORTED_SASL_MECHANISM, errorMessage: 'Unknown SCRAM mechanism' };
    }
    if (value === null && current[mechanism] === undefined) {
      return {
        errorCode: ErrorCode.RESOURCE_NOT_FOUND,
        errorMessage: 'Attempt to delete a user credential that does not exist',
      };
    }
    if (value !== null && !STORED_FORM.test(value)) {
      return {
        errorCode: ErrorCode.UNACCEPTABLE_CREDENTIAL,
        errorMessage: 'Invalid stored SCRAM credential',
      };
    }
  }
  return { errorCode: ErrorCode.NONE, errorMessage: null };
}

/** The iterations of a stored credential text. */
export function storedIterations(stored: string): number {
  return Number(/iterations=(\d+)$/.exec(stored)?.[1] ?? 0);
}

export interface ScramDescription {
  readonly user: string;
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly credentialInfos: { mechanism: number; iterations: number }[];
}

/**
 * DescribeUserScramCredentials as Kafka's ScramImage.describe answers it: every user with a
 * credential when `users` is null or empty, else each named user once (a name asked twice is
 * DUPLICATE_RESOURCE, a user without credentials RESOURCE_NOT_FOUND), in the order of Kafka's
 * HashMap of user names.
 */
export function describeScramCredentials(
  image: MetadataImage,
  users: readonly string[] | null,
): ScramDescription[] {
  const stored = image.scramCredentials ?? new Map<string, ConfigMap>();
  const unique = new Map<string, boolean>();
  if (users === null || users.length === 0) {
    for (const [user, mechanisms] of stored) if (Object.keys(mechanisms).length > 0) unique.set(user, false);
  } else {
    for (const u of users) unique.set(u, unique.has(u));
  }
  const order = javaHashMapOrder(
    [...unique.keys()],
    javaStringHash,
    javaHashMapCapacity(undefined, unique.size),
  );
  return order.map((user) => {
    if (unique.get(user)) {
      return {
        user,
        errorCode: ErrorCode.DUPLICATE_RESOURCE,
        errorMessage: `Cannot describe SCRAM credentials for the same user twice in a single request: ${user}`,
        credentialInfos: [],
      };
    }
    const mechanisms = stored.get(user) ?? {};
    const credentialInfos = [...SCRAM_MECHANISM_BY_TYPE]
      .filter(([, name]) => mechanisms[name] !== undefined)
      .map(([type, name]) => ({ mechanism: type, iterations: storedIterations(mechanisms[name]!) }));
    if (credentialInfos.length === 0) {
      return {
        user,
        errorCode: ErrorCode.RESOURCE_NOT_FOUND,
        errorMessage: `Attempt to describe a user credential that does not exist: ${user}`,
        credentialInfos,
      };
    }
    return { user, errorCode: ErrorCode.NONE, errorMessage: null, credentialInfos };
  });
}

/**
 * Writes a user's credential for a mechanism straight into the store, unless the user already has
 * one for it: the first admin of `--add-scram` (Kafka's `kafka-storage.sh format --add-scram`),
 * written before any broker of the cluster serves, and left alone at later starts so that a
 * password changed since is not turned back. Returns whether it wrote.
 */
export async function addScramCredentialIfAbsent(
  store: MetadataStore,
  keys: MetadataKeys,
  user: string,
  mechanism: string,
  stored: string,
): Promise<boolean> {
  const key = keys.scramUser(user);
  for (let attempt = 0; attempt < 2; attempt++) {
    // range() takes a prefix: alice would also find alice2.
    const current = (await store.range(key, { limit: 1 })).kvs.find((kv) => kv.key === key);
    const map = current === undefined ? {} : decodeJson<ConfigMap>(current.value, key);
    if (map[mechanism] !== undefined) return false;
    const next = encodeConfigMap({ ...map, [mechanism]: stored });
    const r = await store.txn({
      compare: [
        current === undefined
          ? { key, target: 'absent' }
          : { key, target: 'mod', modRevision: current.modRevision },
      ],
      success: [{ type: 'put', key, value: next }],
    });
    if (r.succeeded) return true;
  }
  throw new Error(`the SCRAM credentials of ${JSON.stringify(user)} changed while being set up; try again`);
}
