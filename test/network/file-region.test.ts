import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { MemoryLogger } from '../../src/common/logger.js';
import { ManualScheduler } from '../../src/common/scheduler.js';
import type { RequestHandler } from '../../src/network/request-handler.js';
import { SocketServer } from '../../src/network/socket-server.js';
import { frame } from '../../src/protocol/framing.js';
import { fileRegion, fileRegionStats, zeroCopyAvailable } from '../../src/storage/file-region.js';
import { type FileHandle, NodeFileSystem } from '../../src/storage/fs.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Responses that carry file regions (src/storage/file-region.ts): the connection sends the file's
 * bytes in the placeholder's place — with sendfile while the socket takes them, through memory for
 * the rest — in order with the chunks around them; a region whose file was truncated after the
 * read closes the connection instead of sending other bytes.
 */
describe('file regions in responses', { skip: !zeroCopyAvailable() }, () => {
  const FILE_BYTES = 24 * 1024 * 1024;
  let dir: string;
  let handle: FileHandle;
  let contents: Buffer;
  const servers: SocketServer[] = [];

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-region-'));
    contents = randomBytes(FILE_BYTES);
    fs.writeFileSync(path.join(dir, 'data'), contents);
    handle = new NodeFileSystem().open(path.join(dir, 'data'), false);
  });
  after(async () => {
    for (const s of servers) await s.close();
    handle.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function serve(handler: RequestHandler) {
    const clock = new ManualClock();
    const logger = new MemoryLogger();
    const server = new SocketServer(
      {
        host: '127.0.0.1',
        port: 0,
        maxFrameBytes: 1024,
        maxQueuedRequestsPerConnection: 10,
        maxQueuedBytesPerConnection: 1 << 20,
        connectionsMaxIdleMs: 600_000,
        maxConnections: 10,
      },
      handler,
      clock,
      new ManualScheduler(clock),
      logger,
    );
    servers.push(server);
    return { port: (await server.listen()).port, logger };
  }

  /** Sends `requests` 4-byte requests and collects `expectBytes` of answers (or until closed). */
  async function exchange(port: number, requests: number, expectBytes: number, pauseMs = 0) {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    const received: Buffer[] = [];
    let bytes = 0;
    let closed = false;
    socket.on('close', () => {
      closed = true;
    });
    socket.on('error', () => {});
    if (pauseMs > 0) socket.pause();
    socket.on('data', (c: Buffer) => {
      received.push(c);
      bytes += c.length;
    });
    for (let i = 0; i < requests; i++) {
      const req = Buffer.alloc(4);
      req.writeUInt32BE(i);
      socket.write(Buffer.concat(frame([req])));
    }
    if (pauseMs > 0) {
      // The client does not read for a while: the socket buffers fill, sendfile stops short.
      await sleep(pauseMs);
      socket.resume();
    }
    const until = Date.now() + 20_000;
    while (bytes < expectBytes && !closed && Date.now() < until) await sleep(5);
    socket.destroy();
    return { data: Buffer.concat(received), closed };
  }

  it('sends regions between ordinary chunks, in request order, with sendfile and through memory', async () => {
    // Each request n gets: a 4-byte marker, the file from n MiB on (8 MiB of it), a 4-byte trailer.
    const region = 8 * 1024 * 1024;
    const { port } = await serve({
      async handle(f) {
        const n = f.readUInt32BE(0);
        const placeholder = fileRegion(handle, n << 20, region);
        assert.ok(placeholder !== null);
        const trailer = Buffer.from([0xee, 0xee, 0xee, n]);
        return frame([f.subarray(0, 4), placeholder, trailer]);
      },
    });
    const sentBefore = fileRegionStats.sentBytes;
    const copiedBefore = fileRegionStats.copiedBytes;
    const answerBytes = 4 + 4 + region + 4;
    const { data } = await exchange(port, 3, 3 * answerBytes, 300);
    assert.equal(data.length, 3 * answerBytes);
    for (let n = 0; n < 3; n++) {
      const a = data.subarray(n * answerBytes, (n + 1) * answerBytes);
      assert.equal(a.readUInt32BE(0), answerBytes - 4, 'size prefix');
      assert.equal(a.readUInt32BE(4), n, 'request marker');
      if (!a.subarray(8, 8 + region).equals(contents.subarray(n << 20, (n << 20) + region)))
        assert.fail(`answer ${n}: the region's bytes differ from the file's`);
      assert.deepEqual([...a.subarray(8 + region)], [0xee, 0xee, 0xee, n]);
    }
    // 24 MiB of regions to a client that did not read at first: some went with sendfile, the
    // rest (the socket buffers were full) through memory.
    assert.ok(fileRegionStats.sentBytes > sentBefore, 'some bytes went with sendfile');
    assert.ok(fileRegionStats.copiedBytes > copiedBefore, 'some bytes went through memory');
  });

  it('closes the connection, with one log line, when the file was truncated after the read', async () => {
    const scratch = path.join(dir, 'scratch');
    fs.writeFileSync(scratch, contents.subarray(0, 1 << 20));
    const h = new NodeFileSystem().open(scratch, false);
    try {
      const { port, logger } = await serve({
        async handle(f) {
          const placeholder = fileRegion(h, 0, 64 * 1024);
          assert.ok(placeholder !== null);
          h.truncate(1000); // a follower's truncation between the read and the write
          return frame([f.subarray(0, 4), placeholder]);
        },
      });
      const { data, closed } = await exchange(port, 1, 1);
      assert.ok(closed, 'the connection was closed');
      assert.equal(data.length, 0, 'no part of the answer was sent');
      const lines = logger.lines.filter((l) => l.includes('truncated or closed before they were sent'));
      assert.equal(lines.length, 1);
    } finally {
      h.close();
    }
  });
});
