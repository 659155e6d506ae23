import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FetchSessionCache } from '../../src/broker/fetch-session.js';
import { ManualClock } from '../../src/common/clock.js';

describe('FetchSessionCache', () => {
  it('a client that opens a new session on every fetch (epoch 0, as @platformatic/kafka does) gets one each time', () => {
    let next = 1;
    const cache = new FetchSessionCache(3, new ManualClock(), () => next++);
    const ids = Array.from({ length: 3 }, () => {
      const c = cache.context(0, 0, [], []);
      assert.equal(c.kind, 'full');
      return c.kind === 'full' ? c.session?.id : undefined;
    });
    assert.deepEqual(ids, [1, 2, 3]);
    // Full and nothing idle long enough to evict: a sessionless answer, not a wait or a loop.
    const c = cache.context(0, 0, [], []);
    assert.ok(c.kind === 'full' && c.session === null);
  });

  it('gives up on a session (never spins) when the random source only yields taken or zero ids', () => {
    const zero = new FetchSessionCache(10, new ManualClock(), () => 0);
    const c = zero.context(0, 0, [], []);
    assert.ok(c.kind === 'full' && c.session === null);
    const constant = new FetchSessionCache(10, new ManualClock(), () => 7);
    const first = constant.context(0, 0, [], []);
    assert.ok(first.kind === 'full' && first.session?.id === 7);
    const second = constant.context(0, 0, [], []);
    assert.ok(second.kind === 'full' && second.session === null);
  });
});
