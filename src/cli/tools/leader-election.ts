/**
 * `skiff leader-election`: Kafka's kafka-leader-election — a preferred or unclean leader election
 * for one partition, the partitions of a JSON file, or every partition, with Kafka's result lines.
 */
import { Admin } from '../../client/admin.js';
import { ClientError, kafkaExceptionClass } from '../../client/errors.js';
import type { TopicPartition } from '../../client/partitions.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import {
  type Flags,
  openClient,
  readPropertiesFile,
  readTextFile,
  runTool,
  type ToolDef,
  UsageError,
} from './common.js';

export const LEADER_ELECTION: ToolDef = {
  ...commandInfo('leader-election'),
  usage: [
    'Usage: skiff leader-election --bootstrap-server <host:port> --election-type <PREFERRED|UNCLEAN>',
    '         (--all-topic-partitions | --topic <topic> --partition <n> | --path-to-json-file <file>)',
  ],
  flags: [
    {
      name: 'bootstrap-server',
      arg: 'host:port',
      help: 'REQUIRED: the broker(s) to connect to, comma-separated',
    },
    { name: 'admin.config', arg: 'file', help: 'properties file with admin client settings' },
    {
      name: 'election-type',
      arg: 'type',
      help: 'REQUIRED: preferred (the first replica leads again, if it is in the ISR and it does not already) or unclean (a live replica out of the ISR leads a partition without a leader)',
    },
    {
      name: 'all-topic-partitions',
      help: 'every eligible partition; not with --topic or --path-to-json-file',
    },
    { name: 'topic', arg: 'topic', help: 'the topic of the partition to elect for; needs --partition' },
    { name: 'partition', arg: 'n', help: 'the partition to elect for; only with --topic' },
    {
      name: 'path-to-json-file',
      arg: 'file',
      help: 'the partitions, as {"partitions": [{"topic": "foo", "partition": 1}, ...]}',
    },
  ],
};

type ElectionType = 'PREFERRED' | 'UNCLEAN';

function electionType(flags: Flags): ElectionType {
  const v = flags.get('election-type')!;
  const t = v.trim().toUpperCase();
  if (t !== 'PREFERRED' && t !== 'UNCLEAN')
    throw new UsageError(`invalid --election-type '${v}' (expected PREFERRED or UNCLEAN)`);
  return t;
}

/** Kafka's parseReplicaElectionData: a `partitions` list of topic/partition objects, no duplicates. */
export function parseElectionJson(doc: unknown): TopicPartition[] {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    throw new ClientError('Replica election data is empty');
  const list = (doc as { partitions?: unknown }).partitions;
  if (list === undefined) throw new ClientError('Replica election data is missing "partitions" field');
  if (!Array.isArray(list)) throw new ClientError('"partitions" must be a list');
  const out: TopicPartition[] = [];
  const seen = new Set<string>();
  const dups = new Set<string>();
  for (const e of list) {
    const { topic, partition } = (e ?? {}) as { topic?: unknown; partition?: unknown };
    if (typeof topic !== 'string' || !Number.isInteger(partition))
      throw new ClientError(
        `invalid partition entry ${JSON.stringify(e)} (expected {"topic": ..., "partition": ...})`,
      );
    const key = `${topic}-${partition}`;
    if (seen.has(key)) dups.add(key);
    seen.add(key);
    out.push({ topic, partition: partition as number });
  }
  if (dups.size > 0)
    throw new ClientError(`Replica election data contains duplicate partitions: ${[...dups].join(',')}`);
  return out;
}

/** Kafka's validate(): which of the three ways to name partitions, and the required options. */
function partitionsFrom(flags: Flags): TopicPartition[] | null {
  const missing = ['bootstrap-server', 'election-type'].filter((f) => !flags.has(f));
  if (missing.length > 0) throw new UsageError(`Missing required option(s): ${missing.join(', ')}`);
  const ways = ['topic', 'all-topic-partitions', 'path-to-json-file'];
  if (ways.filter((w) => flags.has(w)).length !== 1)
    throw new UsageError(`One and only one of the following options is required: ${ways.join(', ')}`);
  if (flags.has('topic') && !flags.has('partition'))
    throw new UsageError('Missing required option(s): partition');
  if (!flags.has('topic') && flags.has('partition'))
    throw new UsageError('Option partition is only allowed if topic is used');
  if (flags.has('all-topic-partitions')) return null;
  if (flags.has('topic')) {
    const partition = flags.int('partition')!;
    if (partition < 0) throw new UsageError(`--partition must be non-negative, got ${partition}`);
    return [{ topic: flags.get('topic')!, partition }];
  }
  const file = flags.get('path-to-json-file')!;
  let doc: unknown;
  try {
    doc = JSON.parse(readTextFile(file));
  } catch (e) {
    if (e instanceof ClientError) throw e;
    throw new ClientError(`${file} is not valid JSON (${(e as Error).message})`);
  }
  return parseElectionJson(doc);
}

const byTopicPartition = (a: TopicPartition, b: TopicPartition) =>
  a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition;

export function runLeaderElection(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(LEADER_ELECTION, args, io, async (flags) => {
    const tps = partitionsFrom(flags);
    const type = electionType(flags);
    const cfg = flags.get('admin.config');
    const client = openClient(
      'leader-election',
      flags.get('bootstrap-server')!,
      runtime,
      cfg === undefined ? new Map() : readPropertiesFile(cfg),
    );
    let results: Awaited<ReturnType<Admin['electLeaders']>>;
    try {
      results = await new Admin(client).electLeaders(type === 'PREFERRED' ? 'preferred' : 'unclean', tps);
    } finally {
      client.close();
    }
    const all = [...results.values()].sort((a, b) => byTopicPartition(a.tp, b.tp));
    const name = (tp: TopicPartition) => `${tp.topic}-${tp.partition}`;
    const succeeded = all.filter((r) => r.error === null);
    const noop = all.filter((r) => r.error?.code === ErrorCode.ELECTION_NOT_NEEDED);
    const failed = all.filter((r) => r.error !== null && r.error.code !== ErrorCode.ELECTION_NOT_NEEDED);
    if (succeeded.length > 0)
      io.out(
        `Successfully completed leader election (${type}) for partitions ${succeeded.map((r) => name(r.tp)).join(', ')}`,
      );
    if (noop.length > 0)
      io.out(`Valid replica already elected for partitions ${noop.map((r) => name(r.tp)).join(', ')}`);
    for (const r of failed) {
      io.out(
        `Error completing leader election (${type}) for partition: ${name(r.tp)}: ${kafkaExceptionClass(r.error!.code)}: ${r.error!.message}`,
      );
    }
    if (failed.length > 0) throw new ClientError(`${failed.length} replica(s) could not be elected`);
    return 0;
  });
}
