import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { crc32c } from '@node-rs/crc32';
import { KafkaError } from '../../src/protocol/kafka-error.js';
import { encodeBatch } from '../../src/protocol/records/codec.js';
import { dumpLog } from '../../src/storage/dump-log.js';
import { NodeFileSystem } from '../../src/storage/fs.js';
import { Log } from '../../src/storage/log.js';
import { logConfig } from '../../src/storage/log-config.js';
import { decodeSnapshot, encodeSnapshot } from '../../src/storage/producer-state.js';
import { type TestContext, tempDir, testContext } from './helpers.js';

function idempotent(producerId: bigint, epoch: number, baseSequence: number, count: number): Buffer {
  return encodeBatch({
    producerId,
    producerEpoch: epoch,
    baseSequence,
    baseTimestamp: 1_700_000_000_000n,
    records: Array.from({ length: count }, (_, i) => ({
      key: null,
      value: Buffer.from(`v${baseSequence + i}`),
    })),
  });
}

function open(dir: string, ctx: TestContext, clean = true): Log {
  return Log.open({
    dir: path.join(dir, 't-0'),
    topic: 't',
    partition: 0,
    config: logConfig({ segmentBytes: 400 }),
    ctx,
    hadCleanShutdown: clean,
  });
}

const isCode = (code: number) => (e: unknown) => e instanceof KafkaError && e.code === code;

test('duplicates are acknowledged with their original offsets; sequence and epoch are checked', () => {
  const { dir, cleanup } = tempDir();
  try {
    const log = open(dir, testContext());
    const first = log.appendAsLeader(idempotent(7n, 0, 0, 3), 1);
    assert.deepEqual([first.firstOffset, first.lastOffset, first.duplicate], [0n, 2n, false]);
    log.appendAsLeader(idempotent(7n, 0, 3, 2), 1);
    const size = log.size;
    const dup = log.appendAsLeader(idempotent(7n, 0, 0, 3), 1);
    assert.deepEqual([dup.firstOffset, dup.lastOffset, dup.duplicate], [0n, 2n, true]);
    assert.equal(log.size, size, 'nothing written for a duplicate');
    assert.throws(() => log.appendAsLeader(idempotent(7n, 0, 9, 1), 1), isCode(45));
    assert.throws(
      () => log.appendAsLeader(idempotent(7n, 1, 4, 1), 1),
      isCode(45),
      'a new epoch starts at sequence 0',
    );
    log.appendAsLeader(idempotent(7n, 1, 0, 1), 1);
    assert.throws(() => log.appendAsLeader(idempotent(7n, 0, 5, 1), 1), isCode(47));
    // two batches of one producer in one append must follow each other
    assert.throws(
      () => log.appendAsLeader(Buffer.concat([idempotent(8n, 0, 0, 1), idempotent(8n, 0, 2, 1)]), 1),
      isCode(45),
    );
    log.appendAsLeader(Buffer.concat([idempotent(8n, 0, 0, 1), idempotent(8n, 0, 1, 1)]), 1);
    assert.equal(log.producerState.entry(8n)?.batches.at(-1)?.lastSeq, 1);
    log.close();
  } finally {
    cleanup();
  }
});

test('snapshots use Kafka’s layout: version 1, CRC-32C of the rest, 46-byte entries', () => {
  const entries = [
    {
      producerId: 7n,
      producerEpoch: 2,
      batches: [{ firstSeq: 3, lastSeq: 5, firstOffset: 10n, lastOffset: 12n, timestamp: 99n }],
      coordinatorEpoch: -1,
      currentTxnFirstOffset: -1n,
      lastTimestamp: 99n,
    },
  ];
  const buf = encodeSnapshot(entries);
  assert.equal(buf.length, 10 + 46);
  assert.equal(buf.readInt16BE(0), 1);
  assert.equal(buf.readUInt32BE(2), crc32c(buf.subarray(6)) >>> 0);
  assert.equal(buf.readInt32BE(6), 1);
  assert.equal(buf.readBigInt64BE(10), 7n);
  assert.equal(buf.readInt16BE(18), 2);
  assert.equal(buf.readInt32BE(20), 5); // last sequence
  assert.equal(buf.readBigInt64BE(24), 12n); // last offset
  assert.equal(buf.readInt32BE(32), 2); // offset delta
  assert.equal(buf.readBigInt64BE(36), 99n);
  assert.deepEqual(decodeSnapshot(buf), entries);
  buf[20]! ^= 1;
  assert.throws(() => decodeSnapshot(buf), /CRC mismatch/);
});

