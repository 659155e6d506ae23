/**
 * The broker's static configuration with Kafka's property names and defaults. Only what this
 * broker reads is here; the full config definitions table (types, validators, dynamic configs)
 * lives in src/metadata once it lands, and this parser then defers to it.
 */
import { type LogConfig, logConfig } from '../storage/log-config.js';

export interface BrokerConfig {
  /** node.id */
  readonly nodeId: number;
  /** From listeners=PLAINTEXT://host:port */
  readonly host: string;
  readonly port: number;
  /** advertised.listeners, else the listener (0.0.0.0 advertises as 127.0.0.1). */
  readonly advertisedHost: string;
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
}

export const DEFAULT_BROKER_CONFIG: BrokerConfig = Object.freeze({
  nodeId: 1,
  host: '127.0.0.1',
  port: 9092,
  advertisedHost: '127.0.0.1',
  logDirs: ['/tmp/kafka-logs'],
  numPartitions: 1,
  defaultReplicationFactor: 1,
  autoCreateTopicsEnable: true,
  deleteTopicEnable: true,
  minInsyncReplicas: 1,
  socketRequestMaxBytes: 104_857_600,
  connectionsMaxIdleMs: 600_000,
  maxConnections: 10_000,
  queuedMaxRequestsPerConnection: 100,
  queuedMaxRequestBytesPerConnection: 16 * 1024 * 1024,
  maxIncrementalFetchSessionCacheSlots: 1000,
  log: logConfig(),
});

export function brokerConfig(overrides: Partial<BrokerConfig> = {}): BrokerConfig {
  return Object.freeze({ ...DEFAULT_BROKER_CONFIG, ...overrides });
}

/** Java-properties subset: `key=value` or `key: value` lines, `#`/`!` comments, no continuations. */
export function parseProperties(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    const m = /^([^=:\s]+)\s*[=:\s]\s*(.*)$/.exec(line);
    if (!m) throw new Error(`cannot parse property line: ${raw}`);
    out.set(m[1]!, m[2]!);
  }
  return out;
}

function parseListener(value: string, name: string): { host: string; port: number } {
  const first = value.split(',')[0]!.trim();
  const m = /^([A-Za-z_]+):\/\/(\[[^\]]*\]|[^:]*):(\d+)$/.exec(first);
  if (!m) throw new Error(`${name}: expected PLAINTEXT://host:port, got '${value}'`);
  if (m[1]!.toUpperCase() !== 'PLAINTEXT') throw new Error(`${name}: only PLAINTEXT listeners are supported`);
  return { host: m[2] === '' ? '0.0.0.0' : m[2]!, port: Number(m[3]) };
}

function int(
  props: Map<string, string>,
  key: string,
  fallback: number,
  min = Number.MIN_SAFE_INTEGER,
): number {
  const v = props.get(key);
  if (v === undefined) return fallback;
  const n = Number(v.trim());
  if (!Number.isInteger(n) || n < min) throw new Error(`${key}: expected an integer ≥ ${min}, got '${v}'`);
  return n;
}

function bool(props: Map<string, string>, key: string, fallback: boolean): boolean {
  const v = props.get(key)?.trim().toLowerCase();
  if (v === undefined) return fallback;
  if (v !== 'true' && v !== 'false') throw new Error(`${key}: expected true or false, got '${v}'`);
  return v === 'true';
}

