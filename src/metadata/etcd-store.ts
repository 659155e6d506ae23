import { ConsecutiveBreaker, circuitBreaker, ExponentialBackoff, handleWhen, retry } from 'cockatiel';
import {
  Etcd3,
  type IKeyValue,
  type IRequestOp,
  type ITxnRequest,
  type IWatchResponse,
  isRecoverableError,
  type Watcher,
} from 'etcd3';
import type { Clock } from '../common/clock.js';
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

/**
 * The longest a member out of reach rests before it is tried again, and a broken watch waits
 * before it resumes: Kafka's reconnect.backoff.max.ms default, shorter than a broker heartbeat's
 * default interval.
 */
const RECONNECT_BACKOFF_MAX_MS = 1000;

export interface EtcdStoreOptions {
  /** Client URLs, e.g. http://127.0.0.1:2379 (etcd.endpoints). */
  readonly endpoints: readonly string[];
  /** Real time, for call deadlines only (etcd owns lease time). */
  readonly clock: Clock;
  /** Deadline of each unary call (default 5000 ms). */
  readonly callTimeoutMs?: number;
  /** TLS to https endpoints: the CAs to trust, and a client certificate when the members ask for one. */
  readonly tls?: {
    readonly ca: Buffer;
    readonly cert?: Buffer;
    readonly key?: Buffer;
  };
  /** An etcd user, when the members have auth enabled. */
  readonly auth?: { readonly username: string; readonly password: string };
}

/**
 * The MetadataStore on etcd v3 through the `etcd3` client: a thin mapping, since the contract is
 * etcd's own model. The client fails over between endpoints and resumes watches after a
 * reconnect from the last revision it delivered; this class drops any event it has already
 * delivered so the contract's "no repeats" holds across reconnects.
 *
 * Leases are whole seconds in etcd (and at least its minimum TTL, about 2 s by default): a TTL in
 * milliseconds is rounded up. Owned by one process; one instance per process is enough.
 */
export class EtcdStore implements MetadataStore {
  private readonly client: Etcd3;
  private closed = false;
  private readonly watches = new Set<Watcher>();

