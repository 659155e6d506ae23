/**
 * `skiff reassign-partitions --execute`: starts a reassignment (Kafka's AlterPartitionReassignments),
 * with --throttle on both throttle layers and --replica-alter-log-dirs-throttle, and replica moves
 * between a broker's log dirs (AlterReplicaLogDirs), waiting --timeout for each move to start.
 */
import { AlterOp, ConfigResourceType } from '../../client/admin.js';
import { ClientError } from '../../client/errors.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import { currentAssignment } from './reassign-generate.js';
import {
  checkExecutablePlan,
  compareTp,
  formatReassignmentJson,
  type PartitionMove,
  parseReassignmentJson,
  plural,
  proposedMoveMap,
  type ReassignContext,
  type ReplicaMove,
  replicaMovesOf,
  throttledReplicaLists,
  tpName,
} from './reassign-plan.js';
import { additionProgress } from './reassign-progress.js';

export async function execute(
  ctx: ReassignContext,
  json: string,
  opts: { additional: boolean; throttle?: number; logDirThrottle?: number; timeoutMs: number },
): Promise<number> {
  const plan = parseReassignmentJson(json);
  checkExecutablePlan(plan);
  const moves = replicaMovesOf(plan);
  const inProgress = await ctx.admin.listPartitionReassignments(null);
  if (!opts.additional && inProgress.size > 0) {
    throw new ClientError(
      'Cannot execute because there is an existing partition assignment.  Use --additional to override this and create a new partition assignment in addition to the existing one. The --additional flag can also be used to change the throttle by resubmitting the current reassignment.',
    );
  }
  const cluster = await ctx.admin.describeCluster();
  const unknown = plan.flatMap((p) => p.replicas).find((b) => !cluster.brokers.has(b));
  if (unknown !== undefined) throw new ClientError(`Unknown broker id ${unknown}`);
  const all = await currentAssignment(
    ctx,
    plan.map((p) => p.topic),
  );
  const missing = plan.filter((p) => !all.has(tpName(p)));
  if (missing.length > 0)
    throw new ClientError(`Unable to find partition: ${missing.map(tpName).join(', ')}`);
  const current = new Map(plan.map((p) => [tpName(p), all.get(tpName(p))!]));
  ctx.io.out('Current partition replica assignment');
  ctx.io.out('');
  ctx.io.out(formatReassignmentJson(current));
  ctx.io.out('');
  ctx.io.out('Save this to use as the --reassignment-json-file option during rollback');
  if (opts.throttle !== undefined || opts.logDirThrottle !== undefined) {
    ctx.io.out(
      'Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.',
    );
    if (opts.throttle !== undefined) {
      const replicasNow = new Map([...current].map(([k, v]) => [k, v.replicas]));
      await setInterBrokerThrottle(ctx, proposedMoveMap(inProgress, plan, replicasNow), opts.throttle);
    }
    if (opts.logDirThrottle !== undefined) {
      const brokers = [...new Set(moves.map((m) => m.broker))].sort((a, b) => a - b);
      await setBrokerConfigs(ctx, brokers, [
        ['replica.alter.log.dirs.io.max.bytes.per.second', String(opts.logDirThrottle)],
      ]);
      ctx.io.out(`The replica-alter-dir throttle limit was set to ${opts.logDirThrottle} B/s`);
    }
  }
  const results = await ctx.admin.alterPartitionReassignments(
    plan.map((p) => ({ tp: p, replicas: p.replicas })),
  );
  const errors = plan
    .filter((p) => results.get(tpName(p)) !== null)
    .sort(compareTp)
    .map((p) => `${tpName(p)}: ${results.get(tpName(p))?.message ?? 'no result'}`);
  if (errors.length > 0) throw new ClientError(`Error reassigning partition(s): ${errors.join('; ')}`);
  ctx.io.out(
    `Successfully started partition reassignment${plural(plan.length)} for ${[...plan]
      .sort(compareTp)
      .map(tpName)
      .join(',')}`,
  );
  const started = await ctx.admin
    .listPartitionReassignments(plan.map((p) => ({ topic: p.topic, partition: p.partition })))
    .catch((e: unknown) => e as Error);
  if (started instanceof Error)
    ctx.io.err(`skiff reassign-partitions: no progress to show: ${started.message}`);
  else
    for (const lines of (await additionProgress(ctx, started)).values()) for (const l of lines) ctx.io.out(l);
  if (moves.length > 0) await executeMoves(ctx, moves, opts.timeoutMs);
  return 0;
}

