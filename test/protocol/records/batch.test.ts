import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crc32c } from '@node-rs/crc32';
import { ProtocolError } from '../../../src/protocol/protocol-error.js';
import {
  ATTRIBUTES_OFFSET,
  BATCH_HEADER_SIZE,
  batchSize,
  CRC_OFFSET,
  compressionCodec,
  computeCrc,
  decodeRecords,
  encodeBatch,
  hasDeleteHorizon,
  isControl,
  isTransactional,
  lastOffset,
  makeAttributes,
  RECORDS_COUNT_OFFSET,
  readBatchHeader,
  recordOffset,
  recordTimestamp,
  setBaseOffset,
  setLogAppendTime,
  setPartitionLeaderEpoch,
  timestampType,
  validateBatch,
} from '../../../src/protocol/records/index.js';
import { KAFKA_BATCH_VALUE_123, KAFKA_BATCH_WITH_HEADER, referenceCrc32c } from './helpers.js';

/**
 * A batch built field by field with Buffer writes, independent of encodeBatch: baseOffset 42,
 * epoch 7, one record (key null, value "hello", one header "h" = "v"), timestamp 1000 + 5.
 */
function handBuiltBatch(): Buffer {
  // biome-ignore format: one line per record field keeps the byte layout readable
  const record = Buffer.from([
    // length 15 (zigzag 30 = 0x1e), attributes 0, timestampDelta 5 (zigzag 10), offsetDelta 0
    0x1e, 0x00, 0x0a, 0x00,
    // key null (-1 -> 0x01), value length 5 (0x0a) "hello"
    0x01, 0x0a, 0x68, 0x65, 0x6c, 0x6c, 0x6f,
    // 1 header (0x02): key length 1 (0x02) "h", value length 1 (0x02) "v"
    0x02, 0x02, 0x68, 0x02, 0x76,
  ]);
  const b = Buffer.alloc(BATCH_HEADER_SIZE + record.length);
  b.writeBigInt64BE(42n, 0);
  b.writeInt32BE(b.length - 12, 8);
  b.writeInt32BE(7, 12);
  b.writeInt8(2, 16);
  b.writeInt16BE(0, 21);
  b.writeInt32BE(0, 23);
  b.writeBigInt64BE(1000n, 27);
  b.writeBigInt64BE(1005n, 35);
  b.writeBigInt64BE(-1n, 43);
  b.writeInt16BE(-1, 51);
  b.writeInt32BE(-1, 53);
  b.writeInt32BE(1, 57);
  record.copy(b, 61);
  b.writeUInt32BE(referenceCrc32c(b.subarray(21)), 17);
  return b;
}

describe('CRC-32C', () => {
  it('matches the standard check value for "123456789"', () => {
    assert.equal(crc32c('123456789') >>> 0, 0xe3069283);
    assert.equal(referenceCrc32c(Buffer.from('123456789')), 0xe3069283);
  });

  it('computeCrc covers bytes 21..end, as an independent CRC-32C does', () => {
    const b = handBuiltBatch();
    assert.equal(computeCrc(b, 0, b.length), referenceCrc32c(b.subarray(ATTRIBUTES_OFFSET)));
    assert.equal(computeCrc(b, 0, b.length), b.readUInt32BE(CRC_OFFSET));
  });

  it('agrees with the CRC a real Kafka broker wrote', () => {
    for (const b of [KAFKA_BATCH_VALUE_123, KAFKA_BATCH_WITH_HEADER]) {
      assert.equal(computeCrc(b, 0, b.length), b.readUInt32BE(CRC_OFFSET));
      assert.equal(validateBatch(b, 0).ok, true);
    }
  });

  it('computes the CRC of a batch in the middle of a buffer', () => {
    const b = handBuiltBatch();
    const wrapped = Buffer.concat([Buffer.alloc(13, 0xee), b, Buffer.alloc(5, 0xee)]);
    assert.equal(computeCrc(wrapped, 13, b.length), b.readUInt32BE(CRC_OFFSET));
  });
});

