/**
 * DescribeClientQuotas and AlterClientQuotas (Kafka's ClientQuotaManager admin side): quota values
 * for user / client-id entities, kept in the cluster metadata through the controller like dynamic
 * configs. Every broker enforces them from its metadata image (client-quota-manager.ts).
 */
import {
  kafkaEntityHash,
  kafkaEntityOrder,
  QUOTA_KEYS,
  type QuotaEntityComponent,
  quotaEntityComponents,
  quotaEntityKey,
} from '../../metadata/client-quotas.js';
import { javaHashMapCapacity, javaHashMapOrder } from '../../metadata/java-hash-map.js';
import type { AlterClientQuotasRequest } from '../../protocol/generated/AlterClientQuotasRequest.js';
import type { AlterClientQuotasResponse } from '../../protocol/generated/AlterClientQuotasResponse.js';
import type { DescribeClientQuotasRequest } from '../../protocol/generated/DescribeClientQuotasRequest.js';
import type {
  DescribeClientQuotasResponse,
  EntryData,
} from '../../protocol/generated/DescribeClientQuotasResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';

const MATCH_EXACT = 0;
const MATCH_DEFAULT = 1;
const MATCH_SPECIFIED = 2;

function matches(
  entity: readonly QuotaEntityComponent[],
  filter: DescribeClientQuotasRequest['components'],
  strict: boolean,
): boolean {
  for (const f of filter) {
    const c = entity.find((e) => e.entityType === f.entityType);
    if (!c) return false;
    if (f.matchType === MATCH_EXACT && c.entityName !== f.match) return false;
    if (f.matchType === MATCH_DEFAULT && c.entityName !== null) return false;
    if (f.matchType === MATCH_SPECIFIED && c.entityName === null) return false;
  }
  return !strict || entity.every((e) => filter.some((f) => f.entityType === e.entityType));
}

export async function handleDescribeClientQuotas(
  b: BrokerServices,
  _ctx: RequestContext,
  req: DescribeClientQuotasRequest,
): Promise<DescribeClientQuotasResponse> {
  const seen = new Set<string>();
  for (const f of req.components) {
    const bad =
      (f.entityType !== 'user' && f.entityType !== 'client-id'
        ? `Custom entity type '${f.entityType}' not supported`
        : null) ??
      (seen.has(f.entityType) ? `Duplicate ${f.entityType} in the filter` : null) ??
      (f.matchType === MATCH_EXACT && f.match === null ? 'An exact match needs a name' : null) ??
      (f.matchType < 0 || f.matchType > 2 ? `Unknown match type ${f.matchType}` : null);
    if (bad !== null) {
      return { throttleTimeMs: 0, errorCode: ErrorCode.INVALID_REQUEST, errorMessage: bad, entries: null };
    }
    seen.add(f.entityType);
  }
  const entries: EntryData[] = [];
  const quotas = b.metadata.image().clientQuotas ?? new Map();
  // Entries in the order of the image's HashMap of entities: its table is the smallest that holds
  // them all when no entity was removed since the image's last quota change (a removal can leave
  // Kafka's table larger); entities sharing a bucket in the order of their canonical keys (Kafka:
  // the order they were put).
  const all = [...quotas]
    .sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0))
    .map(([key, values]) => ({
      entity: quotaEntityComponents(key),
      values: values as Record<string, string>,
    }));
  const image = javaHashMapOrder(all, (e) => kafkaEntityHash(e.entity), javaHashMapCapacity(0, all.length));
  for (const { entity, values } of image) {
    if (!matches(entity, req.components, req.strict)) continue;
    // Components and values in Kafka's order: the image's HashMaps (client-quotas.ts); the values
    // are stored in that order.
    entries.push({
      entity: kafkaEntityOrder(entity).map((e) => ({ entityType: e.entityType, entityName: e.entityName })),
      values: Object.entries(values)
        .filter(([k]) => QUOTA_KEYS.has(k))
        .map(([k, v]) => ({ key: k, value: Number(v) })),
    });
  }
  return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, errorMessage: null, entries };
}

export async function handleAlterClientQuotas(
  b: BrokerServices,
  _ctx: RequestContext,
  req: AlterClientQuotasRequest,
): Promise<AlterClientQuotasResponse> {
  const results = await Promise.all(
    req.entries.map(async (e) => {
      // As Kafka's request makes it: a HashMap of type to name sized by the components.
      const entity = kafkaEntityOrder(
        e.entity.map((c) => ({ entityType: c.entityType, entityName: c.entityName })),
        e.entity.length,
      );
      const fail = (errorCode: number, errorMessage: string) => ({ errorCode, errorMessage, entity });
      const key = quotaEntityKey(entity);
      if (typeof key !== 'string') return fail(ErrorCode.INVALID_REQUEST, key.error);
      const keys = new Set<string>();
      for (const op of e.ops) {
        if (keys.has(op.key)) return fail(ErrorCode.INVALID_REQUEST, `Duplicate quota key ${op.key}`);
        keys.add(op.key);
        if (!op.remove && !(Number.isFinite(op.value) && op.value > 0))
          return fail(ErrorCode.INVALID_REQUEST, `Illegal value ${op.value} for ${op.key}`);
      }
      try {
        const r = await b.metadata.controller.alterConfigs(
          { type: 'client-quota', entity: key },
          e.ops.map((op) => ({ name: op.key, value: op.remove ? null : String(op.value) })),
          true,
          req.validateOnly,
        );
        return { errorCode: r.errorCode, errorMessage: r.errorMessage, entity };
      } catch (err) {
        b.logger.warn(`alter client quotas of ${key}: ${(err as Error).message}`);
        return fail(ErrorCode.UNKNOWN_SERVER_ERROR, (err as Error).message);
      }
    }),
  );
  // The controller answers from a HashMap of entity to result (ControllerApis' fromQuotaEntities).
  const order = javaHashMapOrder(
    results,
    (r) => kafkaEntityHash(r.entity),
    javaHashMapCapacity(undefined, results.length),
  );
  return { throttleTimeMs: 0, entries: order };
}
