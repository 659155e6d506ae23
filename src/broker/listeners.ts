/**
 * Kafka's listener model from server.properties: `listeners` (one socket server each),
 * `listener.security.protocol.map` (listener name → security protocol), `advertised.listeners`
 * (what is registered for clients) and the inter-broker listener (`inter.broker.listener.name`,
 * or the one named after `security.inter.broker.protocol`). Validation follows Kafka's KafkaConfig
 * and listenerListToEndPoints, with their messages.
 */
import * as net from 'node:net';
import { SECURITY_PROTOCOLS, type SecurityProtocol } from '../security/principal.js';
import { type ReadFile, type SslProps, type TlsServerSettings, tlsServerSettings } from '../security/tls.js';

export interface ListenerEndpoint {
  /** Upper case, as Kafka normalises listener names. */
  readonly listenerName: string;
  readonly securityProtocol: SecurityProtocol;
  /** As written; '' binds every interface (Kafka's null host). */
  readonly host: string;
  /** 0 picks a free port (tests, `skiff up`). */
  readonly port: number;
}

export interface ListenersConfig {
  readonly listeners: readonly ListenerEndpoint[];
  /** advertised.listeners, else the listeners (a wildcard host advertised as 127.0.0.1). */
  readonly advertised: readonly ListenerEndpoint[];
  readonly interBrokerListenerName: string;
  readonly securityProtocolMap: ReadonlyMap<string, SecurityProtocol>;
}

export const DEFAULT_LISTENERS = 'PLAINTEXT://127.0.0.1:9092';
/** Kafka's default: each security protocol names a listener of its own kind. */
export const DEFAULT_SECURITY_PROTOCOL_MAP = SECURITY_PROTOCOLS.map((p) => `${p}:${p}`).join(',');

// Kafka's URI_PARSE_REGEXP: name://host:port, the host optionally in brackets (IPv6).
const ENDPOINT = /^(.*):\/\/\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$/;

function securityProtocolOf(name: string, configName: string): SecurityProtocol {
  const p = SECURITY_PROTOCOLS.find((s) => s === name);
  if (p === undefined) throw new Error(`Invalid security protocol \`${name}\` defined in ${configName}`);
  return p;
}

/** listener.security.protocol.map as Kafka's Csv.parseCsvMap reads it (the last colon splits). */
export function parseSecurityProtocolMap(value: string): Map<string, SecurityProtocol> {
  const map = new Map<string, SecurityProtocol>();
  const text = value.trim();
  if (text === '') return map;
  for (const entry of text.split(/\s*,\s*/)) {
    const colon = entry.lastIndexOf(':');
    if (colon < 0) {
      throw new Error(
        `Error parsing configuration property 'listener.security.protocol.map': entry '${entry}' is not of the form listener:protocol`,
      );
    }
    const name = entry.slice(0, colon).trim().toUpperCase();
    map.set(name, securityProtocolOf(entry.slice(colon + 1).trim(), 'listener.security.protocol.map'));
  }
  return map;
}

/**
 * A listener list (`PLAINTEXT://:9092,SSL://h:9093`) as endpoints; `requireDistinctPorts` is
 * false for advertised.listeners, where one listener may advertise another's address.
 */
export function listenerListToEndpoints(
  listeners: string,
  protocols: ReadonlyMap<string, SecurityProtocol>,
  requireDistinctPorts = true,
): ListenerEndpoint[] {
  const endpoints: ListenerEndpoint[] = [];
  const entries = listeners
    .trim()
    .split(/\s*,\s*/)
    .filter((e) => e !== '');
  for (const entry of entries) {
    const m = ENDPOINT.exec(entry);
    const fail = (why: string): never => {
      throw new Error(`Error creating broker listeners from '${listeners}': ${why}`);
    };
    if (m === null) fail(`Unable to parse ${entry} to a broker endpoint`);
    const listenerName = m![1]!.toUpperCase();
    const securityProtocol = protocols.get(listenerName);
    if (securityProtocol === undefined) fail(`No security protocol defined for listener ${listenerName}`);
    const port = Number(m![3]);
    if (port < 0 || port > 65535) fail(`Unable to parse ${entry} to a broker endpoint`);
    endpoints.push({ listenerName, securityProtocol: securityProtocol!, host: m![2]!, port });
  }
  const names = new Set(endpoints.map((e) => e.listenerName));
  if (names.size !== endpoints.length)
    throw new Error(`Each listener must have a different name, listeners: ${listeners}`);
  if (requireDistinctPorts) checkDistinctPorts(endpoints, listeners);
  return endpoints;
}

