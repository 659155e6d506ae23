import { topicPartitionKey } from '../common/topic-partition.js';
import type {
  AlterPartitionPartitionResult,
  AlterPartitionResult,
  ControllerRequestBody,
  ElectLeadersResult,
  PartitionResults,
} from '../metadata/controller-requests.js';
import { historyOps } from '../metadata/isr-history.js';
import type { PartitionRecord } from '../metadata/keys.js';
import type { Compare, Op } from '../metadata/store.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { type ChangeCause, changeRecord, leaderCause } from './isr-change.js';
import {
  asOneChange,
  completeReassignment,
  type ElectionType,
  electLeader,
  imbalancedPartitions,
  partitionView,
  reassign,
  validateAlterPartition,
} from './partition-change.js';
import type { AdminContext, Chunk, Plan } from './topic-admin.js';

/**
 * Partition-state requests as plans (AlterPartition, ElectLeaders, reassignments, rebalance):
 * validated against the controller's image, committed by the controller with CAS on each
 * partition key's revision under its election guard.
 */

/**
 * Partition records per transaction: a compare, a put and two history ops (isr-history.ts) each,
 * plus guard and reply, under 128.
 */
export const PARTITIONS_PER_TXN = 30;

/** One partition-state change and why: the state it replaces and the record of it. */
export interface PartitionChange {
  readonly topic: string;
  readonly partition: number;
  readonly key: string;
  readonly rev: bigint;
  readonly prev: PartitionRecord | undefined;
  readonly next: PartitionRecord;
  readonly why: ChangeCause;
  readonly unclean?: boolean;
}

function change(
  ctx: AdminContext,
  topic: string,
  partition: number,
  prev: PartitionRecord,
  next: PartitionRecord,
  why: ChangeCause,
  unclean = false,
): PartitionChange {
  const key = ctx.keys.partition(topic, partition);
  return { topic, partition, key, rev: ctx.state.modRevision(key), prev, next, why, unclean };
}

/** Each change as a CAS on its partition key, with its history record in the same transaction. */
export function toChunks(ctx: AdminContext, changes: readonly PartitionChange[]): Chunk[] {
  const chunks: Chunk[] = [];
  for (let i = 0; i < changes.length; i += PARTITIONS_PER_TXN) {
    const batch = changes.slice(i, i + PARTITIONS_PER_TXN);
    chunks.push({
      compare: batch.map((c): Compare => ({ key: c.key, target: 'mod', modRevision: c.rev })),
      ops: batch.flatMap((c): Op[] => [
        { type: 'put', key: c.key, value: JSON.stringify(c.next) },
        ...historyOps(
          ctx.keys,
          c.topic,
          c.partition,
          changeRecord(c.prev, c.next, c.why, c.unclean ?? false, ctx.nowMs),
          ctx.historyBounds.maxEntries,
        ),
      ]),
    });
  }
  return chunks;
}

export function planAlterPartition(
  ctx: AdminContext,
  body: Extract<ControllerRequestBody, { kind: 'alterPartition' }>,
): Plan<AlterPartitionResult> {
  const sender = ctx.image.brokers.get(body.brokerId);
  if (sender === undefined || sender.epoch !== BigInt(body.brokerEpoch)) {
    return { result: { errorCode: ErrorCode.STALE_BROKER_EPOCH, topics: [] }, chunks: [] };
  }
  const changes: PartitionChange[] = [];
  const topics = body.topics.map((t) => ({
    topic: t.topic,
    partitions: t.partitions.map((item): AlterPartitionPartitionResult => {
      const rec = ctx.state.partitionRecord(t.topic, item.partition);
      const decision = validateAlterPartition(
        rec,
        body.brokerId,
        item,
        partitionView(ctx.view, topicPartitionKey(t.topic, item.partition)),
      );
      // An expansion that brings the last new replica into the ISR completes a reassignment in
      // the same commit, as Kafka does.
      const completed = decision.next ? completeReassignment(decision.next, ctx.view) : null;
      const next =
        completed !== null && rec !== undefined ? asOneChange(rec, completed) : (decision.next ?? null);
      const state = next ?? rec;
      if (next && rec) {
        const why = leaderCause(rec, decision.next ?? next, item.cause, item.reason);
        const done = completed ? { cause: why.cause, reason: `${why.reason}; reassignment complete` } : why;
        changes.push(change(ctx, t.topic, item.partition, rec, next, done));
      }
      return {
        partition: item.partition,
        errorCode: decision.errorCode,
        leaderId: state?.leader ?? -1,
        leaderEpoch: state?.leaderEpoch ?? -1,
        isr: state?.isr ?? [],
        partitionEpoch: state?.partitionEpoch ?? -1,
      };
    }),
  }));
  return { result: { errorCode: 0, topics }, chunks: toChunks(ctx, changes) };
}