describe('batch header', () => {
  it('reads every field of a hand-built batch', () => {
    const b = handBuiltBatch();
    const h = readBatchHeader(b, 0);
    assert.deepEqual(h, {
      baseOffset: 42n,
      batchLength: b.length - 12,
      partitionLeaderEpoch: 7,
      magic: 2,
      crc: referenceCrc32c(b.subarray(21)),
      attributes: 0,
      lastOffsetDelta: 0,
      baseTimestamp: 1000n,
      maxTimestamp: 1005n,
      producerId: -1n,
      producerEpoch: -1,
      baseSequence: -1,
      recordsCount: 1,
    });
    assert.equal(lastOffset(h), 42n);
    assert.equal(batchSize(h), b.length);
  });

  it('encodeBatch writes the same bytes as the hand-built batch', () => {
    const encoded = encodeBatch({
      baseOffset: 42n,
      partitionLeaderEpoch: 7,
      baseTimestamp: 1000n,
      records: [
        {
          timestampDelta: 5n,
          key: null,
          value: Buffer.from('hello'),
          headers: [{ key: 'h', value: Buffer.from('v') }],
        },
      ],
    });
    assert.deepEqual(encoded, handBuiltBatch());
  });

  it('decodes the records of real Kafka batches', () => {
    const a = decodeRecords(KAFKA_BATCH_VALUE_123, { decompress: false });
    assert.equal(a.records.length, 1);
    const r = a.records[0]!;
    assert.equal(r.key, null);
    assert.deepEqual(r.value, Buffer.from('123'));
    assert.deepEqual(r.headers, []);
    assert.equal(recordTimestamp(a.header, r), 1503229838908n);
    assert.equal(recordOffset(a.header, r), 0n);
    const b = decodeRecords(KAFKA_BATCH_WITH_HEADER, { decompress: false });
    assert.deepEqual(b.records[0]!.headers, [{ key: 'hkey', value: Buffer.from('hval') }]);
  });

  it('refuses a header that does not fit with a ProtocolError', () => {
    assert.throws(() => readBatchHeader(Buffer.alloc(60), 0), ProtocolError);
    assert.throws(() => readBatchHeader(Buffer.alloc(70), 10), ProtocolError);
    assert.throws(() => readBatchHeader(Buffer.alloc(70), -1), ProtocolError);
  });

  it('decodes attribute bits', () => {
    const all = makeAttributes({
      compression: 4,
      timestampType: 'LogAppendTime',
      isTransactional: true,
      isControl: true,
      hasDeleteHorizon: true,
    });
    assert.equal(all, 0x7c);
    assert.equal(compressionCodec(all), 4);
    assert.equal(timestampType(all), 'LogAppendTime');
    assert.equal(isTransactional(all), true);
    assert.equal(isControl(all), true);
    assert.equal(hasDeleteHorizon(all), true);
    assert.equal(timestampType(0), 'CreateTime');
    assert.equal(isTransactional(0) || isControl(0) || hasDeleteHorizon(0), false);
    assert.throws(() => makeAttributes({ compression: 5 }), RangeError);
  });
});

describe('in-place setters', () => {
  it('setBaseOffset and setPartitionLeaderEpoch leave the CRC valid', () => {
    const b = handBuiltBatch();
    const before = Buffer.from(b.subarray(ATTRIBUTES_OFFSET));
    setBaseOffset(b, 0, 9_000_000_000n);
    setPartitionLeaderEpoch(b, 0, 12);
    const h = readBatchHeader(b, 0);
    assert.equal(h.baseOffset, 9_000_000_000n);
    assert.equal(h.partitionLeaderEpoch, 12);
    assert.deepEqual(b.subarray(ATTRIBUTES_OFFSET), before);
    assert.equal(validateBatch(b, 0).ok, true);
  });

  it('setLogAppendTime switches the timestamp type and rewrites the CRC', () => {
    const b = handBuiltBatch();
    setLogAppendTime(b, 0, 77n);
    const { header, records } = decodeRecords(b, { decompress: false });
    assert.equal(timestampType(header.attributes), 'LogAppendTime');
    assert.equal(recordTimestamp(header, records[0]!), 77n);
    assert.equal(validateBatch(b, 0).ok, true);
  });

  it('setters refuse a position without a whole header', () => {
    assert.throws(() => setBaseOffset(Buffer.alloc(61), 1, 0n), ProtocolError);
    assert.throws(() => setPartitionLeaderEpoch(Buffer.alloc(10), 0, 0), ProtocolError);
  });

  it('leaves recordsCount where the layout says', () => {
    assert.equal(handBuiltBatch().readInt32BE(RECORDS_COUNT_OFFSET), 1);
  });
});
