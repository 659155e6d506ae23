import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { KafkaError } from '../../src/protocol/kafka-error.js';
import { isControl } from '../../src/protocol/records/batch.js';
import { decodeRecords, encodeBatch } from '../../src/protocol/records/codec.js';
import { encodeEndTxnMarkerBatch, readEndTxnMarker } from '../../src/protocol/records/end-txn-marker.js';
import { batchesIn } from '../../src/protocol/records/validate.js';
import { cleanableOffsets } from '../../src/storage/cleanable.js';
import { dumpLog } from '../../src/storage/dump-log.js';
import { NodeFileSystem } from '../../src/storage/fs.js';
import { Log } from '../../src/storage/log.js';
import { logConfig } from '../../src/storage/log-config.js';
import { cleanOnce, type TestContext, tempDir, testContext } from './helpers.js';

const T0 = 1_700_000_000_000n;

/** A transactional producer's batch of `count` records (ProducerAppendInfo's data batch). */
function txnBatch(producerId: bigint, epoch: number, baseSequence: number, count = 1): Buffer {
  return encodeBatch({
    producerId,
    producerEpoch: epoch,
    baseSequence,
    isTransactional: true,
    baseTimestamp: T0,
    records: Array.from({ length: count }, (_, i) => ({
      key: null,
      value: Buffer.from(`t${baseSequence + i}`),
    })),
  });
}

function idempotent(producerId: bigint, epoch: number, baseSequence: number): Buffer {
  return encodeBatch({
    producerId,
    producerEpoch: epoch,
    baseSequence,
    baseTimestamp: T0,
    records: [{ key: null, value: Buffer.from('i') }],
  });
}

function marker(producerId: bigint, epoch: number, commit: boolean, coordinatorEpoch = 0): Buffer {
  return encodeEndTxnMarkerBatch({
    producerId,
    producerEpoch: epoch,
    coordinatorEpoch,
    commit,
    timestamp: T0,
  });
}

function open(dir: string, ctx: TestContext, clean = true, segmentBytes = 1024 * 1024): Log {
  return Log.open({
    dir: path.join(dir, 't-0'),
    topic: 't',
    partition: 0,
    config: logConfig({ segmentBytes }),
    ctx,
    hadCleanShutdown: clean,
  });
}

/** A compacted log of small segments that any dirt makes cleanable. */
function openCompacted(dir: string, ctx: TestContext): Log {
  return Log.open({
    dir: path.join(dir, 't-0'),
    topic: 't',
    partition: 0,
    config: logConfig({ compact: true, delete: false, segmentBytes: 400, minCleanableDirtyRatio: 0.01 }),
    ctx,
    hadCleanShutdown: true,
  });
}

const isCode = (code: number) => (e: unknown) => e instanceof KafkaError && e.code === code;

test('a marker batch round-trips: type and coordinator epoch; an emptied control batch has none', () => {
  assert.deepEqual(readEndTxnMarker(marker(3n, 1, true, 7)), { type: 1, coordinatorEpoch: 7 });
  assert.deepEqual(readEndTxnMarker(marker(3n, 1, false, 0)), { type: 0, coordinatorEpoch: 0 });
  const empty = encodeBatch({ isControl: true, isTransactional: true, producerId: 3n, records: [] });
  assert.equal(readEndTxnMarker(empty), null);
});

test('the LSO stays at an ongoing transaction’s first offset until its marker is below the HW', () => {
  const { dir, cleanup } = tempDir();
  try {
    const log = open(dir, testContext());
    log.appendAsLeader(idempotent(9n, 0, 0), 0); // 0
    log.appendAsLeader(txnBatch(1n, 0, 0, 2), 0); // 1-2
    log.appendAsLeader(idempotent(9n, 0, 1), 0); // 3
    log.appendAsLeader(txnBatch(2n, 0, 0), 0); // 4
    log.updateHighWatermark(log.logEndOffset);
    assert.equal(log.highWatermark, 5n);
    assert.equal(log.lastStableOffset, 1n);
    assert.deepEqual(log.producerState.ongoingTransactions(), [
      { producerId: 1n, firstOffset: 1n },
      { producerId: 2n, firstOffset: 4n },
    ]);
    log.appendAsLeader(marker(1n, 0, true), 0, 'coordinator'); // 5
    assert.equal(log.lastStableOffset, 1n, 'the COMMIT is not yet below the HW');
    log.updateHighWatermark(5n);
    assert.equal(log.lastStableOffset, 1n, 'the HW at the marker is not past it');
    log.updateHighWatermark(6n);
    assert.equal(log.lastStableOffset, 4n, 'producer 2’s transaction holds it now');
    log.appendAsLeader(txnBatch(2n, 0, 1), 0); // 6: same transaction
    log.appendAsLeader(marker(2n, 0, false), 0, 'coordinator'); // 7
    log.updateHighWatermark(log.logEndOffset);
    assert.equal(log.lastStableOffset, 8n);
    assert.equal(log.producerState.firstUnstableOffset(), null);
    assert.equal(log.producerState.entry(2n)?.currentTxnFirstOffset, -1n);
    assert.equal(log.producerState.entry(2n)?.coordinatorEpoch, 0);
    // a marker for a producer without data here ends nothing
    log.appendAsLeader(marker(2n, 0, true), 0, 'coordinator');
    log.updateHighWatermark(log.logEndOffset);
    assert.equal(log.lastStableOffset, log.highWatermark);
    log.close();
  } finally {
    cleanup();
  }
});

