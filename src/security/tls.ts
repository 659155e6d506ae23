/**
 * TLS material and settings from Kafka's ssl.* properties, for both ends: a broker's SSL listener
 * (node:tls server options) and a client's connection (node:tls connect options). Key and trust
 * stores follow Kafka's DefaultSslEngineFactory rules, with its messages: PEM files or inline PEM
 * (KIP-651), and PKCS12 key stores; JKS cannot be read by Node and is refused at start-up.
 */
import type * as tls from 'node:tls';
import { type PrincipalMapper, principalMapper } from './ssl-principal-mapper.js';

/** Reads one ssl.*.location file (injected: the broker's and the tools' file access). */
export type ReadFile = (path: string) => Buffer;

/** A property lookup: the listener-prefixed value first for a broker listener, else the plain one. */
export type SslProps = (name: string) => string | undefined;

export type SslClientAuth = 'none' | 'requested' | 'required';

export interface TlsServerSettings {
  readonly options: tls.TlsOptions;
  readonly clientAuth: SslClientAuth;
  /** ssl.principal.mapping.rules: a client certificate's subject → the principal's name. */
  readonly principalMapper: PrincipalMapper;
}

const PEM = 'PEM';

function invalid(message: string): Error {
  return new Error(message);
}

interface KeyMaterial {
  readonly key?: string | Buffer;
  readonly cert?: string | Buffer;
  readonly pfx?: Buffer;
  readonly passphrase?: string;
}

function keystore(get: SslProps, readFile: ReadFile): KeyMaterial | null {
  const type = (get('ssl.keystore.type') ?? 'JKS').trim().toUpperCase();
  const location = get('ssl.keystore.location');
  const password = get('ssl.keystore.password');
  const keyPassword = get('ssl.key.password');
  const privateKey = get('ssl.keystore.key');
  const chain = get('ssl.keystore.certificate.chain');
  const withPassword = keyPassword === undefined ? {} : { passphrase: keyPassword };
  if (privateKey !== undefined) {
    if (type !== PEM)
      throw invalid(`SSL private key can be specified only for PEM, but key store type is ${type}.`);
    if (chain === undefined)
      throw invalid('SSL private key is specified, but certificate chain is not specified.');
    if (location !== undefined)
      throw invalid('Both SSL key store location and separate private key are specified.');
    if (password !== undefined)
      throw invalid(
        'SSL key store password cannot be specified with PEM format, only key password may be specified.',
      );
    return { key: privateKey, cert: chain, ...withPassword };
  }
  if (chain !== undefined)
    throw invalid('SSL certificate chain is specified, but private key is not specified');
  if (type === PEM && location !== undefined) {
    if (password !== undefined)
      throw invalid(
        'SSL key store password cannot be specified with PEM format, only key password may be specified',
      );
    const pem = readFile(location);
    // One file holds the private key and the certificate chain: Node picks each out of it.
    if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem.toString('latin1')))
      throw invalid(`Failed to load PEM SSL keystore ${location}: Private key not provided`);
    if (!pem.toString('latin1').includes('-----BEGIN CERTIFICATE-----'))
      throw invalid(
        `Failed to load PEM SSL keystore ${location}: At least one certificate expected, but none found`,
      );
    return { key: pem, cert: pem, ...withPassword };
  }
  if (location === undefined && password !== undefined)
    throw invalid('SSL key store is not specified, but key store password is specified.');
  if (location !== undefined && password === undefined)
    throw invalid('SSL key store is specified, but key store password is not specified.');
  if (location === undefined) return null;
  if (type !== 'PKCS12')
    throw invalid(
      `Failed to load SSL keystore ${location} of type ${type}: Skiff reads PEM and PKCS12 key stores`,
    );
  return { pfx: readFile(location), passphrase: keyPassword ?? password! };
}

