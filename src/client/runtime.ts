import { type Clock, SystemClock } from '../common/clock.js';
import type { Scheduler } from '../common/scheduler.js';

/**
 * Time as the client sees it: the clock for latencies and deadlines, a scheduler for request
 * timeouts, and sleep for back-off and throttling. Passed in so tests can control it; only a
 * tool's entry point calls systemRuntime().
 */
export interface ClientRuntime {
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  sleep(ms: number): Promise<void>;
}

/**
 * Real time. Unlike the storage TimerScheduler these timers keep the process alive: a tool waiting
 * out a back-off with no socket open must not exit halfway.
 */
export function systemRuntime(): ClientRuntime {
  return {
    clock: new SystemClock(),
    scheduler: {
      schedule(_name, delayMs, task) {
        const t = setTimeout(task, delayMs);
        return () => clearTimeout(t);
      },
    },
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
}

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** Parses `host:port[,host:port]` as --bootstrap-server takes it; throws ClientError-free RangeError text. */
export function parseBootstrap(list: string): HostPort[] {
  const out: HostPort[] = [];
  for (const raw of list.split(',')) {
    const s = raw.trim();
    if (s === '') continue;
    // [v6]:port or host:port; the port is what follows the last colon.
    const colon = s.lastIndexOf(':');
    const host = colon > 0 ? s.slice(0, colon).replace(/^\[(.*)\]$/, '$1') : '';
    const port = colon > 0 ? Number(s.slice(colon + 1)) : Number.NaN;
    if (host === '' || !Number.isInteger(port) || port <= 0 || port > 65535) {
      throw new RangeError(`invalid bootstrap server '${s}' (expected host:port)`);
    }
    out.push({ host, port });
  }
  if (out.length === 0) throw new RangeError('no bootstrap server given (expected host:port[,host:port])');
  return out;
}
