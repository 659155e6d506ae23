/**
 * A SASL session over the wire (KIP-368) on a real `skiff broker`: SaslAuthenticate v2 returns
 * connections.max.reauth.ms as the session lifetime; the connection serves requests until then,
 * re-authenticating renews it, and a request after expiry closes the connection. A connection
 * that sends Metadata before authenticating is closed; SaslHandshake for a mechanism the listener
 * does not enable is answered UNSUPPORTED_SASL_MECHANISM with the enabled list.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ClientConnection, ConnectionClosedError } from '../../src/network/client-connection.js';
import { saslAuthenticate } from '../../src/network/sasl-client-auth.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import { ApiKey } from '../../src/protocol/generated/index.js';
import { MetadataRequestCodec } from '../../src/protocol/generated/MetadataRequest.js';
import { MetadataResponseCodec } from '../../src/protocol/generated/MetadataResponse.js';
import { SaslAuthenticateRequestCodec } from '../../src/protocol/generated/SaslAuthenticateRequest.js';
import {
  type SaslAuthenticateResponse,
  SaslAuthenticateResponseCodec,
} from '../../src/protocol/generated/SaslAuthenticateResponse.js';
import { SaslHandshakeRequestCodec } from '../../src/protocol/generated/SaslHandshakeRequest.js';
import { SaslHandshakeResponseCodec } from '../../src/protocol/generated/SaslHandshakeResponse.js';
import { ZERO_UUID } from '../../src/protocol/uuid.js';
import { saslClientFor } from '../../src/security/sasl-client.js';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';

const REAUTH_MS = 3000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SASL sessions on the wire', () => {
  let broker: BrokerProcess;
  let port: number;
  before(async () => {
    broker = await startBrokerProcess(
      [
        'listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0',
        'listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-256',
        `listener.name.sasl_plaintext.connections.max.reauth.ms=${REAUTH_MS}`,
      ],
      undefined,
      undefined,
      ['--add-scram', 'SCRAM-SHA-256=[name=u,password=p]'],
    );
    port = Number(/SASL_PLAINTEXT:\/\/127\.0\.0\.1:(\d+)/.exec(broker.output())?.[1]);
  });
  after(async () => {
    await broker?.stop();
  });

  const metadata = (c: ClientConnection) =>
    c.send(
      ApiKey.Metadata,
      12,
      MetadataRequestCodec,
      {
        topics: [],
        allowAutoTopicCreation: false,
        includeClusterAuthorizedOperations: false,
        includeTopicAuthorizedOperations: false,
      },
      MetadataResponseCodec,
    );

  /** A v2 exchange by hand, for the session lifetime the last answer carries. */
  async function login(c: ClientConnection): Promise<bigint> {
    const h = await c.send(
      ApiKey.SaslHandshake,
      1,
      SaslHandshakeRequestCodec,
      { mechanism: 'SCRAM-SHA-256' },
      SaslHandshakeResponseCodec,
    );
    assert.equal(h.errorCode, 0);
    const client = saslClientFor('SCRAM-SHA-256', 'u', 'p');
    let token: Buffer | null = client.initial();
    let lifetime = -1n;
    while (token !== null) {
      const r: SaslAuthenticateResponse = await c.send(
        ApiKey.SaslAuthenticate,
        2,
        SaslAuthenticateRequestCodec,
        { authBytes: token },
        SaslAuthenticateResponseCodec,
      );
      assert.equal(r.errorCode, 0, r.errorMessage ?? '');
      lifetime = r.sessionLifetimeMs;
      token = client.evaluate(r.authBytes);
    }
    return lifetime;
  }

  it('sends the session lifetime, serves until it ends, renews on re-authentication, then closes', async () => {
    const c = await ClientConnection.connect('127.0.0.1', port, { clientId: 'reauth' });
    try {
      assert.equal(await login(c), BigInt(REAUTH_MS));
      assert.equal((await metadata(c)).brokers.length, 1);
      await sleep(REAUTH_MS / 2);
      assert.equal(await login(c), BigInt(REAUTH_MS), 're-authentication on the same connection');
      await sleep(REAUTH_MS / 2 + 100);
      assert.equal((await metadata(c)).brokers.length, 1, 'the renewed session is still open');
      await sleep(REAUTH_MS);
      await assert.rejects(metadata(c), ConnectionClosedError);
      assert.match(broker.output(), /the SASL session expired \(connections\.max\.reauth\.ms 3000\)/);
    } finally {
      c.close();
    }
  });

  it('bounds requests by sasl.server.max.receive.size until the connection authenticates', async () => {
    const raw = net.connect({ host: '127.0.0.1', port });
    await new Promise<void>((resolve) => raw.once('connect', () => resolve()));
    const closed = new Promise<void>((resolve) => raw.once('close', () => resolve()));
    raw.on('error', () => {});
    const prefix = Buffer.alloc(4);
    prefix.writeInt32BE(600_000);
    raw.write(prefix);
    await closed;
    assert.match(broker.output(), /exceeds the limit of 524288 bytes \(sasl\.server\.max\.receive\.size\)/);
    // Once authenticated, a request over 512 KiB is served (socket.request.max.bytes applies).
    const c = await ClientConnection.connect('127.0.0.1', port, { clientId: 'big' });
    try {
      await saslAuthenticate(c, { mechanism: 'SCRAM-SHA-256', username: 'u', password: 'p' });
      const names = Array.from({ length: 6000 }, (_, i) => ({
        name: `t${String(i).padStart(100, '0')}`,
        topicId: ZERO_UUID,
      }));
      const r = await c.send(
        ApiKey.Metadata,
        12,
        MetadataRequestCodec,
        {
          topics: names,
          allowAutoTopicCreation: false,
          includeClusterAuthorizedOperations: false,
          includeTopicAuthorizedOperations: false,
        },
        MetadataResponseCodec,
      );
      assert.equal(r.topics.length, 6000);
    } finally {
      c.close();
    }
  });

  it('closes a connection that sends Metadata first; answers an unknown mechanism with the enabled ones', async () => {
    const c = await ClientConnection.connect('127.0.0.1', port, { clientId: 'anonymous' });
    await assert.rejects(metadata(c), ConnectionClosedError);
    c.close();
    const d = await ClientConnection.connect('127.0.0.1', port, { clientId: 'plain' });
    try {
      const h = await d.send(
        ApiKey.SaslHandshake,
        1,
        SaslHandshakeRequestCodec,
        { mechanism: 'PLAIN' },
        SaslHandshakeResponseCodec,
      );
      assert.deepEqual(h, { errorCode: ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms: ['SCRAM-SHA-256'] });
    } finally {
      d.close();
    }
    const e = await ClientConnection.connect('127.0.0.1', port, { clientId: 'ok' });
    try {
      await saslAuthenticate(e, { mechanism: 'SCRAM-SHA-256', username: 'u', password: 'p' });
      assert.equal((await metadata(e)).brokers.length, 1);
    } finally {
      e.close();
    }
  });
});
