/** `skiff consumer-groups`: Kafka's kafka-consumer-groups — list, describe with lag, reset offsets, delete. */

import { Admin } from '../../client/admin.js';
import { ClientError } from '../../client/errors.js';
import { GroupAdmin, type GroupDescription } from '../../client/groups.js';
import type { KafkaClient } from '../../client/kafka-client.js';
import type { TopicPartition } from '../../client/partitions.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import { topicPartitionKey } from '../../common/topic-partition.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { ADMIN_FLAGS, adminClient, type Flags, runTool, type ToolDef, UsageError } from './common.js';

export const CONSUMER_GROUPS: ToolDef = {
  ...commandInfo('consumer-groups'),
  usage: [
    'Usage: skiff consumer-groups --bootstrap-server <host:port> --list|--describe|--reset-offsets|--delete [options]',
  ],
  flags: [
    ...ADMIN_FLAGS,
    { name: 'list', help: 'list all consumer groups' },
    { name: 'describe', help: 'describe groups: offsets and lag (default), --members or --state' },
    {
      name: 'reset-offsets',
      help: 'reset committed offsets of an inactive group (dry run unless --execute)',
    },
    { name: 'delete', help: 'delete groups' },
    { name: 'group', arg: 'group', repeat: true, help: 'the group (repeatable)' },
    { name: 'all-groups', help: 'every group' },
    { name: 'members', help: 'with --describe: one line per member' },
    { name: 'offsets', help: 'with --describe: offsets and lag per partition (the default)' },
    { name: 'state', help: 'with --describe: coordinator, assignment strategy, state, members' },
    {
      name: 'topic',
      arg: 'topic[:p1,p2]',
      repeat: true,
      help: 'with --reset-offsets: topic, or topic:partitions',
    },
    { name: 'all-topics', help: 'with --reset-offsets: every partition the group has an offset for' },
    { name: 'to-earliest', help: 'reset to the log start offset' },
    { name: 'to-latest', help: 'reset to the log end offset' },
    { name: 'to-current', help: 'reset to the committed offset' },
    { name: 'to-offset', arg: 'offset', help: 'reset to this offset (kept within the log)' },
    { name: 'shift-by', arg: 'n', help: 'move the committed offset by n (kept within the log)' },
    { name: 'execute', help: 'with --reset-offsets: commit the new offsets' },
    { name: 'dry-run', help: 'with --reset-offsets: only print the new offsets (the default)' },
    { name: 'json', help: 'with --list or --describe (offsets): one JSON document instead of tables' },
  ],
  notes: [
    'Classic consumer groups only; --to-datetime, --by-duration, --from-file and --export are not supported yet.',
  ],
};

const ACTIONS = ['list', 'describe', 'reset-offsets', 'delete'] as const;
const SCENARIOS = ['to-earliest', 'to-latest', 'to-current', 'to-offset', 'shift-by'] as const;

/** Java's %-Ns: left-justified, at least N wide. */
const col = (s: string, width: number) => s.padEnd(width);

export interface OffsetRow {
  group: string;
  topic: string;
  partition: number;
  current: bigint | null;
  logEnd: bigint | null;
  consumerId: string;
  host: string;
  clientId: string;
}

/** Kafka's offsets table: a blank line, the header, one row per partition. */
export function formatOffsetRows(rows: readonly OffsetRow[]): string[] {
  let g = 15;
  let t = 15;
  let c = 15;
  let h = 15;
  for (const r of rows) {
    g = Math.max(g, r.group.length);
    t = Math.max(t, r.topic.length);
    c = Math.max(c, r.consumerId.length);
    h = Math.max(h, r.host.length);
  }
  const line = (f: string[]) =>
    `${col(f[0]!, g)} ${col(f[1]!, t)} ${col(f[2]!, 10)} ${col(f[3]!, 15)} ${col(f[4]!, 15)} ${col(f[5]!, 15)} ${col(f[6]!, c)} ${col(f[7]!, h)} ${f[8]}`;
  const out = [
    '',
    line([
      'GROUP',
      'TOPIC',
      'PARTITION',
      'CURRENT-OFFSET',
      'LOG-END-OFFSET',
      'LAG',
      'CONSUMER-ID',
      'HOST',
      'CLIENT-ID',
    ]),
  ];
  for (const r of rows) {
    const lag = r.current !== null && r.logEnd !== null ? String(r.logEnd - r.current) : '-';
    out.push(
      line([
        r.group,
        r.topic,
        String(r.partition),
        r.current === null ? '-' : String(r.current),
        r.logEnd === null ? '-' : String(r.logEnd),
        lag,
        r.consumerId,
        r.host,
        r.clientId,
      ]),
    );
  }
  return out;
}

