import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ATTRIBUTES_OFFSET,
  BATCH_LENGTH_OFFSET,
  type BatchInvalidReason,
  batchesIn,
  controlRecordKey,
  encodeBatch,
  LAST_OFFSET_DELTA_OFFSET,
  MAGIC_OFFSET,
  RECORDS_COUNT_OFFSET,
  RECORDS_OFFSET,
  validateBatch,
  validateBatchDeep,
  writeCrc,
} from '../../../src/protocol/records/index.js';

function sample(records = 3, compression: 0 | 1 | 2 | 3 | 4 = 0): Buffer {
  return encodeBatch({
    baseOffset: 100n,
    compression,
    baseTimestamp: 1_700_000_000_000n,
    records: Array.from({ length: records }, (_, i) => ({
      timestampDelta: BigInt(i),
      key: Buffer.from(`k${i}`),
      value: Buffer.from(`value number ${i}`),
    })),
  });
}

/** A copy of `buf` changed by `change`, with its CRC recomputed so only the intended check fails. */
function mutated(buf: Buffer, change: (b: Buffer) => void, fixCrc = true): Buffer {
  const b = Buffer.from(buf);
  change(b);
  if (fixCrc) writeCrc(b, 0);
  return b;
}

function expectShallow(buf: Buffer, reason: BatchInvalidReason, remaining = buf.length): void {
  const v = validateBatch(buf, 0, remaining);
  assert.equal(v.ok, false, `expected ${reason}`);
  if (!v.ok) assert.equal(v.reason, reason, v.detail);
}

function expectDeep(buf: Buffer, reason: BatchInvalidReason, options = {}): void {
  assert.ok(validateBatch(buf, 0).ok, 'the shallow check should pass');
  const v = validateBatchDeep(buf, 0, buf.length, { decompress: true, ...options });
  assert.equal(v.ok, false, `expected ${reason}`);
  if (!v.ok) assert.equal(v.reason, reason, v.detail);
}

describe('validateBatch (shallow)', () => {
  it('accepts a valid batch and reports its size', () => {
    const b = sample();
    const v = validateBatch(b, 0);
    assert.ok(v.ok);
    assert.equal(v.size, b.length);
    assert.equal(v.header.recordsCount, 3);
  });

  it('truncated: a torn batch and a buffer too short for a length', () => {
    const b = sample();
    expectShallow(b.subarray(0, b.length - 1), 'truncated');
    expectShallow(b, 'truncated', b.length - 1);
    expectShallow(b.subarray(0, 11), 'truncated');
    expectShallow(Buffer.alloc(0), 'truncated');
  });

  it('batch-length-too-small: batchLength below 49, including negative', () => {
    expectShallow(
      mutated(sample(), (b) => b.writeInt32BE(48, BATCH_LENGTH_OFFSET), false),
      'batch-length-too-small',
    );
    expectShallow(
      mutated(sample(), (b) => b.writeInt32BE(-5, BATCH_LENGTH_OFFSET), false),
      'batch-length-too-small',
    );
    // A batch of exactly 61 bytes (length 49) is legal.
    assert.ok(validateBatch(encodeBatch({ records: [] }), 0).ok);
  });

  it('bad-magic: magic 0, 1 or 3', () => {
    for (const magic of [0, 1, 3]) {
      expectShallow(
        mutated(sample(), (b) => b.writeInt8(magic, MAGIC_OFFSET), false),
        'bad-magic',
      );
    }
  });

  it('crc-mismatch: any flipped bit from attributes to the end', () => {
    const b = sample();
    for (const at of [ATTRIBUTES_OFFSET, RECORDS_COUNT_OFFSET + 2, RECORDS_OFFSET + 5, b.length - 1]) {
      expectShallow(
        mutated(b, (m) => (m[at] = (m[at] as number) ^ 0x10), false),
        'crc-mismatch',
      );
    }
    const tampered = mutated(b, (m) => m.writeUInt32BE((m.readUInt32BE(17) + 1) >>> 0, 17), false);
    expectShallow(tampered, 'crc-mismatch');
    // ...unless the caller opted out of the CRC pass.
    assert.ok(validateBatch(tampered, 0, tampered.length, { verifyCrc: false }).ok);
  });

  it('unknown-codec: compression bits 5, 6 and 7', () => {
    for (const codec of [5, 6, 7]) {
      expectShallow(
        mutated(sample(), (b) => b.writeInt16BE(codec, ATTRIBUTES_OFFSET)),
        'unknown-codec',
      );
    }
  });

  it('bad-record-count: negative, above the offset range, or more than the bytes can hold', () => {
    expectShallow(
      mutated(sample(), (b) => b.writeInt32BE(-1, RECORDS_COUNT_OFFSET)),
      'bad-record-count',
    );
    expectShallow(
      mutated(sample(), (b) => b.writeInt32BE(4, RECORDS_COUNT_OFFSET)),
      'bad-record-count',
    );
    const huge = mutated(sample(), (b) => {
      b.writeInt32BE(1_000_000, LAST_OFFSET_DELTA_OFFSET);
      b.writeInt32BE(1_000_000, RECORDS_COUNT_OFFSET);
    });
    expectShallow(huge, 'bad-record-count');
  });

  it('bad-offset-delta: negative lastOffsetDelta', () => {
    expectShallow(
      mutated(sample(), (b) => b.writeInt32BE(-1, LAST_OFFSET_DELTA_OFFSET)),
      'bad-offset-delta',
    );
  });

  it('validates a batch in the middle of a buffer and never throws on wild positions', () => {
    const b = sample();
    const wrapped = Buffer.concat([Buffer.alloc(7), b]);
    assert.ok(validateBatch(wrapped, 7).ok);
    for (const pos of [-1, 1.5, wrapped.length, wrapped.length + 100, Number.NaN]) {
      assert.equal(validateBatch(wrapped, pos).ok, false);
    }
    for (const remaining of [Number.NaN, -1, 0.5, Number.POSITIVE_INFINITY]) {
      assert.equal(validateBatch(wrapped, 7, remaining).ok, false);
      assert.equal(validateBatchDeep(wrapped, 7, remaining).ok, false);
    }
  });
});

