import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import { lastOffsetForLeaderEpoch, readForFollower } from '../../src/replication/leader-fetch.js';
import { PartitionLeaderState } from '../../src/replication/leader-state.js';
import { initialReplicaState, isCaughtUp, updateFetchState } from '../../src/replication/replica-state.js';
import { makeBatch } from '../storage/helpers.js';
import { leaderContext, openLog, settle, state, tempDir, testContext } from './helpers.js';

test('updateFetchState follows Kafka: caught up at the leader LEO, or at the previous fetch', () => {
  let s = initialReplicaState(2, false, 0);
  s = updateFetchState(
    s,
    { fetchOffset: 5n, logStartOffset: 0n, brokerEpoch: 7n, leaderEndOffset: 10n, fetchTimeMs: 100 },
    't-0',
  );
  assert.equal(s.lastCaughtUpTimeMs, 0, 'behind the LEO, never caught up before');
  // Reaches the LEO the leader had at the previous fetch: caught up as of that fetch's time.
  s = updateFetchState(
    s,
    { fetchOffset: 10n, logStartOffset: 0n, brokerEpoch: 7n, leaderEndOffset: 20n, fetchTimeMs: 200 },
    't-0',
  );
  assert.equal(s.lastCaughtUpTimeMs, 100);
  s = updateFetchState(
    s,
    { fetchOffset: 20n, logStartOffset: 0n, brokerEpoch: 7n, leaderEndOffset: 20n, fetchTimeMs: 300 },
    't-0',
  );
  assert.equal(s.lastCaughtUpTimeMs, 300);
  assert.equal(s.lastFetchLeaderLogEndOffset, 20n);
  assert.ok(isCaughtUp(s, 20n, 1_000_000, 10));
  assert.ok(!isCaughtUp(s, 21n, 1_000_000, 10));
  assert.throws(
    () =>
      updateFetchState(
        s,
        { fetchOffset: 20n, logStartOffset: 0n, brokerEpoch: 6n, leaderEndOffset: 20n, fetchTimeMs: 400 },
        't-0',
      ),
    /stale broker epoch/,
  );
});

const kindOf = (l: PartitionLeaderState): string => l.isrState.kind;

function setup(minIsr = 2) {
  const { dir, cleanup } = tempDir('skiff-repl-');
  const sctx = testContext();
  const log = openLog(path.join(dir, 't-0'), sctx);
  const ctx = leaderContext(sctx.clock);
  ctx.minIsr = minIsr;
  const leader = new PartitionLeaderState('t', 0, log, ctx);
  return { dir, cleanup, sctx, log, ctx, leader };
}

function fetch(leader: PartitionLeaderState, id: number, offset: bigint, now: number, lastFetchedEpoch = -1) {
  return readForFollower(
    leader,
    id,
    -1n,
    {
      fetchOffset: offset,
      logStartOffset: 0n,
      currentLeaderEpoch: leader.leaderEpoch,
      lastFetchedEpoch,
      maxBytes: 1 << 20,
    },
    true,
    now,
  );
}

test('HW is the minimum over the maximal ISR and waits for unknown follower LEOs', () => {
  const { cleanup, log, leader, ctx } = setup();
  try {
    leader.applyPartitionState(state());
    assert.equal(log.leaderEpochCache.latestEpoch(), 0);
    leader.appendAsLeader(makeBatch({ count: 5 }), -1);
    assert.equal(log.highWatermark, 0n, 'followers have not fetched');
    fetch(leader, 2, 5n, ctx.clock.nowMs());
    assert.equal(log.highWatermark, 0n, 'follower 3 unknown');
    const r = fetch(leader, 3, 3n, ctx.clock.nowMs());
    assert.equal(r.highWatermarkMoved, true);
    assert.equal(log.highWatermark, 3n);
    assert.deepEqual(leader.checkEnoughReplicasReachOffset(5n), { done: false, errorCode: 0 });
    fetch(leader, 3, 5n, ctx.clock.nowMs());
    assert.equal(log.highWatermark, 5n);
    assert.deepEqual(leader.checkEnoughReplicasReachOffset(5n), { done: true, errorCode: 0 });
  } finally {
    cleanup();
  }
});

