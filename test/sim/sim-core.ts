/**
 * The simulation's time and network: one event queue on a ManualClock (events at the same time run
 * in scheduling order), per-broker schedulers that a crash cancels at once, and a network with
 * seeded delays, drops and cut links. Promise continuations run between events (one macrotask
 * turn drains them), so async code such as the replica fetcher runs deterministically.
 */
import { ManualClock } from '../../src/common/clock.js';
import type { Logger } from '../../src/common/logger.js';
import type { SeededRandom } from '../../src/common/random.js';
import type { Scheduler } from '../../src/common/scheduler.js';

interface SimEvent {
  readonly atMs: number;
  readonly seq: number;
  readonly run: () => void;
  cancelled: boolean;
}

export class EventQueue implements Scheduler {
  readonly clock = new ManualClock(1_700_000_000_000);
  private events: SimEvent[] = [];
  private nextSeq = 0;
  /** Events run so far (a bound against a runaway simulation). */
  executed = 0;

  schedule(_name: string, delayMs: number, task: () => void): () => void {
    return this.at(this.clock.nowMs() + Math.max(0, delayMs), task);
  }

  at(atMs: number, run: () => void): () => void {
    const e: SimEvent = { atMs, seq: this.nextSeq++, run, cancelled: false };
    // Binary insertion keeps (time, seq) order; the queue stays small (hundreds of events).
    let lo = 0;
    let hi = this.events.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const m = this.events[mid]!;
      if (m.atMs < atMs || (m.atMs === atMs && m.seq < e.seq)) lo = mid + 1;
      else hi = mid;
    }
    this.events.splice(lo, 0, e);
    return () => {
      e.cancelled = true;
    };
  }

  /** Runs events up to `untilMs`, draining promise continuations after each; `after` runs after each. */
  async runUntil(untilMs: number, after: () => void = () => {}): Promise<void> {
    for (;;) {
      const e = this.events[0];
      if (e === undefined || e.atMs > untilMs) break;
      this.events.shift();
      if (e.cancelled) continue;
      if (e.atMs > this.clock.nowMs()) this.clock.setMs(e.atMs);
      e.run();
      this.executed++;
      await drain();
      after();
    }
    if (untilMs > this.clock.nowMs()) this.clock.setMs(untilMs);
  }

  async runFor(ms: number, after?: () => void): Promise<void> {
    await this.runUntil(this.clock.nowMs() + ms, after);
  }
}

/** One macrotask turn: every queued promise continuation has run when it resolves. */
export function drain(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A broker's scheduler: everything it scheduled dies with it when it crashes. */
export class BrokerScheduler implements Scheduler {
  private readonly cancels = new Set<() => void>();

  constructor(private readonly queue: EventQueue) {}

  schedule(name: string, delayMs: number, task: () => void): () => void {
    let cancel: () => void = () => {};
    const wrapped = (): void => {
      this.cancels.delete(cancel);
      task();
    };
    const inner = this.queue.schedule(name, delayMs, wrapped);
    cancel = () => {
      inner();
      this.cancels.delete(cancel);
    };
    this.cancels.add(cancel);
    return cancel;
  }

  cancelAll(): void {
    for (const c of [...this.cancels]) c();
  }
}

/** Keeps the last lines, stamped with simulated time, to print when an invariant breaks. */
export class RingLogger implements Logger {
  readonly lines: string[] = [];

  constructor(
    private readonly clock: ManualClock,
    private readonly prefix: string,
    private readonly max = 400,
  ) {}

  info(line: string): void {
    this.push(`INFO ${line}`);
  }

  warn(line: string): void {
    this.push(`WARN ${line}`);
  }

  private push(line: string): void {
    this.lines.push(`${this.clock.nowMs() - 1_700_000_000_000} ${this.prefix} ${line}`);
    if (this.lines.length > this.max) this.lines.shift();
  }
}

export interface NetworkConfig {
  minDelayMs: number;
  maxDelayMs: number;
  /** Probability that one message (request or response) is lost. */
  dropRate: number;
  requestTimeoutMs: number;
}

/**
 * Requests between nodes (brokers 1..N, the controller 0, clients -1). A lost message, a cut link
 * or a node that is down means no answer: the caller's promise rejects at its timeout.
 */
export class SimNetwork {
  private readonly cut = new Set<string>();
  /** Per ordered pair: when the last message was delivered, so messages never overtake each other. */
  private readonly lastDelivery = new Map<string, number>();
  /** Exceptions thrown by request handlers: bugs, reported by the invariant checks. */
  readonly handlerErrors: string[] = [];

  constructor(
    private readonly queue: EventQueue,
    private readonly random: SeededRandom,
    readonly config: NetworkConfig,
    /** The node's current incarnation, or null when it is down. */
    private readonly incarnation: (node: number) => number | null,
  ) {}

  cutLink(a: number, b: number): void {
    this.cut.add(`${a}>${b}`);
    this.cut.add(`${b}>${a}`);
  }

  healAll(): void {
    this.cut.clear();
  }

  isCut(a: number, b: number): boolean {
    return this.cut.has(`${a}>${b}`);
  }

  private lost(from: number, to: number): boolean {
    return this.isCut(from, to) || this.random.chance(this.config.dropRate);
  }

  /**
   * Schedules a one-way message, in order per link; false when it is lost. A `reliable` message
   * (the metadata watch, a stream that resumes where it stopped) is only ever delayed.
   */
  deliver(from: number, to: number, run: () => void, reliable = false): boolean {
    if (!reliable && this.lost(from, to)) return false;
    const key = `${from}>${to}`;
    const { minDelayMs, maxDelayMs } = this.config;
    const now = this.queue.clock.nowMs();
    const at = Math.max(now + this.random.between(minDelayMs, maxDelayMs), this.lastDelivery.get(key) ?? 0);
    this.lastDelivery.set(key, at);
    this.queue.at(at, run);
    return true;
  }

  /** A request from `from` to `to`, answered by `handle` on arrival (it may wait). */
  request<T>(from: number, to: number, handle: () => T | Promise<T>): Promise<T> {
    const fromIncarnation = this.incarnation(from);
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const cancelTimeout = this.queue.schedule('request-timeout', this.config.requestTimeoutMs, () => {
        if (settled) return;
        settled = true;
        reject(new Error(`request from ${from} to ${to} timed out`));
      });
      this.deliver(from, to, () => {
        const toIncarnation = this.incarnation(to);
        if (toIncarnation === null) return;
        Promise.resolve()
          .then(handle)
          .then(
            (result) => {
              if (this.incarnation(to) !== toIncarnation) return;
              this.deliver(to, from, () => {
                if (settled || this.incarnation(from) !== fromIncarnation) return;
                settled = true;
                cancelTimeout();
                resolve(result);
              });
            },
            (e: unknown) => {
              this.handlerErrors.push(e instanceof Error ? (e.stack ?? e.message) : String(e));
            },
          );
      });
    });
  }
}
