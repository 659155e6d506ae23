/**
 * The SASL exchange of one connection (SaslServerAuthenticator) against Kafka's
 * SaslServerAuthenticator rules, frame by frame with real codecs and Skiff's SASL clients.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { ApiVersionsRequestCodec } from '../../src/protocol/generated/ApiVersionsRequest.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import { ApiKey } from '../../src/protocol/generated/index.js';
import { MetadataRequestCodec } from '../../src/protocol/generated/MetadataRequest.js';
import { SaslAuthenticateRequestCodec } from '../../src/protocol/generated/SaslAuthenticateRequest.js';
import {
  type SaslAuthenticateResponse,
  SaslAuthenticateResponseCodec,
} from '../../src/protocol/generated/SaslAuthenticateResponse.js';
import { SaslHandshakeRequestCodec } from '../../src/protocol/generated/SaslHandshakeRequest.js';
import { SaslHandshakeResponseCodec } from '../../src/protocol/generated/SaslHandshakeResponse.js';
import { encodeRequest, readResponse } from '../../src/protocol/messages.js';
import type { KafkaPrincipal } from '../../src/security/principal.js';
import {
  interBrokerSaslCredentials,
  type SaslListenerSettings,
  SaslServerAuthenticator,
  type SaslStep,
  saslListenerSettings,
} from '../../src/security/sasl-authenticator.js';
import { saslClientFor } from '../../src/security/sasl-client.js';
import {
  authMessage,
  clientKeyOf,
  digest,
  hmac,
  makeScramCredential,
  saltedPassword,
  xorBytes,
} from '../../src/security/scram.js';

const SETTINGS: SaslListenerSettings = {
  listenerName: 'SASL_PLAINTEXT',
  enabledMechanisms: ['SCRAM-SHA-256', 'PLAIN'],
  plainPasswordOf: (u) => (u === 'plainuser' ? 'plain-secret' : undefined),
  maxReauthMs: 0,
  maxReceiveBytes: 524288,
  failedAuthenticationDelayMs: 100,
};

function setup(settings: Partial<SaslListenerSettings> = {}) {
  const clock = new ManualClock();
  const alice = makeScramCredential('sha256', 'alice-secret', Buffer.from('alice-salt'), 4096);
  const bob = makeScramCredential('sha256', 'bob-secret', Buffer.from('bob-salt'), 4096);
  const auth = new SaslServerAuthenticator(
    { ...SETTINGS, ...settings },
    {
      clock,
      scramCredentialOf: (m, u) =>
        m !== 'SCRAM-SHA-256' ? undefined : u === 'alice' ? alice : u === 'bob' ? bob : undefined,
      nonce: () => 'server-nonce',
      secret: Buffer.from('secret'),
    },
  );
  let principal: KafkaPrincipal | null = null;
  const step = (frame: Buffer): SaslStep =>
    auth.step(frame, (p) => {
      principal = p;
    });
  return { clock, auth, step, principal: () => principal };
}

let correlationId = 0;
function request<T>(
  apiKey: number,
  version: number,
  codec: Parameters<typeof encodeRequest<T>>[1],
  body: T,
): Buffer {
  // The frame without its size prefix, as the connection hands it over.
  return Buffer.concat(
    encodeRequest(
      { requestApiKey: apiKey, requestApiVersion: version, correlationId: ++correlationId, clientId: 't' },
      codec,
      body,
    ),
  ).subarray(4);
}

const handshake = (mechanism: string, version = 1) =>
  request(ApiKey.SaslHandshake, version, SaslHandshakeRequestCodec, { mechanism });
const authenticate = (authBytes: Buffer, version = 2) =>
  request(ApiKey.SaslAuthenticate, version, SaslAuthenticateRequestCodec, { authBytes });
const metadata = () =>
  request(ApiKey.Metadata, 12, MetadataRequestCodec, {
    topics: [],
    allowAutoTopicCreation: false,
    includeClusterAuthorizedOperations: false,
    includeTopicAuthorizedOperations: false,
  });

function answer(s: SaslStep): Buffer {
  assert.equal(s.kind, 'answer', JSON.stringify(s));
  return Buffer.concat((s as { response: Buffer[] }).response).subarray(4);
}

function authResponse(s: SaslStep | Buffer, version = 2): SaslAuthenticateResponse {
  const bytes = Buffer.isBuffer(s) ? s : answer(s);
  return readResponse(bytes, ApiKey.SaslAuthenticate, version, SaslAuthenticateResponseCodec).body;
}

/** A full v1 handshake + SaslAuthenticate exchange; the last step. */
function login(
  step: (f: Buffer) => SaslStep,
  mechanism: string,
  user: string,
  password: string,
  version = 2,
): SaslStep {
  const h = readResponse(
    answer(step(handshake(mechanism))),
    ApiKey.SaslHandshake,
    1,
    SaslHandshakeResponseCodec,
  ).body;
  assert.equal(h.errorCode, 0);
  const client = saslClientFor(mechanism, user, password);
  let s = step(authenticate(client.initial(), version));
  while (s.kind === 'answer') {
    const r = authResponse(s, version);
    const next = client.evaluate(r.authBytes);
    if (next === null) return s;
    s = step(authenticate(next, version));
  }
  return s;
}

