/**
 * Every broker and topic config Skiff knows (listeners and TLS in security-config-defs.ts): Kafka's
 * names, types, defaults, valid values, one doc line, whether a broker config may change at run
 * time, and each topic config's broker synonyms (Kafka's order, with unit conversion). Data only.
 */

export type ConfigType =
  | 'boolean'
  | 'int'
  | 'short'
  | 'long'
  | 'double'
  | 'string'
  | 'list'
  | 'class'
  | 'password';

export interface Synonym {
  readonly name: string;
  /** Multiply the synonym's value by this to get the config's unit (hours → ms: 3,600,000). */
  readonly factor?: number;
}

export interface ConfigDef {
  readonly name: string;
  readonly scope: 'broker' | 'topic';
  readonly type: ConfigType;
  /** As Kafka prints it in DescribeConfigs; null: no default. */
  readonly defaultValue: string | null;
  readonly doc: string;
  /** Inclusive bounds for numeric types. */
  readonly min?: number;
  readonly max?: number;
  /** Allowed values (for a list: allowed elements). Compared case-sensitively, as Kafka does. */
  readonly oneOf?: readonly string[];
  /** Special value validators that are not a range or an enum. */
  readonly check?: 'throttled-replicas';
  /** Broker configs: may be changed with AlterConfigs (per broker or cluster default). */
  readonly dynamic?: boolean;
  /** Topic configs: broker configs that supply the default, highest priority first. */
  readonly synonyms?: readonly Synonym[];
}

import { CONSUMER_GROUP_BROKER_CONFIGS } from './config-defs-consumer-groups.js';
import { TRANSACTION_BROKER_CONFIGS } from './config-defs-transactions.js';
import { SECURITY_BROKER_CONFIGS } from './security-config-defs.js';

const LONG_MAX = '9223372036854775807';
const HOURS = 3_600_000;
const MINUTES = 60_000;
const COMPRESSION = ['uncompressed', 'zstd', 'lz4', 'snappy', 'gzip', 'producer'] as const;

type Extra = Omit<ConfigDef, 'name' | 'scope' | 'type' | 'defaultValue' | 'doc'>;

function broker(
  name: string,
  type: ConfigType,
  defaultValue: string | null,
  doc: string,
  extra: Extra = {},
): ConfigDef {
  return { name, scope: 'broker', type, defaultValue, doc, ...extra };
}

/** A dynamic broker config. */
function dyn(
  name: string,
  type: ConfigType,
  defaultValue: string | null,
  doc: string,
  extra: Extra = {},
): ConfigDef {
  return broker(name, type, defaultValue, doc, { ...extra, dynamic: true });
}

function topic(
  name: string,
  type: ConfigType,
  defaultValue: string | null,
  synonyms: readonly (string | Synonym)[],
  doc: string,
  extra: Extra = {},
): ConfigDef {
  return {
    name,
    scope: 'topic',
    type,
    defaultValue,
    doc,
    synonyms: synonyms.map((s) => (typeof s === 'string' ? { name: s } : s)),
    ...extra,
  };
}

