/**
 * The broker's network edges, put together at start-up from its config: one socket server per
 * listener (TLS material and SASL settings read now, so a bad one fails the start), the transport
 * its replica fetchers use on the inter-broker listener, and the SASL services of its SASL
 * listeners. Pure wiring for the Broker's composition root; nothing here keeps state.
 */
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import type { ClusterMetadata } from '../metadata/cluster-metadata.js';
import { ConnectionSlots } from '../network/connection-slots.js';
import type { DescriptorWatch } from '../network/descriptor-watch.js';
import type { RequestHandler } from '../network/request-handler.js';
import { SocketServer } from '../network/socket-server.js';
import { interBrokerSaslCredentials, saslListenerSettings } from '../security/sasl-authenticator.js';
import { randomNonce } from '../security/sasl-client.js';
import { credentialFromString } from '../security/scram.js';
import { tlsClientOptions } from '../security/tls.js';
import type { FileSystem } from '../storage/fs.js';
import type { BrokerConfig } from './config.js';
import type { BrokerSasl } from './handler-context.js';
import { bindHost, listenerTls, usesTls } from './listeners.js';
import { BrokerReplicaTransport } from './replica-transport.js';

/** What the socket servers are made of. */
export interface SocketServerParts {
  readonly config: BrokerConfig;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly fs: FileSystem;
  readonly logger: Logger;
  readonly sasl: BrokerSasl | undefined;
  readonly descriptors: DescriptorWatch;
}

/** One socket server per listener, each handing its requests to `router`; `intConfig`: a dynamic broker config's current value. */
export function brokerSocketServers(
  parts: SocketServerParts,
  router: RequestHandler,
  intConfig: (name: string) => number,
): ReadonlyMap<string, SocketServer> {
  const { config, clock, scheduler, fs, logger, sasl, descriptors } = parts;
  // max.connections is one limit over every listener, as in Kafka; it and max.connections.per.ip
  // are dynamic, read at each accept (Kafka's default, Int.MAX, leaves Skiff's own bound).
  const slots = new ConnectionSlots(
    () => {
      const v = intConfig('max.connections');
      return v >= 2147483647 ? config.maxConnections : v;
    },
    () => intConfig('max.connections.per.ip'),
  );
  return new Map(
    config.listeners.map((l) => [
      l.listenerName,
      new SocketServer(
        {
          listenerName: l.listenerName,
          securityProtocol: l.securityProtocol,
          ...(usesTls(l) && {
            tls: listenerTls(l.listenerName, config.sslProps(l.listenerName), (p) => fs.readFile(p)),
          }),
          host: bindHost(l),
          port: l.port,
          maxFrameBytes: config.socketRequestMaxBytes,
          ...(sasl?.settings(l.listenerName) && {
            maxFrameBytesUntilAuthenticated: sasl.settings(l.listenerName)!.maxReceiveBytes,
          }),
          maxQueuedRequestsPerConnection: config.queuedMaxRequestsPerConnection,
          maxQueuedBytesPerConnection: config.queuedMaxRequestBytesPerConnection,
          connectionsMaxIdleMs: config.connectionsMaxIdleMs,
          maxConnections: config.maxConnections,
          slots,
          descriptors,
        },
        router,
        clock,
        scheduler,
        logger,
      ),
    ]),
  );
}

/** The replica fetchers' connections, on the inter-broker listener with its TLS and SASL credentials. */
export function interBrokerTransport(
  config: BrokerConfig,
  metadata: ClusterMetadata,
  scheduler: Scheduler,
  fs: FileSystem,
  requestTimeoutMs: () => number,
): BrokerReplicaTransport {
  const interBroker = config.listeners.find((l) => l.listenerName === config.interBrokerListenerName);
  return new BrokerReplicaTransport(
    config.nodeId,
    metadata,
    scheduler,
    requestTimeoutMs,
    config.interBrokerListenerName,
    interBroker?.securityProtocol === 'SSL' || interBroker?.securityProtocol === 'SASL_SSL'
      ? tlsClientOptions(config.sslProps(interBroker.listenerName), (p) => fs.readFile(p))
      : undefined,
    interBroker?.securityProtocol.startsWith('SASL_')
      ? interBrokerSaslCredentials(interBroker.listenerName, config.saslProps(interBroker.listenerName))
      : undefined,
  );
}

/**
 * SASL for the broker's SASL_PLAINTEXT / SASL_SSL listeners, their settings read (and refused if
 * Skiff cannot serve them) at start-up; SCRAM credentials come from the current metadata image.
 */
export function brokerSasl(
  config: BrokerConfig,
  metadata: ClusterMetadata,
  clock: Clock,
  randomBytes: (n: number) => Buffer,
): { sasl?: BrokerSasl } {
  const settings = new Map(
    config.listeners
      .filter((l) => l.securityProtocol.startsWith('SASL_'))
      .map((l) => [l.listenerName, saslListenerSettings(l.listenerName, config.saslProps(l.listenerName))]),
  );
  if (settings.size === 0) return {};
  return {
    sasl: {
      settings: (name) => settings.get(name),
      services: {
        clock,
        scramCredentialOf: (mechanism, user) => {
          const stored = metadata.image().scramCredentials?.get(user)?.[mechanism];
          return stored === undefined ? undefined : credentialFromString(stored);
        },
        nonce: randomNonce,
        secret: randomBytes(32),
      },
    },
  };
}