describe('SaslServerAuthenticator', () => {
  it('serves ApiVersions, then authenticates SCRAM-SHA-256 with SaslAuthenticate and sets User:<name>', () => {
    const { step, principal, auth } = setup();
    assert.deepEqual(
      step(
        request(ApiKey.ApiVersions, 3, ApiVersionsRequestCodec, {
          clientSoftwareName: 'x',
          clientSoftwareVersion: '1',
        }),
      ),
      { kind: 'serve' },
    );
    const h = readResponse(
      answer(step(handshake('SCRAM-SHA-256'))),
      ApiKey.SaslHandshake,
      1,
      SaslHandshakeResponseCodec,
    ).body;
    assert.deepEqual(h, { errorCode: 0, mechanisms: ['SCRAM-SHA-256', 'PLAIN'] });
    const client = saslClientFor('SCRAM-SHA-256', 'alice', 'alice-secret');
    const first = authResponse(step(authenticate(client.initial())));
    assert.equal(first.errorCode, 0);
    assert.equal(principal(), null);
    const final = authResponse(step(authenticate(client.evaluate(first.authBytes)!)));
    assert.equal(final.errorCode, 0);
    assert.equal(final.sessionLifetimeMs, 0n, 'no connections.max.reauth.ms: no session lifetime');
    assert.equal(client.evaluate(final.authBytes), null, 'the server signature verifies');
    assert.deepEqual(principal(), { principalType: 'User', name: 'alice' });
    assert.equal(auth.authenticated, true);
    assert.deepEqual(step(metadata()), { kind: 'serve' });
    // SaslAuthenticate afterwards reaches the router (ILLEGAL_SASL_STATE there).
    assert.deepEqual(step(authenticate(Buffer.from('x'))), { kind: 'serve' });
  });

  it('closes on any other request before authentication, and on a second ApiVersions', () => {
    let s = setup().step(metadata());
    assert.equal(s.kind, 'close');
    assert.match(
      (s as { reason: string }).reason,
      /Unexpected Kafka request of type METADATA during SASL handshake\./,
    );
    const { step } = setup();
    step(handshake('PLAIN'));
    s = step(metadata());
    assert.match(
      (s as { reason: string }).reason,
      /Unexpected Kafka request of type METADATA during SASL authentication\./,
    );
    const again = setup();
    const v = () =>
      request(ApiKey.ApiVersions, 3, ApiVersionsRequestCodec, {
        clientSoftwareName: 'x',
        clientSoftwareVersion: '1',
      });
    again.step(v());
    assert.equal(again.step(v()).kind, 'close');
    assert.equal(setup().step(Buffer.from('garbage!garbage!')).kind, 'close');
  });

  it('refuses a mechanism that is not enabled with UNSUPPORTED_SASL_MECHANISM and the enabled list, after the delay', () => {
    const s = setup().step(handshake('GSSAPI'));
    assert.equal(s.kind, 'close');
    if (s.kind !== 'close') return;
    assert.equal(s.delayMs, 100);
    const body = readResponse(
      Buffer.concat(s.response!).subarray(4),
      ApiKey.SaslHandshake,
      1,
      SaslHandshakeResponseCodec,
    ).body;
    assert.deepEqual(body, {
      errorCode: ErrorCode.UNSUPPORTED_SASL_MECHANISM,
      mechanisms: ['SCRAM-SHA-256', 'PLAIN'],
    });
    assert.match(s.reason, /Unsupported SASL mechanism GSSAPI/);
  });

  it('fails a wrong password and an unknown user with the same message, never naming the user', () => {
    const messages = [
      ['alice', 'wrong'],
      ['nobody', 'alice-secret'],
    ].map(([user, password]) => {
      const s = login(setup().step, 'SCRAM-SHA-256', user!, password!);
      assert.equal(s.kind, 'close');
      if (s.kind !== 'close') return '';
      assert.equal(s.delayMs, 100);
      const r = authResponse(Buffer.concat(s.response!).subarray(4));
      assert.equal(r.errorCode, ErrorCode.SASL_AUTHENTICATION_FAILED);
      return r.errorMessage;
    });
    assert.deepEqual(messages, [
      'Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256',
      'Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256',
    ]);
    const plain = login(setup().step, 'PLAIN', 'plainuser', 'nope');
    assert.equal(plain.kind, 'close');
    if (plain.kind === 'close') {
      assert.equal(
        authResponse(Buffer.concat(plain.response!).subarray(4)).errorMessage,
        'Authentication failed: Invalid username or password',
      );
    }
  });

  it('takes the raw tokens of a SaslHandshake v0 client', () => {
    const { step, principal } = setup();
    const h = readResponse(
      answer(step(handshake('PLAIN', 0))),
      ApiKey.SaslHandshake,
      0,
      SaslHandshakeResponseCodec,
    ).body;
    assert.equal(h.errorCode, 0);
    const s = step(saslClientFor('PLAIN', 'plainuser', 'plain-secret').initial());
    assert.equal(s.kind, 'answer');
    if (s.kind === 'answer')
      assert.deepEqual(Buffer.concat(s.response), Buffer.alloc(4), 'an empty token, size-prefixed');
    assert.deepEqual(principal(), { principalType: 'User', name: 'plainuser' });
    const bad = setup();
    bad.step(handshake('PLAIN', 0));
    const f = bad.step(Buffer.from('\u0000plainuser\u0000wrong'));
    assert.equal(f.kind, 'close');
    if (f.kind === 'close') assert.equal(f.response, undefined, 'raw-token clients get no error frame');
  });

  it('bounds the frames and the time of an exchange', () => {
    const big = setup({ maxReceiveBytes: 100 });
    big.step(handshake('PLAIN'));
    const s = big.step(authenticate(Buffer.alloc(200)));
    assert.match((s as { reason: string }).reason, /invalid receive size/);
    const slow = setup();
    slow.step(handshake('PLAIN'));
    slow.clock.advance(30_001);
    assert.match(
      (slow.step(authenticate(Buffer.from('x'))) as { reason: string }).reason,
      /not complete within 30000 ms/,
    );
  });

  it('KIP-368: sends the session lifetime, closes an expired session, and re-authenticates the same principal only', () => {
    const { step, clock, principal } = setup({ maxReauthMs: 1000 });
    const done = login(step, 'SCRAM-SHA-256', 'alice', 'alice-secret');
    assert.equal(authResponse(done).sessionLifetimeMs, 1000n);
    clock.advance(999);
    assert.deepEqual(step(metadata()), { kind: 'serve' });
    // Re-authentication before expiry renews the session.
    const again = login(step, 'SCRAM-SHA-256', 'alice', 'alice-secret');
    assert.equal(authResponse(again).errorCode, 0);
    clock.advance(999);
    assert.deepEqual(step(metadata()), { kind: 'serve' });
    clock.advance(1);
    const expired = step(metadata());
    assert.equal(expired.kind, 'close');
    assert.match((expired as { reason: string }).reason, /session expired/);
    assert.deepEqual(principal(), { principalType: 'User', name: 'alice' });

    const other = setup({ maxReauthMs: 1000 });
    login(other.step, 'SCRAM-SHA-256', 'alice', 'alice-secret');
    const changed = login(other.step, 'SCRAM-SHA-256', 'bob', 'bob-secret');
    assert.equal(changed.kind, 'close');
    if (changed.kind === 'close') {
      assert.equal(
        authResponse(Buffer.concat(changed.response!).subarray(4)).errorMessage,
        'Cannot change principals during re-authentication from User.alice: User.bob',
      );
    }
    assert.deepEqual(other.principal(), { principalType: 'User', name: 'alice' });
  });

  it('a v0 SaslAuthenticate client cannot re-authenticate: its SaslHandshake is left to the router', () => {
    const { step } = setup({ maxReauthMs: 1000 });
    login(step, 'SCRAM-SHA-256', 'alice', 'alice-secret', 0);
    assert.deepEqual(step(handshake('SCRAM-SHA-256')), { kind: 'serve' });
  });
});

