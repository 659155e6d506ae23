/** `skiff console-consumer`: Kafka's kafka-console-consumer, reading partitions by assignment. */
import { type ConsumedRecord, Consumer, type StartAt } from '../../client/consumer.js';
import { ClientError } from '../../client/errors.js';
import { GroupConsumer } from '../../client/group-consumer.js';
import type { TopicPartition } from '../../client/partitions.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { consumerOptionsFrom, groupOptionsFrom } from './client-props.js';
import {
  type Flags,
  openClient,
  parseKeyValues,
  readPropertiesFile,
  runTool,
  type ToolDef,
  UsageError,
} from './common.js';

export const CONSOLE_CONSUMER: ToolDef = {
  ...commandInfo('console-consumer'),
  usage: ['Usage: skiff console-consumer --bootstrap-server <host:port> --topic <topic> [options]'],
  flags: [
    { name: 'bootstrap-server', arg: 'host:port', help: 'REQUIRED: the broker(s) to connect to' },
    { name: 'topic', arg: 'topic', help: 'REQUIRED: the topic to read' },
    { name: 'partition', arg: 'n', help: 'read only this partition (not with --group)' },
    { name: 'offset', arg: 'offset', help: 'with --partition: earliest, latest (default) or an offset' },
    {
      name: 'from-beginning',
      help: 'start at the earliest offset rather than the latest (in a group: only where it has no committed offset)',
    },
    { name: 'max-messages', arg: 'n', help: 'exit after this many records' },
    { name: 'timeout-ms', arg: 'ms', help: 'exit when no record arrives for this long' },
    {
      name: 'property',
      arg: 'k=v',
      repeat: true,
      help: 'formatter settings: print.key, print.value, print.timestamp, print.partition, print.offset, print.headers, key.separator, line.separator, headers.separator, null.literal',
    },
    { name: 'formatter-config', arg: 'file', help: 'properties file of formatter settings' },
    {
      name: 'consumer-property',
      arg: 'k=v',
      repeat: true,
      help: 'consumer settings (fetch.max.wait.ms, ...)',
    },
    { name: 'consumer.config', arg: 'file', help: 'properties file of consumer settings' },
    {
      name: 'group',
      arg: 'id',
      help: 'consume as a member of this consumer group (or --consumer-property group.id=...): partitions assigned by the group, offsets committed (enable.auto.commit)',
    },
  ],
  notes: [
    'Without a group, partitions are assigned directly (every partition of the topic, or --partition) and',
    "no offsets are committed (Kafka's tool joins a throw-away group console-consumer-NNNNN instead).",
  ],
};

export interface FormatterConfig {
  printTimestamp: boolean;
  printPartition: boolean;
  printOffset: boolean;
  printHeaders: boolean;
  printKey: boolean;
  printValue: boolean;
  keySeparator: string;
  lineSeparator: string;
  headersSeparator: string;
  nullLiteral: string;
}

export function formatterConfig(props: ReadonlyMap<string, string>): FormatterConfig {
  const bool = (k: string, d: boolean) => {
    const v = props.get(k);
    return v === undefined ? d : v.trim().toLowerCase() === 'true';
  };
  return {
    printTimestamp: bool('print.timestamp', false),
    printPartition: bool('print.partition', false),
    printOffset: bool('print.offset', false),
    printHeaders: bool('print.headers', false),
    printKey: bool('print.key', false),
    printValue: bool('print.value', true),
    keySeparator: props.get('key.separator') ?? '\t',
    lineSeparator: props.get('line.separator') ?? '\n',
    headersSeparator: props.get('headers.separator') ?? ',',
    nullLiteral: props.get('null.literal') ?? 'null',
  };
}

