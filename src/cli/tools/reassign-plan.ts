/**
 * The plan of `skiff reassign-partitions`, apart from any broker: Kafka's reassignment and topics
 * JSON (parsed with every field checked, and written back), the replica moves between log dirs a
 * plan asks for, the checks --execute makes before it sends anything, and the throttled-replica
 * lists of a move (Kafka's calculateProposedMoveMap / calculateLeaderThrottles). Pure functions:
 * the tool's modes (reassign-partitions.ts) call them, and tests call them without a network.
 */
import type { Admin, PartitionReassignment } from '../../client/admin.js';
import { ClientError } from '../../client/errors.js';
import type { KafkaClient } from '../../client/kafka-client.js';
import type { ClientRuntime } from '../../client/runtime.js';
import { topicPartitionKey } from '../../common/topic-partition.js';
import type { CliIo } from '../cli.js';

/** What each mode of the tool runs with: the admin client, the output, the clock and sleep. */
export interface ReassignContext {
  readonly admin: Admin;
  /** The admin's connection, for Skiff's own API (SkiffDescribeReplication: how much is left). */
  readonly client: KafkaClient;
  readonly io: CliIo;
  readonly runtime: ClientRuntime;
}

/** Kafka's "any" log dir: the broker picks one. */
export const ANY_LOG_DIR = 'any';

/** One partition of a reassignment JSON: its target replicas and, per replica, a log dir or 'any'. */
export interface PlannedPartition {
  readonly topic: string;
  readonly partition: number;
  readonly replicas: readonly number[];
  readonly logDirs: readonly string[];
}

