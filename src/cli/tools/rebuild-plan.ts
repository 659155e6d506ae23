/**
 * `skiff rebuild-plan`: for each partition with a replica on a (stopped or lagging) broker, what
 * happens when it fetches again — CATCH UP from its LEO, or REBUILD (its LEO is below the leader's
 * log start offset: it discards its log and refetches from the leader's log start) — with the
 * bytes to copy, the bytes it will discard and the ETA under the current throttle settings. The
 * pre-stop checklist of the seed's §13.3 as one command. The replica's LEO is the leader's view
 * (the offset of its latest Fetch, SkiffDescribeReplication); the bytes come from the leader's log.
 */
import { Admin, type ConfigEntry, ConfigResourceType } from '../../client/admin.js';
import { ClientError } from '../../client/errors.js';
import type { TopicMetadata } from '../../client/kafka-client.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import { describeReplicationAll } from '../../client/skiff-admin.js';
import type {
  DescribeReplicationPartitionResult,
  SkiffDescribeReplicationResponse,
} from '../../protocol/generated/SkiffDescribeReplicationResponse.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { ADMIN_FLAGS, adminClient, runTool, type ToolDef, UsageError } from './common.js';
import { humanBytes, humanDuration, partitionOf, requireTopic } from './replication-tools.js';

export const REBUILD_PLAN: ToolDef = {
  ...commandInfo('rebuild-plan'),
  usage: [
    'Usage: skiff rebuild-plan --bootstrap-server <host:port> [--broker <id>] [--topic <topic>] [--json]',
  ],
  flags: [
    ...ADMIN_FLAGS,
    { name: 'broker', arg: 'id', help: 'the broker whose replicas to plan for; every follower if absent' },
    { name: 'topic', arg: 'topic', help: 'only this topic' },
    { name: 'json', help: 'one JSON document instead of text lines' },
  ],
  notes: [
    "CATCH UP: the replica's LEO is at or above the leader's log start offset; it copies the",
    "leader's bytes from its LEO. REBUILD: its LEO is below the leader's log start offset; it",
    "discards its whole log and copies the leader's log from the log start offset. The replica's",
    'LEO is what the leader saw on its latest Fetch (unknown until it fetched in this leader',
    'epoch: then its own answer is used when it is up). Bytes to discard on REBUILD are the',
    "replica's log size, known only when its broker answers. ETA: bytes to copy divided by the",
    'throttle rate that applies (leader.replication.throttled.rate on the leader when the topic',
    'lists partition:leader or * in leader.replication.throttled.replicas, follower.replication.',
    "throttled.rate on the replica's broker when it is listed in follower.replication.throttled.",
    'replicas; the lower of the two). A rate is a per-broker budget shared by every throttled',
    'partition it copies, so the TOTAL line divides the sum. A stopped broker cannot be asked for',
    'its own configs: its dynamic configs stored in the cluster metadata (per broker, then cluster-',
    'wide) are used for it, as a live broker describes them (and said so). Observed: the bytes/s',
    'the leader measured to the replica (its replication quota window), n/a when not measured.',
    "REBUILDING: a replica whose broker rebuilt its log (discarded it and restarted at the leader's",
    "log start; in that broker's events since it started) and that is not back in the ISR: the",
    'rebuild is in progress, BytesToCopy is what is left of it.',
    "Replicas with nothing to copy (the leader itself, or caught up to the leader's LEO) are left",
    'out, counted in an UP TO DATE line (upToDate in --json): they need no rebuild.',
  ],
};

/** Kafka's "unlimited" rate (Long.MAX_VALUE). */
const UNLIMITED = 9223372036854775807n;

export type PlanAction = 'CATCH UP' | 'REBUILD' | 'REBUILDING' | 'UNKNOWN' | 'LEADER';

export interface PlanRow {
  readonly topic: string;
  readonly partition: number;
  readonly broker: number;
  readonly leader: number;
  readonly action: PlanAction;
  readonly inIsr: boolean;
  readonly replicaLogEndOffset: bigint;
  readonly leaderLogStartOffset: bigint;
  readonly leaderLogEndOffset: bigint;
  /** -1: unknown. */
  readonly bytesToCopy: bigint;
  /** -1: unknown. */
  readonly bytesToDiscard: bigint;
  /** Bytes/s that applies, null when unthrottled. */
  readonly throttleBytesPerSec: bigint | null;
  readonly etaSeconds: number | null;
  /** Replication bytes/s to this replica as its leader measured it; null when not measured. */
  readonly observedBytesPerSec: number | null;
  /** REBUILDING: when its broker rebuilt the log (ms since the epoch, that broker's clock). */
  readonly rebuildingSinceMs: number | null;
}

