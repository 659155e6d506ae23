/** `skiff topics`: Kafka's kafka-topics.sh — create, list, describe, alter (partitions), delete. */

import {
  Admin,
  type ConfigEntry,
  ConfigResourceType,
  type PartitionReassignment,
} from '../../client/admin.js';
import { ClientError } from '../../client/errors.js';
import {
  type PartitionMetadata,
  type TopicMetadata,
  UnsupportedApiError,
} from '../../client/kafka-client.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import { ZERO_UUID } from '../../protocol/uuid.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { ADMIN_FLAGS, adminClient, type Flags, runTool, type ToolDef, UsageError } from './common.js';

export const TOPICS: ToolDef = {
  ...commandInfo('topics'),
  usage: [
    'Usage: skiff topics --bootstrap-server <host:port> --create|--list|--describe|--alter|--delete [options]',
  ],
  flags: [
    ...ADMIN_FLAGS,
    { name: 'create', help: 'create a new topic' },
    { name: 'list', help: 'list all available topics' },
    { name: 'describe', help: 'list details for the given topics' },
    { name: 'alter', help: 'increase the number of partitions (topic configs: skiff configs)' },
    { name: 'delete', help: 'delete a topic' },
    { name: 'topic', arg: 'topic', help: 'the topic; a regular expression except with --create' },
    { name: 'partitions', arg: 'n', help: 'partitions to create, or to increase to with --alter' },
    { name: 'replication-factor', arg: 'n', help: 'replicas per partition (--create)' },
    { name: 'replica-assignment', arg: 'b1:b2,b3:b4', help: 'manual assignment, partitions comma-separated' },
    {
      name: 'config',
      arg: 'name=value',
      repeat: true,
      help: 'a topic config override for --create (repeatable)',
    },
    { name: 'under-replicated-partitions', help: 'with --describe: only partitions with ISR < replicas' },
    {
      name: 'unavailable-partitions',
      help: 'with --describe: only partitions whose leader is not available',
    },
    {
      name: 'under-min-isr-partitions',
      help: 'with --describe: only partitions with ISR < min.insync.replicas',
    },
    {
      name: 'at-min-isr-partitions',
      help: 'with --describe: only partitions with ISR = min.insync.replicas',
    },
    { name: 'topics-with-overrides', help: 'with --describe: only topics that have config overrides' },
    { name: 'if-exists', help: 'with --alter/--delete/--describe: do nothing if the topic does not exist' },
    { name: 'if-not-exists', help: 'with --create: do nothing if the topic exists' },
    { name: 'exclude-internal', help: 'with --list/--describe: leave out internal topics' },
    { name: 'json', help: 'with --list/--describe: one JSON document instead of text lines' },
  ],
};

const ACTIONS = ['create', 'list', 'describe', 'alter', 'delete'] as const;
const REPORTS = [
  'under-replicated-partitions',
  'unavailable-partitions',
  'under-min-isr-partitions',
  'at-min-isr-partitions',
] as const;

export function runTopics(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(TOPICS, args, io, async (flags) => {
    const actions = ACTIONS.filter((a) => flags.has(a));
    if (actions.length !== 1) {
      throw new UsageError(
        'command must include exactly one action: --list, --describe, --create, --alter or --delete',
      );
    }
    const action = actions[0]!;
    checkFlagCombinations(flags, action);
    const client = adminClient('topics', flags, runtime);
    try {
      const admin = new Admin(client);
      switch (action) {
        case 'create':
          return await create(admin, flags, io);
        case 'list':
          return await list(admin, flags, io);
        case 'describe':
          return await describe(admin, flags, io);
        case 'alter':
          return await alter(admin, flags);
        case 'delete':
          return await remove(admin, flags);
      }
    } finally {
      client.close();
    }
  });
}

