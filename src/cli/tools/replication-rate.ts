/**
 * `skiff replication-rate`: the replication rate every broker OBSERVES, beside the throttle rates
 * it has in effect — the seed's advice (§13.3) to confirm a throttle by watching the actual rate,
 * not only `configs --describe`. Asks every live broker (SkiffDescribeReplication): per broker, its
 * leader-side bytes/s out and follower-side bytes/s in (all partitions and throttled ones, Kafka's
 * windowed Rate over replication.quota.window.num × replication.quota.window.size.seconds) and
 * both throttle rates; per partition, the leader's bytes/s to each follower and each follower's
 * bytes/s in, whether that side's throttled-replicas list names it, and the replica's lag.
 */
import { Admin } from '../../client/admin.js';
import { ClientError } from '../../client/errors.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import { describeReplicationAll } from '../../client/skiff-admin.js';
import type { SkiffDescribeReplicationResponse } from '../../protocol/generated/SkiffDescribeReplicationResponse.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { ADMIN_FLAGS, adminClient, runTool, type ToolDef, UsageError } from './common.js';
import { requireTopic } from './replication-tools.js';

export const REPLICATION_RATE: ToolDef = {
  ...commandInfo('replication-rate'),
  usage: [
    'Usage: skiff replication-rate --bootstrap-server <host:port> [--broker <id>] [--topic <topic>] [--json]',
  ],
  flags: [
    ...ADMIN_FLAGS,
    {
      name: 'broker',
      arg: 'id',
      help: "only this broker's line and the replicas it leads or follows",
    },
    { name: 'topic', arg: 'topic', help: 'only this topic' },
    { name: 'json', help: 'one JSON document instead of text lines' },
  ],
  notes: [
    'Per broker: LeaderOut, the bytes/s it sent to followers (all partitions, and of them the',
    "throttled ones: those its topics' leader.replication.throttled.replicas list for it), and",
    'FollowerIn, the bytes/s it appended from leaders (all, throttled), beside its',
    'leader./follower.replication.throttled.rate in effect (none when unset). Then one line per',
    'replica and side: Side leader-out is the bytes/s the leader sent to that replica, Side',
    'follower-in the bytes/s that replica appended, as each broker measured them; Throttled says whether',
    "that side's throttled-replicas list names the partition on that broker (a throttle acts only",
    'when the rate is also set); Lag is the leader LEO minus the replica LEO as the leader saw',
    "it. Rates are Kafka's windowed Rate over replication.quota.window.num samples of",
    'replication.quota.window.size.seconds (11 x 1 s): an average over the last ~11 s (less',
    'on a broker started less than that ago), not an instant; a replica that just began copying',
    'reads low for that long. A broker that does not answer is named on stderr; the others are',
    'still printed.',
  ],
};

const MiB = 1024 * 1024;

/** One side of one broker: observed bytes/s (null: not measured) and the throttle (null: none). */
export interface SideRates {
  readonly bytesPerSec: number | null;
  readonly throttledBytesPerSec: number | null;
  readonly throttleRate: number | null;
}

export interface BrokerRates {
  readonly broker: number;
  readonly leaderOut: SideRates;
  readonly followerIn: SideRates;
}

export interface ReplicaRate {
  readonly topic: string;
  readonly partition: number;
  readonly leader: number;
  readonly replica: number;
  /** leader: bytes/s the leader sent to the replica; follower: bytes/s the replica appended. */
  readonly role: 'leader' | 'follower';
  /** null: not measured. */
  readonly bytesPerSec: number | null;
  readonly throttled: boolean;
  /** Leader LEO − replica LEO as the leader saw it; null when unknown. */
  readonly lag: number | null;
}

const orNull = (n: bigint): number | null => (n < 0n ? null : Number(n));

/** Bytes/s as Kafka's tools print rates: raw, then in MiB/s. */
export function formatRate(bytesPerSec: number | null, none = 'n/a'): string {
  if (bytesPerSec === null) return none;
  return `${Math.round(bytesPerSec)} B/s (${(bytesPerSec / MiB).toFixed(2)} MiB/s)`;
}

export function formatBrokerRates(b: BrokerRates): string {
  return [
    `Broker: ${b.broker}`,
    `LeaderOut: ${formatRate(b.leaderOut.bytesPerSec)}`,
    `LeaderOutThrottled: ${formatRate(b.leaderOut.throttledBytesPerSec)}`,
    `LeaderThrottleRate: ${formatRate(b.leaderOut.throttleRate, 'none')}`,
    `FollowerIn: ${formatRate(b.followerIn.bytesPerSec)}`,
    `FollowerInThrottled: ${formatRate(b.followerIn.throttledBytesPerSec)}`,
    `FollowerThrottleRate: ${formatRate(b.followerIn.throttleRate, 'none')}`,
  ].join('\t');
}

export function formatReplicaRate(r: ReplicaRate): string {
  return [
    `Topic: ${r.topic}`,
    `Partition: ${r.partition}`,
    `Leader: ${r.leader < 0 ? 'none' : r.leader}`,
    `Replica: ${r.replica}`,
    `Side: ${r.role === 'leader' ? 'leader-out' : 'follower-in'}`,
    `Rate: ${formatRate(r.bytesPerSec)}`,
    `Throttled: ${r.throttled ? 'yes' : 'no'}`,
    `Lag: ${r.lag === null ? 'unknown' : r.lag}`,
  ].join('\t');
}

