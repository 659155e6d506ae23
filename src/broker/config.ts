/**
 * The broker's static configuration with Kafka's property names. server.properties is read with
 * Kafka's .properties rules (src/metadata/properties.ts) and every known key is typed, defaulted
 * and validated by the one config table (src/metadata/config-defs.ts); the handful of Skiff-only
 * keys the table does not list are declared here. Dynamic changes (AlterConfigs) arrive later
 * through the metadata image and are applied on top (see dynamic-config.ts).
 */

import { LIMITS } from '../common/limits.js';
import { ASSIGNOR_CLASS_NAMES, CONSUMER_GROUP_ASSIGNORS } from '../coordinator/consumer/assignors.js';
import type { ConfigMap } from '../metadata/cluster-metadata.js';
import { BROKER_CONFIG_DEFS, BROKER_CONFIGS_NOT_TAKEN, type ConfigDef } from '../metadata/config-defs.js';
import {
  brokerConfigValue,
  type ConfigValue,
  longToNumber,
  parseConfigValue,
} from '../metadata/config-resolve.js';
import { type AuthorizerConfig, authorizerConfigOf } from '../security/authorizer.js';
import type { CleanerConfig } from '../storage/log-cleaner.js';
import { cleanupPolicy, type LogConfig, logConfig } from '../storage/log-config.js';
import { DEFAULT_LOG_MANAGER_CONFIG, type LogManagerConfig } from '../storage/log-manager-config.js';
import { type ListenerEndpoint, listenersFromProperties } from './listeners.js';

export { parseProperties } from '../metadata/properties.js';

export interface BrokerConfig {
  /** node.id */
  readonly nodeId: number;
  /** listeners: one socket server each. */
  readonly listeners: readonly ListenerEndpoint[];
  /** advertised.listeners, else the listeners (a wildcard host advertised as 127.0.0.1). */
  readonly advertisedListeners: readonly ListenerEndpoint[];
  /** inter.broker.listener.name, else the listener named after security.inter.broker.protocol. */
  readonly interBrokerListenerName: string;
  /**
   * The ssl.* settings as each listener sees them: `listener.name.<name>.ssl.x` (name lower
   * case), else `ssl.x`. Read when an SSL listener starts (security/tls.ts).
   */
  readonly sslProps: (listenerName: string) => (name: string) => string | undefined;
  /**
   * The SASL settings as each listener sees them, the same way: `listener.name.<name>.x`, else
   * `x` — sasl.*, connections.max.reauth.ms and `<mechanism>.sasl.jaas.config` (Kafka's
   * per-mechanism JAAS key, e.g. plain.sasl.jaas.config, only under a listener prefix).
   */
  readonly saslProps: (listenerName: string) => (name: string) => string | undefined;
  /** log.dirs (or log.dir) */
  readonly logDirs: readonly string[];
  /** num.partitions */
  readonly numPartitions: number;
  /** default.replication.factor */
  readonly defaultReplicationFactor: number;
  /** auto.create.topics.enable */
  readonly autoCreateTopicsEnable: boolean;
  /** delete.topic.enable */
  readonly deleteTopicEnable: boolean;
  /** min.insync.replicas */
  readonly minInsyncReplicas: number;
  /** socket.request.max.bytes */
  readonly socketRequestMaxBytes: number;
  /** connections.max.idle.ms */
  readonly connectionsMaxIdleMs: number;
  /** max.connections */
  readonly maxConnections: number;
  /** Per connection: pipelined requests read ahead before the socket is paused (queued.max.requests). */
  readonly queuedMaxRequestsPerConnection: number;
  /** Per connection: bytes of such requests before the socket is paused (queued.max.request.bytes). */
  readonly queuedMaxRequestBytesPerConnection: number;
  /** max.incremental.fetch.session.cache.slots */
  readonly maxIncrementalFetchSessionCacheSlots: number;
  /** The log config every topic starts from (log.segment.bytes, log.retention.ms, message.max.bytes...). */
  readonly log: LogConfig;
  /** log.flush.scheduler.interval.ms, the checkpoint intervals, log.retention.check.interval.ms. */
  readonly logManager: LogManagerConfig;
  /** group.initial.rebalance.delay.ms */
  readonly groupInitialRebalanceDelayMs: number;
  /** group.min.session.timeout.ms */
  readonly groupMinSessionTimeoutMs: number;
  /** group.max.session.timeout.ms */
  readonly groupMaxSessionTimeoutMs: number;
  /** group.max.size */
  readonly groupMaxSize: number;
  /** group.coordinator.rebalance.protocols and the group.consumer.* configs (KIP-848). */
  readonly consumerGroup: ConsumerGroupBrokerConfig;
  /** offsets.topic.num.partitions */
  readonly offsetsTopicNumPartitions: number;
  /** offsets.topic.replication.factor */
  readonly offsetsTopicReplicationFactor: number;
  /** offsets.topic.segment.bytes */
  readonly offsetsTopicSegmentBytes: number;
  /** offsets.retention.minutes, in ms */
  readonly offsetsRetentionMs: number;
  /** offsets.commit.timeout.ms: how long a coordinator write waits for the HW. */
  readonly offsetsCommitTimeoutMs: number;
  /** The transaction coordinator's transaction.* settings and its topic's. */
  readonly transactions: TransactionBrokerConfig;
  /** The properties as given (server.properties plus overrides): DescribeConfigs' STATIC_BROKER_CONFIG. */
  readonly staticProps: ConfigMap;
  /** The ACL authorizer's settings; null without authorizer.class.name (everything allowed, as Kafka). */
  readonly authorizer: AuthorizerConfig | null;
}

