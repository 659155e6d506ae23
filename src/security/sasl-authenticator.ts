/**
 * The SASL exchange of one connection on a SASL_PLAINTEXT or SASL_SSL listener (Kafka's
 * SaslServerAuthenticator): before authentication only ApiVersions, SaslHandshake and
 * SaslAuthenticate are served — or, after a SaslHandshake v0, the raw tokens of old clients —
 * and anything else closes the connection. On success the connection's principal becomes
 * User:<name>; with connections.max.reauth.ms (KIP-368) the session expires, and a connection
 * that does not re-authenticate in time is closed at its next request.
 *
 * Owned by the request router, one per connection, fed every request frame of that connection
 * in order; it never writes to the socket itself: each step says what the router answers.
 */
import type { Clock } from '../common/clock.js';
import { LIMITS } from '../common/limits.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { API_MESSAGES, ApiKey } from '../protocol/generated/index.js';
import {
  type SaslAuthenticateRequest,
  SaslAuthenticateRequestCodec,
} from '../protocol/generated/SaslAuthenticateRequest.js';
import { SaslAuthenticateResponseCodec } from '../protocol/generated/SaslAuthenticateResponse.js';
import {
  type SaslHandshakeRequest,
  SaslHandshakeRequestCodec,
} from '../protocol/generated/SaslHandshakeRequest.js';
import { SaslHandshakeResponseCodec } from '../protocol/generated/SaslHandshakeResponse.js';
import { encodeResponse } from '../protocol/messages.js';
import { readRequest } from '../protocol/request-frame.js';
import { jaasClientCredentials, jaasPlainUsers, parseSingleLoginModule } from './jaas.js';
import { type KafkaPrincipal, principalToString, USER_TYPE } from './principal.js';
import {
  PlainServer,
  SaslAuthenticationFailure,
  type SaslServerMechanism,
  ScramServer,
} from './sasl-server.js';
import { SCRAM_MECHANISMS, type ScramCredential } from './scram.js';

/** The SASL mechanisms a Skiff broker serves. */
export const SERVER_SASL_MECHANISMS: readonly string[] = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'];

/** One SASL listener's settings (its listener.name.<l>.* overrides applied). */
export interface SaslListenerSettings {
  readonly listenerName: string;
  /** sasl.enabled.mechanisms, as configured (the handshake answers this list). */
  readonly enabledMechanisms: readonly string[];
  /** The PLAIN users of the listener's JAAS config (`user_<name>`); undefined for an unknown user. */
  readonly plainPasswordOf: (user: string) => string | undefined;
  /** connections.max.reauth.ms; 0: sessions never expire. */
  readonly maxReauthMs: number;
  /** sasl.server.max.receive.size: the largest frame before authentication completes. */
  readonly maxReceiveBytes: number;
  /** connection.failed.authentication.delay.ms: how long a failed client waits for its answer and the close. */
  readonly failedAuthenticationDelayMs: number;
}

export interface SaslServices {
  readonly clock: Clock;
  /** The stored SCRAM credential of a user (from the metadata image), undefined when none. */
  scramCredentialOf(mechanism: string, user: string): ScramCredential | undefined;
  /** A fresh random SCRAM server nonce. */
  nonce(): string;
  /** A secret of this broker process (for unknown users' decoy salts). */
  readonly secret: Buffer;
}

/** What the router does with a frame. */
export type SaslStep =
  /** Serve the request as usual (ApiVersions before authentication, anything after). */
  | { readonly kind: 'serve' }
  /** Write this response (size prefix included). */
  | { readonly kind: 'answer'; readonly response: Buffer[] }
  /**
   * Close the connection with one log line; `response` (if any) is written first, and both wait
   * `delayMs` (a failed authentication is slowed, as Kafka's delayed close).
   */
  | {
      readonly kind: 'close';
      readonly reason: string;
      readonly response?: Buffer[];
      readonly delayMs: number;
    };