test('markers are checked as Kafka’s leader does: origin, producer epoch, coordinator epoch, transaction state', () => {
  const { dir, cleanup } = tempDir();
  try {
    const log = open(dir, testContext());
    assert.throws(
      () => log.appendAsLeader(marker(1n, 0, true), 0),
      isCode(87),
      'clients write no control records',
    );
    log.appendAsLeader(txnBatch(1n, 1, 0), 0);
    assert.throws(
      () => log.appendAsLeader(idempotent(1n, 1, 1), 0),
      isCode(48),
      'a non-transactional write inside a transaction is INVALID_TXN_STATE',
    );
    assert.throws(
      () => log.appendAsLeader(idempotent(1n, 0, 0), 0),
      isCode(47),
      'the epoch is checked first',
    );
    assert.throws(() => log.appendAsLeader(marker(1n, 0, true, 3), 0, 'coordinator'), isCode(47));
    log.appendAsLeader(marker(1n, 1, true, 3), 0, 'coordinator');
    log.appendAsLeader(txnBatch(1n, 1, 1), 0);
    assert.throws(
      () => log.appendAsLeader(marker(1n, 1, false, 2), 0, 'coordinator'),
      isCode(52),
      'a zombie coordinator is TRANSACTION_COORDINATOR_FENCED',
    );
    // the coordinator fences the producer: ABORT at a bumped epoch ends the transaction of the old one
    log.appendAsLeader(marker(1n, 2, false, 4), 0, 'coordinator');
    const e = log.producerState.entry(1n)!;
    assert.deepEqual([e.producerEpoch, e.coordinatorEpoch, e.currentTxnFirstOffset], [2, 4, -1n]);
    assert.throws(() => log.appendAsLeader(txnBatch(1n, 1, 2), 0), isCode(47), 'the fenced epoch is refused');
    log.updateHighWatermark(log.logEndOffset);
    assert.equal(log.lastStableOffset, log.logEndOffset);
    log.close();
  } finally {
    cleanup();
  }
});

test('ongoing transactions survive a clean restart (snapshot), a crash (replay) and a truncation', () => {
  const { dir, cleanup } = tempDir();
  try {
    const log = open(dir, testContext(), true, 300);
    log.appendAsLeader(txnBatch(1n, 0, 0, 3), 0); // 0-2
    for (let s = 0; s < 6; s++) log.appendAsLeader(idempotent(9n, 0, s), 0); // rolls segments
    log.appendAsLeader(txnBatch(2n, 0, 0), 0);
    const markerOffset = log.logEndOffset;
    log.appendAsLeader(marker(2n, 0, true, 1), 0, 'coordinator');
    log.close();

    const again = open(dir, testContext(), true, 300);
    again.updateHighWatermark(again.logEndOffset);
    assert.equal(again.lastStableOffset, 0n, 'producer 1’s transaction came back from the snapshot');
    assert.equal(again.producerState.entry(2n)?.coordinatorEpoch, 1);
    again.appendAsLeader(marker(1n, 0, false), 0, 'coordinator');
    again.local.abandon(); // crash after the ABORT: no snapshot holds it

    const recovered = open(dir, testContext(), false, 300);
    recovered.updateHighWatermark(recovered.logEndOffset);
    assert.equal(recovered.lastStableOffset, recovered.logEndOffset, 'the replayed ABORT ended it');
    recovered.truncateTo(markerOffset);
    assert.deepEqual(recovered.producerState.ongoingTransactions(), [
      { producerId: 1n, firstOffset: 0n },
      { producerId: 2n, firstOffset: markerOffset - 1n },
    ]);
    assert.equal(recovered.lastStableOffset, 0n);
    recovered.close();
  } finally {
    cleanup();
  }
});

