import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReadBufferPool } from '../../src/storage/read-buffers.js';

describe('ReadBufferPool', () => {
  it('hands a released buffer out again, for any size of the same power-of-two class', () => {
    const pool = new ReadBufferPool(1024, 1 << 20, 1 << 22);
    const a = pool.acquire(3000);
    assert.equal(a.length, 3000);
    assert.ok(pool.owns(a));
    a.fill(7);
    pool.release(a);
    assert.ok(!pool.owns(a));
    const b = pool.acquire(4096);
    assert.equal(b.length, 4096);
    assert.equal(b.buffer, a.buffer, 'same memory reused');
    assert.equal(pool.reused, 1);
    assert.equal(pool.allocated, 1);
    // A different class gets its own memory.
    const c = pool.acquire(5000);
    assert.notEqual(c.buffer, b.buffer);
  });

  it('never hands out memory that is still out, and ignores buffers it did not hand out', () => {
    const pool = new ReadBufferPool(1024, 1 << 20, 1 << 22);
    const a = pool.acquire(2048);
    const b = pool.acquire(2048);
    assert.notEqual(a.buffer, b.buffer);
    pool.release(Buffer.alloc(2048));
    pool.release(a.subarray(0, 100));
    const c = pool.acquire(2048);
    assert.ok(c.buffer !== a.buffer && c.buffer !== b.buffer);
    // A second release of the same buffer does not put its memory in the free list twice.
    pool.release(a);
    pool.release(a);
    const d = pool.acquire(2048);
    const e = pool.acquire(2048);
    assert.equal(d.buffer, a.buffer);
    assert.notEqual(e.buffer, a.buffer);
  });

  it('does not pool small or huge reads and keeps at most maxFreeBytes free', () => {
    const pool = new ReadBufferPool(1024, 8192, 8192);
    const small = pool.acquire(100);
    const huge = pool.acquire(10_000);
    assert.ok(!pool.owns(small) && !pool.owns(huge));
    const x = pool.acquire(8192);
    const y = pool.acquire(8192);
    pool.release(x);
    pool.release(y); // over the free-bytes bound: dropped
    assert.equal(pool.acquire(8192).buffer, x.buffer);
    const z = pool.acquire(8192);
    assert.ok(z.buffer !== x.buffer && z.buffer !== y.buffer);
  });
});
