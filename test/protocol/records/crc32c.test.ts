import assert from 'node:assert/strict';
import { randomFillSync } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  crc32c,
  crc32cImplementation,
  portableCrc32c,
  streamsCrc32c,
} from '../../../src/protocol/records/crc32c.js';
import { referenceCrc32c } from './helpers.js';

describe('crc32c', () => {
  it('uses the native three-stream addon (npm ci builds it; x86-64 with SSE4.2)', () => {
    // The storage append target (issue 3) depends on it; a silent fallback would only show in the bench.
    if (process.arch !== 'x64' || process.env.SKIFF_PORTABLE_CRC === '1') return;
    assert.match(crc32cImplementation, /^native-/);
  });

  it('gives the check value of "123456789" (0xe3069283)', () => {
    assert.equal(crc32c(Buffer.from('123456789'), 0, 9), 0xe3069283);
    assert.equal(crc32c(Buffer.alloc(0), 0, 0), 0);
  });

  it('equals the bitwise reference on every range of a buffer, unaligned, short and long', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 3000 }), fc.nat(), fc.nat(), (bytes, a, b) => {
        const start = bytes.length === 0 ? 0 : a % (bytes.length + 1);
        const end = start + (b % (bytes.length - start + 1));
        const expected = referenceCrc32c(bytes.subarray(start, end));
        assert.equal(crc32c(bytes, start, end), expected);
        assert.equal(portableCrc32c(bytes, start, end), expected);
      }),
      { numRuns: 500 },
    );
  });

  it('equals @node-rs/crc32 across the block sizes of both native paths and on Buffer pool slices', () => {
    const big = randomFillSync(Buffer.allocUnsafe(200_100));
    // Block sizes of both paths: 256-byte folds (AVX-512), 768 B and 24 KiB stream blocks.
    const lengths = [0, 1, 7, 8, 255, 256, 257, 319, 320, 511, 512, 513, 767, 768, 769, 1536 + 7];
    lengths.push(16_589, 24_575, 24_576, 24_577, 3 * 24_576 + 3 * 768 + 13, 199_990);
    for (const length of lengths) {
      for (const start of [0, 1, 3, 7, 8, 63]) {
        const expected = portableCrc32c(big, start, start + length);
        assert.equal(crc32c(big, start, start + length), expected, `length ${length} at ${start}`);
        if (streamsCrc32c) assert.equal(streamsCrc32c(big, start, start + length), expected);
      }
    }
    // Small Buffers share an 8 KiB pool: the view's byteOffset must be honoured.
    for (let i = 0; i < 50; i++) {
      const b = randomFillSync(Buffer.allocUnsafe(100 + i));
      assert.equal(crc32c(b, 0, b.length), referenceCrc32c(b));
    }
  });

  it('refuses ranges outside the buffer and non-byte arrays', () => {
    if (crc32cImplementation !== 'native-sse4.2') return;
    const b = Buffer.alloc(16);
    assert.throws(() => crc32c(b, 0, 17), RangeError);
    assert.throws(() => crc32c(b, 5, 4), RangeError);
    assert.throws(() => crc32c(b, -1, 4), RangeError);
    assert.throws(() => crc32c(new Uint16Array(4) as unknown as Uint8Array, 0, 2), TypeError);
  });
});