/** Kafka's reset table: a blank line, GROUP TOPIC PARTITION NEW-OFFSET. */
export function formatResetRows(
  group: string,
  rows: readonly { tp: TopicPartition; offset: bigint }[],
): string[] {
  const line = (a: string, b: string, c: string, d: string) =>
    `${col(a, 30)} ${col(b, 30)} ${col(c, 10)} ${col(d, 15)}`;
  return [
    '',
    line('GROUP', 'TOPIC', 'PARTITION', 'NEW-OFFSET'),
    ...rows.map((r) => line(group, r.tp.topic, String(r.tp.partition), String(r.offset))),
  ];
}

export function runConsumerGroups(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(CONSUMER_GROUPS, args, io, async (flags) => {
    const actions = ACTIONS.filter((a) => flags.has(a));
    if (actions.length !== 1) {
      throw new UsageError(
        'command must include exactly one action: --list, --describe, --delete, --reset-offsets',
      );
    }
    const action = actions[0]!;
    if (action !== 'list' && !flags.has('group') && !flags.has('all-groups')) {
      throw new UsageError(`option --${action} takes one of these options: --all-groups, --group`);
    }
    const client = adminClient('consumer-groups', flags, runtime);
    try {
      const groups = new GroupAdmin(client);
      const listAll = async () => {
        const { groups: listed, unreachable } = await groups.list();
        for (const [id, e] of unreachable)
          io.err(
            `Warning: broker ${id} did not answer (${e.message}); the groups it coordinates are left out.`,
          );
        return listed;
      };
      const ids = async () =>
        flags.has('all-groups') ? (await listAll()).map((g) => g.groupId) : flags.all('group');
      switch (action) {
        case 'list': {
          const listed = await listAll();
          if (flags.has('json')) io.out(JSON.stringify(listed));
          else for (const g of listed) io.out(g.groupId);
          return 0;
        }
        case 'describe':
          return await describe(client, groups, await ids(), flags, io);
        case 'delete':
          return await remove(groups, await ids(), io);
        case 'reset-offsets':
          return await reset(client, groups, await ids(), flags, io);
      }
    } finally {
      client.close();
    }
  });
}

async function describeOrFail(groups: GroupAdmin, id: string): Promise<GroupDescription> {
  const d = await groups.describe(id);
  if (d.state === 'Dead') throw new ClientError(`Consumer group '${id}' does not exist.`);
  return d;
}

