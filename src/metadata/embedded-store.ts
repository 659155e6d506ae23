import type { Clock } from '../common/clock.js';
import { makeDirectories } from '../common/make-dirs.js';
import type { Scheduler } from '../common/scheduler.js';
import { type JournalOp, JournalWriter, loadState, writeSnapshot } from './embedded-journal.js';
import {
  type Compare,
  checkTxnBounds,
  type KeyValue,
  type MetadataStore,
  type Op,
  type RangeOptions,
  type RangeResult,
  STORE_LIMITS,
  StoreError,
  type StoreWatch,
  type TxnRequest,
  type TxnResult,
  type WatchEvent,
  type WatchListener,
} from './store.js';

export interface EmbeddedStoreOptions {
  readonly clock: Clock;
  /** Where the snapshot and journal live; absent: memory only (tests). */
  readonly dataDir?: string;
  /** Runs the periodic lease check; absent: leases are checked only when the store is used. */
  readonly scheduler?: Scheduler;
  readonly leaseCheckIntervalMs?: number;
  /** Events kept for watches from an old revision (default STORE_LIMITS.embeddedHistoryEvents). */
  readonly historyEvents?: number;
  /** Events a watcher may have queued before it is cancelled (default STORE_LIMITS.maxWatchBacklog). */
  readonly watchBacklog?: number;
}

interface HistoryEntry {
  readonly event: WatchEvent;
  /** The key's value before this event, to read at an older revision. */
  readonly prev: KeyValue | null;
}

interface LeaseState {
  readonly ttlMs: number;
  deadlineMs: number;
  readonly keys: Set<string>;
}

interface WatcherState {
  readonly prefix: string;
  readonly listener: WatchListener;
  queue: WatchEvent[];
  closed: boolean;
  drainScheduled: boolean;
}

/**
 * The MetadataStore of one process: etcd's data model in memory, persisted by EmbeddedJournal.
 * Owned by the launcher that hosts it (`skiff up`); every other user reaches it through that owner.
 *
 * Leases run on the injected Clock: a lease expires when the clock passes its deadline and the
 * store notices — at the next operation, or at the next tick of the optional Scheduler. Leases are
 * not persisted: after a restart the keys attached to them are deleted, as if every lease holder
 * had died with the process (they did). Watchers see a change only once it is durable.
 */
export class EmbeddedStore implements MetadataStore {
  private readonly byKey = new Map<string, KeyValue>();
  private revision = 0n;
  private durableRevision = 0n;
  /** Reads at revisions below this and watches from at or below it fail with 'compacted'. */
  private oldestRevision = 0n;
  private history: HistoryEntry[] = [];
  private historyStart = 0;
  private readonly leases = new Map<bigint, LeaseState>();
  private nextLeaseId: bigint;
  private readonly watchers = new Set<WatcherState>();
  private journal: JournalWriter | null = null;
  private closed = false;
  private cancelTick: (() => void) | null = null;
  private readonly historyLimit: number;

  private constructor(private readonly options: EmbeddedStoreOptions) {
    this.historyLimit = options.historyEvents ?? STORE_LIMITS.embeddedHistoryEvents;
    this.nextLeaseId = 1n;
  }

  static async open(options: EmbeddedStoreOptions): Promise<EmbeddedStore> {
    const store = new EmbeddedStore(options);
    if (options.dataDir !== undefined) {
      makeDirectories(options.dataDir);
      const loaded = loadState(options.dataDir);
      for (const kv of loaded.kvs) store.byKey.set(kv.key, kv);
      store.revision = loaded.revision;
      store.durableRevision = loaded.revision;
      store.oldestRevision = loaded.revision;
      // A fresh snapshot keeps start-up time independent of how long the journal had grown.
      writeSnapshot(options.dataDir, store.revision, store.byKey.values());
      store.journal = await JournalWriter.open(options.dataDir, () => ({
        revision: store.revision,
        kvs: store.byKey.values(),
      }));
    }
    // Lease ids never repeat across restarts: they start above anything the old process handed out.
    store.nextLeaseId = ((store.revision + 1n) << 20n) + 1n;
    const orphans = [...store.byKey.values()].filter((kv) => kv.lease !== 0n).map((kv) => kv.key);
    if (orphans.length > 0) await store.commit(orphans.map((key) => ({ type: 'delete', key }) as Op));
    store.scheduleTick();
    return store;
  }

  async get(key: string): Promise<KeyValue | null> {
    this.checkOpen();
    this.expireLeases();
    return this.byKey.get(key) ?? null;
  }