/** A replica's target log dir on its broker. */
export interface ReplicaMove {
  readonly topic: string;
  readonly partition: number;
  readonly broker: number;
  readonly logDir: string;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ClientError(`The input string is not a valid JSON (${(e as Error).message})`);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function versionOf(js: Record<string, unknown>): void {
  const v = js.version ?? 1;
  if (v !== 1) throw new ClientError(`Not supported version field value ${JSON.stringify(v)}`);
}

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

/** Kafka's parsePartitionReassignmentData (version 1); checks every field's type. */
export function parseReassignmentJson(text: string): PlannedPartition[] {
  const js = parseJson(text);
  if (!isObject(js)) throw new ClientError('The reassignment JSON must be an object');
  versionOf(js);
  const list = js.partitions ?? [];
  if (!Array.isArray(list)) throw new ClientError('"partitions" must be an array');
  return list.map((p, i): PlannedPartition => {
    if (!isObject(p)) throw new ClientError(`partition entry ${i} is not an object`);
    const { topic, partition, replicas } = p;
    if (typeof topic !== 'string' || topic === '')
      throw new ClientError(`partition entry ${i}: "topic" must be a non-empty string`);
    if (!isInt(partition) || partition < 0)
      throw new ClientError(`partition entry ${i}: "partition" must be a non-negative integer`);
    if (!Array.isArray(replicas) || !replicas.every(isInt))
      throw new ClientError(`partition entry ${i}: "replicas" must be an array of broker ids`);
    const dirs = p.log_dirs ?? replicas.map(() => ANY_LOG_DIR);
    if (!Array.isArray(dirs) || !dirs.every((d) => typeof d === 'string'))
      throw new ClientError(`partition entry ${i}: "log_dirs" must be an array of strings`);
    if (dirs.length !== replicas.length) {
      throw new ClientError(
        `Size of replicas list [${replicas.join(', ')}] is different from size of log dirs list [${dirs.join(', ')}] for partition ${topic}-${partition}`,
      );
    }
    return { topic, partition, replicas, logDirs: dirs };
  });
}

/** The replica → log dir moves a plan names (entries other than 'any'). */
export function replicaMovesOf(plan: readonly PlannedPartition[]): ReplicaMove[] {
  const out: ReplicaMove[] = [];
  for (const p of plan) {
    p.replicas.forEach((broker, i) => {
      const logDir = p.logDirs[i]!;
      if (logDir !== ANY_LOG_DIR) out.push({ topic: p.topic, partition: p.partition, broker, logDir });
    });
  }
  return out;
}

/** Kafka's parseExecuteAssignmentArgs checks. */
export function checkExecutablePlan(plan: readonly PlannedPartition[]): void {
  if (plan.length === 0) throw new ClientError('Partition reassignment list cannot be empty');
  if (plan.some((p) => p.replicas.length === 0))
    throw new ClientError('Partition replica list cannot be empty');
  const names = plan.map((p) => topicPartitionKey(p.topic, p.partition));
  const dupParts = [...new Set(names.filter((n, i) => names.indexOf(n) !== i))];
  if (dupParts.length > 0) {
    throw new ClientError(
      `Partition reassignment contains duplicate topic partitions: ${dupParts.join(',')}`,
    );
  }
  const dupReplicas = plan
    .map((p) => ({ name: topicPartitionKey(p.topic, p.partition), dups: duplicates(p.replicas) }))
    .filter((d) => d.dups.length > 0);
  if (dupReplicas.length > 0) {
    throw new ClientError(
      `Partition replica lists may not contain duplicate entries: ${dupReplicas
        .map((d) => `${d.name} contains multiple entries for ${d.dups.join(',')}`)
        .join('. ')}`,
    );
  }
}

export function duplicates<T>(xs: readonly T[]): T[] {
  return [...new Set(xs.filter((x, i) => xs.indexOf(x) !== i))];
}

/** Kafka's topics-to-move JSON (version 1): the topic names. */
export function parseTopicsJson(text: string): string[] {
  const js = parseJson(text);
  if (!isObject(js)) throw new ClientError('The topics JSON must be an object');
  versionOf(js);
  const list = js.topics ?? [];
  if (!Array.isArray(list)) throw new ClientError('"topics" must be an array');
  return list.map((t, i) => {
    if (!isObject(t) || typeof t.topic !== 'string' || t.topic === '')
      throw new ClientError(`topic entry ${i}: "topic" must be a non-empty string`);
    return t.topic;
  });
}

export function compareTp(a: { topic: string; partition: number }, b: { topic: string; partition: number }) {
  return a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition;
}

/** Kafka's formatAsReassignmentJson: partitions sorted, `log_dirs` 'any' unless a move names one. */
export function formatReassignmentJson(
  assignment: ReadonlyMap<string, { topic: string; partition: number; replicas: readonly number[] }>,
  moves: readonly ReplicaMove[] = [],
): string {
  const dirOf = new Map(moves.map((m) => [`${m.topic}-${m.partition}-${m.broker}`, m.logDir]));
  const partitions = [...assignment.values()].sort(compareTp).map((p) => ({
    topic: p.topic,
    partition: p.partition,
    replicas: [...p.replicas],
    log_dirs: p.replicas.map((r) => dirOf.get(`${p.topic}-${p.partition}-${r}`) ?? ANY_LOG_DIR),
  }));
  return JSON.stringify({ version: 1, partitions });
}

/** Sources (current replicas) and destinations (new replicas) of one partition's move. */
export interface PartitionMove {
  readonly sources: Set<number>;
  readonly destinations: Set<number>;
}

/**
 * Kafka's calculateProposedMoveMap: every move in progress (sources = replicas not being added,
 * destinations = adding) plus the proposed ones (sources from the move in progress if any, else
 * the current replicas; destinations = target minus sources).
 */
export function proposedMoveMap(
  current: ReadonlyMap<string, PartitionReassignment>,
  plan: readonly PlannedPartition[],
  currentReplicas: ReadonlyMap<string, readonly number[]>,
): Map<string, Map<number, PartitionMove>> {
  const moves = new Map<string, Map<number, PartitionMove>>();
  const topicMoves = (topic: string): Map<number, PartitionMove> => {
    let m = moves.get(topic);
    if (!m) {
      m = new Map();
      moves.set(topic, m);
    }
    return m;
  };
  for (const r of current.values()) {
    topicMoves(r.topic).set(r.partition, {
      sources: new Set(r.replicas.filter((x) => !r.addingReplicas.includes(x))),
      destinations: new Set(r.addingReplicas),
    });
  }
  for (const p of plan) {
    const m = topicMoves(p.topic);
    const sources =
      m.get(p.partition)?.sources ?? new Set(currentReplicas.get(topicPartitionKey(p.topic, p.partition)));
    m.set(p.partition, { sources, destinations: new Set(p.replicas.filter((r) => !sources.has(r))) });
  }
  return moves;
}

/** Topic throttle lists, `partition:broker` entries sorted as Kafka's TreeSet of strings sorts them. */
export function throttledReplicaLists(moves: ReadonlyMap<string, ReadonlyMap<number, PartitionMove>>): {
  leader: Map<string, string>;
  follower: Map<string, string>;
} {
  const leader = new Map<string, string>();
  const follower = new Map<string, string>();
  for (const [topic, parts] of moves) {
    const l = new Set<string>();
    const f = new Set<string>();
    for (const [p, move] of parts) {
      for (const s of move.sources) l.add(`${p}:${s}`);
      for (const d of move.destinations) if (!move.sources.has(d)) f.add(`${p}:${d}`);
    }
    leader.set(topic, [...l].sort().join(','));
    follower.set(topic, [...f].sort().join(','));
  }
  return { leader, follower };
}

export const plural = (n: number, s = 's') => (n === 1 ? '' : s);
export const tpName = (t: { topic: string; partition: number }) => topicPartitionKey(t.topic, t.partition);
