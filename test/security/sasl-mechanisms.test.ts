import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jaasClientCredentials, jaasPlainUsers, parseJaasConfig } from '../../src/security/jaas.js';
import { PlainClient, ScramClient } from '../../src/security/sasl-client.js';
import { PlainServer, SaslAuthenticationFailure, ScramServer } from '../../src/security/sasl-server.js';
import {
  authMessage,
  clientKeyOf,
  credentialFromString,
  credentialToString,
  digest,
  hmac,
  makeScramCredential,
  parseClientFirst,
  type ScramCredential,
  saltedPassword,
  saslNameToUser,
  serverKeyOf,
  userToSaslName,
  xorBytes,
} from '../../src/security/scram.js';

const SECRET = Buffer.from('test-secret');

test('SCRAM key derivation reproduces RFC 5802 §5 (SHA-1 example)', () => {
  const salt = Buffer.from('QSXCR+Q6sek8bf92', 'base64');
  const salted = saltedPassword('sha1', 'pencil', salt, 4096);
  const clientFirstBare = 'n=user,r=fyko+d2lbbFgONRv9qkxdawL';
  const serverFirst = 'r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096';
  const withoutProof = 'c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j';
  const auth = authMessage(clientFirstBare, serverFirst, withoutProof);
  const clientKey = clientKeyOf('sha1', salted);
  const proof = xorBytes(clientKey, hmac('sha1', digest('sha1', clientKey), auth));
  assert.equal(proof.toString('base64'), 'v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=');
  assert.equal(
    hmac('sha1', serverKeyOf('sha1', salted), auth).toString('base64'),
    'rmF9pqV8S7suAoZWja4dJRkFsKQ=',
  );
});

// RFC 7677 §3: user "user", password "pencil".
const RFC7677 = {
  clientNonce: 'rOprNGfwEbeRWgbNEkqO',
  serverNonce: '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0',
  salt: 'W22ZaJ0SNY7soEsUEjb6gQ==',
  clientFirst: 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO',
  serverFirst: 'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096',
  clientFinal:
    'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
  serverFinal: 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=',
};

function rfcCredential(): ScramCredential {
  return makeScramCredential('sha256', 'pencil', Buffer.from(RFC7677.salt, 'base64'), 4096);
}

test('ScramServer answers the RFC 7677 SCRAM-SHA-256 exchange byte for byte', () => {
  const server = new ScramServer('SCRAM-SHA-256', {
    credentialOf: (u) => (u === 'user' ? rfcCredential() : undefined),
    nonce: () => RFC7677.serverNonce,
    secret: SECRET,
  });
  assert.equal(server.evaluate(Buffer.from(RFC7677.clientFirst)).toString(), RFC7677.serverFirst);
  assert.equal(server.complete, false);
  assert.equal(server.evaluate(Buffer.from(RFC7677.clientFinal)).toString(), RFC7677.serverFinal);
  assert.equal(server.complete, true);
  assert.equal(server.authorizationId, 'user');
});

test('ScramClient produces the RFC 7677 client messages and verifies the server signature', () => {
  const client = new ScramClient('SCRAM-SHA-256', 'user', 'pencil', RFC7677.clientNonce);
  assert.equal(client.initial().toString(), RFC7677.clientFirst);
  assert.equal(client.evaluate(Buffer.from(RFC7677.serverFirst))?.toString(), RFC7677.clientFinal);
  assert.equal(client.evaluate(Buffer.from(RFC7677.serverFinal)), null);
  assert.equal(client.complete, true);
  const forged = new ScramClient('SCRAM-SHA-256', 'user', 'pencil', RFC7677.clientNonce);
  forged.initial();
  forged.evaluate(Buffer.from(RFC7677.serverFirst));
  assert.throws(
    () => forged.evaluate(Buffer.from('v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=')),
    /Invalid server signature/,
  );
});

function exchange(mechanism: string, user: string, password: string, stored: Map<string, ScramCredential>) {
  const server = new ScramServer(mechanism, {
    credentialOf: (u) => stored.get(u),
    nonce: () => 'srv-nonce',
    secret: SECRET,
  });
  const client = new ScramClient(mechanism, user, password);
  const serverFirst = server.evaluate(client.initial());
  const serverFinal = server.evaluate(client.evaluate(serverFirst)!);
  assert.equal(client.evaluate(serverFinal), null);
  return server;
}

for (const [mechanism, hash] of [
  ['SCRAM-SHA-256', 'sha256'],
  ['SCRAM-SHA-512', 'sha512'],
] as const) {
  test(`${mechanism}: the right password gets in; a wrong one and an unknown user fail alike`, () => {
    const stored = new Map([
      ['al,i=ce', makeScramCredential(hash, 'secret', Buffer.from('0123456789abcdef'), 8192)],
    ]);
    assert.equal(exchange(mechanism, 'al,i=ce', 'secret', stored).authorizationId, 'al,i=ce');
    const failures = [
      () => exchange(mechanism, 'al,i=ce', 'wrong', stored),
      () => exchange(mechanism, 'nobody', 'secret', stored),
    ].map((f) => {
      try {
        f();
      } catch (e) {
        return e;
      }
      return assert.fail('the exchange should fail');
    });
    for (const e of failures) {
      assert.ok(e instanceof SaslAuthenticationFailure);
      assert.equal(e.clientMessage, null, 'the client only ever gets the generic message');
    }
  });
}

