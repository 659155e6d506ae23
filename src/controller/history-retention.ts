import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import type { MetadataImage } from '../metadata/cluster-metadata.js';
import { type IsrHistoryBounds, pruneOps } from '../metadata/isr-history.js';
import type { MetadataKeys } from '../metadata/keys.js';
import type { MetadataStore, Op } from '../metadata/store.js';

/**
 * The active controller's pruning of the durable ISR history (src/metadata/isr-history.ts):
 * entries older than skiff.isr.history.retention.ms, and those beyond max.entries left by a
 * lowered bound, are deleted every min(retention / 2, 60 s) (at least every second). The size
 * bound is also kept by every write (historyOps); this catches what age alone makes due.
 * Runs as controller tasks, so it never races a partition change. Owned by one controller term.
 */
export interface HistoryRetentionDeps {
  readonly store: MetadataStore;
  readonly keys: MetadataKeys;
  readonly scheduler: Scheduler;
  readonly clock: Clock;
  readonly logger: Logger;
  bounds(): IsrHistoryBounds;
  image(): MetadataImage;
  enqueue(what: string, task: () => Promise<void>): void;
  /** Commits ops under the election guard; false if not committed. */
  commit(what: string, ops: readonly Op[]): Promise<boolean>;
}

/** Deletes per transaction: under the store's 128 operations with the guard. */
const DELETES_PER_TXN = 100;

export function historyCheckIntervalMs(retentionMs: number): number {
  return Math.min(Math.max(Math.floor(retentionMs / 2), 1000), 60_000);
}

/** Starts the periodic pruning; returns its cancel function. */
export function scheduleHistoryRetention(deps: HistoryRetentionDeps): () => void {
  let cancel: (() => void) | null = null;
  let stopped = false;
  const arm = (): void => {
    const intervalMs = historyCheckIntervalMs(deps.bounds().retentionMs);
    cancel = deps.scheduler.schedule('isr-history-retention', intervalMs, () => {
      if (stopped) return;
      deps.enqueue('isr history retention', async () => {
        await pruneOnce(deps);
      });
      arm();
    });
  };
  arm();
  return () => {
    stopped = true;
    cancel?.();
  };
}

export async function pruneOnce(deps: HistoryRetentionDeps): Promise<number> {
  const partitions = [...deps.image().topics.values()].flatMap((t) =>
    t.partitions.map((p) => ({ topic: t.name, partition: p.partition })),
  );
  const ops = await pruneOps(deps.store, deps.keys, partitions, deps.bounds(), deps.clock.nowMs());
  for (let i = 0; i < ops.length; i += DELETES_PER_TXN) {
    if (!(await deps.commit('isr history retention', ops.slice(i, i + DELETES_PER_TXN)))) return i;
  }
  if (ops.length > 0)
    deps.logger.info(`controller: deleted ${ops.length} ISR history entries past their retention`);
  return ops.length;
}
