import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { MemoryLogger } from '../../src/common/logger.js';
import { defaultPartitionData, type PartitionData } from '../../src/protocol/generated/FetchResponse.js';
import { encodeBatch } from '../../src/protocol/records/codec.js';
import { encodeEndTxnMarkerBatch } from '../../src/protocol/records/end-txn-marker.js';
import { completeBatches, PartitionFollower, type ReplicationEvent } from '../../src/replication/follower.js';
import { readForFollower } from '../../src/replication/leader-fetch.js';
import { PartitionLeaderState } from '../../src/replication/leader-state.js';
import { localOffsetLag } from '../../src/replication/offset-lag.js';
import type { Log } from '../../src/storage/log.js';
import { makeBatch } from '../storage/helpers.js';
import { leaderContext, openLog, state, tempDir, testContext } from './helpers.js';

/** Leader broker 1 and follower broker 3 of t-0, each with its own log dir. */
function pair(segmentBytes = 4096) {
  const { dir, cleanup } = tempDir('skiff-follower-');
  const lctx = testContext();
  const fctx = testContext();
  const leaderLog = openLog(path.join(dir, 'b1', 't-0'), lctx, segmentBytes);
  const followerLog = openLog(path.join(dir, 'b3', 't-0'), fctx, segmentBytes);
  const ctx = leaderContext(lctx.clock);
  ctx.minIsr = 1;
  const leader = new PartitionLeaderState('t', 0, leaderLog, ctx);
  const events: ReplicationEvent[] = [];
  const flogger = new MemoryLogger();
  const follower = new PartitionFollower('t', 0, 'AAAAAAAAAAAAAAAAAAAAAA', followerLog, {
    localBrokerId: 3,
    clock: fctx.clock,
    logger: flogger,
    onEvent: (e) => events.push(e),
  });
  /** One follower fetch round against the leader, without a network. */
  const round = (maxBytes = 1 << 20): string => {
    const sent = follower.sent();
    const p = follower.fetchPartition(maxBytes);
    const r = readForFollower(
      leader,
      3,
      -1n,
      { ...p, maxBytes: p.partitionMaxBytes },
      true,
      lctx.clock.nowMs(),
    );
    const pd: PartitionData = {
      ...defaultPartitionData(),
      errorCode: r.errorCode,
      highWatermark: r.highWatermark,
      logStartOffset: r.logStartOffset,
      divergingEpoch: r.divergingEpoch ?? { epoch: -1, endOffset: -1n },
      records: r.records,
    };
    const outcome = follower.handlePartitionData(pd, sent);
    if (outcome.kind === 'out-of-range')
      follower.handleLeaderOffsets(leaderLog.logStartOffset, leaderLog.logEndOffset);
    return outcome.kind;
  };
  return { dir, cleanup, lctx, fctx, leaderLog, followerLog, leader, follower, events, flogger, round };
}

/** `batches` batches of 6 records each (so offset 350 falls inside the batch at 348). */
function produce(leader: PartitionLeaderState, batches: number): void {
  for (let i = 0; i < batches; i++)
    leader.appendAsLeader(makeBatch({ count: 6, valueBytes: 20, seed: i }), 1);
}

test('completeBatches drops a cut last batch', () => {
  const a = makeBatch({ count: 2 });
  const b = makeBatch({ count: 3 });
  const both = Buffer.concat([a, b]);
  assert.equal(completeBatches(both).length, both.length);
  assert.equal(completeBatches(both.subarray(0, both.length - 5)).length, a.length);
  assert.equal(completeBatches(both.subarray(0, 7)).length, 0);
});

test('catch-up: the follower appends, HW = min(leader HW, LEO), log start follows the leader', () => {
  const t = pair();
  try {
    t.leader.applyPartitionState(state({ leaderEpoch: 1, isr: [1] }));
    t.follower.makeFollower(1, 1);
    produce(t.leader, 10);
    assert.equal(t.round(200), 'appended');
    assert.ok(t.followerLog.logEndOffset > 0n && t.followerLog.logEndOffset < 60n, 'a partial fetch');
    while (t.followerLog.logEndOffset < 60n) t.round(200);
    t.round();
    assert.equal(t.followerLog.highWatermark, t.leaderLog.highWatermark);
    assert.equal(t.followerLog.highWatermark, 60n);
    t.leaderLog.maybeIncrementLogStartOffset(13n, 'delete records');
    t.round();
    assert.equal(t.followerLog.logStartOffset, 13n);
    assert.match(
      t.fctx.logger.lines.join('\n'),
      /incremented log start offset to 13 due to leader offset increment/,
    );
    assert.equal(t.follower.fetchOffset, 60n);
    assert.equal(t.follower.lastFetchedEpoch, 1);
  } finally {
    t.cleanup();
  }
});