async function describe(
  client: KafkaClient,
  groups: GroupAdmin,
  ids: string[],
  flags: Flags,
  io: CliIo,
): Promise<number> {
  const admin = new Admin(client);
  const json: unknown[] = [];
  for (const id of ids) {
    const d = await describeOrFail(groups, id);
    if (d.state === 'Empty') io.err(`Consumer group '${id}' has no active members.`);
    else if (d.state !== 'Stable') io.err(`Warning: Consumer group '${id}' is rebalancing.`);
    if (flags.has('state')) {
      const md = await client.metadataFor([]);
      const hp = md.brokers.get(d.coordinator);
      const coordinator = `${hp ? `${hp.host}:${hp.port}` : '-'} (${d.coordinator})`;
      const w = Math.max(25, id.length);
      const w2 = Math.max(25, coordinator.length);
      io.out('');
      io.out(
        `${col('GROUP', w)} ${col('COORDINATOR (ID)', w2)} ${col('ASSIGNMENT-STRATEGY', 20)} ${col('STATE', 15)} #MEMBERS`,
      );
      io.out(
        `${col(id, w)} ${col(coordinator, w2)} ${col(d.protocol, 20)} ${col(d.state, 15)} ${d.members.length}`,
      );
      continue;
    }
    if (flags.has('members')) {
      let g = 15;
      let c = 15;
      let h = 15;
      let cl = 15;
      for (const m of d.members) {
        g = Math.max(g, id.length);
        c = Math.max(c, m.memberId.length);
        h = Math.max(h, m.host.length);
        cl = Math.max(cl, m.clientId.length);
      }
      io.out('');
      io.out(
        `${col('GROUP', g)} ${col('CONSUMER-ID', c)} ${col('HOST', h)} ${col('CLIENT-ID', cl)} ${col('#PARTITIONS', 15)} `,
      );
      for (const m of d.members) {
        io.out(
          `${col(id, g)} ${col(m.memberId, c)} ${col(m.host, h)} ${col(m.clientId, cl)} ${col(String(m.assignment.length), 15)} `,
        );
      }
      continue;
    }
    const committed = await groups.committedOffsets(id);
    const rows: OffsetRow[] = [];
    const assigned = new Set<string>();
    const members = [...d.members]
      .filter((m) => m.assignment.length > 0)
      .sort((a, b) => b.assignment.length - a.assignment.length);
    const pending: { tp: TopicPartition; consumerId: string; host: string; clientId: string }[] = [];
    for (const m of members) {
      for (const tp of [...m.assignment].sort((a, b) => a.partition - b.partition)) {
        assigned.add(topicPartitionKey(tp.topic, tp.partition));
        pending.push({ tp, consumerId: m.memberId, host: m.host, clientId: m.clientId });
      }
    }
    const unassigned = [...committed.values()].filter(
      (c) => !assigned.has(topicPartitionKey(c.tp.topic, c.tp.partition)),
    );
    for (const c of unassigned.sort((a, b) => a.tp.partition - b.tp.partition)) {
      pending.push({ tp: c.tp, consumerId: '-', host: '-', clientId: '-' });
    }
    const ends =
      pending.length === 0
        ? new Map()
        : await admin.listOffsets(
            pending.map((p) => p.tp),
            -1n,
          );
    for (const p of pending) {
      const key = topicPartitionKey(p.tp.topic, p.tp.partition);
      const end = ends.get(key);
      rows.push({
        group: id,
        topic: p.tp.topic,
        partition: p.tp.partition,
        current: committed.get(key)?.offset ?? null,
        logEnd: end?.ok ? end.value : null,
        consumerId: p.consumerId,
        host: p.host,
        clientId: p.clientId,
      });
    }
    if (flags.has('json')) {
      json.push({
        group: id,
        state: d.state,
        partitions: rows.map((r) => ({
          topic: r.topic,
          partition: r.partition,
          currentOffset: r.current === null ? null : Number(r.current),
          logEndOffset: r.logEnd === null ? null : Number(r.logEnd),
          lag: r.current === null || r.logEnd === null ? null : Number(r.logEnd - r.current),
          consumerId: r.consumerId === '-' ? null : r.consumerId,
          host: r.host === '-' ? null : r.host,
          clientId: r.clientId === '-' ? null : r.clientId,
        })),
      });
    } else {
      for (const l of formatOffsetRows(rows)) io.out(l);
    }
  }
  if (flags.has('json')) io.out(JSON.stringify(json));
  return 0;
}

async function remove(groups: GroupAdmin, ids: string[], io: CliIo): Promise<number> {
  const results = await groups.delete(ids);
  const ok = ids.filter((id) => results.get(id) === null);
  const failed = ids.filter((id) => results.get(id) !== null);
  if (failed.length === 0) {
    io.out(`Deletion of requested consumer groups ('${ok.join(', ')}') was successful.`);
    return 0;
  }
  io.out('Deletion of some consumer groups failed:');
  for (const id of failed) io.out(`* Group '${id}' could not be deleted due to: ${results.get(id)!.message}`);
  if (ok.length > 0) io.out(`These consumer groups were deleted successfully: '${ok.join("', '")}'`);
  return 1;
}

