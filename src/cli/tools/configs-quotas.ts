/**
 * `skiff configs --entity-type users|clients`: Kafka's kafka-configs for client quotas
 * (producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate) over
 * DescribeClientQuotas / AlterClientQuotas, with Kafka's lines. The quotas are stored in the
 * cluster metadata; the brokers enforce all four.
 */
import { ClientError } from '../../client/errors.js';
import type { KafkaClient } from '../../client/kafka-client.js';
import {
  alterClientQuotas,
  describeClientQuotas,
  type QuotaEntity,
  type QuotaEntry,
} from '../../client/quota-admin.js';
import { QUOTA_KEYS } from '../../metadata/client-quotas.js';
import type { CliIo } from '../cli.js';
import { type Flags, UsageError } from './common.js';

export type QuotaEntityType = 'users' | 'clients';

const WIRE_TYPE: Record<QuotaEntityType, string> = { users: 'user', clients: 'client-id' };

/** A double as Java's Double.toString prints it: 1024.0, 1.5, 1.048576E7. */
export function javaDouble(n: number): string {
  if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : n < 0 ? '-Infinity' : 'NaN';
  const abs = Math.abs(n);
  if (abs === 0 || (abs >= 1e-3 && abs < 1e7)) {
    const s = String(n);
    return s.includes('.') || s.includes('e') ? s : `${s}.0`;
  }
  const [m, e] = n.toExponential().split('e') as [string, string];
  return `${m.includes('.') ? m : `${m}.0`}E${Number(e)}`;
}

/** Kafka's words for an entity: user-principal 'alice', the default client-id, ... */
export function quotaEntityText(entity: readonly QuotaEntity[]): string {
  return entity
    .map((c) => {
      const type = c.entityType === 'user' ? 'user-principal' : c.entityType;
      return c.entityName === null ? `the default ${type}` : `${type} '${c.entityName}'`;
    })
    .join(', ');
}

export function formatQuotaEntry(e: QuotaEntry): string {
  return `Quota configs for ${quotaEntityText(e.entity)} are ${e.values.map((v) => `${v.key}=${javaDouble(v.value)}`).join(', ')}`;
}

export async function describeQuotas(
  client: KafkaClient,
  type: QuotaEntityType,
  name: string | undefined,
  flags: Flags,
  io: CliIo,
): Promise<number> {
  // '' is --entity-default.
  const entries = await describeClientQuotas(client, WIRE_TYPE[type], name === '' ? null : name);
  if (flags.has('json')) {
    io.out(
      JSON.stringify(
        entries.map((e) => ({
          entity: e.entity.map((c) => ({ type: c.entityType, name: c.entityName })),
          quotas: Object.fromEntries(e.values.map((v) => [v.key, v.value])),
        })),
      ),
    );
  } else {
    for (const e of entries) io.out(formatQuotaEntry(e));
  }
  return 0;
}

export async function alterQuotas(
  client: KafkaClient,
  type: QuotaEntityType,
  name: string,
  toAdd: ReadonlyMap<string, string>,
  toDelete: readonly string[],
  io: CliIo,
): Promise<number> {
  const ops: { key: string; value: number | null }[] = [];
  for (const [k, v] of toAdd) {
    if (!QUOTA_KEYS.has(k)) throw new ClientError(`Invalid config(s): ${k}`);
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n <= 0)
      throw new UsageError(`Invalid value ${v} for ${k}: a positive number is expected`);
    ops.push({ key: k, value: n });
  }
  for (const k of toDelete) {
    if (!QUOTA_KEYS.has(k)) throw new ClientError(`Invalid config(s): ${k}`);
    ops.push({ key: k, value: null });
  }
  await alterClientQuotas(
    client,
    [{ entityType: WIRE_TYPE[type], entityName: name === '' ? null : name }],
    ops,
  );
  io.out(
    name === ''
      ? `Completed updating default config for ${type} in the cluster.`
      : `Completed updating config for ${type.slice(0, -1)} ${name}.`,
  );
  return 0;
}
