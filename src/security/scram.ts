/**
 * SCRAM (RFC 5802) with SHA-256 and SHA-512 (RFC 7677), as Kafka's SCRAM-SHA-256 and SCRAM-SHA-512:
 * the key derivations, the stored credential (salt, stored key, server key, iterations — never the
 * password) and the four messages of an exchange. Pure functions over bytes and strings; the
 * server and client state machines are in scram-server.ts and sasl-client.ts.
 */
import { createHash, createHmac, pbkdf2Sync, timingSafeEqual } from 'node:crypto';

export interface ScramMechanismInfo {
  readonly name: ScramMechanismName;
  /** Node's digest name. */
  readonly hash: 'sha256' | 'sha512';
  /** Kafka's ScramMechanism.minIterations: a stored credential with fewer is refused at authentication. */
  readonly minIterations: number;
}

export const SCRAM_MECHANISM_NAMES = ['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type ScramMechanismName = (typeof SCRAM_MECHANISM_NAMES)[number];

export const SCRAM_MECHANISMS: ReadonlyMap<string, ScramMechanismInfo> = new Map([
  ['SCRAM-SHA-256', { name: 'SCRAM-SHA-256', hash: 'sha256', minIterations: 4096 }],
  ['SCRAM-SHA-512', { name: 'SCRAM-SHA-512', hash: 'sha512', minIterations: 4096 }],
]);

/** The bounds AlterUserScramCredentials puts on iterations (Kafka's ScramControlManager). */
export const SCRAM_MIN_ITERATIONS = 4096;
export const SCRAM_MAX_ITERATIONS = 16384;
/** Iterations when `skiff configs --add-config 'SCRAM-SHA-256=[password=...]'` names none (kafka-configs.sh's default). */
export const SCRAM_DEFAULT_ITERATIONS = 4096;

/** What the broker keeps per user and mechanism. */
export interface ScramCredential {
  readonly salt: Buffer;
  readonly storedKey: Buffer;
  readonly serverKey: Buffer;
  readonly iterations: number;
}

type Hash = ScramMechanismInfo['hash'] | 'sha1';

export function hmac(hash: Hash, key: Buffer, data: Buffer | string): Buffer {
  return createHmac(hash, key).update(data).digest();
}

export function digest(hash: Hash, data: Buffer): Buffer {
  return createHash(hash).update(data).digest();
}

/** Hi() of RFC 5802: PBKDF2 with HMAC, one output block. Kafka takes the password's UTF-8 bytes (no SASLprep). */
export function saltedPassword(hash: Hash, password: string, salt: Buffer, iterations: number): Buffer {
  const keyBytes = hash === 'sha1' ? 20 : hash === 'sha256' ? 32 : 64;
  return pbkdf2Sync(Buffer.from(password, 'utf8'), salt, iterations, keyBytes, hash);
}

export function xorBytes(a: Buffer, b: Buffer): Buffer {
  if (a.length !== b.length) throw new RangeError(`xor of ${a.length} and ${b.length} bytes`);
  const out = Buffer.allocUnsafe(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]! ^ b[i]!;
  return out;
}

export function clientKeyOf(hash: Hash, salted: Buffer): Buffer {
  return hmac(hash, salted, 'Client Key');
}

export function serverKeyOf(hash: Hash, salted: Buffer): Buffer {
  return hmac(hash, salted, 'Server Key');
}

/** The credential kept for `password`: what a SCRAM server needs and nothing that gives the password back. */
export function makeScramCredential(
  hash: Hash,
  password: string,
  salt: Buffer,
  iterations: number,
): ScramCredential {
  const salted = saltedPassword(hash, password, salt, iterations);
  return {
    salt,
    storedKey: digest(hash, clientKeyOf(hash, salted)),
    serverKey: serverKeyOf(hash, salted),
    iterations,
  };
}

/** Compares in time independent of where the bytes differ. */
export function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * A credential as text, as Kafka's ScramCredentialUtils.credentialToString writes it
 * (`salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>`): the stored form.
 */
export function credentialToString(c: ScramCredential): string {
  return `salt=${c.salt.toString('base64')},stored_key=${c.storedKey.toString('base64')},server_key=${c.serverKey.toString('base64')},iterations=${c.iterations}`;
}

export function credentialFromString(text: string): ScramCredential {
  const fields = new Map<string, string>();
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq), part.slice(eq + 1));
  }
  const salt = fields.get('salt');
  const storedKey = fields.get('stored_key');
  const serverKey = fields.get('server_key');
  const iterations = Number(fields.get('iterations'));
  if (
    salt === undefined ||
    storedKey === undefined ||
    serverKey === undefined ||
    !Number.isInteger(iterations)
  ) {
    throw new Error('invalid SCRAM credential');
  }
  return {
    salt: Buffer.from(salt, 'base64'),
    storedKey: Buffer.from(storedKey, 'base64'),
    serverKey: Buffer.from(serverKey, 'base64'),
    iterations,
  };
}