/** One record as Kafka's DefaultMessageFormatter writes it, line separator included. */
export function formatRecord(r: ConsumedRecord, c: FormatterConfig): string {
  const text = (b: Buffer | null) => (b === null ? c.nullLiteral : b.toString('utf8'));
  const fields: string[] = [];
  if (c.printTimestamp) fields.push(`${r.timestampType}:${r.timestamp}`);
  if (c.printPartition) fields.push(`Partition:${r.partition}`);
  if (c.printOffset) fields.push(`Offset:${r.offset}`);
  if (c.printHeaders) {
    fields.push(
      r.headers.length === 0
        ? 'NO_HEADERS'
        : r.headers.map((h) => `${h.key}:${text(h.value)}`).join(c.headersSeparator),
    );
  }
  if (c.printKey) fields.push(text(r.key));
  if (c.printValue) fields.push(text(r.value));
  // Kafka ends the line only after the value; without print.value the fields just run on.
  return fields.join(c.keySeparator) + (c.printValue ? c.lineSeparator : '');
}

/** Kafka's checkConsumerGroup: --group, group.id in --consumer-property and in --consumer.config agree. */
function groupIdOf(
  flags: Flags,
  fromFile: ReadonlyMap<string, string>,
  extra: ReadonlyMap<string, string>,
): string | null {
  const ids = new Set<string>();
  const g = flags.get('group');
  if (g !== undefined) ids.add(g);
  const inFile = fromFile.get('group.id');
  if (inFile !== undefined) ids.add(inFile);
  const inExtra = extra.get('group.id');
  if (inExtra !== undefined) ids.add(inExtra);
  if (ids.size > 1) {
    throw new UsageError(
      `The group ids provided in different places (directly using '--group', via '--consumer-property', or via '--consumer.config') do not match. Detected group ids: ${[...ids].map((id) => `'${id}'`).join(', ')}`,
    );
  }
  if (ids.size > 0 && flags.has('partition'))
    throw new UsageError('Options group and partition cannot be specified together.');
  return ids.size === 0 ? null : [...ids][0]!;
}

function startAt(flags: Flags): StartAt {
  const offset = flags.get('offset');
  if (offset !== undefined) {
    if (!flags.has('partition')) throw new UsageError('the partition is required when offset is specified');
    if (flags.has('from-beginning'))
      throw new UsageError('options --from-beginning and --offset cannot be combined');
    if (offset === 'earliest' || offset === 'latest') return offset;
    if (!/^\d+$/.test(offset)) {
      throw new UsageError(
        `The provided offset value '${offset}' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long.`,
      );
    }
    return BigInt(offset);
  }
  return flags.has('from-beginning') ? 'earliest' : 'latest';
}

