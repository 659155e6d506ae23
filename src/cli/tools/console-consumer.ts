/** `skiff console-consumer`: Kafka's kafka-console-consumer, reading partitions by assignment. */
import { type ConsumedRecord, Consumer, type StartAt } from '../../client/consumer.js';
import { ClientError } from '../../client/errors.js';
import type { TopicPartition } from '../../client/partitions.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { consumerOptionsFrom } from './client-props.js';
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
    { name: 'partition', arg: 'n', help: 'read only this partition' },
    { name: 'offset', arg: 'offset', help: 'with --partition: earliest, latest (default) or an offset' },
    { name: 'from-beginning', help: 'start at the earliest offset rather than the latest' },
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
      help: 'not supported yet: consumer groups (partitions are assigned directly)',
    },
  ],
  notes: [
    'Partitions are assigned directly (no consumer group): every partition of the topic, or --partition.',
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
    if (flags.has('group')) {
      throw new UsageError(
        '--group is not supported yet: the console consumer reads by assignment, without a group',
      );
    }
    const topic = flags.require('topic');
    const start = startAt(flags);
    const maxMessages = flags.int('max-messages');
    const timeoutMs = flags.int('timeout-ms');
    const props = new Map<string, string>();
    const cfgFile = flags.get('consumer.config');
    if (cfgFile !== undefined) for (const [k, v] of readPropertiesFile(cfgFile)) props.set(k, v);
    for (const [k, v] of parseKeyValues(flags.all('consumer-property'), '--consumer-property'))
      props.set(k, v);
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
      const tps: TopicPartition[] = t.partitions
        .filter((p) => only === undefined || p.partition === only)
        .map((p) => ({ topic, partition: p.partition }));
      const consumer = new Consumer(client, {
        resetTo: start === 'earliest' ? 'earliest' : 'latest',
        // A short --timeout-ms must not be outlasted by one long-polling fetch.
        maxWaitMs: Math.min(500, timeoutMs ?? 500),
        ...consumerOptionsFrom(props),
      });
      await consumer.assign(tps, start);
      // Records come partition by partition within a poll; --max-messages cuts across them in order.
      const write = io.write ?? ((s: string) => io.out(s.endsWith('\n') ? s.slice(0, -1) : s));
      let lastRecordMs = runtime.clock.nowMs();
      while (!stop.aborted && (maxMessages === undefined || count < maxMessages)) {
        const records = await consumer.poll();
        for (const r of records) {
          if (maxMessages !== undefined && count >= maxMessages) break;
          write(formatRecord(r, format));
          count++;
        }
        const now = runtime.clock.nowMs();
        if (records.length > 0) lastRecordMs = now;
        else if (timeoutMs !== undefined && now - lastRecordMs >= timeoutMs) break;
      }
    } finally {
      client.close();
    }
    io.err(`Processed a total of ${count} messages`);
    return 0;
  });
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
