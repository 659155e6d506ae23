import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ClientConnection } from '../../src/network/client-connection.js';
import { defaultFetchPartition, defaultFetchRequest } from '../../src/protocol/generated/FetchRequest.js';
import type { FetchResponse } from '../../src/protocol/generated/FetchResponse.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import { decodeRecords, encodeBatch } from '../../src/protocol/records/codec.js';
import { recordOffset } from '../../src/protocol/records/record.js';
import { batchesIn } from '../../src/protocol/records/validate.js';
import { fileRegionStats, setZeroCopyEnabled, zeroCopyAvailable } from '../../src/storage/file-region.js';
import { readBuffers } from '../../src/storage/read-buffers.js';
import { createTopic, seededRandomBytes, startBroker, type TestBroker } from './helpers.js';

const BATCHES = 48;
const RECORDS_PER_BATCH = 64;
const VALUE_BYTES = 1024;
const FETCH_BYTES = 200 * 1024;

/**
 * Fetch answers carry stored bytes as file regions sent with sendfile (src/storage/file-region.ts)
 * or, without it, are read into pooled buffers that the connection takes back once the socket has
 * written them (src/storage/read-buffers.ts). Reuse too early would put another read's bytes on the
 * wire: several connections fetching the same log at once, each answer checked record by record
 * (CRC included), would see it.
 */
describe('fetch read buffers', () => {
  let b: TestBroker;
  let conn: ClientConnection;
  const produced: Buffer[] = [];

  before(async () => {
    b = await startBroker();
    conn = await b.connect();
    await createTopic(b, conn, 'rb');
    const random = seededRandomBytes(7);
    for (let i = 0; i < BATCHES; i++) {
      const values = Array.from({ length: RECORDS_PER_BATCH }, () => random(VALUE_BYTES));
      produced.push(...values);
      const records = encodeBatch({
        baseTimestamp: 1_700_000_000_000n,
        records: values.map((value, j) => ({ key: null, value, timestampDelta: BigInt(j) })),
      });
      const p = await b.call<ProduceResponse>(conn, 0, 9, {
        transactionalId: null,
        acks: 1,
        timeoutMs: 5000,
        topicData: [{ name: 'rb', partitionData: [{ index: 0, records }] }],
      });
      assert.equal(p.responses[0]!.partitionResponses[0]!.errorCode, 0);
    }
  });
  after(async () => {
    await b.stop();
  });

  /** Reads the whole partition on `c`, FETCH_BYTES per request; returns every record value. */
  async function readAll(c: ClientConnection): Promise<Buffer[]> {
    const values: Buffer[] = [];
    let offset = 0n;
    while (offset < BigInt(produced.length)) {
      const f = await b.call<FetchResponse>(c, 1, 11, {
        ...defaultFetchRequest(),
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: FETCH_BYTES,
        topics: [
          {
            topic: 'rb',
            topicId: 'AAAAAAAAAAAAAAAAAAAAAA',
            partitions: [
              {
                ...defaultFetchPartition(),
                partition: 0,
                fetchOffset: offset,
                partitionMaxBytes: FETCH_BYTES,
              },
            ],
          },
        ],
      });
      const records = f.responses[0]!.partitions[0]!.records!;
      const scan = batchesIn(records);
      for (const e of scan) {
        const d = decodeRecords(records.subarray(e.pos, e.pos + e.size), { decompress: true });
        for (const r of d.records) {
          if (recordOffset(d.header, r) >= offset) values.push(Buffer.from(r.value!));
        }
        offset = e.header.baseOffset + BigInt(e.header.lastOffsetDelta) + 1n;
      }
      // Only a batch cut by the byte limit may be invalid, and only at the end (CRC-checked above).
      assert.ok(scan.invalid === null || scan.invalid.reason === 'truncated', `${scan.invalid?.reason}`);
    }
    return values;
  }

  async function readConcurrently(): Promise<void> {
    const conns = await Promise.all([b.connect(), b.connect(), b.connect()]);
    for (let round = 0; round < 2; round++) {
      const all = await Promise.all(conns.map((c) => readAll(c)));
      for (const values of all) {
        assert.equal(values.length, produced.length);
        for (let i = 0; i < produced.length; i++) {
          if (!values[i]!.equals(produced[i]!)) assert.fail(`record ${i} differs from what was produced`);
        }
      }
    }
    for (const c of conns) c.close();
  }

  it('serves several connections reading the same log at once through memory, every byte intact, memory reused', async () => {
    setZeroCopyEnabled(false);
    try {
      const reusedBefore = readBuffers.reused;
      await readConcurrently();
      assert.ok(readBuffers.reused > reusedBefore, 'read buffers were reused');
    } finally {
      setZeroCopyEnabled(true);
    }
  });

  it('serves them with sendfile where it can, every byte intact', {
    skip: !zeroCopyAvailable(),
  }, async () => {
    const sentBefore = fileRegionStats.sentBytes;
    await readConcurrently();
    assert.ok(fileRegionStats.sentBytes > sentBefore, 'stored bytes went out with sendfile');
  });
});