/** The broker lines and replica lines of every answer (Errors skipped), sorted. */
export function collectRates(answers: ReadonlyMap<number, SkiffDescribeReplicationResponse | Error>): {
  brokers: BrokerRates[];
  replicas: ReplicaRate[];
} {
  const brokers: BrokerRates[] = [];
  const replicas: ReplicaRate[] = [];
  // The leader's view of each replica's lag, keyed topic/partition/replica.
  const lags = new Map<string, number | null>();
  for (const resp of answers.values()) {
    if (resp instanceof Error) continue;
    for (const t of resp.topics)
      for (const p of t.partitions)
        if (p.errorCode === 0 && p.role === 0)
          for (const v of p.replicas) lags.set(`${t.name}/${p.partitionIndex}/${v.brokerId}`, orNull(v.lag));
  }
  for (const [broker, resp] of answers) {
    if (resp instanceof Error) continue;
    brokers.push({
      broker,
      leaderOut: {
        bytesPerSec: orNull(resp.leaderReplicationBytesPerSec),
        throttledBytesPerSec: orNull(resp.leaderThrottledReplicationBytesPerSec),
        throttleRate: orNull(resp.leaderThrottleRate),
      },
      followerIn: {
        bytesPerSec: orNull(resp.followerReplicationBytesPerSec),
        throttledBytesPerSec: orNull(resp.followerThrottledReplicationBytesPerSec),
        throttleRate: orNull(resp.followerThrottleRate),
      },
    });
    for (const t of resp.topics) {
      for (const p of t.partitions) {
        if (p.errorCode !== 0) continue;
        const at = { topic: t.name, partition: p.partitionIndex };
        if (p.role === 0) {
          for (const v of p.replicas) {
            if (v.brokerId === broker) continue;
            replicas.push({
              ...at,
              leader: broker,
              replica: v.brokerId,
              role: 'leader',
              bytesPerSec: orNull(v.observedReplicationBytesPerSec),
              throttled: p.leaderThrottled,
              lag: orNull(v.lag),
            });
          }
        } else if (p.role === 1) {
          replicas.push({
            ...at,
            leader: p.leaderId,
            replica: broker,
            role: 'follower',
            bytesPerSec: orNull(p.followerReplicationBytesPerSec),
            throttled: p.followerThrottled,
            lag: lags.get(`${t.name}/${p.partitionIndex}/${broker}`) ?? null,
          });
        }
      }
    }
  }
  brokers.sort((x, y) => x.broker - y.broker);
  replicas.sort(
    (x, y) =>
      (x.topic < y.topic ? -1 : x.topic > y.topic ? 1 : 0) ||
      x.partition - y.partition ||
      x.replica - y.replica ||
      (x.role === y.role ? 0 : x.role === 'leader' ? -1 : 1),
  );
  return { brokers, replicas };
}

export function runReplicationRate(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(REPLICATION_RATE, args, io, async (flags) => {
    const target = flags.int('broker') ?? null;
    if (target !== null && target < 0)
      throw new UsageError(`--broker expects a broker id ≥ 0, got ${target}`);
    const topic = flags.get('topic');
    if (topic !== undefined && topic === '') throw new UsageError('--topic expects a topic name');
    const client = adminClient('replication-rate', flags, runtime);
    try {
      const admin = new Admin(client);
      if (topic !== undefined) await requireTopic(admin, topic);
      const cluster = await admin.describeCluster();
      const live = [...cluster.brokers.keys()].sort((x, y) => x - y);
      const answers = await describeReplicationAll(
        client,
        live,
        topic === undefined ? null : new Map([[topic, null]]),
        false,
      );
      const all = collectRates(answers);
      const mine = (id: number) => target === null || id === target;
      const brokers = all.brokers.filter((b) => mine(b.broker));
      const replicas = all.replicas.filter((r) => mine(r.leader) || mine(r.replica));
      if (target !== null && !cluster.brokers.has(target) && replicas.length === 0) {
        throw new ClientError(
          `broker ${target} is not registered and no leader reports a replica on it${topic === undefined ? '' : ` of ${topic}`}`,
        );
      }
      const unreachable = [...answers]
        .filter((e): e is [number, Error] => e[1] instanceof Error && mine(e[0]))
        .sort((x, y) => x[0] - y[0]);
      const mentioned = new Set(replicas.flatMap((r) => [r.leader, r.replica]));
      const down = [...mentioned].filter((id) => id >= 0 && !cluster.brokers.has(id) && mine(id));
      down.sort((x, y) => x - y);
      if (flags.has('json')) {
        io.out(
          JSON.stringify({
            brokers,
            replicas,
            unreachableBrokers: [...unreachable.map((e) => e[0]), ...down].sort((x, y) => x - y),
          }),
        );
      } else {
        for (const b of brokers) io.out(formatBrokerRates(b));
        for (const r of replicas) io.out(formatReplicaRate(r));
      }
      for (const [id, e] of unreachable)
        io.err(`skiff replication-rate: broker ${id} did not answer (${e.message.split('\n')[0]})`);
      for (const id of down)
        io.err(
          `skiff replication-rate: broker ${id} is not registered (stopped?): only its leaders' view of it is shown`,
        );
      return 0;
    } finally {
      client.close();
    }
  });
}
