import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import type { FetchRequest } from '../../src/protocol/generated/FetchRequest.js';
import { defaultPartitionData, type FetchResponse } from '../../src/protocol/generated/FetchResponse.js';
import { DEFAULT_FETCHER_CONFIG, ReplicaFetcher } from '../../src/replication/fetcher.js';
import { completeBatches, PartitionFollower } from '../../src/replication/follower.js';
import { readForFollower } from '../../src/replication/leader-fetch.js';
import { PartitionLeaderState } from '../../src/replication/leader-state.js';
import {
  parseThrottledReplicas,
  ReplicationQuota,
  TokenBucket,
  WindowedRate,
} from '../../src/replication/quota.js';
import { makeBatch } from '../storage/helpers.js';
import { leaderContext, openLog, settle, state, tempDir, testContext } from './helpers.js';

const MiB = 1024 * 1024;

/** A quota whose rate and topic lists a test changes at will (as the broker's dynamic configs). */
function quota(clock: ManualClock, side: 'leader' | 'follower' = 'follower', brokerId = 3) {
  const cfg = { rate: null as number | null, lists: new Map<string, string>() };
  const q = new ReplicationQuota({
    side,
    localBrokerId: brokerId,
    clock,
    rate: () => cfg.rate,
    throttledReplicas: (topic) => cfg.lists.get(topic),
  });
  return { q, cfg };
}

/**
 * A follower-shaped transfer on a manual clock: every `stepMs`, when the quota has a chunk, moves
 * min(allowance, fetchMax) bytes rounded UP to whole batches of `batch` bytes (a batch is never
 * split, so the bucket is overdrawn), records them, and returns bytes moved per step.
 */
function drive(
  q: ReplicationQuota,
  clock: ManualClock,
  ms: number,
  stepMs = 5,
  batch = 16 * 1024,
  fetchMax = MiB,
) {
  const moved: { t: number; bytes: number }[] = [];
  for (let t = 0; t < ms; t += stepMs) {
    const a = q.allowance();
    if (a >= q.chunk(fetchMax)) {
      const bytes = Math.ceil(Math.min(a, fetchMax) / batch) * batch;
      q.record('t-0', bytes, true);
      moved.push({ t, bytes });
    }
    clock.advance(stepMs);
  }
  return moved;
}

const sumIn = (moved: { t: number; bytes: number }[], from: number, to: number) =>
  moved.filter((m) => m.t >= from && m.t < to).reduce((s, m) => s + m.bytes, 0);

test('throttled-replicas lists: * for all, partition:broker entries of this broker only, anything else none', () => {
  assert.equal(parseThrottledReplicas('*', 3), '*');
  assert.equal(parseThrottledReplicas(['*'], 3), '*');
  assert.deepEqual([...(parseThrottledReplicas('0:3,1:2,2:3', 3) as Set<number>)], [0, 2]);
  assert.deepEqual([...(parseThrottledReplicas(['0:1', '1:1'], 3) as Set<number>)], []);
  assert.deepEqual([...(parseThrottledReplicas('', 3) as Set<number>)], []);
  assert.deepEqual([...(parseThrottledReplicas(undefined, 3) as Set<number>)], []);
  assert.deepEqual([...(parseThrottledReplicas('x:y,0:3', 3) as Set<number>)], [0]);
});

test('token bucket: starts empty, refills at the rate up to one window, may be overdrawn', () => {
  const b = new TokenBucket(1000, 1000, 0);
  assert.equal(b.available(0), 0);
  assert.equal(b.available(500), 500);
  assert.equal(b.available(5000), 1000, 'capped at one window of the rate');
  b.consume(1600, 5000);
  assert.equal(b.available(5000), -600);
  assert.equal(b.msUntil(100, 5000), 700);
  assert.equal(b.msUntil(10_000, 5000), 1600, 'asks beyond the capacity wait for the capacity');
  b.setRate(2000, 5300);
  assert.equal(b.available(5300), -300, 'what accrued at the old rate is kept');
  assert.equal(b.available(5400), -100);
  const bounded = new TokenBucket(1000, 1000, 0, 11_000);
  bounded.consume(50_000, 0);
  assert.equal(
    bounded.available(0),
    -11_000,
    'debt forgotten beyond the whole window, as Kafka forgets old samples',
  );
});