function checkFlagCombinations(flags: Flags, action: string): void {
  const only = (flag: string, allowed: readonly string[]) => {
    if (flags.has(flag) && !allowed.includes(action)) {
      throw new UsageError(
        `option '--${flag}' can only be used with ${allowed.map((a) => `--${a}`).join(' or ')}`,
      );
    }
  };
  only('config', ['create']);
  only('partitions', ['create', 'alter']);
  only('replication-factor', ['create']);
  only('replica-assignment', ['create', 'alter']);
  for (const r of REPORTS) only(r, ['describe']);
  only('topics-with-overrides', ['describe']);
  only('if-exists', ['alter', 'delete', 'describe']);
  only('if-not-exists', ['create']);
  only('exclude-internal', ['list', 'describe']);
  only('json', ['list', 'describe']);
  if (!['list', 'describe'].includes(action) && !flags.has('topic')) {
    throw new UsageError('missing required argument --topic');
  }
  if (action === 'alter' && !flags.has('partitions'))
    throw new UsageError('missing required argument --partitions');
  if (
    action === 'create' &&
    flags.has('replica-assignment') &&
    (flags.has('partitions') || flags.has('replication-factor'))
  ) {
    throw new UsageError(
      'option --replica-assignment cannot be used with --partitions or --replication-factor',
    );
  }
}

/** Kafka's --replica-assignment: partitions separated by ',', replicas of one partition by ':'. */
export function parseReplicaAssignment(s: string): number[][] {
  const out: number[][] = [];
  for (const part of s.split(',')) {
    const brokers = part.split(':').map((b) => {
      if (!/^\s*\d+\s*$/.test(b)) throw new UsageError(`invalid broker id '${b}' in --replica-assignment`);
      return Number(b);
    });
    const dups = brokers.filter((b, i) => brokers.indexOf(b) !== i);
    if (dups.length > 0) {
      throw new UsageError(
        `Partition replica lists may not contain duplicate entries: ${[...new Set(dups)].join(',')}`,
      );
    }
    if (out.length > 0 && brokers.length !== out[0]!.length) {
      throw new UsageError(
        `Partition ${out.length} has different replication factor: [${brokers.join(', ')}]`,
      );
    }
    out.push(brokers);
  }
  return out;
}

/** Kafka's --config parsing: `name=value`, spaces around '=' ignored. */
export function parseTopicConfigs(pairs: readonly string[]): Map<string, string> {
  const m = new Map<string, string>();
  for (const p of pairs) {
    const parts = p.split(/\s*=\s*/);
    if (parts.length !== 2 || parts[0]!.trim() === '') {
      throw new UsageError(
        `Invalid topic config: all configs to be added must be in the format "key=val" (got '${p}')`,
      );
    }
    m.set(parts[0]!.trim(), parts[1]!.trim());
  }
  return m;
}

async function create(admin: Admin, flags: Flags, io: CliIo): Promise<number> {
  const name = flags.require('topic');
  const partitions = flags.int('partitions');
  const rf = flags.int('replication-factor');
  if (rf !== undefined && (rf < 1 || rf > 32767)) {
    throw new UsageError('The replication factor must be between 1 and 32767 inclusive');
  }
  if (partitions !== undefined && partitions < 1)
    throw new UsageError('The partitions must be greater than 0');
  const ra = flags.get('replica-assignment');
  const assignments = ra ? parseReplicaAssignment(ra) : undefined;
  const configs = parseTopicConfigs(flags.all('config'));
  if (name.includes('.') || name.includes('_')) {
    io.out(
      "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide. To avoid issues it is best to use either, but not both.",
    );
  }
  const [result] = await admin.createTopics([
    { name, numPartitions: partitions ?? -1, replicationFactor: rf ?? -1, assignments, configs },
  ]);
  if (result?.error) {
    if (result.error.code === ErrorCode.TOPIC_ALREADY_EXISTS && flags.has('if-not-exists')) return 0;
    throw result.error;
  }
  io.out(`Created topic ${name}.`);
  return 0;
}

/** Kafka's IncludeList: a regex, with ',' meaning '|', matched against the whole name. */
function topicFilter(pattern: string | undefined): (name: string) => boolean {
  if (pattern === undefined || pattern === '') return () => true;
  const cleaned = pattern.trim().replaceAll(',', '|').replaceAll(' ', '').replaceAll('"', '');
  let re: RegExp;
  try {
    re = new RegExp(`^(?:${cleaned})$`);
  } catch {
    throw new UsageError(`invalid topic pattern '${pattern}'`);
  }
  return (name) => re.test(name);
}

async function matchingTopics(admin: Admin, flags: Flags, requireExists: boolean): Promise<string[]> {
  const pattern = flags.get('topic');
  const all = await admin.listTopics(!flags.has('exclude-internal'));
  const found = all.filter(topicFilter(pattern));
  if (pattern !== undefined && pattern !== '' && requireExists && found.length === 0) {
    throw new ClientError(`Topic '${pattern}' does not exist as expected`);
  }
  return found;
}