describe('validateBatchDeep', () => {
  it('accepts valid batches of every codec and returns their records', () => {
    for (const codec of [0, 1, 2, 3, 4] as const) {
      const v = validateBatchDeep(sample(5, codec), 0, undefined, { decompress: true });
      assert.ok(v.ok && v.recordsChecked && v.records?.length === 5);
    }
  });

  it('bad-record-count: recordsCount above the records present, or bytes left over', () => {
    const fewer = mutated(sample(3), (b) => {
      b.writeInt32BE(4, RECORDS_COUNT_OFFSET);
      b.writeInt32BE(3, LAST_OFFSET_DELTA_OFFSET);
    });
    expectDeep(fewer, 'bad-record-count');
    const more = mutated(sample(3), (b) => {
      b.writeInt32BE(2, RECORDS_COUNT_OFFSET);
      b.writeInt32BE(1, LAST_OFFSET_DELTA_OFFSET);
    });
    expectDeep(more, 'bad-record-count');
  });

  it('bad-offset-delta: record offsetDeltas not 0..n-1, or lastOffsetDelta not n-1', () => {
    const gap = encodeBatch({
      records: [
        { key: null, value: null, offsetDelta: 0 },
        { key: null, value: null, offsetDelta: 2 },
      ],
    });
    expectDeep(gap, 'bad-offset-delta');
    const swapped = encodeBatch({
      records: [
        { key: null, value: null, offsetDelta: 1 },
        { key: null, value: null, offsetDelta: 0 },
      ],
    });
    expectDeep(swapped, 'bad-offset-delta');
    expectDeep(swapped, 'bad-offset-delta', { allowOffsetGaps: true });
    const wideRange = mutated(sample(3), (b) => b.writeInt32BE(5, LAST_OFFSET_DELTA_OFFSET));
    expectDeep(wideRange, 'bad-offset-delta');
    assert.ok(validateBatchDeep(wideRange, 0, undefined, { allowOffsetGaps: true }).ok);
  });

  it('bad-records: a key length of 2^30 in a small batch, or a record longer than the batch', () => {
    const one = encodeBatch({ records: [{ key: Buffer.from('abcd'), value: null }] });
    // Record: length, attributes, timestampDelta, offsetDelta, then the key length varint.
    const keyLengthAt = RECORDS_OFFSET + 4;
    assert.equal(one[keyLengthAt], 8); // zigzag(4)
    const hugeKey = Buffer.concat([
      one.subarray(0, keyLengthAt),
      Buffer.from([0x80, 0x80, 0x80, 0x80, 0x08]), // zigzag(2^30)
      one.subarray(keyLengthAt + 1),
    ]);
    hugeKey.writeInt32BE(hugeKey.length - 12, BATCH_LENGTH_OFFSET);
    writeCrc(hugeKey, 0);
    expectDeep(hugeKey, 'bad-records');
    const longRecord = mutated(one, (b) => (b[RECORDS_OFFSET] = 0x7e));
    expectDeep(longRecord, 'bad-records');
    const negativeHeaders = mutated(one, (b) => (b[b.length - 1] = 0x01));
    expectDeep(negativeHeaders, 'bad-records');
  });

  it('decompression-failed: corrupt compressed records, and records above the size limit', () => {
    for (const codec of [1, 2, 3, 4] as const) {
      const b = sample(3, codec);
      expectDeep(
        mutated(b, (m) => m.fill(0x5a, RECORDS_OFFSET + 4, m.length - 2)),
        'decompression-failed',
      );
      expectDeep(b, 'decompression-failed', { maxUncompressedBytes: 20 });
    }
  });

  it('bad-control-record: a control batch whose key is not a control key', () => {
    const control = (key: Buffer | null) =>
      encodeBatch({
        isControl: true,
        isTransactional: true,
        producerId: 1n,
        records: [{ key, value: null }],
      });
    assert.ok(validateBatchDeep(control(controlRecordKey(0)), 0).ok);
    expectDeep(control(Buffer.from([0, 0])), 'bad-control-record');
    expectDeep(control(null), 'bad-control-record');
  });
});

