/**
 * `skiff consumer-groups --reset-offsets`, as kafka-consumer-groups.sh resets: the scenarios
 * (--to-earliest, --to-latest, --to-current, --to-offset, --shift-by, --to-datetime, --by-duration,
 * --from-file), the dry run or --execute, and the plan as Kafka's table or, with --export, as its
 * CSV (`topic,partition,offset`, or `group,topic,partition,offset` for more than one group), which
 * --from-file reads back.
 */
import type { Admin } from '../../client/admin.js';
import { ClientError } from '../../client/errors.js';
import type { GroupAdmin } from '../../client/groups.js';
import type { KafkaClient } from '../../client/kafka-client.js';
import type { PartitionResult, TopicPartition } from '../../client/partitions.js';
import { topicPartitionKey } from '../../common/topic-partition.js';
import type { CliIo } from '../cli.js';
import { type Flags, readTextFile, UsageError } from './common.js';

export const RESET_SCENARIOS = [
  'to-datetime',
  'by-duration',
  'to-earliest',
  'to-latest',
  'to-current',
  'to-offset',
  'shift-by',
  'from-file',
] as const;

type Scenario = (typeof RESET_SCENARIOS)[number];

/** A reset plan: group → partition key → the partition and its new offset. */
export type ResetPlan = Map<string, Map<string, { tp: TopicPartition; offset: bigint }>>;

const DATETIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})(Z|[+-]\d{2}(?::?\d{2})?)$/;

/**
 * Kafka's Utils.getDateTime: `yyyy-MM-ddTHH:mm:ss.SSS` and a zone (`Z`, `+hh`, `+hhmm` or
 * `+hh:mm`), UTC when none is given; fields checked strictly (no 31 April, no hour 24).
 */
export function parseDateTime(text: string): number {
  const zoned = /T.*[+\-Z]/.test(text) ? text : `${text}Z`;
  const m = DATETIME.exec(zoned);
  const bad = () =>
    new UsageError(
      `invalid --to-datetime '${text}' (expected yyyy-MM-ddTHH:mm:ss.SSS, optionally followed by Z, +hh or +hh:mm)`,
    );
  if (m === null) throw bad();
  const [y, mo, d, h, mi, s, ms] = m.slice(1, 8).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const local = Date.UTC(y, mo - 1, d, h, mi, s, ms);
  const back = new Date(local);
  if (
    back.getUTCFullYear() !== y ||
    back.getUTCMonth() !== mo - 1 ||
    back.getUTCDate() !== d ||
    back.getUTCHours() !== h ||
    back.getUTCMinutes() !== mi ||
    back.getUTCSeconds() !== s
  )
    throw bad();
  const zone = m[8]!;
  if (zone === 'Z') return local;
  const sign = zone.startsWith('-') ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  const offsetMin = Number(digits.slice(0, 2)) * 60 + (digits.length > 2 ? Number(digits.slice(2)) : 0);
  if (Number(digits.slice(0, 2)) > 18 || (digits.length > 2 && Number(digits.slice(2)) > 59)) throw bad();
  return local - sign * offsetMin * 60_000;
}

const DURATION =
  /^([-+]?)P(?:([-+]?\d+)D)?(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?$/i;

/** Java's Duration.parse (ISO-8601 `PnDTnHnMn.nS`, signs allowed), in milliseconds. */
export function parseDuration(text: string): number {
  const m = DURATION.exec(text);
  // At least one part, and a T only with a time part after it.
  if (m === null || m[3] === 'T' || m[3] === 't' || (m[2] ?? m[4] ?? m[5] ?? m[6]) === undefined) {
    throw new UsageError(
      `invalid --by-duration '${text}' (expected an ISO-8601 duration PnDTnHnMnS, e.g. P1DT2H)`,
    );
  }
  const n = (v: string | undefined) => (v === undefined ? 0 : Number(v));
  const seconds = n(m[6]);
  let fractionMs = m[7] === undefined || m[7] === '' ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000);
  if (m[6]?.startsWith('-')) fractionMs = -fractionMs;
  const ms = n(m[2]) * 86_400_000 + n(m[4]) * 3_600_000 + n(m[5]) * 60_000 + seconds * 1000 + fractionMs;
  return m[1] === '-' ? -ms : ms;
}