/** A replica's broker's latest rebuild of a partition's log (its SkiffDescribeReplication events). */
export interface RebuildEvent {
  readonly timeMs: number;
  readonly bytesDiscarded: number;
}

/**
 * The latest `rebuild` event for `topic`-`partition` among a broker's operator events (it
 * discarded its log below the leader's log start and restarted there), or null.
 */
export function latestRebuild(
  resp: SkiffDescribeReplicationResponse | Error | undefined,
  topic: string,
  partition: number,
): RebuildEvent | null {
  if (resp === undefined || resp instanceof Error) return null;
  let latest: RebuildEvent | null = null;
  for (const e of resp.events) {
    if (e.event !== 'rebuild') continue;
    let f: { topic?: unknown; partition?: unknown; bytesDiscarded?: unknown };
    try {
      f = JSON.parse(e.fieldsJson) as typeof f;
    } catch {
      continue;
    }
    if (f.topic !== topic || f.partition !== partition) continue;
    if (latest === null || Number(e.timeMs) >= latest.timeMs)
      latest = { timeMs: Number(e.timeMs), bytesDiscarded: Number(f.bytesDiscarded ?? -1) };
  }
  return latest;
}

/** Does a *.replication.throttled.replicas value list `partition:broker` (or `*`)? */
export function throttledReplicasInclude(
  value: string | undefined,
  partition: number,
  broker: number,
): boolean {
  if (value === undefined) return false;
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return items.includes('*') || items.includes(`${partition}:${broker}`);
}

function configValue(entries: readonly ConfigEntry[] | null, name: string): string | undefined {
  const e = entries?.find((c) => c.name === name);
  return e?.value ?? undefined;
}

function rateOf(entries: readonly ConfigEntry[] | null, name: string): bigint | null {
  const v = configValue(entries, name);
  if (v === undefined || !/^\d+$/.test(v)) return null;
  const n = BigInt(v);
  return n >= UNLIMITED || n <= 0n ? null : n;
}

function formatRow(r: PlanRow): string {
  const bytes = (n: bigint) => (n < 0n ? 'unknown' : `${n} (${humanBytes(n)})`);
  const eta =
    r.action === 'LEADER'
      ? 'n/a'
      : r.bytesToCopy < 0n
        ? 'unknown'
        : r.throttleBytesPerSec === null
          ? 'unthrottled'
          : `${humanDuration(r.etaSeconds ?? 0)} at ${r.throttleBytesPerSec} B/s`;
  return [
    `Partition: ${r.topic}-${r.partition}`,
    `Broker: ${r.broker}`,
    `Leader: ${r.leader < 0 ? 'none' : r.leader}`,
    `Action: ${r.action}`,
    `InIsr: ${r.inIsr}`,
    `ReplicaLEO: ${r.replicaLogEndOffset < 0n ? 'unknown' : r.replicaLogEndOffset}`,
    `LeaderLogStart: ${r.leaderLogStartOffset}`,
    `LeaderLEO: ${r.leaderLogEndOffset}`,
    `BytesToCopy: ${bytes(r.bytesToCopy)}`,
    `BytesToDiscard: ${bytes(r.bytesToDiscard)}`,
    `ETA: ${eta}`,
    `Observed: ${r.observedBytesPerSec === null ? 'n/a' : `${r.observedBytesPerSec} B/s`}`,
  ].join('\t');
}

/** One replica to plan for: which partition, on which broker, and its leader now. */
export interface PlanTarget {
  readonly topic: string;
  readonly partition: number;
  readonly broker: number;
  readonly leader: number;
}

/**
 * The throttle rate that applies to copying `w` (the lower of the leader's leader-side and the
 * replica broker's follower-side rate, each only when the topic lists the replica); null: none.
 */
