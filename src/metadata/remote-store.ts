import type { ChildProcess } from 'node:child_process';
import type { Scheduler } from '../common/scheduler.js';
import {
  type KeyValue,
  type MetadataStore,
  type RangeOptions,
  type RangeResult,
  StoreError,
  type StoreErrorKind,
  type StoreWatch,
  type TxnRequest,
  type TxnResult,
  type WatchEvent,
  type WatchListener,
} from './store.js';

/**
 * The MetadataStore across a message channel: `skiff up` hosts the embedded store in the launcher
 * and each broker child process reaches it through its IPC channel, so killing a broker (even with
 * SIGKILL) never takes the store with it, and the broker's registration simply expires with its
 * lease. The channel must carry structured clones (BigInt included): `fork(..., { serialization:
 * 'advanced' })` or a worker MessagePort. Messages are tagged so the channel can carry other traffic.
 */

export interface StoreChannel {
  send(message: unknown): void;
  onMessage(handler: (message: unknown) => void): void;
  onClose(handler: () => void): void;
}

type Method =
  | 'get'
  | 'range'
  | 'txn'
  | 'watch'
  | 'unwatch'
  | 'grant'
  | 'keepAlive'
  | 'revoke'
  | 'ttl'
  | 'rev';

interface WireRequest {
  readonly skiffStore: 'req';
  readonly id: number;
  readonly method: Method;
  readonly args: readonly unknown[];
}

interface WireError {
  readonly kind: StoreErrorKind;
  readonly message: string;
  readonly compactRevision: bigint;
}

type WireReply =
  | { readonly skiffStore: 'res'; readonly id: number; readonly value?: unknown; readonly error?: WireError }
  | { readonly skiffStore: 'events'; readonly id: number; readonly events: readonly WatchEvent[] }
  | { readonly skiffStore: 'watchError'; readonly id: number; readonly error: WireError };

/** Requests one client may have outstanding, and watches one connection may hold. */
export const REMOTE_LIMITS = Object.freeze({ maxInFlight: 10_000, maxWatches: 1_000 });

function toWireError(e: unknown): WireError {
  if (e instanceof StoreError)
    return { kind: e.kind, message: e.message, compactRevision: e.compactRevision };
  return { kind: 'unavailable', message: (e as Error)?.message ?? String(e), compactRevision: 0n };
}

function fromWireError(e: WireError): StoreError {
  return new StoreError(e.kind, e.message, e.compactRevision);
}

/**
 * Serves `store` to one peer. Returns a function that stops serving (closing the peer's watches).
 * Leases granted to the peer are not revoked when it goes away: they expire, as a dead broker's do.
 */
export function serveStore(store: MetadataStore, channel: StoreChannel): () => void {
  const watches = new Map<number, StoreWatch>();
  let closed = false;
  const reply = (m: WireReply): void => {
    if (!closed) channel.send(m);
  };
  const stop = (): void => {
    closed = true;
    for (const w of watches.values()) w.close();
    watches.clear();
  };
  channel.onClose(stop);
  channel.onMessage((raw) => {
    const m = raw as WireRequest;
    if (closed || m === null || typeof m !== 'object' || m.skiffStore !== 'req') return;
    if (m.method === 'watch') {
      if (watches.size >= REMOTE_LIMITS.maxWatches) {
        reply({
          skiffStore: 'watchError',
          id: m.id,
          error: toWireError(new StoreError('too-large', 'too many watches')),
        });
        return;
      }
      const [prefix, from] = m.args as [string, bigint];
      try {
        const watch = store.watch(prefix, from, {
          onEvents: (events) => reply({ skiffStore: 'events', id: m.id, events }),
          onError: (error) => {
            watches.delete(m.id);
            reply({ skiffStore: 'watchError', id: m.id, error: toWireError(error) });
          },
        });
        watches.set(m.id, watch);
      } catch (error) {
        reply({ skiffStore: 'watchError', id: m.id, error: toWireError(error) });
      }
      return;
    }
    if (m.method === 'unwatch') {
      watches.get(m.id)?.close();
      watches.delete(m.id);
      return;
    }
    dispatch(store, m.method, m.args).then(
      (value) => reply({ skiffStore: 'res', id: m.id, value }),
      (error) => reply({ skiffStore: 'res', id: m.id, error: toWireError(error) }),
    );
  });
  return stop;
}

function dispatch(store: MetadataStore, method: Method, args: readonly unknown[]): Promise<unknown> {
  switch (method) {
    case 'get':
      return store.get(args[0] as string);
    case 'range':
      return store.range(args[0] as string, args[1] as RangeOptions);
    case 'txn':
      return store.txn(args[0] as TxnRequest);
    case 'grant':
      return store.grantLease(args[0] as number);
    case 'keepAlive':
      return store.keepAlive(args[0] as bigint);
    case 'revoke':
      return store.revokeLease(args[0] as bigint);
    case 'ttl':
      return store.leaseTtlMs(args[0] as bigint);
    case 'rev':
      return store.currentRevision();
    default:
      return Promise.reject(new StoreError('unavailable', `unknown store method ${method}`));
  }
}

interface PendingCall {
  resolve(value: unknown): void;
  reject(error: StoreError): void;
  cancelTimer(): void;
}

/**
 * The client side. Owned by one broker process. Every call has a deadline (`callTimeoutMs`,
 * default 10 s, on the injected Scheduler); when the channel closes, every call fails and every
 * watch ends with 'unavailable'.
 */
