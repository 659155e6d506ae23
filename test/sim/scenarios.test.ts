/**
 * The seeds' scenarios replayed in the simulation with fixed seeds: catch-up vs rebuild (seed
 * 13.3), ISR shrink after replica.lag.time.max.ms and expansion once caught up, the ISR/OSR
 * timeline after mass failure (min.insync.replicas 2), and an unclean election truncating the
 * replica that was ahead.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { batchAt, defaultClusterConfig, SimCluster } from './sim-cluster.js';

function oneTopic(over: (c: ReturnType<typeof defaultClusterConfig>) => void = () => {}) {
  const config = defaultClusterConfig();
  config.partitions = 1;
  over(config);
  return config;
}

async function produceMany(c: SimCluster, n: number, acks: number): Promise<number[]> {
  const codes: number[] = [];
  for (let i = 0; i < n; i++) {
    // The answer only comes as simulated time runs: run the queue until it does (bounded).
    let code: number | undefined;
    void c.produceOnce('t-0', acks).then((r) => {
      code = r?.errorCode ?? -1;
    });
    for (let waited = 0; code === undefined && waited < 10_000; waited += 5) await c.run(5);
    codes.push(code ?? -2);
  }
  return codes;
}

test('seed 13.3: a follower behind the leader log start rebuilds from the batch holding it', async () => {
  const c = new SimCluster(
    1333,
    oneTopic((cfg) => (cfg.broker.segmentBytes = 4096)),
  );
  try {
    c.start();
    await c.run(500);
    await produceMany(c, 40, -1);
    await c.run(500);
    const b3 = c.brokers.get(3)!;
    const oldLeo = b3.logs.get('t-0')!.logEndOffset;
    b3.crash();
    await c.run(1000);
    assert.deepEqual(c.controller.records.get('t-0')!.isr, [1, 2]);
    const codes = await produceMany(c, 150, -1);
    assert.ok(
      codes.every((x) => x === 0),
      `acks=all with one follower down: ${codes}`,
    );
    await c.run(3000);
    // kafka-delete-records past the stopped follower, at an offset inside a batch.
    const leaderLog = c.brokers.get(1)!.logs.get('t-0')!;
    let target = oldLeo + 200n;
    let straddling = batchAt(leaderLog, target)!;
    while (straddling.base === straddling.last) straddling = batchAt(leaderLog, straddling.last + 1n)!;
    target = straddling.base + 1n;
    leaderLog.maybeIncrementLogStartOffset(target, 'delete records');
    assert.ok(leaderLog.deleteOldSegments() > 0);
    b3.start();
    await c.run(4000);
    const rebuilds = b3.events.filter((e) => e.kind === 'rebuild');
    assert.equal(rebuilds.length, 1, c.report());
    const e = rebuilds[0]!;
    assert.ok(e.kind === 'rebuild' && e.oldLogEndOffset === oldLeo && e.newLogStartOffset === target);
    assert.ok(e.kind === 'rebuild' && e.bytesDiscarded > 0);
    const log3 = b3.logs.get('t-0')!;
    assert.equal(log3.local.segments.first()!.baseOffset, straddling.base, 'restarted at the batch base');
    assert.equal(log3.logStartOffset, target, 'log start offset still the leader’s');
    assert.equal(b3.logger.lines.filter((l) => l.includes('Rebuilding partition t-0')).length, 1);
    assert.deepEqual(c.controller.records.get('t-0')!.isr, [1, 2, 3]);
    c.checkConverged();
    assert.deepEqual(c.violations, [], c.report());
  } finally {
    c.close();
  }
});

test('ISR shrinks after replica.lag.time.max.ms of lag (checked every half of it) and expands when caught up', async () => {
  const c = new SimCluster(7, oneTopic());
  try {
    c.start();
    await c.run(500);
    c.startProducing(20, 0);
    await c.run(1000);
    const t0 = c.queue.clock.nowMs();
    c.net.cutLink(1, 3);
    await c.run(4000);
    const history = c.controller.history.get('t-0')!;
    const shrink = history.find((h) => h.kind === 'shrink');
    assert.ok(shrink, c.report());
    assert.deepEqual(
      [shrink.oldIsr, shrink.newIsr],
      [
        [1, 2, 3],
        [1, 2],
      ],
    );
    const lag = c.config.broker.replicaLagTimeMaxMs;
    assert.ok(shrink.timeMs - t0 >= lag && shrink.timeMs - t0 <= lag * 1.5 + 200, `${shrink.timeMs - t0} ms`);
    assert.ok(
      c.brokers
        .get(1)!
        .logger.lines.some((l) =>
          /Shrinking ISR from 1,2,3 to 1,2\. Leader: \(highWatermark: \d+, endOffset: \d+\)\. Out of sync replicas: \(brokerId: 3, endOffset: \d+, lastCaughtUpTimeMs: \d+\)\./.test(
            l,
          ),
        ),
    );
    const healedAt = c.queue.clock.nowMs();
    c.net.healAll();
    await c.run(4000);
    // A Fetch lost on the cut link is only retried after its request timeout and the back-off.
    const expand = c.controller.history.get('t-0')!.find((h) => h.kind === 'expand');
    const bound = c.config.network.requestTimeoutMs + c.config.broker.fetcher.backoffMs + 1000;
    assert.ok(expand && expand.timeMs - healedAt < bound, c.report());
    assert.deepEqual(expand.newIsr, [1, 2, 3]);
    // replica.lag.time.max.ms is dynamic: a shorter setting applies from the next check.
    c.config.broker.replicaLagTimeMaxMs = 600;
    await c.run(1200); // let the check re-arm at the new period
    const t1 = c.queue.clock.nowMs();
    c.net.cutLink(1, 2);
    await c.run(2000);
    const second = c.controller.history.get('t-0')!.filter((h) => h.kind === 'shrink')[1];
    assert.ok(second && second.timeMs - t1 <= 600 * 1.5 + 200, c.report());
    c.stopProducing();
    c.net.healAll();
    await c.run(3000);
    c.checkConverged();
    assert.deepEqual(c.violations, [], c.report());
  } finally {
    c.close();
  }
});

test('seed ISR/OSR timeline: min.insync.replicas 2 after mass failure, nothing acknowledged lost', async () => {
  const c = new SimCluster(3, oneTopic());
  try {
    c.start();
    await c.run(500);
    const [r0, r1, r2] = [1, 2, 3].map((id) => c.brokers.get(id)!);
    const ok = (codes: number[]) => codes.every((x) => x === 0);
    assert.ok(ok(await produceMany(c, 10, -1)));
    r1!.crash(); // one follower down: writes go on
    await c.run(1000);
    assert.ok(ok(await produceMany(c, 10, -1)), 'one follower down');
    r2!.crash(); // two down: acks=all refused before the append
    await c.run(1000);
    assert.deepEqual(c.controller.records.get('t-0')!.isr, [1]);
    const refused = await produceMany(c, 3, -1);
    assert.deepEqual(refused, [19, 19, 19]);
    r0!.crash(); // the leader too: offline, ISR kept as [1]
    await c.run(1000);
    assert.equal(c.leaderOf('t-0'), -1);
    assert.deepEqual(c.controller.records.get('t-0')!.isr, [1]);
    r1!.start(); // a stale replica alone: still offline (unclean off)
    await c.run(2000);
    assert.equal(c.leaderOf('t-0'), -1);
    r0!.start(); // the last leader returns and leads
    await c.run(500);
    assert.equal(c.leaderOf('t-0'), 1);
    await c.run(2000); // a second replica catches up: acks=all works again
    assert.deepEqual(c.controller.records.get('t-0')!.isr, [1, 2]);
    assert.ok(ok(await produceMany(c, 10, -1)));
    r2!.start();
    await c.run(3000);
    c.checkConverged();
    assert.equal(c.acked.length, 30);
    assert.deepEqual(c.violations, [], c.report());
  } finally {
    c.close();
  }
});

test('an unclean election truncates the replica that was ahead', async () => {
  const c = new SimCluster(
    11,
    oneTopic((cfg) => {
      cfg.uncleanElection = true;
      cfg.broker.minInsyncReplicas = 1;
    }),
  );
  try {
    c.start();
    await c.run(500);
    await produceMany(c, 10, 1);
    await c.run(500);
    c.net.cutLink(1, 2);
    c.net.cutLink(1, 3);
    c.startProducing(20, 0);
    await c.run(4000); // followers fall behind and leave the ISR
    c.stopProducing();
    await c.run(200);
    assert.deepEqual(c.controller.records.get('t-0')!.isr, [1]);
    const aheadLeo = c.brokers.get(1)!.logs.get('t-0')!.logEndOffset;
    c.brokers.get(1)!.crash();
    await c.run(1500);
    assert.ok(
      c.controller.changes.some((x) => x.unclean),
      c.report(),
    );
    const newLeader = c.leaderOf('t-0');
    assert.ok(newLeader === 2 || newLeader === 3);
    await produceMany(c, 5, 1);
    c.net.healAll();
    c.brokers.get(1)!.start();
    await c.run(3000);
    const truncations = c.brokers.get(1)!.events.filter((e) => e.kind === 'truncate');
    assert.ok(truncations.length > 0, c.report());
    assert.ok(truncations.every((e) => e.kind === 'truncate' && e.fromLogEndOffset <= aheadLeo));
    c.checkConverged();
    assert.deepEqual(c.violations, [], c.report());
  } finally {
    c.close();
  }
});

test('seed 14.3: a follower whose segment lost its last 500 bytes recovers, refetches and ends the same size', async () => {
  const c = new SimCluster(143, oneTopic());
  try {
    c.start();
    await c.run(500);
    await produceMany(c, 60, -1);
    await c.run(1000);
    const b3 = c.brokers.get(3)!;
    const before = b3.logs.get('t-0')!.logEndOffset;
    b3.crash(500);
    // The indexes emptied too, as in the seed.
    const dir = path.join(b3.dir, 't-0');
    for (const f of fs.readdirSync(dir)) if (/\.(time)?index$/.test(f)) fs.truncateSync(path.join(dir, f), 0);
    await produceMany(c, 20, -1);
    b3.start();
    const recovered = b3.logs.get('t-0')!.logEndOffset;
    assert.ok(recovered < before, `recovery cut the torn batch: ${recovered} < ${before}`);
    await c.run(4000);
    assert.deepEqual(c.controller.records.get('t-0')!.isr, [1, 2, 3]);
    const sizes = [1, 2, 3].map((id) => c.brokers.get(id)!.logs.get('t-0')!.size);
    assert.deepEqual(sizes, [sizes[0], sizes[0], sizes[0]], 'replica sizes equal');
    c.checkConverged();
    assert.deepEqual(c.violations, [], c.report());
  } finally {
    c.close();
  }
});

test('seed 13.3 experiment 1: a follower down during acks=all writes catches up and rejoins with an equal size', async () => {
  const c = new SimCluster(1331, oneTopic());
  try {
    c.start();
    await c.run(500);
    await produceMany(c, 20, -1);
    const b3 = c.brokers.get(3)!;
    b3.crash();
    const codes = await produceMany(c, 150, -1);
    assert.ok(codes.every((x) => x === 0));
    const leaderLog = c.brokers.get(1)!.logs.get('t-0')!;
    const restartAt = c.queue.clock.nowMs();
    b3.start();
    // Sample the follower's size as kafka-log-dirs would, until the ISR is whole again.
    let equalAt = -1;
    while (c.controller.records.get('t-0')!.isr.length < 3 && c.queue.clock.nowMs() - restartAt < 5000) {
      await c.run(2);
      const log3 = b3.logs.get('t-0')!;
      if (equalAt < 0 && log3.size === leaderLog.size) equalAt = c.queue.clock.nowMs();
    }
    if (equalAt < 0 && b3.logs.get('t-0')!.size === leaderLog.size) equalAt = c.queue.clock.nowMs();
    await c.run(100); // the controller's answer reaches the leader
    const expand = c.controller.history.get('t-0')!.find((h) => h.kind === 'expand');
    assert.ok(
      expand && equalAt > 0,
      `equal at ${equalAt}, ${JSON.stringify(
        c.controller.history.get('t-0')!.map((h) => [h.timeMs, h.kind, h.newIsr, h.partitionEpoch]),
      )}`,
    );
    // The ISR comes back as the sizes meet (the next fetch after catching up proposes it).
    assert.ok(
      Math.abs(expand.timeMs - equalAt) <= 200,
      `sizes equal at ${equalAt}, ISR expanded at ${expand.timeMs}`,
    );
    assert.equal(b3.logs.get('t-0')!.size, leaderLog.size);
    c.checkConverged();
    assert.deepEqual(c.violations, [], c.report());
  } finally {
    c.close();
  }
});
