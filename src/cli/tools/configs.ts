/** `skiff configs`: Kafka's kafka-configs for topics and brokers (describe, add, delete). */
import {
  Admin,
  AlterOp,
  CONFIG_SOURCE_NAMES,
  type ConfigEntry,
  ConfigResourceType,
} from '../../client/admin.js';
import { ClientError } from '../../client/errors.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { ADMIN_FLAGS, adminClient, type Flags, runTool, type ToolDef, UsageError } from './common.js';
import { alterQuotas, describeQuotas, type QuotaEntityType } from './configs-quotas.js';
import { alterScram, describeScram, isScramAlteration } from './configs-scram.js';

export const CONFIGS: ToolDef = {
  ...commandInfo('configs'),
  usage: [
    'Usage: skiff configs --bootstrap-server <host:port> --entity-type topics|brokers|users|clients',
    '         (--entity-name <name> | --entity-default) (--describe [--all] | --alter --add-config k=v,... --delete-config k,...)',
  ],
  flags: [
    ...ADMIN_FLAGS,
    { name: 'entity-type', arg: 'type', help: 'topics, brokers, users or clients' },
    { name: 'entity-name', arg: 'name', help: 'a topic name, a broker id, a user principal or a client id' },
    { name: 'entity-default', help: 'the cluster-wide default for brokers, users or clients' },
    { name: 'topic', arg: 'topic', help: 'shorthand for --entity-type topics --entity-name <topic>' },
    { name: 'broker', arg: 'id', help: 'shorthand for --entity-type brokers --entity-name <id>' },
    { name: 'broker-defaults', help: 'shorthand for --entity-type brokers --entity-default' },
    { name: 'describe', help: 'list the configs of the entity' },
    { name: 'all', help: 'with --describe: all configs, not only dynamic ones' },
    { name: 'alter', help: 'change the configs of the entity' },
    {
      name: 'add-config',
      arg: 'k=v,k2=[v1,v2]',
      help: 'configs to set; a list value goes in square brackets',
    },
    { name: 'delete-config', arg: 'k1,k2', help: 'configs to remove' },
    { name: 'json', help: 'with --describe: one JSON document instead of text lines' },
  ],
  notes: [
    'users and clients hold client quotas (producer_byte_rate, consumer_byte_rate, request_percentage,',
    'controller_mutation_rate), stored in the cluster metadata and described as Kafka does. Every',
    'broker enforces them as Kafka does (throttle_time_ms in the responses, the connection muted)',
    'from the next request on. controller_mutation_rate counts partitions created, added and deleted',
    "(Kafka's token bucket of controller.quota.window.num x .size.seconds): over it, CreateTopics v6+,",
    'CreatePartitions v3+ and DeleteTopics v5+ answer THROTTLING_QUOTA_EXCEEDED for the topics past',
    'it and change the others; older versions change all and are throttled. A user is the',
    'authenticated SASL user (ANONYMOUS without SASL). One entity type at a time (Kafka also takes a',
    'user and a client id together); entity type ips is not supported.',
    '',
    "users also hold SCRAM credentials: --add-config 'SCRAM-SHA-256=[iterations=8192,password=secret]'",
    '(iterations 4096 by default, at most 16384), --delete-config SCRAM-SHA-512, and --describe lists',
    "each user's mechanisms and iterations, as kafka-configs does through AlterUserScramCredentials /",
    'DescribeUserScramCredentials: the password is salted by the tool and never sent nor stored.',
    '',
    'A stopped broker (registered in the cluster metadata, not live) is described by any live broker',
    'from the metadata: its dynamic configs (per broker and cluster-wide); its server.properties is not',
    "visible. Kafka's admin client sends a broker's request to that broker and times out while it is",
    'down; an operator preparing a restart (e.g. its follower throttle) needs the answer then.',
    '--alter of a stopped broker is stored likewise, for it to apply when it starts.',
    '',
    'replica.lag.time.max.ms is a dynamic broker config in Skiff (per broker or --entity-default),',
    'applied at once; in Kafka it is read-only, changed by a rolling restart. Why: tuning when a',
    'follower leaves the ISR while investigating one should not need restarting the brokers.',
  ],
};

type EntityType = 'topics' | 'brokers' | QuotaEntityType;

/**
 * Kafka's --add-config syntax: pairs split at commas outside square brackets; brackets around a
 * value are dropped (`k=[a,b]` sets `a,b`).
 */
