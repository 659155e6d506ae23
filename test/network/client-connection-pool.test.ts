/**
 * ClientConnection with a FramePool (the replica fetchers' connections): a response frame that spans
 * socket reads is assembled in a pooled buffer; once the caller releases it, the next such response
 * is assembled in the same memory (no fresh buffer per response), with the new bytes.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, describe, it } from 'node:test';
import { ClientConnection } from '../../src/network/client-connection.js';
import { FramePool, FrameReader } from '../../src/protocol/framing.js';
import { defaultFetchRequest, FetchRequestCodec } from '../../src/protocol/generated/FetchRequest.js';
import {
  defaultFetchableTopicResponse,
  defaultFetchResponse,
  defaultPartitionData,
  FetchResponseCodec,
} from '../../src/protocol/generated/FetchResponse.js';
import { encodeResponse } from '../../src/protocol/messages.js';
import { readRequest } from '../../src/protocol/request-frame.js';

const RECORDS_BYTES = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Answers each Fetch (v12) with RECORDS_BYTES of records filled with the correlation id, sent in two halves. */
async function fetchServer() {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    const reader = new FrameReader();
    socket.on('data', (c: Buffer) => {
      for (const f of reader.push(c)) {
        const id = readRequest(f).header.correlationId;
        const chunks = encodeResponse(id, 1, 12, FetchResponseCodec, {
          ...defaultFetchResponse(),
          responses: [
            {
              ...defaultFetchableTopicResponse(),
              topic: 't',
              partitions: [{ ...defaultPartitionData(), records: Buffer.alloc(RECORDS_BYTES, id) }],
            },
          ],
        });
        const whole = Buffer.concat(chunks);
        const half = whole.length >> 1;
        socket.write(whole.subarray(0, half));
        // The rest later: the frame spans socket reads, so it must be assembled.
        setTimeout(() => socket.write(whole.subarray(half)), 20);
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

describe('FrameReader with copyFrames', () => {
  it('copies every frame out of the chunks, which may be overwritten right after', () => {
    const pool = new FramePool(1 << 20);
    const r = new FrameReader({ pool, copyFrames: true });
    const frame = (fill: number, n: number) => {
      const b = Buffer.alloc(4 + n, fill);
      b.writeInt32BE(n, 0);
      return b;
    };
    // Two whole frames and the start of a third in one chunk, then the rest split at odd places,
    // all through one reused chunk buffer.
    const stream = Buffer.concat([frame(1, 10), frame(2, 0), frame(3, 5000), frame(4, 3)]);
    const reused = Buffer.alloc(777);
    const out: Buffer[] = [];
    for (let at = 0; at < stream.length; at += reused.length) {
      const n = stream.copy(reused, 0, at, Math.min(stream.length, at + reused.length));
      out.push(...r.push(reused.subarray(0, n)));
      reused.fill(0xee);
    }
    assert.deepEqual(
      out.map((f) => [f.length, f.every((b) => b === f[0])]),
      [
        [10, true],
        [0, true],
        [5000, true],
        [3, true],
      ],
    );
    assert.deepEqual(
      out.filter((f) => f.length > 0).map((f) => f[0]),
      [1, 3, 4],
    );
    assert.equal(r.bufferedBytes, 0);
  });
});

describe('ClientConnection with a frame pool', () => {
  const cleanups: (() => void)[] = [];
  after(() => {
    for (const c of cleanups) c();
  });

  for (const readBufferBytes of [undefined, 4096, 2 * RECORDS_BYTES]) {
    it(`assembles responses in pooled memory, reused once released (read buffer ${readBufferBytes ?? "Node's"})`, async () => {
      const srv = await fetchServer();
      cleanups.push(() => srv.close());
      const pool = new FramePool(16 * RECORDS_BYTES);
      const conn = await ClientConnection.connect('127.0.0.1', srv.port, {
        clientId: 'pool',
        framePool: pool,
        readBufferBytes,
      });
      cleanups.push(() => conn.close());
      const fetch = async () => {
        const r = await conn.send(1, 12, FetchRequestCodec, defaultFetchRequest(), FetchResponseCodec);
        const records = r.responses[0]!.partitions[0]!.records!;
        assert.equal(records.length, RECORDS_BYTES);
        return records;
      };
      const first = await fetch();
      assert.ok(first.every((b) => b === 1));
      // Not released: the next response cannot use that memory.
      const second = await fetch();
      assert.notEqual(second.buffer, first.buffer);
      assert.ok(first.every((b) => b === 1) && second.every((b) => b === 2));
      assert.equal(pool.idleBytes, 0);
      pool.release(second);
      assert.ok(pool.idleBytes >= RECORDS_BYTES);
      await sleep(1);
      const third = await fetch();
      assert.equal(third.buffer, second.buffer, 'the released buffer is reused');
      assert.ok(
        third.every((b) => b === 3),
        'with the new response bytes',
      );
      assert.equal(pool.idleBytes, 0);
      // Released twice (two partitions of one frame): the second is ignored, the buffer pooled once.
      pool.release(third);
      pool.release(third);
      assert.equal(pool.idleBytes, third.buffer.byteLength);
    });
  }
});
