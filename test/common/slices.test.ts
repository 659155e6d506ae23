import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { runInSlices, runInSlicesWhenLong } from '../../src/common/slices.js';

/** Steps that each take `stepMs` on the manual clock, counting how many ran. */
function* steps(clock: ManualClock, n: number, stepMs: number, ran: number[], failAt = -1) {
  for (let i = 0; i < n; i++) {
    if (i === failAt) throw new Error(`step ${i} failed`);
    clock.advance(stepMs);
    ran.push(i);
    yield;
  }
}

test('runInSlicesWhenLong: short work runs to the end and calls done before it returns', () => {
  const clock = new ManualClock();
  const ran: number[] = [];
  let result: unknown = 'not called';
  runInSlicesWhenLong(
    steps(clock, 10, 1, ran),
    clock,
    50,
    (e) => {
      result = e;
    },
    () => false,
  );
  assert.equal(result, undefined);
  assert.equal(ran.length, 10);
});

test('runInSlicesWhenLong: long work gives the event loop a turn after each slice, then calls done', async () => {
  const clock = new ManualClock();
  const ran: number[] = [];
  const turnsAt: number[] = [];
  let finished!: () => void;
  const done = new Promise<unknown>((resolve) => {
    finished = resolve as () => void;
  });
  let error: unknown = 'not called';
  runInSlicesWhenLong(
    steps(clock, 100, 10, ran),
    clock,
    50,
    (e) => {
      error = e;
      finished();
    },
    () => false,
    async () => {
      turnsAt.push(ran.length);
    },
  );
  assert.equal(ran.length, 5, 'the first slice ran synchronously, 50 ms of it');
  await done;
  assert.equal(error, undefined);
  assert.equal(ran.length, 100);
  // A turn after every 5 steps (the last one before the generator says it is done).
  assert.deepEqual(
    turnsAt,
    Array.from({ length: 20 }, (_, i) => 5 * (i + 1)),
  );
});

test('runInSlicesWhenLong: cancelled between slices stops without done; a failing step ends the run with its error', async () => {
  const clock = new ManualClock();
  const ran: number[] = [];
  let cancel = false;
  let called = false;
  runInSlicesWhenLong(
    steps(clock, 100, 10, ran),
    clock,
    50,
    () => {
      called = true;
    },
    () => cancel,
  );
  cancel = true;
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  assert.equal(ran.length, 5);
  assert.equal(called, false);

  const failed: number[] = [];
  const error = await new Promise<unknown>((resolve) =>
    runInSlicesWhenLong(steps(clock, 100, 10, failed, 7), clock, 50, resolve, () => false),
  );
  assert.match(String(error), /step 7 failed/);
  assert.equal(failed.length, 7);
});

test('runInSlices: yields only once a slice has passed', async () => {
  const clock = new ManualClock();
  const ran: number[] = [];
  let turns = 0;
  await runInSlices(steps(clock, 20, 10, ran), clock, 50, async () => {
    turns++;
  });
  assert.equal(ran.length, 20);
  assert.equal(turns, 4);
});