async function list(admin: Admin, flags: Flags, io: CliIo): Promise<number> {
  const topics = await matchingTopics(admin, flags, false);
  if (flags.has('json')) io.out(JSON.stringify(topics));
  else for (const t of topics) io.out(t);
  return 0;
}

async function alter(admin: Admin, flags: Flags): Promise<number> {
  const topics = await matchingTopics(admin, flags, !flags.has('if-exists'));
  if (topics.length === 0) return 0;
  const count = flags.int('partitions')!;
  const ra = flags.get('replica-assignment');
  const assignment = ra ? parseReplicaAssignment(ra) : undefined;
  const described = await admin.describeTopics(topics);
  const increases = new Map<string, { count: number; assignments?: number[][] }>();
  for (const t of topics) {
    const d = described.get(t);
    if (!d || d instanceof Error) throw d ?? new ClientError(`Topic '${t}' does not exist as expected`);
    // Like Kafka, the assignment lists every partition; only the new ones are sent.
    increases.set(t, { count, assignments: assignment?.slice(d.partitions.length) });
  }
  const results = await admin.createPartitions(increases);
  const failed = results.find((r) => r.error);
  if (failed?.error) throw failed.error;
  return 0;
}

async function remove(admin: Admin, flags: Flags): Promise<number> {
  const topics = await matchingTopics(admin, flags, !flags.has('if-exists'));
  if (topics.length === 0) return 0;
  const results = await admin.deleteTopics(topics);
  const failed = results.find((r) => r.error);
  if (failed?.error) throw failed.error;
  return 0;
}

/** One topic as describe prints it. */
export interface TopicDescription {
  readonly topic: TopicMetadata;
  /** Entries not at their default (Kafka's !isDefault()), in the broker's order. */
  readonly configs: readonly { name: string; value: string | null }[];
  readonly minIsr: number;
  /** Partitions being reassigned (ListPartitionReassignments), by partition index. */
  readonly reassignments?: ReadonlyMap<number, PartitionReassignment>;
}

export interface DescribeFilters {
  readonly underReplicated: boolean;
  readonly unavailable: boolean;
  readonly underMinIsr: boolean;
  readonly atMinIsr: boolean;
  readonly withOverrides: boolean;
  readonly liveBrokers: ReadonlySet<number>;
}

/** Kafka's describe lines for topics (header line, then one line per partition). */
export function formatDescribe(topics: readonly TopicDescription[], f: DescribeFilters): string[] {
  const anyReport = f.underReplicated || f.unavailable || f.underMinIsr || f.atMinIsr;
  const lines: string[] = [];
  for (const d of topics) {
    const t = d.topic;
    if (!anyReport && (!f.withOverrides || d.configs.length > 0) && t.partitions.length > 0) {
      const configs = d.configs.map((c) => `${c.name}=${c.value}`).join(',');
      const id = t.topicId !== ZERO_UUID && t.topicId !== '' ? `\tTopicId: ${t.topicId}` : '';
      lines.push(
        `Topic: ${t.name}${id}\tPartitionCount: ${t.partitions.length}\tReplicationFactor: ${replicationFactor(d, t.partitions[0]!)}\tConfigs: ${configs}`,
      );
    }
    if (f.withOverrides) continue;
    for (const p of t.partitions) {
      if (!partitionShown(d, p, f)) continue;
      const r = d.reassignments?.get(p.partition);
      // As Kafka's tool: the two columns only for a partition being reassigned.
      const moving = r
        ? `\tAdding Replicas: ${r.addingReplicas.join(',')}\tRemoving Replicas: ${r.removingReplicas.join(',')}`
        : '';
      lines.push(
        `\tTopic: ${t.name}\tPartition: ${p.partition}\tLeader: ${p.leader >= 0 ? p.leader : 'none'}\tReplicas: ${p.replicas.join(',')}\tIsr: ${p.isr.join(',')}${moving}\tElr: \tLastKnownElr: `,
      );
    }
  }
  return lines;
}