const DEFAULT_LISTENERS_CONFIG = listenersFromProperties(new Map());

export interface TransactionBrokerConfig {
  /** transaction.state.log.num.partitions */
  readonly stateLogNumPartitions: number;
  /** transaction.state.log.replication.factor */
  readonly stateLogReplicationFactor: number;
  /** transaction.state.log.min.isr */
  readonly stateLogMinIsr: number;
  /** transaction.state.log.segment.bytes */
  readonly stateLogSegmentBytes: number;
  /** transaction.max.timeout.ms */
  readonly maxTimeoutMs: number;
  /** transactional.id.expiration.ms */
  readonly idExpirationMs: number;
  /** transaction.abort.timed.out.transaction.cleanup.interval.ms */
  readonly abortTimedOutIntervalMs: number;
  /** transaction.remove.expired.transaction.cleanup.interval.ms */
  readonly removeExpiredIntervalMs: number;
}

export const DEFAULT_BROKER_CONFIG: BrokerConfig = Object.freeze({
  nodeId: 1,
  listeners: DEFAULT_LISTENERS_CONFIG.listeners,
  advertisedListeners: DEFAULT_LISTENERS_CONFIG.advertised,
  interBrokerListenerName: DEFAULT_LISTENERS_CONFIG.interBrokerListenerName,
  sslProps: () => () => undefined,
  saslProps: () => () => undefined,
  logDirs: ['/tmp/kafka-logs'],
  numPartitions: 1,
  defaultReplicationFactor: 1,
  autoCreateTopicsEnable: true,
  deleteTopicEnable: true,
  minInsyncReplicas: 1,
  socketRequestMaxBytes: 104_857_600,
  connectionsMaxIdleMs: 600_000,
  maxConnections: LIMITS.connections,
  queuedMaxRequestsPerConnection: 100,
  queuedMaxRequestBytesPerConnection: 16 * 1024 * 1024,
  maxIncrementalFetchSessionCacheSlots: 1000,
  log: logConfig(),
  logManager: DEFAULT_LOG_MANAGER_CONFIG,
  groupInitialRebalanceDelayMs: 3_000,
  groupMinSessionTimeoutMs: 6_000,
  groupMaxSessionTimeoutMs: 1_800_000,
  groupMaxSize: 1_000,
  consumerGroup: {
    rebalanceProtocols: ['classic', 'consumer'],
    consumerGroupSessionTimeoutMs: 45_000,
    consumerGroupHeartbeatIntervalMs: 5_000,
    consumerGroupMaxSize: 1_000,
    consumerGroupAssignors: ['uniform', 'range'],
  },
  offsetsTopicNumPartitions: 50,
  offsetsTopicReplicationFactor: 3,
  offsetsTopicSegmentBytes: 104_857_600,
  offsetsRetentionMs: 7 * 24 * 60 * 60 * 1000,
  offsetsCommitTimeoutMs: 5_000,
  transactions: {
    stateLogNumPartitions: 50,
    stateLogReplicationFactor: 3,
    stateLogMinIsr: 2,
    stateLogSegmentBytes: 104_857_600,
    maxTimeoutMs: 900_000,
    idExpirationMs: 604_800_000,
    abortTimedOutIntervalMs: 10_000,
    removeExpiredIntervalMs: 3_600_000,
  },
  staticProps: {},
  authorizer: null,
});

