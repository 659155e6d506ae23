import type { ConfigMap } from './cluster-metadata.js';
import { resolveBrokerConfig } from './config-resolve.js';
import { decodeJson, type MetadataKeys } from './keys.js';
import { type MetadataStore, type Op, rangeAll } from './store.js';

/**
 * The durable ISR and leadership history: one record per partition-state change, written by the
 * controller in the same transaction as the partition state it describes, under
 * `/skiff-history/<cluster-id>/isr/<topic>/<partition>/<partition epoch, 10 digits>` — outside the
 * cluster root, so brokers' metadata snapshots and watches never carry it. The partition epoch is
 * the record's identity: every change bumps it by one, so records are unique and in key order.
 * Bounded per partition by skiff.isr.history.max.entries (the write that adds entry E deletes
 * E − max) and by skiff.isr.history.retention.ms (the controller prunes; readers skip what is due).
 * Read by SkiffDescribeReplication, hence by `skiff isr-history` and the dashboard.
 */

/** What changed: the partition's ISR, its leader, its replicas. */
export type IsrChangeKind =
  | 'create'
  | 'shrink'
  | 'expand'
  | 'election'
  | 'unclean-election'
  | 'offline'
  | 'reassignment';

/** Why: the leader's reason for a shrink or expand, the controller's for everything else. */
export type IsrChangeCause =
  | 'topic-created'
  | 'lag'
  | 'fetch-timeout'
  | 'caught-up'
  | 'controlled-shutdown'
  | 'fencing'
  | 'broker-restart'
  | 'log-dir-failure'
  | 'leader-returned'
  | 'preferred-election'
  | 'unclean-election'
  | 'reassignment';

export const ISR_CHANGE_CAUSES: readonly IsrChangeCause[] = [
  'topic-created',
  'lag',
  'fetch-timeout',
  'caught-up',
  'controlled-shutdown',
  'fencing',
  'broker-restart',
  'leader-returned',
  'preferred-election',
  'unclean-election',
  'reassignment',
];

export interface IsrChangeRecord {
  /** When the controller committed the change, on its clock. */
  readonly timeMs: number;
  readonly kind: IsrChangeKind;
  readonly cause: IsrChangeCause;
  /** One line for operators: which broker, which numbers (the leader's own words for a shrink). */
  readonly reason: string;
  /** The broker the change is about: the leader after it (before it, when none is left). */
  readonly broker: number;
  readonly oldLeader: number;
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly oldIsr: readonly number[];
  readonly newIsr: readonly number[];
}

export const ISR_HISTORY_MAX_ENTRIES = 'skiff.isr.history.max.entries';
export const ISR_HISTORY_RETENTION_MS = 'skiff.isr.history.retention.ms';

export interface IsrHistoryBounds {
  readonly maxEntries: number;
  readonly retentionMs: number;
}

/** The bounds as the controller applies them: the cluster default, else the properties file. */
export function isrHistoryBounds(clusterDefault: ConfigMap, staticProps: ConfigMap): IsrHistoryBounds {
  const layers = { clusterDefault, staticProps };
  return {
    maxEntries: Number(resolveBrokerConfig(ISR_HISTORY_MAX_ENTRIES, layers).value),
    retentionMs: Number(resolveBrokerConfig(ISR_HISTORY_RETENTION_MS, layers).value),
  };
}

const EPOCH_DIGITS = 10;

export function historyPartitionPrefix(keys: MetadataKeys, topic: string, partition: number): string {
  return `${keys.isrHistoryTopic(topic)}${partition}/`;
}

export function historyKey(keys: MetadataKeys, topic: string, partition: number, epoch: number): string {
  return `${historyPartitionPrefix(keys, topic, partition)}${String(epoch).padStart(EPOCH_DIGITS, '0')}`;
}

/**
 * The ops that record `rec` for a partition: its put, and the delete of the entry that falls out
 * of the size bound (a no-op when absent). Two ops: callers size their transactions for them.
 */
