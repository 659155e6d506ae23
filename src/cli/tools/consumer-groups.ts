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
import { resetOffsets } from './consumer-groups-reset.js';

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
      name: 'verbose',
      help: 'with --describe --members: assignments (a consumer-protocol group: current and target, with epochs); with --state: the group and target assignment epochs',
    },
    {
      name: 'topic',
      arg: 'topic[:p1,p2]',
      repeat: true,
      help: 'with --reset-offsets: topic, or topic:partitions',
    },
    { name: 'all-topics', help: 'with --reset-offsets: every partition the group has an offset for' },
    {
      name: 'to-datetime',
      arg: 'yyyy-MM-ddTHH:mm:ss.SSS',
      help: 'reset to the first offset at or after this time (zone Z, +hh or +hh:mm; UTC if none)',
    },
    {
      name: 'by-duration',
      arg: 'PnDTnHnMnS',
      help: 'reset to the first offset at or after now minus this ISO-8601 duration',
    },
    { name: 'to-earliest', help: 'reset to the log start offset' },
    { name: 'to-latest', help: 'reset to the log end offset' },
    { name: 'to-current', help: 'reset to the committed offset' },
    { name: 'to-offset', arg: 'offset', help: 'reset to this offset (kept within the log)' },
    { name: 'shift-by', arg: 'n', help: 'move the committed offset by n (kept within the log)' },
    {
      name: 'from-file',
      arg: 'file',
      help: 'reset to the offsets of a CSV file: topic,partition,offset (group,topic,partition,offset for several groups), as --export writes it',
    },
    { name: 'export', help: 'with --reset-offsets: print the plan as CSV instead of the table' },
    { name: 'execute', help: 'with --reset-offsets: commit the new offsets' },
    { name: 'dry-run', help: 'with --reset-offsets: only print the new offsets (the default)' },
    { name: 'json', help: 'with --list or --describe (offsets): one JSON document instead of tables' },
  ],
  notes: [
    'Classic and consumer-protocol (KIP-848) groups; the latter are described with ConsumerGroupDescribe.',
    '--list and --all-groups leave out the groups of a broker that does not answer (stopped, not yet',
    "fenced), naming it in a warning line; Kafka's tool waits out its timeout and fails. Why: a",
    'broker is down exactly when an operator investigates, and the live brokers can still answer.',
  ],
};

const ACTIONS = ['list', 'describe', 'reset-offsets', 'delete'] as const;

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
        for (const [id, e] of [...unreachable].sort((x, y) => x[0] - y[0]))
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
          return await resetOffsets(
            { client, admin: new Admin(client), groups, io, nowMs: () => runtime.clock.nowMs() },
            await ids(),
            flags,
          );
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
      // A consumer-protocol group's epochs with --verbose, as Kafka 4's tool prints them.
      const epochs = flags.has('verbose') && d.type === 'consumer';
      io.out('');
      io.out(
        `${col('GROUP', w)} ${col('COORDINATOR (ID)', w2)} ${col('ASSIGNMENT-STRATEGY', 20)} ${col('STATE', 15)} ${epochs ? `${col('GROUP-EPOCH', 15)} ${col('TARGET-ASSIGNMENT-EPOCH', 25)} ` : ''}#MEMBERS`,
      );
      io.out(
        `${col(id, w)} ${col(coordinator, w2)} ${col(d.protocol, 20)} ${col(d.state, 15)} ${epochs ? `${col(String(d.groupEpoch), 15)} ${col(String(d.targetAssignmentEpoch), 25)} ` : ''}${d.members.length}`,
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
      const extra = memberColumns(d, flags.has('verbose'));
      io.out('');
      io.out(
        `${col('GROUP', g)} ${col('CONSUMER-ID', c)} ${col('HOST', h)} ${col('CLIENT-ID', cl)} ${col('#PARTITIONS', 15)} ${extra.header}`,
      );
      d.members.forEach((m, i) => {
        io.out(
          `${col(id, g)} ${col(m.memberId, c)} ${col(m.host, h)} ${col(m.clientId, cl)} ${col(String(m.assignment.length), 15)} ${extra.rows[i]}`,
        );
      });
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

/** Partitions as `topic:0,1,2`, topics joined by `;` ("-" for none). */
function formatAssignment(tps: readonly TopicPartition[]): string {
  if (tps.length === 0) return '-';
  const byTopic = new Map<string, number[]>();
  for (const tp of tps) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
  return [...byTopic]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([t, ps]) => `${t}:${ps.sort((x, y) => x - y).join(',')}`)
    .join(';');
}

/**
 * --members --verbose's last columns: a classic member's ASSIGNMENT; a consumer-protocol member's
 * CURRENT-EPOCH, CURRENT-ASSIGNMENT, TARGET-EPOCH and TARGET-ASSIGNMENT.
 */
function memberColumns(d: GroupDescription, verbose: boolean): { header: string; rows: string[] } {
  if (!verbose) return { header: '', rows: d.members.map(() => '') };
  if (d.type === 'classic')
    return { header: 'ASSIGNMENT', rows: d.members.map((m) => formatAssignment(m.assignment)) };
  const current = d.members.map((m) => formatAssignment(m.assignment));
  const w = Math.max(20, ...current.map((x) => x.length));
  return {
    header: `${col('CURRENT-EPOCH', 15)} ${col('CURRENT-ASSIGNMENT', w)} ${col('TARGET-EPOCH', 15)} TARGET-ASSIGNMENT`,
    rows: d.members.map(
      (m, i) =>
        `${col(String(m.memberEpoch), 15)} ${col(current[i]!, w)} ${col(String(d.targetAssignmentEpoch), 15)} ${formatAssignment(m.targetAssignment ?? [])}`,
    ),
  };
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