export function applicableRate(
  leaderCfg: readonly ConfigEntry[] | null,
  followerCfg: readonly ConfigEntry[] | null,
  topicCfg: readonly ConfigEntry[] | null,
  w: PlanTarget,
): bigint | null {
  const rates: bigint[] = [];
  const leaderRate = rateOf(leaderCfg, 'leader.replication.throttled.rate');
  const followerRate = rateOf(followerCfg, 'follower.replication.throttled.rate');
  const leaderList = configValue(topicCfg, 'leader.replication.throttled.replicas');
  const followerList = configValue(topicCfg, 'follower.replication.throttled.replicas');
  if (leaderRate !== null && throttledReplicasInclude(leaderList, w.partition, w.leader))
    rates.push(leaderRate);
  if (followerRate !== null && throttledReplicasInclude(followerList, w.partition, w.broker))
    rates.push(followerRate);
  return rates.length === 0 ? null : rates.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))[0]!;
}

/**
 * The plan for one replica from its leader's description of the partition (`leader`, undefined
 * when no leader described it), the replica's own (`own`, undefined when its broker did not
 * answer) and the throttle rate that applies: CATCH UP when the replica's LEO is at or past the
 * leader's log start, REBUILD below it, UNKNOWN when neither side knows its LEO, LEADER for the
 * leader itself; REBUILDING instead of CATCH UP while a rebuild its broker made (`rebuilt`) has
 * not brought it back into the ISR yet.
 */
export function planRow(
  w: PlanTarget,
  leader: DescribeReplicationPartitionResult | undefined,
  own: DescribeReplicationPartitionResult | undefined,
  rate: bigint | null,
  rebuilt: RebuildEvent | null = null,
): PlanRow {
  const none = {
    throttleBytesPerSec: null,
    etaSeconds: null,
    observedBytesPerSec: null,
    rebuildingSinceMs: null,
  };
  if (leader === undefined) {
    return {
      ...w,
      ...none,
      action: 'UNKNOWN',
      inIsr: false,
      replicaLogEndOffset: own?.logEndOffset ?? -1n,
      leaderLogStartOffset: -1n,
      leaderLogEndOffset: -1n,
      bytesToCopy: -1n,
      bytesToDiscard: -1n,
    };
  }
  if (w.broker === w.leader) {
    return {
      ...w,
      ...none,
      action: 'LEADER',
      inIsr: true,
      replicaLogEndOffset: leader.logEndOffset,
      leaderLogStartOffset: leader.logStartOffset,
      leaderLogEndOffset: leader.logEndOffset,
      bytesToCopy: 0n,
      bytesToDiscard: 0n,
    };
  }
  // The leader's view; when it has not heard from the replica this epoch, the replica's own.
  const view = leader.replicas.find((r) => r.brokerId === w.broker);
  const known = view !== undefined && view.logEndOffset >= 0n;
  const leo = known ? view.logEndOffset : (own?.logEndOffset ?? -1n);
  let bytesToCopy = known ? view.bytesToCatchUp : -1n;
  if (leo >= 0n && bytesToCopy < 0n && leo >= leader.logEndOffset) bytesToCopy = 0n;
  const rebuild = leo >= 0n && leo < leader.logStartOffset;
  const rebuilding = rebuilt !== null && !(view?.inIsr ?? false) && bytesToCopy !== 0n;
  let bytesToDiscard = -1n;
  if (rebuild) bytesToDiscard = own ? own.sizeBytes : -1n;
  else if (leo >= 0n) bytesToDiscard = 0n;
  return {
    ...w,
    action: leo < 0n ? 'UNKNOWN' : rebuild ? 'REBUILD' : rebuilding ? 'REBUILDING' : 'CATCH UP',
    rebuildingSinceMs: rebuilding ? rebuilt.timeMs : null,
    inIsr: view?.inIsr ?? false,
    replicaLogEndOffset: leo,
    leaderLogStartOffset: leader.logStartOffset,
    leaderLogEndOffset: leader.logEndOffset,
    bytesToCopy,
    bytesToDiscard,
    throttleBytesPerSec: rate,
    etaSeconds: rate === null || bytesToCopy < 0n ? null : Number(bytesToCopy) / Number(rate),
    observedBytesPerSec:
      view && view.observedReplicationBytesPerSec >= 0n ? Number(view.observedReplicationBytesPerSec) : null,
  };
}

/** Per copying broker: every row's bytes, the throttled ones (one budget at the lowest rate), the unknown. */
export interface BrokerTotal {
  bytes: bigint;
  throttled: bigint;
  rate: bigint | null;
  unknown: number;
}

