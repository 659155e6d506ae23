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
 * Runs `steps` at once for as long as they take under `sliceMs`, and returns null if they ended
 * so — the common case, done synchronously as runToEnd. Steps that take longer go on as
 * runInSlices runs them, after a turn of the event loop; the promise resolves at their end.
 */
export function runFirstSliceNow(
  steps: Iterable<unknown>,
  clock: Clock,
  sliceMs: number,
  yieldTurn: () => Promise<void> = nextTurn,
): Promise<void> | null {
  const it = steps[Symbol.iterator]();
  const startMs = clock.nowMs();
  for (;;) {
    if (it.next().done === true) return null;
    if (clock.nowMs() - startMs >= sliceMs) break;
  }
  const rest: Iterable<unknown> = { [Symbol.iterator]: () => it };
  return yieldTurn().then(() => runInSlices(rest, clock, sliceMs, yieldTurn));
}