export function parseAddConfig(s: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const pair of s.split(/,(?=[^\]]*(?:\[|$))/)) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0)
      throw new UsageError(
        `Invalid entity config: all configs to be added must be in the format "key=val" (got '${pair}')`,
      );
    let value = pair.slice(eq + 1).trim();
    if (value.startsWith('[') && value.endsWith(']')) value = value.slice(1, -1);
    out.set(pair.slice(0, eq).trim(), value);
  }
  return out;
}

/** Kafka's describe block for one entity ('' is the brokers' cluster default). */
export function formatConfigDescribe(
  entityType: EntityType,
  entity: string,
  describeAll: boolean,
  entries: readonly ConfigEntry[],
): string[] {
  const header =
    entity === ''
      ? `Default configs for ${entityType} in the cluster are:`
      : `${describeAll ? 'All' : 'Dynamic'} configs for ${entityType.slice(0, -1)} ${entity} are:`;
  const lines = [header];
  for (const e of selectEntries(entityType, entity, describeAll, entries)) {
    const synonyms = e.synonyms.map((s) => `${sourceName(s.source)}:${s.name}=${s.value}`).join(', ');
    lines.push(`  ${e.name}=${e.value} sensitive=${e.isSensitive} synonyms={${synonyms}}`);
  }
  return lines;
}

function sourceName(source: number): string {
  return CONFIG_SOURCE_NAMES[source] ?? 'UNKNOWN';
}