test('shrink after replica.lag.time.max.ms (read per check), one change in flight, HW frozen below min ISR', async () => {
  const { cleanup, log, leader, ctx } = setup(3);
  try {
    leader.applyPartitionState(state());
    leader.appendAsLeader(makeBatch({ count: 4 }), -1);
    fetch(leader, 2, 4n, ctx.clock.nowMs());
    fetch(leader, 3, 4n, ctx.clock.nowMs());
    assert.equal(log.highWatermark, 4n);
    leader.appendAsLeader(makeBatch({ count: 4 }), -1);
    ctx.clock.advance(20_000);
    fetch(leader, 2, 8n, ctx.clock.nowMs());
    assert.equal(leader.maybeShrinkIsr(), false, 'within 30 s');
    ctx.lagMs = 10_000; // dynamic: applies at the next check
    assert.equal(leader.maybeShrinkIsr(), true);
    assert.match(
      ctx.logger.lines.join('\n'),
      /Shrinking ISR from 1,2,3 to 1,2\. Leader: \(highWatermark: 4, endOffset: 8\)\. Out of sync replicas: \(brokerId: 3, endOffset: 4, lastCaughtUpTimeMs: \d+\)\./,
    );
    assert.equal(kindOf(leader), 'pending-shrink');
    assert.deepEqual(leader.maximalIsr, [1, 2, 3]);
    assert.equal(leader.maybeShrinkIsr(), false, 'one change in flight');
    const { proposal, answer } = ctx.proposals[0]!;
    assert.deepEqual(proposal.newIsr, [1, 2]);
    answer({ errorCode: 0, leaderId: 1, leaderEpoch: 0, isr: [1, 2], partitionEpoch: 1 });
    await settle();
    assert.deepEqual(leader.isr, [1, 2]);
    assert.equal(leader.partitionEpoch, 1);
    // min.insync.replicas 3 > ISR 2: the HW stays and acks=all is refused before the append.
    assert.equal(log.highWatermark, 4n);
    assert.throws(
      () => leader.checkBeforeAppend(-1),
      (e: { code?: number }) => e.code === 19,
    );
    leader.checkBeforeAppend(1);
    // The reason reaches the controller with the proposal (for the durable history), and the
    // log line's numbers are the event's fields (log.format=json).
    assert.equal(proposal.cause, 'fetch-timeout');
    assert.match(
      proposal.reason,
      /^fetch-timeout: broker 3 sent no fetch for \d+ ms \(replica\.lag\.time\.max\.ms \d+\)/,
    );
    const shrink = ctx.logger.events.find((e) => e.fields.event === 'isr-shrink')!;
    assert.deepEqual(
      [shrink.fields.oldIsr, shrink.fields.newIsr, shrink.fields.highWatermark, shrink.fields.logEndOffset],
      [[1, 2, 3], [1, 2], 4n, 8n],
    );
  } finally {
    cleanup();
  }
});

test('expand when the follower reaches the HW and the epoch start; maximal ISR holds the HW meanwhile', async () => {
  const { cleanup, log, leader, ctx } = setup(1);
  try {
    log.appendAsLeader(makeBatch({ count: 3 }), 0);
    leader.applyPartitionState(state({ isr: [1, 2], leaderEpoch: 1 }));
    assert.equal(leader.leaderEpochStartOffset, 3n);
    leader.appendAsLeader(makeBatch({ count: 3 }), 1);
    fetch(leader, 2, 6n, ctx.clock.nowMs(), 1);
    assert.equal(log.highWatermark, 6n);
    fetch(leader, 3, 2n, ctx.clock.nowMs(), 0);
    assert.equal(kindOf(leader), 'committed', 'below the HW: not yet');
    ctx.ineligible.add(3);
    fetch(leader, 3, 6n, ctx.clock.nowMs(), 1);
    assert.equal(kindOf(leader), 'committed', 'ineligible (fenced or shutting down)');
    ctx.ineligible.clear();
    fetch(leader, 3, 6n, ctx.clock.nowMs(), 1);
    assert.equal(kindOf(leader), 'pending-expand');
    assert.deepEqual(leader.maximalIsr, [1, 2, 3]);
    assert.match(ctx.logger.lines.join('\n'), /Expanding ISR from 1,2 to 1,2,3/);
    leader.appendAsLeader(makeBatch({ count: 2 }), -1);
    fetch(leader, 2, 8n, ctx.clock.nowMs(), 1);
    assert.equal(log.highWatermark, 6n, 'the joining replica holds the HW');
    ctx.proposals[0]!.answer({
      errorCode: 0,
      leaderId: 1,
      leaderEpoch: 1,
      isr: [1, 2, 3],
      partitionEpoch: 1,
    });
    await settle();
    assert.deepEqual(leader.isr, [1, 2, 3]);
  } finally {
    cleanup();
  }
});

test('a rejected proposal with a stale epoch waits for metadata; other errors drop it', async () => {
  const { cleanup, leader, ctx } = setup(1);
  try {
    leader.applyPartitionState(state());
    ctx.clock.advance(60_000);
    assert.equal(leader.maybeShrinkIsr(), true);
    ctx.proposals[0]!.answer({ errorCode: 95, leaderId: 1, leaderEpoch: 0, isr: [], partitionEpoch: 0 });
    await settle();
    assert.equal(kindOf(leader), 'pending-shrink');
    leader.applyPartitionState(state({ partitionEpoch: 1, isr: [1, 2] }));
    assert.equal(kindOf(leader), 'committed');
    assert.deepEqual(leader.isr, [1, 2]);
    assert.equal(leader.maybeShrinkIsr(), true);
    ctx.proposals[1]!.answer({ errorCode: 107, leaderId: 1, leaderEpoch: 0, isr: [], partitionEpoch: 1 });
    await settle();
    assert.equal(kindOf(leader), 'committed');
  } finally {
    cleanup();
  }
});

