/**
 * The MetadataStore contract: what Skiff needs from a consensus store, and no more. etcd's v3 data
 * model is the reference (one global revision, per-key create/mod revisions, transactions, watches,
 * leases), so the etcd backend is a thin mapping and the embedded backend imitates it in one process.
 *
 * Every value is a string (JSON by convention). Revisions are bigint: etcd's are int64.
 */

export interface KeyValue {
  readonly key: string;
  readonly value: string;
  /** Revision of the transaction that created this key (since its last deletion). */
  readonly createRevision: bigint;
  /** Revision of the last transaction that changed it. */
  readonly modRevision: bigint;
  /** Puts since creation, starting at 1. */
  readonly version: bigint;
  /** The lease this key is attached to; 0n for none. */
  readonly lease: bigint;
}

export interface RangeOptions {
  /** Read as of this revision (0n or absent: the current one). Fails with 'compacted' if too old. */
  readonly revision?: bigint;
  /** At most this many keys (capped by STORE_LIMITS.maxRangeKeys). */
  readonly limit?: number;
  /** Start at this key (inclusive) instead of the prefix itself: for paging. */
  readonly fromKey?: string;
}

export interface RangeResult {
  /** In key order. */
  readonly kvs: readonly KeyValue[];
  /** The revision the range was read at. */
  readonly revision: bigint;
  /** More keys under the prefix follow the last one returned. */
  readonly more: boolean;
}

/** A condition of a transaction; all must hold for the success branch to run. */
export type Compare =
  | { readonly key: string; readonly target: 'mod'; readonly modRevision: bigint }
  | { readonly key: string; readonly target: 'create'; readonly createRevision: bigint }
  | { readonly key: string; readonly target: 'value'; readonly value: string }
  | { readonly key: string; readonly target: 'absent' };

export type Op =
  | { readonly type: 'put'; readonly key: string; readonly value: string; readonly lease?: bigint }
  | { readonly type: 'delete'; readonly key: string }
  | { readonly type: 'deletePrefix'; readonly prefix: string };

export interface TxnRequest {
  readonly compare: readonly Compare[];
  readonly success: readonly Op[];
  readonly failure?: readonly Op[];
}

export interface TxnResult {
  readonly succeeded: boolean;
  /** The store revision after the transaction (new if it wrote anything). */
  readonly revision: bigint;
}

export interface WatchEvent {
  readonly type: 'put' | 'delete';
  readonly key: string;
  /** The new value for a put; '' for a delete. */
  readonly value: string;
  /** The revision of the transaction that made this change. */
  readonly modRevision: bigint;
  readonly createRevision: bigint;
  readonly lease: bigint;
}

export interface WatchListener {
  /** Events in revision order, never a gap, never a repeat; one call may carry several revisions. */
  onEvents(events: readonly WatchEvent[]): void;
  /**
   * The watch ended and delivers nothing more. Resume with a new watch from the revision after the
   * last event seen; a 'compacted' error means that revision is gone: take a snapshot instead.
   */
  onError(error: StoreError): void;
}

export interface StoreWatch {
  close(): void;
}

export type StoreErrorKind =
  | 'compacted'
  | 'closed'
  | 'unavailable'
  | 'lease-not-found'
  | 'too-large'
  | 'overflow';

/** An operating error of the store, typed so that callers can decide (retry, resync, give up). */
export class StoreError extends Error {
  constructor(
    readonly kind: StoreErrorKind,
    message: string,
    /** For 'compacted': the oldest revision still readable. */
    readonly compactRevision: bigint = 0n,
  ) {
    super(message);
    this.name = 'StoreError';
  }
}

