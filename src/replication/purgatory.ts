/**
 * Requests parked until a partition changes or their timeout fires (Kafka's
 * DelayedOperationPurgatory, without the timing wheel: each operation owns one scheduler timer).
 * Keys are partition names (`topic-partition`); an append or HW move calls `checkAndComplete`
 * for its partition. Owned by the broker; bounded by the connections, since each connection has
 * at most one request in flight.
 */
export interface DelayedOperation {
  /** Completes the operation if it can; returns whether it is now complete. */
  tryComplete(): boolean;
  /** Completes it now without its condition (timeout, shutdown). */
  forceComplete(): void;
  readonly completed: boolean;
}

export class Purgatory {
  private readonly watchers = new Map<string, Set<DelayedOperation>>();

  get watched(): number {
    let n = 0;
    for (const s of this.watchers.values()) n += s.size;
    return n;
  }

  watch(keys: readonly string[], op: DelayedOperation): void {
    for (const k of keys) {
      let set = this.watchers.get(k);
      if (!set) {
        set = new Set();
        this.watchers.set(k, set);
      }
      set.add(op);
    }
  }

  unwatch(keys: readonly string[], op: DelayedOperation): void {
    for (const k of keys) {
      const set = this.watchers.get(k);
      if (!set) continue;
      set.delete(op);
      if (set.size === 0) this.watchers.delete(k);
    }
  }

  /** Completes every parked operation as if it timed out (shutdown). Returns how many there were. */
  forceCompleteAll(): number {
    const all = new Set<DelayedOperation>();
    for (const set of this.watchers.values()) for (const op of set) all.add(op);
    this.watchers.clear();
    for (const op of all) op.forceComplete();
    return all.size;
  }

  /** Tries every operation watching `key`; completed ones are dropped. Returns how many completed. */
  checkAndComplete(key: string): number {
    const set = this.watchers.get(key);
    if (!set) return 0;
    let done = 0;
    for (const op of [...set]) {
      if (op.completed || op.tryComplete()) {
        set.delete(op);
        done++;
      }
    }
    if (set.size === 0) this.watchers.delete(key);
    return done;
  }
}

export interface TimerScheduler {
  schedule(name: string, delayMs: number, task: () => void): () => void;
}

/**
 * Parks until `check()` holds (tried whenever a watched partition changes) or `timeoutMs` passes.
 * Resolves true when the check passed, false on timeout. `check` runs synchronously inside
 * appends, so it must be cheap and must not throw.
 */
export function awaitCondition(
  purgatory: Purgatory,
  scheduler: TimerScheduler,
  keys: readonly string[],
  timeoutMs: number,
  check: () => boolean,
  /** Registers a callback that ends the wait early (the client went away); returns its removal. */
  onAbort?: (abort: () => void) => () => void,
): Promise<boolean> {
  return new Promise((resolve) => {
    let cancelTimer: () => void = () => {};
    let removeAbort: () => void = () => {};
    const op: DelayedOperation = {
      completed: false,
      tryComplete(): boolean {
        if (op.completed) return true;
        if (!check()) return false;
        finish(true);
        return true;
      },
      forceComplete(): void {
        if (!op.completed) finish(false);
      },
    };
    const finish = (passed: boolean): void => {
      (op as { completed: boolean }).completed = true;
      cancelTimer();
      removeAbort();
      purgatory.unwatch(keys, op);
      resolve(passed);
    };
    purgatory.watch(keys, op);
    cancelTimer = scheduler.schedule('delayed-operation', Math.max(0, timeoutMs), () => {
      if (!op.completed) finish(false);
    });
    if (onAbort) removeAbort = onAbort(() => op.forceComplete());
  });
}
