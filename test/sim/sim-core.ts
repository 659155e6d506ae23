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

  constructor(
    private readonly queue: EventQueue,
    /** Until when the broker is paused (a GC pause, SIGSTOP): its timers fire when it resumes. */
    private readonly holdUntil: () => number = () => 0,
  ) {}

  schedule(name: string, delayMs: number, task: () => void): () => void {
    let cancel: () => void = () => {};
    let inner: () => void = () => {};
    const wrapped = (): void => {
      const until = this.holdUntil();
      if (until > this.queue.clock.nowMs()) {
        inner = this.queue.at(until, wrapped);
        return;
      }
      this.cancels.delete(cancel);
      task();
    };
    inner = this.queue.schedule(name, delayMs, wrapped);
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
  /** Probability that one message (request or response) is lost: its connection breaks. */
  dropRate: number;
  /** Probability that a message is held up (congestion, a retransmission) by up to `stallMaxMs`. */
  stallRate: number;
  stallMaxMs: number;
  requestTimeoutMs: number;
}

/**
 * Requests between nodes (brokers 1..N, the controller 0, clients -1) over named connections, as
 * TCP carries them: on one connection messages arrive in order (a held-up message holds up those
 * behind it), while different connections — a broker's replica fetcher and its AlterPartition
 * channel, a producer's and a consumer's — are independent, so a later message on one may
 * overtake an earlier one on another. Loss is a broken connection: the lost message and every
 * message still in flight on it are gone (the next message opens a new one); the caller learns
 * nothing and its promise rejects at its request timeout, as a client's in-flight request does. A
 * node that is down answers nothing; a paused node (`holdUntil`) takes its messages when it resumes.
 */
export class SimNetwork {
  private readonly cut = new Set<string>();
  /** Per connection and direction: when the last message was delivered, so none overtakes another. */
  private readonly lastDelivery = new Map<string, number>();
  /** Per connection: how many times it broke; a message sent on an earlier one is lost. */
  private readonly generation = new Map<string, number>();
  /** Exceptions thrown by request handlers: bugs, reported by the invariant checks. */
  readonly handlerErrors: string[] = [];
  /** Connections broken by a lost message (for the summary). */
  breaks = 0;

  constructor(
    private readonly queue: EventQueue,
    private readonly random: SeededRandom,
    readonly config: NetworkConfig,
    /** The node's current incarnation, or null when it is down. */
    private readonly incarnation: (node: number) => number | null,
    /** Until when the node is paused (takes no message), or 0. */
    private readonly holdUntil: (node: number) => number = () => 0,
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

  /**
   * Schedules a one-way message on connection `conn` between the two nodes, in order on it; false
   * when it is lost. A `reliable` message (the metadata watch, a stream that resumes where it
   * stopped) is only ever delayed.
   */
  deliver(from: number, to: number, run: () => void, reliable = false, conn = ''): boolean {
    const link = `${Math.min(from, to)}<>${Math.max(from, to)}#${conn}`;
    if (!reliable && (this.isCut(from, to) || this.random.chance(this.config.dropRate))) {
      this.generation.set(link, (this.generation.get(link) ?? 0) + 1);
      this.breaks++;
      return false;
    }
    const gen = this.generation.get(link) ?? 0;
    const key = `${from}>${to}#${conn}`;
    const { minDelayMs, maxDelayMs, stallRate, stallMaxMs } = this.config;
    const now = this.queue.clock.nowMs();
    let delay = this.random.between(minDelayMs, maxDelayMs);
    if (stallRate > 0 && this.random.chance(stallRate)) delay += this.random.between(1, stallMaxMs);
    const at = Math.max(now + delay, this.lastDelivery.get(key) ?? 0);
    this.lastDelivery.set(key, at);
    const arrive = (): void => {
      if (!reliable && (this.generation.get(link) ?? 0) !== gen) return;
      const until = this.holdUntil(to);
      if (until > this.queue.clock.nowMs()) this.queue.at(until, arrive);
      else run();
    };
    this.queue.at(at, arrive);
    return true;
  }

  /** A request from `from` to `to` on connection `conn`, answered by `handle` on arrival (it may wait). */
  request<T>(
    from: number,
    to: number,
    handle: () => T | Promise<T>,
    conn = '',
    timeoutMs = this.config.requestTimeoutMs,
  ): Promise<T> {
    const fromIncarnation = this.incarnation(from);
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      let cancelled = false;
      const timeout = (): void => {
        if (settled || cancelled) return;
        // A paused sender notices the timeout when it runs again.
        const until = this.holdUntil(from);
        if (until > this.queue.clock.nowMs()) {
          this.queue.at(until, timeout);
          return;
        }
        settled = true;
        reject(new Error(`request from ${from} to ${to} timed out`));
      };
      this.queue.schedule('request-timeout', timeoutMs, timeout);
      const cancelTimeout = (): void => {
        cancelled = true;
      };
      this.deliver(
        from,
        to,
        () => {
          const toIncarnation = this.incarnation(to);
          if (toIncarnation === null) return;
          Promise.resolve()
            .then(handle)
            .then(
              (result) => {
                if (this.incarnation(to) !== toIncarnation) return;
                this.deliver(
                  to,
                  from,
                  () => {
                    if (settled || this.incarnation(from) !== fromIncarnation) return;
                    settled = true;
                    cancelTimeout();
                    resolve(result);
                  },
                  false,
                  conn,
                );
              },
              (e: unknown) => {
                this.handlerErrors.push(e instanceof Error ? (e.stack ?? e.message) : String(e));
              },
            );
        },
        false,
        conn,
      );
    });
  }
}