test('a follower appending the leader’s batches rebuilds the same transactions and .txnindex', () => {
  const { dir, cleanup } = tempDir();
  try {
    const leader = open(path.join(dir), testContext());
    const chunks: Buffer[] = [];
    const append = (b: Buffer, origin: 'client' | 'coordinator' = 'client') => {
      leader.appendAsLeader(b, 3, origin); // rewrites the offsets in b
      chunks.push(b);
    };
    append(txnBatch(1n, 0, 0, 2));
    append(txnBatch(2n, 0, 0));
    append(marker(1n, 0, false, 5), 'coordinator');
    append(txnBatch(1n, 0, 2));
    append(txnBatch(3n, 0, 0));
    append(marker(3n, 0, false, 5), 'coordinator');
    const follower = Log.open({
      dir: path.join(dir, 'f', 't-0'),
      topic: 't',
      partition: 0,
      config: logConfig({}),
      ctx: testContext(),
      hadCleanShutdown: true,
    });
    follower.appendAsFollower(Buffer.concat(chunks));
    for (const l of [leader, follower]) l.updateHighWatermark(l.logEndOffset);
    assert.deepEqual(
      follower.producerState.ongoingTransactions(),
      leader.producerState.ongoingTransactions(),
    );
    assert.deepEqual(follower.producerState.ongoingTransactions(), [
      { producerId: 2n, firstOffset: 2n },
      { producerId: 1n, firstOffset: 4n },
    ]);
    assert.equal(follower.producerState.entry(1n)?.coordinatorEpoch, 5);
    assert.equal(follower.lastStableOffset, 2n);
    const index = (l: Log) => fs.readFileSync(l.local.segments.active().txnIndex.path);
    assert.equal(index(leader).length, 68);
    assert.deepEqual(index(follower), index(leader));
    leader.close();
    follower.close();
  } finally {
    cleanup();
  }
});

const txnIndexFiles = (dir: string) =>
  fs
    .readdirSync(path.join(dir, 't-0'))
    .filter((f) => f.includes('.txnindex'))
    .sort();

test('an ABORT writes Kafka’s 34-byte entry into the .txnindex of its segment; a COMMIT writes none', () => {
  const { dir, cleanup } = tempDir();
  try {
    const log = open(dir, testContext(), true, 300);
    log.appendAsLeader(txnBatch(1n, 0, 0, 2), 0); // 0-1
    log.appendAsLeader(txnBatch(2n, 0, 0), 0); // 2
    log.appendAsLeader(marker(1n, 0, false), 0, 'coordinator'); // 3: aborts 0-1 while 2 is ongoing
    log.appendAsLeader(marker(2n, 0, true), 0, 'coordinator'); // 4
    for (let s = 0; s < 4; s++) log.appendAsLeader(idempotent(9n, 0, s), 0); // roll
    log.appendAsLeader(txnBatch(2n, 0, 1), 0);
    const abortAt = log.logEndOffset;
    log.appendAsLeader(marker(2n, 0, false), 0, 'coordinator');
    log.updateHighWatermark(log.logEndOffset);
    const first = log.local.segments.first()!;
    const last = log.local.segments.active();
    assert.notEqual(first, last);
    assert.deepEqual(
      first.txnIndex.all().map((t) => [t.producerId, t.firstOffset, t.lastOffset, t.lastStableOffset]),
      [[1n, 0n, 3n, 2n]],
    );
    const bytes = fs.readFileSync(first.txnIndex.path);
    assert.equal(bytes.length, 34);
    assert.deepEqual(
      [
        bytes.readInt16BE(0),
        bytes.readBigInt64BE(2),
        bytes.readBigInt64BE(10),
        bytes.readBigInt64BE(18),
        bytes.readBigInt64BE(26),
      ],
      [0, 1n, 0n, 3n, 2n],
    );
    assert.deepEqual(
      last.txnIndex.all().map((t) => [t.producerId, t.lastOffset, t.lastStableOffset]),
      [[2n, abortAt, abortAt + 1n]],
    );
    // what a read_committed fetch of each range is told
    const ids = (from: bigint, to: bigint) =>
      log.collectAbortedTransactions(from, to).map((t) => t.firstOffset);
    assert.deepEqual(ids(0n, 1n), [0n]);
    assert.deepEqual(ids(4n, 6n), [], 'producer 1’s marker is before the range');
    assert.deepEqual(ids(0n, log.logEndOffset), [0n, abortAt - 1n]);
    assert.deepEqual(ids(abortAt, log.logEndOffset), [abortAt - 1n]);
    const out = dumpLog(new NodeFileSystem(), [first.txnIndex.path], {
      printDataLog: false,
      deepIteration: false,
      indexSanityCheck: false,
    }).out;
    assert.deepEqual(out.slice(1), [
      'version: 0 producerId: 1 firstOffset: 0 lastOffset: 3 lastStableOffset: 2',
    ]);
    log.close();
  } finally {
    cleanup();
  }
});

