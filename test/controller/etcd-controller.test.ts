import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { SystemClock } from '../../src/common/clock.js';
import { MemoryLogger } from '../../src/common/logger.js';
import { TimerScheduler } from '../../src/common/scheduler.js';
import { Controller } from '../../src/controller/controller.js';
import { EtcdStore } from '../../src/metadata/etcd-store.js';
import { MetadataKeys } from '../../src/metadata/keys.js';
import type { Op } from '../../src/metadata/store.js';
import { StoreClusterMetadata } from '../../src/metadata/store-cluster-metadata.js';
import { eventually } from '../metadata/store-contract.js';
import { EtcdCluster } from '../support/etcd.js';

/**
 * The controller and brokers on a real three-member etcd, each with its own client as separate
 * processes would have, on real time with short sessions (2 s).
 */
describe('controller on etcd (three members)', () => {
  let etcd: EtcdCluster;
  const stores: EtcdStore[] = [];
  const clock = new SystemClock();
  const scheduler = new TimerScheduler();
  const logger = new MemoryLogger();
  const clusterId = `etcd-test-${process.pid}`;
  const newStore = () => {
    const s = new EtcdStore({ endpoints: etcd.endpoints, clock });
    stores.push(s);
    return s;
  };
  before(async () => {
    etcd = await EtcdCluster.start(3);
  });
  after(async () => {
    for (const s of stores) await s.close().catch(() => {});
    etcd?.stop();
  });

  it('elects one controller, fails over partitions and the controller, survives an etcd member SIGKILL', async () => {
    const controller = (nodeId: number) =>
      new Controller({
        store: newStore(),
        clusterId,
        nodeId,
        clock,
        scheduler,
        logger,
        randomInt: (n) => randomInt(n),
        randomBytes,
        sessionTimeoutMs: 2000,
        heartbeatIntervalMs: 500,
      });
    const broker = async (id: number) => {
      const m = await StoreClusterMetadata.start({
        store: newStore(),
        clusterId,
        broker: { id, host: '127.0.0.1', port: 9000 + id, rack: null },
        scheduler,
        logger,
        randomBytes,
        sessionTimeoutMs: 2000,
        heartbeatIntervalMs: 500,
        requestTimeoutMs: 10_000,
      });
      await m.unfence();
      return m;
    };
    const a = controller(1);
    const b = controller(2);
    await a.start();
    await b.start();
    const brokers = new Map([
      [1, await broker(1)],
      [2, await broker(2)],
      [3, await broker(3)],
    ]);
    await eventually(() => a.isActive() || b.isActive());
    assert.equal(Number(a.isActive()) + Number(b.isActive()), 1);
    const [r] = await brokers
      .get(1)!
      .controller.createTopics([{ name: 'e', numPartitions: 3, replicationFactor: 3, configs: {} }], false);
    assert.equal(r!.errorCode, 0);
    await eventually(() =>
      [...brokers.values()].every(
        (bk) =>
          bk
            .image()
            .topics.get('e')
            ?.partitions.every((p) => p.isr.length === 3) ?? false,
      ),
    );
    const p0 = brokers.get(3)!.image().topics.get('e')!.partitions[0]!;
    // Kill the leader of partition 0 (no deregistration): fenced after the session timeout.
    const victim = p0.leader;
    brokers.get(victim)!.crash();
    brokers.delete(victim);
    const observer = [...brokers.values()][0]!;
    await eventually(() => {
      const p = observer.image().topics.get('e')?.partitions[0];
      return p !== undefined && p.leader !== victim && p.leader > 0 && !p.isr.includes(victim);
    }, 8000);
    assert.equal(observer.image().topics.get('e')!.partitions[0]!.leaderEpoch, p0.leaderEpoch + 1);
    // Kill the active controller: the other takes over and serves requests.
    const [active, standby] = a.isActive() ? [a, b] : [b, a];
    active.crash();
    await eventually(() => standby.isActive(), 8000);
    // SIGKILL an etcd member: admin still works.
    etcd.kill(1);
    await eventually(async () => {
      const [x] = await observer.controller.createTopics(
        [{ name: 'after-kill', numPartitions: 1, replicationFactor: 2, configs: {} }],
        false,
      );
      return x!.errorCode === 0 || x!.errorCode === 36;
    }, 15_000);
    await eventually(() => observer.image().topics.has('after-kill'), 5000);
    await standby.stop();
    for (const bk of brokers.values()) await bk.close();
  });
});

describe('broker start-up on etcd with 10,000 partitions', () => {
  let etcd: EtcdCluster;
  before(async () => {
    etcd = await EtcdCluster.start(1);
  });
  after(() => etcd?.stop());

  it('a broker loads and applies a 10,000-partition snapshot (its speed: bench/metadata.ts)', async () => {
    const clock = new SystemClock();
    const store = new EtcdStore({ endpoints: etcd.endpoints, clock });
    const keys = new MetadataKeys('scale');
    try {
      for (let t = 0; t < 100; t++) {
        const assignment = Array.from({ length: 100 }, (_, p) => [
          1 + (p % 3),
          1 + ((p + 1) % 3),
          1 + ((p + 2) % 3),
        ]);
        const ops: Op[] = [
          {
            type: 'put',
            key: keys.topic(`topic-${t}`),
            value: JSON.stringify({
              topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
              internal: false,
              assignment,
              requestId: null,
            }),
          },
        ];
        for (let p = 0; p < 100; p++) {
          const replicas = assignment[p]!;
          const rec = {
            leader: replicas[0],
            leaderEpoch: 3,
            partitionEpoch: 7,
            replicas,
            isr: replicas,
            addingReplicas: [],
            removingReplicas: [],
          };
          ops.push({ type: 'put', key: keys.partition(`topic-${t}`, p), value: JSON.stringify(rec) });
        }
        // Two transactions per topic: etcd allows 128 operations per transaction.
        await store.txn({ compare: [], success: ops.slice(0, 60) });
        await store.txn({ compare: [], success: ops.slice(60) });
      }
      const started = performance.now();
      const broker = await StoreClusterMetadata.start({
        store,
        clusterId: 'scale',
        broker: { id: 1, host: '127.0.0.1', port: 9092, rack: null },
        scheduler: new TimerScheduler(),
        logger: new MemoryLogger(),
        randomBytes,
      });
      const ms = performance.now() - started;
      const partitions = [...broker.image().topics.values()].reduce((n, t) => n + t.partitions.length, 0);
      assert.equal(partitions, 10_000);
      console.log(`etcd: broker start-up with 10,000 partitions: ${ms.toFixed(0)} ms`);
      await broker.close();
    } finally {
      await store.close();
    }
  });
});
