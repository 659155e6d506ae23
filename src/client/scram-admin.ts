/**
 * DescribeUserScramCredentials / AlterUserScramCredentials for the tools (Kafka's
 * Admin.describeUserScramCredentials / alterUserScramCredentials). The password never leaves the
 * client: an upsertion sends a fresh random salt and the salted password (Hi() of RFC 5802).
 */
import { randomBytes } from 'node:crypto';
import { SCRAM_MECHANISMS, saltedPassword } from '../security/scram.js';
import { lazyApi } from './apis.js';
import { ClientError, checkCode } from './errors.js';
import type { KafkaClient } from './kafka-client.js';

export const DescribeUserScramCredentialsApi = lazyApi(
  50,
  'DescribeUserScramCredentials',
  0,
  0,
  async () => ({
    request: (await import('../protocol/generated/DescribeUserScramCredentialsRequest.js'))
      .DescribeUserScramCredentialsRequestCodec,
    response: (await import('../protocol/generated/DescribeUserScramCredentialsResponse.js'))
      .DescribeUserScramCredentialsResponseCodec,
  }),
);

export const AlterUserScramCredentialsApi = lazyApi(51, 'AlterUserScramCredentials', 0, 0, async () => ({
  request: (await import('../protocol/generated/AlterUserScramCredentialsRequest.js'))
    .AlterUserScramCredentialsRequestCodec,
  response: (await import('../protocol/generated/AlterUserScramCredentialsResponse.js'))
    .AlterUserScramCredentialsResponseCodec,
}));

/** The wire type of each mechanism (Kafka's admin ScramMechanism). */
export const SCRAM_TYPES: ReadonlyMap<string, number> = new Map([
  ['SCRAM-SHA-256', 1],
  ['SCRAM-SHA-512', 2],
]);

export function scramMechanismName(type: number): string {
  for (const [name, t] of SCRAM_TYPES) if (t === type) return name;
  return 'UNKNOWN';
}

export interface UserScramDescription {
  readonly user: string;
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly credentials: readonly { readonly mechanism: string; readonly iterations: number }[];
}

/** Every user with credentials when `users` is empty. */
export async function describeUserScramCredentials(
  client: KafkaClient,
  users: readonly string[],
): Promise<UserScramDescription[]> {
  const resp = await client.retry(() =>
    client.send({ kind: 'any' }, DescribeUserScramCredentialsApi, () => ({
      users: users.length === 0 ? null : users.map((name) => ({ name })),
    })),
  );
  checkCode(resp.errorCode, resp.errorMessage);
  return resp.results.map((r) => ({
    user: r.user,
    errorCode: r.errorCode,
    errorMessage: r.errorMessage,
    credentials: r.credentialInfos.map((c) => ({
      mechanism: scramMechanismName(c.mechanism),
      iterations: c.iterations,
    })),
  }));
}

export type ScramAlteration =
  | { readonly kind: 'delete'; readonly user: string; readonly mechanism: string }
  | {
      readonly kind: 'upsert';
      readonly user: string;
      readonly mechanism: string;
      readonly iterations: number;
      readonly password: string;
    };

/** Applies the alterations; throws the first user's error, as Kafka's result.all() does. */
export async function alterUserScramCredentials(
  client: KafkaClient,
  alterations: readonly ScramAlteration[],
): Promise<void> {
  const typeOf = (m: string): number => {
    const t = SCRAM_TYPES.get(m);
    if (t === undefined) throw new ClientError(`Unknown SCRAM mechanism ${m}`);
    return t;
  };
  const upsertions = alterations.flatMap((a) => {
    if (a.kind !== 'upsert') return [];
    const info = SCRAM_MECHANISMS.get(a.mechanism)!;
    const salt = randomBytes(32);
    return [
      {
        name: a.user,
        mechanism: typeOf(a.mechanism),
        iterations: a.iterations,
        salt,
        saltedPassword: saltedPassword(info.hash, a.password, salt, a.iterations),
      },
    ];
  });
  const deletions = alterations.flatMap((a) =>
    a.kind === 'delete' ? [{ name: a.user, mechanism: typeOf(a.mechanism) }] : [],
  );
  const resp = await client.retry(() =>
    client.send({ kind: 'any' }, AlterUserScramCredentialsApi, () => ({ deletions, upsertions })),
  );
  for (const r of resp.results) checkCode(r.errorCode, r.errorMessage);
}
