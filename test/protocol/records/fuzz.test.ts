import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ProtocolError } from '../../../src/protocol/protocol-error.js';
import {
  BATCH_LENGTH_OFFSET,
  batchesIn,
  decodeRecords,
  encodeBatch,
  RECORDS_COUNT_OFFSET,
  RECORDS_OFFSET,
  readBatchHeader,
  validateBatch,
  validateBatchDeep,
  writeCrc,
} from '../../../src/protocol/records/index.js';

/** Limit for decompression in the fuzz runs: anything bigger is refused, never allocated. */
const MAX_BYTES = 1024 * 1024;

function onlyProtocolErrors(f: () => unknown): void {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof ProtocolError, `non-ProtocolError escaped: ${String((e as Error)?.stack ?? e)}`);
  }
}

/** Feeds bytes to every entry point; validators must not throw at all. */
function exercise(buf: Buffer): void {
  onlyProtocolErrors(() => readBatchHeader(buf, 0));
  onlyProtocolErrors(() => decodeRecords(buf, { decompress: true, maxUncompressedBytes: MAX_BYTES }));
  onlyProtocolErrors(() => decodeRecords(buf, { decompress: false }));
  const shallow = validateBatch(buf, 0);
  const deep = validateBatchDeep(buf, 0, buf.length, { decompress: true, maxUncompressedBytes: MAX_BYTES });
  if (deep.ok) assert.ok(shallow.ok, 'deep accepted what shallow refused');
  const scan = batchesIn(buf);
  for (const entry of scan) assert.ok(entry.pos + entry.size <= buf.length);
  assert.ok(scan.validEnd <= buf.length);
}

/** Seeds: valid batches of every codec, with keys, headers and a control batch. */
const SEEDS: Buffer[] = [0, 1, 2, 3, 4].flatMap((compression) => [
  encodeBatch({
    compression: compression as 0 | 1 | 2 | 3 | 4,
    baseTimestamp: 1_700_000_000_000n,
    records: Array.from({ length: 4 }, (_, i) => ({
      timestampDelta: BigInt(i * 10),
      key: i % 2 ? null : Buffer.from(`key-${i}`),
      value: Buffer.from('v'.repeat(i * 40)),
      headers: [{ key: 'h', value: i % 3 ? null : Buffer.from('hv') }],
    })),
  }),
  encodeBatch({
    compression: compression as 0 | 1 | 2 | 3 | 4,
    isControl: true,
    isTransactional: true,
    producerId: 5n,
    records: [{ key: Buffer.from([0, 0, 0, 1]), value: Buffer.from([0, 0, 0, 0, 0, 0]) }],
  }),
]);

describe('fuzz: record batch decoders', () => {
  it('random bytes raise at most a ProtocolError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (a) => exercise(Buffer.from(a))),
      { numRuns: 3000 },
    );
  });

  it('random bytes behind a plausible header raise at most a ProtocolError', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 61, maxLength: 400 }),
        fc.integer({ min: 0, max: 7 }),
        fc.integer({ min: -2, max: 1000 }),
        (a, codec, count) => {
          const b = Buffer.from(a);
          b.writeInt32BE(b.length - 12, BATCH_LENGTH_OFFSET);
          b[16] = 2;
          b.writeInt16BE(codec, 21);
          b.writeInt32BE(count, RECORDS_COUNT_OFFSET);
          writeCrc(b, 0);
          exercise(b);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('mutated valid batches (CRC fixed up, so the records are reached) raise at most a ProtocolError', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...SEEDS),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }),
        fc.boolean(),
        fc.nat(),
        (seed, flips, fixCrc, cut) => {
          const b = Buffer.from(seed);
          for (const [at, v] of flips) b[at % b.length] = v;
          if (fixCrc && b.length >= RECORDS_OFFSET && b.readInt32BE(BATCH_LENGTH_OFFSET) + 12 <= b.length) {
            onlyProtocolErrors(() => writeCrc(b, 0));
          }
          exercise(cut % 4 === 0 ? b.subarray(0, cut % b.length) : b);
        },
      ),
      { numRuns: 4000 },
    );
  });

  it('a 2^30 key length in a small batch is a ProtocolError, not an allocation', () => {
    const batch = encodeBatch({ records: [{ key: Buffer.from('k'), value: Buffer.from('v') }] });
    const at = RECORDS_OFFSET + 4; // record length, attributes, timestampDelta, offsetDelta, key length
    const forged = Buffer.concat([
      batch.subarray(0, at),
      Buffer.from([0x80, 0x80, 0x80, 0x80, 0x08]),
      batch.subarray(at + 1),
    ]);
    forged.writeInt32BE(forged.length - 12, BATCH_LENGTH_OFFSET);
    forged[RECORDS_OFFSET] = 0x18; // record length 12: the whole forged record, so the key length is what fails
    writeCrc(forged, 0);
    assert.throws(() => decodeRecords(forged, { decompress: false }), ProtocolError);
    const v = validateBatchDeep(forged, 0);
    assert.ok(!v.ok && v.reason === 'bad-records');
  });

  it('a forged recordsCount of 2^31-1 costs nothing', () => {
    const batch = Buffer.from(encodeBatch({ records: [{ key: null, value: null }] }));
    batch.writeInt32BE(0x7fffffff, RECORDS_COUNT_OFFSET);
    batch.writeInt32BE(0x7ffffffe, 23);
    writeCrc(batch, 0);
    assert.throws(() => decodeRecords(batch, { decompress: false }), ProtocolError);
    const v = validateBatch(batch, 0);
    assert.ok(!v.ok && v.reason === 'bad-record-count');
  });
});