export const TOPIC_CONFIGS: readonly ConfigDef[] = [
  topic(
    'cleanup.policy',
    'list',
    'delete',
    ['log.cleanup.policy'],
    'Retention policy: delete old segments, compact by key, or both.',
    { oneOf: ['compact', 'delete'] },
  ),
  topic(
    'compression.type',
    'string',
    'producer',
    ['compression.type'],
    'Final compression of the topic; producer keeps what the producer sent.',
    { oneOf: COMPRESSION },
  ),
  topic(
    'delete.retention.ms',
    'long',
    '86400000',
    ['log.cleaner.delete.retention.ms'],
    'How long delete tombstones are kept in compacted topics.',
    { min: 0 },
  ),
  topic(
    'file.delete.delay.ms',
    'long',
    '60000',
    ['log.segment.delete.delay.ms'],
    'Delay before a segment removed from the log is deleted from the file system.',
    { min: 0 },
  ),
  topic(
    'flush.messages',
    'long',
    LONG_MAX,
    ['log.flush.interval.messages'],
    'Messages accumulated on a partition before they are fsynced.',
    { min: 1 },
  ),
  topic(
    'flush.ms',
    'long',
    LONG_MAX,
    ['log.flush.interval.ms', 'log.flush.scheduler.interval.ms'],
    'Maximum time before a partition is fsynced.',
    { min: 0 },
  ),
  topic(
    'follower.replication.throttled.replicas',
    'list',
    '',
    [],
    'Replicas (partition:broker, or *) throttled on the follower side.',
    { check: 'throttled-replicas' },
  ),
  topic(
    'index.interval.bytes',
    'int',
    '4096',
    ['log.index.interval.bytes'],
    'Bytes between two offset index entries.',
    { min: 0 },
  ),
  topic(
    'leader.replication.throttled.replicas',
    'list',
    '',
    [],
    'Replicas (partition:broker, or *) throttled on the leader side.',
    { check: 'throttled-replicas' },
  ),
  topic(
    'max.compaction.lag.ms',
    'long',
    LONG_MAX,
    ['log.cleaner.max.compaction.lag.ms'],
    'Maximum time a message stays ineligible for compaction.',
    { min: 1 },
  ),
  topic(
    'max.message.bytes',
    'int',
    '1048588',
    ['message.max.bytes'],
    'Largest record batch size allowed, after compression.',
    { min: 0 },
  ),
  topic(
    'message.timestamp.after.max.ms',
    'long',
    LONG_MAX,
    ['log.message.timestamp.after.max.ms'],
    'Largest allowed lead of a message timestamp over the broker time.',
    { min: 0 },
  ),
  topic(
    'message.timestamp.before.max.ms',
    'long',
    LONG_MAX,
    ['log.message.timestamp.before.max.ms'],
    'Largest allowed lag of a message timestamp behind the broker time.',
    { min: 0 },
  ),
  topic(
    'message.timestamp.type',
    'string',
    'CreateTime',
    ['log.message.timestamp.type'],
    'Whether the timestamp is the producer create time or the log append time.',
    { oneOf: ['CreateTime', 'LogAppendTime'] },
  ),
  topic(
    'min.cleanable.dirty.ratio',
    'double',
    '0.5',
    ['log.cleaner.min.cleanable.ratio'],
    'Dirty-to-total ratio above which the log is compacted.',
    { min: 0, max: 1 },
  ),
  topic(
    'min.compaction.lag.ms',
    'long',
    '0',
    ['log.cleaner.min.compaction.lag.ms'],
    'Minimum time a message stays uncompacted.',
    { min: 0 },
  ),
  topic(
    'min.insync.replicas',
    'int',
    '1',
    ['min.insync.replicas'],
    'Minimum ISR size for acks=all writes to succeed.',
    { min: 1 },
  ),
  topic(
    'preallocate',
    'boolean',
    'false',
    ['log.preallocate'],
    'Preallocate the file when creating a segment.',
  ),
  topic(
    'retention.bytes',
    'long',
    '-1',
    ['log.retention.bytes'],
    'Maximum partition size before old segments are deleted; -1: no limit.',
  ),
  topic(
    'retention.ms',
    'long',
    '604800000',
    [
      'log.retention.ms',
      { name: 'log.retention.minutes', factor: MINUTES },
      { name: 'log.retention.hours', factor: HOURS },
    ],
    'Maximum age of a segment before deletion; -1: no limit.',
    { min: -1 },
  ),
  topic(
    'segment.bytes',
    'int',
    '1073741824',
    ['log.segment.bytes'],
    'Segment file size before a new segment is rolled.',
    { min: 14 },
  ),
  topic(
    'segment.index.bytes',
    'int',
    '10485760',
    ['log.index.size.max.bytes'],
    'Size of the offset and time index files.',
    { min: 4 },
  ),
  topic(
    'segment.jitter.ms',
    'long',
    '0',
    ['log.roll.jitter.ms', { name: 'log.roll.jitter.hours', factor: HOURS }],
    'Random jitter subtracted from segment.ms.',
    { min: 0 },
  ),
  topic(
    'segment.ms',
    'long',
    '604800000',
    ['log.roll.ms', { name: 'log.roll.hours', factor: HOURS }],
    'Time after which a segment is rolled even if not full.',
    { min: 1 },
  ),
  topic(
    'unclean.leader.election.enable',
    'boolean',
    'false',
    ['unclean.leader.election.enable'],
    'Elect an out-of-sync replica as a last resort, at the risk of data loss.',
  ),
];