test('Kafka windowed Rate: bytes over the retained samples, a young meter over its own age', () => {
  const r = new WindowedRate({ samples: 11, sampleMs: 1000 }, 0);
  for (let t = 0; t < 30_000; t += 100) r.record(100_000, t);
  assert.ok(Math.abs(r.rate(30_000) - 1_000_000) / 1_000_000 < 0.1, `${r.rate(30_000)}`);
  assert.equal(r.total, 30_000_000);
  assert.equal(r.rate(60_000), 0, 'every sample expired');
  const young = new WindowedRate({ samples: 11, sampleMs: 1000 }, 10_000);
  young.record(2_000_000, 11_000);
  assert.equal(young.rate(12_000), 1_000_000, 'two seconds old, 2 MB seen');
});

test('no rate or no list: nothing is throttled or limited; both layers are needed', () => {
  const clock = new ManualClock(0);
  const { q, cfg } = quota(clock);
  assert.equal(q.isThrottled('t', 0), false);
  assert.equal(q.isQuotaExceeded(), false);
  assert.equal(q.allowance(), Number.POSITIVE_INFINITY);
  cfg.lists.set('t', '0:3,1:2');
  assert.equal(q.isThrottled('t', 0), true, 'the list applies at once');
  assert.equal(q.isThrottled('t', 1), false, 'another broker');
  assert.equal(q.isQuotaExceeded(), false, 'a list without a rate does not limit');
  cfg.rate = 1000;
  assert.equal(q.isQuotaExceeded(), true, 'a rate set now starts from an empty budget: no burst');
  clock.advance(10);
  assert.equal(q.allowance(), 10);
  assert.equal(
    q.withheldWaitMs(500),
    90,
    'a withheld Fetch waits for a chunk (a tenth of a second of the rate, 10 bytes are there)',
  );
  q.record('t-0', 100_000, true);
  assert.equal(q.withheldWaitMs(500), 500, 'at most replica.fetch.wait.max.ms');
  cfg.rate = null;
  assert.equal(q.withheldWaitMs(500), 0);
  assert.equal(q.isQuotaExceeded(), false, 'deleting the rate lifts the limit at once');
  assert.equal(q.allowance(), Number.POSITIVE_INFINITY);
});

for (const rate of [1 * MiB, 10 * MiB, 100 * MiB]) {
  test(`steady rate at ${rate / MiB} MiB/s is exact and the start is bounded (no burst)`, () => {
    const clock = new ManualClock(1_000_000);
    const { q, cfg } = quota(clock);
    cfg.rate = rate;
    const moved = drive(q, clock, 60_000);
    const first2s = sumIn(moved, 0, 2000);
    assert.ok(first2s <= 2 * rate + MiB, `first 2 s moved ${first2s} bytes at ${rate} B/s`);
    const steady = sumIn(moved, 10_000, 60_000) / 50;
    assert.ok(Math.abs(steady - rate) / rate < 0.01, `steady ${steady} B/s vs ${rate}`);
    const obs = q.observed();
    assert.ok(
      Math.abs(obs.throttledBytesPerSec - rate) / rate < 0.05,
      `observed ${obs.throttledBytesPerSec}`,
    );
    assert.equal(obs.throttleRate, rate);
    assert.ok(obs.partitions.has('t-0'));
  });
}

test('after an idle spell at most one window of the rate passes at once', () => {
  const clock = new ManualClock(0);
  const { q, cfg } = quota(clock);
  cfg.rate = MiB;
  drive(q, clock, 5000);
  clock.advance(60_000); // nothing to replicate for a minute
  const moved = drive(q, clock, 2000);
  assert.ok(sumIn(moved, 0, 2000) <= 3 * MiB + 16 * 1024, `${sumIn(moved, 0, 2000)}`);
  const obs = q.observed(clock.nowMs() + 20_000);
  assert.equal(obs.partitions.size, 0, 'a partition idle for a whole window is left out');
});