  async range(prefix: string, options: RangeOptions = {}): Promise<RangeResult> {
    this.checkOpen();
    this.expireLeases();
    const at = options.revision !== undefined && options.revision > 0n ? options.revision : this.revision;
    if (at < this.oldestRevision) {
      throw new StoreError('compacted', `revision ${at} is compacted`, this.oldestRevision);
    }
    if (at > this.revision) throw new StoreError('unavailable', `revision ${at} is in the future`);
    const view = at === this.revision ? this.byKey : this.viewAt(at);
    const from = options.fromKey !== undefined && options.fromKey > prefix ? options.fromKey : prefix;
    const keys = [...view.keys()].filter((k) => k.startsWith(prefix) && k >= from).sort(compareKeys);
    const limit = Math.min(options.limit ?? STORE_LIMITS.maxRangeKeys, STORE_LIMITS.maxRangeKeys);
    const kvs = keys.slice(0, limit).map((k) => view.get(k)!);
    return { kvs, revision: at, more: keys.length > limit };
  }

  async txn(request: TxnRequest): Promise<TxnResult> {
    this.checkOpen();
    checkTxnBounds(request);
    this.expireLeases();
    const succeeded = request.compare.every((c) => this.holds(c));
    const ops = succeeded ? request.success : (request.failure ?? []);
    const revision = await this.commit(ops);
    return { succeeded, revision };
  }

  watch(prefix: string, from: bigint, listener: WatchListener): StoreWatch {
    this.checkOpen();
    // As in etcd, 0 means "from the next change".
    const fromRevision = from > 0n ? from : this.revision + 1n;
    const watcher: WatcherState = { prefix, listener, queue: [], closed: false, drainScheduled: false };
    if (fromRevision <= this.oldestRevision && fromRevision <= this.revision) {
      watcher.closed = true;
      queueMicrotask(() =>
        listener.onError(
          new StoreError('compacted', `watch from ${fromRevision}: compacted`, this.oldestRevision + 1n),
        ),
      );
      return { close: () => {} };
    }
    for (let i = this.historyStart; i < this.history.length; i++) {
      const e = this.history[i]!.event;
      // Changes not yet durable reach every watcher through publish(), once they are.
      if (e.modRevision > this.durableRevision) break;
      if (e.modRevision >= fromRevision && e.key.startsWith(prefix)) watcher.queue.push(e);
    }
    this.watchers.add(watcher);
    this.scheduleDrain(watcher);
    return {
      close: () => {
        watcher.closed = true;
        this.watchers.delete(watcher);
      },
    };
  }

  async grantLease(ttlMs: number): Promise<bigint> {
    this.checkOpen();
    if (!(ttlMs > 0)) throw new RangeError(`lease TTL must be positive, got ${ttlMs}`);
    const id = this.nextLeaseId++;
    this.leases.set(id, { ttlMs, deadlineMs: this.options.clock.nowMs() + ttlMs, keys: new Set() });
    return id;
  }

  async keepAlive(lease: bigint): Promise<boolean> {
    this.checkOpen();
    this.expireLeases();
    const state = this.leases.get(lease);
    if (state === undefined) return false;
    state.deadlineMs = this.options.clock.nowMs() + state.ttlMs;
    return true;
  }

  async revokeLease(lease: bigint): Promise<void> {
    this.checkOpen();
    await this.endLease(lease);
  }

  async leaseTtlMs(lease: bigint): Promise<number> {
    this.checkOpen();
    this.expireLeases();
    const state = this.leases.get(lease);
    return state === undefined ? -1 : Math.max(0, state.deadlineMs - this.options.clock.nowMs());
  }

  async currentRevision(): Promise<bigint> {
    this.checkOpen();
    return this.revision;
  }

  /** Expires every lease whose deadline has passed; called by every operation and the tick. */
  checkLeases(): void {
    if (!this.closed) this.expireLeases();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.cancelTick?.();
    await this.journal?.close();
    for (const w of this.watchers) {
      w.closed = true;
      queueMicrotask(() => w.listener.onError(new StoreError('closed', 'metadata store closed')));
    }
    this.watchers.clear();
  }

  private checkOpen(): void {
    if (this.closed) throw new StoreError('closed', 'metadata store closed');
  }

  private holds(c: Compare): boolean {
    const kv = this.byKey.get(c.key);
    switch (c.target) {
      case 'absent':
        return kv === undefined;
      case 'mod':
        return (kv?.modRevision ?? 0n) === c.modRevision;
      case 'create':
        return (kv?.createRevision ?? 0n) === c.createRevision;
      case 'value':
        return kv !== undefined && kv.value === c.value;
    }
  }

