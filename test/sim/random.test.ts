import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeededRandom } from '../../src/common/random.js';

test('the same seed gives the same sequence; different seeds differ at once', () => {
  const a = new SeededRandom(7);
  const b = new SeededRandom(7);
  const c = new SeededRandom(8);
  const xs = Array.from({ length: 20 }, () => a.nextUint32());
  assert.deepEqual(
    xs,
    Array.from({ length: 20 }, () => b.nextUint32()),
  );
  assert.notEqual(xs[0], c.nextUint32());
});

test('ranges stay in bounds and cover them', () => {
  const r = new SeededRandom(1);
  const seen = new Set<number>();
  for (let i = 0; i < 2000; i++) {
    const v = r.between(3, 7);
    assert.ok(v >= 3 && v <= 7);
    seen.add(v);
    const f = r.next();
    assert.ok(f >= 0 && f < 1);
  }
  assert.equal(seen.size, 5);
  assert.throws(() => r.int(0), RangeError);
  assert.equal(r.bytes(16).length, 16);
});