// ---- Messages (RFC 5802 §7), checked as strictly as Kafka's ScramMessages patterns. ----

/** A malformed message or a failed check; `message` is for the log, never the client. */
export class ScramFormatError extends Error {
  override readonly name = 'ScramFormatError';
}

/** 7-bit characters other than NUL and ',' (and '=' outside its escapes, for a saslname). */
function isValue(s: string): boolean {
  if (s === '') return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x01 || c > 0x7f || c === 0x2c) return false;
  }
  return true;
}

function isSaslName(s: string): boolean {
  return isValue(s) && /^(?:[^=]|=2C|=3D)+$/.test(s);
}
const PRINTABLE = /^[\x21-\x2b\x2d-\x7e]+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)?$/;
const ALPHA = /^[A-Za-z]+$/;

/** The user name in a saslname (`=2C` is ',' and `=3D` is '='). */
export function saslNameToUser(saslName: string): string {
  return saslName.replace(/=2C|=3D/g, (m) => (m === '=2C' ? ',' : '='));
}

export function userToSaslName(user: string): string {
  return user.replace(/=/g, '=3D').replace(/,/g, '=2C');
}

function parseExtensions(parts: readonly string[], what: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of parts) {
    const eq = p.indexOf('=');
    const k = p.slice(0, eq);
    const v = p.slice(eq + 1);
    if (eq <= 0 || !ALPHA.test(k) || !isValue(v)) throw new ScramFormatError(`Invalid SCRAM ${what} format`);
    out.set(k, v);
  }
  return out;
}

export interface ClientFirstMessage {
  readonly authorizationId: string;
  readonly saslName: string;
  readonly nonce: string;
  readonly extensions: ReadonlyMap<string, string>;
  /** The message without its GS2 header: the first part of the AuthMessage. */
  readonly bare: string;
}

export function parseClientFirst(text: string): ClientFirstMessage {
  const bad = (): ScramFormatError => new ScramFormatError('Invalid SCRAM client first message format');
  // gs2-header: "n," (no channel binding), an optional "a=<authzid>", then ",".
  if (!text.startsWith('n,')) throw bad();
  const secondComma = text.indexOf(',', 2);
  if (secondComma < 0) throw bad();
  const authz = text.slice(2, secondComma);
  let authorizationId = '';
  if (authz !== '') {
    if (!authz.startsWith('a=') || !isSaslName(authz.slice(2))) throw bad();
    authorizationId = saslNameToUser(authz.slice(2));
  }
  const bare = text.slice(secondComma + 1);
  const parts = bare.split(',');
  let i = 0;
  // "m=" is reserved for mandatory extensions, which Kafka (and RFC 5802's server) cannot honour.
  if (parts[i]?.startsWith('m=')) throw bad();
  const n = parts[i++];
  const r = parts[i++];
  if (n === undefined || !n.startsWith('n=') || !isSaslName(n.slice(2))) throw bad();
  if (r === undefined || !r.startsWith('r=') || !PRINTABLE.test(r.slice(2))) throw bad();
  const extensions = parseExtensions(parts.slice(i), 'client first message');
  return { authorizationId, saslName: n.slice(2), nonce: r.slice(2), extensions, bare };
}

export function formatClientFirstBare(
  saslName: string,
  nonce: string,
  extensions?: ReadonlyMap<string, string>,
): string {
  const ext = [...(extensions ?? new Map())].map(([k, v]) => `,${k}=${v}`).join('');
  return `n=${saslName},r=${nonce}${ext}`;
}

export interface ServerFirstMessage {
  readonly nonce: string;
  readonly salt: Buffer;
  readonly iterations: number;
  readonly text: string;
}

export function formatServerFirst(nonce: string, salt: Buffer, iterations: number): string {
  return `r=${nonce},s=${salt.toString('base64')},i=${iterations}`;
}

export function parseServerFirst(text: string): ServerFirstMessage {
  const bad = (): ScramFormatError => new ScramFormatError('Invalid SCRAM server first message format');
  const parts = text.split(',');
  if (parts[0]?.startsWith('m=')) throw bad();
  const [r, s, i] = parts;
  if (r === undefined || !r.startsWith('r=') || !PRINTABLE.test(r.slice(2))) throw bad();
  if (s === undefined || !s.startsWith('s=') || !BASE64.test(s.slice(2))) throw bad();
  if (i === undefined || !/^i=[0-9]+$/.test(i)) throw bad();
  const iterations = Number(i.slice(2));
  if (!Number.isSafeInteger(iterations) || iterations <= 0) throw bad();
  parseExtensions(parts.slice(3), 'server first message');
  return { nonce: r.slice(2), salt: Buffer.from(s.slice(2), 'base64'), iterations, text };
}

