/**
 * DescribeUserScramCredentials and AlterUserScramCredentials (Kafka's KafkaApis / ControllerApis
 * with ScramControlManager): SCRAM credentials kept salted in the cluster metadata. An upsertion
 * carries the client's salt and salted password; the broker derives the stored key and server key
 * from it (as Kafka's controller does) and the controller stores only those.
 */
import type { ConfigMap } from '../../metadata/cluster-metadata.js';
import { javaHashMapCapacity, javaHashMapOrder, javaStringHash } from '../../metadata/java-hash-map.js';
import { describeScramCredentials, SCRAM_MECHANISM_BY_TYPE } from '../../metadata/scram-credentials.js';
import type {
  AlterUserScramCredentialsRequest,
  ScramCredentialDeletion,
  ScramCredentialUpsertion,
} from '../../protocol/generated/AlterUserScramCredentialsRequest.js';
import type {
  AlterUserScramCredentialsResponse,
  AlterUserScramCredentialsResult,
} from '../../protocol/generated/AlterUserScramCredentialsResponse.js';
import type { DescribeUserScramCredentialsRequest } from '../../protocol/generated/DescribeUserScramCredentialsRequest.js';
import type { DescribeUserScramCredentialsResponse } from '../../protocol/generated/DescribeUserScramCredentialsResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import {
  clientKeyOf,
  credentialToString,
  digest,
  SCRAM_MAX_ITERATIONS,
  SCRAM_MECHANISMS,
  serverKeyOf,
} from '../../security/scram.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';

export async function handleDescribeUserScramCredentials(
  b: BrokerServices,
  _ctx: RequestContext,
  req: DescribeUserScramCredentialsRequest,
): Promise<DescribeUserScramCredentialsResponse> {
  const users = req.users === null ? null : req.users.map((u) => u.name);
  return {
    throttleTimeMs: 0,
    errorCode: ErrorCode.NONE,
    errorMessage: null,
    results: describeScramCredentials(b.metadata.image(), users),
  };
}

interface Failure {
  readonly errorCode: number;
  readonly errorMessage: string;
}

const DUPLICATE: Failure = {
  errorCode: ErrorCode.DUPLICATE_RESOURCE,
  errorMessage: 'A user credential cannot be altered twice in the same request',
};

function checkNameAndMechanism(name: string, mechanism: number): Failure | null {
  if (name === '')
    return { errorCode: ErrorCode.UNACCEPTABLE_CREDENTIAL, errorMessage: 'Username must not be empty' };
  if (!SCRAM_MECHANISM_BY_TYPE.has(mechanism)) {
    return { errorCode: ErrorCode.UNSUPPORTED_SASL_MECHANISM, errorMessage: 'Unknown SCRAM mechanism' };
  }
  return null;
}

function checkUpsertion(u: ScramCredentialUpsertion): Failure | null {
  const bad = checkNameAndMechanism(u.name, u.mechanism);
  if (bad !== null) return bad;
  const info = SCRAM_MECHANISMS.get(SCRAM_MECHANISM_BY_TYPE.get(u.mechanism)!)!;
  if (u.iterations < info.minIterations) {
    return { errorCode: ErrorCode.UNACCEPTABLE_CREDENTIAL, errorMessage: 'Too few iterations' };
  }
  if (u.iterations > SCRAM_MAX_ITERATIONS) {
    return { errorCode: ErrorCode.UNACCEPTABLE_CREDENTIAL, errorMessage: 'Too many iterations' };
  }
  if (u.salt.length === 0 || u.saltedPassword.length === 0) {
    return {
      errorCode: ErrorCode.UNACCEPTABLE_CREDENTIAL,
      errorMessage: 'Salt and salted password must not be empty',
    };
  }
  return null;
}

/**
 * As Kafka's ScramControlManager.alterCredentials: a user named twice in one request (across
 * deletions and upsertions) fails with DUPLICATE_RESOURCE; results list the deletions, then the
 * upsertions, then the failures, each in the order of Kafka's HashMap of user names.
 */
export async function handleAlterUserScramCredentials(
  b: BrokerServices,
  _ctx: RequestContext,
  req: AlterUserScramCredentialsRequest,
): Promise<AlterUserScramCredentialsResponse> {
  const deletions = new Map<string, ScramCredentialDeletion>();
  const upsertions = new Map<string, ScramCredentialUpsertion>();
  const errors = new Map<string, Failure>();
  const stored = b.metadata.image().scramCredentials ?? new Map<string, ConfigMap>();
  for (const d of req.deletions) {
    if (errors.has(d.name)) continue;
    if (deletions.delete(d.name)) {
      errors.set(d.name, DUPLICATE);
      continue;
    }
    const mechanism = SCRAM_MECHANISM_BY_TYPE.get(d.mechanism);
    const bad =
      checkNameAndMechanism(d.name, d.mechanism) ??
      (stored.get(d.name)?.[mechanism!] === undefined
        ? {
            errorCode: ErrorCode.RESOURCE_NOT_FOUND,
            errorMessage: 'Attempt to delete a user credential that does not exist',
          }
        : null);
    if (bad !== null) errors.set(d.name, bad);
    else deletions.set(d.name, d);
  }
  for (const u of req.upsertions) {
    if (errors.has(u.name)) continue;
    if (deletions.delete(u.name) || upsertions.delete(u.name)) {
      errors.set(u.name, DUPLICATE);
      continue;
    }
    const bad = checkUpsertion(u);
    if (bad !== null) errors.set(u.name, bad);
    else upsertions.set(u.name, u);
  }
  const apply = async (
    user: string,
    mechanism: number,
    value: string | null,
  ): Promise<AlterUserScramCredentialsResult> => {
    try {
      const r = await b.metadata.controller.alterConfigs(
        { type: 'scram-user', user },
        [{ name: SCRAM_MECHANISM_BY_TYPE.get(mechanism)!, value }],
        true,
        false,
      );
      return { user, errorCode: r.errorCode, errorMessage: r.errorCode === 0 ? null : r.errorMessage };
    } catch (e) {
      b.logger.warn(`alter SCRAM credentials of user ${JSON.stringify(user)}: ${(e as Error).message}`);
      return { user, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: (e as Error).message };
    }
  };
  const hashOrder = <T>(m: Map<string, T>): [string, T][] =>
    javaHashMapOrder([...m], ([k]) => javaStringHash(k), javaHashMapCapacity(undefined, m.size));
  const deleted = await Promise.all(hashOrder(deletions).map(([user, d]) => apply(user, d.mechanism, null)));
  const upserted = await Promise.all(
    hashOrder(upsertions).map(([user, u]) => apply(user, u.mechanism, storedCredential(u))),
  );
  const failed = hashOrder(errors).map(([user, f]) => ({ user, ...f }));
  return { throttleTimeMs: 0, results: [...deleted, ...upserted, ...failed] };
}

/** The stored form of an upsertion: Kafka's ScramFormatter storedKey(clientKey(salted)) and serverKey(salted). */
function storedCredential(u: ScramCredentialUpsertion): string {
  const hash = SCRAM_MECHANISMS.get(SCRAM_MECHANISM_BY_TYPE.get(u.mechanism)!)!.hash;
  const salted = Buffer.from(u.saltedPassword);
  return credentialToString({
    salt: Buffer.from(u.salt),
    storedKey: digest(hash, clientKeyOf(hash, salted)),
    serverKey: serverKeyOf(hash, salted),
    iterations: u.iterations,
  });
}
