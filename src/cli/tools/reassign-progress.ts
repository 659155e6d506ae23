/**
 * How much is left of the reassignments in progress: for each replica being added, what its
 * partition's leader knows of it (SkiffDescribeReplication) — the offset it has fetched to and the
 * bytes it still has to copy, or, before its first fetch, the leader's log it will copy. Printed by
 * reassign-partitions --execute and --verify under Kafka's own lines.
 */
import type { PartitionReassignment } from '../../client/admin.js';
import { describeReplicationAll } from '../../client/skiff-admin.js';
import { compareTp, type ReassignContext, tpName } from './reassign-plan.js';
import { humanBytes, partitionOf } from './replication-tools.js';

/**
 * Per partition (`topic-partition`), one line per replica being added; partitions adding none are
 * absent. Extra information beside Kafka's lines: when it cannot be had, one stderr line says so
 * and the command goes on.
 */
export async function additionProgress(
  ctx: ReassignContext,
  inProgress: ReadonlyMap<string, PartitionReassignment>,
): Promise<Map<string, string[]>> {
  try {
    return await progressLines(ctx, inProgress);
  } catch (e) {
    ctx.io.err(
      `skiff reassign-partitions: no progress to show: ${e instanceof Error ? e.message : String(e)}`,
    );
    return new Map();
  }
}

async function progressLines(
  ctx: ReassignContext,
  inProgress: ReadonlyMap<string, PartitionReassignment>,
): Promise<Map<string, string[]>> {
  const adding = [...inProgress.values()].filter((r) => r.addingReplicas.length > 0);
  const out = new Map<string, string[]>();
  if (adding.length === 0) return out;
  const topics = [...new Set(adding.map((r) => r.topic))];
  const described = await ctx.admin.describeTopics(topics);
  const leaderOf = (r: PartitionReassignment): number => {
    const t = described.get(r.topic);
    if (t === undefined || t instanceof Error) return -1;
    return t.partitions.find((p) => p.partition === r.partition)?.leader ?? -1;
  };
  const leaders = [...new Set(adding.map(leaderOf).filter((l) => l >= 0))];
  const answers = await describeReplicationAll(
    ctx.client,
    leaders,
    new Map(topics.map((t) => [t, null])),
    false,
  );
  for (const r of [...adding].sort(compareTp)) {
    const leader = leaderOf(r);
    const lp = partitionOf(answers.get(leader), r.topic, r.partition);
    out.set(
      tpName(r),
      r.addingReplicas.map((broker) => {
        if (leader < 0) return `  Adding replica ${broker}: the partition has no leader to copy from`;
        if (lp?.role !== 0)
          return `  Adding replica ${broker}: leader ${leader} did not describe the partition`;
        const view = lp.replicas.find((v) => v.brokerId === broker);
        if (view === undefined || view.logEndOffset < 0n) {
          return `  Adding replica ${broker}: not fetching yet; ${lp.sizeBytes} bytes (${humanBytes(lp.sizeBytes)}) to copy from leader ${leader} (LEO ${lp.logEndOffset})`;
        }
        const left =
          view.bytesToCatchUp < 0n
            ? 'unknown bytes'
            : `${view.bytesToCatchUp} bytes (${humanBytes(view.bytesToCatchUp)})`;
        return `  Adding replica ${broker}: at offset ${view.logEndOffset} of ${lp.logEndOffset}, ${left} left to copy from leader ${leader}${view.inIsr ? ', in the ISR' : ''}`;
      }),
    );
  }
  return out;
}