export interface ClientFinalMessage {
  readonly channelBinding: string;
  readonly nonce: string;
  readonly proof: Buffer;
  /** The message up to (not including) ",p=": the last part of the AuthMessage. */
  readonly withoutProof: string;
}

export function parseClientFinal(text: string): ClientFinalMessage {
  const bad = (): ScramFormatError => new ScramFormatError('Invalid SCRAM client final message format');
  const at = text.lastIndexOf(',p=');
  if (at < 0) throw bad();
  const withoutProof = text.slice(0, at);
  const proof = text.slice(at + 3);
  const parts = withoutProof.split(',');
  const [c, r] = parts;
  if (c === undefined || !c.startsWith('c=') || !BASE64.test(c.slice(2))) throw bad();
  if (r === undefined || !r.startsWith('r=') || !PRINTABLE.test(r.slice(2))) throw bad();
  if (!BASE64.test(proof) || proof === '') throw bad();
  parseExtensions(parts.slice(2), 'client final message');
  return { channelBinding: c.slice(2), nonce: r.slice(2), proof: Buffer.from(proof, 'base64'), withoutProof };
}

/** `c=` of a client that neither supports nor uses channel binding: base64 of its GS2 header "n,,". */
export function gs2ChannelBinding(authorizationId: string): string {
  const header = authorizationId === '' ? 'n,,' : `n,a=${userToSaslName(authorizationId)},`;
  return Buffer.from(header, 'utf8').toString('base64');
}

export function parseServerFinal(text: string): { error: string } | { signature: Buffer } {
  if (text.startsWith('e=')) return { error: text.slice(2) };
  const v = text.split(',')[0]!;
  if (!v.startsWith('v=') || !BASE64.test(v.slice(2)) || v.length === 2) {
    throw new ScramFormatError('Invalid SCRAM server final message format');
  }
  return { signature: Buffer.from(v.slice(2), 'base64') };
}

export function authMessage(
  clientFirstBare: string,
  serverFirst: string,
  clientFinalWithoutProof: string,
): string {
  return `${clientFirstBare},${serverFirst},${clientFinalWithoutProof}`;
}

/** A credential to create at set-up (`--add-scram`), in its stored form. */
export interface InitialScramCredential {
  readonly user: string;
  readonly mechanism: ScramMechanismName;
  readonly stored: string;
}

/**
 * Parses kafka-storage.sh's `--add-scram` value: `SCRAM-SHA-256=[name=admin,password=admin-secret]`,
 * with optional `iterations=8192` and `salt=<base64>` (a random salt otherwise); a value may be
 * double-quoted. Throws a message naming what is wrong.
 */
export function parseAddScram(text: string, randomBytes: (n: number) => Buffer): InitialScramCredential {
  const m = /^([A-Z0-9-]+)=\[(.*)\]$/s.exec(text.trim());
  if (m === null)
    throw new Error(`--add-scram: expected MECHANISM=[name=...,password=...], got ${JSON.stringify(text)}`);
  const info = SCRAM_MECHANISMS.get(m[1]!);
  if (info === undefined) {
    throw new Error(`--add-scram: unknown SCRAM mechanism ${m[1]} (${SCRAM_MECHANISM_NAMES.join(', ')})`);
  }
  const fields = new Map<string, string>();
  for (const part of m[2]!.match(/(?:[^,"]|"[^"]*")+/g) ?? []) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new Error(`--add-scram: expected key=value, got ${JSON.stringify(part)}`);
    const raw = part.slice(eq + 1).trim();
    fields.set(part.slice(0, eq).trim(), raw.startsWith('"') && raw.endsWith('"') ? raw.slice(1, -1) : raw);
  }
  for (const k of fields.keys()) {
    if (!['name', 'password', 'iterations', 'salt'].includes(k))
      throw new Error(`--add-scram: unknown key ${k}`);
  }
  const user = fields.get('name');
  const password = fields.get('password');
  if (user === undefined || user === '') throw new Error('--add-scram: name is required');
  if (password === undefined) throw new Error('--add-scram: password is required');
  const iterations = fields.has('iterations') ? Number(fields.get('iterations')) : SCRAM_DEFAULT_ITERATIONS;
  if (!Number.isInteger(iterations) || iterations < info.minIterations || iterations > SCRAM_MAX_ITERATIONS) {
    throw new Error(
      `--add-scram: iterations must be between ${info.minIterations} and ${SCRAM_MAX_ITERATIONS}, got ${fields.get('iterations')}`,
    );
  }
  const salt = fields.has('salt') ? Buffer.from(fields.get('salt')!, 'base64') : randomBytes(32);
  if (salt.length === 0) throw new Error('--add-scram: the salt must not be empty');
  const stored = credentialToString(makeScramCredential(info.hash, password, salt, iterations));
  return { user, mechanism: info.name, stored };
}
