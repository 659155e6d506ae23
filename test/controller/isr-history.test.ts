/**
 * The durable ISR history as the controller writes it (src/metadata/isr-history.ts): one record per
 * partition-state change, in the same transaction, with the kind and cause — a controlled
 * shutdown, fencing (session expiry), the last member going (offline), its return, a leader's
 * AlterPartition with its own reason — and both bounds: max.entries at every write,
 * retention.ms by the controller's pruning. On the embedded store with a manual clock.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { type IsrChangeRecord, readIsrHistory } from '../../src/metadata/isr-history.js';
import { MetadataKeys } from '../../src/metadata/keys.js';
import { TestCluster } from './harness.js';

const keys = new MetadataKeys('test');
const BOUNDS = { maxEntries: 1000, retentionMs: 7 * 24 * 3_600_000 };

async function history(c: TestCluster, topic: string, bounds = BOUNDS): Promise<IsrChangeRecord[]> {
  const r = await readIsrHistory(c.store, keys, topic, [0], bounds, c.clock.nowMs());
  assert.equal(r.unreadable, 0);
  return r.history.get(0) ?? [];
}

const brief = (h: readonly IsrChangeRecord[]) =>
  h.map((r) => [r.kind, r.cause, r.broker, r.leader, r.oldIsr.join(','), r.newIsr.join(',')]);

async function cluster(staticConfig: Record<string, string> = {}): Promise<TestCluster> {
  const c = await TestCluster.create();
  for (const id of [1, 2, 3]) await c.startBroker(id);
  await c.startController(1, { staticConfig });
  await c.controllers[0]!.whenActive();
  await c.brokers.get(1)!.controller.createTopics(
    [
      {
        name: 't',
        numPartitions: -1,
        replicationFactor: -1,
        assignments: new Map([[0, [1, 2, 3]]]),
        configs: {},
      },
    ],
    false,
  );
  await c.settle();
  return c;
}

describe('controller: the durable ISR history', () => {
  let c: TestCluster;
  afterEach(() => c.close());

  it('records controlled shutdown, fencing, offline and the leader back, each with its kind and cause', async () => {
    c = await cluster();
    // Broker 2: controlled shutdown, then gone.
    const done = c.brokers.get(2)!.controlledShutdown(5000);
    await c.settle();
    assert.equal(await done, true);
    await c.brokers.get(2)!.close();
    c.brokers.delete(2);
    await c.settle();
    // Broker 3: its session expires (a crash): fenced.
    c.brokers.get(3)!.crash();
    c.brokers.delete(3);
    await c.advance(10_000);
    // Broker 1, the last ISR member and leader, shuts down: the partition goes offline.
    const last = c.brokers.get(1)!.controlledShutdown(1000);
    await c.advance(1500);
    await last;
    await c.brokers.get(1)!.close();
    c.brokers.delete(1);
    await c.settle();
    await c.startBroker(1);
    await c.settle();
    const h = await history(c, 't');
    assert.deepEqual(brief(h), [
      ['create', 'topic-created', 1, 1, '', '1,2,3'],
      ['shrink', 'controlled-shutdown', 1, 1, '1,2,3', '1,3'],
      ['shrink', 'fencing', 1, 1, '1,3', '1'],
      ['offline', 'controlled-shutdown', 1, -1, '1', '1'],
      ['election', 'leader-returned', 1, 1, '1', '1'],
    ]);
    assert.deepEqual(
      h.map((r) => r.partitionEpoch),
      [0, 1, 2, 3, 4],
    );
    assert.match(h[2]!.reason, /^broker 3 fenced: its registration is gone \(session expired\)$/);
    assert.match(h[3]!.reason, /no eligible ISR member: partition offline/);
    assert.ok(h.every((r) => r.timeMs === h[0]!.timeMs || r.timeMs > h[0]!.timeMs));
  });

  it("the active controller's own broker shutting down cleanly: its successor records controlled-shutdown, not fencing", async () => {
    c = await cluster();
    await c.startController(2);
    for (const id of [2, 3]) {
      const moved = c.brokers.get(id)!.controlledShutdown(5000);
      await c.settle();
      assert.equal(await moved, true);
      await c.brokers.get(id)!.close();
      c.brokers.delete(id);
      await c.settle();
    }
    // Broker 1 leads alone and runs the active controller: it shuts down as a broker process does
    // (store-broker.ts doStop) — controlled shutdown, the controller resigns, the registration goes —
    // with no turn for the successor in between, which finds the broker already gone.
    assert.equal(await c.brokers.get(1)!.controlledShutdown(1000), true);
    await c.settle();
    await c.controllers[0]!.stop();
    await c.brokers.get(1)!.close();
    c.brokers.delete(1);
    await c.settle();
    await c.controllers[1]!.whenActive();
    await c.settle();
    const offline = (await history(c, 't')).filter((r) => r.kind === 'offline');
    assert.deepEqual(brief(offline), [['offline', 'controlled-shutdown', 1, -1, '1', '1']]);
    assert.match(offline[0]!.reason, /broker 1 stopped after a controlled shutdown/);
  });

  it("a leader's AlterPartition carries its cause and reason into the record; the size bound holds at every write", async () => {
    c = await cluster({ 'skiff.isr.history.max.entries': '2' });
    const b1 = c.brokers.get(1)!;
    const shrink = b1.alterPartition([
      {
        topic: 't',
        partitions: [
          {
            partition: 0,
            leaderEpoch: 0,
            partitionEpoch: 0,
            newIsr: [1, 2],
            cause: 'fetch-timeout',
            reason: 'fetch-timeout: broker 3 sent no fetch for 3012 ms (replica.lag.time.max.ms 3000)',
          },
        ],
      },
    ]);
    await c.settle();
    assert.equal((await shrink).topics[0]!.partitions[0]!.errorCode, 0);
    const expand = b1.alterPartition([
      {
        topic: 't',
        partitions: [{ partition: 0, leaderEpoch: 0, partitionEpoch: 1, newIsr: [1, 2, 3], cause: 'bogus' }],
      },
    ]);
    await c.settle();
    assert.equal((await expand).topics[0]!.partitions[0]!.errorCode, 0);
    // The creation fell out of the bound (2 entries) when the expand was written.
    const h = await history(c, 't', { ...BOUNDS, maxEntries: 1000 });
    assert.deepEqual(brief(h), [
      ['shrink', 'fetch-timeout', 1, 1, '1,2,3', '1,2'],
      ['expand', 'caught-up', 1, 1, '1,2', '1,2,3'],
    ]);
    assert.equal(
      h[0]!.reason,
      'fetch-timeout: broker 3 sent no fetch for 3012 ms (replica.lag.time.max.ms 3000)',
    );
    assert.match(
      h[1]!.reason,
      /proposed by leader 1/,
      'an unknown cause is replaced, a missing reason supplied',
    );
  });

  it('retention.ms: the controller prunes what is older; a reader skips it at once', async () => {
    c = await cluster({ 'skiff.isr.history.retention.ms': '5000' });
    assert.equal((await history(c, 't', { ...BOUNDS, retentionMs: 5000 })).length, 1);
    await c.advance(6000);
    assert.equal(
      (await history(c, 't', { ...BOUNDS, retentionMs: 5000 })).length,
      0,
      'skipped by the reader',
    );
    // Pruned within min(retention / 2, 60 s) after it was due.
    await c.advance(3000);
    assert.equal(
      (await history(c, 't', { ...BOUNDS, retentionMs: 1e12 })).length,
      0,
      'deleted from the store',
    );
    assert.ok(c.logger.lines.some((l) => /deleted 1 ISR history entries past their retention/.test(l)));
  });

  it('deleting the topic deletes its history', async () => {
    c = await cluster();
    await c.brokers.get(1)!.controller.deleteTopics(['t']);
    await c.settle();
    assert.equal((await history(c, 't')).length, 0);
  });
});