test('the .txnindex is truncated with its segment, rebuilt by recovery, deleted by retention', () => {
  const { dir, cleanup } = tempDir();
  try {
    const ctx = testContext();
    const log = open(dir, ctx, true, 300);
    log.appendAsLeader(txnBatch(1n, 0, 0, 2), 0); // 0-1
    log.appendAsLeader(marker(1n, 0, false), 0, 'coordinator'); // 2
    log.appendAsLeader(txnBatch(1n, 0, 2), 0); // 3
    log.appendAsLeader(marker(1n, 0, false), 0, 'coordinator'); // 4
    const entries = () =>
      log.local.segments.values().flatMap((s) => s.txnIndex.all().map((t) => [t.firstOffset, t.lastOffset]));
    assert.deepEqual(entries(), [
      [0n, 2n],
      [3n, 4n],
    ]);
    log.truncateTo(4n);
    assert.deepEqual(entries(), [[0n, 2n]], 'the second ABORT is gone with its marker');
    assert.deepEqual(log.producerState.ongoingTransactions(), [{ producerId: 1n, firstOffset: 3n }]);
    log.appendAsLeader(marker(1n, 0, false), 0, 'coordinator'); // 4 again
    const leo = log.logEndOffset;
    log.local.abandon(); // crash
    const indexPath = path.join(dir, 't-0', '00000000000000000000.txnindex');
    fs.unlinkSync(indexPath);
    const recovered = open(dir, testContext(), false, 300);
    assert.equal(recovered.logEndOffset, leo);
    assert.deepEqual(
      recovered.local.segments
        .values()
        .flatMap((s) => s.txnIndex.all().map((t) => [t.firstOffset, t.lastOffset])),
      [
        [0n, 2n],
        [3n, 4n],
      ],
      'the recovery replayed both ABORTs into the index',
    );
    assert.equal(fs.readFileSync(indexPath).length, 34, 'the first ABORT, back in its segment’s file');
    for (let s = 0; s < 6; s++) recovered.appendAsLeader(idempotent(9n, 0, s), 0); // roll past it
    recovered.updateHighWatermark(recovered.logEndOffset);
    recovered.maybeIncrementLogStartOffset(recovered.local.segments.values()[1]!.baseOffset, 'test');
    assert.ok(recovered.deleteOldSegments() >= 1);
    const files = txnIndexFiles(dir);
    assert.ok(files.includes('00000000000000000000.txnindex.deleted'), files.join());
    assert.ok(!files.includes('00000000000000000000.txnindex'), 'renamed with its segment');
    recovered.close();
  } finally {
    cleanup();
  }
});

test('a cleaned segment keeps the markers and the aborted transactions of the segments it replaces', () => {
  const { dir, cleanup } = tempDir();
  try {
    const ctx = testContext();
    const log = openCompacted(dir, ctx);
    const keyed = (pid: bigint, seq: number, key: string) =>
      encodeBatch({
        producerId: pid,
        producerEpoch: 0,
        baseSequence: seq,
        isTransactional: true,
        baseTimestamp: T0,
        records: [{ key: Buffer.from(key), value: Buffer.from(`${key}${seq}`) }],
      });
    log.appendAsLeader(keyed(1n, 0, 'a'), 0);
    log.appendAsLeader(marker(1n, 0, false), 0, 'coordinator');
    for (let i = 0; i < 12; i++) {
      log.appendAsLeader(
        encodeBatch({ baseTimestamp: T0, records: [{ key: Buffer.from('b'), value: Buffer.from(`b${i}`) }] }),
        0,
      );
    }
    log.updateHighWatermark(log.logEndOffset);
    const before = log.collectAbortedTransactions(0n, log.logEndOffset);
    assert.equal(before.length, 1);
    cleanOnce(log, ctx, dir);
    assert.ok(log.local.segments.size < 4, 'the cleaning replaced segments');
    assert.deepEqual(log.collectAbortedTransactions(0n, log.logEndOffset), before);
    assert.ok(
      txnIndexFiles(dir).includes('00000000000000000000.txnindex'),
      'the cleaned first segment has the entry',
    );
    log.close();
  } finally {
    cleanup();
  }
});