function csvField(s: string): string {
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** One CSV line's fields (quoted fields as Jackson's CSV writer quotes them). */
function csvFields(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  for (;;) {
    if (line[i] === '"') {
      let v = '';
      i++;
      for (;;) {
        const q = line.indexOf('"', i);
        if (q < 0) throw new ClientError(`unterminated quote in '${line}'`);
        v += line.slice(i, q);
        i = q + 1;
        if (line[i] !== '"') break;
        v += '"';
        i++;
      }
      out.push(v);
    } else {
      const comma = line.indexOf(',', i);
      out.push(line.slice(i, comma < 0 ? line.length : comma));
      i = comma < 0 ? line.length : comma;
    }
    if (i >= line.length) return out;
    if (line[i] !== ',') throw new ClientError(`unexpected text after a quoted field in '${line}'`);
    i++;
  }
}

/** The plan as Kafka's --export writes it, one line per partition, each ending in a newline. */
export function exportCsv(plan: ResetPlan, singleGroup: boolean): string {
  let out = '';
  for (const [group, rows] of plan)
    for (const { tp, offset } of rows.values())
      out += `${singleGroup ? '' : `${csvField(group)},`}${csvField(tp.topic)},${tp.partition},${offset}\n`;
  return out;
}

/**
 * Kafka's parseResetPlan: `topic,partition,offset` lines for the one group given with --group, or
 * `group,topic,partition,offset` lines.
 */
export function parseResetCsv(text: string, singleGroup: string | null): ResetPlan {
  const lines = text.split('\n').map((l) => l.replace(/\r$/, ''));
  while (lines.length > 0 && lines.at(-1) === '') lines.pop();
  const plan: ResetPlan = new Map();
  const oldFormat = singleGroup !== null && lines.length > 0 && csvFields(lines[0]!).length === 3;
  lines.forEach((line, i) => {
    const f = csvFields(line);
    const [group, topic, partition, offset] = oldFormat ? [singleGroup, ...f] : f;
    if (f.length !== (oldFormat ? 3 : 4) || !/^\d+$/.test(partition ?? '') || !/^-?\d+$/.test(offset ?? '')) {
      throw new ClientError(
        `line ${i + 1} of the reset plan is not ${oldFormat ? 'topic,partition,offset' : 'group,topic,partition,offset'}: '${line}'`,
      );
    }
    const rows = plan.get(group!) ?? new Map();
    const tp = { topic: topic!, partition: Number(partition) };
    rows.set(topicPartitionKey(tp.topic, tp.partition), { tp, offset: BigInt(offset!) });
    plan.set(group!, rows);
  });
  return plan;
}

/** Kafka's reset table: a blank line, GROUP TOPIC PARTITION NEW-OFFSET. */
export function formatResetRows(
  group: string,
  rows: readonly { tp: TopicPartition; offset: bigint }[],
): string[] {
  const col = (s: string, width: number) => s.padEnd(width);
  const line = (a: string, b: string, c: string, d: string) =>
    `${col(a, 30)} ${col(b, 30)} ${col(c, 10)} ${col(d, 15)}`;
  return [
    '',
    line('GROUP', 'TOPIC', 'PARTITION', 'NEW-OFFSET'),
    ...rows.map((r) => line(group, r.tp.topic, String(r.tp.partition), String(r.offset))),
  ];
}

export interface ResetContext {
  readonly client: KafkaClient;
  readonly admin: Admin;
  readonly groups: GroupAdmin;
  readonly io: CliIo;
  readonly nowMs: () => number;
}