/** The entries Kafka's tool shows: only the entity's own dynamic ones unless --all; sorted by name. */
function selectEntries(
  entityType: EntityType,
  entity: string,
  describeAll: boolean,
  entries: readonly ConfigEntry[],
): ConfigEntry[] {
  const dynamicSource = entityType === 'topics' ? 1 : entity === '' ? 3 : 2;
  return entries
    .filter((e) => describeAll || e.configSource === dynamicSource)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

interface Entity {
  type: EntityType;
  /** Absent: every entity of the type (describe only). '' is the broker default. */
  name: string | undefined;
}

function entityFrom(flags: Flags): Entity {
  const shorthands = ['topic', 'broker', 'broker-defaults'].filter((f) => flags.has(f));
  if (shorthands.length > 1 || (shorthands.length === 1 && flags.has('entity-type'))) {
    throw new UsageError(
      'give one entity: --entity-type with --entity-name/--entity-default, or one shorthand',
    );
  }
  if (flags.has('topic')) return { type: 'topics', name: flags.get('topic') };
  if (flags.has('broker')) return { type: 'brokers', name: flags.get('broker') };
  if (flags.has('broker-defaults')) return { type: 'brokers', name: '' };
  const type = flags.get('entity-type');
  if (type === undefined) throw new UsageError('missing required argument --entity-type');
  if (type !== 'topics' && type !== 'brokers' && type !== 'users' && type !== 'clients') {
    if (['ips', 'broker-loggers', 'client-metrics', 'groups'].includes(type)) {
      throw new UsageError(
        `entity type ${type} is not supported by skiff configs yet (topics, brokers, users, clients)`,
      );
    }
    throw new UsageError(`Invalid entity type: ${type}`);
  }
  if (flags.has('entity-name') && flags.has('entity-default')) {
    throw new UsageError('--entity-name and --entity-default cannot both be given');
  }
  if (flags.has('entity-default') && type === 'topics') {
    throw new UsageError('--entity-default is not for topics (topic defaults are broker configs)');
  }
  const name = flags.has('entity-default') ? '' : flags.get('entity-name');
  if (type === 'brokers' && name !== undefined && name !== '' && !/^\d+$/.test(name)) {
    throw new UsageError(`The entity name for brokers must be a valid integer broker id, found: ${name}`);
  }
  return { type, name };
}

function resourceType(t: EntityType): number {
  return t === 'topics' ? ConfigResourceType.topic : ConfigResourceType.broker;
}

export function runConfigs(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(CONFIGS, args, io, async (flags) => {
    if (flags.has('describe') === flags.has('alter')) {
      throw new UsageError('command must include exactly one action: --describe, --alter');
    }
    const entity = entityFrom(flags);
    if (flags.has('alter') && entity.name === undefined) {
      throw new UsageError(
        'an entity name must be specified with --alter (--entity-name or --entity-default)',
      );
    }
    if (flags.has('alter') && !flags.has('add-config') && !flags.has('delete-config')) {
      throw new UsageError('--alter needs --add-config or --delete-config');
    }
    const client = adminClient('configs', flags, runtime);
    try {
      if (entity.type === 'users' || entity.type === 'clients') {
        if (flags.has('describe')) {
          const code = await describeQuotas(client, entity.type, entity.name, flags, io);
          // As kafka-configs: SCRAM credentials too, for users and not for the user default.
          if (entity.type === 'users' && entity.name !== '' && !flags.has('json')) {
            await describeScram(client, entity.name, io);
          }
          return code;
        }
        const toAdd = parseAddConfig(flags.all('add-config').join(','));
        const toDelete = deleteList(flags);
        if (isScramAlteration(entity.type, entity.name!, toAdd, toDelete)) {
          return await alterScram(client, entity.name!, toAdd, toDelete, io);
        }
        return await alterQuotas(
          client,
          entity.type,
          entity.name!,
          parseAddConfig(flags.all('add-config').join(',')),
          deleteList(flags),
          io,
        );
      }
      const admin = new Admin(client);
      return flags.has('alter')
        ? await alter(admin, entity, flags, io)
        : await describe(admin, entity, flags, io);
    } finally {
      client.close();
    }
  });
}

function deleteList(flags: Flags): string[] {
  return flags
    .all('delete-config')
    .join(',')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

async function describe(admin: Admin, entity: Entity, flags: Flags, io: CliIo): Promise<number> {
  const all = flags.has('all');
  let names: string[];
  if (entity.name !== undefined) names = [entity.name];
  else if (entity.type === 'topics') names = await admin.listTopics(true);
  else {
    const cluster = await admin.describeCluster();
    names = [...[...cluster.brokers.keys()].sort((a, b) => a - b).map(String), ''];
  }
  if (all && entity.type === 'brokers' && entity.name !== undefined && entity.name !== '') {
    const cluster = await admin.describeCluster();
    if (!cluster.brokers.has(Number(entity.name))) {
      io.err(
        `skiff configs: broker ${entity.name} is not live: only its configs stored in the cluster metadata are known`,
      );
    }
  }
  const json: { entity: string; configs: Record<string, unknown>[] }[] = [];
  for (const name of names) {
    const entries = await admin.describeConfigs({ type: resourceType(entity.type), name }, true);
    if (flags.has('json')) {
      json.push({
        entity: name,
        configs: selectEntries(entity.type, name, all, entries).map((e) => ({
          name: e.name,
          value: e.value,
          source: sourceName(e.configSource),
          sensitive: e.isSensitive,
          readOnly: e.readOnly,
          synonyms: e.synonyms.map((s) => ({ name: s.name, value: s.value, source: sourceName(s.source) })),
        })),
      });
    } else {
      for (const l of formatConfigDescribe(entity.type, name, all, entries)) io.out(l);
    }
  }
  if (flags.has('json')) io.out(JSON.stringify(json));
  return 0;
}

async function alter(admin: Admin, entity: Entity, flags: Flags, io: CliIo): Promise<number> {
  const name = entity.name!;
  const toAdd = parseAddConfig(flags.all('add-config').join(','));
  const toDelete = flags
    .all('delete-config')
    .join(',')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const resource = { type: resourceType(entity.type), name };
  if (toDelete.length > 0) {
    // As Kafka: deleting a config that is not set is an error, not a silent no-op.
    const current = await admin.describeConfigs(resource, false);
    const dynamicSource = entity.type === 'topics' ? 1 : name === '' ? 3 : 2;
    const set = new Set(current.filter((e) => e.configSource === dynamicSource).map((e) => e.name));
    const invalid = toDelete.filter((k) => !set.has(k));
    if (invalid.length > 0) throw new ClientError(`Invalid config(s): ${invalid.join(',')}`);
  }
  await admin.incrementalAlterConfigs(resource, [
    ...[...toAdd].map(([k, v]) => ({ name: k, op: AlterOp.set, value: v })),
    ...toDelete.map((k) => ({ name: k, op: AlterOp.delete, value: null })),
  ]);
  io.out(
    name === ''
      ? `Completed updating default config for ${entity.type} in the cluster.`
      : `Completed updating config for ${entity.type.slice(0, -1)} ${name}.`,
  );
  return 0;
}
