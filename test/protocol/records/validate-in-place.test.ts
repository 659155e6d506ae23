import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  BATCH_LENGTH_OFFSET,
  type BatchInvalid,
  emptyBatchHeader,
  encodeBatch,
  isControl,
  RECORDS_COUNT_OFFSET,
  RECORDS_OFFSET,
  readBatchHeader,
  readBatchHeaderInto,
  recordsWellFormed,
  validateBatch,
  validateBatchDeep,
  validateBatchInPlace,
  viewOf,
  writeCrc,
  writeInt64,
} from '../../../src/protocol/records/index.js';
import { KAFKA_BATCH_VALUE_123, KAFKA_BATCH_WITH_HEADER } from './helpers.js';

/** The reference verdict: validateBatchDeep without decompression, as the leader asks for it. */
function deep(buf: Buffer, allowOffsetGaps = false) {
  return validateBatchDeep(buf, 0, buf.length, { decompress: false, allowOffsetGaps });
}

/** validateBatchInPlace and validateBatchDeep agree: same verdict, reason, size and header. */
function assertAgree(buf: Buffer, allowOffsetGaps = false): void {
  const header = emptyBatchHeader();
  const fast = validateBatchInPlace(buf, 0, buf.length, header, { allowOffsetGaps });
  const ref = deep(buf, allowOffsetGaps);
  if (ref.ok) {
    assert.equal(fast, ref.size, `in-place refused a batch deep accepts: ${JSON.stringify(fast)}`);
    assert.deepEqual(header, ref.header);
  } else {
    assert.notEqual(typeof fast, 'number', `in-place accepted a batch deep refuses (${ref.reason})`);
    assert.equal((fast as BatchInvalid).reason, ref.reason);
    assert.equal((fast as BatchInvalid).detail, ref.detail);
  }
  // The walk alone, where the deep check reached the records (shallow passed, uncompressed).
  const shallow = validateBatch(buf, 0);
  if (shallow.ok && (shallow.header.attributes & 7) === 0) {
    const walk = recordsWellFormed(
      buf,
      RECORDS_OFFSET,
      shallow.size,
      shallow.header.recordsCount,
      shallow.header.lastOffsetDelta,
      allowOffsetGaps,
      isControl(shallow.header.attributes),
    );
    assert.equal(
      walk,
      ref.ok,
      `walk says ${walk}, deep says ${ref.ok ? 'ok' : (ref as BatchInvalid).reason}`,
    );
  }
}

const bytes = (max: number) => fc.option(fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a)));

/** Producer batches with every record shape: null and empty keys and values, headers, large deltas. */
const batchArb = fc
  .record({
    records: fc.array(
      fc.record({
        key: bytes(20),
        value: bytes(300),
        // Wide enough for every varlong length; baseTimestamp + delta stays an int64.
        timestampDelta: fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n }),
        headers: fc.array(fc.record({ key: fc.string({ maxLength: 8 }), value: bytes(10) }), {
          maxLength: 3,
        }),
      }),
      { minLength: 0, maxLength: 12 },
    ),
    isControl: fc.boolean(),
    baseTimestamp: fc.bigInt({ min: 0n, max: 2n ** 50n }),
  })
  .map((b) => encodeBatch(b));