export function historyOps(
  keys: MetadataKeys,
  topic: string,
  partition: number,
  rec: IsrChangeRecord,
  maxEntries: number,
): Op[] {
  const ops: Op[] = [
    { type: 'put', key: historyKey(keys, topic, partition, rec.partitionEpoch), value: JSON.stringify(rec) },
  ];
  const old = rec.partitionEpoch - maxEntries;
  if (old >= 0) ops.push({ type: 'delete', key: historyKey(keys, topic, partition, old) });
  return ops;
}

function validRecord(r: IsrChangeRecord): boolean {
  return (
    typeof r === 'object' &&
    r !== null &&
    Number.isFinite(r.timeMs) &&
    typeof r.kind === 'string' &&
    Number.isInteger(r.partitionEpoch) &&
    Array.isArray(r.oldIsr) &&
    Array.isArray(r.newIsr)
  );
}

/**
 * A topic's history, per partition (null: every partition), oldest first, within the bounds as of
 * `nowMs`: what pruning has not reached yet is skipped, so a lowered bound applies at once.
 * Unreadable records are skipped (and counted), not fatal: one bad value must not hide the rest.
 */
export async function readIsrHistory(
  store: MetadataStore,
  keys: MetadataKeys,
  topic: string,
  partitions: readonly number[] | null,
  bounds: IsrHistoryBounds,
  nowMs: number,
): Promise<{ history: Map<number, IsrChangeRecord[]>; unreadable: number }> {
  const history = new Map<number, IsrChangeRecord[]>();
  let unreadable = 0;
  const prefixes =
    partitions === null
      ? [keys.isrHistoryTopic(topic)]
      : partitions.map((p) => historyPartitionPrefix(keys, topic, p));
  for (const prefix of prefixes) {
    const { kvs } = await rangeAll(store, prefix);
    for (const kv of kvs) {
      const tail = kv.key.slice(keys.isrHistoryTopic(topic).length);
      const partition = Number(tail.slice(0, tail.indexOf('/')));
      let rec: IsrChangeRecord;
      try {
        rec = decodeJson<IsrChangeRecord>(kv.value, kv.key);
      } catch {
        unreadable++;
        continue;
      }
      if (!validRecord(rec) || !Number.isInteger(partition)) {
        unreadable++;
        continue;
      }
      if (nowMs - rec.timeMs > bounds.retentionMs) continue;
      let list = history.get(partition);
      if (!list) {
        list = [];
        history.set(partition, list);
      }
      list.push(rec);
    }
  }
  for (const [p, list] of history) {
    list.sort((a, b) => a.partitionEpoch - b.partitionEpoch);
    if (list.length > bounds.maxEntries) history.set(p, list.slice(-bounds.maxEntries));
  }
  return { history, unreadable };
}

/**
 * Deletes what is past the bounds for the given partitions: entries older than the retention and,
 * beyond the newest maxEntries, the rest (after a lowered bound). Returns the ops; the controller
 * commits them in bounded transactions.
 */
export async function pruneOps(
  store: MetadataStore,
  keys: MetadataKeys,
  partitions: readonly { topic: string; partition: number }[],
  bounds: IsrHistoryBounds,
  nowMs: number,
): Promise<Op[]> {
  const ops: Op[] = [];
  for (const { topic, partition } of partitions) {
    const { kvs } = await rangeAll(store, historyPartitionPrefix(keys, topic, partition));
    const excess = kvs.length - bounds.maxEntries;
    kvs.forEach((kv, i) => {
      let old = i < excess;
      if (!old) {
        try {
          old = nowMs - decodeJson<IsrChangeRecord>(kv.value, kv.key).timeMs > bounds.retentionMs;
        } catch {
          old = true;
        }
      }
      if (old) ops.push({ type: 'delete', key: kv.key });
    });
  }
  return ops;
}
