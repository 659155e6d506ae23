import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ProtocolError } from '../../../src/protocol/protocol-error.js';
import { batchRecordsSection, encodeBatch, readRecords } from '../../../src/protocol/records/index.js';
import { RecordWalker } from '../../../src/protocol/records/record-walker.js';

interface Walked {
  start: number;
  end: number;
  offsetDelta: number;
  key: Buffer | null;
  valueIsNull: boolean;
}

function walk(section: Buffer, count: number): Walked[] {
  const w = new RecordWalker();
  w.reset(section, 0, section.length, count);
  const out: Walked[] = [];
  while (w.next()) {
    out.push({
      start: w.recordStart,
      end: w.recordEnd,
      offsetDelta: w.offsetDelta,
      key: w.keyStart < 0 ? null : section.subarray(w.keyStart, w.keyEnd),
      valueIsNull: w.valueIsNull,
    });
  }
  return out;
}

const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a));

const record = fc.record({
  timestampDelta: fc.bigInt({ min: -(1n << 62n), max: 1n << 62n }),
  offsetDelta: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  key: fc.option(bytes(300), { nil: null }),
  value: fc.option(bytes(300), { nil: null }),
  headers: fc.array(
    fc.record({ key: fc.string({ maxLength: 10 }), value: fc.option(bytes(20), { nil: null }) }),
    {
      maxLength: 3,
    },
  ),
});

describe('RecordWalker', () => {
  it('walks random batches, every codec, to what the full decoder reads', () => {
    fc.assert(
      fc.property(
        fc.array(record, { maxLength: 40 }),
        fc.constantFrom(0, 1, 2, 3, 4),
        (records, compression) => {
          const batch = encodeBatch({
            compression: compression as 0 | 1 | 2 | 3 | 4,
            baseTimestamp: 1_700_000_000_000n,
            records,
          });
          const { header, records: section } = batchRecordsSection(batch, 0, { decompress: true });
          const decoded = readRecords(section, header.recordsCount);
          const walked = walk(section, header.recordsCount);
          assert.equal(walked.length, decoded.length);
          let at = 0;
          walked.forEach((w, i) => {
            const d = decoded[i]!;
            assert.equal(w.start, at, 'records are contiguous');
            at = w.end;
            assert.equal(w.offsetDelta, d.offsetDelta);
            assert.deepEqual(w.key, d.key);
            assert.equal(w.valueIsNull, d.value === null);
          });
          assert.equal(at, section.length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses what does not fit, as the full decoder, with ProtocolError only', () => {
    const batch = encodeBatch({
      records: [
        { key: Buffer.from('a'), value: Buffer.from('x'.repeat(200)) },
        { key: null, value: null },
      ],
    });
    const { records: section } = batchRecordsSection(batch, 0, { decompress: false });
    // A count the bytes cannot hold, a count short of the records, a count past them.
    assert.throws(() => walk(section, 1000), ProtocolError);
    assert.throws(() => walk(section, 1), /bytes remain/);
    assert.throws(() => walk(section, 3), ProtocolError);
    // Cut short anywhere: refused, never read past the end.
    for (let cut = 1; cut < section.length; cut++) {
      assert.throws(() => walk(section.subarray(0, cut), 2), ProtocolError, `cut at ${cut}`);
    }
    fc.assert(
      fc.property(bytes(200), fc.integer({ min: 0, max: 30 }), (garbage, count) => {
        try {
          for (const w of walk(garbage, count)) {
            assert.ok(w.start < w.end && w.end <= garbage.length);
            if (w.key !== null) assert.ok(w.key.length <= w.end - w.start);
          }
        } catch (e) {
          assert.ok(e instanceof ProtocolError, String(e));
        }
      }),
      { numRuns: 500 },
    );
  });
});