export const BROKER_CONFIGS: readonly ConfigDef[] = [
  // Identity, listeners, storage: static.
  broker('node.id', 'int', '-1', 'The id of this broker.'),
  broker('broker.id', 'int', '-1', 'The id of this broker (alias of node.id).'),
  broker('broker.rack', 'string', null, 'Rack of the broker, for rack-aware replica assignment.'),
  ...SECURITY_BROKER_CONFIGS,
  broker('log.format', 'string', 'text', 'Log lines: text (Kafka-style) or json (an object a line).', {
    oneOf: ['text', 'json'],
  }),
  broker('log.dirs', 'list', null, 'Directories in which the log data is kept.'),
  broker('log.dir', 'string', '/tmp/kafka-logs', 'Log directory, used when log.dirs is not set.'),
  broker('etcd.endpoints', 'list', null, 'Skiff: etcd client URLs for the cluster metadata.'),
  broker(
    'etcd.ssl.ca.location',
    'string',
    null,
    'Skiff: PEM file of the CAs that sign the etcd members (https endpoints).',
  ),
  broker(
    'etcd.ssl.certificate.location',
    'string',
    null,
    "Skiff: PEM certificate chain of this broker's etcd client certificate.",
  ),
  broker(
    'etcd.ssl.key.location',
    'string',
    null,
    "Skiff: PEM private key of this broker's etcd client certificate.",
  ),
  broker(
    'etcd.username',
    'string',
    null,
    'Skiff: etcd user the broker authenticates as (etcd auth enabled).',
  ),
  broker('etcd.password', 'password', null, "Skiff: the etcd user's password."),
  broker('authorizer.class.name', 'string', '', 'Empty: no authorizer; or StandardAuthorizer.'),
  // Log defaults: the first synonym of each topic config is dynamic, as in Kafka.
  dyn('log.cleanup.policy', 'list', 'delete', 'Default cleanup.policy.', { oneOf: ['compact', 'delete'] }),
  dyn('compression.type', 'string', 'producer', 'Default compression.type.', { oneOf: COMPRESSION }),
  dyn('log.cleaner.delete.retention.ms', 'long', '86400000', 'Default delete.retention.ms.', { min: 0 }),
  dyn('log.segment.delete.delay.ms', 'long', '60000', 'Default file.delete.delay.ms.', { min: 0 }),
  dyn('log.flush.interval.messages', 'long', LONG_MAX, 'Default flush.messages.', { min: 1 }),
  dyn('log.flush.interval.ms', 'long', null, 'Default flush.ms; log.flush.scheduler.interval.ms when unset.'),
  broker(
    'log.flush.scheduler.interval.ms',
    'long',
    LONG_MAX,
    'How often the flusher checks whether a log needs an fsync.',
  ),
  dyn('log.index.interval.bytes', 'int', '4096', 'Default index.interval.bytes.', { min: 0 }),
  dyn('log.cleaner.max.compaction.lag.ms', 'long', LONG_MAX, 'Default max.compaction.lag.ms.', { min: 1 }),
  dyn('message.max.bytes', 'int', '1048588', 'Default max.message.bytes.', { min: 0 }),
  dyn('log.message.timestamp.after.max.ms', 'long', LONG_MAX, 'Default message.timestamp.after.max.ms.', {
    min: 0,
  }),
  dyn('log.message.timestamp.before.max.ms', 'long', LONG_MAX, 'Default message.timestamp.before.max.ms.', {
    min: 0,
  }),
  dyn('log.message.timestamp.type', 'string', 'CreateTime', 'Default message.timestamp.type.', {
    oneOf: ['CreateTime', 'LogAppendTime'],
  }),
  dyn('log.cleaner.min.cleanable.ratio', 'double', '0.5', 'Default min.cleanable.dirty.ratio.', {
    min: 0,
    max: 1,
  }),
  dyn('log.cleaner.min.compaction.lag.ms', 'long', '0', 'Default min.compaction.lag.ms.', { min: 0 }),
  dyn('min.insync.replicas', 'int', '1', 'Default min.insync.replicas.', { min: 1 }),
  dyn('log.preallocate', 'boolean', 'false', 'Default preallocate.'),
  dyn('log.retention.bytes', 'long', '-1', 'Default retention.bytes.'),
  dyn('log.retention.ms', 'long', null, 'Default retention.ms; log.retention.minutes when unset.', {
    min: -1,
  }),
  broker(
    'log.retention.minutes',
    'int',
    null,
    'Default retention in minutes; log.retention.hours when unset.',
  ),
  broker('log.retention.hours', 'int', '168', 'Default retention in hours.'),
  dyn('log.segment.bytes', 'int', '1073741824', 'Default segment.bytes.', { min: 14 }),
  dyn('log.index.size.max.bytes', 'int', '10485760', 'Default segment.index.bytes.', { min: 4 }),
  dyn('log.roll.jitter.ms', 'long', null, 'Default segment.jitter.ms; log.roll.jitter.hours when unset.'),
  broker('log.roll.jitter.hours', 'int', '0', 'Default segment jitter in hours.', { min: 0 }),
  dyn('log.roll.ms', 'long', null, 'Default segment.ms; log.roll.hours when unset.'),
  broker('log.roll.hours', 'int', '168', 'Default segment age in hours before a roll.', { min: 1 }),
  dyn('unclean.leader.election.enable', 'boolean', 'false', 'Default unclean.leader.election.enable.'),
  broker(
    'log.retention.check.interval.ms',
    'long',
    '300000',
    'How often segments are checked for deletion.',
    { min: 1 },
  ),
  broker(
    'log.flush.offset.checkpoint.interval.ms',
    'int',
    '60000',
    'How often the recovery point is checkpointed.',
    { min: 0 },
  ),
  broker(
    'log.flush.start.offset.checkpoint.interval.ms',
    'int',
    '60000',
    'How often log start offsets are checkpointed.',
    { min: 0 },
  ),
  broker('log.cleaner.enable', 'boolean', 'true', 'Run the log cleaner (compaction).'),
  dyn('log.cleaner.threads', 'int', '1', 'Cleaner threads; changed at most ×2 or ÷2, to ≥ 1.', { min: 0 }),
  dyn(
    'log.cleaner.dedupe.buffer.size',
    'long',
    '134217728',
    "Memory of the cleaners' offset maps, all threads.",
  ),
  dyn('log.cleaner.io.buffer.size', 'int', '524288', "Memory of the cleaners' I/O buffers, all threads.", {
    min: 0,
  }),
  dyn('log.cleaner.io.buffer.load.factor', 'double', '0.9', "How full a cleaner's offset map may get."),
  dyn(
    'log.cleaner.io.max.bytes.per.second',
    'double',
    '1.7976931348623157E308',
    'Cleaner I/O (read and write) throttle, bytes per second.',
  ),
  dyn('log.cleaner.backoff.ms', 'long', '15000', 'Cleaner pause when no log needs cleaning.', { min: 0 }),
  // Replication.
  dyn(
    'replica.lag.time.max.ms',
    'long',
    '30000',
    'A follower that has not caught up for this long leaves the ISR (dynamic in Skiff).',
    { min: 1 },
  ),
  // Skiff: the durable ISR/leadership history (src/metadata/isr-history.ts), cluster-wide.
  dyn('skiff.isr.history.max.entries', 'int', '1000', 'ISR changes kept per partition.', { min: 1 }),
  dyn('skiff.isr.history.retention.ms', 'long', '604800000', 'How long an ISR change is kept.', { min: 1 }),
  broker('replica.fetch.max.bytes', 'int', '1048576', 'Bytes per partition a follower fetches at most.', {
    min: 0,
  }),
  broker('replica.fetch.min.bytes', 'int', '1', 'Bytes a follower fetch waits for.', { min: 1 }),
  broker('replica.fetch.wait.max.ms', 'int', '500', 'Longest wait of a follower fetch.', { min: 0 }),
  broker('replica.fetch.backoff.ms', 'int', '1000', 'Back-off after a follower fetch error.', { min: 0 }),
  broker(
    'replica.fetch.response.max.bytes',
    'int',
    '10485760',
    'Bytes a follower fetch response carries at most.',
    { min: 0 },
  ),
  broker('replica.socket.timeout.ms', 'int', '30000', 'Socket timeout of replica fetchers.'),
  broker(
    'replica.high.watermark.checkpoint.interval.ms',
    'long',
    '5000',
    'How often the high watermark is checkpointed.',
    { min: 1 },
  ),
  dyn('num.replica.fetchers', 'int', '1', 'Fetcher threads per source broker.', { min: 1 }),
  dyn(
    'leader.replication.throttled.rate',
    'long',
    LONG_MAX,
    'Bytes/s a leader sends to throttled replicas.',
    { min: 0 },
  ),
  dyn(
    'follower.replication.throttled.rate',
    'long',
    LONG_MAX,
    'Bytes/s a follower fetches for throttled replicas.',
    { min: 0 },
  ),
  dyn(
    'replica.alter.log.dirs.io.max.bytes.per.second',
    'long',
    LONG_MAX,
    'Bytes/s for moving replicas between log dirs.',
    { min: 0 },
  ),
  broker('quota.window.num', 'int', '11', 'Samples kept for client quotas.', { min: 1 }),
  broker('quota.window.size.seconds', 'int', '1', 'Time span of each client quota sample.', { min: 1 }),
  broker('controller.quota.window.num', 'int', '11', 'Samples kept for controller quotas.', { min: 1 }),
  broker('controller.quota.window.size.seconds', 'int', '1', 'Controller quota sample span.', { min: 1 }),
  broker('replication.quota.window.num', 'int', '11', 'Samples kept for replication quotas.', { min: 1 }),
  broker('replication.quota.window.size.seconds', 'int', '1', 'Replication quota sample span.', { min: 1 }),
  broker(
    'alter.log.dirs.replication.quota.window.size.seconds',
    'int',
    '1',
    'Time span of each alter-log-dirs quota sample.',
    { min: 1 },
  ),
  // Topics and cluster.
  broker('auto.create.topics.enable', 'boolean', 'true', 'Create a topic on first use.'),
  broker('num.partitions', 'int', '1', 'Default partition count of a new topic.', { min: 1 }),
  broker('default.replication.factor', 'int', '1', 'Default replication factor of a new topic.'),
  broker('delete.topic.enable', 'boolean', 'true', 'Allow topics to be deleted.'),
  broker(
    'auto.leader.rebalance.enable',
    'boolean',
    'true',
    'Move leadership back to the preferred replica in the background.',
  ),
  broker(
    'leader.imbalance.check.interval.seconds',
    'long',
    '300',
    'How often the controller checks for leader imbalance.',
    { min: 1 },
  ),
  broker(
    'leader.imbalance.per.broker.percentage',
    'int',
    '10',
    'Imbalance per broker that triggers a rebalance.',
  ),
  broker('controlled.shutdown.enable', 'boolean', 'true', 'Move leadership away before a broker shuts down.'),
  broker(
    'broker.session.timeout.ms',
    'int',
    '9000',
    'A broker that sends no heartbeat for this long is fenced.',
  ),
  broker(
    'broker.heartbeat.interval.ms',
    'int',
    '2000',
    'How often a broker sends a heartbeat (keeps its lease alive).',
  ),
  // Groups, offsets, transactions.
  broker(
    'group.initial.rebalance.delay.ms',
    'int',
    '3000',
    'Delay of the first rebalance of an empty group.',
  ),
  broker('group.min.session.timeout.ms', 'int', '6000', 'Smallest session timeout a consumer may ask for.'),
  broker('group.max.session.timeout.ms', 'int', '1800000', 'Largest session timeout a consumer may ask for.'),
  broker('group.max.size', 'int', '2147483647', 'Most members in a consumer group.', { min: 1 }),
  ...CONSUMER_GROUP_BROKER_CONFIGS,
  broker('offsets.topic.replication.factor', 'short', '3', 'Replication factor of __consumer_offsets.', {
    min: 1,
  }),
  broker('offsets.topic.num.partitions', 'int', '50', 'Partitions of __consumer_offsets.', { min: 1 }),
  broker('offsets.topic.segment.bytes', 'int', '104857600', 'Segment size of __consumer_offsets.', {
    min: 1,
  }),
  broker(
    'offsets.retention.minutes',
    'int',
    '10080',
    'How long committed offsets of an empty group are kept.',
    { min: 1 },
  ),
  broker('offsets.commit.timeout.ms', 'int', '5000', 'How long an offset commit waits for replication.', {
    min: 1,
  }),
  ...TRANSACTION_BROKER_CONFIGS,
  dyn('producer.id.expiration.ms', 'int', '86400000', 'How long an idle producer id is kept.', { min: 1 }),
  // Network.
  broker('socket.request.max.bytes', 'int', '104857600', 'Largest request the broker accepts.', { min: 1 }),
  broker('connections.max.idle.ms', 'long', '600000', 'Idle connections are closed after this long.'),
  dyn('max.connections', 'int', '2147483647', 'Most connections the broker accepts.', { min: 0 }),
  dyn('max.connections.per.ip', 'int', '2147483647', 'Most connections from one address.', { min: 0 }),
  broker('request.timeout.ms', 'int', '30000', 'Timeout of inter-broker requests.', { min: 0 }),
];

