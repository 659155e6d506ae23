import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ProtocolError } from '../../../src/protocol/protocol-error.js';
import {
  type BatchInput,
  type CompressionCodecId,
  ControlRecordType,
  compressionCodec,
  controlRecordKey,
  decodeRecords,
  encodeBatch,
  isControl,
  isTransactional,
  lastOffset,
  NO_TIMESTAMP,
  readBatchHeader,
  readControlRecordKey,
  recordOffset,
  recordTimestamp,
  validateBatch,
  validateBatchDeep,
} from '../../../src/protocol/records/index.js';

const CODECS: CompressionCodecId[] = [0, 1, 2, 3, 4];

const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a));
const nullableBytes = (max: number) => fc.option(bytes(max), { nil: null, freq: 4 });

const recordArb = fc.record({
  timestampDelta: fc.bigInt({ min: -(2n ** 40n), max: 2n ** 40n }),
  key: nullableBytes(64),
  value: nullableBytes(512),
  headers: fc.array(fc.record({ key: fc.string({ maxLength: 16 }), value: nullableBytes(32) }), {
    maxLength: 3,
  }),
});

const batchArb = fc.record({
  baseOffset: fc.bigInt({ min: 0n, max: 2n ** 62n }),
  partitionLeaderEpoch: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
  compression: fc.constantFrom(...CODECS),
  baseTimestamp: fc.bigInt({ min: 0n, max: 2n ** 50n }),
  producerId: fc.bigInt({ min: -1n, max: 2n ** 62n }),
  producerEpoch: fc.integer({ min: -1, max: 32767 }),
  baseSequence: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
  isTransactional: fc.boolean(),
  records: fc.array(recordArb, { minLength: 1, maxLength: 20 }),
});

