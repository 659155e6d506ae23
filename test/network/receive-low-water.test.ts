import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, describe, it } from 'node:test';
import { ReceiveLowWater } from '../../src/network/receive-low-water.js';
import { FrameReader } from '../../src/protocol/framing.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * SO_RCVLOWAT on a reader of large frames (a follower's fetches): while the rest of a frame is
 * still coming the reader is woken once it is all there, not for every piece — and never left
 * waiting: the frame completes, and a connection that ends wakes it.
 */
describe('ReceiveLowWater', () => {
  const servers: net.Server[] = [];
  after(() => {
    for (const s of servers) s.close();
  });

  /** A server that sends one `frameBytes` frame in `pieces` pieces, `gapMs` apart, then maybe ends. */
  async function sender(frameBytes: number, pieces: number, gapMs: number, endAfter?: number) {
    const payload = Buffer.alloc(frameBytes, 7);
    const bytes = Buffer.concat([Buffer.from([0, 0, 0, 0]), payload]);
    bytes.writeInt32BE(frameBytes, 0);
    const server = net.createServer(async (s) => {
      s.setNoDelay(true);
      const piece = Math.ceil(bytes.length / pieces);
      for (let at = 0; at < (endAfter ?? bytes.length); at += piece) {
        s.write(bytes.subarray(at, Math.min(at + piece, endAfter ?? bytes.length)));
        await sleep(gapMs);
      }
      if (endAfter !== undefined) s.end();
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return (server.address() as net.AddressInfo).port;
  }

  /** Reads on a 1 MiB onread buffer; returns the reads it took and the frames it got. */
  async function receive(port: number, lowWater: boolean) {
    let reads = 0;
    let ended = false;
    const frames: Buffer[] = [];
    const reader = new FrameReader({ copyFrames: true });
    let water: ReceiveLowWater | null = null;
    const socket = net.connect({
      host: '127.0.0.1',
      port,
      onread: {
        buffer: Buffer.allocUnsafe(1 << 20),
        callback: (n: number, buf: Uint8Array): boolean => {
          reads++;
          frames.push(...reader.push(Buffer.from(buf.buffer, buf.byteOffset, n)));
          water?.update(reader.missingBytes);
          return true;
        },
      },
    });
    socket.on('end', () => {
      ended = true;
    });
    await new Promise((r) => socket.once('connect', r));
    if (lowWater) {
      water = ReceiveLowWater.of(socket, 1 << 20);
      assert.ok(water !== null, 'SO_RCVLOWAT can be set here');
    }
    const until = Date.now() + 10_000;
    while (frames.length === 0 && !ended && Date.now() < until) await sleep(5);
    socket.destroy();
    return { reads, frames, ended };
  }

  it('wakes a reader once for the rest of a large frame that arrives in pieces', async () => {
    const plain = await receive(await sender(512 * 1024, 16, 5), false);
    const waiting = await receive(await sender(512 * 1024, 16, 5), true);
    assert.equal(plain.frames.length, 1);
    assert.equal(waiting.frames.length, 1);
    assert.equal(waiting.frames[0]!.length, 512 * 1024);
    assert.ok(waiting.frames[0]!.every((b) => b === 7));
    // Without it: a read per piece (16); with it: the first piece, then the rest at once.
    assert.ok(plain.reads >= 8, `reads without the low-water mark: ${plain.reads}`);
    assert.ok(waiting.reads <= 3, `reads with it: ${waiting.reads}`);
  });

  it('does not leave the reader waiting when the connection ends mid-frame', async () => {
    const r = await receive(await sender(512 * 1024, 16, 5, 100 * 1024), true);
    assert.ok(r.ended, 'the end of the connection was seen');
    assert.equal(r.frames.length, 0);
  });
});