/**
 * Kafka broker configs Skiff does not take, each with the reason an operator reads when
 * server.properties names one: the broker logs it and goes on without it (as Kafka logs a config
 * it does not know). DescribeConfigs does not list it; set at run time it is a custom config, as
 * any name Kafka does not know.
 */
export const BROKER_CONFIGS_NOT_TAKEN: ReadonlyMap<string, string> = new Map([
  ['num.io.threads', 'a Skiff broker serves every request on its one event loop'],
  ['num.network.threads', 'a Skiff broker serves every connection on its one event loop'],
  [
    'num.recovery.threads.per.data.dir',
    'a Skiff broker loads and recovers its logs on its event loop in slices, keeping its session meanwhile',
  ],
  ['socket.send.buffer.bytes', "Skiff leaves socket buffer sizes to the kernel's autotuning"],
  ['socket.receive.buffer.bytes', "Skiff leaves socket buffer sizes to the kernel's autotuning"],
  ['replica.socket.receive.buffer.bytes', "Skiff leaves socket buffer sizes to the kernel's autotuning"],
  [
    'replica.selector.class',
    'consumers always fetch from the leader (KIP-392 follower fetching is not built)',
  ],
  [
    'alter.log.dirs.replication.quota.window.num',
    'the alter-log-dirs throttle is a token bucket holding one alter.log.dirs.replication.quota.window.size.seconds of the rate',
  ],
]);

export const TOPIC_CONFIG_DEFS: ReadonlyMap<string, ConfigDef> = new Map(
  TOPIC_CONFIGS.map((d) => [d.name, d]),
);
export const BROKER_CONFIG_DEFS: ReadonlyMap<string, ConfigDef> = new Map(
  BROKER_CONFIGS.map((d) => [d.name, d]),
);

/**
 * Broker config → the synonyms its effective value resolves through, highest priority first
 * (log.retention.ms ← log.retention.minutes ← log.retention.hours), with factors relative to the
 * first synonym's unit. Derived from the topic table so the two never drift.
 */
export const BROKER_SYNONYMS: ReadonlyMap<string, readonly Synonym[]> = new Map(
  TOPIC_CONFIGS.filter((t) => (t.synonyms?.length ?? 0) > 1).map((t) => {
    const first = t.synonyms![0]!;
    const base = first.factor ?? 1;
    return [first.name, t.synonyms!.map((s) => ({ name: s.name, factor: (s.factor ?? 1) / base }))];
  }),
);
