import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DEFAULT_MAX_FRAME_BYTES, FramePool, FrameReader, frame } from '../../src/protocol/framing.js';
import { ProtocolError } from '../../src/protocol/protocol-error.js';

function sizePrefix(size: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(size, 0);
  return b;
}

function encode(payloads: readonly Uint8Array[]): Buffer {
  return Buffer.concat(payloads.flatMap((p) => frame([Buffer.from(p)])));
}

/** Cuts `bytes` into consecutive chunks whose sizes cycle through `sizes`. */
function split(bytes: Buffer, sizes: readonly number[]): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const n = sizes[i % sizes.length]!;
    chunks.push(bytes.subarray(at, at + n));
    at += n;
  }
  return chunks;
}

function readAll(reader: FrameReader, chunks: readonly Buffer[]): Buffer[] {
  return chunks.flatMap((c) => reader.push(c));
}

const payloads = fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 20 });

describe('FrameReader', () => {
  it('returns the same frames for any chunking of the stream', () => {
    fc.assert(
      fc.property(payloads, fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1 }), (ps, sizes) => {
        const reader = new FrameReader();
        const frames = readAll(reader, split(encode(ps), sizes));
        assert.deepEqual(
          frames.map((f) => [...f]),
          ps.map((p) => [...p]),
        );
        assert.equal(reader.bufferedBytes, 0);
      }),
      { numRuns: 300 },
    );
  });

  it('reassembles frames fed one byte at a time', () => {
    fc.assert(
      fc.property(payloads, (ps) => {
        const frames = readAll(new FrameReader(), split(encode(ps), [1]));
        assert.deepEqual(
          frames.map((f) => [...f]),
          ps.map((p) => [...p]),
        );
      }),
      { numRuns: 100 },
    );
  });

  it('returns views, not copies, for frames inside one chunk', () => {
    const chunk = encode([Buffer.from('abc'), Buffer.from('defgh'), Buffer.alloc(0)]);
    const frames = new FrameReader().push(chunk);
    assert.deepEqual(
      frames.map((f) => f.toString()),
      ['abc', 'defgh', ''],
    );
    for (const f of frames) assert.equal(f.buffer, chunk.buffer);
  });

  it('copies a frame spanning chunks once, into its own buffer', () => {
    const bytes = encode([Buffer.from('hello world')]);
    const reader = new FrameReader();
    assert.deepEqual(reader.push(bytes.subarray(0, 2)), []);
    assert.deepEqual(reader.push(bytes.subarray(2, 9)), []);
    assert.equal(reader.bufferedBytes, 5);
    const [f] = reader.push(bytes.subarray(9));
    // A copy, not a view: clearing the chunks leaves the frame intact.
    bytes.fill(0);
    assert.equal(f?.toString(), 'hello world');
    assert.equal(reader.bufferedBytes, 0);
  });

  it('accepts zero-length frames, as Kafka NetworkReceive does', () => {
    const reader = new FrameReader();
    assert.deepEqual(reader.push(sizePrefix(0)), [Buffer.alloc(0)]);
    assert.deepEqual(reader.push(Buffer.concat([sizePrefix(0), sizePrefix(0)])), [
      Buffer.alloc(0),
      Buffer.alloc(0),
    ]);
    assert.deepEqual(reader.push(Buffer.alloc(0)), []);
    assert.equal(reader.bufferedBytes, 0);
  });

  it('accepts a frame of exactly the limit', () => {
    const reader = new FrameReader({ maxFrameBytes: 5 });
    assert.deepEqual(reader.push(encode([Buffer.from('12345')])), [Buffer.from('12345')]);
  });

  it('rejects an oversized length before reading its payload, naming size and limit', () => {
    for (const size of [200 * 1024 * 1024, 0x7fffffff]) {
      const reader = new FrameReader();
      assert.throws(
        () => reader.push(sizePrefix(size)),
        (e: unknown) =>
          e instanceof ProtocolError &&
          e.message.includes(String(size)) &&
          e.message.includes(String(DEFAULT_MAX_FRAME_BYTES)),
      );
      assert.equal(reader.failed, true);
      assert.equal(reader.bufferedBytes, 0);
    }
  });

  it('rejects a length one above a configured limit, even when the prefix is split', () => {
    const reader = new FrameReader({ maxFrameBytes: 1000 });
    const prefix = sizePrefix(1001);
    for (let i = 0; i < 3; i++) assert.deepEqual(reader.push(prefix.subarray(i, i + 1)), []);
    assert.throws(() => reader.push(prefix.subarray(3)), /frame size 1001 exceeds the limit of 1000 bytes/);
  });

  it('rejects a negative length, naming size and limit', () => {
    const reader = new FrameReader();
    assert.throws(
      () => reader.push(Buffer.concat([sizePrefix(-1), Buffer.alloc(8)])),
      (e: unknown) => e instanceof ProtocolError && /-1/.test(e.message) && /104857600/.test(e.message),
    );
  });

  it('stays failed after an error', () => {
    const reader = new FrameReader();
    assert.throws(() => reader.push(sizePrefix(-5)), ProtocolError);
    assert.throws(() => reader.push(encode([Buffer.from('ok')])), /-5/);
  });

  it('reserves no memory from an announced length, only from bytes received', () => {
    // With the limit at the int32 maximum, a 2 GiB announcement is legal; it must not allocate.
    const reader = new FrameReader({ maxFrameBytes: 0x7fffffff });
    const before = process.memoryUsage().arrayBuffers;
    assert.deepEqual(reader.push(Buffer.concat([sizePrefix(0x7fffffff), Buffer.from('x')])), []);
    const grownBytes = process.memoryUsage().arrayBuffers - before;
    assert.ok(grownBytes < 16 * 1024 * 1024, `arrayBuffers grew by ${grownBytes} bytes`);
    assert.equal(reader.bufferedBytes, 1);
  });

  it("copyFrames with reserve 'received': frames survive the reuse of the read buffer, for any chunking", () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 200_000 }), { maxLength: 6 }),
        fc.array(fc.integer({ min: 1, max: 150_000 }), { minLength: 1 }),
        (ps, sizes) => {
          const pool = new FramePool(1 << 22);
          const reader = new FrameReader({ pool, copyFrames: true, reserve: 'received' });
          // Every chunk goes through one scratch buffer, overwritten after each push, as a socket's
          // shared read buffer is.
          const scratch = Buffer.alloc(150_000);
          const frames: Buffer[] = [];
          for (const chunk of split(encode(ps), sizes)) {
            chunk.copy(scratch);
            frames.push(...reader.push(scratch.subarray(0, chunk.length)));
            scratch.fill(0xee);
          }
          assert.deepEqual(
            frames.map((f) => Buffer.from(f).toString('hex')),
            ps.map((p) => Buffer.from(p).toString('hex')),
          );
        },
      ),
      { numRuns: 40 },
    );
  });

  it("reserve 'received' grows with the bytes received, never to an announced 2 GiB", () => {
    const pool = new FramePool(1 << 20);
    const reader = new FrameReader({
      maxFrameBytes: 0x7fffffff,
      pool,
      copyFrames: true,
      reserve: 'received',
    });
    const before = process.memoryUsage().arrayBuffers;
    reader.push(Buffer.concat([sizePrefix(0x7fffffff), Buffer.alloc(100_000, 1)]));
    for (let i = 0; i < 10; i++) reader.push(Buffer.alloc(100_000, 2));
    const grown = process.memoryUsage().arrayBuffers - before;
    // 1.1 MB received: the frame's buffer is at most ~2.2 MB (doubling from 256 KiB leaves
    // 256 KiB + 512 KiB + 1 MiB behind for the collector) beside the 1.1 MB of chunks.
    assert.ok(grown < 8 * 1024 * 1024, `arrayBuffers grew by ${grown} bytes`);
    assert.equal(reader.bufferedBytes, 1_100_000);
  });

  it('validates its limit', () => {
    assert.throws(() => new FrameReader({ maxFrameBytes: -1 }), RangeError);
    assert.throws(() => new FrameReader({ maxFrameBytes: 2 ** 31 }), RangeError);
    assert.throws(() => new FrameReader({ maxFrameBytes: 1.5 }), RangeError);
    assert.equal(new FrameReader().maxFrameBytes, 104_857_600);
  });
});