export class RemoteStore implements MetadataStore {
  private nextId = 1;
  private readonly pending = new Map<number, PendingCall>();
  private readonly watches = new Map<number, WatchListener>();
  private closed = false;

  constructor(
    private readonly channel: StoreChannel,
    private readonly scheduler: Scheduler,
    private readonly callTimeoutMs = 10_000,
  ) {
    channel.onMessage((raw) => this.onMessage(raw as WireReply));
    channel.onClose(() => this.fail(new StoreError('unavailable', 'metadata store channel closed')));
  }

  get(key: string): Promise<KeyValue | null> {
    return this.call('get', [key]) as Promise<KeyValue | null>;
  }
  range(prefix: string, options: RangeOptions = {}): Promise<RangeResult> {
    return this.call('range', [prefix, options]) as Promise<RangeResult>;
  }
  txn(request: TxnRequest): Promise<TxnResult> {
    return this.call('txn', [request]) as Promise<TxnResult>;
  }
  grantLease(ttlMs: number): Promise<bigint> {
    return this.call('grant', [ttlMs]) as Promise<bigint>;
  }
  keepAlive(lease: bigint): Promise<boolean> {
    return this.call('keepAlive', [lease]) as Promise<boolean>;
  }
  async revokeLease(lease: bigint): Promise<void> {
    await this.call('revoke', [lease]);
  }
  leaseTtlMs(lease: bigint): Promise<number> {
    return this.call('ttl', [lease]) as Promise<number>;
  }
  currentRevision(): Promise<bigint> {
    return this.call('rev', []) as Promise<bigint>;
  }

  watch(prefix: string, fromRevision: bigint, listener: WatchListener): StoreWatch {
    if (this.closed) throw new StoreError('closed', 'metadata store closed');
    const id = this.nextId++;
    this.watches.set(id, listener);
    this.send({ skiffStore: 'req', id, method: 'watch', args: [prefix, fromRevision] });
    return {
      close: () => {
        if (!this.watches.delete(id)) return;
        this.send({ skiffStore: 'req', id, method: 'unwatch', args: [] });
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const id of [...this.watches.keys()])
      this.send({ skiffStore: 'req', id, method: 'unwatch', args: [] });
    this.watches.clear();
    this.fail(new StoreError('closed', 'metadata store closed'));
  }

  private call(method: Method, args: readonly unknown[]): Promise<unknown> {
    if (this.closed) return Promise.reject(new StoreError('closed', 'metadata store closed'));
    if (this.pending.size >= REMOTE_LIMITS.maxInFlight) {
      return Promise.reject(
        new StoreError('unavailable', `more than ${REMOTE_LIMITS.maxInFlight} store calls in flight`),
      );
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const cancelTimer = this.scheduler.schedule('metadata-call-timeout', this.callTimeoutMs, () => {
        this.pending.delete(id);
        reject(
          new StoreError(
            'unavailable',
            `metadata store call ${method} timed out after ${this.callTimeoutMs} ms`,
          ),
        );
      });
      this.pending.set(id, { resolve, reject, cancelTimer });
      this.send({ skiffStore: 'req', id, method, args });
    });
  }

  private send(m: WireRequest): void {
    try {
      this.channel.send(m);
    } catch (e) {
      this.fail(new StoreError('unavailable', `metadata store channel: ${(e as Error).message}`));
    }
  }

  private onMessage(m: WireReply): void {
    if (m === null || typeof m !== 'object') return;
    if (m.skiffStore === 'res') {
      const p = this.pending.get(m.id);
      if (p === undefined) return;
      this.pending.delete(m.id);
      p.cancelTimer();
      if (m.error !== undefined) p.reject(fromWireError(m.error));
      else p.resolve(m.value);
    } else if (m.skiffStore === 'events') {
      this.watches.get(m.id)?.onEvents(m.events);
    } else if (m.skiffStore === 'watchError') {
      const listener = this.watches.get(m.id);
      this.watches.delete(m.id);
      listener?.onError(fromWireError(m.error));
    }
  }

  private fail(error: StoreError): void {
    for (const p of this.pending.values()) {
      p.cancelTimer();
      p.reject(error);
    }
    this.pending.clear();
    const listeners = [...this.watches.values()];
    this.watches.clear();
    for (const l of listeners) l.onError(new StoreError('unavailable', error.message));
  }
}

/** A StoreChannel over a worker MessagePort (structured clone). */
export function portChannel(port: {
  postMessage(m: unknown): void;
  on(event: 'message', h: (m: unknown) => void): unknown;
  on(event: 'close', h: () => void): unknown;
}): StoreChannel {
  return {
    send: (m) => port.postMessage(m),
    onMessage: (h) => {
      port.on('message', h);
    },
    onClose: (h) => {
      port.on('close', h);
    },
  };
}

/**
 * A StoreChannel over a Node IPC channel: a ChildProcess (launcher side) or `process` (child side).
 * The fork must use `serialization: 'advanced'` so BigInt revisions survive.
 */
export function ipcChannel(peer: ChildProcess | NodeJS.Process): StoreChannel {
  return {
    send: (m) => {
      if (peer.send === undefined) throw new Error('no IPC channel');
      (peer as { send(message: unknown): boolean }).send(m);
    },
    onMessage: (h) => {
      (peer as ChildProcess).on('message', h);
    },
    onClose: (h) => {
      (peer as ChildProcess).on('disconnect', h);
    },
  };
}