/** The scenario and its checks, as ConsumerGroupCommandOptions validates them. */
function scenarioOf(flags: Flags): Scenario {
  const scenarios = RESET_SCENARIOS.filter((s) => flags.has(s));
  if (scenarios.length !== 1) {
    throw new UsageError(
      `Option --reset-offsets requires exactly one of the following scenarios: ${RESET_SCENARIOS.map((s) => `--${s}`).join(', ')}`,
    );
  }
  const scenario = scenarios[0]!;
  if (scenario !== 'from-file' && flags.has('topic') === flags.has('all-topics'))
    throw new UsageError('One of the reset scopes should be defined: --all-topics, --topic.');
  if (flags.has('execute') && flags.has('dry-run'))
    throw new UsageError('Option --reset-offsets only accepts one of --execute and --dry-run');
  return scenario;
}

export async function resetOffsets(ctx: ResetContext, ids: readonly string[], flags: Flags): Promise<number> {
  const scenario = scenarioOf(flags);
  const { io } = ctx;
  // Parsed before anything is asked of the cluster, so a typo costs nothing.
  const timestamp =
    scenario === 'to-datetime'
      ? parseDateTime(flags.get('to-datetime')!)
      : scenario === 'by-duration'
        ? ctx.nowMs() - parseDuration(flags.get('by-duration')!)
        : null;
  const groupFlags = flags.all('group');
  const singleGroup = !flags.has('all-groups') && groupFlags.length === 1 ? groupFlags[0]! : null;
  const fromFile =
    scenario === 'from-file' ? parseResetCsv(readTextFile(flags.get('from-file')!), singleGroup) : null;
  if (!flags.has('execute') && !flags.has('dry-run')) {
    io.err(
      'WARN: No action will be performed as the --execute option is missing. In a future major release, the default behavior of this command will be to prompt the user before executing the reset rather than doing a dry run. You should add the --dry-run option explicitly if you are scripting this command and want to keep the current default behavior without prompting.',
    );
  }
  const plan: ResetPlan = new Map();
  let status = 0;
  for (const id of ids) {
    const d = await ctx.groups.describe(id);
    if (d.state !== 'Empty' && d.state !== 'Dead') {
      io.err(
        `Error: Assignments can only be reset if the group '${id}' is inactive, but the current state is ${d.state}.`,
      );
      plan.set(id, new Map());
      status = 1;
      continue;
    }
    let rows: { tp: TopicPartition; offset: bigint }[];
    if (fromFile !== null) {
      const forGroup = fromFile.get(id);
      if (forGroup === undefined) {
        io.err(`Error: No reset plan for group ${id} found`);
        plan.set(id, new Map());
        continue;
      }
      rows = await clamp(ctx, [...forGroup.values()]);
    } else {
      const committed = await ctx.groups.committedOffsets(id);
      const tps = flags.has('all-topics')
        ? [...committed.values()].map((c) => c.tp)
        : await parseTopicArgs(flags.all('topic'), ctx.client);
      rows = tps.length === 0 ? [] : await offsetsFor(ctx, scenario, tps, committed, flags, timestamp);
    }
    if (flags.has('execute') && rows.length > 0) await ctx.groups.commitOffsets(id, rows);
    plan.set(id, new Map(rows.map((r) => [topicPartitionKey(r.tp.topic, r.tp.partition), r])));
    if (!flags.has('export') && rows.length > 0) for (const l of formatResetRows(id, rows)) io.out(l);
  }
  // Kafka prints the CSV with println: one more line separator after the last row's.
  if (flags.has('export')) io.out(exportCsv(plan, singleGroup !== null));
  return status;
}

