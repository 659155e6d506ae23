import type { Compare, MetadataStore, StoreWatch } from './store.js';

/**
 * Leader election on any MetadataStore, built from a lease and a compare-and-set: the leader is
 * whoever created `key` (attached to its lease) while the key was absent. The same code runs on
 * both backends, so the contract tests prove its safety once for each.
 *
 * Fencing: the leader's term is the key's create revision. Every write the leader makes carries
 * `leadership.guard()` (create revision of the key == term), so once its lease expires (key deleted)
 * or another candidate has won (key re-created at a later revision) the write fails atomically.
 * Holding a Leadership object proves nothing by itself; only the guarded transaction does.
 */
export interface Leadership {
  readonly key: string;
  readonly candidateId: string;
  /** The create revision of the election key: this leader's term. */
  readonly term: bigint;
  readonly lease: bigint;
  /** The compare every leader write must include. */
  guard(): Compare;
}

export interface LeaderInfo {
  readonly candidateId: string;
  readonly term: bigint;
}

export class Election {
  constructor(
    private readonly store: MetadataStore,
    readonly key: string,
  ) {}

  /**
   * Becomes leader for `candidateId` on `lease`, waiting as long as someone else leads.
   * Rejects with an AbortError when `signal` fires.
   */
  async campaign(candidateId: string, lease: bigint, signal?: AbortSignal): Promise<Leadership> {
    // Bounded by the signal: each round either wins or waits for the current leader's key to go.
    for (;;) {
      signal?.throwIfAborted();
      const won = await this.store.txn({
        compare: [{ key: this.key, target: 'absent' }],
        success: [{ type: 'put', key: this.key, value: candidateId, lease }],
      });
      if (won.succeeded) return this.leadership(candidateId, lease, won.revision);
      const current = await this.store.get(this.key);
      if (current === null) continue;
      if (current.value === candidateId && current.lease === lease) {
        // Already ours (a retried campaign after a lost reply).
        return this.leadership(candidateId, lease, current.createRevision);
      }
      await this.waitForDeletion(current.modRevision + 1n, signal);
    }
  }

  /** Steps down if still leader for `leadership`'s term; a no-op otherwise. */
  async resign(leadership: Leadership): Promise<void> {
    await this.store.txn({ compare: [leadership.guard()], success: [{ type: 'delete', key: this.key }] });
  }

  async leader(): Promise<LeaderInfo | null> {
    const kv = await this.store.get(this.key);
    return kv === null ? null : { candidateId: kv.value, term: kv.createRevision };
  }

  /**
   * Calls `listener` with the current leader and on every change. `onError` reports a broken watch;
   * the observer is then closed and the caller may observe again.
   */
  async observe(
    listener: (leader: LeaderInfo | null) => void,
    onError: (error: Error) => void,
  ): Promise<StoreWatch> {
    const kv = await this.store.get(this.key);
    const start = await this.store.currentRevision();
    listener(kv === null ? null : { candidateId: kv.value, term: kv.createRevision });
    return this.store.watch(this.key, start + 1n, {
      onEvents: (events) => {
        for (const e of events) {
          if (e.key !== this.key) continue;
          listener(e.type === 'put' ? { candidateId: e.value, term: e.createRevision } : null);
        }
      },
      onError,
    });
  }

  private leadership(candidateId: string, lease: bigint, term: bigint): Leadership {
    const key = this.key;
    return {
      key,
      candidateId,
      term,
      lease,
      guard: () => ({ key, target: 'create', createRevision: term }),
    };
  }

  private waitForDeletion(fromRevision: bigint, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let done = false;
      const finish = (error?: unknown): void => {
        if (done) return;
        done = true;
        watch.close();
        signal?.removeEventListener('abort', onAbort);
        if (error === undefined) resolve();
        else reject(error);
      };
      const onAbort = (): void => finish(signal?.reason ?? new Error('aborted'));
      const watch = this.store.watch(this.key, fromRevision, {
        onEvents: (events) => {
          if (events.some((e) => e.key === this.key && e.type === 'delete')) finish();
        },
        // A broken watch is not fatal to a candidate: it simply tries again.
        onError: () => finish(),
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
