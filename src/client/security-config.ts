/**
 * The security part of Kafka client properties (a tool's --command-config): security.protocol
 * and, for SSL and SASL_SSL, the ssl.* trust store, key store (client certificate) and host name
 * check, as node:tls options for every connection of the client; for SASL_PLAINTEXT and SASL_SSL,
 * sasl.mechanism and the username/password of sasl.jaas.config (PlainLoginModule or
 * ScramLoginModule), with which every connection authenticates first.
 */
import type * as tls from 'node:tls';
import { jaasClientCredentials } from '../security/jaas.js';
import { SECURITY_PROTOCOLS, type SecurityProtocol } from '../security/principal.js';
import { CLIENT_SASL_MECHANISMS } from '../security/sasl-client.js';
import { type ReadFile, tlsClientOptions } from '../security/tls.js';
import { ClientError } from './errors.js';

export interface ClientSecurity {
  readonly securityProtocol: SecurityProtocol;
  /** Present for SSL and SASL_SSL. */
  readonly tls?: tls.ConnectionOptions;
  /** Present for SASL_PLAINTEXT and SASL_SSL. */
  readonly sasl?: { readonly mechanism: string; readonly username: string; readonly password: string };
}

/** sasl.mechanism (Kafka's default GSSAPI, which Skiff does not speak) and sasl.jaas.config's credentials. */
function clientSasl(props: ReadonlyMap<string, string>): NonNullable<ClientSecurity['sasl']> {
  const mechanism = (props.get('sasl.mechanism') ?? 'GSSAPI').trim();
  if (!(CLIENT_SASL_MECHANISMS as readonly string[]).includes(mechanism)) {
    throw new ClientError(
      `sasl.mechanism ${mechanism} is not supported by Skiff's tools (${CLIENT_SASL_MECHANISMS.join(', ')} are)`,
    );
  }
  const jaas = props.get('sasl.jaas.config');
  if (jaas === undefined) {
    throw new ClientError(
      `security.protocol ${props.get('security.protocol')} needs sasl.jaas.config (PlainLoginModule or ScramLoginModule with username and password)`,
    );
  }
  try {
    return { mechanism, ...jaasClientCredentials(jaas) };
  } catch (e) {
    throw new ClientError((e as Error).message);
  }
}

function tlsOf(props: ReadonlyMap<string, string>, readFile: ReadFile): tls.ConnectionOptions {
  try {
    return tlsClientOptions((name) => props.get(name), readFile);
  } catch (e) {
    throw new ClientError((e as Error).message);
  }
}

export function clientSecurity(props: ReadonlyMap<string, string>, readFile: ReadFile): ClientSecurity {
  const raw = (props.get('security.protocol') ?? 'PLAINTEXT').trim().toUpperCase();
  const securityProtocol = SECURITY_PROTOCOLS.find((p) => p === raw);
  if (securityProtocol === undefined)
    throw new ClientError(
      `Invalid value ${props.get('security.protocol')} for configuration security.protocol: String must be one of: ${SECURITY_PROTOCOLS.join(', ')}`,
    );
  switch (securityProtocol) {
    case 'PLAINTEXT':
      return { securityProtocol };
    case 'SSL':
      return { securityProtocol, tls: tlsOf(props, readFile) };
    case 'SASL_PLAINTEXT':
      return { securityProtocol, sasl: clientSasl(props) };
    case 'SASL_SSL':
      return { securityProtocol, tls: tlsOf(props, readFile), sasl: clientSasl(props) };
  }
}
