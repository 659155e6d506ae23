/**
 * `skiff configs --entity-type users` for SCRAM credentials, as kafka-configs does it over
 * DescribeUserScramCredentials / AlterUserScramCredentials: `--add-config
 * 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'`, `--delete-config SCRAM-SHA-512`, and
 * the `SCRAM credential configs for user-principal ...` lines of --describe.
 */
import { ClientError, kafkaError } from '../../client/errors.js';
import type { KafkaClient } from '../../client/kafka-client.js';
import {
  alterUserScramCredentials,
  describeUserScramCredentials,
  type ScramAlteration,
} from '../../client/scram-admin.js';
import { QUOTA_KEYS } from '../../metadata/client-quotas.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import { SCRAM_DEFAULT_ITERATIONS, SCRAM_MECHANISMS } from '../../security/scram.js';
import type { CliIo } from '../cli.js';
import { UsageError } from './common.js';

/**
 * True when the change is to SCRAM credentials; throws Kafka's refusals for a mix of SCRAM and
 * quota configs, unknown names, or SCRAM with the user default.
 */
export function isScramAlteration(
  type: 'users' | 'clients',
  name: string,
  toAdd: ReadonlyMap<string, string>,
  toDelete: readonly string[],
): boolean {
  const scram = (k: string): boolean => SCRAM_MECHANISMS.has(k);
  const added = [...toAdd.keys()];
  const hasScram = added.some(scram) || toDelete.some(scram);
  if (type === 'clients') {
    const bad = added.filter((k) => !QUOTA_KEYS.has(k));
    if (bad.length > 0) {
      throw new ClientError(
        `Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected config names: ${bad.join(',')}`,
      );
    }
    return false;
  }
  const unknownAdd = added.filter((k) => !scram(k) && !QUOTA_KEYS.has(k));
  if (unknownAdd.length > 0) {
    throw new ClientError(
      `Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server. Unexpected config names: ${unknownAdd.join(',')}`,
    );
  }
  const unknownDelete = toDelete.filter((k) => !scram(k) && !QUOTA_KEYS.has(k));
  if (unknownDelete.length > 0) {
    throw new ClientError(
      `Only quota and SCRAM credential configs can be deleted for 'users' using --bootstrap-server. Unexpected config names: ${unknownDelete.join(',')}`,
    );
  }
  if (!hasScram) return false;
  if (name === '') {
    throw new ClientError(
      'The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials using --bootstrap-server.',
    );
  }
  if (added.some((k) => QUOTA_KEYS.has(k)) || toDelete.some((k) => QUOTA_KEYS.has(k))) {
    throw new ClientError(
      "Cannot alter both quota and SCRAM credential configs simultaneously for 'users' using --bootstrap-server.",
    );
  }
  return true;
}

/** `[iterations=N,]password=...` as kafka-configs reads it (brackets already removed). */
export function parseScramValue(mechanism: string, value: string): { iterations: number; password: string } {
  const m = /^(?:iterations=(-?[0-9]*),)?password=(.*)$/s.exec(value);
  if (m === null) throw new UsageError(`Invalid credential property ${mechanism}=${value}`);
  const iterations = m[1] !== undefined && m[1] !== '-1' ? Number(m[1]) : SCRAM_DEFAULT_ITERATIONS;
  const min = SCRAM_MECHANISMS.get(mechanism)!.minIterations;
  if (!Number.isInteger(iterations) || iterations < min) {
    throw new UsageError(`Iterations ${m[1]} is less than the minimum ${min} required for ${mechanism}`);
  }
  return { iterations, password: m[2]! };
}

export async function alterScram(
  client: KafkaClient,
  user: string,
  toAdd: ReadonlyMap<string, string>,
  toDelete: readonly string[],
  io: CliIo,
): Promise<number> {
  const alterations: ScramAlteration[] = [
    ...toDelete.map((mechanism): ScramAlteration => ({ kind: 'delete', user, mechanism })),
    ...[...toAdd].map(
      ([mechanism, value]): ScramAlteration => ({
        kind: 'upsert',
        user,
        mechanism,
        ...parseScramValue(mechanism, value),
      }),
    ),
  ];
  await alterUserScramCredentials(client, alterations);
  io.out(`Completed updating config for user ${user}.`);
  return 0;
}

export async function describeScram(client: KafkaClient, user: string | undefined, io: CliIo): Promise<void> {
  const results = await describeUserScramCredentials(client, user === undefined ? [] : [user]);
  for (const r of results) {
    // Kafka's result.users() leaves out the users that have no credentials.
    if (r.errorCode === ErrorCode.RESOURCE_NOT_FOUND) continue;
    if (r.errorCode !== 0) {
      io.out(
        `Error retrieving SCRAM credential configs for user-principal '${r.user}': ${exceptionName(r.errorCode)}: ${r.errorMessage}`,
      );
      continue;
    }
    const text = r.credentials.map((c) => `${c.mechanism}=iterations=${c.iterations}`).join(', ');
    io.out(`SCRAM credential configs for user-principal '${r.user}' are ${text}`);
  }
}

/** Kafka's exception class for an error code: DUPLICATE_RESOURCE → DuplicateResourceException. */
function exceptionName(code: number): string {
  const camel = kafkaError(code)
    .errorName.toLowerCase()
    .replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());
  return `${camel}Exception`;
}
