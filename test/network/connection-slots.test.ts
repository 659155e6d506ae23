import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConnectionSlots } from '../../src/network/connection-slots.js';

describe('ConnectionSlots refusal episodes', () => {
  it('marks only the first refusal at max.connections until a slot is given back, which ends the episode with its count', () => {
    const slots = new ConnectionSlots(2);
    assert.deepEqual(slots.tryTake('a'), { taken: true });
    assert.deepEqual(slots.tryTake('b'), { taken: true });
    assert.deepEqual(slots.tryTake('c'), { taken: false, limit: 'max.connections', first: true });
    for (let i = 0; i < 1000; i++)
      assert.deepEqual(slots.tryTake('c'), { taken: false, limit: 'max.connections', first: false });
    assert.deepEqual(slots.give('a'), [{ limit: 'max.connections', address: 'a', refused: 1001 }]);
    assert.deepEqual(slots.tryTake('c'), { taken: true });
    assert.deepEqual(slots.give('b'), [], 'no episode ran');
    assert.deepEqual(slots.tryTake('d'), { taken: true });
    assert.deepEqual(
      slots.tryTake('e'),
      { taken: false, limit: 'max.connections', first: true },
      'a new episode',
    );
  });

  it('keeps an episode per address for max.connections.per.ip, ended by that address giving a slot back', () => {
    const slots = new ConnectionSlots(100, () => 1);
    assert.deepEqual(slots.tryTake('a'), { taken: true });
    assert.deepEqual(slots.tryTake('b'), { taken: true });
    assert.deepEqual(slots.tryTake('a'), { taken: false, limit: 'max.connections.per.ip', first: true });
    assert.deepEqual(slots.tryTake('a'), { taken: false, limit: 'max.connections.per.ip', first: false });
    assert.deepEqual(slots.tryTake('b'), { taken: false, limit: 'max.connections.per.ip', first: true });
    assert.deepEqual(slots.give('b'), [{ limit: 'max.connections.per.ip', address: 'b', refused: 1 }]);
    assert.deepEqual(slots.tryTake('a'), { taken: false, limit: 'max.connections.per.ip', first: false });
    assert.deepEqual(slots.give('a'), [{ limit: 'max.connections.per.ip', address: 'a', refused: 3 }]);
    assert.equal(slots.inUse, 0);
  });
});