export function runConsoleConsumer(
  args: string[],
  io: CliIo & { write?(chunk: string): void },
  runtime: ClientRuntime = systemRuntime(),
  stop: AbortSignal = stopSignal(),
): Promise<number> {
  return runTool(CONSOLE_CONSUMER, args, io, async (flags) => {
    const topic = flags.require('topic');
    const start = startAt(flags);
    const maxMessages = flags.int('max-messages');
    const timeoutMs = flags.int('timeout-ms');
    const fromFile = new Map<string, string>();
    const cfgFile = flags.get('consumer.config');
    if (cfgFile !== undefined) for (const [k, v] of readPropertiesFile(cfgFile)) fromFile.set(k, v);
    const extra = parseKeyValues(flags.all('consumer-property'), '--consumer-property');
    const groupId = groupIdOf(flags, fromFile, extra);
    const props = new Map([...fromFile, ...extra]);
    // Kafka's setAutoOffsetResetValue: --from-beginning is auto.offset.reset=earliest.
    const reset = props.get('auto.offset.reset');
    if (reset !== undefined && flags.has('from-beginning') && reset !== 'earliest') {
      throw new ClientError(
        `Can't simultaneously specify --from-beginning and 'auto.offset.reset=${reset}', please remove one option`,
      );
    }
    if (!props.has('client.id')) props.set('client.id', 'console-consumer');
    const fmtProps = new Map<string, string>();
    const fmtFile = flags.get('formatter-config');
    if (fmtFile !== undefined) for (const [k, v] of readPropertiesFile(fmtFile)) fmtProps.set(k, v);
    for (const [k, v] of parseKeyValues(flags.all('property'), '--property')) fmtProps.set(k, v);
    const format = formatterConfig(fmtProps);
    const bootstrap = flags.get('bootstrap-server') ?? props.get('bootstrap.servers');
    if (bootstrap === undefined) throw new UsageError('missing required argument --bootstrap-server');

    const client = openClient('console-consumer', bootstrap, runtime, props);
    let count = 0;
    try {
      const md = await client.retry(() => client.fetchMetadata([topic]));
      const t = md.topics.get(topic);
      if (t?.errorCode !== 0 || t.partitions.length === 0) {
        throw new ClientError(`Topic '${topic}' does not exist`);
      }
      const only = flags.int('partition');
      if (only !== undefined && !t.partitions.some((p) => p.partition === only)) {
        throw new ClientError(`partition ${only} of topic ${topic} does not exist`);
      }
      const consumerOptions = {
        resetTo: start === 'earliest' ? ('earliest' as const) : ('latest' as const),
        // A short --timeout-ms must not be outlasted by one long-polling fetch.
        maxWaitMs: Math.min(500, timeoutMs ?? 500),
        ...consumerOptionsFrom(props),
      };
      let source: { poll(): Promise<ConsumedRecord[]>; seek(tp: TopicPartition, offset: bigint): void };
      let group: GroupConsumer | null = null;
      if (groupId === null) {
        const consumer = new Consumer(client, consumerOptions);
        const tps: TopicPartition[] = t.partitions
          .filter((p) => only === undefined || p.partition === only)
          .map((p) => ({ topic, partition: p.partition }));
        await consumer.assign(tps, start);
        source = consumer;
      } else {
        group = new GroupConsumer(client, { groupId, ...groupOptionsFrom(props) }, consumerOptions);
        group.subscribe([topic]);
        source = group;
      }
      try {
        count = await consume(source, io, format, runtime, stop, maxMessages, timeoutMs);
      } finally {
        await group?.close();
      }
    } finally {
      client.close();
    }
    io.err(`Processed a total of ${count} messages`);
    return 0;
  });
}

/**
 * Prints records until --max-messages, --timeout-ms without a record, or a stop. Records a poll
 * returned past --max-messages are sought back (Kafka's resetUnconsumedOffsets), so a group's
 * commit on close covers exactly what was printed.
 */
async function consume(
  source: { poll(): Promise<ConsumedRecord[]>; seek(tp: TopicPartition, offset: bigint): void },
  io: CliIo & { write?(chunk: string): void },
  format: FormatterConfig,
  runtime: ClientRuntime,
  stop: AbortSignal,
  maxMessages: number | undefined,
  timeoutMs: number | undefined,
): Promise<number> {
  // Records come partition by partition within a poll; --max-messages cuts across them in order.
  const write = io.write ?? ((s: string) => io.out(s.endsWith('\n') ? s.slice(0, -1) : s));
  let count = 0;
  let lastRecordMs = runtime.clock.nowMs();
  while (!stop.aborted && (maxMessages === undefined || count < maxMessages)) {
    const records = await source.poll();
    const unconsumed = new Map<string, { tp: TopicPartition; offset: bigint }>();
    for (const r of records) {
      if (maxMessages !== undefined && count >= maxMessages) {
        const key = `${r.topic}-${r.partition}`;
        if (!unconsumed.has(key)) unconsumed.set(key, { tp: r, offset: r.offset });
        continue;
      }
      write(formatRecord(r, format));
      count++;
    }
    for (const u of unconsumed.values()) source.seek(u.tp, u.offset);
    const now = runtime.clock.nowMs();
    if (records.length > 0) lastRecordMs = now;
    else if (timeoutMs !== undefined && now - lastRecordMs >= timeoutMs) break;
  }
  return count;
}

/**
 * Aborted by SIGINT or SIGTERM, so an endless consume ends with its total like Kafka's, and when
 * stdout is closed (`| head`), where Kafka stops with "Unable to write to standard out".
 */
function stopSignal(): AbortSignal {
  const ac = new AbortController();
  const stop = () => ac.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  // Kept for every later write too: a closed pipe errors on each one, and an unhandled stream
  // error would end the process with a stack trace.
  process.stdout.on('error', stop);
  return ac.signal;
}