  constructor(options: EtcdStoreOptions) {
    const timeoutMs = options.callTimeoutMs ?? 5000;
    const { tls, auth } = options;
    this.client = new Etcd3({
      hosts: [...options.endpoints],
      ...(tls && {
        credentials: {
          rootCertificate: tls.ca,
          ...(tls.cert && { certChain: tls.cert }),
          ...(tls.key && { privateKey: tls.key }),
        },
      }),
      ...(auth && { auth: { username: auth.username, password: auth.password } }),
      dialTimeout: timeoutMs,
      faultHandling: {
        // etcd3's defaults rest a member for 5 s after three failures in a row, and wait up to 30 s
        // before a broken watch tries again: a broker whose session is shorter would lose its lease
        // to the rest, and keep a stale image that long, after etcd comes back. Tried again after
        // at most RECONNECT_BACKOFF_MAX_MS instead.
        host: () =>
          circuitBreaker(handleWhen(isRecoverableError), {
            halfOpenAfter: RECONNECT_BACKOFF_MAX_MS,
            breaker: new ConsecutiveBreaker(3),
          }),
        global: retry(handleWhen(isRecoverableError), { maxAttempts: 3 }),
        // etcd3 takes the first step of a backoff, and asks it for the next one on each retry.
        watchBackoff: new ExponentialBackoff({
          initialDelay: 100,
          maxDelay: RECONNECT_BACKOFF_MAX_MS,
        }).next(),
      },
      // A snapshot page of 10,000 partition records is a few MiB; grpc-js refuses more than 4 MiB.
      grpcOptions: { 'grpc.max_receive_message_length': 64 * 1024 * 1024 },
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: options.clock.nowMs() + timeoutMs }),
    });
  }

  async get(key: string): Promise<KeyValue | null> {
    const r = await this.call(() => this.client.kv.range({ key: Buffer.from(key) }));
    const kv = r.kvs[0];
    return kv === undefined ? null : toKeyValue(kv);
  }

  async range(prefix: string, options: RangeOptions = {}): Promise<RangeResult> {
    const limit = Math.min(options.limit ?? STORE_LIMITS.maxRangeKeys, STORE_LIMITS.maxRangeKeys);
    const from = options.fromKey !== undefined && options.fromKey > prefix ? options.fromKey : prefix;
    const r = await this.call(() =>
      this.client.kv.range({
        key: Buffer.from(from),
        range_end: prefixEnd(prefix),
        limit,
        ...(options.revision !== undefined && options.revision > 0n
          ? { revision: options.revision.toString() }
          : {}),
      }),
    );
    return {
      kvs: r.kvs.map(toKeyValue),
      revision:
        options.revision !== undefined && options.revision > 0n
          ? options.revision
          : BigInt(r.header.revision),
      more: r.more,
    };
  }

  async txn(request: TxnRequest): Promise<TxnResult> {
    checkTxnBounds(request);
    const req: ITxnRequest = {
      compare: request.compare.map(toCompare),
      success: request.success.map(toRequestOp),
      failure: (request.failure ?? []).map(toRequestOp),
    };
    const r = await this.call(() => this.client.kv.txn(req));
    return { succeeded: r.succeeded, revision: BigInt(r.header.revision) };
  }

  watch(prefix: string, fromRevision: bigint, listener: WatchListener): StoreWatch {
    if (this.closed) throw new StoreError('closed', 'metadata store closed');
    let stopped = false;
    let watcher: Watcher | null = null;
    // Events of revisions up to here were delivered; a resumed stream may repeat them.
    let delivered = fromRevision > 0n ? fromRevision - 1n : 0n;
    const fail = (error: StoreError): void => {
      if (stopped) return;
      stopped = true;
      if (watcher !== null) {
        this.watches.delete(watcher);
        void watcher.cancel().catch(() => {});
      }
      queueMicrotask(() => listener.onError(error));
    };
    const builder = this.client.watch().prefix(prefix);
    if (fromRevision > 0n) builder.startRevision(fromRevision.toString());
    builder
      .create()
      .then((w) => {
        if (stopped) {
          void w.cancel().catch(() => {});
          return;
        }
        watcher = w;
        this.watches.add(w);
        w.on('data', (res: IWatchResponse) => {
          if (stopped) return;
          const events: WatchEvent[] = [];
          let last = delivered;
          for (const e of res.events) {
            const ev = toWatchEvent(e.type, e.kv);
            if (ev.modRevision <= delivered) continue;
            events.push(ev);
            if (ev.modRevision > last) last = ev.modRevision;
          }
          delivered = last;
          if (events.length > 0) listener.onEvents(events);
        });
        // etcd cancels a watch whose start revision was compacted without saying so in the
        // reason; a read at the next revision tells a compaction (resync) from other failures.
        w.on('error', (err: Error) => {
          this.range(prefix, { revision: delivered + 1n, limit: 1 }).then(
            () => fail(toStoreError(err)),
            (e: StoreError) => fail(e.kind === 'compacted' ? e : toStoreError(err)),
          );
        });
      })
      .catch((err: Error) => fail(toStoreError(err)));
    return {
      close: () => {
        stopped = true;
        if (watcher !== null) {
          this.watches.delete(watcher);
          void watcher.cancel().catch(() => {});
        }
      },
    };
  }

  async grantLease(ttlMs: number): Promise<bigint> {
    if (!(ttlMs > 0)) throw new RangeError(`lease TTL must be positive, got ${ttlMs}`);
    const r = await this.call(() =>
      this.client.leaseClient.leaseGrant({ TTL: Math.ceil(ttlMs / 1000), ID: 0 }),
    );
    return BigInt(r.ID);
  }

  async keepAlive(lease: bigint): Promise<boolean> {
    const stream = await this.call(() => this.client.leaseClient.leaseKeepAlive());
    try {
      const res = await new Promise<{ TTL: string }>((resolve, reject) => {
        stream.on('data', resolve);
        stream.on('error', reject);
        stream.write({ ID: lease.toString() });
      });
      return Number(res.TTL) > 0;
    } catch (e) {
      throw toStoreError(e as Error);
    } finally {
      stream.end();
    }
  }

  async revokeLease(lease: bigint): Promise<void> {
    try {
      await this.call(() => this.client.leaseClient.leaseRevoke({ ID: lease.toString() }));
    } catch (e) {
      if (e instanceof StoreError && e.kind === 'lease-not-found') return;
      throw e;
    }
  }

  async leaseTtlMs(lease: bigint): Promise<number> {
    const r = await this.call(() => this.client.leaseClient.leaseTimeToLive({ ID: lease.toString() }));
    const ttl = Number(r.TTL);
    return ttl < 0 ? -1 : ttl * 1000;
  }

  async currentRevision(): Promise<bigint> {
    // A range over a key nobody uses returns only the header: the cheapest way to read the revision.
    const r = await this.call(() =>
      this.client.kv.range({ key: Buffer.from('\u0000skiff-revision'), count_only: true }),
    );
    return BigInt(r.header.revision);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.watches) await w.cancel().catch(() => {});
    this.watches.clear();
    this.client.close();
  }

  private async call<T>(f: () => Promise<T>): Promise<T> {
    if (this.closed) throw new StoreError('closed', 'metadata store closed');
    try {
      return await f();
    } catch (e) {
      throw toStoreError(e as Error);
    }
  }
}

