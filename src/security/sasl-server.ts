/**
 * The server side of the SASL mechanisms Skiff offers: PLAIN (RFC 4616) and SCRAM-SHA-256/512
 * (RFC 5802/7677), as Kafka's PlainSaslServer and ScramSaslServer. One instance per
 * authentication exchange, owned by the connection's SaslServerAuthenticator; evaluate() is
 * called once per client token, in order.
 */
import { createHmac } from 'node:crypto';
import {
  authMessage,
  clientKeyOf,
  digest,
  formatServerFirst,
  hmac,
  parseClientFinal,
  parseClientFirst,
  SCRAM_MECHANISMS,
  type ScramCredential,
  ScramFormatError,
  type ScramMechanismInfo,
  sameBytes,
  saslNameToUser,
  serverKeyOf,
  xorBytes,
} from './scram.js';

/**
 * A failed exchange. `clientMessage` non-null is sent to the client as is (Kafka's
 * SaslAuthenticationException); null sends Kafka's generic "invalid credentials" text (its
 * SaslException), so nothing tells the client whether the user exists. `message` is for the log.
 */
export class SaslAuthenticationFailure extends Error {
  override readonly name = 'SaslAuthenticationFailure';
  constructor(
    message: string,
    readonly clientMessage: string | null,
  ) {
    super(message);
  }
}

export interface SaslServerMechanism {
  readonly mechanism: string;
  /** One client token in, the server's answer out (possibly empty); throws SaslAuthenticationFailure. */
  evaluate(token: Buffer): Buffer;
  readonly complete: boolean;
  /** The authenticated user, once complete. */
  readonly authorizationId: string;
}

/** Longest user name, authorization id and password PLAIN accepts (RFC 4616 asks for 255 at least). */
const PLAIN_MAX_FIELD_BYTES = 1024;

/**
 * PLAIN: `[authzid] NUL authcid NUL passwd`, checked against the passwords of the broker's JAAS
 * config (`user_<name>="<password>"`, Kafka's PlainServerCallbackHandler).
 */
export class PlainServer implements SaslServerMechanism {
  readonly mechanism = 'PLAIN';
  private user: string | null = null;

  constructor(private readonly passwordOf: (user: string) => string | undefined) {}

  get complete(): boolean {
    return this.user !== null;
  }

  get authorizationId(): string {
    if (this.user === null) throw new Error('Authentication exchange has not completed');
    return this.user;
  }

  evaluate(token: Buffer): Buffer {
    if (this.user !== null) throw new SaslAuthenticationFailure('PLAIN exchange already complete', null);
    const text = token.toString('utf8');
    const tokens = text.split('\u0000');
    if (tokens.length !== 3) {
      const m = `Invalid SASL/PLAIN response: expected 3 tokens, got ${Math.min(tokens.length, 4)}`;
      throw new SaslAuthenticationFailure(m, m);
    }
    const [authzid, user, password] = tokens as [string, string, string];
    if (user === '') throw fail('Authentication failed: username not specified');
    if (password === '') throw fail('Authentication failed: password not specified');
    if ([authzid, user, password].some((t) => Buffer.byteLength(t) > PLAIN_MAX_FIELD_BYTES)) {
      throw fail('Authentication failed: Invalid username or password');
    }
    const expected = this.passwordOf(user);
    // Compared in constant time, and compared even for an unknown user, so that neither the answer
    // nor its timing says whether the user exists.
    const given = Buffer.from(password, 'utf8');
    const want = Buffer.from(expected ?? password, 'utf8');
    const equal = constantTimeEqual(given, want);
    if (expected === undefined || !equal) throw fail('Authentication failed: Invalid username or password');
    if (authzid !== '' && authzid !== user) {
      throw fail(
        'Authentication failed: Client requested an authorization id that is different from username',
      );
    }
    this.user = user;
    return Buffer.alloc(0);
  }
}

function fail(message: string): SaslAuthenticationFailure {
  return new SaslAuthenticationFailure(message, message);
}

function constantTimeEqual(a: Buffer, b: Buffer): boolean {
  // Equal-length digests make the comparison's time independent of the lengths too.
  const ha = createHmac('sha256', 'plain').update(a).digest();
  const hb = createHmac('sha256', 'plain').update(b).digest();
  return sameBytes(ha, hb) && a.length === b.length;
}

export interface ScramServerOptions {
  /** The stored credential of a user for this mechanism; undefined when there is none. */
  readonly credentialOf: (user: string) => ScramCredential | undefined;
  /** A fresh random nonce of printable characters without ','. */
  readonly nonce: () => string;
  /**
   * A secret of this broker process: an unknown user is given a salt derived from it, so the
   * exchange goes on as for a real user and fails only at the proof.
   */
  readonly secret: Buffer;
}