test('ScramServer: an unknown user is answered with a stable salt and fails only at the proof', () => {
  const opts = { credentialOf: () => undefined, nonce: () => 'x', secret: SECRET };
  const first = (s: ScramServer) => s.evaluate(Buffer.from('n,,n=ghost,r=abc')).toString();
  const a = first(new ScramServer('SCRAM-SHA-512', opts));
  assert.match(a, /^r=abcx,s=[A-Za-z0-9+/=]+,i=4096$/);
  assert.equal(first(new ScramServer('SCRAM-SHA-512', opts)), a);
});

test('ScramServer refuses tokenauth, other authorization ids, nonce changes and too few iterations', () => {
  const cred = makeScramCredential('sha256', 'p', Buffer.from('salt'), 4096);
  const mk = (c: ScramCredential = cred) =>
    new ScramServer('SCRAM-SHA-256', { credentialOf: () => c, nonce: () => 'S', secret: SECRET });
  assert.throws(
    () => mk().evaluate(Buffer.from('n,,n=u,r=abc,tokenauth=true')),
    /Token Authentication failed/,
  );
  assert.throws(
    () => mk().evaluate(Buffer.from('n,a=other,n=u,r=abc')),
    (e: SaslAuthenticationFailure) => /authorization id that is different/.test(e.clientMessage ?? ''),
  );
  assert.throws(() => mk().evaluate(Buffer.from('y,,n=u,r=abc')), /client first message format/);
  assert.throws(() => mk().evaluate(Buffer.from('n,,m=x,n=u,r=abc')), /client first message format/);
  const s = mk();
  s.evaluate(Buffer.from('n,,n=u,r=abc'));
  assert.throws(() => s.evaluate(Buffer.from('c=biws,r=abcT,p=AAAA')), /Invalid client nonce/);
  assert.throws(
    () => s.evaluate(Buffer.from('c=biws,r=abcS,p=AAAA')),
    /state failed/,
    'a failed exchange stays failed',
  );
  const weak = makeScramCredential('sha256', 'p', Buffer.from('salt'), 100);
  assert.throws(
    () => mk(weak).evaluate(Buffer.from('n,,n=u,r=abc')),
    /Iterations 100 is less than the minimum 4096/,
  );
  // An extension Kafka does not know is ignored.
  assert.match(mk().evaluate(Buffer.from('n,,n=u,r=abc,foo=bar')).toString(), /^r=abcS,/);
});

test('saslname escapes round-trip', () => {
  assert.equal(userToSaslName('a=b,c'), 'a=3Db=2Cc');
  assert.equal(saslNameToUser('a=3Db=2Cc'), 'a=b,c');
  assert.equal(parseClientFirst('n,,n=a=3Db,r=x').saslName, 'a=3Db');
});

test('a credential survives its stored text form', () => {
  const c = makeScramCredential('sha512', 'hunter2-password', Buffer.from('salty'), 5000);
  const text = credentialToString(c);
  assert.match(text, /^salt=[^,]+,stored_key=[^,]+,server_key=[^,]+,iterations=5000$/);
  assert.doesNotMatch(text, /hunter2|aHVudGVyMi1wYXNzd29yZA/, 'neither the password nor its base64');
  assert.deepEqual(credentialFromString(text), c);
});

test('PlainServer: RFC 4616 messages against the JAAS users, with Kafka messages', () => {
  const users = new Map([['alice', 'alice-secret']]);
  const mk = () => new PlainServer((u) => users.get(u));
  const ok = mk();
  assert.equal(ok.evaluate(new PlainClient('alice', 'alice-secret').initial()).length, 0);
  assert.equal(ok.authorizationId, 'alice');
  const bad = (token: string, message: RegExp) =>
    assert.throws(
      () => mk().evaluate(Buffer.from(token)),
      (e: SaslAuthenticationFailure) => message.test(e.clientMessage ?? ''),
    );
  bad('\u0000alice\u0000wrong', /^Authentication failed: Invalid username or password$/);
  bad('\u0000bob\u0000alice-secret', /^Authentication failed: Invalid username or password$/);
  bad('\u0000\u0000x', /username not specified/);
  bad('\u0000alice\u0000', /password not specified/);
  bad('alice\u0000alice-secret', /expected 3 tokens, got 2/);
  bad('bob\u0000alice\u0000alice-secret', /authorization id that is different/);
  assert.equal(mk().evaluate(Buffer.from('alice\u0000alice\u0000alice-secret')).length, 0);
});

test('JAAS config: login modules, flags, quoted and bare values', () => {
  const text = `org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin" password='admin-secret' user_admin="admin-secret" user_alice=alice-secret serviceName="a\\"b";`;
  const [m] = parseJaasConfig(text);
  assert.equal(m?.loginModule, 'org.apache.kafka.common.security.plain.PlainLoginModule');
  assert.equal(m?.flag, 'required');
  assert.equal(m?.options.get('serviceName'), 'a"b');
  assert.deepEqual(
    [...jaasPlainUsers(m!)],
    [
      ['admin', 'admin-secret'],
      ['alice', 'alice-secret'],
    ],
  );
  assert.deepEqual(jaasClientCredentials(text), { username: 'admin', password: 'admin-secret' });
  assert.throws(() => parseJaasConfig('X required a="b"'), /Expected ";"/);
  assert.throws(() => parseJaasConfig('X mandatory;'), /Invalid control flag/);
  assert.throws(
    () => jaasClientCredentials('X required; Y required;'),
    /contains 2 login modules, should be 1 module/,
  );
});
