/**
 * The client side of PLAIN and SCRAM-SHA-256/512 (Kafka's PlainSaslClient and ScramSaslClient),
 * for Skiff's tools and for brokers that authenticate to each other. One instance per exchange,
 * owned by the connection that authenticates.
 */
import { randomBytes } from 'node:crypto';
import {
  authMessage,
  clientKeyOf,
  digest,
  formatClientFirstBare,
  gs2ChannelBinding,
  hmac,
  parseServerFinal,
  parseServerFirst,
  SCRAM_MECHANISMS,
  type ScramMechanismInfo,
  saltedPassword,
  sameBytes,
  serverKeyOf,
  userToSaslName,
  xorBytes,
} from './scram.js';

export const CLIENT_SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;

export interface SaslClientMechanism {
  readonly mechanism: string;
  /** The first token the client sends. */
  initial(): Buffer;
  /** The server's token in, the client's next token out; null once the exchange is complete. Throws on a bad server. */
  evaluate(challenge: Buffer): Buffer | null;
  readonly complete: boolean;
}

export class PlainClient implements SaslClientMechanism {
  readonly mechanism = 'PLAIN';
  private done = false;

  constructor(
    private readonly username: string,
    private readonly password: string,
  ) {}

  get complete(): boolean {
    return this.done;
  }

  initial(): Buffer {
    return Buffer.from(`\u0000${this.username}\u0000${this.password}`, 'utf8');
  }

  evaluate(_challenge: Buffer): Buffer | null {
    this.done = true;
    return null;
  }
}

/** Kafka's client nonce: 130 random bits; base64url keeps it printable and free of ','. */
export function randomNonce(): string {
  return randomBytes(18).toString('base64url');
}

export class ScramClient implements SaslClientMechanism {
  readonly mechanism: string;
  private readonly info: ScramMechanismInfo;
  private state: 'initial' | 'first' | 'final' | 'complete' = 'initial';
  private clientFirstBare = '';
  private expectedServerSignature: Buffer | null = null;

  constructor(
    mechanism: string,
    private readonly username: string,
    private readonly password: string,
    private readonly nonce: string = randomNonce(),
  ) {
    const info = SCRAM_MECHANISMS.get(mechanism);
    if (info === undefined) throw new Error(`not a SCRAM mechanism: ${mechanism}`);
    this.info = info;
    this.mechanism = mechanism;
  }

  get complete(): boolean {
    return this.state === 'complete';
  }

  initial(): Buffer {
    if (this.state !== 'initial') throw new Error('SCRAM exchange already started');
    this.clientFirstBare = formatClientFirstBare(userToSaslName(this.username), this.nonce);
    this.state = 'first';
    return Buffer.from(`n,,${this.clientFirstBare}`, 'utf8');
  }

  evaluate(challenge: Buffer): Buffer | null {
    const text = challenge.toString('utf8');
    if (this.state === 'first') {
      const sf = parseServerFirst(text);
      if (!sf.nonce.startsWith(this.nonce))
        throw new Error('Invalid server nonce: does not start with client nonce');
      if (sf.iterations < this.info.minIterations) {
        throw new Error(
          `Requested iterations ${sf.iterations} is less than the minimum ${this.info.minIterations} for ${this.mechanism}`,
        );
      }
      const hash = this.info.hash;
      const salted = saltedPassword(hash, this.password, sf.salt, sf.iterations);
      const withoutProof = `c=${gs2ChannelBinding('')},r=${sf.nonce}`;
      const auth = authMessage(this.clientFirstBare, text, withoutProof);
      const clientKey = clientKeyOf(hash, salted);
      const proof = xorBytes(clientKey, hmac(hash, digest(hash, clientKey), auth));
      this.expectedServerSignature = hmac(hash, serverKeyOf(hash, salted), auth);
      this.state = 'final';
      return Buffer.from(`${withoutProof},p=${proof.toString('base64')}`, 'utf8');
    }
    if (this.state === 'final') {
      const f = parseServerFinal(text);
      if ('error' in f)
        throw new Error(`Sasl authentication using ${this.mechanism} failed with error: ${f.error}`);
      if (!sameBytes(f.signature, this.expectedServerSignature!))
        throw new Error('Invalid server signature in server final message');
      this.state = 'complete';
      return null;
    }
    throw new Error(`Unexpected challenge in Sasl client state ${this.state}`);
  }
}

/** The client of `mechanism` for these credentials; throws for a mechanism Skiff does not speak. */
export function saslClientFor(mechanism: string, username: string, password: string): SaslClientMechanism {
  if (mechanism === 'PLAIN') return new PlainClient(username, password);
  if (SCRAM_MECHANISMS.has(mechanism)) return new ScramClient(mechanism, username, password);
  throw new Error(`SASL mechanism ${mechanism} is not supported (${CLIENT_SASL_MECHANISMS.join(', ')} are)`);
}
