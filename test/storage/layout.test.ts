import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { crc32c } from '@node-rs/crc32';
import { Log } from '../../src/storage/log.js';
import { logConfig } from '../../src/storage/log-config.js';
import { makeBatch, tempDir, testContext } from './helpers.js';

/**
 * Disk layout against KAFKA-REFERENCE.md §5–6, read back with plain Buffer reads (no Skiff
 * decoder), and against a record batch librdkafka produced (test/fixtures/clients/kcat).
 */

const fixture = JSON.parse(
  fs.readFileSync(path.join(process.cwd(), 'test/fixtures/clients/kcat/Produce-v7.json'), 'utf8'),
) as { frameHex: string; note: string };

/** The records field of the first partition of a Produce v7 request frame, parsed by hand. */
function librdkafkaBatch(): Buffer {
  const frame = Buffer.from(fixture.frameHex, 'hex');
  let at = 4 + 2 + 2 + 4; // size, apiKey, apiVersion, correlationId
  at += 2 + frame.readInt16BE(at); // clientId
  const txn = frame.readInt16BE(at);
  at += 2 + Math.max(txn, 0); // transactionalId (null = -1)
  at += 2 + 4; // acks, timeout
  assert.equal(frame.readInt32BE(at), 1); // one topic
  at += 4;
  at += 2 + frame.readInt16BE(at); // topic name
  assert.equal(frame.readInt32BE(at), 1); // one partition
  at += 4 + 4; // partition count, partition index
  const length = frame.readInt32BE(at);
  return Buffer.from(frame.subarray(at + 4, at + 4 + length));
}

test('a batch from librdkafka is stored byte for byte, only baseOffset and partitionLeaderEpoch assigned', () => {
  const { dir, cleanup } = tempDir();
  try {
    const original = librdkafkaBatch();
    assert.equal(original.readInt8(16), 2, fixture.note);
    const ctx = testContext();
    const tp = path.join(dir, 'skiff-kcat-0');
    const log = Log.open({
      dir: tp,
      topic: 'skiff-kcat',
      partition: 0,
      config: logConfig(),
      ctx,
      hadCleanShutdown: true,
    });
    // same timestamps, so segment.ms does not roll between the two
    log.appendAsLeader(makeBatch({ count: 5, timestamp: original.readBigInt64BE(27) }), 2);
    const before = log.size;
    log.appendAsLeader(Buffer.from(original), 3);
    log.close();
    const file = fs.readFileSync(path.join(tp, '00000000000000000000.log'));
    const stored = file.subarray(before);
    assert.equal(stored.length, original.length);
    assert.equal(stored.readBigInt64BE(0), 5n, 'baseOffset at byte 0 = the LEO');
    assert.equal(stored.readInt32BE(8), original.length - 12, 'batchLength at byte 8 = total − 12');
    assert.equal(stored.readInt32BE(12), 3, 'partitionLeaderEpoch at byte 12 = the leader epoch');
    assert.equal(stored.readInt8(16), 2, 'magic at byte 16');
    assert.deepEqual(stored.subarray(16), original.subarray(16), 'everything from magic on is untouched');
    assert.equal(
      stored.readUInt32BE(17),
      crc32c(stored.subarray(21)) >>> 0,
      'CRC-32C of bytes 21..end at byte 17',
    );
    assert.equal(stored.readUInt32BE(17), original.readUInt32BE(17), 'the producer’s CRC still holds');
  } finally {
    cleanup();
  }
});

test('segment, index and time index layout follow the format tables', () => {
  const { dir, cleanup } = tempDir();
  try {
    const ctx = testContext();
    const tp = path.join(dir, 't-7');
    const log = Log.open({
      dir: tp,
      topic: 't',
      partition: 7,
      config: logConfig({ indexIntervalBytes: 4096, segmentBytes: 60_000 }),
      ctx,
      hadCleanShutdown: true,
    });
    for (let i = 0; i < 120; i++) {
      log.appendAsLeader(
        makeBatch({ count: 3, valueBytes: 300, timestamp: 1_700_000_000_000n + BigInt(i * 100) }),
        4,
      );
    }
    log.close();
    const logs = fs
      .readdirSync(tp)
      .filter((f) => f.endsWith('.log'))
      .sort();
    assert.ok(logs.length >= 2);
    for (const name of logs) {
      assert.match(name, /^\d{20}\.log$/);
      const base = BigInt(name.slice(0, 20));
      const data = fs.readFileSync(path.join(tp, name));
      // walk the batches with plain reads; record position and last offset of each
      const batches: { position: number; last: bigint; maxTs: bigint }[] = [];
      let expectedBase = base;
      for (let pos = 0; pos < data.length; ) {
        const length = data.readInt32BE(pos + 8);
        assert.equal(data.readBigInt64BE(pos), expectedBase);
        assert.equal(data.readInt32BE(pos + 12), 4);
        assert.equal(data.readInt8(pos + 16), 2);
        assert.equal(data.readUInt32BE(pos + 17), crc32c(data.subarray(pos + 21, pos + 12 + length)) >>> 0);
        const last = expectedBase + BigInt(data.readInt32BE(pos + 23));
        batches.push({ position: pos, last, maxTs: data.readBigInt64BE(pos + 35) });
        expectedBase = last + 1n;
        pos += 12 + length;
      }
      // .index: 8-byte entries, int32 (offset − base), int32 position, one per > 4096 bytes written
      const index = fs.readFileSync(path.join(tp, `${name.slice(0, 20)}.index`));
      assert.equal(index.length % 8, 0);
      let lastIndexed = 0;
      const expected: number[] = [];
      for (const b of batches) {
        if (b.position - lastIndexed > 4096) {
          expected.push(Number(b.last - base), b.position);
          lastIndexed = b.position;
        }
      }
      const got: number[] = [];
      for (let i = 0; i < index.length; i += 8) got.push(index.readInt32BE(i), index.readInt32BE(i + 4));
      assert.deepEqual(got, expected);
      // .timeindex: 12-byte entries, int64 timestamp, int32 (offset − base); last entry = max timestamp
      const timeIndex = fs.readFileSync(path.join(tp, `${name.slice(0, 20)}.timeindex`));
      assert.equal(timeIndex.length % 12, 0);
      const lastBatch = batches[batches.length - 1]!;
      assert.equal(timeIndex.readBigInt64BE(timeIndex.length - 12), lastBatch.maxTs);
      assert.equal(timeIndex.readInt32BE(timeIndex.length - 4), Number(lastBatch.last - base));
    }
    assert.equal(fs.readFileSync(path.join(tp, 'leader-epoch-checkpoint'), 'utf8'), '0\n1\n4 0\n');
  } finally {
    cleanup();
  }
});