test('follower fetch: out of range below the log start wins, divergence by epoch, out of range above the LEO', () => {
  const { cleanup, log, leader, ctx } = setup(1);
  try {
    log.appendAsLeader(makeBatch({ count: 5 }), 0);
    leader.applyPartitionState(state({ leaderEpoch: 2 }));
    leader.appendAsLeader(makeBatch({ count: 5 }), 1);
    assert.equal(fetch(leader, 2, 20n, ctx.clock.nowMs()).errorCode, 1);
    // A follower that last fetched epoch 1 (which the leader never had) at offset 8: the leader's
    // epoch 0 ends at 5.
    const d = fetch(leader, 2, 8n, ctx.clock.nowMs(), 1);
    assert.equal(d.errorCode, 0);
    assert.deepEqual(d.divergingEpoch, { epoch: 0, endOffset: 5n });
    assert.equal(d.records.length, 0);
    assert.equal(leader.followerState(2)!.logEndOffset, -1n, 'a diverging fetch does not update the state');
    fetch(leader, 2, 10n, ctx.clock.nowMs(), 2);
    fetch(leader, 3, 10n, ctx.clock.nowMs(), 2);
    log.maybeIncrementLogStartOffset(7n, 'test');
    // Below the log start and diverging: OFFSET_OUT_OF_RANGE takes precedence.
    assert.equal(fetch(leader, 2, 3n, ctx.clock.nowMs(), 1).errorCode, 1);
    assert.equal(fetch(leader, 2, 10n, ctx.clock.nowMs(), 2).errorCode, 0);
    const stale = readForFollower(
      leader,
      2,
      -1n,
      { fetchOffset: 10n, logStartOffset: 0n, currentLeaderEpoch: 1, lastFetchedEpoch: 2, maxBytes: 100 },
      true,
      0,
    );
    assert.equal(stale.errorCode, 74);
  } finally {
    cleanup();
  }
});

test('offsetLag: leader LEO minus replica LEO for every replica', () => {
  const { cleanup, leader, ctx } = setup(1);
  try {
    leader.applyPartitionState(state({ isr: [1, 2] }));
    leader.appendAsLeader(makeBatch({ count: 10 }), 1);
    fetch(leader, 2, 10n, ctx.clock.nowMs());
    fetch(leader, 3, 4n, ctx.clock.nowMs());
    assert.deepEqual(
      [...leader.replicaLags()],
      [
        [1, 0n],
        [2, 0n],
        [3, 6n],
      ],
    );
  } finally {
    cleanup();
  }
});

test('OffsetsForLeaderEpoch on the leader: end of the epoch, the latest at the LEO, epoch checks', () => {
  const { cleanup, log, leader } = setup(1);
  try {
    log.appendAsLeader(makeBatch({ count: 5 }), 0);
    leader.applyPartitionState(state({ leaderEpoch: 2 }));
    leader.appendAsLeader(makeBatch({ count: 3 }), 1);
    assert.deepEqual(lastOffsetForLeaderEpoch(leader, 2, 0), { errorCode: 0, leaderEpoch: 0, endOffset: 5n });
    assert.deepEqual(lastOffsetForLeaderEpoch(leader, 2, 1), { errorCode: 0, leaderEpoch: 0, endOffset: 5n });
    assert.deepEqual(lastOffsetForLeaderEpoch(leader, -1, 2), {
      errorCode: 0,
      leaderEpoch: 2,
      endOffset: 8n,
    });
    assert.equal(lastOffsetForLeaderEpoch(leader, 1, 0).errorCode, 74);
    assert.equal(lastOffsetForLeaderEpoch(leader, 3, 0).errorCode, 75);
  } finally {
    cleanup();
  }
});

test('low watermark: the smallest log start offset over the leader and live followers', () => {
  const { cleanup, log, leader, ctx } = setup(1);
  try {
    leader.applyPartitionState(state());
    leader.appendAsLeader(makeBatch({ count: 10 }), 1);
    fetch(leader, 2, 10n, ctx.clock.nowMs());
    fetch(leader, 3, 10n, ctx.clock.nowMs());
    log.maybeIncrementLogStartOffset(6n, 'delete records');
    assert.equal(leader.lowWatermark(), 0n);
    readForFollower(
      leader,
      2,
      -1n,
      { fetchOffset: 10n, logStartOffset: 6n, currentLeaderEpoch: 0, lastFetchedEpoch: 0, maxBytes: 100 },
      true,
      0,
    );
    assert.equal(leader.lowWatermark(), 0n, 'follower 3 still at 0');
    ctx.ineligible.add(3);
    assert.equal(leader.lowWatermark(), 6n, 'a dead follower does not hold it back');
  } finally {
    cleanup();
  }
});