test('producer state survives a clean restart (snapshot) and a crash (rebuilt from the log)', () => {
  const { dir, cleanup } = tempDir();
  try {
    const log = open(dir, testContext());
    for (let s = 0; s < 20; s += 2) log.appendAsLeader(idempotent(5n, 0, s, 2), 0);
    const leo = log.logEndOffset;
    log.close();
    const tp = path.join(dir, 't-0');
    const snapshots = fs.readdirSync(tp).filter((f) => f.endsWith('.snapshot'));
    assert.ok(snapshots.includes(`${leo.toString().padStart(20, '0')}.snapshot`));
    assert.ok(snapshots.length <= 3);
    const lines = dumpLog(
      new NodeFileSystem(),
      [path.join(tp, `${leo.toString().padStart(20, '0')}.snapshot`)],
      {
        printDataLog: false,
        deepIteration: false,
        indexSanityCheck: false,
      },
    ).out;
    assert.match(
      lines[1]!,
      /^producerId: 5 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: \d+ firstSequence: 18 lastSequence: 19 lastOffset: 19 offsetDelta: 1 timestamp: \d+$/,
    );

    const again = open(dir, testContext());
    assert.equal(again.appendAsLeader(idempotent(5n, 0, 18, 2), 0).duplicate, true);
    assert.throws(() => again.appendAsLeader(idempotent(5n, 0, 5, 1), 0), isCode(45));
    again.appendAsLeader(idempotent(5n, 0, 20, 1), 0);
    again.local.abandon(); // crash: no snapshot at the new LEO
    const afterCrash = open(dir, testContext(), false);
    assert.equal(afterCrash.appendAsLeader(idempotent(5n, 0, 20, 1), 0).duplicate, true);
    // truncation rewinds the producer's sequence
    afterCrash.truncateTo(10n);
    assert.equal(afterCrash.producerState.entry(5n)?.batches.at(-1)?.lastSeq, 9);
    afterCrash.appendAsLeader(idempotent(5n, 0, 10, 2), 0);
    afterCrash.truncateFullyAndStartAt(100n);
    assert.equal(afterCrash.producerState.entry(5n), undefined);
    assert.deepEqual(
      fs.readdirSync(tp).filter((f) => f.endsWith('.snapshot')),
      [],
    );
    afterCrash.close();
  } finally {
    cleanup();
  }
});

test("a close writes a producer snapshot only when the state moved past the newest one (Kafka's takeSnapshot)", () => {
  const { dir, cleanup } = tempDir();
  try {
    const tp = path.join(dir, 't-0');
    const snapshots = () => fs.readdirSync(tp).filter((f) => f.endsWith('.snapshot'));
    open(dir, testContext()).close();
    assert.deepEqual(snapshots(), [], 'an empty log: nothing worth a snapshot');
    const log = open(dir, testContext());
    log.appendAsLeader(idempotent(5n, 0, 0, 3), 0);
    log.close();
    assert.deepEqual(snapshots(), ['00000000000000000003.snapshot']);
    const file = path.join(tp, '00000000000000000003.snapshot');
    const inode = fs.statSync(file).ino;
    open(dir, testContext()).close();
    assert.equal(fs.statSync(file).ino, inode, 'closed again without appends: not rewritten');
    const more = open(dir, testContext());
    more.appendAsLeader(idempotent(5n, 0, 3, 1), 0);
    more.close();
    assert.deepEqual(snapshots(), ['00000000000000000003.snapshot', '00000000000000000004.snapshot']);
  } finally {
    cleanup();
  }
});