export interface MetadataStore {
  get(key: string): Promise<KeyValue | null>;
  /** Keys starting with `prefix`, in key order. */
  range(prefix: string, options?: RangeOptions): Promise<RangeResult>;
  txn(request: TxnRequest): Promise<TxnResult>;
  /** Changes under `prefix` with revision ≥ `fromRevision`, then live changes. */
  watch(prefix: string, fromRevision: bigint, listener: WatchListener): StoreWatch;
  /** A lease that expires `ttlMs` after its last keep-alive (etcd rounds up to whole seconds, min ~2 s). */
  grantLease(ttlMs: number): Promise<bigint>;
  /** Extends the lease; false if it has already expired or been revoked. */
  keepAlive(lease: bigint): Promise<boolean>;
  /** Ends the lease now and deletes its keys (idempotent). */
  revokeLease(lease: bigint): Promise<void>;
  /** Milliseconds left on the lease, -1 if it is gone. */
  leaseTtlMs(lease: bigint): Promise<number>;
  currentRevision(): Promise<bigint>;
  close(): Promise<void>;
}

/** Bounds shared by both backends, in one table (TigerBeetle style). */
export const STORE_LIMITS = Object.freeze({
  maxKeyBytes: 1024,
  /** etcd's default request limit is 1.5 MiB; stay below it. */
  maxValueBytes: 1024 * 1024,
  maxOpsPerTxn: 128,
  maxRangeKeys: 10_000,
  /** Events a watcher may have queued before it is cancelled with 'overflow' (it can resume). */
  maxWatchBacklog: 200_000,
  /** Events the embedded store keeps for watches and reads at an old revision. */
  embeddedHistoryEvents: 200_000,
});

export function put(store: MetadataStore, key: string, value: string, lease?: bigint): Promise<TxnResult> {
  const op: Op = lease === undefined ? { type: 'put', key, value } : { type: 'put', key, value, lease };
  return store.txn({ compare: [], success: [op] });
}

export function del(store: MetadataStore, key: string): Promise<TxnResult> {
  return store.txn({ compare: [], success: [{ type: 'delete', key }] });
}

/**
 * Every key under `prefix` at one revision, paging by STORE_LIMITS.maxRangeKeys. Stops with
 * 'too-large' after `maxKeys` so a runaway prefix cannot exhaust memory.
 */
export async function rangeAll(
  store: MetadataStore,
  prefix: string,
  revision = 0n,
  maxKeys = 1_000_000,
): Promise<RangeResult> {
  const kvs: KeyValue[] = [];
  let atRevision = revision;
  let fromKey: string | undefined;
  for (;;) {
    const page: RangeResult = await store.range(prefix, {
      revision: atRevision,
      limit: STORE_LIMITS.maxRangeKeys,
      ...(fromKey === undefined ? {} : { fromKey }),
    });
    atRevision = page.revision;
    kvs.push(...page.kvs);
    if (kvs.length > maxKeys) throw new StoreError('too-large', `more than ${maxKeys} keys under ${prefix}`);
    if (!page.more || page.kvs.length === 0) return { kvs, revision: atRevision, more: false };
    // The next key after the last one: appending the smallest code unit keeps key order.
    fromKey = `${page.kvs[page.kvs.length - 1]!.key}\u0000`;
  }
}

/** Checks the bounds every backend enforces before it sends or applies a transaction. */
export function checkTxnBounds(request: TxnRequest): void {
  const ops = request.success.length + (request.failure?.length ?? 0) + request.compare.length;
  if (ops > STORE_LIMITS.maxOpsPerTxn) {
    throw new StoreError(
      'too-large',
      `transaction has ${ops} operations, the limit is ${STORE_LIMITS.maxOpsPerTxn}`,
    );
  }
  for (const op of [...request.success, ...(request.failure ?? [])]) {
    const key = op.type === 'deletePrefix' ? op.prefix : op.key;
    if (Buffer.byteLength(key) > STORE_LIMITS.maxKeyBytes) {
      throw new StoreError(
        'too-large',
        `key longer than ${STORE_LIMITS.maxKeyBytes} bytes: ${key.slice(0, 64)}...`,
      );
    }
    if (op.type === 'put' && Buffer.byteLength(op.value) > STORE_LIMITS.maxValueBytes) {
      throw new StoreError(
        'too-large',
        `value of ${op.key} is larger than ${STORE_LIMITS.maxValueBytes} bytes`,
      );
    }
  }
}
