/**
 * An SSL listener (SocketServer over node:tls) with certificates made by openssl: the principal
 * from the client certificate, ssl.client.auth none / requested / required, failed handshakes as
 * one log line with the client's address, and TLS connections that never get file regions.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type * as tls from 'node:tls';
import { ManualClock } from '../../src/common/clock.js';
import { MemoryLogger } from '../../src/common/logger.js';
import { ManualScheduler } from '../../src/common/scheduler.js';
import { ClientConnection } from '../../src/network/client-connection.js';
import type { ConnectionInfo, RequestHandler } from '../../src/network/request-handler.js';
import { SocketServer } from '../../src/network/socket-server.js';
import { ApiVersionsRequestCodec } from '../../src/protocol/generated/ApiVersionsRequest.js';
import {
  ApiVersionsResponseCodec,
  defaultApiVersionsResponse,
} from '../../src/protocol/generated/ApiVersionsResponse.js';
import { encodeResponse } from '../../src/protocol/messages.js';
import { rfc2253Subject } from '../../src/security/ssl-principal.js';
import { type SslClientAuth, tlsClientOptions, tlsServerSettings } from '../../src/security/tls.js';
import { makeTestCerts, type TestCerts } from '../support/tls-certs.js';

const readFile = (p: string) => fs.readFileSync(p);
const props = (m: Record<string, string>) => (name: string) => m[name];

describe('SSL listener', () => {
  let certs: TestCerts;
  const servers: SocketServer[] = [];
  const conns: ClientConnection[] = [];
  before(() => {
    certs = makeTestCerts();
  });
  after(async () => {
    for (const c of conns) c.close();
    for (const s of servers) await s.close();
    certs.remove();
  });

  /** A listener whose handler answers ApiVersions and records who asked. */
  async function start(
    clientAuth: SslClientAuth,
    inline = false,
    extra: Record<string, string> = {},
    maxConnections = 100,
  ) {
    const logger = new MemoryLogger();
    const clock = new ManualClock();
    const seen: ConnectionInfo[] = [];
    const handler: RequestHandler = {
      async handle(frame, connection) {
        seen.push(connection);
        const correlationId = frame.readInt32BE(4);
        return encodeResponse(correlationId, 18, 0, ApiVersionsResponseCodec, defaultApiVersionsResponse());
      },
    };
    const ssl: Record<string, string> = inline
      ? {
          'ssl.keystore.type': 'PEM',
          'ssl.keystore.key': fs.readFileSync(certs.brokerKey, 'utf8'),
          'ssl.keystore.certificate.chain': fs.readFileSync(certs.brokerCert, 'utf8'),
          'ssl.truststore.type': 'PEM',
          'ssl.truststore.certificates': fs.readFileSync(certs.caPem, 'utf8'),
          'ssl.client.auth': clientAuth,
        }
      : {
          'ssl.keystore.type': 'PEM',
          'ssl.keystore.location': certs.brokerKeystore,
          'ssl.truststore.type': 'PEM',
          'ssl.truststore.location': certs.caPem,
          'ssl.client.auth': clientAuth,
        };
    const server = new SocketServer(
      {
        listenerName: 'SECURE',
        securityProtocol: 'SSL',
        tls: tlsServerSettings(props({ ...ssl, ...extra }), readFile),
        host: '127.0.0.1',
        port: 0,
        maxFrameBytes: 1 << 20,
        maxQueuedRequestsPerConnection: 4,
        maxQueuedBytesPerConnection: 1 << 20,
        connectionsMaxIdleMs: 600_000,
        maxConnections,
      },
      handler,
      clock,
      new ManualScheduler(clock),
      logger,
    );
    servers.push(server);
    const { port } = await server.listen();
    return { port, logger, seen };
  }

  async function connect(port: number, clientProps: Record<string, string>): Promise<ClientConnection> {
    const conn = await ClientConnection.connect('127.0.0.1', port, {
      clientId: 'tls-test',
      tls: tlsClientOptions(
        props({ 'ssl.truststore.type': 'PEM', 'ssl.truststore.location': certs.caPem, ...clientProps }),
        readFile,
      ),
    });
    conns.push(conn);
    return conn;
  }

  const apiVersions = (conn: ClientConnection) =>
    conn.send(
      18,
      0,
      ApiVersionsRequestCodec,
      { clientSoftwareName: '', clientSoftwareVersion: '' },
      ApiVersionsResponseCodec,
    );

  it("takes the principal from the client certificate's subject, as Kafka prints it", async () => {
    const { port, seen } = await start('required');
    const conn = await connect(port, {
      'ssl.keystore.type': 'PEM',
      'ssl.keystore.location': certs.clientKeystore,
    });
    assert.equal((await apiVersions(conn)).errorCode, 0);
    const c = seen[0]!;
    assert.equal(c.listenerName, 'SECURE');
    assert.equal(c.securityProtocol, 'SSL');
    assert.deepEqual(c.principal, { principalType: 'User', name: certs.clientPrincipal });
    // TLS encrypts what it sends: stored bytes cannot go out with sendfile.
    assert.equal(c.sendsFileRegions, false);
  });

  it('lets a client without a certificate in as ANONYMOUS when client auth is requested, from inline PEM', async () => {
    const { port, seen } = await start('requested', true);
    const conn = await connect(port, {});
    assert.equal((await apiVersions(conn)).errorCode, 0);
    assert.deepEqual(seen[0]!.principal, { principalType: 'User', name: 'ANONYMOUS' });
  });

  it('refuses a client without a certificate when client auth is required, and an untrusted one when requested', async () => {
    const required = await start('required');
    await assert.rejects(async () => apiVersions(await connect(required.port, {})));
    const requested = await start('requested');
    await assert.rejects(async () =>
      apiVersions(
        await connect(requested.port, {
          'ssl.keystore.type': 'PEM',
          'ssl.keystore.location': certs.strangerKeystore,
        }),
      ),
    );
    assert.equal(required.seen.length + requested.seen.length, 0);
    const warned = [...required.logger.lines, ...requested.logger.lines].filter((l) =>
      /SSL handshake failed/.test(l),
    );
    assert.ok(warned.length >= 2, warned.join('\n'));
    for (const line of warned) assert.match(line, /on listener SECURE from 127\.0\.0\.1:\d+/);
  });

  it('logs one line for a client that does not speak TLS, and keeps serving', async () => {
    const { port, logger } = await start('none');
    await new Promise<void>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () =>
        s.write(Buffer.from('\0\0\0\x0cnot a tls hello')),
      );
      s.on('close', () => resolve());
      s.on('error', () => {});
    });
    const lines = logger.lines.filter((l) => /SSL handshake failed/.test(l));
    assert.equal(lines.length, 1, logger.lines.join('\n'));
    assert.match(lines[0]!, /from 127\.0\.0\.1:\d+/);
    const conn = await connect(port, {});
    assert.equal((await apiVersions(conn)).errorCode, 0);
  });

  it('checks the broker host name unless ssl.endpoint.identification.algorithm is empty', async () => {
    const { port } = await start('none');
    const check = (options: tls.ConnectionOptions) =>
      options.checkServerIdentity?.('a-name-the-certificate-does-not-have', {} as tls.PeerCertificate);
    // https (the default): Node's own check against the certificate's names (127.0.0.1 here).
    const strict = tlsClientOptions(
      props({ 'ssl.truststore.type': 'PEM', 'ssl.truststore.location': certs.caPem }),
      readFile,
    );
    assert.equal(strict.checkServerIdentity, undefined);
    const loose = tlsClientOptions(
      props({
        'ssl.truststore.type': 'PEM',
        'ssl.truststore.location': certs.caPem,
        'ssl.endpoint.identification.algorithm': '',
      }),
      readFile,
    );
    assert.equal(check(loose), undefined);
    const conn = await connect(port, {});
    assert.equal((await apiVersions(conn)).errorCode, 0);
  });

  it("refuses key and trust store settings as Kafka's DefaultSslEngineFactory does", () => {
    const refuses = (m: Record<string, string>, message: RegExp) =>
      assert.throws(() => tlsServerSettings(props(m), readFile), message);
    refuses(
      { 'ssl.keystore.key': 'x', 'ssl.keystore.certificate.chain': 'y' },
      /SSL private key can be specified only for PEM, but key store type is JKS./,
    );
    refuses({ 'ssl.keystore.type': 'PEM', 'ssl.keystore.key': 'x' }, /certificate chain is not specified/);
    refuses(
      {
        'ssl.keystore.type': 'PEM',
        'ssl.keystore.location': certs.brokerKeystore,
        'ssl.keystore.password': 'p',
      },
      /SSL key store password cannot be specified with PEM format/,
    );
    refuses(
      { 'ssl.keystore.location': certs.brokerKeystore },
      /key store is specified, but key store password is not specified/,
    );
    refuses(
      {
        'ssl.keystore.type': 'PEM',
        'ssl.keystore.location': certs.brokerKeystore,
        'ssl.truststore.certificates': 'x',
      },
      /SSL trust store certs can be specified only for PEM, but trust store type is JKS./,
    );
    refuses({ 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': certs.caPem }, /Private key not provided/);
    refuses({}, /an SSL listener needs ssl.keystore.location or ssl.keystore.key/);
    refuses(
      {
        'ssl.keystore.type': 'PEM',
        'ssl.keystore.location': certs.brokerKeystore,
        'ssl.principal.mapping.rules': 'DEFAULT/L',
      },
      /Invalid rule/,
    );
  });

  it('maps the subject with ssl.principal.mapping.rules, and refuses a client no rule applies to', async () => {
    const clientCert = { 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': certs.clientKeystore };
    const mapped = await start('required', false, {
      'ssl.principal.mapping.rules': 'RULE:^CN=(.*?),OU=(.*?),O=(.*?),C=(.*?)$/$1@$2/U',
    });
    assert.equal((await apiVersions(await connect(mapped.port, clientCert))).errorCode, 0);
    assert.deepEqual(mapped.seen[0]!.principal, { principalType: 'User', name: 'CLIENT@ENG' });
    const unmapped = await start('required', false, {
      'ssl.principal.mapping.rules': 'RULE:^CN=(.*?),OU=ops$/$1/',
    });
    await assert.rejects(async () => apiVersions(await connect(unmapped.port, clientCert)));
    assert.equal(unmapped.seen.length, 0);
    assert.match(
      unmapped.logger.lines.join('\n'),
      /no ssl.principal.mapping.rules rule applies to CN=client,OU=eng,O=skiff,C=US/,
    );
  });

  it('reads a PKCS12 key store with its password', async () => {
    const { port } = await start('none', false, {
      'ssl.keystore.type': 'PKCS12',
      'ssl.keystore.location': certs.brokerPkcs12,
      'ssl.keystore.password': 'secret',
    });
    assert.equal((await apiVersions(await connect(port, {}))).errorCode, 0);
  });

  it('counts a socket against max.connections from before its handshake', async () => {
    const { port, logger } = await start('none', false, {}, 1);
    // A socket that never says hello holds the one slot.
    const stalled = await new Promise<net.Socket>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => resolve(s));
      s.on('error', () => {});
    });
    try {
      await assert.rejects(async () => apiVersions(await connect(port, {})));
      const lines = logger.lines.filter((l) => /127\.0\.0\.1/.test(l));
      assert.equal(lines.length, 1, lines.join('\n'));
      assert.match(
        lines[0]!,
        /rejecting connection from 127\.0\.0\.1:\d+ on listener SECURE: max.connections 1 reached/,
      );
    } finally {
      stalled.destroy();
    }
    // The slot comes back once the server has seen the close.
    for (let attempt = 0; ; attempt++) {
      try {
        assert.equal((await apiVersions(await connect(port, {}))).errorCode, 0);
        break;
      } catch (e) {
        if (attempt === 50) throw e;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  });

  it('prints a subject in RFC 2253 order, most specific first', () => {
    assert.equal(rfc2253Subject('C=US\nO=skiff\nOU=eng\nCN=client'), 'CN=client,OU=eng,O=skiff,C=US');
  });
});
