/**
 * A test CA with a broker and a client certificate, made with the `openssl` binary in a temp dir:
 * the broker's certificate names 127.0.0.1 and localhost (host name checks pass on loopback), the
 * client's subject is C=US,O=skiff,OU=eng,CN=client. remove() deletes the directory.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export interface TestCerts {
  readonly dir: string;
  /** The CA certificate (PEM): the trust store of both sides. */
  readonly caPem: string;
  /** The broker's private key followed by its certificate: a PEM key store file. */
  readonly brokerKeystore: string;
  readonly brokerKey: string;
  readonly brokerCert: string;
  /** The client's key store (key + certificate) and its parts, for kcat and kafka-python. */
  readonly clientKeystore: string;
  readonly clientKey: string;
  readonly clientCert: string;
  /** The broker's key and certificate as a PKCS12 key store, password `secret`. */
  readonly brokerPkcs12: string;
  /** A client certificate signed by a CA nobody trusts. */
  readonly strangerKeystore: string;
  /** The client certificate's subject as Kafka prints it (RFC 2253). */
  readonly clientPrincipal: string;
  remove(): void;
}

export function requireOpenssl(): void {
  const r = spawnSync('openssl', ['version'], { encoding: 'utf8' });
  if (r.error)
    assert.fail('openssl is not installed (Debian: apt-get install openssl); the TLS tests need it');
}

function openssl(dir: string, args: readonly string[]): void {
  const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  assert.equal(r.status, 0, `openssl ${args.join(' ')}: ${r.stderr}`);
}

// EC keys: generated in milliseconds where RSA takes a noticeable moment.
const NEW_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function ca(dir: string, name: string): void {
  openssl(dir, [
    'req',
    '-x509',
    ...NEW_KEY,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
  ]);
}

function signed(dir: string, name: string, caName: string, subject: string, ext: string): void {
  openssl(dir, ['req', ...NEW_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject]);
  fs.writeFileSync(path.join(dir, `${name}.ext`), `${ext}\n`);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${caName}.pem`,
    '-CAkey',
    `${caName}.key`,
    '-CAcreateserial',
    '-out',
    `${name}.crt`,
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
  ]);
  const key = fs.readFileSync(path.join(dir, `${name}.key`), 'utf8');
  const crt = fs.readFileSync(path.join(dir, `${name}.crt`), 'utf8');
  fs.writeFileSync(path.join(dir, `${name}.pem`), key + crt);
}

export function makeTestCerts(): TestCerts {
  requireOpenssl();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-tls-'));
  try {
    ca(dir, 'ca');
    ca(dir, 'stranger-ca');
    signed(dir, 'broker', 'ca', '/CN=localhost', 'subjectAltName=IP:127.0.0.1,DNS:localhost');
    signed(dir, 'client', 'ca', '/C=US/O=skiff/OU=eng/CN=client', 'basicConstraints=CA:FALSE');
    signed(dir, 'stranger', 'stranger-ca', '/CN=stranger', 'basicConstraints=CA:FALSE');
    openssl(dir, [
      'pkcs12',
      '-export',
      '-in',
      'broker.crt',
      '-inkey',
      'broker.key',
      '-out',
      'broker.p12',
      '-passout',
      'pass:secret',
    ]);
  } catch (e) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const at = (f: string) => path.join(dir, f);
  return {
    dir,
    caPem: at('ca.pem'),
    brokerKeystore: at('broker.pem'),
    brokerKey: at('broker.key'),
    brokerCert: at('broker.crt'),
    brokerPkcs12: at('broker.p12'),
    clientKeystore: at('client.pem'),
    clientKey: at('client.key'),
    clientCert: at('client.crt'),
    strangerKeystore: at('stranger.pem'),
    clientPrincipal: 'CN=client,OU=eng,O=skiff,C=US',
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
