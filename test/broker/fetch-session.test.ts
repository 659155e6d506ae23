import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FetchSessionCache, type SessionPartition } from '../../src/broker/fetch-session.js';
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
    // Full of sessions as small as the new one: the least recently used smallest makes room.
    const c = cache.context(0, 0, [], []);
    assert.ok(c.kind === 'full' && c.session?.id === 4);
  });

  it("keeps a larger session when full, evicting the smallest for new ones at least as large (Kafka's rule)", () => {
    let next = 1;
    const clock = new ManualClock();
    const cache = new FetchSessionCache(2, clock, () => next++);
    const part = (i: number): SessionPartition => ({
      key: `t:${i}`,
      topic: 't',
      topicId: 'id',
      partition: i,
      fetchOffset: 0n,
      maxBytes: 1,
      currentLeaderEpoch: -1,
      logStartOffset: -1n,
      sentHighWatermark: -1n,
      sentLogStartOffset: -1n,
    });
    const big = cache.context(0, 0, [part(0), part(1), part(2)], []);
    assert.ok(big.kind === 'full' && big.session?.id === 1);
    cache.context(0, 0, [part(0)], []);
    // A one-partition newcomer replaces the other one-partition session, never the big one.
    for (let i = 0; i < 5; i++) {
      const c = cache.context(0, 0, [part(0)], []);
      assert.ok(c.kind === 'full' && c.session !== null);
    }
    const incremental = cache.context(1, 1, [], []);
    assert.equal(incremental.kind, 'incremental');
    // A newcomer smaller than every cached session gets no session.
    const none = cache.context(0, 0, [], []);
    assert.ok(none.kind === 'full' && none.session === null);
    // Until the big one idles past the eviction threshold.
    clock.advance(120_000);
    const late = cache.context(0, 0, [], []);
    assert.ok(late.kind === 'full' && late.session !== null);
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
