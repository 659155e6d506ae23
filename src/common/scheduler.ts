import type { Clock } from './clock.js';

/** Runs delayed work: deferred segment deletion, periodic flush and checkpoints. */
export interface Scheduler {
  /** Runs `task` once, `delayMs` from now. Returns a function that cancels it. */
  schedule(name: string, delayMs: number, task: () => void): () => void;
}

/** Timers of the Node event loop; unref'd so pending deletions never keep a process alive. */
export class TimerScheduler implements Scheduler {
  schedule(_name: string, delayMs: number, task: () => void): () => void {
    if (delayMs <= 0) {
      // "Now" is the next turn of the event loop, not setTimeout's 1 ms minimum: a replica fetcher
      // sends its next Fetch this way after each answer (a catch-up is ~100 rounds, each acks=all
      // produce waits for one).
      const immediate = setImmediate(task);
      immediate.unref();
      return () => clearImmediate(immediate);
    }
    const timer = setTimeout(task, delayMs);
    timer.unref();
    return () => clearTimeout(timer);
  }
}

interface PendingTask {
  name: string;
  dueMs: number;
  seq: number;
  task: () => void;
}

/**
 * Tasks that run only when `runDue()` is called, at or after their due time on a manual clock.
 * Owned by one test or simulation; tasks due at the same time run in scheduling order.
 */
export class ManualScheduler implements Scheduler {
  private pending: PendingTask[] = [];
  private nextSeq = 0;

  constructor(private readonly clock: Clock) {}

  schedule(name: string, delayMs: number, task: () => void): () => void {
    const entry: PendingTask = { name, dueMs: this.clock.nowMs() + delayMs, seq: this.nextSeq++, task };
    this.pending.push(entry);
    return () => {
      this.pending = this.pending.filter((p) => p !== entry);
    };
  }

  /** Runs every task due by now (including ones scheduled by the tasks that run). Returns the count. */
  runDue(): number {
    let ran = 0;
    for (;;) {
      const now = this.clock.nowMs();
      const due = this.pending
        .filter((p) => p.dueMs <= now)
        .sort((a, b) => a.dueMs - b.dueMs || a.seq - b.seq);
      if (due.length === 0) return ran;
      const first = due[0]!;
      this.pending = this.pending.filter((p) => p !== first);
      first.task();
      ran++;
    }
  }

  pendingNames(): string[] {
    return this.pending.map((p) => p.name);
  }
}
