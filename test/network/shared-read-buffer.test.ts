import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as net from 'node:net';
import { describe, it } from 'node:test';
import { readIntoSharedBuffer } from '../../src/network/shared-read-buffer.js';

/** A loopback server whose first accepted socket reads through readIntoSharedBuffer. */
async function pair(): Promise<{
  client: net.Socket;
  server: net.Socket;
  shared: boolean;
  chunks: Buffer[];
  close(): void;
}> {
  const chunks: Buffer[] = [];
  let shared = false;
  const srv = net.createServer();
  const accepted = new Promise<net.Socket>((resolve) =>
    srv.once('connection', (s) => {
      // Copied out at once: the next read of any socket overwrites the shared buffer.
      shared = readIntoSharedBuffer(s, (chunk) => chunks.push(Buffer.from(chunk)));
      resolve(s);
    }),
  );
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  const client = net.connect(port, '127.0.0.1');
  await new Promise<void>((r) => client.once('connect', r));
  const server = await accepted;
  return {
    client,
    server,
    shared,
    chunks,
    close: () => {
      client.destroy();
      server.destroy();
      srv.close();
    },
  };
}

const until = async (cond: () => boolean, what: string) => {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 2));
  assert.ok(cond(), `timed out waiting for ${what}`);
};

describe('reads of accepted sockets into one shared buffer', () => {
  it('is available on this Node, delivers every byte in order, in reads larger than 64 KiB', async () => {
    const p = await pair();
    try {
      assert.equal(p.shared, true, "this Node's sockets lack the onread fields: produce would be ~2x dearer");
      const data = randomBytes(4 * 1024 * 1024);
      p.client.write(data);
      const total = () => p.chunks.reduce((n, c) => n + c.length, 0);
      await until(() => total() === data.length, 'all bytes');
      assert.ok(Buffer.concat(p.chunks).equals(data));
      assert.ok(
        p.chunks.some((c) => c.length > 64 * 1024),
        `largest read ${Math.max(...p.chunks.map((c) => c.length))} bytes`,
      );
    } finally {
      p.close();
    }
  });

  it('pause() stops the reads, resume() goes on; the peer closing is seen as end', async () => {
    const p = await pair();
    try {
      p.server.pause();
      p.client.write(Buffer.alloc(1000, 1));
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(p.chunks.length, 0, 'nothing read while paused');
      p.server.resume();
      await until(() => p.chunks.length > 0, 'the bytes after resume');
      const ended = new Promise<void>((r) => p.server.once('end', r));
      p.client.end();
      await ended;
    } finally {
      p.close();
    }
  });
});