export function planTotals(rows: readonly PlanRow[]): Map<number, BrokerTotal> {
  const totals = new Map<number, BrokerTotal>();
  for (const r of rows) {
    if (r.action === 'LEADER') continue;
    const t = totals.get(r.broker) ?? { bytes: 0n, throttled: 0n, rate: null, unknown: 0 };
    if (r.bytesToCopy < 0n) t.unknown++;
    else {
      t.bytes += r.bytesToCopy;
      if (r.throttleBytesPerSec !== null) {
        t.throttled += r.bytesToCopy;
        t.rate = t.rate === null || r.throttleBytesPerSec < t.rate ? r.throttleBytesPerSec : t.rate;
      }
    }
    totals.set(r.broker, t);
  }
  return totals;
}

/**
 * The configs a plan reads, each asked once: broker configs (a stopped broker's are its dynamic
 * configs stored in the cluster metadata, which a live broker describes for it; `note` says so)
 * and topic configs.
 */
function throttleConfigs(
  admin: Admin,
  brokers: ReadonlyMap<number, unknown>,
  note: string[],
): {
  brokerCfg(id: number): Promise<ConfigEntry[] | null>;
  topicCfg(name: string): Promise<ConfigEntry[] | null>;
} {
  const brokerConfigs = new Map<number, ConfigEntry[] | null>();
  const topicConfigs = new Map<string, ConfigEntry[] | null>();
  const describe = (
    type: (typeof ConfigResourceType)[keyof typeof ConfigResourceType],
    name: string,
  ): Promise<ConfigEntry[] | null> => admin.describeConfigs({ type, name }).catch(() => null);
  return {
    async brokerCfg(id) {
      if (brokerConfigs.has(id)) return brokerConfigs.get(id)!;
      const cfg = await describe(ConfigResourceType.broker, String(id));
      if (cfg === null)
        note.push(`the configs of broker ${id} could not be described: no throttle of its applied`);
      else if (!brokers.has(id)) {
        note.push(
          `broker ${id} is not live: its throttle rates are its dynamic configs stored in the cluster metadata (not its server.properties)`,
        );
      }
      brokerConfigs.set(id, cfg);
      return cfg;
    },
    async topicCfg(name) {
      if (!topicConfigs.has(name)) topicConfigs.set(name, await describe(ConfigResourceType.topic, name));
      return topicConfigs.get(name)!;
    },
  };
}

/**
 * A replica with nothing to copy: the leader's own, or one caught up to the leader's LEO. The plan
 * leaves these out (an internal topic's partitions would otherwise fill it with 0-byte rows).
 */
export function needsNothing(r: PlanRow): boolean {
  return r.action === 'LEADER' || (r.action === 'CATCH UP' && r.bytesToCopy === 0n);
}

/**
 * The plan as one JSON line (--json) or as Kafka-style tab-separated lines, TOTAL lines and notes;
 * `upToDate` replicas needing nothing were left out of `rows`.
 */
function printPlan(
  io: CliIo,
  json: boolean,
  target: number | null,
  live: readonly number[],
  rows: readonly PlanRow[],
  upToDate: number,
  note: readonly string[],
): void {
  const totals = planTotals(rows);
  if (json) {
    io.out(
      JSON.stringify({
        brokersAnswering: live,
        upToDate,
        partitions: rows.map((r) => ({
          topic: r.topic,
          partition: r.partition,
          broker: r.broker,
          leader: r.leader,
          action: r.action,
          inIsr: r.inIsr,
          replicaLogEndOffset: Number(r.replicaLogEndOffset),
          leaderLogStartOffset: Number(r.leaderLogStartOffset),
          leaderLogEndOffset: Number(r.leaderLogEndOffset),
          bytesToCopy: Number(r.bytesToCopy),
          bytesToDiscard: Number(r.bytesToDiscard),
          throttleBytesPerSec: r.throttleBytesPerSec === null ? null : Number(r.throttleBytesPerSec),
          etaSeconds: r.etaSeconds,
          observedBytesPerSec: r.observedBytesPerSec,
          rebuildingSinceMs: r.rebuildingSinceMs,
        })),
        totals: [...totals].map(([broker, t]) => ({
          broker,
          bytesToCopy: Number(t.bytes),
          throttledBytes: Number(t.throttled),
          throttleBytesPerSec: t.rate === null ? null : Number(t.rate),
          etaSeconds: t.rate === null ? null : Number(t.throttled) / Number(t.rate),
          partitionsUnknown: t.unknown,
        })),
        notes: [...new Set(note)],
      }),
    );
    return;
  }
  if (rows.length === 0 && upToDate === 0) {
    io.out(target === null ? 'No follower replicas.' : `Broker ${target} hosts no replica.`);
    return;
  }
  for (const r of rows) io.out(formatRow(r));
  for (const [broker, t] of [...totals].sort((x, y) => x[0] - y[0])) {
    const eta =
      t.rate === null
        ? 'unthrottled'
        : `${humanDuration(Number(t.throttled) / Number(t.rate))} for ${t.throttled} throttled bytes at ${t.rate} B/s`;
    io.out(
      `TOTAL\tBroker: ${broker}\tBytesToCopy: ${t.bytes} (${humanBytes(t.bytes)})\tETA: ${eta}${t.unknown > 0 ? `\tUnknown: ${t.unknown} partitions` : ''}`,
    );
  }
  if (upToDate > 0) io.out(`UP TO DATE\tReplicas: ${upToDate} (nothing to copy: not listed)`);
  for (const n of new Set(note)) io.err(`skiff rebuild-plan: ${n}`);
}

