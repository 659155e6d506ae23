/**
 * The principal of an SSL connection as Kafka's DefaultKafkaPrincipalBuilder makes it: `User:` and
 * the client certificate's subject distinguished name (mapped by ssl.principal.mapping.rules;
 * DEFAULT keeps it) in RFC 2253 form (Java's X500Principal.getName(): most specific RDN first, `CN=client,
 * OU=eng,O=org,C=US`); User:ANONYMOUS when the client sent no certificate.
 */
import type { X509Certificate } from 'node:crypto';
import { ANONYMOUS, type KafkaPrincipal, USER_TYPE } from './principal.js';
import type { PrincipalMapper } from './ssl-principal-mapper.js';

/**
 * RFC 2253 from Node's subject text, which lists one `type=value` per line in the certificate's
 * order (least specific first) with values already escaped as RFC 2253 asks (OpenSSL's
 * ASN1_STRFLGS_ESC_2253): the lines reversed and joined with commas.
 */
export function rfc2253Subject(nodeSubject: string): string {
  return nodeSubject
    .split('\n')
    .filter((line) => line !== '')
    .reverse()
    .join(',');
}

/**
 * The principal of a TLS peer; null when ssl.principal.mapping.rules has no rule for its subject
 * (Kafka then fails the authentication).
 */
export function sslPrincipal(
  peer: X509Certificate | undefined,
  mapper: PrincipalMapper,
): KafkaPrincipal | null {
  if (peer === undefined) return ANONYMOUS;
  const name = mapper(rfc2253Subject(peer.subject));
  return name === null ? null : { principalType: USER_TYPE, name };
}