// Port 0 is left out (a free port each); two listeners may share a port only when one is bound to
// an IPv4 address and the other to an IPv6 address.
function checkDistinctPorts(endpoints: readonly ListenerEndpoint[], listeners: string): void {
  const byPort = new Map<number, ListenerEndpoint[]>();
  for (const e of endpoints) {
    if (e.port === 0) continue;
    byPort.set(e.port, [...(byPort.get(e.port) ?? []), e]);
  }
  for (const [port, eps] of byPort) {
    if (eps.length < 2) continue;
    const withIp = eps.filter((e) => net.isIP(e.host) !== 0);
    const withoutIp = eps.length - withIp.length;
    if (withoutIp > 1) throw new Error(`Each listener must have a different port, listeners: ${listeners}`);
    if (withIp.length === 0) continue;
    if (withIp.length !== 2)
      throw new Error(
        `Each listener must have a different port unless exactly one listener has an IPv4 address and the other IPv6 address, listeners: ${listeners}, port: ${port}`,
      );
    const [a, b] = withIp as [ListenerEndpoint, ListenerEndpoint];
    const oneOfEach =
      (net.isIPv4(a.host) && net.isIPv6(b.host)) || (net.isIPv6(a.host) && net.isIPv4(b.host));
    if (!oneOfEach || withoutIp > 0)
      throw new Error(
        `If you have two listeners on the same port then one needs to be IPv4 and the other IPv6, listeners: ${listeners}, port: ${port}`,
      );
  }
}

/**
 * The listeners of a broker from its properties, validated as KafkaConfig does: advertised names
 * a subset of the listeners', the inter-broker listener among the advertised ones, no 0.0.0.0
 * advertised, and only one of inter.broker.listener.name / security.inter.broker.protocol.
 */
export function listenersFromProperties(props: ReadonlyMap<string, string>): ListenersConfig {
  const securityProtocolMap = parseSecurityProtocolMap(
    props.get('listener.security.protocol.map') ?? DEFAULT_SECURITY_PROTOCOL_MAP,
  );
  const listenersValue = props.get('listeners') ?? DEFAULT_LISTENERS;
  const listeners = listenerListToEndpoints(listenersValue, securityProtocolMap);
  const advertisedValue = props.get('advertised.listeners');
  const advertised =
    advertisedValue === undefined
      ? listeners.map((l) => ({ ...l, host: advertisableHost(l.host) }))
      : listenerListToEndpoints(advertisedValue, securityProtocolMap, false);
  const interBrokerName = props.get('inter.broker.listener.name')?.trim();
  let interBrokerListenerName: string;
  if (interBrokerName !== undefined && interBrokerName !== '') {
    if (props.has('security.inter.broker.protocol'))
      throw new Error(
        'Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.',
      );
    interBrokerListenerName = interBrokerName.toUpperCase();
    if (!securityProtocolMap.has(interBrokerListenerName))
      throw new Error(
        `Listener with name ${interBrokerListenerName} defined in inter.broker.listener.name not found in listener.security.protocol.map.`,
      );
  } else {
    const protocol = (props.get('security.inter.broker.protocol') ?? 'PLAINTEXT').trim();
    interBrokerListenerName = securityProtocolOf(protocol, 'security.inter.broker.protocol');
  }
  const listenerNames = listeners.map((l) => l.listenerName);
  const advertisedNames = advertised.map((l) => l.listenerName);
  if (advertised.length === 0) throw new Error('There must be at least one broker advertised listener.');
  if (!advertisedNames.includes(interBrokerListenerName))
    throw new Error(
      `inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are ${advertisedNames.join(',')}`,
    );
  if (!advertisedNames.every((n) => listenerNames.includes(n)))
    throw new Error(
      `advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found ${advertisedNames.join(',')}. The valid options based on the current configuration are ${listenerNames.join(',')}`,
    );
  if (advertised.some((e) => e.host === '0.0.0.0'))
    throw new Error(
      'advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.',
    );
  return { listeners, advertised, interBrokerListenerName, securityProtocolMap };
}

/**
 * A listener's host as clients are told it when advertised.listeners does not say: a wildcard
 * (empty, 0.0.0.0, ::) is advertised as the loopback address, which works on the broker's own
 * machine (Kafka advertises the canonical host name instead).
 */
function advertisableHost(host: string): string {
  return host === '' || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
}

/** The address a listener binds: Kafka's empty host is every interface. */
export function bindHost(l: ListenerEndpoint): string {
  return l.host === '' ? '0.0.0.0' : l.host;
}

/** A TLS listener (SSL, SASL_SSL) carries its key and trust stores. */
export function usesTls(l: ListenerEndpoint): boolean {
  return l.securityProtocol === 'SSL' || l.securityProtocol === 'SASL_SSL';
}

/** A TLS listener's settings; a bad key or trust store throws with the listener's name. */
export function listenerTls(listenerName: string, props: SslProps, readFile: ReadFile): TlsServerSettings {
  try {
    return tlsServerSettings(props, readFile);
  } catch (e) {
    throw new Error(`listener ${listenerName}: ${(e as Error).message}`);
  }
}
