/**
 * Who a connection is, as Kafka's KafkaPrincipal: a type (`User` for every principal Kafka's
 * built-in authentication produces) and a name. PLAINTEXT connections, and SSL ones without a
 * client certificate, are `User:ANONYMOUS`; SASL sets the authenticated user; an SSL client
 * certificate gives the certificate's distinguished name.
 */
export interface KafkaPrincipal {
  readonly principalType: string;
  readonly name: string;
}

export const USER_TYPE = 'User';

export const ANONYMOUS: KafkaPrincipal = Object.freeze({ principalType: USER_TYPE, name: 'ANONYMOUS' });

/** The security protocols of Kafka's listeners (listener.security.protocol.map's values). */
export const SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'] as const;
export type SecurityProtocol = (typeof SECURITY_PROTOCOLS)[number];

/** `User:alice`, as Kafka prints a principal and as ACLs and super.users name one. */
export function principalToString(p: KafkaPrincipal): string {
  return `${p.principalType}:${p.name}`;
}

/**
 * Parses `Type:name` as Kafka's SecurityUtils.parseKafkaPrincipal: the type is what precedes the
 * first colon, the name everything after it (a name may hold colons). Throws on a string without
 * a colon or with an empty type or name.
 */
export function parsePrincipal(text: string): KafkaPrincipal {
  const colon = text.indexOf(':');
  if (colon <= 0 || colon === text.length - 1) {
    throw new Error(`Principal must be of the form Type:name, got ${JSON.stringify(text)}`);
  }
  return { principalType: text.slice(0, colon), name: text.slice(colon + 1) };
}

export function samePrincipal(a: KafkaPrincipal, b: KafkaPrincipal): boolean {
  return a.principalType === b.principalType && a.name === b.name;
}