export function brokerConfig(overrides: Partial<BrokerConfig> = {}): BrokerConfig {
  return Object.freeze({ ...DEFAULT_BROKER_CONFIG, ...overrides });
}

/**
 * Broker keys Skiff reads that the shared config table does not define (yet): same shape, so they
 * are validated the same way; they are not reported by DescribeConfigs.
 */
const SKIFF_BROKER_KEYS: ReadonlyMap<string, ConfigDef> = new Map(
  (
    [
      ['queued.max.requests', 'int', '100', 1],
      ['queued.max.request.bytes', 'int', String(16 * 1024 * 1024), 1],
      ['max.incremental.fetch.session.cache.slots', 'int', '1000', 0],
      // Kafka's internal config (ProducerStateManagerConfig): how often producer.id.expiration.ms is applied.
      ['producer.id.expiration.check.interval.ms', 'int', '600000', 1],
    ] as const
  ).map(([name, type, defaultValue, min]) => [
    name,
    { name, scope: 'broker', type, defaultValue, doc: '', min } satisfies ConfigDef,
  ]),
);

/** `listener.name.<listener>.<config>`: a per-listener override (Kafka's ListenerName prefix). */
const LISTENER_PREFIX = /^listener\.name\.([^.]+)\.(.+)$/;
/** The configs a listener may override here: its TLS and SASL settings. */
const LISTENER_SCOPED = /^(?:ssl\.|sasl\.|connections\.max\.reauth\.ms$)/;
/** `<mechanism>.sasl.jaas.config` under a listener prefix: that mechanism's JAAS config (Kafka's saslMechanismConfigPrefix). */
const MECHANISM_JAAS = /^(?:plain|scram-sha-256|scram-sha-512)\.(sasl\.jaas\.config)$/;
/**
 * The authorizer's own settings: Kafka reads them from the properties the authorizer is configured
 * with, outside KafkaConfig's definitions, so DescribeConfigs does not list them either.
 */
const AUTHORIZER_KEYS: ReadonlyMap<string, ConfigDef> = new Map(
  (
    [
      ['super.users', 'string', '', 'Principals (User:admin) allowed everything, separated by semicolons.'],
      [
        'allow.everyone.if.no.acl.found',
        'boolean',
        'false',
        'With the authorizer on: allow an operation on a resource that has no ACL at all.',
      ],
    ] as const
  ).map(([name, type, defaultValue, doc]) => [
    name,
    { name, scope: 'broker', type, defaultValue, doc } satisfies ConfigDef,
  ]),
);

function authorizerProps(props: ReadonlyMap<string, string>): { superUsers: string; allowEveryone: boolean } {
  const allowEveryone = AUTHORIZER_KEYS.get('allow.everyone.if.no.acl.found')!;
  return {
    superUsers: props.get('super.users') ?? '',
    allowEveryone: parseConfigValue(allowEveryone, props.get(allowEveryone.name) ?? 'false') as boolean,
  };
}

