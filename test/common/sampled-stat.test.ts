import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Avg, Rate, throttleTimeMs } from '../../src/common/sampled-stat.js';

const WINDOW = { samples: 11, sampleMs: 1000 };

test('Rate: a young meter is padded to samples - 1 whole sample spans', () => {
  const r = new Rate(WINDOW);
  r.record(1000, 0);
  assert.equal(r.windowSizeMs(0), 10_000);
  assert.equal(r.measure(0), 100);
  assert.equal(r.windowSizeMs(500), 10_500, 'the elapsed part of the span counts beside the padding');
  r.record(1000, 10_500);
  assert.equal(r.windowSizeMs(10_900), 10_900, 'no padding once the retained span is long enough');
  assert.equal(r.windowSizeMs(11_000), 10_500, 'the sample begun at 0 expired: 500 ms + 10 spans padded');
});

test('Rate: a steady rate reads true once the window is full; idle samples are forgotten', () => {
  const r = new Rate(WINDOW);
  for (let t = 0; t < 30_000; t += 100) r.record(1000, t);
  // Retained: the samples begun at 19 s..29 s (the one begun at 18 s had no value for 11 s).
  assert.equal(r.windowSizeMs(30_000), 11_000);
  assert.equal(r.measure(30_000), 10_000);
  assert.equal(r.measure(60_000), 0, 'every sample expired');
});

test('Rate: a sample begins at its first value, not at a multiple of the span', () => {
  const r = new Rate(WINDOW);
  r.record(100, 250);
  r.record(100, 1249); // same sample: 999 ms after it began
  r.record(100, 1250); // a new one
  assert.equal(r.windowSizeMs(1250), 10_000, '1 s since the first sample began + 9 padded');
  assert.equal(r.measure(1250), 30);
});

test('Avg: the mean of the retained values, NaN when none', () => {
  const a = new Avg({ samples: 2, sampleMs: 30_000 });
  assert.ok(Number.isNaN(a.measure(0)));
  a.record(100, 0);
  a.record(300, 10);
  assert.equal(a.measure(20), 200);
  assert.ok(Number.isNaN(a.measure(61_000)), 'both samples expired');
});

test("QuotaUtils.throttleTime: X = (O - T) / T × W, rounded; bounded by the request quota's cap", () => {
  assert.equal(throttleTimeMs(600, 500, 10_500), 2100);
  assert.equal(throttleTimeMs(150, 100, 10_000), 5000);
  assert.equal(throttleTimeMs(150, 100, 10_000, 1000), 1000);
  assert.equal(throttleTimeMs(100.004, 100, 10_000), 0, 'rounded to the millisecond');
});
