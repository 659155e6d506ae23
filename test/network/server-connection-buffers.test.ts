import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { describe, it } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { silentLogger } from '../../src/common/logger.js';
import { ManualScheduler } from '../../src/common/scheduler.js';
import { ServerConnection } from '../../src/network/server-connection.js';
import { readBuffers } from '../../src/storage/read-buffers.js';

/** A socket whose writes complete only when the test says so (a client that is not reading). */
class SlowSocket extends Duplex {
  readonly remoteAddress = '127.0.0.1';
  readonly remotePort = 1;
  readonly pending: (() => void)[] = [];
  written: Buffer[] = [];
  setNoDelay(): this {
    return this;
  }
  override _read(): void {}
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    // What a socket sends is what the buffer holds when the kernel takes it: copy at completion.
    this.pending.push(() => {
      this.written.push(Buffer.from(chunk));
      cb();
    });
  }
  /** Completes the pending writes, and those they let start, until none is left. */
  async completeAll(): Promise<void> {
    while (this.pending.length > 0) {
      for (const f of this.pending.splice(0)) f();
      await tick();
    }
  }
}

const tick = () => new Promise((r) => setImmediate(r));

describe('server connection and read buffers', () => {
  it('gives a pooled response chunk back only once its socket write completed', async () => {
    const pooled = readBuffers.acquire(256 * 1024);
    pooled.fill(0x5a);
    const header = Buffer.from([0, 0, 0, 4]);
    const socket = new SlowSocket({ highWaterMark: 1 << 30 });
    new ServerConnection(
      'c1',
      socket as unknown as Socket,
      { handle: async () => [header, pooled] },
      { maxFrameBytes: 1 << 20, maxQueuedRequests: 10, maxQueuedBytes: 1 << 20 },
      new ManualClock(0),
      new ManualScheduler(new ManualClock(0)),
      silentLogger,
      () => {},
    );
    socket.push(Buffer.from([0, 0, 0, 8, 0, 1, 0, 0, 0, 0, 0, 7]));
    await tick();
    await tick();
    assert.ok(socket.pending.length > 0, 'the response is being written');
    assert.ok(readBuffers.owns(pooled), 'still the socket’s while its write is pending');
    // Another read now must get other memory.
    const other = readBuffers.acquire(256 * 1024);
    assert.notEqual(other.buffer, pooled.buffer);
    readBuffers.release(other);
    await socket.completeAll();
    assert.ok(!readBuffers.owns(pooled), 'back in the pool once written');
    assert.ok(socket.written.some((w) => w.length === pooled.length && w.every((x) => x === 0x5a)));
  });
});
