import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { TestCluster } from './harness.js';

describe('controller at scale (10,000 partitions)', () => {
  let c: TestCluster;
  let dir: string | undefined;
  afterEach(async () => {
    await c.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  for (const persisted of [false, true]) {
    it(`a broker loads 10,000 partitions and every partition of the killed broker gets a new leader (speed: bench/metadata.ts)${persisted ? ' (persisted store)' : ''}`, async () => {
      dir = persisted ? mkdtempSync(join(tmpdir(), 'skiff-scale-')) : undefined;
      c = await TestCluster.create(dir);
      for (const id of [1, 2, 3]) await c.startBroker(id);
      const ctl = await c.startController(100);
      await c.settle();
      await ctl.whenActive();
      const b2 = c.brokers.get(2)!;
      const createStart = performance.now();
      for (let t = 0; t < 100; t++) {
        const [r] = await b2.controller.createTopics(
          [{ name: `t${t}`, numPartitions: 100, replicationFactor: 3, configs: {} }],
          false,
        );
        assert.equal(r!.errorCode, 0);
      }
      const createMs = performance.now() - createStart;
      await c.settle();
      const loadStart = performance.now();
      const fresh = await c.startBroker(4);
      const loadMs = performance.now() - loadStart;
      let partitions = 0;
      for (const t of fresh.image().topics.values()) partitions += t.partitions.length;
      assert.equal(partitions, 10_000);
      const led = [...c.image().topics.values()]
        .flatMap((t) => t.partitions)
        .filter((p) => p.leader === 1).length;
      c.brokers.get(1)!.crash();
      c.brokers.delete(1);
      await c.advance(8750, 250);
      const failStart = performance.now();
      await c.advance(750, 250);
      // A bounded wait (real time: the persisted store's fsyncs complete on the I/O pool); the
      // speed targets are bench/metadata.ts's, not this test's.
      const ledByDeadBroker = () =>
        [...c.image().topics.values()].some((t) => t.partitions.some((p) => p.leader === 1));
      while (ledByDeadBroker() && performance.now() - failStart < 10_000) {
        await c.settle(5);
        await new Promise((r) => setTimeout(r, 1));
      }
      const failoverMs = performance.now() - failStart;
      const still = [...c.image().topics.values()]
        .flatMap((t) => t.partitions)
        .filter((p) => p.leader === 1).length;
      assert.equal(still, 0, `${still} of ${led} partitions still led by the dead broker`);
      assert.ok(led > 0);
      console.log(
        `${persisted ? 'persisted' : 'memory'} store: create 10,000 partitions: ${createMs.toFixed(0)} ms; broker load: ${loadMs.toFixed(0)} ms; failover of ${led} partitions: ${failoverMs.toFixed(0)} ms`,
      );
    });
  }
});
