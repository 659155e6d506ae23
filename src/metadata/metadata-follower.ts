import { LIMITS } from '../common/limits.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import type { MetadataImage } from './cluster-metadata.js';
import { ImageBuilder } from './image-builder.js';
import type { MetadataKeys } from './keys.js';
import { type MetadataStore, rangeAll, type StoreError, type StoreWatch } from './store.js';

const RETRY_DELAY_MS = 200;

interface Waiter {
  readonly revision: bigint;
  resolve(): void;
}

/**
 * Keeps an ImageBuilder current: a snapshot of the cluster's keys at revision R, then the watch
 * from R + 1 — the store's watch stream is the metadata log and the revision its offset. A broken
 * watch resumes from the last applied revision; a compacted one triggers a fresh snapshot.
 * Owned by one broker (StoreClusterMetadata) or one controller.
 */
export class MetadataFollower {
  private builder: ImageBuilder;
  private watch: StoreWatch | null = null;
  private readonly listeners = new Set<(image: MetadataImage, previous: MetadataImage) => void>();
  private waiters: Waiter[] = [];
  private closed = false;
  private current: MetadataImage;

  constructor(
    private readonly store: MetadataStore,
    private readonly keys: MetadataKeys,
    private readonly scheduler: Scheduler,
    private readonly logger: Logger,
  ) {
    this.builder = new ImageBuilder(keys);
    this.current = this.builder.image();
  }

  /** Loads the snapshot (the image is complete when this resolves) and starts following. */
  async start(): Promise<void> {
    await this.resync();
  }

  image(): MetadataImage {
    return this.current;
  }

  /** The builder behind the image, for the controller's CAS revisions. Read only. */
  get state(): ImageBuilder {
    return this.builder;
  }

  onChange(listener: (image: MetadataImage, previous: MetadataImage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Resolves once the image reflects `revision` (a write of ours has come back through the watch).
   * The image only advances on changes under the cluster root, so a revision produced by writes
   * elsewhere in a shared etcd may never be reached: pass `timeoutMs` when waiting for one of those.
   */
  waitForRevision(revision: bigint, timeoutMs?: number): Promise<void> {
    if (this.builder.lastRevision >= revision || this.closed) return Promise.resolve();
    if (this.waiters.length >= LIMITS.metadataRevisionWaiters) {
      return Promise.reject(
        new Error(`more than ${LIMITS.metadataRevisionWaiters} waiters for metadata revisions`),
      );
    }
    return new Promise((resolve) => {
      const waiter: Waiter = { revision, resolve };
      this.waiters.push(waiter);
      if (timeoutMs === undefined) return;
      this.scheduler.schedule('metadata-revision-wait', timeoutMs, () => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve();
      });
    });
  }

  close(): void {
    this.closed = true;
    this.watch?.close();
    this.watch = null;
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
  }

  private async resync(): Promise<void> {
    const snapshot = await rangeAll(this.store, this.keys.root);
    const builder = new ImageBuilder(this.keys);
    builder.load(snapshot.kvs, snapshot.revision);
    this.builder = builder;
    this.publish();
    this.follow(snapshot.revision + 1n);
  }

  private follow(from: bigint): void {
    if (this.closed) return;
    this.watch = this.store.watch(this.keys.root, from, {
      onEvents: (events) => {
        if (this.closed) return;
        if (this.builder.apply(events)) this.publish();
        else this.release();
      },
      onError: (error) => this.recover(error),
    });
  }

  private recover(error: StoreError): void {
    this.watch = null;
    if (this.closed || error.kind === 'closed') return;
    this.logger.warn(`metadata watch ended (${error.kind}: ${error.message}); resuming`);
    this.scheduler.schedule('metadata-watch-retry', RETRY_DELAY_MS, () => {
      if (this.closed) return;
      if (error.kind === 'compacted') {
        this.resync().catch((e) => this.recover(toStoreError(e)));
      } else {
        this.follow(this.builder.lastRevision + 1n);
      }
    });
  }

  private publish(): void {
    const previous = this.current;
    this.current = this.builder.image();
    for (const listener of this.listeners) {
      try {
        listener(this.current, previous);
      } catch (e) {
        this.logger.warn(`metadata listener failed: ${(e as Error).stack ?? e}`);
      }
    }
    this.release();
  }

  private release(): void {
    const rev = this.builder.lastRevision;
    if (this.waiters.length === 0) return;
    const ready = this.waiters.filter((w) => w.revision <= rev);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.revision > rev);
    for (const w of ready) w.resolve();
  }
}

function toStoreError(e: unknown): StoreError {
  const err = e as StoreError;
  return err.kind === undefined
    ? (Object.assign(new Error(String(e)), {
        kind: 'unavailable' as const,
        compactRevision: 0n,
      }) as StoreError)
    : err;
}