/** Kafka's getReplicationFactor: during a reassignment the replicas being added do not count. */
function replicationFactor(d: TopicDescription, p: PartitionMetadata): number {
  const r = d.reassignments?.get(p.partition);
  return r && r.addingReplicas.length > 0 ? r.replicas.length - r.addingReplicas.length : p.replicas.length;
}

/** Whether the report flags select a partition (all partitions without any). */
function partitionShown(d: TopicDescription, p: PartitionMetadata, f: DescribeFilters): boolean {
  const anyReport = f.underReplicated || f.unavailable || f.underMinIsr || f.atMinIsr;
  const hasLeader = p.leader >= 0;
  return (
    !anyReport ||
    (f.underReplicated && replicationFactor(d, p) - p.isr.length > 0) ||
    (f.unavailable && (!hasLeader || !f.liveBrokers.has(p.leader))) ||
    (f.underMinIsr && (!hasLeader || p.isr.length < d.minIsr)) ||
    (f.atMinIsr && p.isr.length === d.minIsr)
  );
}

async function topicConfigs(admin: Admin, name: string): Promise<ConfigEntry[] | null> {
  try {
    return await admin.describeConfigs({ type: ConfigResourceType.topic, name }, false);
  } catch (e) {
    // A broker without DescribeConfigs still gets partitions described; configs print empty.
    if (e instanceof UnsupportedApiError) return null;
    throw e;
  }
}

/** The topic's partitions being reassigned; none from a broker without ListPartitionReassignments. */
async function topicReassignments(
  admin: Admin,
  t: TopicMetadata,
): Promise<Map<number, PartitionReassignment>> {
  try {
    const all = await admin.listPartitionReassignments(
      t.partitions.map((p) => ({ topic: t.name, partition: p.partition })),
    );
    return new Map([...all.values()].map((r) => [r.partition, r]));
  } catch (e) {
    if (e instanceof UnsupportedApiError) return new Map();
    throw e;
  }
}

async function describe(admin: Admin, flags: Flags, io: CliIo): Promise<number> {
  const names = await matchingTopics(admin, flags, !flags.has('if-exists'));
  const described = await admin.describeTopics(names);
  const cluster = await admin.describeCluster();
  const out: TopicDescription[] = [];
  for (const name of names) {
    const t = described.get(name);
    if (!t) continue;
    if (t instanceof Error) throw t;
    const entries = await topicConfigs(admin, name);
    const configs = (entries ?? []).filter((e) => e.configSource !== 5 && !e.isDefault);
    const minIsr = Number(entries?.find((e) => e.name === 'min.insync.replicas')?.value ?? '1');
    out.push({
      topic: t,
      configs: configs.map((c) => ({ name: c.name, value: c.value })),
      minIsr,
      reassignments: await topicReassignments(admin, t),
    });
  }
  const filters: DescribeFilters = {
    underReplicated: flags.has('under-replicated-partitions'),
    unavailable: flags.has('unavailable-partitions'),
    underMinIsr: flags.has('under-min-isr-partitions'),
    atMinIsr: flags.has('at-min-isr-partitions'),
    withOverrides: flags.has('topics-with-overrides'),
    liveBrokers: new Set(cluster.brokers.keys()),
  };
  if (flags.has('json')) {
    io.out(JSON.stringify(describeJson(out, filters)));
    return 0;
  }
  for (const l of formatDescribe(out, filters)) io.out(l);
  return 0;
}

function describeJson(topics: readonly TopicDescription[], f: DescribeFilters): unknown {
  return topics.map((d) => ({
    topic: d.topic.name,
    topicId: d.topic.topicId,
    partitionCount: d.topic.partitions.length,
    replicationFactor: d.topic.partitions[0] ? replicationFactor(d, d.topic.partitions[0]) : 0,
    configs: Object.fromEntries(d.configs.map((c) => [c.name, c.value])),
    partitions: d.topic.partitions
      .filter((p) => partitionShown(d, p, f))
      .map((p) => ({
        partition: p.partition,
        leader: p.leader >= 0 ? p.leader : null,
        replicas: p.replicas,
        isr: p.isr,
        ...(d.reassignments?.has(p.partition)
          ? {
              addingReplicas: d.reassignments.get(p.partition)!.addingReplicas,
              removingReplicas: d.reassignments.get(p.partition)!.removingReplicas,
            }
          : {}),
        elr: [],
        lastKnownElr: [],
      })),
  }));
}
