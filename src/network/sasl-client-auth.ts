/**
 * A client's SASL authentication on a fresh connection (Kafka's SaslClientAuthenticator):
 * SaslHandshake v1 naming the mechanism, then SaslAuthenticate v2 carrying the mechanism's tokens
 * until it completes. Used by the tools and by brokers replicating over a SASL listener.
 */

import { errorByCode } from '../protocol/generated/errors.js';
import { SaslAuthenticateRequestCodec } from '../protocol/generated/SaslAuthenticateRequest.js';
import { SaslAuthenticateResponseCodec } from '../protocol/generated/SaslAuthenticateResponse.js';
import { SaslHandshakeRequestCodec } from '../protocol/generated/SaslHandshakeRequest.js';
import { SaslHandshakeResponseCodec } from '../protocol/generated/SaslHandshakeResponse.js';
import { saslClientFor } from '../security/sasl-client.js';
import type { ClientConnection } from './client-connection.js';

export interface SaslClientCredentials {
  /** PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (sasl.mechanism). */
  readonly mechanism: string;
  readonly username: string;
  readonly password: string;
}

/** The broker refused the authentication; the message is the broker's, or Kafka's for the code. */
export class SaslAuthenticationError extends Error {
  override readonly name = 'SaslAuthenticationError';
}

/** Rounds of one exchange: SCRAM needs two, PLAIN one; a broker asking for more is refused. */
const MAX_ROUNDS = 4;

export async function saslAuthenticate(conn: ClientConnection, creds: SaslClientCredentials): Promise<void> {
  const client = saslClientFor(creds.mechanism, creds.username, creds.password);
  const h = await conn.send(
    SaslHandshakeRequestCodec.apiKey,
    1,
    SaslHandshakeRequestCodec,
    { mechanism: creds.mechanism },
    SaslHandshakeResponseCodec,
  );
  if (h.errorCode !== 0) {
    throw new SaslAuthenticationError(
      `${errorByCode(h.errorCode)?.name ?? h.errorCode}: the broker does not accept SASL mechanism ${creds.mechanism} (it offers ${h.mechanisms.join(', ') || 'none'})`,
    );
  }
  let token: Buffer | null = client.initial();
  for (let round = 0; token !== null; round++) {
    if (round >= MAX_ROUNDS)
      throw new SaslAuthenticationError(`${creds.mechanism} did not complete in ${MAX_ROUNDS} rounds`);
    const r = await conn.send(
      SaslAuthenticateRequestCodec.apiKey,
      2,
      SaslAuthenticateRequestCodec,
      { authBytes: token },
      SaslAuthenticateResponseCodec,
    );
    if (r.errorCode !== 0) {
      throw new SaslAuthenticationError(
        r.errorMessage ?? errorByCode(r.errorCode)?.message ?? `SASL error code ${r.errorCode}`,
      );
    }
    token = client.evaluate(r.authBytes);
  }
}
