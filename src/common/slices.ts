import type { Clock } from './clock.js';

/** A turn of the event loop: timers (heartbeats) and I/O (their answers) run before the next slice. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Runs `steps` (a generator yielding after each unit of work) to the end, giving the event loop a
 * turn whenever `sliceMs` have passed since the last one: long start-up work (loading thousands
 * of logs, becoming leader of thousands of partitions) never blocks a broker's heartbeats for
 * longer than a slice plus one unit.
 */
export async function runInSlices(
  steps: Iterable<unknown>,
  clock: Clock,
  sliceMs: number,
  yieldTurn: () => Promise<void> = nextTurn,
): Promise<void> {
  let sliceStartMs = clock.nowMs();
  for (const _ of steps) {
    if (clock.nowMs() - sliceStartMs < sliceMs) continue;
    await yieldTurn();
    sliceStartMs = clock.nowMs();
  }
}

/** Runs `steps` to the end at once. */
export function runToEnd(steps: Iterable<unknown>): void {
  const it = steps[Symbol.iterator]();
  while (it.next().done !== true);
}

/**
 * Runs `steps` at once when they take less than `sliceMs`, calling `done` before it returns (as
 * runToEnd would); else gives the event loop a turn after each slice (as runInSlices) and calls
 * `done` after the last. Metadata changes that create or delete thousands of partitions at once
 * (each one's checkpoints fsynced) so never hold up the broker's heartbeats and requests, while a
 * small change applies as synchronously as before. `cancelled` is asked before each later slice:
 * true ends the run there without `done`. A step that throws ends the run; `done` gets the error.
 */
export function runInSlicesWhenLong(
  steps: Iterable<unknown>,
  clock: Clock,
  sliceMs: number,
  done: (error: unknown) => void,
  cancelled: () => boolean,
  yieldTurn: () => Promise<void> = nextTurn,
): void {
  const it = steps[Symbol.iterator]();
  const slice = (): void => {
    const startMs = clock.nowMs();
    try {
      while (it.next().done !== true) {
        if (clock.nowMs() - startMs < sliceMs) continue;
        void yieldTurn().then(() => {
          if (!cancelled()) slice();
        });
        return;
      }
    } catch (e) {
      done(e);
      return;
    }
    done(undefined);
  };
  slice();
}