/** The ssl.* and SASL settings as a listener sees them: its `listener.name.<name>.` override, else the broker's. */
function listenerProps(
  listenerScoped: ReadonlyMap<string, string>,
  staticProps: Readonly<Record<string, string>>,
): Pick<BrokerConfig, 'sslProps' | 'saslProps'> {
  const scoped = (listenerName: string, name: string): string | undefined =>
    listenerScoped.get(`listener.name.${listenerName.toLowerCase()}.${name}`);
  return {
    sslProps: (listenerName) => (name) => scoped(listenerName, name) ?? staticProps[name],
    // A mechanism's own JAAS key exists only under a listener prefix, as in Kafka.
    saslProps: (listenerName) => (name) =>
      scoped(listenerName, name) ?? (MECHANISM_JAAS.test(name) ? undefined : staticProps[name]),
  };
}

/** An int64 of ms or bytes as a number; Long.MAX_VALUE ("never") becomes Infinity, -1 stays -1. */
function msOrInfinity(v: bigint): number {
  return longToNumber(v);
}

/**
 * The known keys of server.properties, each value checked: the broker's own (staticProps) and the
 * per-listener `listener.name.<name>.ssl.*` overrides, kept apart. Unknown keys are warned about.
 */
function checkedProperties(
  props: ReadonlyMap<string, string>,
  warn: (line: string) => void,
): { staticProps: Record<string, string>; listenerScoped: Map<string, string> } {
  const staticProps: Record<string, string> = {};
  const listenerScoped = new Map<string, string>();
  for (const [k, v] of props) {
    const scoped = LISTENER_PREFIX.exec(k);
    if (scoped !== null) {
      // listener.name.<name>.<config>: validated as <config>, kept apart from the broker's own.
      const base = BROKER_CONFIG_DEFS.get(MECHANISM_JAAS.exec(scoped[2]!)?.[1] ?? scoped[2]!);
      if (base === undefined || !LISTENER_SCOPED.test(base.name)) {
        warn(`ignoring unknown or unsupported config '${k}'`);
        continue;
      }
      parseConfigValue(base, v);
      listenerScoped.set(k, v);
      continue;
    }
    const def = BROKER_CONFIG_DEFS.get(k) ?? SKIFF_BROKER_KEYS.get(k) ?? AUTHORIZER_KEYS.get(k);
    const notTaken = BROKER_CONFIGS_NOT_TAKEN.get(k);
    if (notTaken !== undefined) {
      warn(`ignoring config '${k}': ${notTaken}`);
      continue;
    }
    if (def === undefined) {
      warn(`ignoring unknown or unsupported config '${k}'`);
      continue;
    }
    parseConfigValue(def, v);
    staticProps[k] = v;
  }
  return { staticProps, listenerScoped };
}

/**
 * A BrokerConfig from server.properties. Bad values throw with Kafka's message; unknown keys are
 * ignored as Kafka ignores them, with one warning per key.
 */