type ScramState = 'first' | 'final' | 'complete' | 'failed';

/** Kafka's ScramSaslServer, except that an unknown user fails at the proof like a wrong password. */
export class ScramServer implements SaslServerMechanism {
  readonly mechanism: string;
  private readonly info: ScramMechanismInfo;
  private state: ScramState = 'first';
  private user = '';
  private credential: ScramCredential | null = null;
  private known = false;
  private clientFirstBare = '';
  private serverFirst = '';
  private combinedNonce = '';

  constructor(
    mechanism: string,
    private readonly options: ScramServerOptions,
  ) {
    const info = SCRAM_MECHANISMS.get(mechanism);
    if (info === undefined) throw new Error(`not a SCRAM mechanism: ${mechanism}`);
    this.info = info;
    this.mechanism = mechanism;
  }

  get complete(): boolean {
    return this.state === 'complete';
  }

  get authorizationId(): string {
    if (this.state !== 'complete') throw new Error('Authentication exchange has not completed');
    return this.user;
  }

  evaluate(token: Buffer): Buffer {
    try {
      if (this.state === 'first') return this.first(token.toString('utf8'));
      if (this.state === 'final') return this.final(token.toString('utf8'));
      throw new SaslAuthenticationFailure(`Unexpected challenge in Sasl server state ${this.state}`, null);
    } catch (e) {
      this.state = 'failed';
      this.credential = null;
      if (e instanceof SaslAuthenticationFailure) throw e;
      if (e instanceof ScramFormatError) throw new SaslAuthenticationFailure(e.message, null);
      throw e;
    }
  }

  private first(text: string): Buffer {
    const m = parseClientFirst(text);
    // Kafka's only extension is tokenauth (delegation tokens), which Skiff does not issue: a client
    // asking for it is refused rather than authenticated as the token's id.
    if (m.extensions.get('tokenauth')?.toLowerCase() === 'true') {
      throw new SaslAuthenticationFailure(
        'Token Authentication failed: delegation tokens are not supported',
        null,
      );
    }
    const user = saslNameToUser(m.saslName);
    if (m.authorizationId !== '' && m.authorizationId !== user) {
      throw fail(
        'Authentication failed: Client requested an authorization id that is different from username',
      );
    }
    const stored = this.options.credentialOf(user);
    if (stored !== undefined && stored.iterations < this.info.minIterations) {
      throw new SaslAuthenticationFailure(
        `Iterations ${stored.iterations} is less than the minimum ${this.info.minIterations} for ${this.mechanism}`,
        null,
      );
    }
    this.known = stored !== undefined;
    this.credential = stored ?? this.decoy(user);
    this.user = user;
    this.clientFirstBare = m.bare;
    this.combinedNonce = m.nonce + this.options.nonce();
    this.serverFirst = formatServerFirst(
      this.combinedNonce,
      this.credential.salt,
      this.credential.iterations,
    );
    this.state = 'final';
    return Buffer.from(this.serverFirst, 'utf8');
  }

  private final(text: string): Buffer {
    const m = parseClientFinal(text);
    // As Kafka, a nonce that ends with ours: librdkafka sends its own nonce again in front of it.
    if (!m.nonce.endsWith(this.combinedNonce)) {
      throw new SaslAuthenticationFailure('Invalid client nonce in the final client message.', null);
    }
    const credential = this.credential!;
    const hash = this.info.hash;
    const auth = authMessage(this.clientFirstBare, this.serverFirst, m.withoutProof);
    const clientSignature = hmac(hash, credential.storedKey, auth);
    if (m.proof.length !== clientSignature.length) {
      throw new SaslAuthenticationFailure('Invalid client credentials', null);
    }
    const clientKey = xorBytes(clientSignature, m.proof);
    const matches = sameBytes(digest(hash, clientKey), credential.storedKey);
    if (!matches || !this.known) {
      throw new SaslAuthenticationFailure(
        this.known ? 'Invalid client credentials' : 'Invalid user credentials',
        null,
      );
    }
    const serverSignature = hmac(hash, credential.serverKey, auth);
    this.credential = null;
    this.state = 'complete';
    return Buffer.from(`v=${serverSignature.toString('base64')}`, 'utf8');
  }

  /** A credential for a user that does not exist: the same salt every time for the same name. */
  private decoy(user: string): ScramCredential {
    const hash = this.info.hash;
    const salt = hmac(hash, this.options.secret, `salt:${this.mechanism}:${user}`).subarray(0, 16);
    const salted = hmac(hash, this.options.secret, `key:${this.mechanism}:${user}`);
    return {
      salt,
      storedKey: digest(hash, clientKeyOf(hash, salted)),
      serverKey: serverKeyOf(hash, salted),
      iterations: this.info.minIterations,
    };
  }
}
