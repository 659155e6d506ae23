/**
 * SASL on the request path: every frame of a SASL_PLAINTEXT / SASL_SSL connection passes its
 * SaslServerAuthenticator (security/sasl-authenticator.ts) before routing, and SaslHandshake /
 * SaslAuthenticate that reach the router (a PLAINTEXT or SSL listener, or an authenticated
 * connection that cannot re-authenticate) are answered ILLEGAL_SASL_STATE, as Kafka's KafkaApis.
 */
import { CloseConnectionError, type ConnectionInfo } from '../../network/request-handler.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { SaslAuthenticateRequest } from '../../protocol/generated/SaslAuthenticateRequest.js';
import type { SaslAuthenticateResponse } from '../../protocol/generated/SaslAuthenticateResponse.js';
import type { SaslHandshakeRequest } from '../../protocol/generated/SaslHandshakeRequest.js';
import type { SaslHandshakeResponse } from '../../protocol/generated/SaslHandshakeResponse.js';
import { SaslServerAuthenticator } from '../../security/sasl-authenticator.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';

/**
 * Runs a frame of a SASL connection through its authentication. Resolves to the response to write
 * when the authenticator answers the frame itself, null when the router serves it; rejects with
 * CloseConnectionError (after connection.failed.authentication.delay.ms for a failed exchange).
 */
export async function saslStep(
  b: BrokerServices,
  /** The router's: one authenticator per connection, dropped with it. */
  authenticators: WeakMap<ConnectionInfo, SaslServerAuthenticator>,
  frame: Buffer,
  connection: ConnectionInfo,
): Promise<Buffer[] | null> {
  const sasl = b.sasl!;
  let auth = authenticators.get(connection);
  if (auth === undefined) {
    const settings = sasl.settings(connection.listenerName);
    if (settings === undefined) {
      throw new CloseConnectionError(`listener ${connection.listenerName} has no SASL settings`);
    }
    auth = new SaslServerAuthenticator(settings, sasl.services);
    authenticators.set(connection, auth);
  }
  const step = auth.step(frame, (principal) => {
    connection.principal = principal;
    connection.liftFrameLimit?.();
  });
  if (step.kind === 'serve') return null;
  if (step.kind === 'answer') return step.response;
  if (step.delayMs > 0) {
    await new Promise<void>((resolve) =>
      b.scheduler.schedule('failed authentication delay', step.delayMs, resolve),
    );
  }
  throw new CloseConnectionError(step.reason, step.response);
}

export async function handleSaslHandshake(
  _ctx: RequestContext,
  _req: SaslHandshakeRequest,
): Promise<SaslHandshakeResponse> {
  return { errorCode: ErrorCode.ILLEGAL_SASL_STATE, mechanisms: [] };
}

export async function handleSaslAuthenticate(
  _ctx: RequestContext,
  _req: SaslAuthenticateRequest,
): Promise<SaslAuthenticateResponse> {
  return {
    errorCode: ErrorCode.ILLEGAL_SASL_STATE,
    errorMessage: 'SaslAuthenticate request received after successful authentication',
    authBytes: Buffer.alloc(0),
    sessionLifetimeMs: 0n,
  };
}