test('unthrottled bytes count in the observed rate but not in the budget', () => {
  const clock = new ManualClock(0);
  const { q, cfg } = quota(clock);
  cfg.rate = 1000;
  assert.equal(q.allowance(), 0);
  clock.advance(1000);
  q.record('u-0', 50_000, false);
  assert.equal(q.allowance(), 1000);
  q.record('t-0', 400, true);
  assert.equal(q.allowance(), 600);
  q.record('t-0', 600, true, clock.nowMs(), 2);
  assert.equal(q.replicaRate('t-0', 2), 600, 'per follower: 600 bytes over the first second');
  assert.equal(q.replicaRate('t-0', 3), null, 'nothing ever went to broker 3');
  assert.equal(q.replicaRate('t-0', 2, clock.nowMs() + 12_000), 0, 'idle for a whole window');
  const obs = q.observed();
  assert.equal(obs.totalBytes, 51_000);
  assert.deepEqual([...obs.partitions.keys()].sort(), ['t-0', 'u-0']);
});

test('leader side: withholds a throttled partition from an out-of-ISR follower when over quota, caps it to the budget otherwise', () => {
  const { dir, cleanup } = tempDir('skiff-quota-leader-');
  try {
    const sctx = testContext();
    const log = openLog(path.join(dir, 't-0'), sctx);
    const ctx = leaderContext(sctx.clock);
    const leader = new PartitionLeaderState('t', 0, log, ctx);
    leader.applyPartitionState(state({ isr: [1, 2], replicas: [1, 2, 3] }));
    for (let i = 0; i < 20; i++) leader.appendAsLeader(makeBatch({ count: 10, valueBytes: 1000 }), 1);
    const { q, cfg } = quota(sctx.clock, 'leader', 1);
    cfg.lists.set('t', '*');
    cfg.rate = 20_000;
    const read = (id: number, min = true) =>
      readForFollower(
        leader,
        id,
        -1n,
        { fetchOffset: 0n, logStartOffset: 0n, currentLeaderEpoch: 0, lastFetchedEpoch: -1, maxBytes: MiB },
        min,
        sctx.clock.nowMs(),
        q,
      );
    const r0 = read(3);
    assert.equal(r0.errorCode, 0);
    assert.equal(r0.records.length, 0, 'fresh budget: nothing for the out-of-ISR follower');
    assert.equal(r0.throttled, true);
    assert.equal(r0.highWatermark, log.highWatermark, 'HW still sent');
    assert.equal(leader.followerState(3)?.logEndOffset, 0n, 'fetch state still updated');
    const inIsr = read(2);
    assert.ok(
      inIsr.records.length > 10_000,
      `${inIsr.errorCode} ${inIsr.records.length} ${log.logEndOffset}`,
    );
    assert.ok(inIsr.records.length > 10_000, 'an in-ISR follower is never withheld');
    assert.ok(q.allowance() < 0, 'its bytes of a throttled partition are charged (as Kafka records them)');
    sctx.clock.advance(20_000); // the in-ISR read's debt is paid, the bucket full again
    const capped = read(3, false);
    assert.ok(capped.records.length > 0 && capped.records.length <= 20_000, `${capped.records.length}`);
    assert.equal(completeBatches(capped.records).length, capped.records.length, 'whole batches only');
    let sent = capped.records.length;
    for (let r = read(3); r.records.length > 0; r = read(3)) sent += r.records.length;
    assert.ok(sent <= 20_000 + 10_500, `${sent} bytes for a full bucket of 20,000 (one batch over at most)`);
    assert.equal(read(3).throttled, true, 'budget spent: withheld');
    cfg.lists.delete('t');
    assert.ok(read(3).records.length > 20_000, 'no list: no throttle');
  } finally {
    cleanup();
  }
});