function toKeyValue(kv: IKeyValue): KeyValue {
  return {
    key: kv.key.toString(),
    value: kv.value.toString(),
    createRevision: BigInt(kv.create_revision),
    modRevision: BigInt(kv.mod_revision),
    version: BigInt(kv.version),
    lease: BigInt(kv.lease),
  };
}

function toWatchEvent(type: string, kv: IKeyValue): WatchEvent {
  return {
    type: type === 'Delete' ? 'delete' : 'put',
    key: kv.key.toString(),
    value: type === 'Delete' ? '' : kv.value.toString(),
    modRevision: BigInt(kv.mod_revision),
    createRevision: BigInt(kv.create_revision),
    lease: BigInt(kv.lease),
  };
}

/** The smallest key greater than every key starting with `prefix` (etcd's range_end). */
function prefixEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]!++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

function toCompare(c: Compare) {
  const key = Buffer.from(c.key);
  switch (c.target) {
    case 'mod':
      return {
        key,
        target: 'Mod' as const,
        result: 'Equal' as const,
        mod_revision: c.modRevision.toString(),
      };
    case 'create':
      return {
        key,
        target: 'Create' as const,
        result: 'Equal' as const,
        create_revision: c.createRevision.toString(),
      };
    case 'value':
      return { key, target: 'Value' as const, result: 'Equal' as const, value: Buffer.from(c.value) };
    case 'absent':
      return { key, target: 'Version' as const, result: 'Equal' as const, version: 0 };
  }
}

function toRequestOp(op: Op): IRequestOp {
  switch (op.type) {
    case 'put':
      return {
        request_put: {
          key: Buffer.from(op.key),
          value: Buffer.from(op.value),
          ...(op.lease !== undefined && op.lease !== 0n ? { lease: op.lease.toString() } : {}),
        },
      };
    case 'delete':
      return { request_delete_range: { key: Buffer.from(op.key) } };
    case 'deletePrefix':
      return { request_delete_range: { key: Buffer.from(op.prefix), range_end: prefixEnd(op.prefix) } };
  }
}

function toStoreError(e: Error): StoreError {
  if (e instanceof StoreError) return e;
  const m = e.message ?? String(e);
  if (/compacted/i.test(m)) return new StoreError('compacted', m);
  if (
    /lease not found|requested lease not found|LeaseInvalid/i.test(m) ||
    e.name === 'EtcdLeaseInvalidError'
  ) {
    return new StoreError('lease-not-found', m);
  }
  if (/too large|too many operations/i.test(m)) return new StoreError('too-large', m);
  return new StoreError('unavailable', m);
}