describe('validateBatchInPlace', () => {
  it('accepts batches Kafka wrote, with the header validateBatch reads', () => {
    for (const b of [KAFKA_BATCH_VALUE_123, KAFKA_BATCH_WITH_HEADER]) {
      const header = emptyBatchHeader();
      assert.equal(validateBatchInPlace(b, 0, b.length, header), b.length);
      const shallow = validateBatch(b, 0);
      assert.ok(shallow.ok);
      assert.deepEqual(header, shallow.header);
    }
  });

  it('validates a batch at an offset in a larger buffer, within `remaining`', () => {
    const b = encodeBatch({ records: [{ key: null, value: Buffer.from('v') }] });
    const buf = Buffer.concat([Buffer.alloc(7), b, Buffer.alloc(5)]);
    assert.equal(validateBatchInPlace(buf, 7, b.length, emptyBatchHeader()), b.length);
    const torn = validateBatchInPlace(buf, 7, b.length - 1, emptyBatchHeader());
    assert.equal(typeof torn === 'number' ? 'ok' : torn.reason, 'truncated');
  });

  it('checks only the header and CRC of a compressed batch, as validateBatchDeep without decompression', () => {
    const b = encodeBatch({ compression: 1, records: [{ key: null, value: Buffer.alloc(100, 1) }] });
    assert.equal(validateBatchInPlace(b, 0, b.length, emptyBatchHeader()), b.length);
    assertAgree(b);
  });

  it('refuses records the producer rule forbids, with validateBatchDeep reason and detail', () => {
    const gap = encodeBatch({
      records: [
        { key: null, value: null, offsetDelta: 0 },
        { key: null, value: null, offsetDelta: 2 },
      ],
    });
    assertAgree(gap);
    assert.notEqual(typeof validateBatchInPlace(gap, 0, gap.length, emptyBatchHeader()), 'number');
    // The cleaner's rule accepts it.
    assertAgree(gap, true);
    assert.equal(
      validateBatchInPlace(gap, 0, gap.length, emptyBatchHeader(), { allowOffsetGaps: true }),
      gap.length,
    );
    const control = encodeBatch({ isControl: true, records: [{ key: Buffer.from([0, 0]), value: null }] });
    assertAgree(control);
    const empty = encodeBatch({ records: [] });
    assertAgree(empty);
    assertAgree(empty, true);
  });

  it('agrees with validateBatchDeep on random valid batches', () => {
    fc.assert(
      fc.property(batchArb, fc.boolean(), (b, gaps) => assertAgree(b, gaps)),
      { numRuns: 1000 },
    );
  });

  it('agrees with validateBatchDeep on mutated batches (CRC fixed so the records are reached)', () => {
    fc.assert(
      fc.property(
        batchArb,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        fc.boolean(),
        (seed, flips, inRecords, gaps) => {
          const b = Buffer.from(seed);
          for (const [at, v] of flips) {
            // Mostly inside the records section, where the walk does its work.
            const span = inRecords && b.length > RECORDS_OFFSET ? b.length - RECORDS_OFFSET : b.length;
            b[(inRecords && b.length > RECORDS_OFFSET ? RECORDS_OFFSET : 0) + (at % span)] = v;
          }
          if (b.readInt32BE(BATCH_LENGTH_OFFSET) + 12 === b.length && b[16] === 2) writeCrc(b, 0);
          assertAgree(b, gaps);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('agrees with validateBatchDeep on batches cut or padded (length and count rewritten)', () => {
    fc.assert(
      fc.property(
        batchArb,
        fc.integer({ min: -40, max: 40 }),
        fc.integer({ min: -2, max: 3 }),
        (seed, d, c) => {
          const len = Math.max(RECORDS_OFFSET, seed.length + d);
          const b = Buffer.alloc(len);
          seed.copy(b, 0, 0, Math.min(len, seed.length));
          b.writeInt32BE(len - 12, BATCH_LENGTH_OFFSET);
          b.writeInt32BE(seed.readInt32BE(RECORDS_COUNT_OFFSET) + c, RECORDS_COUNT_OFFSET);
          writeCrc(b, 0);
          assertAgree(b);
          assertAgree(b, true);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('agrees with validateBatchDeep on random bytes behind a valid header', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 120 }), fc.integer({ min: 0, max: 8 }), (a, count) => {
        const b = Buffer.alloc(RECORDS_OFFSET + a.length);
        Buffer.from(a).copy(b, RECORDS_OFFSET);
        b.writeInt32BE(b.length - 12, BATCH_LENGTH_OFFSET);
        b[16] = 2;
        b.writeInt32BE(Math.max(0, count - 1), 23);
        b.writeInt32BE(count, RECORDS_COUNT_OFFSET);
        writeCrc(b, 0);
        assertAgree(b);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('readBatchHeaderInto and writeInt64', () => {
  it('writeInt64 writes what Buffer.writeBigInt64BE writes, across the 2^53 boundary', () => {
    const edges = [0n, 1n, -1n, 2n ** 31n, -(2n ** 31n), 2n ** 32n - 1n, 2n ** 32n, -(2n ** 32n) - 1n];
    for (const e of [2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n)])
      edges.push(e, -e);
    for (const v of edges.filter((x) => x >= -(2n ** 63n) && x < 2n ** 63n)) {
      const a = Buffer.alloc(10);
      const b = Buffer.alloc(10);
      writeInt64(a, v, 1);
      b.writeBigInt64BE(v, 1);
      assert.deepEqual(a, b, `value ${v}`);
    }
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (v) => {
        const a = Buffer.alloc(8);
        writeInt64(a, v, 0);
        assert.equal(a.readBigInt64BE(0), v);
      }),
    );
  });

  it('reads the header readBatchHeader reads, with or without a shared view, at any position', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 61, maxLength: 90 }), fc.nat(20), (a, lead) => {
        const buf = Buffer.concat([Buffer.alloc(lead), Buffer.from(a)]);
        const expected = readBatchHeader(buf, lead);
        assert.deepEqual(readBatchHeaderInto(buf, lead, emptyBatchHeader()), expected);
        assert.deepEqual(readBatchHeaderInto(buf, lead, emptyBatchHeader(), viewOf(buf)), expected);
      }),
    );
  });
});