/** Every data record of the log as `offset key=value`, markers left out. */
function dataRecords(log: Log): string[] {
  const out: string[] = [];
  for (const s of log.local.segments.values()) {
    const buf = Buffer.from(s.reader(s.size).view(0, s.size));
    for (const e of batchesIn(buf)) {
      const d = decodeRecords(buf.subarray(e.pos, e.pos + e.size), { decompress: true });
      if (isControl(d.header.attributes)) continue;
      for (const r of d.records)
        out.push(`${d.header.baseOffset + BigInt(r.offsetDelta)} ${r.key}=${r.value}`);
    }
  }
  return out;
}

test('the cleaner removes aborted records, which never shadow a committed one, and stops at an open transaction', () => {
  const { dir, cleanup } = tempDir();
  try {
    const ctx = testContext();
    const log = openCompacted(dir, ctx);
    const rec = (key: string, value: string, txn?: { pid: bigint; seq: number }) =>
      encodeBatch({
        ...(txn && { producerId: txn.pid, producerEpoch: 0, baseSequence: txn.seq, isTransactional: true }),
        baseTimestamp: T0,
        records: [{ key: Buffer.from(key), value: Buffer.from(value) }],
      });
    log.appendAsLeader(rec('k', 'committed'), 0); // 0
    log.appendAsLeader(rec('k', 'aborted', { pid: 1n, seq: 0 }), 0); // 1
    log.appendAsLeader(rec('j', 'aborted', { pid: 1n, seq: 1 }), 0); // 2
    log.appendAsLeader(rec('c', 'in-commit', { pid: 2n, seq: 0 }), 0); // 3
    log.appendAsLeader(marker(1n, 0, false), 0, 'coordinator'); // 4
    log.appendAsLeader(marker(2n, 0, true), 0, 'coordinator'); // 5
    for (let i = 0; i < 10; i++) log.appendAsLeader(rec('b', `b${i}`), 0); // 6-15
    log.appendAsLeader(rec('k', 'open', { pid: 3n, seq: 0 }), 0); // 16: left open
    for (let i = 0; i < 6; i++) log.appendAsLeader(rec('d', `d${i}`), 0); // 17-22
    log.updateHighWatermark(log.logEndOffset);
    assert.equal(log.lastStableOffset, 16n);
    assert.equal(cleanableOffsets(log, undefined, ctx.clock.nowMs()).firstUncleanableDirtyOffset, 16n);
    cleanOnce(log, ctx, dir);
    const after = dataRecords(log);
    assert.ok(after.includes('0 k=committed'), 'the aborted k did not shadow it');
    assert.ok(!after.some((r) => r.includes('=aborted')), after.join());
    assert.ok(after.includes('3 c=in-commit'));
    assert.ok(after.includes('16 k=open'), 'past the LSO nothing is cleaned');
    assert.ok(!after.includes('6 b=b0'), 'the cleaning did run');
    log.close();
  } finally {
    cleanup();
  }
});

test('a damaged .txnindex is rebuilt from the log when the log opens', () => {
  const { dir, cleanup } = tempDir();
  try {
    const log = open(dir, testContext(), true, 300);
    log.appendAsLeader(txnBatch(1n, 0, 0), 0); // 0
    log.appendAsLeader(marker(1n, 0, false), 0, 'coordinator'); // 1
    for (let s = 0; s < 6; s++) log.appendAsLeader(idempotent(9n, 0, s), 0); // roll: snapshots past it
    log.close();
    const indexPath = path.join(dir, 't-0', '00000000000000000000.txnindex');
    const good = fs.readFileSync(indexPath);
    const bad = Buffer.from(good);
    bad.writeInt16BE(9, 0);
    fs.writeFileSync(indexPath, bad);
    const ctx = testContext();
    const again = open(dir, ctx, true, 300);
    assert.deepEqual(fs.readFileSync(indexPath), good);
    assert.deepEqual(
      again.collectAbortedTransactions(0n, again.logEndOffset).map((t) => t.firstOffset),
      [0n],
    );
    assert.match(ctx.logger.lines.join('\n'), /rebuilding the transaction indexes: .*version 9/);
    again.close();
  } finally {
    cleanup();
  }
});