  /**
   * Applies `ops` as one revision (none if nothing changes), journals it and resolves once durable.
   * The in-memory apply is synchronous, so transactions are serialised in call order.
   */
  private async commit(ops: readonly Op[]): Promise<bigint> {
    for (const op of ops) {
      if (op.type === 'put' && op.lease !== undefined && op.lease !== 0n && !this.leases.has(op.lease)) {
        throw new StoreError('lease-not-found', `lease ${op.lease} not found`);
      }
    }
    const revision = this.revision + 1n;
    const entries: HistoryEntry[] = [];
    const journalOps: JournalOp[] = [];
    const remove = (key: string): void => {
      const prev = this.byKey.get(key);
      if (prev === undefined) return;
      this.byKey.delete(key);
      if (prev.lease !== 0n) this.leases.get(prev.lease)?.keys.delete(key);
      const event: WatchEvent = {
        type: 'delete',
        key,
        value: '',
        modRevision: revision,
        createRevision: prev.createRevision,
        lease: prev.lease,
      };
      entries.push({ event, prev });
      journalOps.push(['d', key]);
    };
    for (const op of ops) {
      if (op.type === 'delete') remove(op.key);
      else if (op.type === 'deletePrefix') {
        for (const key of [...this.byKey.keys()]) if (key.startsWith(op.prefix)) remove(key);
      } else {
        const prev = this.byKey.get(op.key) ?? null;
        const lease = op.lease ?? 0n;
        const kv: KeyValue = {
          key: op.key,
          value: op.value,
          createRevision: prev?.createRevision ?? revision,
          modRevision: revision,
          version: (prev?.version ?? 0n) + 1n,
          lease,
        };
        if (prev !== null && prev.lease !== 0n) this.leases.get(prev.lease)?.keys.delete(op.key);
        if (lease !== 0n) this.leases.get(lease)!.keys.add(op.key);
        this.byKey.set(op.key, kv);
        entries.push({ event: { type: 'put', ...kv }, prev });
        journalOps.push(['p', op.key, op.value, lease.toString()]);
      }
    }
    if (entries.length === 0) return this.revision;
    this.revision = revision;
    this.remember(entries);
    if (this.journal !== null) await this.journal.append({ revision, ops: journalOps });
    if (revision > this.durableRevision) this.durableRevision = revision;
    this.publish(entries.map((e) => e.event));
    return revision;
  }

  private remember(entries: HistoryEntry[]): void {
    this.history.push(...entries);
    const live = this.history.length - this.historyStart;
    if (live <= this.historyLimit) return;
    // Drop whole revisions from the front so that every kept revision is complete.
    let cut = this.historyStart + (live - this.historyLimit);
    const cutRevision = this.history[cut - 1]!.event.modRevision;
    while (cut < this.history.length && this.history[cut]!.event.modRevision === cutRevision) cut++;
    this.historyStart = cut;
    this.oldestRevision = cutRevision;
    // Compact the array now and then rather than on every trim.
    if (this.historyStart > this.historyLimit) {
      this.history = this.history.slice(this.historyStart);
      this.historyStart = 0;
    }
  }

  private viewAt(revision: bigint): Map<string, KeyValue> {
    const view = new Map(this.byKey);
    for (let i = this.history.length - 1; i >= this.historyStart; i--) {
      const { event, prev } = this.history[i]!;
      if (event.modRevision <= revision) break;
      if (prev === null) view.delete(event.key);
      else view.set(event.key, prev);
    }
    return view;
  }

  private publish(events: WatchEvent[]): void {
    for (const w of this.watchers) {
      const matching = events.filter((e) => e.key.startsWith(w.prefix));
      if (matching.length === 0) continue;
      w.queue.push(...matching);
      if (w.queue.length > (this.options.watchBacklog ?? STORE_LIMITS.maxWatchBacklog)) {
        w.closed = true;
        this.watchers.delete(w);
        const resumeFrom = w.queue[0]!.modRevision;
        queueMicrotask(() =>
          w.listener.onError(new StoreError('overflow', `watcher fell behind; resume from ${resumeFrom}`)),
        );
        continue;
      }
      this.scheduleDrain(w);
    }
  }

  private scheduleDrain(w: WatcherState): void {
    if (w.drainScheduled || w.queue.length === 0) return;
    w.drainScheduled = true;
    // Never deliver inside the caller's stack: a listener may start a transaction of its own.
    queueMicrotask(() => {
      w.drainScheduled = false;
      if (w.closed) return;
      const ready: WatchEvent[] = [];
      let i = 0;
      while (i < w.queue.length && w.queue[i]!.modRevision <= this.durableRevision) ready.push(w.queue[i++]!);
      w.queue = w.queue.slice(i);
      if (ready.length > 0) w.listener.onEvents(ready);
    });
  }

  private expireLeases(): void {
    const now = this.options.clock.nowMs();
    for (const [id, state] of this.leases) {
      if (state.deadlineMs <= now) void this.endLease(id).catch(() => {});
    }
  }

  private async endLease(id: bigint): Promise<void> {
    const state = this.leases.get(id);
    if (state === undefined) return;
    this.leases.delete(id);
    const keys = [...state.keys].sort(compareKeys);
    if (keys.length > 0) await this.commit(keys.map((key) => ({ type: 'delete', key }) as Op));
  }

  private scheduleTick(): void {
    const { scheduler } = this.options;
    if (scheduler === undefined || this.closed) return;
    this.cancelTick = scheduler.schedule(
      'metadata-lease-check',
      this.options.leaseCheckIntervalMs ?? 250,
      () => {
        this.checkLeases();
        this.scheduleTick();
      },
    );
  }
}

/** Byte order of UTF-8 keys, as etcd sorts them (code-unit order differs above U+FFFF only). */
function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
