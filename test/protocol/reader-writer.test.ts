import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ProtocolError } from '../../src/protocol/protocol-error.js';
import { Reader } from '../../src/protocol/reader.js';
import { Writer } from '../../src/protocol/writer.js';

const hex = (w: Writer) => w.toBuffer().toString('hex');

describe('varints match Kafka’s ByteUtils encodings', () => {
  it('unsigned varints', () => {
    assert.equal(hex(new Writer().uvarint(0)), '00');
    assert.equal(hex(new Writer().uvarint(127)), '7f');
    assert.equal(hex(new Writer().uvarint(128)), '8001');
    assert.equal(hex(new Writer().uvarint(300)), 'ac02');
    assert.equal(hex(new Writer().uvarint(2 ** 32 - 1)), 'ffffffff0f');
    assert.throws(() => new Writer().uvarint(-1), RangeError);
    assert.throws(() => new Writer().uvarint(2 ** 32), RangeError);
  });
  it('zigzag varints and varlongs', () => {
    assert.equal(hex(new Writer().varint(0)), '00');
    assert.equal(hex(new Writer().varint(-1)), '01');
    assert.equal(hex(new Writer().varint(1)), '02');
    assert.equal(hex(new Writer().varint(63)), '7e');
    assert.equal(hex(new Writer().varint(-64)), '7f');
    assert.equal(hex(new Writer().varint(64)), '8001');
    assert.equal(hex(new Writer().varint(-(2 ** 31))), 'ffffffff0f');
    assert.equal(hex(new Writer().varlong(-1n)), '01');
    assert.equal(hex(new Writer().varlong(-(2n ** 63n))), 'ffffffffffffffffff01');
    assert.equal(new Reader(Buffer.from('ffffffffffffffffff01', 'hex')).varlong(), -(2n ** 63n));
    assert.equal(new Reader(Buffer.from('feffffffffffffffff01', 'hex')).varlong(), 2n ** 63n - 1n);
  });
  it('refuses over-long varints', () => {
    assert.throws(() => new Reader(Buffer.from('ffffffffff01', 'hex')).uvarint(), ProtocolError);
    assert.throws(() => new Reader(Buffer.from('ffffffffff0f', 'hex')).uvarint(), ProtocolError);
    assert.throws(() => new Reader(Buffer.from('ffffffffffffffffffff01', 'hex')).varlong(), ProtocolError);
    assert.throws(() => new Reader(Buffer.from('80', 'hex')).uvarint(), ProtocolError);
  });
});

type Op =
  | { k: 'int8' | 'int16' | 'int32' | 'uint16' | 'uint32' | 'uvarint' | 'varint' | 'float64'; v: number }
  | { k: 'int64' | 'varlong'; v: bigint }
  | { k: 'bool'; v: boolean }
  | { k: 'string' | 'compactString'; v: string }
  | { k: 'nullableString' | 'compactNullableString'; v: string | null }
  | { k: 'bytes' | 'compactBytes'; v: Buffer }
  | { k: 'nullableBytes' | 'compactNullableBytes'; v: Buffer | null };

const bytesArb = fc.uint8Array({ maxLength: 6000 }).map((b) => Buffer.from(b));
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.integer({ min: -128, max: 127 }).map((v) => ({ k: 'int8' as const, v })),
  fc.integer({ min: -32768, max: 32767 }).map((v) => ({ k: 'int16' as const, v })),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map((v) => ({ k: 'int32' as const, v })),
  fc.integer({ min: 0, max: 65535 }).map((v) => ({ k: 'uint16' as const, v })),
  fc.integer({ min: 0, max: 2 ** 32 - 1 }).map((v) => ({ k: 'uint32' as const, v })),
  fc.integer({ min: 0, max: 2 ** 32 - 1 }).map((v) => ({ k: 'uvarint' as const, v })),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map((v) => ({ k: 'varint' as const, v })),
  fc.double().map((v) => ({ k: 'float64' as const, v })),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((v) => ({ k: 'int64' as const, v })),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((v) => ({ k: 'varlong' as const, v })),
  fc.boolean().map((v) => ({ k: 'bool' as const, v })),
  fc.string({ unit: 'grapheme', maxLength: 40 }).map((v) => ({ k: 'string' as const, v })),
  fc.string({ unit: 'grapheme', maxLength: 40 }).map((v) => ({ k: 'compactString' as const, v })),
  fc.option(fc.string(), { nil: null }).map((v) => ({ k: 'nullableString' as const, v })),
  fc.option(fc.string(), { nil: null }).map((v) => ({ k: 'compactNullableString' as const, v })),
  bytesArb.map((v) => ({ k: 'bytes' as const, v })),
  bytesArb.map((v) => ({ k: 'compactBytes' as const, v })),
  fc.option(bytesArb, { nil: null }).map((v) => ({ k: 'nullableBytes' as const, v })),
  fc.option(bytesArb, { nil: null }).map((v) => ({ k: 'compactNullableBytes' as const, v })),
);

describe('Writer and Reader', () => {
  it('read back any sequence of writes, across scratch-buffer growth', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 60 }), fc.integer({ min: 1, max: 64 }), (ops, initial) => {
        const w = new Writer(initial);
        for (const op of ops) (w[op.k] as (v: unknown) => Writer)(op.v);
        const buf = w.toBuffer();
        assert.equal(buf.length, w.length);
        const r = new Reader(buf);
        for (const op of ops) assert.deepStrictEqual((r[op.k] as () => unknown).call(r), op.v);
        assert.equal(r.remaining, 0);
      }),
      { numRuns: 300, seed: 7 },
    );
  });

  it('keeps large byte arrays as their own chunk instead of copying them', () => {
    const big = Buffer.alloc(64 * 1024, 7);
    const w = new Writer().int32(1).bytes(big).int16(2);
    assert.ok(w.chunksView().includes(big));
    assert.equal(w.length, 4 + 4 + big.length + 2);
  });

  it('refuses lengths larger than what remains before allocating', () => {
    const frame = Buffer.alloc(20);
    frame.writeInt32BE(0x7fffffff, 0);
    assert.throws(() => new Reader(frame).arrayLength(), /array length 2147483647 exceeds the 16 bytes left/);
    assert.throws(() => new Reader(frame).bytes(), ProtocolError);
    frame.writeInt16BE(0x7fff, 0);
    assert.throws(() => new Reader(frame).string(), ProtocolError);
    assert.throws(() => new Reader(Buffer.from('ffffffff07', 'hex')).compactArrayLength(), ProtocolError);
    assert.throws(() => new Reader(Buffer.from('fffffffe', 'hex')).arrayLength(), /array length -2/);
  });

  it('bounds a tagged field to its declared size and refuses tags out of order', () => {
    const w = new Writer().uvarint(2).uvarint(0).uvarint(1).int8(5).uvarint(3).uvarint(2).int16(9);
    const seen: [number, number][] = [];
    new Reader(w.toBuffer()).taggedFields((tag, f) => seen.push([tag, f.remaining]));
    assert.deepStrictEqual(seen, [
      [0, 1],
      [3, 2],
    ]);
    const bad = new Writer().uvarint(2).uvarint(3).uvarint(0).uvarint(1).uvarint(0).toBuffer();
    assert.throws(() => new Reader(bad).taggedFields(), /out of order/);
  });
});
