/**
 * Log compaction end to end in one broker (the acceptance size): 1,000,000 records over
 * 1,000 keys produced into a compacted topic with 1 MiB segments; the cleaner runs on its own
 * (log.cleaner.backoff.ms short) and a consumer reading from the beginning with Fetch then sees at
 * most one record per key outside the active segment, always the latest value, at the offset it
 * was written at.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { CreateTopicsResponse } from '../../src/protocol/generated/CreateTopicsResponse.js';
import {
  defaultFetchPartition,
  defaultFetchRequest,
  type FetchRequest,
} from '../../src/protocol/generated/FetchRequest.js';
import type { FetchResponse } from '../../src/protocol/generated/FetchResponse.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import { decodeRecords, encodeBatch } from '../../src/protocol/records/codec.js';
import { batchesIn } from '../../src/protocol/records/validate.js';
import { startBroker, type TestBroker } from './helpers.js';

const RECORDS = 1_000_000;
const KEYS = 1_000;
const PER_BATCH = 1_000;
const TOPIC = 'compacted';

function fetchReq(fetchOffset: bigint): FetchRequest {
  return {
    ...defaultFetchRequest(),
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 8 << 20,
    topics: [
      {
        topic: TOPIC,
        topicId: 'AAAAAAAAAAAAAAAAAAAAAA',
        partitions: [{ ...defaultFetchPartition(), partition: 0, fetchOffset, partitionMaxBytes: 8 << 20 }],
      },
    ],
  };
}

describe('compaction of 1,000,000 records over 1,000 keys', () => {
  let b: TestBroker;
  let conn: ClientConnection;
  before(async () => {
    b = await startBroker({ 'log.cleaner.backoff.ms': '100' });
    conn = await b.connect();
    const r = await b.call<CreateTopicsResponse>(conn, 19, 7, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [
        {
          name: TOPIC,
          numPartitions: 1,
          replicationFactor: 1,
          assignments: [],
          configs: [
            { name: 'cleanup.policy', value: 'compact' },
            { name: 'segment.bytes', value: String(1 << 20) },
          ],
        },
      ],
    });
    assert.equal(r.topics[0]!.errorCode, 0);
  });
  after(async () => {
    await b.stop();
  });

  it('a consumer from the beginning reads at most one record per key outside the active segment, the latest', async () => {
    const started = Date.now();
    for (let base = 0; base < RECORDS; base += PER_BATCH) {
      const records = encodeBatch({
        baseTimestamp: 1_700_000_000_000n,
        records: Array.from({ length: PER_BATCH }, (_, i) => ({
          key: Buffer.from(`key-${(base + i) % KEYS}`),
          value: Buffer.from(`value-${base + i}`),
          timestampDelta: BigInt(i),
        })),
      });
      const p = await b.call<ProduceResponse>(conn, 0, 9, {
        transactionalId: null,
        acks: -1,
        timeoutMs: 5000,
        topicData: [{ name: TOPIC, partitionData: [{ index: 0, records }] }],
      });
      assert.equal(p.responses[0]!.partitionResponses[0]!.errorCode, 0);
    }
    const produced = Date.now();
    const log = b.broker.logManager.getLog(TOPIC, 0)!;
    const cleaner = b.broker.logManager.cleaner!;
    // Cleaned once the cleaner checkpoint reaches the active segment (each pass cleans what its
    // offset map holds; the default map holds far more than 1,000 keys).
    const deadline = Date.now() + 60_000;
    const dir = b.broker.logManager.logDirOf(TOPIC, 0)!;
    while ((cleaner.checkpointOf(dir, log) ?? -1n) < log.local.segments.active().baseOffset) {
      assert.ok(Date.now() < deadline, 'cleaned within 60 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    const cleaned = Date.now();
    const activeBase = log.local.segments.active().baseOffset;
    const seen = new Map<string, bigint>();
    let last = -1n;
    let count = 0;
    for (let offset = 0n; offset < log.highWatermark; ) {
      const f = await b.call<FetchResponse>(conn, 1, 12, fetchReq(offset));
      const part = f.responses[0]!.partitions[0]!;
      assert.equal(part.errorCode, 0);
      const buf = part.records!;
      let next = offset;
      for (const e of batchesIn(buf)) {
        const d = decodeRecords(buf.subarray(e.pos, e.pos + e.size), { decompress: true });
        for (const r of d.records) {
          const o = d.header.baseOffset + BigInt(r.offsetDelta);
          assert.ok(o > last, 'offsets increase');
          last = o;
          count++;
          const key = r.key!.toString();
          assert.equal(r.value!.toString(), `value-${o}`, 'offsets are as written');
          if (o < activeBase) {
            assert.ok(!seen.has(key), `one record per key outside the active segment: ${key}`);
            seen.set(key, o);
          }
        }
        next = d.header.baseOffset + BigInt(d.header.lastOffsetDelta) + 1n;
      }
      assert.ok(next > offset, 'the fetch made progress');
      offset = next;
    }
    // The latest value of each key is the one read last for it.
    for (const [key, o] of seen) {
      const k = Number(key.slice(4));
      const latest = RECORDS - KEYS + k;
      assert.ok(o === BigInt(latest) || BigInt(latest) >= activeBase, `${key} latest`);
    }
    assert.ok(count < RECORDS / 10, `${count} records left of ${RECORDS}`);
    const line = b.logger.lines.find((l) => l.includes('Log cleaner thread'));
    console.log(
      `produce ${produced - started} ms, cleaning ${cleaned - produced} ms, ${count} records read back; ${line}`,
    );
  });
});
