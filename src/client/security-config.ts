/**
 * The security part of Kafka client properties (a tool's --command-config): security.protocol
 * and, for SSL, the ssl.* trust store, key store (client certificate) and host name check, as
 * node:tls options for every connection of the client.
 */
import type * as tls from 'node:tls';
import { SECURITY_PROTOCOLS, type SecurityProtocol } from '../security/principal.js';
import { type ReadFile, tlsClientOptions } from '../security/tls.js';
import { ClientError } from './errors.js';

export interface ClientSecurity {
  readonly securityProtocol: SecurityProtocol;
  /** Present for SSL. */
  readonly tls?: tls.ConnectionOptions;
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
      try {
        return { securityProtocol, tls: tlsClientOptions((name) => props.get(name), readFile) };
      } catch (e) {
        throw new ClientError((e as Error).message);
      }
    default:
      throw new ClientError(`security.protocol ${securityProtocol} is not supported by Skiff's tools yet`);
  }
}
