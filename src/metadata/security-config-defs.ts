/**
 * The broker configs of listeners and their security (Kafka's SocketServerConfigs,
 * ReplicationConfigs and SslConfigs names and defaults), apart from config-defs.ts to keep each
 * table readable; config-defs.ts lists them among the broker configs. Data only.
 */
import type { ConfigDef, ConfigType } from './config-defs.js';

function broker(
  name: string,
  type: ConfigType,
  defaultValue: string | null,
  doc: string,
  extra: Pick<ConfigDef, 'oneOf' | 'min'> = {},
): ConfigDef {
  return { name, scope: 'broker', type, defaultValue, doc, ...extra };
}

export const SECURITY_BROKER_CONFIGS: readonly ConfigDef[] = [
  broker('listeners', 'list', 'PLAINTEXT://:9092', 'Addresses the broker listens on.'),
  broker('advertised.listeners', 'list', null, 'Addresses given to clients, if different from listeners.'),
  broker(
    'listener.security.protocol.map',
    'string',
    'SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT',
    'Security protocol of each listener name (NAME:PROTOCOL,...); a listener named after a protocol needs no entry.',
  ),
  broker(
    'inter.broker.listener.name',
    'string',
    null,
    'Listener the brokers use to reach each other (replication); unset: the one named by security.inter.broker.protocol.',
  ),
  broker(
    'security.inter.broker.protocol',
    'string',
    'PLAINTEXT',
    'Security protocol between brokers; only one of this and inter.broker.listener.name may be set.',
    { oneOf: ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'] },
  ),
  // TLS of SSL listeners (and of the broker's own connections to an SSL inter-broker listener).
  // Each may be set for one listener as listener.name.<name>.ssl.*.
  broker('ssl.keystore.type', 'string', 'JKS', 'Key store format: PEM or PKCS12 (Skiff cannot read JKS).'),
  broker(
    'ssl.keystore.location',
    'string',
    null,
    'Key store file: for PEM, the private key and certificate chain.',
  ),
  broker('ssl.keystore.password', 'password', null, 'Password of a PKCS12 key store (not used with PEM).'),
  broker('ssl.keystore.key', 'password', null, 'Private key in PEM, inline (with ssl.keystore.type=PEM).'),
  broker(
    'ssl.keystore.certificate.chain',
    'password',
    null,
    'Certificate chain in PEM, inline, with ssl.keystore.key.',
  ),
  broker('ssl.key.password', 'password', null, 'Password of the private key, if it is encrypted.'),
  broker('ssl.truststore.type', 'string', 'JKS', 'Trust store format: PEM (Skiff cannot read JKS).'),
  broker('ssl.truststore.location', 'string', null, 'Trust store file: PEM certificates of the trusted CAs.'),
  broker('ssl.truststore.password', 'password', null, 'Password of the trust store (not used with PEM).'),
  broker('ssl.truststore.certificates', 'password', null, 'Trusted CA certificates in PEM, inline.'),
  broker('ssl.client.auth', 'string', 'none', 'Ask clients for a certificate: required, requested or none.', {
    oneOf: ['required', 'requested', 'none'],
  }),
  broker('ssl.enabled.protocols', 'list', 'TLSv1.2,TLSv1.3', 'TLS versions accepted.', {
    oneOf: ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'],
  }),
  broker(
    'ssl.endpoint.identification.algorithm',
    'string',
    'https',
    "Broker-to-broker TLS: 'https' checks the host name against the certificate; empty does not.",
  ),
  // SASL of SASL_PLAINTEXT / SASL_SSL listeners; each may be set for one listener as
  // listener.name.<name>.*, the JAAS config also per mechanism (listener.name.<name>.plain.sasl.jaas.config).
  broker(
    'sasl.enabled.mechanisms',
    'list',
    'GSSAPI',
    "SASL mechanisms a SASL listener accepts; Skiff serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (Kafka's default GSSAPI must be replaced).",
  ),
  broker(
    'sasl.mechanism.inter.broker.protocol',
    'string',
    'GSSAPI',
    'SASL mechanism the brokers use with each other when the inter-broker listener is SASL.',
  ),
  broker(
    'sasl.jaas.config',
    'password',
    null,
    'JAAS login module: PlainLoginModule with user_<name>="<password>" entries (the PLAIN users), and username/password for the broker as a client.',
  ),
  broker(
    'sasl.server.max.receive.size',
    'int',
    '524288',
    'The largest request before and during SASL authentication.',
  ),
  broker(
    'connections.max.reauth.ms',
    'long',
    '0',
    'A SASL session lasts this long (KIP-368): the client must re-authenticate or its connection is closed; 0: forever.',
  ),
  broker(
    'connection.failed.authentication.delay.ms',
    'int',
    '100',
    'A failed authentication is answered and its connection closed this much later.',
    { min: 0 },
  ),
  broker(
    'ssl.principal.mapping.rules',
    'string',
    'DEFAULT',
    'How a client certificate subject becomes a principal name: RULE:pattern/replacement/[LU] and DEFAULT (as it is), first match wins.',
  ),
];
