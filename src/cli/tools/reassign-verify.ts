/**
 * `skiff reassign-partitions --verify` (is it done? then the throttles go, unless
 * --preserve-throttles), `--cancel` (moves back what had not finished) and `--list` (what moves).
 */
import { AlterOp, ConfigResourceType } from '../../client/admin.js';
import { ClientError } from '../../client/errors.js';
import { topicPartitionKey } from '../../common/topic-partition.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import { executeMoves } from './reassign-execute.js';
import {
  compareTp,
  type PlannedPartition,
  parseReassignmentJson,
  plural,
  type ReassignContext,
  type ReplicaMove,
  replicaMovesOf,
  tpName,
} from './reassign-plan.js';
import { additionProgress } from './reassign-progress.js';

const BROKER_THROTTLES = [
  'leader.replication.throttled.rate',
  'follower.replication.throttled.rate',
  'replica.alter.log.dirs.io.max.bytes.per.second',
] as const;
const TOPIC_THROTTLES = ['leader.replication.throttled.replicas', 'follower.replication.throttled.replicas'];

interface LogDirState {
  readonly current: string | null;
  readonly future: string | null;
}

export async function verify(
  ctx: ReassignContext,
  json: string,
  preserveThrottles: boolean,
): Promise<number> {
  const plan = parseReassignmentJson(json);
  const inProgress = await ctx.admin.listPartitionReassignments(null);
  const notMoving = plan.filter((p) => !inProgress.has(tpName(p)));
  const replicasNow = new Map<string, readonly number[]>();
  if (notMoving.length > 0) {
    const described = await ctx.admin.describeTopics([...new Set(notMoving.map((p) => p.topic))]);
    for (const [name, t] of described) {
      if (t instanceof Error) {
        if (t.code !== ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) throw t;
        continue;
      }
      for (const p of t.partitions) replicasNow.set(topicPartitionKey(name, p.partition), p.replicas);
    }
  }
  const progress = await additionProgress(ctx, inProgress);
  ctx.io.out('Status of partition reassignment:');
  for (const p of [...plan].sort(compareTp)) {
    if (inProgress.has(tpName(p))) {
      ctx.io.out(`Reassignment of partition ${tpName(p)} is still in progress.`);
      for (const l of progress.get(tpName(p)) ?? []) ctx.io.out(l);
      continue;
    }
    const now = replicasNow.get(tpName(p)) ?? [];
    if (now.length === p.replicas.length && now.every((r, i) => p.replicas[i] === r)) {
      ctx.io.out(`Reassignment of partition ${tpName(p)} is completed.`);
    } else {
      ctx.io.out(
        `There is no active reassignment of partition ${tpName(p)}, but replica set is ${now.join(',')} rather than ${p.replicas.join(',')}.`,
      );
    }
  }
  const moves = replicaMovesOf(plan);
  const states = await logDirStates(ctx, moves);
  let movesOngoing = false;
  const lines: string[] = [];
  for (const m of [...moves].sort((a, b) => a.broker - b.broker || compareTp(a, b))) {
    const s = states.get(`${m.broker}-${m.topic}-${m.partition}`);
    const replica = `${m.topic}-${m.partition}-${m.broker}`;
    if (s === undefined) {
      movesOngoing = true;
      lines.push(`Partition ${tpName(m)} cannot be found in any live log directory on broker ${m.broker}.`);
    } else if (s.future !== null) {
      movesOngoing = true;
      lines.push(
        s.future === m.logDir
          ? `Reassignment of replica ${replica} is still in progress.`
          : `Partition ${tpName(m)} on broker ${m.broker} is being moved to log dir ${s.future} instead of ${m.logDir}.`,
      );
    } else if (s.current === m.logDir) {
      lines.push(`Reassignment of replica ${replica} completed successfully.`);
    } else {
      movesOngoing = true;
      lines.push(
        `Partition ${tpName(m)} on broker ${m.broker} is not being moved from log dir ${s.current} to ${m.logDir}.`,
      );
    }
  }
  ctx.io.out(lines.join('\n'));
  if (inProgress.size === 0 && !movesOngoing && !preserveThrottles) await clearAllThrottles(ctx, plan);
  return 0;
}

