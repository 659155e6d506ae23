import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, describe, it } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { MemoryLogger } from '../../src/common/logger.js';
import { ManualScheduler, TimerScheduler } from '../../src/common/scheduler.js';
import { CloseConnectionError, type RequestHandler } from '../../src/network/request-handler.js';
import { SocketServer, type SocketServerConfig } from '../../src/network/socket-server.js';
import { FrameReader, frame } from '../../src/protocol/framing.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function config(overrides: Partial<SocketServerConfig> = {}): SocketServerConfig {
  return {
    host: '127.0.0.1',
    port: 0,
    maxFrameBytes: 1024,
    maxQueuedRequestsPerConnection: 4,
    maxQueuedBytesPerConnection: 1 << 20,
    connectionsMaxIdleMs: 600_000,
    maxConnections: 100,
    ...overrides,
  };
}

/** A raw client: writes frames, collects response frames and notices the close. */
class RawClient {
  readonly frames: Buffer[] = [];
  closed = false;
  private readonly reader = new FrameReader();
  private constructor(readonly socket: net.Socket) {
    socket.on('data', (c: Buffer) => this.frames.push(...this.reader.push(c)));
    socket.on('close', () => {
      this.closed = true;
    });
    socket.on('error', () => {});
  }
  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => resolve(new RawClient(s)));
    });
  }
  send(payloads: Buffer[]): void {
    this.socket.write(Buffer.concat(payloads.flatMap((p) => frame([p]))));
  }
  async waitFor(n: number, timeoutMs = 2000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (this.frames.length < n && !this.closed && Date.now() < until) await sleep(5);
  }
  async waitClosed(timeoutMs = 2000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (!this.closed && Date.now() < until) await sleep(5);
  }
}

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