describe('frame', () => {
  it('prefixes the total size without copying the chunks', () => {
    const a = Buffer.from('ab');
    const b = Buffer.from('cde');
    const out = frame([a, b]);
    assert.equal(out.length, 3);
    assert.deepEqual(out[0], sizePrefix(5));
    assert.equal(out[1], a);
    assert.equal(out[2], b);
    assert.deepEqual(frame([]), [sizePrefix(0)]);
  });

  it('round-trips through FrameReader', () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.uint8Array({ maxLength: 50 }), { maxLength: 5 })), (frames) => {
        const bytes = Buffer.concat(frames.flatMap((chunks) => frame(chunks.map((c) => Buffer.from(c)))));
        const out = new FrameReader().push(bytes);
        assert.deepEqual(
          out.map((f) => [...f]),
          frames.map((chunks) => [...Buffer.concat(chunks)]),
        );
      }),
    );
  });
});

describe('FramePool', () => {
  it('gives the same frames for any chunking when frames are released as they are read', () => {
    fc.assert(
      fc.property(payloads, fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1 }), (ps, sizes) => {
        const pool = new FramePool(1 << 20);
        const reader = new FrameReader({ pool });
        const seen: number[][] = [];
        for (const chunk of split(encode(ps), sizes)) {
          for (const f of reader.push(chunk)) {
            seen.push([...f]);
            pool.release(f);
          }
        }
        assert.deepEqual(
          seen,
          ps.map((p) => [...p]),
        );
      }),
    );
  });

  it('reuses a released buffer for the next spanning frame, never a lent one', () => {
    const pool = new FramePool(1 << 20);
    const reader = new FrameReader({ pool });
    const big = (fill: number) => frame([Buffer.alloc(1000, fill)])[0]!;
    const stream = (fill: number) => Buffer.concat([big(fill), Buffer.alloc(1000, fill)]);
    const [a] = readAll(reader, split(stream(1), [300]));
    const [b] = readAll(reader, split(stream(2), [300]));
    assert.notEqual(a!.buffer, b!.buffer, 'a frame still lent is not reused');
    assert.ok(a!.every((x) => x === 1));
    pool.release(a!);
    assert.equal(pool.idleBytes, a!.buffer.byteLength);
    const [c] = readAll(reader, split(stream(3), [300]));
    assert.equal(c!.buffer, a!.buffer, 'the released buffer is reused');
    assert.ok(c!.every((x) => x === 3));
    assert.ok(b!.every((x) => x === 2));
    assert.equal(pool.idleBytes, 0);
    // Releasing twice, or releasing a frame the pool never lent, keeps nothing.
    pool.release(c!);
    pool.release(c!);
    pool.release(Buffer.alloc(10));
    assert.equal(pool.idleBytes, c!.buffer.byteLength);
  });

  it('keeps at most maxBytes of idle buffers', () => {
    const pool = new FramePool(100 * 1024);
    const frames = [pool.take(50 * 1024), pool.take(50 * 1024)];
    for (const f of frames) pool.release(f);
    assert.equal(pool.idleBytes, 64 * 1024);
    // One buffer larger than the whole pool is not kept, and does not push the others out.
    pool.release(pool.take(200 * 1024));
    assert.equal(pool.idleBytes, 64 * 1024);
  });

  it('over maxBytes it drops the smallest idle buffers, so a large frame still finds a large one', () => {
    const pool = new FramePool(1024 * 1024 + 256 * 1024);
    const small = [64, 128, 256].map((k) => pool.take(k * 1024));
    const large = pool.take(1024 * 1024);
    for (const b of small) pool.release(b);
    pool.release(large);
    // 64 + 128 + 256 KiB + 1 MiB is over 1.25 MiB: the 64 and 128 KiB buffers went.
    assert.equal(pool.idleBytes, 1024 * 1024 + 256 * 1024);
    assert.equal(pool.takeSpare(1000 * 1000)?.buffer, large.buffer);
    assert.equal(pool.takeSpare(1000 * 1000), null, 'nothing idle is that large any more');
    assert.equal(pool.takeSpare(200 * 1024)?.length, 256 * 1024);
    assert.equal(pool.idleBytes, 0);
  });

  it("reserve 'received' takes an idle buffer that holds the whole frame at once (one copy, no regrowth)", () => {
    const pool = new FramePool(4 * 1024 * 1024);
    const reader = new FrameReader({ pool, copyFrames: true, reserve: 'received' });
    const payload = Buffer.alloc(1_000_000, 7);
    const stream = Buffer.concat([sizePrefix(payload.length), payload]);
    const [first] = readAll(reader, split(stream, [65_536]));
    assert.ok(first!.equals(payload));
    const firstStore = first!.buffer;
    pool.release(first!);
    // The regrowth of the first frame left smaller buffers idle beside the 1 MiB one.
    assert.ok(pool.idleBytes > 1024 * 1024);
    const [second] = readAll(reader, split(stream, [65_536]));
    assert.ok(second!.equals(payload));
    assert.equal(second!.buffer, firstStore, 'the idle 1 MiB buffer, taken at the first chunk');
    // A frame larger than anything idle still grows from a small reservation.
    const huge = Buffer.concat([sizePrefix(5_000_000), Buffer.alloc(65_536)]);
    const before = pool.idleBytes;
    assert.deepEqual(reader.push(huge), []);
    assert.ok(pool.idleBytes < before, 'a small idle buffer was taken for the start of the frame');
    assert.ok(pool.idleBytes > 0);
  });
});
