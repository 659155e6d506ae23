import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { runFirstSliceNow } from '../../src/common/slices.js';

/** `count` steps of `stepMs` each on `clock`, recording which ran. */
function* steps(clock: ManualClock, count: number, stepMs: number, ran: number[]): Generator<void> {
  for (let i = 0; i < count; i++) {
    clock.advance(stepMs);
    ran.push(i);
    yield;
  }
}

test('runFirstSliceNow: work shorter than a slice is done at once, longer work goes on after turns of the event loop', async () => {
  const clock = new ManualClock();
  const ran: number[] = [];
  assert.equal(runFirstSliceNow(steps(clock, 4, 10, ran), clock, 50), null);
  assert.deepEqual(ran, [0, 1, 2, 3]);

  ran.length = 0;
  let turns = 0;
  const turn = async () => {
    turns++;
  };
  const rest = runFirstSliceNow(steps(clock, 12, 10, ran), clock, 50, turn);
  assert.ok(rest instanceof Promise);
  assert.deepEqual(ran, [0, 1, 2, 3, 4], 'the first slice ran before the call returned');
  await rest;
  assert.deepEqual(
    ran,
    Array.from({ length: 12 }, (_, i) => i),
  );
  // A turn after the first slice, then one after each 50 ms of the rest (steps 5–9, then 10–11).
  assert.equal(turns, 2);
});