test('seed 13.3 experiment 3: a follower behind the leader log start rebuilds from the straddling batch', () => {
  const t = pair(2048);
  try {
    t.leader.applyPartitionState(state({ leaderEpoch: 1, isr: [1, 3] }));
    t.follower.makeFollower(1, 1);
    produce(t.leader, 50); // 0..299
    while (t.followerLog.logEndOffset < 300n) t.round();
    t.round();
    const sizeBefore = t.followerLog.size;
    // The follower stops and leaves the ISR; the leader takes 100 more records (to 400) and
    // deletes below 350.
    t.leader.applyPartitionState(state({ leaderEpoch: 1, partitionEpoch: 1, isr: [1] }));
    // Past replica.lag.time.max.ms: the stopped follower no longer holds the HW back.
    t.lctx.clock.advance(31_000);
    produce(t.leader, 17); // 300..401
    t.leaderLog.maybeIncrementLogStartOffset(350n, 'delete records');
    assert.ok(t.leaderLog.deleteOldSegments() > 0);
    // The follower comes back: its LEO 300 is below the leader's log start 350.
    t.follower.makeFollower(1, 2);
    t.leader.applyPartitionState(state({ leaderEpoch: 2, isr: [1] }));
    assert.equal(t.round(), 'out-of-range');
    assert.equal(t.round(), 'appended');
    // One line and one event, once the first batch shows where the log restarts.
    assert.equal(t.events.length, 1);
    const e = t.events[0]!;
    assert.equal(e.kind, 'rebuild');
    assert.deepEqual(
      e.kind === 'rebuild' ? [e.oldLogEndOffset, e.newLogStartOffset, e.restartOffset, e.bytesDiscarded] : [],
      [300n, 350n, 348n, sizeBefore],
    );
    const rebuildLines = t.flogger.lines.filter((l) => l.includes('Rebuilding partition t-0'));
    assert.equal(rebuildLines.length, 1);
    assert.match(
      rebuildLines[0]!,
      /local log end offset 300 is below the leader's log start offset 350; .*\(\d+ bytes.*log restarted at offset 348 .*log start offset 350/,
    );
    // The first batch holds 348..353: the log restarts at 348, the log start stays 350.
    assert.equal(t.followerLog.local.segments.first()!.baseOffset, 348n);
    assert.equal(t.followerLog.logStartOffset, 350n);
    while (t.followerLog.logEndOffset < t.leaderLog.logEndOffset) t.round();
    t.round();
    assert.equal(t.followerLog.logEndOffset, t.leaderLog.logEndOffset);
    // Byte for byte from the restart point on (the leader still keeps the segment holding 348).
    const mine = t.followerLog.read(350n, 1 << 20, 'log-end', true).records;
    const theirs = t.leaderLog.read(350n, 1 << 20, 'log-end', true).records;
    assert.ok(mine.equals(theirs.subarray(0, mine.length)) && mine.length > 0);
    const dir = t.followerLog.dir;
    assert.ok(
      fs.readdirSync(dir).some((f) => f.endsWith('.deleted')),
      'old segments wait as .deleted',
    );
    t.fctx.clock.advance(60_000);
    t.fctx.scheduler.runDue();
    assert.ok(!fs.readdirSync(dir).some((f) => f.endsWith('.deleted')), 'gone after file.delete.delay.ms');
    assert.ok(fs.readdirSync(dir).includes('00000000000000000348.log'));
  } finally {
    t.cleanup();
  }
});

test('a follower ahead of the leader truncates by the diverging epoch', () => {
  const t = pair();
  try {
    // Both have epoch 0 data 0..11; the follower also has 12..17 from epoch 1 that the leader
    // never got (it was elected at epoch 2 after an unclean election).
    t.leaderLog.appendAsLeader(makeBatch({ count: 6 }), 0);
    t.leaderLog.appendAsLeader(makeBatch({ count: 6 }), 0);
    t.followerLog.appendAsFollower(t.leaderLog.read(0n, 1 << 20, 'log-end', true).records);
    t.followerLog.appendAsLeader(makeBatch({ count: 6, seed: 9 }), 1);
    t.leader.applyPartitionState(state({ leaderEpoch: 2, isr: [1] }));
    produce(t.leader, 1);
    t.follower.makeFollower(1, 2);
    assert.equal(t.follower.lastFetchedEpoch, 1);
    assert.equal(t.round(), 'truncated');
    assert.equal(t.followerLog.logEndOffset, 12n);
    assert.equal(t.events[0]?.kind, 'truncate');
    assert.equal(t.round(), 'appended');
    assert.equal(t.followerLog.logEndOffset, 18n);
    assert.equal(t.followerLog.leaderEpochCache.latestEpoch(), 2);
    assert.equal(localOffsetLag({ follower: t.follower }), 0n);
  } finally {
    t.cleanup();
  }
});

