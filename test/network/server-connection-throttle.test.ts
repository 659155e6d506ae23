import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { describe, it } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { silentLogger } from '../../src/common/logger.js';
import { ManualScheduler } from '../../src/common/scheduler.js';
import type { ConnectionInfo } from '../../src/network/request-handler.js';
import { ServerConnection } from '../../src/network/server-connection.js';

/** A socket that takes every write at once. */
class FastSocket extends Duplex {
  readonly remoteAddress = '127.0.0.1';
  readonly remotePort = 1;
  readonly written: Buffer[] = [];
  setNoDelay(): this {
    return this;
  }
  override _read(): void {}
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    this.written.push(Buffer.from(chunk));
    cb();
  }
}

const tick = () => new Promise((r) => setImmediate(r));
const FRAME = Buffer.from([0, 0, 0, 8, 0, 1, 0, 0, 0, 0, 0, 7]);

describe('server connection throttling (a muted channel)', () => {
  it('answers the throttled request at once, then starts nothing until the throttle time has passed', async () => {
    const clock = new ManualClock(0);
    const scheduler = new ManualScheduler(clock);
    const socket = new FastSocket();
    let handled = 0;
    const conn = new ServerConnection(
      'c1',
      socket as unknown as Socket,
      {
        handle: async (_frame: Buffer, c: ConnectionInfo) => {
          handled++;
          if (handled === 1) c.throttle?.(500);
          return [Buffer.from([0, 0, 0, 1, handled])];
        },
      },
      { maxFrameBytes: 1 << 20, maxQueuedRequests: 10, maxQueuedBytes: 1 << 20 },
      clock,
      scheduler,
      silentLogger,
      () => {},
    );
    socket.push(Buffer.concat([FRAME, FRAME]));
    await tick();
    await tick();
    assert.equal(handled, 1, 'the second request waits while the connection is muted');
    assert.equal(socket.written.length, 1, 'the throttled response went out at once (KIP-219)');
    assert.equal(conn.throttled, true);
    clock.advance(499);
    scheduler.runDue();
    await tick();
    assert.equal(handled, 1);
    clock.advance(1);
    scheduler.runDue();
    await tick();
    await tick();
    assert.equal(conn.throttled, false);
    assert.equal(handled, 2, 'unmuted: the next request starts');
    assert.equal(socket.written.length, 2);
    conn.close(null);
    assert.deepEqual(scheduler.pendingNames(), []);
  });
});