export function planElectLeaders(
  ctx: AdminContext,
  type: ElectionType,
  requested: readonly { topic: string; partitions: readonly number[] }[] | null,
  origin = 'ElectLeaders',
): Plan<ElectLeadersResult> {
  const all = requested === null;
  const targets =
    requested ??
    [...ctx.image.topics.values()].map((t) => ({
      topic: t.name,
      partitions: t.partitions.map((p) => p.partition),
    }));
  const changes: PartitionChange[] = [];
  const why: ChangeCause =
    type === 'preferred'
      ? { cause: 'preferred-election', reason: `preferred leader election (${origin})` }
      : { cause: 'unclean-election', reason: `unclean leader election (${origin})` };
  const topics = targets
    .map((t) => ({
      topic: t.topic,
      partitions: t.partitions
        .map((partition) => {
          const rec = ctx.state.partitionRecord(t.topic, partition);
          if (rec === undefined) {
            return {
              partition,
              errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
              errorMessage: 'This server does not host this topic-partition.',
            };
          }
          const decision = electLeader(
            rec,
            partitionView(ctx.view, topicPartitionKey(t.topic, partition)),
            type,
          );
          if (decision.next) {
            const key = ctx.keys.partition(t.topic, partition);
            const rev = ctx.state.modRevision(key);
            const unclean = type === 'unclean';
            changes.push({
              topic: t.topic,
              partition,
              key,
              rev,
              prev: rec,
              next: decision.next,
              why,
              unclean,
            });
          }
          return { partition, errorCode: decision.errorCode, errorMessage: null };
        })
        // Asked for every partition, Kafka reports only the ones where something was attempted.
        .filter((p) => !all || p.errorCode !== ErrorCode.ELECTION_NOT_NEEDED),
    }))
    .filter((t) => t.partitions.length > 0 || !all);
  return { result: { errorCode: 0, topics }, chunks: toChunks(ctx, changes) };
}

export function planReassignments(
  ctx: AdminContext,
  body: Extract<ControllerRequestBody, { kind: 'alterPartitionReassignments' }>,
): Plan<PartitionResults> {
  const changes: PartitionChange[] = [];
  const topics = body.topics.map((t) => ({
    topic: t.topic,
    partitions: t.partitions.map((item) => {
      const rec = ctx.state.partitionRecord(t.topic, item.partition);
      if (rec === undefined) {
        return {
          partition: item.partition,
          errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
          errorMessage: 'This server does not host this topic-partition.',
        };
      }
      const decision = reassign(rec, item.replicas, ctx.view);
      if (decision.next) {
        const reason =
          item.replicas === null
            ? `reassignment cancelled: replicas ${decision.next.replicas.join(',')}`
            : `reassignment to [${item.replicas.join(',')}] from [${rec.replicas.join(',')}]`;
        changes.push(
          change(ctx, t.topic, item.partition, rec, decision.next, { cause: 'reassignment', reason }),
        );
      }
      return { partition: item.partition, errorCode: decision.errorCode, errorMessage: null };
    }),
  }));
  return { result: { errorCode: 0, topics }, chunks: toChunks(ctx, changes) };
}

/** Preferred-leader elections for brokers over the imbalance threshold (auto.leader.rebalance). */
export function planRebalance(ctx: AdminContext, percentage: number): Chunk[] {
  const partitions: { topic: string; partition: number; rec: PartitionRecord }[] = [];
  for (const t of ctx.image.topics.values()) {
    for (const p of t.partitions) {
      const rec = ctx.state.partitionRecord(t.name, p.partition);
      if (rec !== undefined) partitions.push({ topic: t.name, partition: p.partition, rec });
    }
  }
  const moves = imbalancedPartitions(partitions, ctx.view, percentage);
  if (moves.length === 0) return [];
  const byTopic = new Map<string, number[]>();
  for (const m of moves) byTopic.set(m.topic, [...(byTopic.get(m.topic) ?? []), m.partition]);
  return [
    ...planElectLeaders(
      ctx,
      'preferred',
      [...byTopic].map(([topic, ps]) => ({ topic, partitions: ps })),
      'leader imbalance',
    ).chunks,
  ];
}