describe('encodeBatch / decodeRecords', () => {
  it('round-trips random batches with every codec', () => {
    fc.assert(
      fc.property(batchArb, (input: BatchInput) => {
        const buf = encodeBatch(input);
        const v = validateBatch(buf, 0);
        assert.ok(v.ok, v.ok ? '' : v.detail);
        assert.equal(v.size, buf.length);
        const deep = validateBatchDeep(buf, 0, buf.length, { decompress: true });
        assert.ok(deep.ok && deep.recordsChecked, deep.ok ? '' : deep.detail);

        const { header, records } = decodeRecords(buf, { decompress: true });
        const n = input.records.length;
        assert.equal(header.baseOffset, input.baseOffset);
        assert.equal(header.partitionLeaderEpoch, input.partitionLeaderEpoch);
        assert.equal(compressionCodec(header.attributes), input.compression);
        assert.equal(isTransactional(header.attributes), input.isTransactional);
        assert.equal(header.producerId, input.producerId);
        assert.equal(header.producerEpoch, input.producerEpoch);
        assert.equal(header.baseSequence, input.baseSequence);
        assert.equal(header.recordsCount, n);
        assert.equal(header.lastOffsetDelta, n - 1);
        assert.equal(lastOffset(header), input.baseOffset! + BigInt(n - 1));
        // A loop, not Math.max: the deltas are bigints.
        let maxDelta = -(2n ** 63n);
        for (const r of input.records) if (r.timestampDelta! > maxDelta) maxDelta = r.timestampDelta!;
        assert.equal(header.maxTimestamp, input.baseTimestamp! + maxDelta);

        assert.equal(records.length, n);
        records.forEach((r, i) => {
          const want = input.records[i]!;
          assert.equal(r.offsetDelta, i);
          assert.equal(recordOffset(header, r), input.baseOffset! + BigInt(i));
          assert.equal(recordTimestamp(header, r), input.baseTimestamp! + want.timestampDelta!);
          assert.deepEqual(r.key, want.key);
          assert.deepEqual(r.value, want.value);
          // fast-check builds null-prototype objects; compare plain copies.
          assert.deepEqual(
            r.headers,
            (want.headers ?? []).map((h) => ({ key: h.key, value: h.value })),
          );
        });
      }),
      { numRuns: 300 },
    );
  });

  it('never decompresses unless asked', () => {
    for (const compression of [1, 2, 3, 4] as const) {
      const buf = encodeBatch({ compression, records: [{ key: null, value: Buffer.from('x') }] });
      assert.throws(() => decodeRecords(buf, { decompress: false }), ProtocolError);
      const deep = validateBatchDeep(buf, 0);
      assert.ok(deep.ok);
      assert.equal(deep.recordsChecked, false);
      assert.equal(deep.records, null);
    }
  });

  it('encodes an empty batch as a header with no records', () => {
    const buf = encodeBatch({ records: [] });
    assert.equal(buf.length, 61);
    const h = readBatchHeader(buf, 0);
    assert.equal(h.recordsCount, 0);
    assert.equal(h.lastOffsetDelta, 0);
    assert.equal(h.maxTimestamp, NO_TIMESTAMP);
    assert.ok(validateBatch(buf, 0).ok);
    // An empty batch is legal in a log (the cleaner keeps them) but not from a producer.
    const deep = validateBatchDeep(buf, 0);
    assert.ok(!deep.ok && deep.reason === 'bad-record-count');
    assert.ok(validateBatchDeep(buf, 0, buf.length, { allowOffsetGaps: true }).ok);
  });

  it('round-trips a transactional control batch (commit marker)', () => {
    for (const compression of CODECS) {
      const value = Buffer.from([0, 0, 0, 0, 0, 5]); // version 0, coordinator epoch 5
      const buf = encodeBatch({
        compression,
        producerId: 1000n,
        producerEpoch: 3,
        isTransactional: true,
        isControl: true,
        records: [{ key: controlRecordKey(ControlRecordType.commit), value }],
      });
      const deep = validateBatchDeep(buf, 0, buf.length, { decompress: true });
      assert.ok(deep.ok && deep.recordsChecked);
      const { header, records } = decodeRecords(buf, { decompress: true });
      assert.equal(isControl(header.attributes), true);
      assert.equal(isTransactional(header.attributes), true);
      assert.deepEqual(readControlRecordKey(records[0]!.key), { version: 0, type: ControlRecordType.commit });
      assert.deepEqual(records[0]!.value, value);
    }
  });

  it('keeps a compacted batch offset range and accepts its gaps only when told', () => {
    const buf = encodeBatch({
      lastOffsetDelta: 9,
      records: [
        { offsetDelta: 2, key: Buffer.from('a'), value: null },
        { offsetDelta: 7, key: Buffer.from('b'), value: Buffer.from('v') },
      ],
    });
    const h = readBatchHeader(buf, 0);
    assert.equal(h.lastOffsetDelta, 9);
    assert.equal(h.recordsCount, 2);
    assert.ok(validateBatch(buf, 0).ok);
    assert.ok(validateBatchDeep(buf, 0, buf.length, { allowOffsetGaps: true }).ok);
    const strict = validateBatchDeep(buf, 0);
    assert.ok(!strict.ok && strict.reason === 'bad-offset-delta');
  });

  it('reports LogAppendTime timestamps from maxTimestamp', () => {
    const buf = encodeBatch({
      timestampType: 'LogAppendTime',
      baseTimestamp: 10n,
      maxTimestamp: 5000n,
      records: [
        { timestampDelta: 1n, key: null, value: null },
        { timestampDelta: 2n, key: null, value: null },
      ],
    });
    const { header, records } = decodeRecords(buf, { decompress: false });
    assert.deepEqual(
      records.map((r) => recordTimestamp(header, r)),
      [5000n, 5000n],
    );
  });

  it('decodes a batch at an offset inside a larger buffer', () => {
    const a = encodeBatch({ records: [{ key: null, value: Buffer.from('first') }] });
    const b = encodeBatch({ baseOffset: 1n, records: [{ key: null, value: Buffer.from('second') }] });
    const both = Buffer.concat([a, b]);
    const { records } = decodeRecords(both, { decompress: false }, a.length);
    assert.deepEqual(records[0]!.value, Buffer.from('second'));
  });
});