type State =
  | 'initial'
  | 'handshake'
  | 'authenticate'
  | 'raw-token'
  | 'complete'
  | 'reauth-bad-mechanism'
  | 'failed';

/** Kafka's ApiKeys enum name of an API (METADATA, SASL_AUTHENTICATE, ...). */
function apiName(apiKey: number): string {
  const name = API_MESSAGES.get(apiKey)?.name ?? `UNKNOWN(${apiKey})`;
  return name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

const SASL_HANDSHAKE_MAX_VERSION = 1;
const SASL_AUTHENTICATE_MAX_VERSION = 2;

export class SaslServerAuthenticator {
  private state: State = 'initial';
  private mechanism: SaslServerMechanism | null = null;
  private mechanismName = '';
  /** The client used SaslAuthenticate v1+: it can re-authenticate (KIP-368). */
  private clientReauthenticates = false;
  private sessionExpiresAtMs = Number.POSITIVE_INFINITY;
  /** Set while re-authenticating: the principal and mechanism that must not change. */
  private previous: { principal: KafkaPrincipal; mechanism: string } | null = null;
  private badMechanismMessage = '';
  /** When the current exchange began (its first frame, or the re-authentication's handshake). */
  private exchangeStartMs: number;

  constructor(
    private readonly settings: SaslListenerSettings,
    private readonly services: SaslServices,
  ) {
    this.exchangeStartMs = services.clock.nowMs();
  }

  /** Authenticated, and not re-authenticating. */
  get authenticated(): boolean {
    return this.state === 'complete';
  }

  /**
   * Decides what happens to one request frame. `setPrincipal` is called once an exchange
   * succeeds, before the step that answers it is returned.
   */
  step(frame: Buffer, setPrincipal: (p: KafkaPrincipal) => void): SaslStep {
    if (this.state === 'complete') return this.authenticatedStep(frame);
    if (this.services.clock.nowMs() - this.exchangeStartMs > LIMITS.saslAuthenticationMs) {
      return this.fail(
        `SASL authentication not complete within ${LIMITS.saslAuthenticationMs} ms`,
        undefined,
      );
    }
    if (frame.length > this.settings.maxReceiveBytes) {
      return this.fail('Failing SASL authentication due to invalid receive size', undefined);
    }
    switch (this.state) {
      case 'raw-token':
        return this.rawToken(frame, setPrincipal);
      case 'reauth-bad-mechanism':
        return this.fail(this.badMechanismMessage, undefined);
      case 'failed':
        return { kind: 'close', reason: 'request after a failed SASL authentication', delayMs: 0 };
      default:
        return this.kafkaRequest(frame, setPrincipal);
    }
  }

  private authenticatedStep(frame: Buffer): SaslStep {
    const apiKey = frame.length >= 2 ? frame.readInt16BE(0) : -1;
    if (apiKey === ApiKey.SaslHandshake && this.clientReauthenticates) {
      // KIP-368: a new exchange on the same connection; the principal must stay the same.
      this.previous = { principal: this.principal(), mechanism: this.mechanismName };
      this.exchangeStartMs = this.services.clock.nowMs();
      this.state = 'handshake';
      return this.kafkaRequest(frame, () => {});
    }
    if (this.services.clock.nowMs() >= this.sessionExpiresAtMs) {
      return {
        kind: 'close',
        reason: `the SASL session expired (connections.max.reauth.ms ${this.settings.maxReauthMs}) and the client did not re-authenticate`,
        delayMs: 0,
      };
    }
    return { kind: 'serve' };
  }

  private kafkaRequest(frame: Buffer, setPrincipal: (p: KafkaPrincipal) => void): SaslStep {
    let parsed: ReturnType<typeof readRequest>;
    try {
      parsed = readRequest(frame);
    } catch {
      // Kafka takes a first packet that is no Kafka request for a GSSAPI token; Skiff has no GSSAPI.
      return this.fail(
        'Exception handling first SASL packet from client, GSSAPI is not supported by server',
        undefined,
      );
    }
    const { header, body } = parsed;
    const apiKey = header.requestApiKey;
    const version = header.requestApiVersion;
    if (this.state === 'authenticate') {
      if (apiKey !== ApiKey.SaslAuthenticate) {
        return this.fail(
          `Unexpected Kafka request of type ${apiName(apiKey)} during SASL authentication.`,
          undefined,
        );
      }
      if (version < 0 || version > SASL_AUTHENTICATE_MAX_VERSION) {
        return this.fail(`Version ${version} is not supported for apiKey SASL_AUTHENTICATE`, undefined);
      }
      const request = SaslAuthenticateRequestCodec.decode(body, version);
      return this.authenticate(header.correlationId, version, request, setPrincipal);
    }
    if (apiKey === ApiKey.ApiVersions) {
      if (this.state !== 'initial') {
        return this.fail(
          `Unexpected ApiVersions request received during SASL authentication state HANDSHAKE_REQUEST`,
          undefined,
        );
      }
      this.state = 'handshake';
      return { kind: 'serve' };
    }
    if (apiKey !== ApiKey.SaslHandshake) {
      return this.fail(
        `Unexpected Kafka request of type ${apiName(apiKey)} during SASL handshake.`,
        undefined,
      );
    }
    if (version < 0 || version > SASL_HANDSHAKE_MAX_VERSION) {
      return this.fail(`Version ${version} is not supported for apiKey SASL_HANDSHAKE`, undefined);
    }
    const request = SaslHandshakeRequestCodec.decode(body, version);
    return this.handshake(header.correlationId, version, request);
  }

  private handshake(correlationId: number, version: number, request: SaslHandshakeRequest): SaslStep {
    const enabled = this.settings.enabledMechanisms;
    const answer = (errorCode: number): Buffer[] =>
      encodeResponse(correlationId, ApiKey.SaslHandshake, version, SaslHandshakeResponseCodec, {
        errorCode,
        mechanisms: [...enabled],
      });
    const wanted = request.mechanism;
    if (!enabled.includes(wanted)) {
      return this.fail(`Unsupported SASL mechanism ${wanted}`, answer(ErrorCode.UNSUPPORTED_SASL_MECHANISM));
    }
    if (this.previous !== null && this.previous.mechanism !== wanted) {
      // As Kafka: the handshake is answered, and the next token fails the re-authentication.
      this.badMechanismMessage = `SASL mechanism '${wanted}' requested by client is not supported for re-authentication of mechanism '${this.previous.mechanism}'`;
      this.state = 'reauth-bad-mechanism';
      return { kind: 'answer', response: answer(ErrorCode.NONE) };
    }
    this.mechanismName = wanted;
    this.mechanism = this.createMechanism(wanted);
    this.state = version >= 1 ? 'authenticate' : 'raw-token';
    return { kind: 'answer', response: answer(ErrorCode.NONE) };
  }

  private createMechanism(name: string): SaslServerMechanism {
    if (name === 'PLAIN') return new PlainServer(this.settings.plainPasswordOf);
    if (SCRAM_MECHANISMS.has(name)) {
      return new ScramServer(name, {
        credentialOf: (user) => this.services.scramCredentialOf(name, user),
        nonce: this.services.nonce,
        secret: this.services.secret,
      });
    }
    throw new Error(`SASL mechanism ${name} is enabled but not served`);
  }

  private authenticate(
    correlationId: number,
    version: number,
    request: SaslAuthenticateRequest,
    setPrincipal: (p: KafkaPrincipal) => void,
  ): SaslStep {
    if (version > 0) this.clientReauthenticates = true;
    const answer = (body: {
      errorCode: number;
      errorMessage: string | null;
      authBytes: Buffer;
      sessionLifetimeMs: bigint;
    }): Buffer[] =>
      encodeResponse(correlationId, ApiKey.SaslAuthenticate, version, SaslAuthenticateResponseCodec, body);
    let token: Buffer;
    try {
      token = this.evaluate(request.authBytes);
    } catch (e) {
      if (!(e instanceof SaslAuthenticationFailure)) throw e;
      const message = e.clientMessage ?? this.genericFailure();
      const response = answer({
        errorCode: ErrorCode.SASL_AUTHENTICATION_FAILED,
        errorMessage: message,
        authBytes: Buffer.alloc(0),
        sessionLifetimeMs: 0n,
      });
      return this.fail(e.message, response);
    }
    const done = this.mechanism!.complete;
    const lifetimeMs = done ? this.startSession() : 0;
    const failure = done ? this.principalChangeFailure() : null;
    if (failure !== null) {
      const response = answer({
        errorCode: ErrorCode.SASL_AUTHENTICATION_FAILED,
        errorMessage: failure,
        authBytes: Buffer.alloc(0),
        sessionLifetimeMs: 0n,
      });
      return this.fail(failure, response);
    }
    if (done) this.commit(setPrincipal);
    return {
      kind: 'answer',
      response: answer({
        errorCode: 0,
        errorMessage: null,
        authBytes: token,
        sessionLifetimeMs: BigInt(lifetimeMs),
      }),
    };
  }

  /** A token of a client that sent SaslHandshake v0: no Kafka header, answered the same way. */
  private rawToken(frame: Buffer, setPrincipal: (p: KafkaPrincipal) => void): SaslStep {
    let token: Buffer;
    try {
      token = this.evaluate(frame);
    } catch (e) {
      if (!(e instanceof SaslAuthenticationFailure)) throw e;
      return this.fail(e.message, undefined);
    }
    if (this.mechanism!.complete) {
      this.startSession();
      const failure = this.principalChangeFailure();
      if (failure !== null) return this.fail(failure, undefined);
      this.commit(setPrincipal);
    }
    const size = Buffer.allocUnsafe(4);
    size.writeInt32BE(token.length, 0);
    return { kind: 'answer', response: [size, token] };
  }

  private evaluate(token: Buffer): Buffer {
    const m = this.mechanism;
    if (m === null) throw new SaslAuthenticationFailure('SASL token before a handshake', null);
    return m.evaluate(token);
  }

  private genericFailure(): string {
    const what = this.previous === null ? 'authentication' : 're-authentication';
    return `Authentication failed during ${what} due to invalid credentials with SASL mechanism ${this.mechanismName}`;
  }

  /** The session lifetime sent to the client: connections.max.reauth.ms, 0 for none. */
  private startSession(): number {
    const reauth = this.settings.maxReauthMs;
    this.sessionExpiresAtMs = reauth > 0 ? this.services.clock.nowMs() + reauth : Number.POSITIVE_INFINITY;
    return reauth > 0 ? reauth : 0;
  }

  private principal(): KafkaPrincipal {
    return { principalType: USER_TYPE, name: this.mechanism!.authorizationId };
  }

  private principalChangeFailure(): string | null {
    const prev = this.previous?.principal;
    const next = this.principal();
    if (prev === undefined || (prev.principalType === next.principalType && prev.name === next.name))
      return null;
    return `Cannot change principals during re-authentication from ${prev.principalType}.${prev.name}: ${next.principalType}.${next.name}`;
  }

  private commit(setPrincipal: (p: KafkaPrincipal) => void): void {
    setPrincipal(this.principal());
    this.previous = null;
    this.state = 'complete';
  }

  private fail(reason: string, response: Buffer[] | undefined): SaslStep {
    const mechanism = this.mechanismName === '' ? '' : ` with SASL mechanism ${this.mechanismName}`;
    const who = this.mechanism?.complete ? ` (${principalToString(this.principal())})` : '';
    this.state = 'failed';
    return {
      kind: 'close',
      reason: `failed ${this.previous === null ? 'authentication' : 're-authentication'} on listener ${this.settings.listenerName}${mechanism}${who}: ${reason}`,
      ...(response && { response }),
      delayMs: this.settings.failedAuthenticationDelayMs,
    };
  }
}

/** A listener's setting by name, its listener.name.<l>.* override applied. */
export type ListenerProps = (name: string) => string | undefined;

/**
 * A SASL listener's settings from the broker's configs, refusing at start-up what Skiff cannot
 * serve: a mechanism other than PLAIN and SCRAM (Kafka's default GSSAPI included), and PLAIN
 * without a JAAS config naming its users.
 */
export function saslListenerSettings(listenerName: string, get: ListenerProps): SaslListenerSettings {
  const where = `listener ${listenerName}`;
  const enabledMechanisms = (get('sasl.enabled.mechanisms') ?? 'GSSAPI')
    .split(',')
    .map((m) => m.trim())
    .filter((m) => m !== '');
  if (enabledMechanisms.length === 0) throw new Error(`${where}: No SASL mechanisms are enabled`);
  for (const m of enabledMechanisms) {
    if (!SERVER_SASL_MECHANISMS.includes(m)) {
      throw new Error(
        `${where}: SASL mechanism ${m} is not supported (Skiff serves ${SERVER_SASL_MECHANISMS.join(', ')}); set sasl.enabled.mechanisms or listener.name.${listenerName.toLowerCase()}.sasl.enabled.mechanisms`,
      );
    }
  }
  let plainUsers = new Map<string, string>();
  if (enabledMechanisms.includes('PLAIN')) {
    const jaas = get('plain.sasl.jaas.config') ?? get('sasl.jaas.config');
    if (jaas === undefined) {
      throw new Error(
        `${where}: PLAIN needs a JAAS config with its users (listener.name.${listenerName.toLowerCase()}.plain.sasl.jaas.config or sasl.jaas.config)`,
      );
    }
    plainUsers = jaasPlainUsers(parseSingleLoginModule(jaas, 'sasl.jaas.config'));
  }
  const int = (name: string, fallback: number): number => {
    const v = get(name);
    return v === undefined ? fallback : Number(v);
  };
  return {
    listenerName,
    enabledMechanisms,
    plainPasswordOf: (user) => plainUsers.get(user),
    maxReauthMs: Math.max(0, int('connections.max.reauth.ms', 0)),
    maxReceiveBytes: int('sasl.server.max.receive.size', 524288),
    failedAuthenticationDelayMs: int('connection.failed.authentication.delay.ms', 100),
  };
}

/**
 * The broker's own credentials on a SASL inter-broker listener: sasl.mechanism.inter.broker.protocol
 * (one of the listener's enabled mechanisms) and the username/password of its JAAS config
 * (`listener.name.<l>.<mechanism>.sasl.jaas.config`, else sasl.jaas.config), as Kafka's brokers.
 */
export function interBrokerSaslCredentials(
  listenerName: string,
  get: ListenerProps,
): { mechanism: string; username: string; password: string } {
  const mechanism = (get('sasl.mechanism.inter.broker.protocol') ?? 'GSSAPI').trim();
  const enabled = saslListenerSettings(listenerName, get).enabledMechanisms;
  if (!enabled.includes(mechanism)) {
    throw new Error(
      `sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication (${mechanism} is not in ${enabled.join(',')} of listener ${listenerName})`,
    );
  }
  const property = `listener.name.${listenerName.toLowerCase()}.${mechanism.toLowerCase()}.sasl.jaas.config`;
  const jaas = get(`${mechanism.toLowerCase()}.sasl.jaas.config`) ?? get('sasl.jaas.config');
  if (jaas === undefined) {
    throw new Error(
      `the inter-broker listener ${listenerName} is SASL: ${property} (or sasl.jaas.config) must give the broker's username and password`,
    );
  }
  return { mechanism, ...jaasClientCredentials(jaas, property) };
}