function truststore(get: SslProps, readFile: ReadFile): string | Buffer | null {
  const type = (get('ssl.truststore.type') ?? 'JKS').trim().toUpperCase();
  const location = get('ssl.truststore.location');
  const password = get('ssl.truststore.password');
  const certs = get('ssl.truststore.certificates');
  if (certs !== undefined) {
    if (type !== PEM)
      throw invalid(`SSL trust store certs can be specified only for PEM, but trust store type is ${type}.`);
    if (location !== undefined)
      throw invalid('Both SSL trust store location and separate trust certificates are specified.');
    if (password !== undefined) throw invalid('SSL trust store password cannot be specified for PEM format.');
    return certs;
  }
  if (type === PEM && location !== undefined) {
    if (password !== undefined) throw invalid('SSL trust store password cannot be specified for PEM format.');
    const pem = readFile(location);
    if (!pem.toString('latin1').includes('-----BEGIN CERTIFICATE-----'))
      throw invalid(
        `Invalid PEM truststore configs: At least one certificate expected, but none found in ${location}`,
      );
    return pem;
  }
  if (location === undefined && password !== undefined)
    throw invalid('SSL trust store is not specified, but trust store password is specified.');
  if (location !== undefined)
    throw invalid(`Failed to load SSL truststore ${location} of type ${type}: Skiff reads PEM trust stores`);
  return null;
}

/** ssl.enabled.protocols as node:tls's version range (Kafka's default: TLSv1.2,TLSv1.3). */
function versionRange(get: SslProps): Pick<tls.TlsOptions, 'minVersion' | 'maxVersion'> {
  const known: tls.SecureVersion[] = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];
  const enabled = (get('ssl.enabled.protocols') ?? 'TLSv1.2,TLSv1.3')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const p of enabled) {
    if (!known.includes(p as tls.SecureVersion))
      throw invalid(
        `Invalid value ${enabled.join(',')} for configuration ssl.enabled.protocols: unknown protocol ${p}`,
      );
  }
  const idx = enabled.map((p) => known.indexOf(p as tls.SecureVersion)).sort((a, b) => a - b);
  if (idx.length === 0) throw invalid('ssl.enabled.protocols: no protocol enabled');
  return { minVersion: known[idx[0]!]!, maxVersion: known[idx[idx.length - 1]!]! };
}

export function sslClientAuth(value: string | undefined): SslClientAuth {
  const v = (value ?? 'none').trim().toLowerCase();
  if (v === 'none' || v === 'requested' || v === 'required') return v;
  throw invalid(
    `Invalid value ${value} for configuration ssl.client.auth: String must be one of: required, requested, none`,
  );
}

/**
 * An SSL listener's server options. A key store is required; with ssl.client.auth requested or
 * required the client's certificate is asked for and checked against the trust store (Node's own
 * roots when none is set, as Java's default trust manager uses the JDK's).
 */
export function tlsServerSettings(get: SslProps, readFile: ReadFile): TlsServerSettings {
  const keys = keystore(get, readFile);
  if (keys === null)
    throw invalid(
      'SSL key store is not specified: an SSL listener needs ssl.keystore.location or ssl.keystore.key',
    );
  const ca = truststore(get, readFile);
  const clientAuth = sslClientAuth(get('ssl.client.auth'));
  return {
    clientAuth,
    principalMapper: principalMapper(get('ssl.principal.mapping.rules')),
    options: {
      ...keys,
      ...(ca !== null && { ca }),
      ...versionRange(get),
      requestCert: clientAuth !== 'none',
      // `requested`: a client without a certificate gets in (as ANONYMOUS); one that presents an
      // untrusted certificate is refused, as Java's wantClientAuth engine refuses it.
      rejectUnauthorized: clientAuth === 'required',
    },
  };
}

/**
 * A client's TLS options from Kafka client properties (security.protocol SSL or SASL_SSL):
 * trust store, optional key store for a client certificate, and host name verification
 * (ssl.endpoint.identification.algorithm: `https`, Kafka's default, or empty to turn it off).
 */
export function tlsClientOptions(get: SslProps, readFile: ReadFile): tls.ConnectionOptions {
  const keys = keystore(get, readFile);
  const ca = truststore(get, readFile);
  const algorithm = (get('ssl.endpoint.identification.algorithm') ?? 'https').trim();
  if (algorithm !== '' && algorithm.toLowerCase() !== 'https')
    throw invalid(
      `Invalid value ${algorithm} for configuration ssl.endpoint.identification.algorithm: only https or empty`,
    );
  return {
    ...(keys ?? {}),
    ...(ca !== null && { ca }),
    ...versionRange(get),
    rejectUnauthorized: true,
    ...(algorithm === '' && { checkServerIdentity: () => undefined }),
  };
}