export function runRebuildPlan(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(REBUILD_PLAN, args, io, async (flags) => {
    const target = flags.int('broker') ?? null;
    if (target !== null && target < 0)
      throw new UsageError(`--broker expects a broker id ≥ 0, got ${target}`);
    const topicFlag = flags.get('topic');
    const client = adminClient('rebuild-plan', flags, runtime);
    try {
      const admin = new Admin(client);
      const cluster = await admin.describeCluster();
      const live = [...cluster.brokers.keys()].sort((x, y) => x - y);
      let topics: TopicMetadata[];
      if (topicFlag !== undefined) topics = [await requireTopic(admin, topicFlag)];
      else {
        const names = await admin.listTopics(true);
        const described = await admin.describeTopics(names);
        topics = [...described.values()].filter((t): t is TopicMetadata => !(t instanceof Error));
      }
      topics.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
      const wanted: PlanTarget[] = [];
      const replicaBrokers = new Set<number>();
      for (const t of topics) {
        for (const p of t.partitions) {
          for (const r of p.replicas) {
            if (target !== null ? r !== target : r === p.leader) continue;
            wanted.push({ topic: t.name, partition: p.partition, broker: r, leader: p.leader });
            replicaBrokers.add(r);
          }
        }
      }
      if (target !== null && !cluster.brokers.has(target) && wanted.length === 0) {
        throw new ClientError(`broker ${target} hosts no replica${topicFlag ? ` of ${topicFlag}` : ''}`);
      }
      const filter = new Map<string, number[] | null>();
      for (const w of wanted) filter.set(w.topic, null);
      const askBrokers = [
        ...new Set([...wanted.map((w) => w.leader).filter((l) => l >= 0), ...replicaBrokers]),
      ].filter((id) => cluster.brokers.has(id));
      const answers =
        wanted.length === 0 ? new Map() : await describeReplicationAll(client, askBrokers, filter, false);

      const note: string[] = [];
      const { brokerCfg, topicCfg } = throttleConfigs(admin, cluster.brokers, note);
      const rows: PlanRow[] = [];
      for (const w of wanted) {
        const lp = w.leader >= 0 ? partitionOf(answers.get(w.leader), w.topic, w.partition) : undefined;
        const own = partitionOf(answers.get(w.broker), w.topic, w.partition);
        const rebuilt = latestRebuild(answers.get(w.broker), w.topic, w.partition);
        if (lp?.role !== 0) {
          if (w.leader < 0) note.push(`${w.topic}-${w.partition} has no leader: nothing can be copied`);
          else note.push(`${w.topic}-${w.partition}: leader ${w.leader} did not describe the partition`);
        }
        const rate =
          lp?.role === 0 && w.broker !== w.leader
            ? applicableRate(await brokerCfg(w.leader), await brokerCfg(w.broker), await topicCfg(w.topic), w)
            : null;
        rows.push(planRow(w, lp?.role === 0 ? lp : undefined, own, rate, rebuilt));
      }
      const listed = rows.filter((r) => !needsNothing(r));
      printPlan(io, flags.has('json'), target, live, listed, rows.length - listed.length, note);
      return 0;
    } finally {
      client.close();
    }
  });
}
