import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import * as snappy from 'snappy';
import zstd from 'zstd-napi/binding.js';
import { ProtocolError } from '../../../src/protocol/protocol-error.js';
import {
  CompressionCodec,
  type CompressionCodecId,
  compress,
  decompress,
} from '../../../src/protocol/records/compression.js';

const CODECS: CompressionCodecId[] = [0, 1, 2, 3, 4];

/** Bytes that compress well but are not trivially constant. */
function textLike(n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = 97 + ((i * 7) % 13);
  return b;
}

/** A zstd frame written by a streaming compressor, so its header declares no content size (as Java's). */
function zstdStreamedWithoutSize(data: Buffer): Buffer {
  const cctx = new zstd.CCtx();
  const out = Buffer.alloc(zstd.compressBound(data.length) + 1024);
  let produced = 0;
  const [, p1] = cctx.compressStream2(out, data, zstd.EndDirective.continue);
  produced += p1;
  for (;;) {
    const [left, p] = cctx.compressStream2(out.subarray(produced), Buffer.alloc(0), zstd.EndDirective.end);
    produced += p;
    if (left === 0) break;
  }
  return out.subarray(0, produced);
}

describe('compression codecs', () => {
  it('round-trips random data with every codec', () => {
    fc.assert(
      fc.property(fc.constantFrom(...CODECS), fc.uint8Array({ maxLength: 100_000 }), (codec, data) => {
        const input = Buffer.from(data);
        const copy = Buffer.from(input);
        assert.deepEqual(decompress(codec, compress(codec, input)), input);
        assert.deepEqual(input, copy, 'compress must not modify its input');
      }),
      { numRuns: 60 },
    );
  });

  it('round-trips empty input and multi-block input', () => {
    for (const codec of CODECS) {
      assert.equal(decompress(codec, compress(codec, Buffer.alloc(0))).length, 0);
      const big = textLike(300_000); // several xerial (32 KiB), lz4 and zstd blocks
      assert.deepEqual(decompress(codec, compress(codec, big)), big);
    }
  });

  it('writes xerial-framed snappy: magic, version 1, compatible 1, length-prefixed blocks', () => {
    const data = textLike(70_000);
    const framed = compress(CompressionCodec.snappy, data);
    assert.deepEqual(framed.subarray(0, 8), Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]));
    assert.equal(framed.readInt32BE(8), 1);
    assert.equal(framed.readInt32BE(12), 1);
    let at = 16;
    const blocks: Buffer[] = [];
    while (at < framed.length) {
      const len = framed.readInt32BE(at);
      blocks.push(snappy.uncompressSync(framed.subarray(at + 4, at + 4 + len)) as Buffer);
      at += 4 + len;
    }
    assert.equal(blocks.length, 3);
    assert.deepEqual(Buffer.concat(blocks), data);
  });

  it('reads raw (unframed) snappy, as librdkafka may send', () => {
    const data = textLike(5000);
    assert.deepEqual(decompress(CompressionCodec.snappy, snappy.compressSync(data)), data);
  });

  it('reads a zstd frame that declares no content size', () => {
    const data = textLike(500_000);
    const frame = zstdStreamedWithoutSize(data);
    assert.equal(zstd.getFrameContentSize(frame), null);
    assert.deepEqual(decompress(CompressionCodec.zstd, frame), data);
    assert.throws(() => decompress(CompressionCodec.zstd, frame, 100_000), ProtocolError);
  });

  it('reads concatenated gzip members, lz4 frames and zstd frames', () => {
    const a = textLike(1000);
    const b = Buffer.from('tail');
    assert.deepEqual(decompress(1, Buffer.concat([gzipSync(a), gzipSync(b)])), Buffer.concat([a, b]));
    assert.deepEqual(decompress(3, Buffer.concat([compress(3, a), compress(3, b)])), Buffer.concat([a, b]));
    assert.deepEqual(decompress(4, Buffer.concat([compress(4, a), compress(4, b)])), Buffer.concat([a, b]));
  });

  it('refuses output above the limit before inflating a bomb', () => {
    const bomb = Buffer.alloc(16 * 1024 * 1024); // 16 MiB of zeros compresses to a few KiB
    const limit = 1024 * 1024;
    for (const codec of [1, 2, 3, 4] as const) {
      const compressed = compress(codec, bomb);
      assert.ok(compressed.length < bomb.length / 10);
      assert.throws(() => decompress(codec, compressed, limit), ProtocolError, `codec ${codec}`);
      assert.equal(decompress(codec, compressed, bomb.length).length, bomb.length);
    }
    const rawSnappy = snappy.compressSync(bomb);
    assert.throws(() => decompress(CompressionCodec.snappy, rawSnappy, limit), ProtocolError);
    assert.throws(() => decompress(CompressionCodec.none, bomb, limit), ProtocolError);
  });

  it('turns every decoder failure into a ProtocolError', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 7 }), fc.uint8Array({ maxLength: 200 }), (codec, data) => {
        try {
          decompress(codec, Buffer.from(data), 1024 * 1024);
        } catch (e) {
          assert.ok(e instanceof ProtocolError, `codec ${codec}: ${String(e)}`);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('survives mutated valid streams', () => {
    const data = textLike(4000);
    fc.assert(
      fc.property(
        fc.constantFrom(1, 2, 3, 4),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        fc.nat(),
        (codec, flips, cut) => {
          const c = Buffer.from(compress(codec as CompressionCodecId, data));
          for (const [at, v] of flips) c[at % c.length] = v;
          const input = cut % 3 === 0 ? c.subarray(0, cut % c.length) : c;
          try {
            decompress(codec, input, 64 * 1024);
          } catch (e) {
            assert.ok(e instanceof ProtocolError, `codec ${codec}: ${String(e)}`);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});
