import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ClientConnection } from '../../src/network/client-connection.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import {
  ATTRIBUTES_OFFSET,
  BATCH_LENGTH_OFFSET,
  encodeBatch,
  LAST_OFFSET_DELTA_OFFSET,
  MAGIC_OFFSET,
  RECORDS_COUNT_OFFSET,
  RECORDS_OFFSET,
  writeCrc,
} from '../../src/protocol/records/index.js';
import { batch, createTopic, latestOffset, startBroker, type TestBroker } from './helpers.js';

/**
 * A producer's malformed batches against a real broker: each is answered with Kafka's error for
 * that partition (ProduceRequest.validateRecords, then LogValidator's batch checks) and nothing of
 * it is appended — the partition's LEO does not move and a good batch still lands at offset 0.
 */
const { CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE, UNSUPPORTED_COMPRESSION_TYPE } = ErrorCode;

describe('bad batches from a producer', () => {
  let b: TestBroker;
  let conn: ClientConnection;
  before(async () => {
    b = await startBroker({ 'message.max.bytes': '2000' });
    conn = await b.connect();
    await createTopic(b, conn, 'bad');
  });
  after(async () => {
    await b.stop();
  });

  const produce = async (records: Buffer, version = 9, topic = 'bad') => {
    const r = await b.call<ProduceResponse>(conn, 0, version, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 1000,
      topicData: [{ name: topic, partitionData: [{ index: 0, records }] }],
    });
    return r.responses[0]!.partitionResponses[0]!;
  };
  const logEndOffset = (topic = 'bad') => latestOffset(b, conn, topic);
  /** A good batch with `edit` applied; the CRC recomputed unless `keepCrc`. */
  const forged = (edit: (buf: Buffer) => void, keepCrc = false, records = batch(3)) => {
    const buf = Buffer.from(records);
    edit(buf);
    if (!keepCrc) writeCrc(buf, 0);
    return buf;
  };
  const refused = async (records: Buffer, code: number, version = 9) => {
    const p = await produce(records, version);
    assert.equal(p.errorCode, code, `error ${p.errorCode} (${p.errorMessage}), expected ${code}`);
    assert.equal(p.baseOffset, -1n);
    assert.equal(await logEndOffset(), 0n, 'nothing appended');
    return p;
  };

  it('a batch whose CRC does not match is CORRUPT_MESSAGE', async () => {
    await refused(
      forged((buf) => {
        buf[buf.length - 3]! ^= 0x20;
      }, true),
      CORRUPT_MESSAGE,
    );
  });

  it('batch lengths below the smallest record and magic bytes no format has are CORRUPT_MESSAGE', async () => {
    await refused(
      forged((buf) => buf.writeInt32BE(5, BATCH_LENGTH_OFFSET), true),
      CORRUPT_MESSAGE,
    );
    await refused(
      forged((buf) => buf.writeInt8(3, MAGIC_OFFSET), true),
      CORRUPT_MESSAGE,
    );
    await refused(
      forged((buf) => buf.writeInt8(-1, MAGIC_OFFSET), true),
      CORRUPT_MESSAGE,
    );
  });

  it('magic 0 or 1, no whole batch, or two batches in one partition are INVALID_RECORD (Produce v3+)', async () => {
    await refused(
      forged((buf) => buf.writeInt8(1, MAGIC_OFFSET), true),
      INVALID_RECORD,
    );
    await refused(
      forged((buf) => buf.writeInt8(0, MAGIC_OFFSET), true),
      INVALID_RECORD,
    );
    await refused(Buffer.alloc(0), INVALID_RECORD);
    await refused(batch(3).subarray(0, 40), INVALID_RECORD);
    const two = await refused(Buffer.concat([batch(1), batch(1)]), INVALID_RECORD);
    // KafkaApis answers ProduceRequest.validateRecords' refusals with the code alone.
    assert.equal(two.errorMessage, null);
  });

  it('record counts and offset deltas that disagree with the records are INVALID_RECORD', async () => {
    await refused(
      forged((buf) => buf.writeInt32BE(7, LAST_OFFSET_DELTA_OFFSET)),
      INVALID_RECORD,
    );
    await refused(
      forged((buf) => buf.writeInt32BE(-1, LAST_OFFSET_DELTA_OFFSET)),
      INVALID_RECORD,
    );
    await refused(
      forged((buf) => buf.writeInt32BE(0, RECORDS_COUNT_OFFSET)),
      INVALID_RECORD,
    );
    await refused(
      forged((buf) => buf.writeInt32BE(4, RECORDS_COUNT_OFFSET)),
      INVALID_RECORD,
    );
    // The second record's offsetDelta (its 4th byte: length, attributes, timestampDelta) made 5.
    await refused(
      forged((buf) => {
        const second = RECORDS_OFFSET + 1 + (buf[RECORDS_OFFSET]! >> 1);
        buf[second + 3] = 10;
      }),
      INVALID_RECORD,
    );
  });

  it('a compressed batch whose records do not decompress is refused', async () => {
    const gzip = encodeBatch({ compression: 1, records: [{ key: null, value: Buffer.alloc(100, 1) }] });
    await refused(
      forged((buf) => buf.fill(0x5a, RECORDS_OFFSET + 2), false, gzip),
      INVALID_RECORD,
    );
  });

  it('zstd before Produce v7 is UNSUPPORTED_COMPRESSION_TYPE', async () => {
    const zstd = encodeBatch({ compression: 4, records: [{ key: null, value: Buffer.from('z') }] });
    assert.equal(zstd.readInt16BE(ATTRIBUTES_OFFSET) & 7, 4);
    await refused(zstd, UNSUPPORTED_COMPRESSION_TYPE, 6);
  });

  it('a batch over message.max.bytes (broker) or max.message.bytes (topic) is MESSAGE_TOO_LARGE', async () => {
    const big = encodeBatch({ records: [{ key: null, value: Buffer.alloc(2100, 7) }] });
    await refused(big, MESSAGE_TOO_LARGE);
    await createTopic(b, conn, 'bad-small', 1, { 'max.message.bytes': '3000' });
    assert.equal((await produce(big, 9, 'bad-small')).errorCode, 0, 'the topic override allows more');
    const bigger = encodeBatch({ records: [{ key: null, value: Buffer.alloc(3100, 7) }] });
    assert.equal((await produce(bigger, 9, 'bad-small')).errorCode, MESSAGE_TOO_LARGE);
    assert.equal(await logEndOffset('bad-small'), 1n);
  });

  it('after all that, a good batch lands at offset 0; a partial batch behind it is left out', async () => {
    const good = batch(3);
    const p = await produce(Buffer.concat([good, batch(2).subarray(0, 30)]));
    assert.equal(p.errorCode, 0);
    assert.equal(p.baseOffset, 0n);
    assert.equal(await logEndOffset(), 3n);
  });
});
