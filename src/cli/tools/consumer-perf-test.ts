/** `skiff consumer-perf-test`: Kafka's kafka-consumer-perf-test, its header and CSV line. */
import { Consumer } from '../../client/consumer.js';
import { ClientError } from '../../client/errors.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { consumerOptionsFrom } from './client-props.js';
import { openClient, readPropertiesFile, runTool, type ToolDef, UsageError } from './common.js';
import { fixed, formatDate } from './perf-format.js';

export const CONSUMER_PERF_TEST: ToolDef = {
  ...commandInfo('consumer-perf-test'),
  usage: [
    'Usage: skiff consumer-perf-test --bootstrap-server <host:port> --topic <topic> --messages <n> [options]',
  ],
  flags: [
    { name: 'bootstrap-server', arg: 'host:port', help: 'REQUIRED: the broker(s) to connect to' },
    { name: 'topic', arg: 'topic', help: 'REQUIRED: the topic to consume' },
    { name: 'messages', arg: 'n', help: 'REQUIRED: records to consume' },
    { name: 'timeout', arg: 'ms', help: 'give up after this long without a record (default 10000)' },
    { name: 'from-latest', help: 'start at the log end rather than the log start' },
    { name: 'fetch-size', arg: 'bytes', help: 'max.partition.fetch.bytes (default 1048576)' },
    { name: 'group', arg: 'id', help: 'accepted for compatibility; partitions are assigned directly' },
    { name: 'consumer.config', arg: 'file', help: 'properties file of consumer settings' },
    { name: 'show-detailed-stats', help: 'a line per reporting interval' },
    { name: 'reporting-interval', arg: 'ms', help: 'interval of the detailed lines (default 5000)' },
    { name: 'hide-header', help: 'do not print the header line' },
    {
      name: 'date-format',
      arg: 'pattern',
      help: 'SimpleDateFormat pattern (default yyyy-MM-dd HH:mm:ss:SSS)',
    },
    { name: 'print-metrics', help: 'accepted for compatibility; prints nothing more' },
  ],
};

const EXTRA_HEADER = ', rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec';
const MB = 1024 * 1024;

export function consumerPerfHeader(detailed: boolean): string {
  return detailed
    ? `time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec${EXTRA_HEADER}`
    : `start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec${EXTRA_HEADER}`;
}

/** The summary CSV line. */
export function consumerPerfSummary(
  startMs: number,
  endMs: number,
  bytes: number,
  messages: number,
  rebalanceMs: number,
  dateFormat: string,
): string {
  const elapsedSec = (endMs - startMs) / 1000;
  const fetchMs = endMs - startMs - rebalanceMs;
  const mb = bytes / MB;
  return [
    formatDate(startMs, dateFormat),
    formatDate(endMs, dateFormat),
    fixed(mb, 4),
    fixed(mb / elapsedSec, 4),
    String(messages),
    fixed(messages / elapsedSec, 4),
    String(rebalanceMs),
    String(fetchMs),
    fixed(mb / (fetchMs / 1000), 4),
    fixed(messages / (fetchMs / 1000), 4),
  ].join(', ');
}

export function runConsumerPerfTest(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(CONSUMER_PERF_TEST, args, io, async (flags) => {
    const topic = flags.require('topic');
    const messages = flags.int('messages');
    if (messages === undefined) throw new UsageError('missing required argument --messages');
    const timeoutMs = flags.int('timeout') ?? 10_000;
    const intervalMs = flags.int('reporting-interval') ?? 5000;
    const dateFormat = flags.get('date-format') ?? 'yyyy-MM-dd HH:mm:ss:SSS';
    const detailed = flags.has('show-detailed-stats');
    const props = new Map<string, string>();
    const file = flags.get('consumer.config');
    if (file !== undefined) for (const [k, v] of readPropertiesFile(file)) props.set(k, v);
    const fetchSize = flags.int('fetch-size');
    if (fetchSize !== undefined) props.set('max.partition.fetch.bytes', String(fetchSize));
    const bootstrap = flags.get('bootstrap-server') ?? props.get('bootstrap.servers');
    if (bootstrap === undefined) throw new UsageError('missing required argument --bootstrap-server');
    const client = openClient('consumer-perf-test', bootstrap, runtime, props);
    const { clock } = runtime;
    try {
      if (!flags.has('hide-header')) io.out(consumerPerfHeader(detailed));
      const startMs = clock.nowMs();
      const md = await client.retry(() => client.fetchMetadata([topic]));
      const t = md.topics.get(topic);
      if (t?.errorCode !== 0) throw new ClientError(`Topic '${topic}' does not exist`);
      const consumer = new Consumer(client, consumerOptionsFrom(props));
      await consumer.assign(
        t.partitions.map((p) => ({ topic, partition: p.partition })),
        flags.has('from-latest') ? 'latest' : 'earliest',
      );
      // Kafka counts the group join as rebalance time; here the assignment takes its place.
      const rebalanceMs = clock.nowMs() - startMs;
      let read = 0;
      let bytes = 0;
      let lastReportMs = clock.nowMs();
      let lastRead = 0;
      let lastBytes = 0;
      let lastConsumedMs = clock.nowMs();
      let now = lastConsumedMs;
      while (read < messages && now - lastConsumedMs <= timeoutMs) {
        const records = await consumer.poll();
        now = clock.nowMs();
        if (records.length > 0) lastConsumedMs = now;
        for (const r of records) {
          read++;
          bytes += (r.key?.length ?? 0) + (r.value?.length ?? 0);
          if (detailed && now - lastReportMs >= intervalMs) {
            const elapsed = now - lastReportMs;
            const intervalMb = (bytes - lastBytes) / MB;
            io.out(
              [
                formatDate(now, dateFormat),
                '0',
                fixed(bytes / MB, 4),
                fixed((1000 * intervalMb) / elapsed, 4),
                String(read),
                fixed(((read - lastRead) / elapsed) * 1000, 4),
                '0',
                String(elapsed),
                fixed((1000 * intervalMb) / elapsed, 4),
                fixed((1000 * (read - lastRead)) / elapsed, 4),
              ].join(', '),
            );
            lastReportMs = now;
            lastRead = read;
            lastBytes = bytes;
          }
        }
      }
      if (read < messages) {
        io.out(
          `WARNING: Exiting before consuming the expected number of messages: timeout (${timeoutMs} ms) exceeded. You can use the --timeout option to increase the timeout.`,
        );
      }
      const endMs = clock.nowMs();
      if (!detailed) io.out(consumerPerfSummary(startMs, endMs, bytes, read, rebalanceMs, dateFormat));
      return 0;
    } finally {
      client.close();
    }
  });
}
