/** `skiff log-dirs --describe`: Kafka's kafka-log-dirs, its two lines and its JSON line. */

import { Admin } from '../../client/admin.js';
import { ClientError, KafkaResponseError, kafkaExceptionClass } from '../../client/errors.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import { topicPartitionKey } from '../../common/topic-partition.js';
import type { DescribeLogDirsResult } from '../../protocol/generated/DescribeLogDirsResponse.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { ADMIN_FLAGS, adminClient, runTool, type ToolDef, UsageError } from './common.js';

export const LOG_DIRS: ToolDef = {
  ...commandInfo('log-dirs'),
  usage: [
    'Usage: skiff log-dirs --bootstrap-server <host:port> --describe [--topic-list t1,t2] [--broker-list 1,2]',
  ],
  flags: [
    ...ADMIN_FLAGS,
    { name: 'describe', help: 'REQUIRED: describe the log directories of the brokers' },
    { name: 'topic-list', arg: 't1,t2', help: 'topics to include; all topics if absent' },
    { name: 'broker-list', arg: '1,2', help: 'brokers to query; all brokers if absent' },
  ],
  notes: [
    "offsetLag is Skiff's: the leader's LEO minus the replica's LEO, for every replica in the ISR or",
    'not (Kafka reports max(HW - LEO, 0) of the same log: 0 for a lagging follower); -1 while a',
    'follower has not heard from a leader yet (just started, or its leader is offline). Why: an',
    'operator deciding whether a follower may be stopped, or how far a restarted one is behind,',
    "needs its real distance; Kafka's 0 hid a follower ~100 MiB behind (seed 13.3).",
    'A broker that does not answer (stopped, not yet fenced by the controller) is left out with a',
    "warning line, the others' log dirs printed; Kafka's tool waits out its timeout and fails. Why:",
    'a broker is down exactly when an operator looks at where the data still is.',
  ],
};

/** The JSON line, keys in the order Kafka's tool prints them. */
export function formatLogDirsJson(
  byBroker: ReadonlyMap<number, readonly DescribeLogDirsResult[]>,
  topics: ReadonlySet<string>,
): string {
  const brokers = [...byBroker.keys()]
    .sort((a, b) => a - b)
    .map((broker) => ({
      broker,
      logDirs: byBroker.get(broker)!.map((d) => ({
        partitions: d.topics
          .filter((t) => topics.size === 0 || topics.has(t.name))
          .flatMap((t) =>
            t.partitions.map((p) => ({
              partition: topicPartitionKey(t.name, p.partitionIndex),
              size: Number(p.partitionSize),
              offsetLag: Number(p.offsetLag),
              isFuture: p.isFutureKey,
            })),
          ),
        // Kafka prints the Java class of the log dir's error.
        error: d.errorCode === 0 ? null : kafkaExceptionClass(d.errorCode),
        logDir: d.logDir,
      })),
    }));
  return JSON.stringify({ brokers, version: 1 });
}

function parseIdList(s: string | undefined): number[] {
  if (s === undefined || s.trim() === '') return [];
  return s
    .split(',')
    .filter((x) => x !== '')
    .map((x) => {
      if (!/^\s*\d+\s*$/.test(x)) throw new UsageError(`invalid broker id '${x}' in --broker-list`);
      return Number(x);
    });
}

export function runLogDirs(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(LOG_DIRS, args, io, async (flags) => {
    if (!flags.has('describe')) throw new UsageError('missing required argument --describe');
    const topics = new Set((flags.get('topic-list') ?? '').split(',').filter((t) => t !== ''));
    const requested = parseIdList(flags.get('broker-list'));
    const client = adminClient('log-dirs', flags, runtime);
    try {
      const admin = new Admin(client);
      const cluster = await admin.describeCluster();
      const live = [...cluster.brokers.keys()].sort((a, b) => a - b);
      const missing = requested.filter((b) => !cluster.brokers.has(b));
      if (missing.length > 0) {
        throw new ClientError(
          `ERROR: The given brokers do not exist from --broker-list: ${missing.join(',')}. Current existent brokers: ${live.join(',')}`,
        );
      }
      const brokers = requested.length > 0 ? requested : live;
      io.out('Querying brokers for log directories information');
      // Broker by broker, so one that is down (and not yet fenced) leaves only its own dirs out.
      const answers = await Promise.all(
        brokers.map(async (id) => {
          try {
            return { id, dirs: await admin.describeLogDirs([id], topics.size === 0 ? null : [...topics]) };
          } catch (e) {
            if (!(e instanceof ClientError) || e instanceof KafkaResponseError) throw e;
            return { id, error: e };
          }
        }),
      );
      const result = new Map<number, DescribeLogDirsResult[]>();
      for (const a of answers) {
        if (a.dirs) for (const [id, dirs] of a.dirs) result.set(id, dirs);
        else
          io.err(
            `Warning: broker ${a.id} did not answer (${a.error.message}); its log directories are left out.`,
          );
      }
      if (result.size === 0) throw answers[0]!.error!;
      io.out(`Received log directory information from brokers ${[...result.keys()].join(',')}`);
      io.out(formatLogDirsJson(result, topics));
      return 0;
    } finally {
      client.close();
    }
  });
}