describe('SASL listener settings', () => {
  const props =
    (m: Record<string, string>) =>
    (name: string): string | undefined =>
      m[name];
  it("refuses Kafka's default GSSAPI and other mechanisms Skiff does not serve, naming the setting", () => {
    assert.throws(
      () => saslListenerSettings('SASL_PLAINTEXT', props({})),
      /SASL mechanism GSSAPI is not supported.*listener\.name\.sasl_plaintext\.sasl\.enabled\.mechanisms/,
    );
    assert.throws(
      () => saslListenerSettings('X', props({ 'sasl.enabled.mechanisms': 'SCRAM-SHA-256,OAUTHBEARER' })),
      /OAUTHBEARER is not supported/,
    );
  });
  it('reads the PLAIN users from the JAAS config, the per-mechanism key first', () => {
    assert.throws(
      () => saslListenerSettings('X', props({ 'sasl.enabled.mechanisms': 'PLAIN' })),
      /PLAIN needs a JAAS config/,
    );
    const s = saslListenerSettings(
      'X',
      props({
        'sasl.enabled.mechanisms': 'PLAIN, SCRAM-SHA-512',
        'plain.sasl.jaas.config':
          'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="1";',
        'sasl.jaas.config': 'org.apache.kafka.common.security.plain.PlainLoginModule required user_b="2";',
        'connections.max.reauth.ms': '60000',
      }),
    );
    assert.deepEqual(s.enabledMechanisms, ['PLAIN', 'SCRAM-SHA-512']);
    assert.equal(s.plainPasswordOf('a'), '1');
    assert.equal(s.plainPasswordOf('b'), undefined);
    assert.equal(s.maxReauthMs, 60_000);
    assert.equal(s.maxReceiveBytes, 524288);
    assert.equal(s.failedAuthenticationDelayMs, 100);
  });
  it("takes the inter-broker credentials from the listener's JAAS config for sasl.mechanism.inter.broker.protocol", () => {
    const base = {
      'sasl.enabled.mechanisms': 'SCRAM-SHA-256',
      'scram-sha-256.sasl.jaas.config':
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="b-secret";',
    };
    assert.throws(
      () => interBrokerSaslCredentials('INTERNAL', props(base)),
      /must be included in sasl.enabled.mechanisms/,
    );
    assert.deepEqual(
      interBrokerSaslCredentials(
        'INTERNAL',
        props({ ...base, 'sasl.mechanism.inter.broker.protocol': 'SCRAM-SHA-256' }),
      ),
      { mechanism: 'SCRAM-SHA-256', username: 'broker', password: 'b-secret' },
    );
  });
  it("accepts librdkafka's final nonce, which repeats its own nonce in front of the server's", () => {
    const { step, principal } = setup();
    step(handshake('SCRAM-SHA-256'));
    const first = authResponse(step(authenticate(Buffer.from('n,,n=alice,r=abc'))));
    assert.equal(
      first.authBytes.toString(),
      `r=abcserver-nonce,s=${Buffer.from('alice-salt').toString('base64')},i=4096`,
    );
    // The proof is over the messages as sent, so librdkafka signs its doubled nonce.
    const salted = saltedPassword('sha256', 'alice-secret', Buffer.from('alice-salt'), 4096);
    const withoutProof = 'c=biws,r=abcabcserver-nonce';
    const auth = authMessage('n=alice,r=abc', first.authBytes.toString(), withoutProof);
    const clientKey = clientKeyOf('sha256', salted);
    const proof = xorBytes(clientKey, hmac('sha256', digest('sha256', clientKey), auth));
    const r = authResponse(step(authenticate(Buffer.from(`${withoutProof},p=${proof.toString('base64')}`))));
    assert.equal(r.errorCode, 0);
    assert.deepEqual(principal(), { principalType: 'User', name: 'alice' });
  });
});
