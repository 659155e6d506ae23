/** DescribeClientQuotas / AlterClientQuotas for the tools (Kafka's Admin.describeClientQuotas/alterClientQuotas). */
import { lazyApi } from './apis.js';
import { checkCode } from './errors.js';
import type { KafkaClient } from './kafka-client.js';

export const DescribeClientQuotasApi = lazyApi(48, 'DescribeClientQuotas', 0, 1, async () => ({
  request: (await import('../protocol/generated/DescribeClientQuotasRequest.js'))
    .DescribeClientQuotasRequestCodec,
  response: (await import('../protocol/generated/DescribeClientQuotasResponse.js'))
    .DescribeClientQuotasResponseCodec,
}));

export const AlterClientQuotasApi = lazyApi(49, 'AlterClientQuotas', 0, 1, async () => ({
  request: (await import('../protocol/generated/AlterClientQuotasRequest.js')).AlterClientQuotasRequestCodec,
  response: (await import('../protocol/generated/AlterClientQuotasResponse.js'))
    .AlterClientQuotasResponseCodec,
}));

export interface QuotaEntity {
  /** 'user' or 'client-id'. */
  readonly entityType: string;
  /** null: the default entity of the type. */
  readonly entityName: string | null;
}

export interface QuotaEntry {
  readonly entity: readonly QuotaEntity[];
  /** Sorted by key. */
  readonly values: readonly { readonly key: string; readonly value: number }[];
}

/**
 * Quota entries whose entity has a component of `entityType`: named `name`, the default when
 * `name` is null, any named one when `name` is undefined. Strict: no other components.
 */
export async function describeClientQuotas(
  client: KafkaClient,
  entityType: string,
  name: string | null | undefined,
): Promise<QuotaEntry[]> {
  const resp = await client.retry(() =>
    client.send({ kind: 'any' }, DescribeClientQuotasApi, () => ({
      components: [
        {
          entityType,
          matchType: name === undefined ? 2 : name === null ? 1 : 0,
          match: name ?? null,
        },
      ],
      strict: true,
    })),
  );
  checkCode(resp.errorCode, resp.errorMessage);
  return (resp.entries ?? []).map((e) => ({
    entity: e.entity.map((c) => ({ entityType: c.entityType, entityName: c.entityName })),
    values: [...e.values]
      .sort((a, b) => (a.key < b.key ? -1 : 1))
      .map((v) => ({ key: v.key, value: v.value })),
  }));
}

/** Sets (value) or removes (null) quota keys of one entity. */
export async function alterClientQuotas(
  client: KafkaClient,
  entity: readonly QuotaEntity[],
  ops: readonly { readonly key: string; readonly value: number | null }[],
): Promise<void> {
  const resp = await client.retry(() =>
    client.send({ kind: 'any' }, AlterClientQuotasApi, () => ({
      entries: [
        {
          entity: entity.map((c) => ({ entityType: c.entityType, entityName: c.entityName })),
          ops: ops.map((o) => ({ key: o.key, value: o.value ?? 0, remove: o.value === null })),
        },
      ],
      validateOnly: false,
    })),
  );
  const r = resp.entries[0];
  if (r) checkCode(r.errorCode, r.errorMessage);
}
