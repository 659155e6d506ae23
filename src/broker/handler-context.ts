import type { Clock } from '../common/clock.js';
import type { EventJournal } from '../common/event-journal.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import type { ClusterMetadata } from '../metadata/cluster-metadata.js';
import type { DescriptorWatch } from '../network/descriptor-watch.js';
import type { ConnectionInfo } from '../network/request-handler.js';
import type { SaslListenerSettings, SaslServices } from '../security/sasl-authenticator.js';
import type { AlterLogDirsManager } from './alter-log-dirs.js';
import type { Authorization } from './authorization.js';
import type { BrokerMetrics } from './broker-metrics.js';
import type { ClientQuotas } from './client-quota-manager.js';
import type { BrokerConfig } from './config.js';
import type { FetchSessionCache } from './fetch-session.js';
import type { ReplicaManager } from './replica-manager.js';

/** One request as the handlers see it, besides its decoded body. */
export interface RequestContext {
  readonly apiKey: number;
  readonly apiVersion: number;
  readonly correlationId: number;
  readonly clientId: string | null;
  readonly connection: ConnectionInfo;
  /**
   * Lets the connection start its next request while this one waits (see RequestHandler): call
   * it only once everything that must precede the next request has happened.
   */
  readonly releaseConnection: () => void;
  /** The request's size as Kafka's request.sizeInBytes: header and body, without the size prefix. */
  readonly sizeBytes: number;
  /**
   * Marks the end of the request's own work (Kafka's apiLocalCompleteTimeNanos): what follows is
   * waiting in purgatory, which the request quota does not count. Later calls change nothing.
   */
  readonly localComplete: () => void;
  /** Milliseconds spent handling the request so far, up to localComplete (the request quota's measure). */
  readonly handlingMs: () => number;
}

/** What every handler module may use: the broker's services, injected by the composition root. */
export interface BrokerServices {
  readonly config: BrokerConfig;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly logger: Logger;
  readonly metadata: ClusterMetadata;
  readonly replicaManager: ReplicaManager;
  readonly fetchSessions: FetchSessionCache;
  /** Every handler's authorization check (authorization.ts); allows everything without an authorizer. */
  readonly authorization: Authorization;
  /** Replica moves between this broker's log dirs (AlterReplicaLogDirs). */
  readonly alterLogDirs?: AlterLogDirsManager;
  /** The process's watch on its file descriptors: told when an operation found none left. */
  readonly descriptors?: DescriptorWatch;
  /** A producer id never handed out before by this cluster. */
  nextProducerId(): bigint;
  /** A random integer in [0, bound): crypto randomness in production, seeded in tests. */
  randomInt(bound: number): number;
  /** Total and usable bytes of the file system holding a log dir; -1 each when unknown. */
  diskSpace(logDir: string): { totalBytes: bigint; usableBytes: bigint };
  /** The latest operator events (recoveries, truncations, rebuilds, deletions) as logged; absent in bare tests. */
  readonly events?: EventJournal;
  /** The request and topic metrics; absent when the broker keeps none. */
  readonly metrics?: BrokerMetrics;
  /**
   * KIP-890's verification (transaction.partition.verification.enable): asks the transactional
   * id's coordinator whether these partitions were added to the producer's ongoing transaction;
   * each partition's error code (0: added). Null when verification is off; absent in bare tests.
   */
  verifyTransaction?(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    partitions: ReadonlyMap<string, readonly number[]>,
  ): Promise<ReadonlyMap<string, ReadonlyMap<number, number>>> | null;
  /** Client quotas (produce, fetch, request); absent in bare tests, where nothing is throttled. */
  readonly clientQuotas?: ClientQuotas;
  /** SASL authentication of the SASL_PLAINTEXT / SASL_SSL listeners; absent: the broker has none. */
  readonly sasl?: BrokerSasl;
}

export interface BrokerSasl {
  /** The settings of a SASL listener by its name; undefined for a listener without SASL. */
  settings(listenerName: string): SaslListenerSettings | undefined;
  readonly services: SaslServices;
}