export function brokerConfigFromProperties(
  props: ReadonlyMap<string, string>,
  warn: (line: string) => void = () => {},
): BrokerConfig {
  const d = DEFAULT_BROKER_CONFIG;
  const { staticProps, listenerScoped } = checkedProperties(props, warn);
  const layers = { staticProps };
  const value = (name: string) => brokerConfigValue(name, layers);
  const int = (name: string): number => value(name) as number;
  const long = (name: string): bigint => value(name) as bigint;
  const bool = (name: string): boolean => value(name) as boolean;
  const skiffInt = (name: string): number => {
    const def = SKIFF_BROKER_KEYS.get(name)!;
    return parseConfigValue(def, props.get(name) ?? def.defaultValue!) as number;
  };
  const listeners = listenersFromProperties(props);
  const { sslProps, saslProps } = listenerProps(listenerScoped, staticProps);
  const dirs = (props.get('log.dirs') ?? props.get('log.dir') ?? d.logDirs.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const nodeId = props.has('node.id') ? int('node.id') : props.has('broker.id') ? int('broker.id') : d.nodeId;
  if (nodeId < 0) throw new Error(`node.id: expected an id ≥ 0, got ${nodeId}`);
  const numPartitions = int('num.partitions');
  const defaultReplicationFactor = int('default.replication.factor');
  if (defaultReplicationFactor < 1) throw new Error('default.replication.factor: expected at least 1');
  // These resolve through their synonyms (log.retention.ms ← minutes ← hours, log.roll.ms ←
  // log.roll.hours, log.roll.jitter.ms ← log.roll.jitter.hours, log.flush.interval.ms ←
  // log.flush.scheduler.interval.ms), so never null.
  const retentionMs = long('log.retention.ms');
  const segmentMs = long('log.roll.ms');
  const flushMs = long('log.flush.interval.ms');
  return brokerConfig({
    nodeId,
    listeners: listeners.listeners,
    advertisedListeners: listeners.advertised,
    interBrokerListenerName: listeners.interBrokerListenerName,
    sslProps,
    saslProps,
    logDirs: dirs,
    numPartitions,
    defaultReplicationFactor,
    autoCreateTopicsEnable: bool('auto.create.topics.enable'),
    deleteTopicEnable: bool('delete.topic.enable'),
    minInsyncReplicas: int('min.insync.replicas'),
    socketRequestMaxBytes: int('socket.request.max.bytes'),
    connectionsMaxIdleMs: msOrInfinity(long('connections.max.idle.ms')),
    maxConnections: props.has('max.connections') ? int('max.connections') : LIMITS.connections,
    queuedMaxRequestsPerConnection: skiffInt('queued.max.requests'),
    queuedMaxRequestBytesPerConnection: skiffInt('queued.max.request.bytes'),
    maxIncrementalFetchSessionCacheSlots: skiffInt('max.incremental.fetch.session.cache.slots'),
    log: logConfig({
      segmentBytes: int('log.segment.bytes'),
      segmentMs: msOrInfinity(segmentMs),
      segmentJitterMs: msOrInfinity(long('log.roll.jitter.ms')),
      preallocate: bool('log.preallocate'),
      segmentIndexBytes: int('log.index.size.max.bytes'),
      retentionMs: msOrInfinity(retentionMs),
      retentionBytes: msOrInfinity(long('log.retention.bytes')),
      maxMessageBytes: int('message.max.bytes'),
      messageTimestampType: value('log.message.timestamp.type') as LogConfig['messageTimestampType'],
      messageTimestampBeforeMaxMs: msOrInfinity(long('log.message.timestamp.before.max.ms')),
      messageTimestampAfterMaxMs: msOrInfinity(long('log.message.timestamp.after.max.ms')),
      flushMessages: msOrInfinity(long('log.flush.interval.messages')),
      flushMs: msOrInfinity(flushMs),
      indexIntervalBytes: int('log.index.interval.bytes'),
      fileDeleteDelayMs: msOrInfinity(long('log.segment.delete.delay.ms')),
      ...cleanupPolicy(value('log.cleanup.policy') as string[]),
      minCleanableDirtyRatio: value('log.cleaner.min.cleanable.ratio') as number,
      minCompactionLagMs: msOrInfinity(long('log.cleaner.min.compaction.lag.ms')),
      maxCompactionLagMs: msOrInfinity(long('log.cleaner.max.compaction.lag.ms')),
      deleteRetentionMs: msOrInfinity(long('log.cleaner.delete.retention.ms')),
    }),
    logManager: {
      flushCheckIntervalMs: msOrInfinity(long('log.flush.scheduler.interval.ms')),
      recoveryPointCheckpointIntervalMs: int('log.flush.offset.checkpoint.interval.ms'),
      logStartOffsetCheckpointIntervalMs: int('log.flush.start.offset.checkpoint.interval.ms'),
      highWatermarkCheckpointIntervalMs: msOrInfinity(long('replica.high.watermark.checkpoint.interval.ms')),
      retentionCheckIntervalMs: msOrInfinity(long('log.retention.check.interval.ms')),
      producerIdExpirationCheckIntervalMs: skiffInt('producer.id.expiration.check.interval.ms'),
    },
    groupInitialRebalanceDelayMs: int('group.initial.rebalance.delay.ms'),
    groupMinSessionTimeoutMs: int('group.min.session.timeout.ms'),
    groupMaxSessionTimeoutMs: int('group.max.session.timeout.ms'),
    groupMaxSize: Math.min(int('group.max.size'), LIMITS.groupMaxSize),
    consumerGroup: consumerGroupConfig(value, int),
    offsetsTopicNumPartitions: int('offsets.topic.num.partitions'),
    offsetsTopicReplicationFactor: int('offsets.topic.replication.factor'),
    offsetsTopicSegmentBytes: int('offsets.topic.segment.bytes'),
    offsetsRetentionMs: int('offsets.retention.minutes') * 60_000,
    offsetsCommitTimeoutMs: int('offsets.commit.timeout.ms'),
    authorizer: authorizerConfigOf(value('authorizer.class.name') as string, authorizerProps(props)),
    transactions: {
      stateLogNumPartitions: int('transaction.state.log.num.partitions'),
      stateLogReplicationFactor: int('transaction.state.log.replication.factor'),
      stateLogMinIsr: int('transaction.state.log.min.isr'),
      stateLogSegmentBytes: int('transaction.state.log.segment.bytes'),
      maxTimeoutMs: int('transaction.max.timeout.ms'),
      idExpirationMs: int('transactional.id.expiration.ms'),
      abortTimedOutIntervalMs: int('transaction.abort.timed.out.transaction.cleanup.interval.ms'),
      removeExpiredIntervalMs: int('transaction.remove.expired.transaction.cleanup.interval.ms'),
    },
    staticProps,
  });
}

const LONG_CONFIGS_AS_NUMBER = (v: string): number | undefined => {
  if (!/^[+-]?\d+(\.\d+)?$/.test(v.trim())) return undefined;
  const n = Number(v);
  // Long.MAX_VALUE and its neighbours mean "never": keep them out of timer arithmetic.
  return n >= 2 ** 53 ? Number.POSITIVE_INFINITY : n;
};

/** Topic-level overrides (Kafka's topic config names) applied on the broker's log config. */
export function topicLogConfig(
  base: LogConfig,
  overrides: Readonly<Record<string, string>> | undefined,
): LogConfig {
  if (!overrides) return base;
  const num = (k: string): number | undefined => {
    const v = overrides[k];
    return v === undefined ? undefined : LONG_CONFIGS_AS_NUMBER(v);
  };
  const fields: [string, keyof LogConfig][] = [
    ['segment.bytes', 'segmentBytes'],
    ['segment.ms', 'segmentMs'],
    ['segment.jitter.ms', 'segmentJitterMs'],
    ['segment.index.bytes', 'segmentIndexBytes'],
    ['index.interval.bytes', 'indexIntervalBytes'],
    ['flush.messages', 'flushMessages'],
    ['flush.ms', 'flushMs'],
    ['file.delete.delay.ms', 'fileDeleteDelayMs'],
    ['max.message.bytes', 'maxMessageBytes'],
    ['message.timestamp.before.max.ms', 'messageTimestampBeforeMaxMs'],
    ['message.timestamp.after.max.ms', 'messageTimestampAfterMaxMs'],
    ['retention.ms', 'retentionMs'],
    ['retention.bytes', 'retentionBytes'],
    ['min.cleanable.dirty.ratio', 'minCleanableDirtyRatio'],
    ['min.compaction.lag.ms', 'minCompactionLagMs'],
    ['max.compaction.lag.ms', 'maxCompactionLagMs'],
    ['delete.retention.ms', 'deleteRetentionMs'],
  ];
  const out: Record<string, unknown> = { ...base };
  for (const [name, field] of fields) {
    const n = num(name);
    if (n !== undefined) out[field] = n;
  }
  const preallocate = overrides.preallocate;
  if (preallocate !== undefined) out.preallocate = preallocate.trim().toLowerCase() === 'true';
  const ts = overrides['message.timestamp.type'];
  if (ts === 'CreateTime' || ts === 'LogAppendTime') out.messageTimestampType = ts;
  const policy = overrides['cleanup.policy'];
  if (policy !== undefined) Object.assign(out, cleanupPolicy(policy.split(',').map((x) => x.trim())));
  return logConfig(out as Partial<LogConfig>);
}

/**
 * The log.cleaner.* broker configs as the cleaner reads them (at every turn, so a dynamic change
 * applies; log.cleaner.enable is static; a change of the threads or buffer sizes restarts the
 * cleaner threads at their next turn, as Kafka's reconfiguration does — see LogCleaner).
 */
export function cleanerConfigOf(value: (name: string) => ConfigValue | null): CleanerConfig {
  const num = (name: string): number => {
    const v = value(name);
    if (typeof v === 'bigint') return longToNumber(v);
    return typeof v === 'number' ? v : Number.NaN;
  };
  const rate = num('log.cleaner.io.max.bytes.per.second');
  return {
    enable: value('log.cleaner.enable') !== false,
    numThreads: num('log.cleaner.threads'),
    dedupeBufferSize: num('log.cleaner.dedupe.buffer.size'),
    dedupeBufferLoadFactor: num('log.cleaner.io.buffer.load.factor'),
    ioBufferSize: num('log.cleaner.io.buffer.size'),
    maxIoBytesPerSecond: rate >= Number.MAX_VALUE ? Number.POSITIVE_INFINITY : rate,
    backoffMs: num('log.cleaner.backoff.ms'),
  };
}

export interface ConsumerGroupBrokerConfig {
  readonly rebalanceProtocols: readonly string[];
  readonly consumerGroupSessionTimeoutMs: number;
  readonly consumerGroupHeartbeatIntervalMs: number;
  readonly consumerGroupMaxSize: number;
  /** Assignor names ('uniform', 'range'), the default first. */
  readonly consumerGroupAssignors: readonly string[];
}

/** The KIP-848 settings, checked as Kafka's GroupCoordinatorConfig checks them. */
function consumerGroupConfig(
  value: (name: string) => unknown,
  int: (name: string) => number,
): ConsumerGroupBrokerConfig {
  const protocols = value('group.coordinator.rebalance.protocols') as string[];
  if (!protocols.includes('classic'))
    throw new Error('group.coordinator.rebalance.protocols: the list must contain classic');
  const within = (name: string, minName: string, maxName: string): number => {
    const v = int(name);
    if (v < int(minName)) throw new Error(`${name} must be greater than or equal to ${minName}`);
    if (v > int(maxName)) throw new Error(`${name} must be less than or equal to ${maxName}`);
    return v;
  };
  const sessionMs = within(
    'group.consumer.session.timeout.ms',
    'group.consumer.min.session.timeout.ms',
    'group.consumer.max.session.timeout.ms',
  );
  const heartbeatMs = within(
    'group.consumer.heartbeat.interval.ms',
    'group.consumer.min.heartbeat.interval.ms',
    'group.consumer.max.heartbeat.interval.ms',
  );
  if (heartbeatMs >= sessionMs)
    throw new Error(
      'group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms',
    );
  const assignors = (value('group.consumer.assignors') as string[]).map((a) => {
    const name = ASSIGNOR_CLASS_NAMES.get(a) ?? a;
    if (!CONSUMER_GROUP_ASSIGNORS.has(name))
      throw new Error(`group.consumer.assignors: unknown assignor ${a} (uniform, range)`);
    return name;
  });
  if (assignors.length === 0) throw new Error('group.consumer.assignors: at least one assignor is required');
  return {
    rebalanceProtocols: protocols,
    consumerGroupSessionTimeoutMs: sessionMs,
    consumerGroupHeartbeatIntervalMs: heartbeatMs,
    consumerGroupMaxSize: Math.min(int('group.consumer.max.size'), LIMITS.groupMaxSize),
    consumerGroupAssignors: assignors,
  };
}