describe('SocketServer', () => {
  const servers: SocketServer[] = [];
  after(async () => {
    for (const s of servers) await s.close();
  });

  async function start(
    handler: RequestHandler,
    overrides: Partial<SocketServerConfig> = {},
    clock = new ManualClock(),
  ) {
    const logger = new MemoryLogger();
    const scheduler = new ManualScheduler(clock);
    const server = new SocketServer(config(overrides), handler, clock, scheduler, logger);
    servers.push(server);
    const { port } = await server.listen();
    return { server, port, logger, clock, scheduler };
  }

  // Echo handler whose latency varies inversely with the request number, so any reordering shows.
  const echo: RequestHandler = {
    async handle(f) {
      await sleep(f.readUInt32BE(0) % 2 === 0 ? 15 : 1);
      return frame([f]);
    },
  };

  it('answers pipelined requests strictly in order, one at a time', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const { port } = await start({
      async handle(f) {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await sleep(f.readUInt32BE(0) % 3 === 0 ? 10 : 0);
        inFlight--;
        return frame([f]);
      },
    });
    const c = await RawClient.connect(port);
    c.send(Array.from({ length: 30 }, (_, i) => u32(i)));
    await c.waitFor(30);
    assert.deepEqual(
      c.frames.map((f) => f.readUInt32BE(0)),
      Array.from({ length: 30 }, (_, i) => i),
    );
    assert.equal(maxInFlight, 1);
    c.socket.destroy();
  });

  it('starts the next request once a handler releases the connection, and still answers in order', async () => {
    // Even requests release at once and then wait long; odd ones answer at once. Each request
    // records which requests were still unanswered when it started: a released wait must not hold
    // the next request.
    const started: number[] = [];
    const unansweredAtStart = new Map<number, number[]>();
    const unanswered = new Set<number>();
    let waiting = 0;
    let maxWaiting = 0;
    const { port } = await start({
      async handle(f, _conn, release) {
        const n = f.readUInt32BE(0);
        unansweredAtStart.set(n, [...unanswered]);
        unanswered.add(n);
        started.push(n);
        if (n % 2 === 0) {
          release();
          waiting++;
          maxWaiting = Math.max(maxWaiting, waiting);
          await sleep(40 - n);
          waiting--;
        }
        unanswered.delete(n);
        return frame([f]);
      },
    });
    const c = await RawClient.connect(port);
    c.send(Array.from({ length: 12 }, (_, i) => u32(i)));
    await c.waitFor(12);
    assert.deepEqual(
      c.frames.map((f) => f.readUInt32BE(0)),
      Array.from({ length: 12 }, (_, i) => i),
    );
    // Request 1 started while request 0 still waited, and so on.
    assert.deepEqual(unansweredAtStart.get(1), [0]);
    assert.deepEqual(
      started,
      Array.from({ length: 12 }, (_, i) => i),
    );
    // At most maxQueuedRequestsPerConnection (4) requests are started and unanswered at once.
    assert.ok(maxWaiting >= 2 && maxWaiting <= 4, `waiting at once: ${maxWaiting}`);
    c.socket.destroy();
  });

  it('keeps the frames of released requests within the queued bytes bound', async () => {
    // 400-byte frames that all release at once and wait 30 ms: with a 1000-byte bound, two can
    // wait at once (a third would hold 1200 bytes), though four requests would be allowed.
    let waiting = 0;
    let maxWaiting = 0;
    const { port } = await start(
      {
        async handle(f, _conn, release) {
          release();
          waiting++;
          maxWaiting = Math.max(maxWaiting, waiting);
          await sleep(30);
          waiting--;
          return frame([f.subarray(0, 4)]);
        },
      },
      { maxQueuedBytesPerConnection: 1000 },
    );
    const c = await RawClient.connect(port);
    c.send(
      Array.from({ length: 8 }, (_, i) => {
        const payload = Buffer.alloc(400);
        payload.writeUInt32BE(i);
        return payload;
      }),
    );
    await c.waitFor(8);
    assert.deepEqual(
      c.frames.map((f) => f.readUInt32BE(0)),
      Array.from({ length: 8 }, (_, i) => i),
    );
    assert.equal(maxWaiting, 2);
    c.socket.destroy();
  });

  it('closes only the connection that sent an oversized frame, with one log line', async () => {
    const { port, logger, server } = await start(echo);
    const good = await RawClient.connect(port);
    const bad = await RawClient.connect(port);
    bad.socket.write(u32(1_000_000));
    await bad.waitClosed();
    assert.ok(bad.closed);
    const lines = logger.lines.filter((l) => l.includes('exceeds the limit'));
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /127\.0\.0\.1:\d+/);
    good.send([u32(7)]);
    await good.waitFor(1);
    assert.equal(good.frames[0]!.readUInt32BE(0), 7);
    assert.equal(server.connectionCount, 1);
    good.socket.destroy();
  });

  it('closes the connection when the handler refuses the request, and names the reason', async () => {
    const { port, logger } = await start({
      async handle() {
        throw new CloseConnectionError('unknown API key 999');
      },
    });
    const c = await RawClient.connect(port);
    c.send([u32(1)]);
    await c.waitClosed();
    assert.ok(c.closed);
    assert.equal(logger.lines.filter((l) => l.includes('unknown API key 999')).length, 1);
  });

  it('writes the last answer of a refused request before closing (a failed SASL exchange)', async () => {
    const { port, logger } = await start({
      async handle(f) {
        if (f.readUInt32BE(0) === 2)
          throw new CloseConnectionError('failed authentication', frame([u32(99)]));
        return frame([f]);
      },
    });
    const c = await RawClient.connect(port);
    c.send([u32(1), u32(2), u32(3)]);
    await c.waitClosed();
    assert.ok(c.closed);
    assert.deepEqual(
      c.frames.map((f) => f.readUInt32BE(0)),
      [1, 99],
      'the answers before it, then the final one; nothing after',
    );
    assert.equal(logger.lines.filter((l) => l.includes('failed authentication')).length, 1);
  });

  it('survives a handler bug: that connection closes, others keep working', async () => {
    const { port, logger } = await start({
      async handle(f) {
        if (f.readUInt32BE(0) === 13) throw new TypeError('boom');
        return frame([f]);
      },
    });
    const a = await RawClient.connect(port);
    const b = await RawClient.connect(port);
    a.send([u32(13)]);
    await a.waitClosed();
    b.send([u32(1)]);
    await b.waitFor(1);
    assert.ok(a.closed);
    assert.equal(b.frames.length, 1);
    assert.ok(logger.lines.some((l) => l.includes('TypeError: boom')));
    b.socket.destroy();
  });

  it('closes connections idle for longer than connections.max.idle.ms', async () => {
    const { port, clock, scheduler, server } = await start(echo, { connectionsMaxIdleMs: 1000 });
    const c = await RawClient.connect(port);
    c.send([u32(1)]);
    await c.waitFor(1);
    clock.advance(900);
    scheduler.runDue();
    await sleep(20);
    assert.equal(c.closed, false, 'not idle yet');
    clock.advance(400);
    scheduler.runDue();
    await c.waitClosed();
    assert.ok(c.closed);
    assert.equal(server.connectionCount, 0);
  });

  it('refuses connections beyond max.connections', async () => {
    const { port, server } = await start(echo, { maxConnections: 2 });
    const a = await RawClient.connect(port);
    const b = await RawClient.connect(port);
    const c = await RawClient.connect(port);
    await c.waitClosed();
    assert.ok(c.closed);
    assert.equal(server.rejectedConnections, 1);
    a.send([u32(2)]);
    await a.waitFor(1);
    assert.equal(a.frames.length, 1);
    a.socket.destroy();
    b.socket.destroy();
  });

  it('stops reading from a client that does not read its responses', async () => {
    let handled = 0;
    const big = Buffer.alloc(64 * 1024, 1);
    const { port } = await start(
      {
        async handle() {
          handled++;
          return frame([big]);
        },
      },
      { maxFrameBytes: 1024, maxQueuedRequestsPerConnection: 4 },
    );
    const s = net.connect({ host: '127.0.0.1', port });
    await new Promise((r) => s.once('connect', r));
    s.pause(); // never read
    const request = Buffer.concat(frame([u32(1)]));
    for (let i = 0; i < 5000; i++) s.write(request);
    // Wait until handling stops: responses of 64 KiB pile up in the socket buffers until writes need
    // draining, and from then on no more requests are handled, however many were sent.
    let last = -1;
    const until = Date.now() + 5000;
    while (handled !== last && Date.now() < until) {
      last = handled;
      await sleep(200);
    }
    assert.equal(handled, last, 'handling stopped while the client does not read');
    assert.ok(handled < 5000, `handled ${handled} of 5000 requests without the client reading`);
    s.resume();
    s.on('data', () => {});
    const until2 = Date.now() + 5000;
    while (handled < 5000 && Date.now() < until2) await sleep(10);
    assert.equal(handled, 5000, 'everything is handled once the client reads');
    s.destroy();
  });

  it('uses real timers in production: the idle sweep is scheduled', async () => {
    const clock = new ManualClock();
    const server = new SocketServer(
      config({ connectionsMaxIdleMs: 40 }),
      echo,
      { nowMs: () => Date.now() },
      new TimerScheduler(),
      new MemoryLogger(),
    );
    servers.push(server);
    const { port } = await server.listen();
    const c = await RawClient.connect(port);
    await c.waitClosed(1000);
    assert.ok(c.closed);
    assert.ok(clock.nowMs() > 0);
  });
});