/** A BrokerConfig from server.properties; unknown keys are ignored as Kafka ignores them (with a warning). */
export function brokerConfigFromProperties(
  props: Map<string, string>,
  warn: (line: string) => void = () => {},
): BrokerConfig {
  const d = DEFAULT_BROKER_CONFIG;
  const listener = parseListener(props.get('listeners') ?? 'PLAINTEXT://127.0.0.1:9092', 'listeners');
  const advertised = props.has('advertised.listeners')
    ? parseListener(props.get('advertised.listeners')!, 'advertised.listeners').host
    : listener.host === '0.0.0.0'
      ? '127.0.0.1'
      : listener.host;
  const dirs = (props.get('log.dirs') ?? props.get('log.dir') ?? d.logDirs.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const nodeId = int(props, 'node.id', props.has('broker.id') ? int(props, 'broker.id', 1, 0) : d.nodeId, 0);
  const known = new Set([
    'node.id',
    'broker.id',
    'listeners',
    'advertised.listeners',
    'log.dirs',
    'log.dir',
    'num.partitions',
    'default.replication.factor',
    'auto.create.topics.enable',
    'delete.topic.enable',
    'min.insync.replicas',
    'socket.request.max.bytes',
    'connections.max.idle.ms',
    'max.connections',
    'queued.max.requests',
    'max.incremental.fetch.session.cache.slots',
    'log.segment.bytes',
    'log.retention.ms',
    'log.retention.hours',
    'log.retention.bytes',
    'message.max.bytes',
    'log.message.timestamp.type',
    'log.flush.interval.messages',
    'log.flush.interval.ms',
    'log.index.interval.bytes',
    'log.segment.delete.delay.ms',
  ]);
  for (const k of props.keys()) if (!known.has(k)) warn(`ignoring unknown or unsupported config '${k}'`);
  const retentionMs = props.has('log.retention.ms')
    ? int(props, 'log.retention.ms', d.log.retentionMs, -1)
    : int(props, 'log.retention.hours', 168, -1) * 3_600_000;
  const tsType = props.get('log.message.timestamp.type') ?? d.log.messageTimestampType;
  if (tsType !== 'CreateTime' && tsType !== 'LogAppendTime')
    throw new Error(`log.message.timestamp.type: expected CreateTime or LogAppendTime, got '${tsType}'`);
  const flushMessages = int(props, 'log.flush.interval.messages', -1, -1);
  const flushMs = int(props, 'log.flush.interval.ms', -1, -1);
  return brokerConfig({
    nodeId,
    host: listener.host,
    port: listener.port,
    advertisedHost: advertised,
    logDirs: dirs,
    numPartitions: int(props, 'num.partitions', d.numPartitions, 1),
    defaultReplicationFactor: int(props, 'default.replication.factor', d.defaultReplicationFactor, 1),
    autoCreateTopicsEnable: bool(props, 'auto.create.topics.enable', d.autoCreateTopicsEnable),
    deleteTopicEnable: bool(props, 'delete.topic.enable', d.deleteTopicEnable),
    minInsyncReplicas: int(props, 'min.insync.replicas', d.minInsyncReplicas, 1),
    socketRequestMaxBytes: int(props, 'socket.request.max.bytes', d.socketRequestMaxBytes, 1),
    connectionsMaxIdleMs: int(props, 'connections.max.idle.ms', d.connectionsMaxIdleMs, -1),
    maxConnections: int(props, 'max.connections', d.maxConnections, 1),
    queuedMaxRequestsPerConnection: int(props, 'queued.max.requests', d.queuedMaxRequestsPerConnection, 1),
    queuedMaxRequestBytesPerConnection: int(
      props,
      'queued.max.request.bytes',
      d.queuedMaxRequestBytesPerConnection,
      1,
    ),
    maxIncrementalFetchSessionCacheSlots: int(
      props,
      'max.incremental.fetch.session.cache.slots',
      d.maxIncrementalFetchSessionCacheSlots,
      0,
    ),
    log: logConfig({
      segmentBytes: int(props, 'log.segment.bytes', d.log.segmentBytes, 14),
      retentionMs,
      retentionBytes: int(props, 'log.retention.bytes', d.log.retentionBytes, -1),
      maxMessageBytes: int(props, 'message.max.bytes', d.log.maxMessageBytes, 0),
      messageTimestampType: tsType,
      flushMessages: flushMessages < 0 ? Number.POSITIVE_INFINITY : flushMessages,
      flushMs: flushMs < 0 ? Number.POSITIVE_INFINITY : flushMs,
      indexIntervalBytes: int(props, 'log.index.interval.bytes', d.log.indexIntervalBytes, 0),
      fileDeleteDelayMs: int(props, 'log.segment.delete.delay.ms', d.log.fileDeleteDelayMs, 0),
    }),
  });
}

/** Topic-level overrides (Kafka's topic config names) applied on the broker's log config. */
export function topicLogConfig(
  base: LogConfig,
  overrides: Readonly<Record<string, string>> | undefined,
): LogConfig {
  if (!overrides) return base;
  const num = (k: string): number | undefined => {
    const v = overrides[k];
    if (v === undefined) return undefined;
    const n = Number(v);
    return Number.isFinite(n) ? n : undefined;
  };
  const ts = overrides['message.timestamp.type'];
  return logConfig({
    ...base,
    ...(num('segment.bytes') !== undefined && { segmentBytes: num('segment.bytes')! }),
    ...(num('retention.ms') !== undefined && { retentionMs: num('retention.ms')! }),
    ...(num('retention.bytes') !== undefined && { retentionBytes: num('retention.bytes')! }),
    ...(num('max.message.bytes') !== undefined && { maxMessageBytes: num('max.message.bytes')! }),
    ...((ts === 'CreateTime' || ts === 'LogAppendTime') && { messageTimestampType: ts }),
  });
}