function parseTopicArgs(topics: readonly string[], client: KafkaClient): Promise<TopicPartition[]> {
  return (async () => {
    const out: TopicPartition[] = [];
    for (const t of topics) {
      const colon = t.indexOf(':');
      if (colon >= 0) {
        const name = t.slice(0, colon);
        for (const p of t.slice(colon + 1).split(',')) {
          if (!/^\d+$/.test(p.trim())) throw new UsageError(`invalid partition '${p}' in --topic ${t}`);
          out.push({ topic: name, partition: Number(p) });
        }
      } else {
        const md = await client.retry(() => client.fetchMetadata([t]));
        const tm = md.topics.get(t);
        if (tm?.errorCode !== 0) throw new ClientError(`Topic '${t}' does not exist`);
        for (const p of tm.partitions) out.push({ topic: t, partition: p.partition });
      }
    }
    return out;
  })();
}

async function reset(
  client: KafkaClient,
  groups: GroupAdmin,
  ids: string[],
  flags: Flags,
  io: CliIo,
): Promise<number> {
  const scenarios = SCENARIOS.filter((s) => flags.has(s));
  if (scenarios.length !== 1) {
    throw new UsageError(`--reset-offsets needs exactly one of ${SCENARIOS.map((s) => `--${s}`).join(', ')}`);
  }
  if (flags.has('topic') === flags.has('all-topics')) {
    throw new UsageError('--reset-offsets needs one of --topic, --all-topics');
  }
  if (flags.has('execute') && flags.has('dry-run'))
    throw new UsageError('--execute and --dry-run cannot be combined');
  const scenario = scenarios[0]!;
  const target =
    scenario === 'to-offset' ? flags.int('to-offset')! : scenario === 'shift-by' ? flags.int('shift-by')! : 0;
  const admin = new Admin(client);
  if (!flags.has('execute') && !flags.has('dry-run')) {
    io.out('WARN: No action will be performed as the --execute option is missing.');
  }
  let status = 0;
  for (const id of ids) {
    const d = await groups.describe(id);
    if (d.state !== 'Empty' && d.state !== 'Dead') {
      io.err(
        `Error: Assignments can only be reset if the group '${id}' is inactive, but the current state is ${d.state}.`,
      );
      status = 1;
      continue;
    }
    const committed = await groups.committedOffsets(id);
    const tps = flags.has('all-topics')
      ? [...committed.values()].map((c) => c.tp)
      : await parseTopicArgs(flags.all('topic'), client);
    if (tps.length === 0) continue;
    const [earliest, latest] = await Promise.all([admin.listOffsets(tps, -2n), admin.listOffsets(tps, -1n)]);
    const rows: { tp: TopicPartition; offset: bigint }[] = [];
    for (const tp of tps) {
      const key = topicPartitionKey(tp.topic, tp.partition);
      const lo = earliest.get(key);
      const hi = latest.get(key);
      if (!lo?.ok) throw lo?.error ?? new ClientError(`no log start offset for ${key}`);
      if (!hi?.ok) throw hi?.error ?? new ClientError(`no log end offset for ${key}`);
      const current = committed.get(key)?.offset;
      let offset: bigint;
      if (scenario === 'to-earliest') offset = lo.value;
      else if (scenario === 'to-latest') offset = hi.value;
      else if (scenario === 'to-current') offset = current ?? hi.value;
      else if (scenario === 'to-offset') offset = BigInt(target);
      else offset = (current ?? lo.value) + BigInt(target);
      // As Kafka: an offset outside the log moves to its nearest end.
      if (offset < lo.value) offset = lo.value;
      if (offset > hi.value) offset = hi.value;
      rows.push({ tp, offset });
    }
    if (flags.has('execute')) await groups.commitOffsets(id, rows);
    for (const l of formatResetRows(id, rows)) io.out(l);
  }
  return status;
}