test('offsetLag of a lagging follower is the leader LEO minus its LEO, not 0; unknown (-1) before any answer', () => {
  const t = pair();
  try {
    t.leader.applyPartitionState(state({ leaderEpoch: 1, isr: [1] }));
    t.follower.makeFollower(1, 1);
    produce(t.leader, 20);
    assert.equal(localOffsetLag({ follower: t.follower }), -1n);
    t.round(300);
    assert.ok(localOffsetLag({ follower: t.follower }) > 0n);
    assert.equal(localOffsetLag({ follower: t.follower }), 120n - t.followerLog.logEndOffset);
  } finally {
    t.cleanup();
  }
});

test("a follower whose LEO is the leader's log start, inside a batch, restarts its log at the batch (Kafka would refuse it forever)", () => {
  const t = pair(2048);
  try {
    // The follower holds epoch-0 batches of 5 records, 0..349, from a former leader.
    for (let o = 0n; o < 350n; o += 5n)
      t.followerLog.appendAsFollower(makeBatch({ baseOffset: o, count: 5, epoch: 0 }));
    // The new leader's log is epoch 1 in batches of 6 (0..401); DeleteRecords moved its log start
    // to 350, inside the batch 348..353, and its epoch-0 history is gone with the deleted segments.
    t.leader.applyPartitionState(state({ leaderEpoch: 1, isr: [1] }));
    produce(t.leader, 67);
    t.leaderLog.maybeIncrementLogStartOffset(350n, 'delete records');
    assert.ok(t.leaderLog.deleteOldSegments() > 0);
    t.follower.makeFollower(1, 1);
    assert.equal(t.follower.fetchOffset, 350n);
    assert.equal(t.round(), 'appended');
    assert.equal(t.followerLog.local.segments.first()!.baseOffset, 348n);
    assert.equal(t.followerLog.logStartOffset, 350n);
    assert.equal(t.events.length, 1);
    const e = t.events[0]!;
    assert.deepEqual(e.kind === 'rebuild' ? [e.oldLogEndOffset, e.newLogStartOffset, e.restartOffset] : [], [
      350n,
      350n,
      348n,
    ]);
    assert.equal(
      t.flogger.lines.filter((l) => l.includes('Restarting partition t-0 at offset 348')).length,
      1,
    );
    while (t.followerLog.logEndOffset < t.leaderLog.logEndOffset) assert.equal(t.round(), 'appended');
    assert.equal(t.followerLog.logEndOffset, 402n);
  } finally {
    t.cleanup();
  }
});

test('transaction markers replicate as batches: the follower rebuilds the leader’s transactions, .txnindex and LSO', () => {
  const t = pair(600);
  try {
    t.leader.applyPartitionState(state({ leaderEpoch: 1, isr: [1] }));
    t.follower.makeFollower(1, 1);
    const txn = (producerId: bigint, seq: number) =>
      encodeBatch({
        producerId,
        producerEpoch: 0,
        baseSequence: seq,
        isTransactional: true,
        baseTimestamp: 1_700_000_000_000n,
        records: [{ key: null, value: Buffer.alloc(100, seq) }],
      });
    const end = (producerId: bigint, commit: boolean) =>
      t.leaderLog.appendAsLeader(
        encodeEndTxnMarkerBatch({ producerId, producerEpoch: 0, coordinatorEpoch: 2, commit, timestamp: 1n }),
        1,
        'coordinator',
      );
    for (let s = 0; s < 4; s++) t.leader.appendAsLeader(txn(7n, s), 1);
    t.leader.appendAsLeader(txn(8n, 0), 1);
    end(7n, false);
    t.leader.appendAsLeader(txn(8n, 1), 1);
    end(8n, true);
    t.leader.appendAsLeader(txn(9n, 0), 1); // left open
    t.leader.maybeIncrementHighWatermark();
    while (t.followerLog.logEndOffset < t.leaderLog.logEndOffset) t.round(300);
    t.round();
    assert.ok(t.leaderLog.local.segments.size > 1, 'the markers are in rolled segments');
    const indexes = (log: Log) =>
      log.local.segments
        .values()
        .map((s) => (fs.existsSync(s.txnIndex.path) ? fs.readFileSync(s.txnIndex.path) : null));
    assert.deepEqual(indexes(t.followerLog), indexes(t.leaderLog));
    assert.equal(indexes(t.leaderLog).filter((b) => b !== null).length, 1);
    assert.deepEqual(t.followerLog.producerState.ongoingTransactions(), [
      { producerId: 9n, firstOffset: 8n },
    ]);
    assert.equal(t.followerLog.producerState.entry(8n)?.coordinatorEpoch, 2);
    assert.equal(t.followerLog.highWatermark, t.leaderLog.highWatermark);
    assert.deepEqual([t.followerLog.lastStableOffset, t.leaderLog.lastStableOffset], [8n, 8n]);
  } finally {
    t.cleanup();
  }
});
