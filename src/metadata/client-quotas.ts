/**
 * Client quotas as Kafka's DescribeClientQuotas/AlterClientQuotas see them: an entity is a set of
 * (type, name) components — type `user` or `client-id`, name null for the type's default — and
 * holds quota values (producer_byte_rate, consumer_byte_rate, request_percentage,
 * controller_mutation_rate). Skiff stores them in the metadata (configs/quotas/<entity>); the
 * brokers enforce them (broker/client-quota-manager.ts, broker/controller-mutation-quota.ts).
 *
 * The entity's key is canonical: components sorted by type, `type=<encoded name>` joined by ',',
 * the default written `<default>` (an encoded name cannot contain '<').
 */
import { ErrorCode } from '../protocol/generated/errors.js';
import type { ApiResult } from './cluster-metadata.js';
import { javaHashMapCapacity, javaHashMapOrder, javaStringHash, javaStringMapHash } from './java-hash-map.js';

const { INVALID_REQUEST } = ErrorCode;

export const QUOTA_ENTITY_TYPES = ['user', 'client-id'] as const;
export type QuotaEntityType = (typeof QUOTA_ENTITY_TYPES)[number];

export interface QuotaEntityComponent {
  readonly entityType: string;
  /** null: the default entity of the type. */
  readonly entityName: string | null;
}

export const QUOTA_KEYS: ReadonlySet<string> = new Set([
  'producer_byte_rate',
  'consumer_byte_rate',
  'request_percentage',
  'controller_mutation_rate',
]);

/** The canonical key of an entity, or an error for an unknown type or a repeated one. */
export function quotaEntityKey(components: readonly QuotaEntityComponent[]): string | { error: string } {
  if (components.length === 0) return { error: 'Invalid empty client quota entity' };
  const seen = new Set<string>();
  for (const c of components) {
    if (!(QUOTA_ENTITY_TYPES as readonly string[]).includes(c.entityType))
      return { error: `Unhandled client quota entity type: ${c.entityType}` };
    if (seen.has(c.entityType))
      return { error: `Duplicate ${c.entityType} entity in the client quota entity` };
    seen.add(c.entityType);
  }
  return [...components]
    .sort((a, b) => (a.entityType < b.entityType ? 1 : a.entityType > b.entityType ? -1 : 0))
    .map((c) => `${c.entityType}=${c.entityName === null ? '<default>' : encodeURIComponent(c.entityName)}`)
    .join(',');
}

/** The components of a canonical key (user first, then client-id). */
export function quotaEntityComponents(key: string): QuotaEntityComponent[] {
  return key.split(',').map((part) => {
    const eq = part.indexOf('=');
    const name = part.slice(eq + 1);
    return {
      entityType: part.slice(0, eq),
      entityName: name === '<default>' ? null : decodeURIComponent(name),
    };
  });
}

/** Kafka's checks on quota values: a known key, and a positive number. */
export function validateClientQuotas(changes: Readonly<Record<string, string | null>>): ApiResult {
  for (const [key, value] of Object.entries(changes)) {
    if (!QUOTA_KEYS.has(key)) {
      return { errorCode: INVALID_REQUEST, errorMessage: `Invalid configuration key ${key}` };
    }
    if (value === null) continue;
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n <= 0) {
      return {
        errorCode: INVALID_REQUEST,
        errorMessage: `Illegal value ${value} for ${key}: must be a positive number`,
      };
    }
  }
  return { errorCode: 0, errorMessage: null };
}

/**
 * The components of an entity in the order Kafka answers them: its entity is a HashMap of type to
 * name (`new HashMap<>(initialCapacity)` when made from a request, `new HashMap<>()` in the metadata
 * image), so `client-id` comes before `user` whatever order the client sent.
 */
export function kafkaEntityOrder(
  components: readonly QuotaEntityComponent[],
  initialCapacity?: number,
): QuotaEntityComponent[] {
  const capacity = javaHashMapCapacity(initialCapacity, new Set(components.map((c) => c.entityType)).size);
  return javaHashMapOrder(components, (c) => javaStringHash(c.entityType), capacity);
}

/** ClientQuotaEntity.hashCode: Objects.hash(entries), entries the map of type to name. */
export function kafkaEntityHash(components: readonly QuotaEntityComponent[]): number {
  return (31 + javaStringMapHash(components.map((c) => [c.entityType, c.entityName] as const))) | 0;
}

/**
 * The order of an entity's quota values after a change, as the broker's ClientQuotaImage holds
 * them: ClientQuotaDelta.apply puts the kept keys in the previous image's order into a
 * `new HashMap<>(previous size)`, then the added keys in the order of the delta's own HashMap of
 * changes; the image iterates that map. `previous` is the image's order before the change,
 * `next` the keys after it (any order), `changed` the keys the change wrote.
 */
export function kafkaQuotaValueOrder(
  previous: readonly string[],
  next: readonly string[],
  changed: readonly string[],
): string[] {
  const keep = new Set(next);
  const kept = previous.filter((k) => keep.has(k));
  const old = new Set(previous);
  const added = javaHashMapOrder(
    changed.filter((k) => keep.has(k) && !old.has(k)),
    javaStringHash,
    javaHashMapCapacity(undefined, changed.length),
  );
  return javaHashMapOrder(
    [...kept, ...added],
    javaStringHash,
    javaHashMapCapacity(previous.length, keep.size),
  );
}