test('follower side: a throttled, out-of-sync partition is left out of the Fetch while over quota, asks no more than the budget, and the fetcher wakes when the budget refills', async () => {
  const { dir, cleanup } = tempDir('skiff-quota-fetcher-');
  try {
    const ctx = testContext();
    const requests: FetchRequest[] = [];
    let offset = 0n;
    const answer = (req: FetchRequest): FetchResponse => ({
      throttleTimeMs: 0,
      errorCode: 0,
      sessionId: 0,
      nodeEndpoints: [],
      responses: req.topics.map((t) => ({
        topic: t.topic,
        topicId: t.topicId,
        partitions: t.partitions.map((p) => {
          const records =
            t.topic === 'a'
              ? makeBatch({ baseOffset: offset, count: 10, valueBytes: 100, epoch: 4 })
              : Buffer.alloc(0);
          if (t.topic === 'a') offset += 10n;
          return {
            ...defaultPartitionData(),
            partitionIndex: p.partition,
            highWatermark: 1_000_000n,
            logStartOffset: 0n,
            records,
          };
        }),
      })),
    });
    const { q, cfg } = quota(ctx.clock);
    cfg.lists.set('a', '0:3');
    cfg.rate = 10_000;
    const fetcher = new ReplicaFetcher(1, {
      localBrokerId: 3,
      clock: ctx.clock,
      logger: ctx.logger,
      scheduler: ctx.scheduler,
      transport: {
        fetch: async (_l, req) => {
          requests.push(req);
          return answer(req);
        },
        leaderOffsets: async () => ({ logStartOffset: 0n, logEndOffset: 0n }),
      },
      brokerEpoch: () => 1n,
      config: () => DEFAULT_FETCHER_CONFIG,
      quota: q,
    });
    const follow = (topic: string) => {
      const f = new PartitionFollower(
        topic,
        0,
        'AAAAAAAAAAAAAAAAAAAAAA',
        openLog(path.join(dir, `${topic}-0`), ctx),
        {
          localBrokerId: 3,
          clock: ctx.clock,
          logger: ctx.logger,
        },
      );
      f.makeFollower(1, 4);
      fetcher.addPartition(f);
      return f;
    };
    const a = follow('a');
    follow('b');
    fetcher.start();
    ctx.scheduler.runDue();
    await settle();
    const topics = (r: FetchRequest) => r.topics.map((t) => t.topic).sort();
    assert.deepEqual(
      topics(requests[0]!),
      ['b'],
      'over quota from the first Fetch: the throttled partition is left out',
    );
    // Only the throttled partition, over quota: the fetcher sleeps until the budget has a chunk.
    fetcher.removePartition('b-0');
    const before = requests.length;
    for (let i = 0; i < 5; i++) {
      ctx.scheduler.runDue();
      await settle();
    }
    const sentA = requests.slice(before).filter((r) => topics(r).includes('a'));
    assert.equal(sentA.length, 0, 'nothing sent while over quota');
    let fetchedA = 0;
    for (let i = 0; i < 400; i++) {
      ctx.clock.advance(25);
      ctx.scheduler.runDue();
      await settle();
    }
    for (const r of requests.slice(before)) {
      const p = r.topics.find((t) => t.topic === 'a')?.partitions[0];
      if (p) {
        assert.ok(p.partitionMaxBytes <= 10_000, `asks at most the budget: ${p.partitionMaxBytes}`);
        fetchedA++;
      }
    }
    assert.ok(fetchedA > 0, 'fetches resume once the budget refills');
    // 10 s at 10,000 B/s: about 100,000 bytes appended (batches overdraw by at most one).
    const appended = q.observed().totalBytes;
    assert.ok(appended > 80_000 && appended <= 100_000 + 2000, `${appended}`);
    assert.equal(a.inSyncEstimate, false);
    fetcher.stop();
  } finally {
    cleanup();
  }
});