/** Where each named replica lives now and whether a future log is being built for it. */
async function logDirStates(
  ctx: ReassignContext,
  moves: readonly ReplicaMove[],
): Promise<Map<string, LogDirState>> {
  const out = new Map<string, LogDirState>();
  if (moves.length === 0) return out;
  const brokers = [...new Set(moves.map((m) => m.broker))];
  const topics = [...new Set(moves.map((m) => m.topic))];
  const byBroker = await ctx.admin.describeLogDirs(brokers, topics);
  for (const [broker, dirs] of byBroker) {
    for (const d of dirs) {
      if (d.errorCode !== 0) continue;
      for (const t of d.topics) {
        for (const p of t.partitions) {
          const key = `${broker}-${t.name}-${p.partitionIndex}`;
          const s = out.get(key) ?? { current: null, future: null };
          out.set(key, p.isFutureKey ? { ...s, future: d.logDir } : { ...s, current: d.logDir });
        }
      }
    }
  }
  return out;
}

/** Kafka's clearAllThrottles: every live broker and every broker of the plan; every topic of the plan. */
async function clearAllThrottles(ctx: ReassignContext, plan: readonly PlannedPartition[]): Promise<void> {
  const cluster = await ctx.admin.describeCluster();
  const brokers = new Set<number>(cluster.brokers.keys());
  for (const p of plan) for (const r of p.replicas) brokers.add(r);
  const brokerList = [...brokers].sort((a, b) => a - b);
  ctx.io.out(`Clearing broker-level throttles on broker${plural(brokerList.length)} ${brokerList.join(',')}`);
  for (const b of brokerList) {
    // A broker in the plan that is not registered cannot be altered; Kafka fails the same way.
    await ctx.admin.incrementalAlterConfigs(
      { type: ConfigResourceType.broker, name: String(b) },
      BROKER_THROTTLES.map((name) => ({ name, op: AlterOp.delete, value: null })),
    );
  }
  const topics = [...new Set(plan.map((p) => p.topic))].sort();
  ctx.io.out(`Clearing topic-level throttles on topic${plural(topics.length)} ${topics.join(',')}`);
  for (const topic of topics) {
    await ctx.admin.incrementalAlterConfigs(
      { type: ConfigResourceType.topic, name: topic },
      TOPIC_THROTTLES.map((name) => ({ name, op: AlterOp.delete, value: null })),
    );
  }
}

export async function cancel(
  ctx: ReassignContext,
  json: string,
  preserveThrottles: boolean,
  timeoutMs: number,
): Promise<number> {
  const plan = parseReassignmentJson(json);
  const inProgress = await ctx.admin.listPartitionReassignments(plan);
  // Kafka's tool skips moves that only add replicas here (a bug: they could never be cancelled).
  const cancelling = plan.filter((p) => inProgress.has(tpName(p))).sort(compareTp);
  if (cancelling.length > 0) {
    const results = await ctx.admin.alterPartitionReassignments(
      cancelling.map((p) => ({ tp: p, replicas: null })),
    );
    const errors = cancelling
      .filter((p) => results.get(tpName(p)) !== null)
      .map((p) => `${tpName(p)}: ${results.get(tpName(p))?.message ?? 'no result'}`);
    if (errors.length > 0) {
      throw new ClientError(
        `Error cancelling partition reassignment${plural(errors.length)} for: ${errors.join('; ')}`,
      );
    }
    ctx.io.out(
      `Successfully cancelled partition reassignment${plural(cancelling.length)} for: ${cancelling
        .map(tpName)
        .join(',')}`,
    );
  } else {
    ctx.io.out('None of the specified partition reassignments are active.');
  }
  // A log dir move in progress is cancelled by moving the replica back to where it is now.
  const states = await logDirStates(ctx, replicaMovesOf(plan));
  const back: ReplicaMove[] = [];
  for (const m of replicaMovesOf(plan)) {
    const s = states.get(`${m.broker}-${m.topic}-${m.partition}`);
    if (s?.future != null && s.current !== null) back.push({ ...m, logDir: s.current });
  }
  if (back.length === 0) ctx.io.out('None of the specified partition moves are active.');
  else await executeMoves(ctx, back, timeoutMs);
  if (!preserveThrottles) await clearAllThrottles(ctx, plan);
  return 0;
}

export async function list(ctx: ReassignContext): Promise<number> {
  const current = await ctx.admin.listPartitionReassignments(null);
  if (current.size === 0) {
    ctx.io.out('No partition reassignments found.');
    return 0;
  }
  ctx.io.out('Current partition reassignments:');
  for (const r of [...current.values()].sort(compareTp)) {
    const adding = r.addingReplicas.length > 0 ? ` adding: ${r.addingReplicas.join(',')}.` : '';
    const removing = r.removingReplicas.length > 0 ? ` removing: ${r.removingReplicas.join(',')}.` : '';
    ctx.io.out(`${tpName(r)}: replicas: ${r.replicas.join(',')}.${adding}${removing}`);
  }
  return 0;
}