async function offsetsFor(
  ctx: ResetContext,
  scenario: Scenario,
  tps: readonly TopicPartition[],
  committed: ReadonlyMap<string, { tp: TopicPartition; offset: bigint }>,
  flags: Flags,
  timestamp: number | null,
): Promise<{ tp: TopicPartition; offset: bigint }[]> {
  if (timestamp !== null) return byTimestamp(ctx, tps, timestamp);
  const [earliest, latest] = await Promise.all([
    ctx.admin.listOffsets(tps, -2n),
    ctx.admin.listOffsets(tps, -1n),
  ]);
  const shift = scenario === 'shift-by' ? BigInt(flags.int('shift-by')!) : 0n;
  const target = scenario === 'to-offset' ? BigInt(flags.int('to-offset')!) : 0n;
  return tps.map((tp) => {
    const key = topicPartitionKey(tp.topic, tp.partition);
    const lo = logOffset(earliest.get(key), 'log start', key);
    const hi = logOffset(latest.get(key), 'log end', key);
    const current = committed.get(key)?.offset;
    let offset: bigint;
    if (scenario === 'to-earliest') offset = lo;
    else if (scenario === 'to-latest') offset = hi;
    else if (scenario === 'to-current') offset = current ?? hi;
    else if (scenario === 'to-offset') offset = target;
    else if (current === undefined)
      throw new UsageError(
        `Cannot shift offset for partition ${key} since there is no current committed offset`,
      );
    else offset = current + shift;
    return { tp, offset: withinLog(offset, lo, hi) };
  });
}

function logOffset(r: PartitionResult<bigint> | undefined, what: string, key: string): bigint {
  if (!r?.ok) throw r?.error ?? new ClientError(`no ${what} offset for ${key}`);
  return r.value;
}

/**
 * ListOffsets by timestamp: the first offset whose timestamp is at or after it; a partition with
 * none (empty, or every record older) falls back to its log end offset, with Kafka's warning.
 */
async function byTimestamp(
  ctx: ResetContext,
  tps: readonly TopicPartition[],
  timestamp: number,
): Promise<{ tp: TopicPartition; offset: bigint }[]> {
  const found = await ctx.admin.listOffsets(tps, BigInt(timestamp));
  const missing = tps.filter((tp) => {
    const r = found.get(topicPartitionKey(tp.topic, tp.partition));
    return r?.ok === true && r.value < 0n;
  });
  for (const tp of missing)
    ctx.io.out(
      `\nWarn: Partition ${tp.partition} from topic ${tp.topic} is empty. Falling back to latest known offset.`,
    );
  const ends = missing.length === 0 ? new Map() : await ctx.admin.listOffsets(missing, -1n);
  return tps.map((tp) => {
    const key = topicPartitionKey(tp.topic, tp.partition);
    const r = found.get(key);
    const offset = logOffset(r, 'timestamp', key);
    return { tp, offset: offset >= 0n ? offset : logOffset(ends.get(key), 'log end', key) };
  });
}

/** As Kafka's checkOffsetsRange: an offset outside the log moves to its nearest end. */
function withinLog(offset: bigint, logStart: bigint, logEnd: bigint): bigint {
  if (offset > logEnd) return logEnd;
  return offset < logStart ? logStart : offset;
}

/** Kafka's checkOffsetsRange: each offset moved within [log start, log end]. */
async function clamp(
  ctx: ResetContext,
  rows: readonly { tp: TopicPartition; offset: bigint }[],
): Promise<{ tp: TopicPartition; offset: bigint }[]> {
  const tps = rows.map((r) => r.tp);
  const [earliest, latest] = await Promise.all([
    ctx.admin.listOffsets(tps, -2n),
    ctx.admin.listOffsets(tps, -1n),
  ]);
  return rows.map(({ tp, offset }) => {
    const key = topicPartitionKey(tp.topic, tp.partition);
    const lo = logOffset(earliest.get(key), 'log start', key);
    const hi = logOffset(latest.get(key), 'log end', key);
    return { tp, offset: withinLog(offset, lo, hi) };
  });
}

/** --topic values: `topic` (every partition) or `topic:0,1`. */
async function parseTopicArgs(topics: readonly string[], client: KafkaClient): Promise<TopicPartition[]> {
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
}
