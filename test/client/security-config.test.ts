import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clientSecurity } from '../../src/client/security-config.js';

const PEM = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
const readFile = (p: string): Buffer => {
  if (p === '/ca.pem') return PEM;
  throw Object.assign(new Error(`ENOENT: ${p}`), { code: 'ENOENT' });
};
const props = (m: Record<string, string>) => new Map(Object.entries(m));

describe('security.protocol and ssl.* in client properties', () => {
  it('connects in plain text by default and with TLS for SSL', () => {
    assert.deepEqual(clientSecurity(props({}), readFile), { securityProtocol: 'PLAINTEXT' });
    const ssl = clientSecurity(
      props({
        'security.protocol': 'ssl',
        'ssl.truststore.type': 'PEM',
        'ssl.truststore.location': '/ca.pem',
      }),
      readFile,
    );
    assert.equal(ssl.securityProtocol, 'SSL');
    assert.deepEqual(ssl.tls?.ca, PEM);
    assert.equal(ssl.tls?.rejectUnauthorized, true);
    assert.equal(ssl.tls?.minVersion, 'TLSv1.2');
  });

  it("refuses what it cannot do, in Kafka's words where Kafka has them", () => {
    assert.throws(
      () => clientSecurity(props({ 'security.protocol': 'TLS' }), readFile),
      /Invalid value TLS for configuration security.protocol: String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL/,
    );
    assert.throws(
      () =>
        clientSecurity(props({ 'security.protocol': 'SSL', 'ssl.truststore.location': '/ca.jks' }), readFile),
      /Failed to load SSL truststore \/ca.jks of type JKS/,
    );
    assert.throws(
      () =>
        clientSecurity(
          props({
            'security.protocol': 'SSL',
            'ssl.truststore.type': 'PEM',
            'ssl.truststore.location': '/missing.pem',
          }),
          readFile,
        ),
      /ENOENT/,
    );
    assert.throws(
      () =>
        clientSecurity(
          props({ 'security.protocol': 'SSL', 'ssl.endpoint.identification.algorithm': 'ldap' }),
          readFile,
        ),
      /ssl.endpoint.identification.algorithm/,
    );
  });
});
