/** `skiff get-offsets`: Kafka's kafka-get-offsets (GetOffsetShell), printing `topic:partition:offset`. */

import { Admin } from '../../client/admin.js';
import { ClientError } from '../../client/errors.js';
import type { TopicPartition } from '../../client/partitions.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import { topicPartitionKey } from '../../common/topic-partition.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { ADMIN_FLAGS, adminClient, runTool, type ToolDef, UsageError } from './common.js';

export const GET_OFFSETS: ToolDef = {
  ...commandInfo('get-offsets'),
  usage: [
    'Usage: skiff get-offsets --bootstrap-server <host:port> [--topic <regex>] [--partitions <ids>] [--time <t>]',
  ],
  flags: [
    ...ADMIN_FLAGS,
    { name: 'topic', arg: 'regex', help: 'topics to query (a regular expression); all topics if absent' },
    { name: 'partitions', arg: 'ids', help: 'comma-separated partition ids; all partitions if absent' },
    {
      name: 'topic-partitions',
      arg: 'patterns',
      help: "topic:partition patterns, e.g. 'orders:0-3,logs' (not with --topic)",
    },
    {
      name: 'time',
      arg: 'time',
      help: 'a timestamp in ms, -1 or latest (default), -2 or earliest, -3 or max-timestamp',
    },
    { name: 'exclude-internal-topics', help: 'leave out internal topics' },
    { name: 'json', help: 'print [{"topic","partition","offset"}] instead of lines' },
  ],
};

/** Kafka's --time values as the ListOffsets timestamp. */
export function parseTime(s: string): bigint {
  const named: Record<string, bigint> = { latest: -1n, earliest: -2n, 'max-timestamp': -3n };
  if (s in named) return named[s]!;
  if (/^-?\d+$/.test(s)) {
    const t = BigInt(s);
    if (t >= -3n) return t;
  }
  throw new UsageError(
    `Malformed time argument ${s}. Please use -1 or latest / -2 or earliest / -3 or max-timestamp, or a specified long format timestamp`,
  );
}

/** A partition pattern of --topic-partitions: N, N-M (M exclusive), N-, -M, or empty (all). */
function partitionMatcher(spec: string | undefined): (p: number) => boolean {
  if (spec === undefined || spec === '') return () => true;
  const m = /^(\d*)-(\d*)$/.exec(spec);
  if (m && (m[1] !== '' || m[2] !== '')) {
    const lo = m[1] === '' ? 0 : Number(m[1]);
    const hi = m[2] === '' ? Number.POSITIVE_INFINITY : Number(m[2]);
    return (p) => p >= lo && p < hi;
  }
  if (/^\d+$/.test(spec)) return (p) => p === Number(spec);
  throw new UsageError(`Invalid partition specification: ${spec}`);
}

function topicMatcher(regex: string | undefined): (t: string) => boolean {
  if (regex === undefined || regex === '') return () => true;
  try {
    const re = new RegExp(`^(?:${regex})$`);
    return (t) => re.test(t);
  } catch {
    throw new UsageError(`invalid topic pattern '${regex}'`);
  }
}

type Filter = (topic: string, partition: number) => boolean;

function buildFilter(
  topic: string | undefined,
  partitions: string | undefined,
  patterns: string | undefined,
): Filter {
  if (patterns !== undefined) {
    if (topic !== undefined || partitions !== undefined) {
      throw new UsageError('--topic-partitions cannot be used with --topic or --partitions');
    }
    const rules = patterns.split(',').map((rule) => {
      const colon = rule.lastIndexOf(':');
      const t = topicMatcher(colon < 0 ? rule : rule.slice(0, colon));
      const p = partitionMatcher(colon < 0 ? undefined : rule.slice(colon + 1));
      return (topicName: string, partition: number) => t(topicName) && p(partition);
    });
    return (t, p) => rules.some((r) => r(t, p));
  }
  const t = topicMatcher(topic);
  let ids: Set<number> | null = null;
  if (partitions !== undefined) {
    ids = new Set(
      partitions.split(',').map((s) => {
        if (!/^\s*\d+\s*$/.test(s)) {
          throw new UsageError(
            `--partitions expects a comma separated list of numeric partition ids, but received: ${partitions}`,
          );
        }
        return Number(s);
      }),
    );
  }
  return (topicName, p) => t(topicName) && (ids === null || ids.has(p));
}

export function runGetOffsets(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(GET_OFFSETS, args, io, async (flags) => {
    const time = parseTime(flags.get('time') ?? 'latest');
    const filter = buildFilter(flags.get('topic'), flags.get('partitions'), flags.get('topic-partitions'));
    const client = adminClient('get-offsets', flags, runtime);
    try {
      const admin = new Admin(client);
      const md = await client.retry(() => client.fetchMetadata(null));
      const tps: TopicPartition[] = [];
      for (const t of md.topics.values()) {
        if (t.errorCode !== 0 || (t.isInternal && flags.has('exclude-internal-topics'))) continue;
        for (const p of t.partitions)
          if (filter(t.name, p.partition)) tps.push({ topic: t.name, partition: p.partition });
      }
      if (tps.length === 0)
        throw new ClientError('Could not match any topic-partitions with the specified filters');
      const results = await admin.listOffsets(tps, time);
      const found: { topic: string; partition: number; offset: bigint }[] = [];
      for (const tp of tps) {
        const r = results.get(topicPartitionKey(tp.topic, tp.partition))!;
        if (!r.ok) {
          io.err(
            `Skip getting offsets for topic-partition ${tp.topic}-${tp.partition} due to error: ${r.error.message}`,
          );
        } else if (r.value !== -1n) {
          found.push({ ...tp, offset: r.value });
        }
      }
      // Kafka sorts by the partition's string form ("t-10" before "t-2"); kept for identical output.
      found.sort((a, b) => {
        const x = topicPartitionKey(a.topic, a.partition);
        const y = topicPartitionKey(b.topic, b.partition);
        return x < y ? -1 : x > y ? 1 : 0;
      });
      if (flags.has('json')) {
        io.out(
          JSON.stringify(
            found.map((f) => ({ topic: f.topic, partition: f.partition, offset: Number(f.offset) })),
          ),
        );
      } else {
        for (const f of found) io.out(`${f.topic}:${f.partition}:${f.offset}`);
      }
      return 0;
    } finally {
      client.close();
    }
  });
}