async function setInterBrokerThrottle(
  ctx: ReassignContext,
  moveMap: Map<string, Map<number, PartitionMove>>,
  rate: number,
): Promise<void> {
  const { leader, follower } = throttledReplicaLists(moveMap);
  for (const topic of [...moveMap.keys()].sort()) {
    await ctx.admin.incrementalAlterConfigs({ type: ConfigResourceType.topic, name: topic }, [
      { name: 'leader.replication.throttled.replicas', op: AlterOp.set, value: leader.get(topic)! },
      { name: 'follower.replication.throttled.replicas', op: AlterOp.set, value: follower.get(topic)! },
    ]);
  }
  const brokers = new Set<number>();
  for (const parts of moveMap.values()) {
    for (const m of parts.values()) for (const b of [...m.sources, ...m.destinations]) brokers.add(b);
  }
  await setBrokerConfigs(
    ctx,
    [...brokers].sort((a, b) => a - b),
    [
      ['leader.replication.throttled.rate', String(rate)],
      ['follower.replication.throttled.rate', String(rate)],
    ],
  );
  ctx.io.out(`The inter-broker throttle limit was set to ${rate} B/s`);
}

async function setBrokerConfigs(
  ctx: ReassignContext,
  brokers: readonly number[],
  values: readonly [string, string][],
) {
  for (const b of brokers) {
    await ctx.admin.incrementalAlterConfigs(
      { type: ConfigResourceType.broker, name: String(b) },
      values.map(([name, value]) => ({ name, op: AlterOp.set, value })),
    );
  }
}

/** Kafka's executeMoves: AlterReplicaLogDirs until every broker accepted (REPLICA_NOT_AVAILABLE: not yet). */
export async function executeMoves(
  ctx: ReassignContext,
  moves: readonly ReplicaMove[],
  timeoutMs: number,
): Promise<void> {
  const startMs = ctx.runtime.clock.nowMs();
  let pending = [...moves];
  for (;;) {
    const results = await ctx.admin.alterReplicaLogDirs(
      pending.map((m) => ({ broker: m.broker, tp: m, logDir: m.logDir })),
    );
    const started: ReplicaMove[] = [];
    for (const m of pending) {
      const key = `${m.broker}-${m.topic}-${m.partition}`;
      const err = results.get(key);
      if (err === null) started.push(m);
      else if (err !== undefined && err.code !== ErrorCode.REPLICA_NOT_AVAILABLE) {
        throw new ClientError(
          `Failed to alter dir for ${m.topic}-${m.partition}-${m.broker}: ${err.message}`,
        );
      }
    }
    for (const m of [...started].sort((a, b) => a.broker - b.broker || compareTp(a, b))) {
      ctx.io.out(
        `Successfully started moving log directory to ${m.logDir} for replica ${m.topic}-${m.partition} with broker ${m.broker} `,
      );
    }
    pending = pending.filter((m) => !started.includes(m));
    if (pending.length === 0) return;
    if (ctx.runtime.clock.nowMs() >= startMs + timeoutMs) {
      throw new ClientError(
        `Timed out before log directory move${plural(pending.length)} could be started for: ${pending
          .map((m) => `${m.topic}-${m.partition}-${m.broker}`)
          .join(',')}`,
      );
    }
    await ctx.runtime.sleep(100);
  }
}
