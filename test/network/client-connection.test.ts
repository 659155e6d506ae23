import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, describe, it } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { ManualScheduler } from '../../src/common/scheduler.js';
import {
  ClientConnection,
  ConnectionClosedError,
  RequestTimeoutError,
} from '../../src/network/client-connection.js';
import { FrameReader } from '../../src/protocol/framing.js';
import {
  ApiVersionsRequestCodec,
  defaultApiVersionsRequest,
} from '../../src/protocol/generated/ApiVersionsRequest.js';
import {
  ApiVersionsResponseCodec,
  defaultApiVersionsResponse,
} from '../../src/protocol/generated/ApiVersionsResponse.js';
import { encodeResponse } from '../../src/protocol/messages.js';
import { readRequest } from '../../src/protocol/request-frame.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A fake broker: answers ApiVersions with errorCode = correlation id, on demand. */
async function fakeBroker() {
  const held: { socket: net.Socket; correlationId: number }[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    const reader = new FrameReader();
    socket.on('data', (c: Buffer) => {
      for (const f of reader.push(c))
        held.push({ socket, correlationId: readRequest(f).header.correlationId });
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    held,
    /** Answers the held requests in the given order of their indexes. */
    answer(order: number[]) {
      for (const i of order) {
        const h = held[i]!;
        for (const c of encodeResponse(h.correlationId, 18, 0, ApiVersionsResponseCodec, {
          ...defaultApiVersionsResponse(),
          errorCode: h.correlationId,
        }))
          h.socket.write(c);
      }
    },
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

describe('ClientConnection', () => {
  const cleanups: (() => void)[] = [];
  after(() => {
    for (const c of cleanups) c();
  });

  const send = (c: ClientConnection) =>
    c.send(18, 0, ApiVersionsRequestCodec, defaultApiVersionsRequest(), ApiVersionsResponseCodec);

  it('matches responses to requests by correlation id and bounds requests in flight', async () => {
    const b = await fakeBroker();
    cleanups.push(() => b.close());
    const c = await ClientConnection.connect('127.0.0.1', b.port, { clientId: 't', maxInFlight: 2 });
    const results = [send(c), send(c), send(c)];
    await sleep(50);
    assert.equal(b.held.length, 2, 'the third waits for a slot');
    b.answer([0, 1]);
    await sleep(50);
    assert.equal(b.held.length, 3);
    b.answer([2]);
    const bodies = await Promise.all(results);
    assert.deepEqual(
      bodies.map((r) => r.errorCode),
      [1, 2, 3],
    );
    c.close();
  });

  it('fails the connection on an out-of-order response, and rejects every pending request', async () => {
    const b = await fakeBroker();
    cleanups.push(() => b.close());
    const c = await ClientConnection.connect('127.0.0.1', b.port, { clientId: 't' });
    const first = send(c);
    const second = send(c);
    await sleep(50);
    b.answer([1]);
    await assert.rejects(first, /unexpected correlation id 2/);
    await assert.rejects(second, /unexpected correlation id 2/);
    await assert.rejects(send(c));
  });

  it('rejects pending requests when the peer closes', async () => {
    const b = await fakeBroker();
    cleanups.push(() => b.close());
    const c = await ClientConnection.connect('127.0.0.1', b.port, { clientId: 't' });
    const pending = send(c);
    await sleep(50);
    b.held[0]!.socket.destroy();
    await assert.rejects(pending, ConnectionClosedError);
  });

  it('times a request out after request.timeout.ms on the injected scheduler', async () => {
    const b = await fakeBroker();
    cleanups.push(() => b.close());
    const clock = new ManualClock();
    const scheduler = new ManualScheduler(clock);
    const c = await ClientConnection.connect('127.0.0.1', b.port, {
      clientId: 't',
      requestTimeoutMs: 1000,
      scheduler,
    });
    const pending = send(c);
    await sleep(20);
    clock.advance(999);
    scheduler.runDue();
    await sleep(20);
    assert.equal(c.inFlight, 1, 'not timed out yet');
    scheduler.runDue();
    clock.advance(1);
    scheduler.runDue();
    await assert.rejects(pending, RequestTimeoutError);
  });
});