describe('batchesIn', () => {
  const batches = [sample(1), sample(2, 1), sample(3, 4), sample(4)];
  const all = Buffer.concat(batches);

  it('walks every batch and ends cleanly', () => {
    const scan = batchesIn(all);
    const seen = [...scan];
    assert.deepEqual(
      seen.map((e) => [e.pos, e.size, e.header.recordsCount]),
      [
        [0, batches[0]!.length, 1],
        [batches[0]!.length, batches[1]!.length, 2],
        [batches[0]!.length + batches[1]!.length, batches[2]!.length, 3],
        [all.length - batches[3]!.length, batches[3]!.length, 4],
      ],
    );
    assert.equal(scan.invalid, null);
    assert.equal(scan.validEnd, all.length);
  });

  it('stops at a torn tail and reports where the valid bytes end', () => {
    const torn = all.subarray(0, all.length - 10);
    const scan = batchesIn(torn);
    assert.equal([...scan].length, 3);
    assert.equal(scan.validEnd, all.length - batches[3]!.length);
    assert.equal(scan.invalid?.reason, 'truncated');
    assert.equal(scan.invalid?.pos, scan.validEnd);
  });

  it('stops at a corrupt batch in the middle without throwing', () => {
    const corrupt = Buffer.from(all);
    const at = batches[0]!.length + RECORDS_OFFSET + 1;
    corrupt[at] = (corrupt[at] as number) ^ 0xff;
    const scan = batchesIn(corrupt);
    assert.equal([...scan].length, 1);
    assert.equal(scan.invalid?.reason, 'crc-mismatch');
    assert.equal(scan.validEnd, batches[0]!.length);
  });

  it('walks a sub-range and restarts when iterated again', () => {
    const start = batches[0]!.length;
    const end = start + batches[1]!.length;
    const scan = batchesIn(all, start, end);
    assert.equal([...scan].length, 1);
    assert.equal([...scan].length, 1);
    assert.equal(scan.validEnd, end);
    assert.equal(scan.invalid, null);
  });
});
