import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { ManualScheduler } from '../../src/common/scheduler.js';
import type { Controller } from '../../src/controller/controller.js';
import { StoreError } from '../../src/metadata/store.js';
import { TestCluster } from './harness.js';

async function cluster(ids: number[]): Promise<{ c: TestCluster; ctl: Controller }> {
  const c = await TestCluster.create();
  for (const id of ids) await c.startBroker(id);
  const ctl = await c.startController(100);
  await c.settle();
  await ctl.whenActive();
  return { c, ctl };
}

describe('controller: fencing, re-election, unclean election', () => {
  let c: TestCluster;
  afterEach(() => c.close());

  it('an admin request the store refuses to forward (an expired lease, etcd out of reach) is answered REQUEST_TIMED_OUT, not thrown', async () => {
    ({ c } = await cluster([1]));
    const b1 = c.brokers.get(1)!;
    const txn = c.store.txn.bind(c.store);
    let refuse = true;
    c.store.txn = async (t) => {
      if (refuse && t.success.some((op) => op.type === 'put' && op.key.includes('request'))) {
        throw new StoreError('lease-not-found', 'etcdserver: requested lease not found');
      }
      return txn(t);
    };
    const create = () =>
      b1.controller.createTopics([{ name: 'r', numPartitions: 1, replicationFactor: 1, configs: {} }], false);
    const [refused] = await create();
    assert.equal(refused!.errorCode, 7, 'REQUEST_TIMED_OUT: the client retries');
    refuse = false;
    const created = create();
    await c.settle();
    const [r] = await created;
    assert.equal(r!.errorCode, 0);
  });

  it('a broker whose lease expires leaves the ISR; its partitions get the next ISR member in assignment order', async () => {
    ({ c } = await cluster([1, 2, 3]));
    const b2 = c.brokers.get(2)!;
    await b2.controller.createTopics(
      [
        {
          name: 't',
          numPartitions: -1,
          replicationFactor: -1,
          assignments: new Map([
            [0, [1, 3, 2]],
            [1, [2, 1, 3]],
          ]),
          configs: {},
        },
      ],
      false,
    );
    await c.settle();
    assert.equal(c.partition('t', 0).leader, 1);
    c.brokers.get(1)!.crash();
    c.brokers.delete(1);
    // Within the session timeout nothing happens.
    await c.advance(8000);
    assert.equal(c.partition('t', 0).leader, 1);
    await c.advance(1500);
    const p0 = c.partition('t', 0);
    assert.deepEqual([p0.leader, p0.leaderEpoch, p0.partitionEpoch, p0.isr], [3, 1, 1, [3, 2]]);
    const p1 = c.partition('t', 1);
    assert.deepEqual(
      [p1.leader, p1.leaderEpoch, p1.partitionEpoch, p1.isr],
      [2, 0, 1, [2, 3]],
      'follower removed, leader epoch kept',
    );
    assert.equal(c.image().brokers.has(1), false);
    // Broker 1 comes back: registered, not in the ISR until its leader proposes it.
    const back = await c.startBroker(1);
    await c.settle();
    assert.ok(back.image().brokers.has(1));
    assert.deepEqual(c.partition('t', 0).isr, [3, 2]);
  });

  it('the last ISR member gone: leader -1, ISR kept as [it]; it leads again when it returns', async () => {
    ({ c } = await cluster([1, 2]));
    await c.brokers.get(2)!.controller.createTopics(
      [
        {
          name: 't',
          numPartitions: -1,
          replicationFactor: -1,
          assignments: new Map([[0, [1, 2]]]),
          configs: {},
        },
      ],
      false,
    );
    await c.settle();
    c.brokers.get(2)!.crash();
    c.brokers.delete(2);
    await c.advance(10_000);
    assert.deepEqual([c.partition('t', 0).leader, c.partition('t', 0).isr], [1, [1]]);
    await c.startBroker(3);
    c.brokers.get(1)!.crash();
    c.brokers.delete(1);
    await c.advance(10_000);
    const p = c.partition('t', 0);
    assert.deepEqual([p.leader, p.isr, p.leaderEpoch], [-1, [1], 1]);
    // Broker 2 returns but is not in the ISR: no clean leader.
    await c.startBroker(2);
    await c.advance(1000);
    assert.equal(c.partition('t', 0).leader, -1);
    await c.startBroker(1);
    await c.advance(1000);
    const q = c.partition('t', 0);
    assert.deepEqual([q.leader, q.isr, q.leaderEpoch], [1, [1], 2]);
  });

  it('unclean.leader.election.enable set on the topic elects the first live replica, ISR just it', async () => {
    ({ c } = await cluster([1, 2, 3]));
    const b3 = c.brokers.get(3)!;
    await b3.controller.createTopics(
      [
        {
          name: 'u',
          numPartitions: -1,
          replicationFactor: -1,
          assignments: new Map([[0, [1, 2]]]),
          configs: {},
        },
      ],
      false,
    );
    await c.settle();
    // The leader shrinks the ISR to itself (follower 2 lagging), then dies.
    const b1 = c.brokers.get(1)!;
    const shrink = await b1.alterPartition([
      { topic: 'u', partitions: [{ partition: 0, leaderEpoch: 0, partitionEpoch: 0, newIsr: [1] }] },
    ]);
    assert.equal(shrink.topics[0]!.partitions[0]!.errorCode, 0);
    b1.crash();
    c.brokers.delete(1);
    await c.advance(10_000);
    assert.deepEqual([c.partition('u', 0).leader, c.partition('u', 0).isr], [-1, [1]]);
    const r = await b3.controller.alterConfigs(
      { type: 'topic', name: 'u' },
      [{ name: 'unclean.leader.election.enable', value: 'true' }],
      true,
      false,
    );
    assert.equal(r.errorCode, 0);
    await c.settle();
    const p = c.partition('u', 0);
    assert.deepEqual([p.leader, p.isr, p.leaderEpoch], [2, [2], 2]);
    assert.ok(c.logger.lines.some((l) => l.includes('Unclean leader election for u-0')));
  });

  it('controlled shutdown moves leadership and ISR membership away before the broker leaves', async () => {
    ({ c } = await cluster([1, 2, 3]));
    await c.brokers.get(1)!.controller.createTopics(
      [
        {
          name: 's',
          numPartitions: -1,
          replicationFactor: -1,
          assignments: new Map([
            [0, [1, 2, 3]],
            [1, [1]],
          ]),
          configs: {},
        },
      ],
      false,
    );
    await c.settle();
    const done = c.brokers.get(1)!.controlledShutdown(5000);
    await c.settle();
    assert.equal(await done, true);
    const p0 = c.partition('s', 0);
    assert.deepEqual([p0.leader, p0.isr], [2, [2, 3]]);
    // A partition whose only replica is shutting down keeps its leader until the broker is gone.
    assert.equal(c.partition('s', 1).leader, 1);
    assert.equal(c.image().brokers.get(1)!.inControlledShutdown, true);
    await c.brokers.get(1)!.close();
    c.brokers.delete(1);
    await c.settle();
    assert.deepEqual([c.partition('s', 1).leader, c.partition('s', 1).isr], [-1, [1]]);
  });
});

describe('controller: AlterPartition validation', () => {
  let c: TestCluster;
  afterEach(() => c.close());

  it('answers with Kafka error codes and bumps only partitionEpoch on an ISR change', async () => {
    ({ c } = await cluster([1, 2, 3]));
    await c.brokers.get(1)!.controller.createTopics(
      [
        {
          name: 'a',
          numPartitions: -1,
          replicationFactor: -1,
          assignments: new Map([[0, [1, 2, 3]]]),
          configs: {},
        },
      ],
      false,
    );
    await c.settle();
    const b1 = c.brokers.get(1)!;
    const one = async (
      item: {
        leaderEpoch?: number;
        partitionEpoch?: number;
        newIsr: number[];
        partition?: number;
        topic?: string;
      },
      via = b1,
    ) => {
      const r = await via.alterPartition([
        {
          topic: item.topic ?? 'a',
          partitions: [
            {
              partition: item.partition ?? 0,
              leaderEpoch: item.leaderEpoch ?? 0,
              partitionEpoch: item.partitionEpoch ?? 0,
              newIsr: item.newIsr,
            },
          ],
        },
      ]);
      return r.errorCode !== 0 ? r.errorCode : r.topics[0]!.partitions[0]!.errorCode;
    };
    assert.equal(await one({ topic: 'nope', newIsr: [1] }), 3);
    assert.equal(await one({ partition: 7, newIsr: [1] }), 3);
    assert.equal(await one({ leaderEpoch: 5, newIsr: [1, 2] }), 74);
    assert.equal(await one({ newIsr: [2, 3] }, c.brokers.get(2)!), 42, 'sender is not the leader');
    assert.equal(await one({ partitionEpoch: 3, newIsr: [1, 2] }), 95);
    assert.equal(await one({ newIsr: [1, 4] }), 42, 'not a replica');
    assert.equal(await one({ newIsr: [2, 3] }), 42, 'leader missing');
    const ok = await b1.alterPartition([
      { topic: 'a', partitions: [{ partition: 0, leaderEpoch: 0, partitionEpoch: 0, newIsr: [1, 2] }] },
    ]);
    assert.deepEqual(ok.topics[0]!.partitions[0], {
      partition: 0,
      errorCode: 0,
      leaderId: 1,
      leaderEpoch: 0,
      isr: [1, 2],
      partitionEpoch: 1,
    });
    await c.settle();
    assert.deepEqual(
      [c.partition('a', 0).isr, c.partition('a', 0).partitionEpoch, c.partition('a', 0).leaderEpoch],
      [[1, 2], 1, 0],
    );
    // The stale partition epoch of the first proposal is now refused.
    assert.equal(await one({ partitionEpoch: 0, newIsr: [1, 2, 3] }), 95);
    // A fenced replica cannot join.
    c.brokers.get(3)!.crash();
    c.brokers.delete(3);
    await c.advance(10_000);
    assert.equal(await one({ partitionEpoch: 1, newIsr: [1, 2, 3] }), 107);
    // A request from a replaced incarnation of the sender: STALE_BROKER_EPOCH.
    const stale = c.brokers.get(2)!;
    const epochBefore = stale.brokerEpoch();
    const again = await c.startBroker(2);
    assert.ok(again.brokerEpoch() > epochBefore);
    await c.settle();
    assert.equal(await one({ newIsr: [2] }, stale), 77);
  });
});

describe('controller election', () => {
  let c: TestCluster;
  afterEach(() => c.close());

  it('two controllers: exactly one active; the other takes over when the first dies', async () => {
    c = await TestCluster.create();
    for (const id of [1, 2]) await c.startBroker(id);
    const a = await c.startController(1, { sessionTimeoutMs: 3000, heartbeatIntervalMs: 1000 });
    const b = await c.startController(2, { sessionTimeoutMs: 3000, heartbeatIntervalMs: 1000 });
    await c.advance(2000);
    assert.equal(Number(a.isActive()) + Number(b.isActive()), 1);
    const [active, standby] = a.isActive() ? [a, b] : [b, a];
    await c.brokers
      .get(1)!
      .controller.createTopics([{ name: 't', numPartitions: 2, replicationFactor: 2, configs: {} }], false);
    active.crash();
    await c.advance(4000);
    assert.equal(standby.isActive(), true);
    assert.equal(c.image().controllerId, standby === a ? 1 : 2);
    const [r] = await c.brokers
      .get(2)!
      .controller.createTopics([{ name: 'u', numPartitions: 1, replicationFactor: 2, configs: {} }], false);
    assert.equal(r!.errorCode, 0);
  });

  it('a forced lease expiry mid-change: the old controller cannot commit; the new one changes the partition once', async () => {
    c = await TestCluster.create();
    for (const id of [1, 2, 3]) await c.startBroker(id);
    let hookArmed = false;
    let blocked = 0;
    let standby: Controller | null = null;
    const own = new ManualScheduler(c.clock);
    c.extraSchedulers.push(own);
    const a = await c.startController(1, {
      sessionTimeoutMs: 3000,
      heartbeatIntervalMs: 1000,
      scheduler: own,
      beforeCommit: async (what) => {
        if (!hookArmed || what !== 'reconcile') return;
        hookArmed = false;
        blocked++;
        // The controller stalls right before its write (a long GC pause): its timers do not run,
        // its lease runs out, and the standby wins the election.
        c.paused.add(own);
        for (let i = 0; i < 16 && !standby!.isActive(); i++) {
          c.clock.advance(250);
          c.store.checkLeases();
          await c.settle(5);
        }
        c.paused.delete(own);
        assert.equal(standby!.isActive(), true);
      },
    });
    await c.settle();
    await a.whenActive();
    standby = await c.startController(2, { sessionTimeoutMs: 3000, heartbeatIntervalMs: 1000 });
    await c.settle();
    await c.brokers.get(1)!.controller.createTopics(
      [
        {
          name: 'f',
          numPartitions: -1,
          replicationFactor: -1,
          assignments: new Map([[0, [3, 1, 2]]]),
          configs: {},
        },
      ],
      false,
    );
    await c.settle();
    hookArmed = true;
    c.brokers.get(3)!.crash();
    c.brokers.delete(3);
    await c.advance(10_000);
    assert.equal(blocked, 1, 'the old controller reached its commit');
    assert.equal(a.isActive(), false);
    assert.equal(standby.isActive(), true);
    const p = c.partition('f', 0);
    assert.deepEqual(
      [p.leader, p.isr, p.leaderEpoch, p.partitionEpoch],
      [1, [1, 2], 1, 1],
      'changed exactly once',
    );
    assert.ok(c.logger.lines.some((l) => l.includes('controller 1: inactive (fenced')));
  });
});

describe('controller: preferred leaders', () => {
  let c: TestCluster;
  afterEach(() => c.close());

  it('ElectLeaders: preferred and unclean, with Kafka error codes', async () => {
    ({ c } = await cluster([1, 2, 3]));
    const b3 = c.brokers.get(3)!;
    await b3.controller.createTopics(
      [
        {
          name: 'p',
          numPartitions: -1,
          replicationFactor: -1,
          assignments: new Map([
            [0, [1, 2]],
            [1, [2, 3]],
          ]),
          configs: {},
        },
      ],
      false,
    );
    await c.settle();
    // Broker 1 restarts: partition 0 moves to 2; broker 1 is back but out of the ISR.
    c.brokers.get(1)!.crash();
    c.brokers.delete(1);
    await c.advance(10_000);
    await c.startBroker(1);
    await c.settle();
    assert.equal(c.partition('p', 0).leader, 2);
    const notAvailable = await b3.electLeaders('preferred', [{ topic: 'p', partitions: [0, 1, 9] }]);
    assert.deepEqual(
      notAvailable.topics[0]!.partitions.map((x) => x.errorCode),
      [80, 84, 3],
    );
    // The leader takes broker 1 back into the ISR; now the preferred election moves leadership.
    const p0 = c.partition('p', 0);
    const expand = await c.brokers.get(2)!.alterPartition([
      {
        topic: 'p',
        partitions: [
          { partition: 0, leaderEpoch: p0.leaderEpoch, partitionEpoch: p0.partitionEpoch, newIsr: [1, 2] },
        ],
      },
    ]);
    assert.equal(expand.topics[0]!.partitions[0]!.errorCode, 0);
    const elected = await b3.electLeaders('preferred', null);
    assert.deepEqual(elected.topics, [
      { topic: 'p', partitions: [{ partition: 0, errorCode: 0, errorMessage: null }] },
    ]);
    await c.settle();
    assert.deepEqual([c.partition('p', 0).leader, c.partition('p', 0).leaderEpoch], [1, p0.leaderEpoch + 1]);
    const unclean = await b3.electLeaders('unclean', [{ topic: 'p', partitions: [0] }]);
    assert.equal(unclean.topics[0]!.partitions[0]!.errorCode, 84);
  });

  it('auto.leader.rebalance.enable moves leadership back to the preferred replica', async () => {
    ({ c } = await cluster([1, 2]));
    await c.brokers.get(2)!.controller.createTopics(
      [
        {
          name: 'r',
          numPartitions: -1,
          replicationFactor: -1,
          assignments: new Map([[0, [1, 2]]]),
          configs: {},
        },
      ],
      false,
    );
    await c.settle();
    // Controlled shutdown of 1 moves leadership to 2; broker 1 returns and rejoins the ISR.
    await c.brokers.get(1)!.controlledShutdown(1000);
    await c.settle();
    await c.brokers.get(1)!.close();
    c.brokers.delete(1);
    await c.startBroker(1);
    await c.settle();
    const p = c.partition('r', 0);
    assert.equal(p.leader, 2);
    await c.brokers.get(2)!.alterPartition([
      {
        topic: 'r',
        partitions: [
          { partition: 0, leaderEpoch: p.leaderEpoch, partitionEpoch: p.partitionEpoch, newIsr: [1, 2] },
        ],
      },
    ]);
    // leader.imbalance.check.interval.seconds defaults to 300.
    await c.advance(301_000, 2000);
    assert.equal(c.partition('r', 0).leader, 1);
    assert.ok(c.logger.lines.some((l) => l.includes('leader imbalance')));
  });
});

describe('controller: restarts between controllers, name collisions', () => {
  let c: TestCluster;
  afterEach(() => c.close());

  it('a broker that restarted while no controller was active leaves the ISR when the next one starts', async () => {
    let ctl: Controller;
    ({ c, ctl } = await cluster([1, 2, 3]));
    await c.brokers.get(1)!.controller.createTopics(
      [
        {
          name: 'r',
          numPartitions: -1,
          replicationFactor: -1,
          assignments: new Map([[0, [2, 1, 3]]]),
          configs: {},
        },
      ],
      false,
    );
    await c.settle();
    await ctl.stop();
    // Broker 2 restarts at once: a new registration (new epoch) replaces the old before it expires.
    c.brokers.get(2)!.crash();
    await c.startBroker(2);
    await c.settle();
    assert.deepEqual(c.partition('r', 0).isr, [2, 1, 3], 'nobody acted yet');
    const next = await c.startController(101);
    await c.settle();
    await next.whenActive();
    await c.settle();
    const p = c.partition('r', 0);
    assert.deepEqual([p.leader, p.isr, p.leaderEpoch], [1, [1, 3], 1]);
  });

  it("refuses a topic whose name collides with another's once '.' and '_' are equated", async () => {
    ({ c } = await cluster([1]));
    const b = c.brokers.get(1)!;
    await b.controller.createTopics(
      [{ name: 'a.b', numPartitions: 1, replicationFactor: 1, configs: {} }],
      false,
    );
    const [r] = await b.controller.createTopics(
      [{ name: 'a_b', numPartitions: 1, replicationFactor: 1, configs: {} }],
      false,
    );
    assert.deepEqual([r!.errorCode, r!.errorMessage], [17, "Topic 'a_b' collides with existing topic: a.b"]);
    const [internal] = await b.controller.createTopics(
      [{ name: '__consumer_offsets', numPartitions: 1, replicationFactor: 1, configs: {} }],
      false,
    );
    assert.equal(internal!.errorCode, 0);
    await c.settle();
    assert.equal(c.image().topics.get('__consumer_offsets')!.internal, true);
    assert.equal(c.image().topics.get('a.b')!.internal, false);
  });

  it('a restarted broker is fenced until it is ready: out of the image, and its old leadership moves at once', async () => {
    ({ c } = await cluster([1, 2, 3]));
    const b2 = c.brokers.get(2)!;
    await b2.controller.createTopics(
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
    assert.equal(c.partition('t', 0).leader, 1);
    // Broker 1 dies and comes back before its old lease expires: the new registration is fenced.
    c.brokers.get(1)!.crash();
    const restarted = await c.startBroker(1, null, false);
    await c.settle();
    assert.equal(b2.image().brokers.has(1), false, 'a fenced broker is not in the image');
    assert.equal(restarted.image().brokers.has(1), false);
    assert.equal(c.partition('t', 0).leader, 2, 'leadership left the fenced broker');
    assert.deepEqual([...c.partition('t', 0).isr].sort(), [2, 3]);
    await restarted.unfence();
    await c.settle();
    assert.equal(b2.image().brokers.has(1), true, 'unfenced: back in the image');
    assert.equal(c.partition('t', 0).leader, 2);
  });

  it('a broker whose lease ran out while it started (its loop busy, no heartbeat) registers again when it unfences', async () => {
    ({ c } = await cluster([2]));
    const starting = await c.startBroker(1, null, false);
    await c.settle();
    // Longer than the session without running the heartbeat: the lease is gone.
    c.clock.advance(20_000);
    c.store.checkLeases();
    await starting.unfence();
    await c.settle();
    assert.equal(c.brokers.get(2)!.image().brokers.has(1), true, 'registered again, unfenced');
    // And its session lives on: heartbeats keep the new lease.
    await c.advance(20_000);
    assert.equal(c.brokers.get(2)!.image().brokers.has(1), true);
  });

  it('a lease that runs out before the registration is put on it (a starved start-up): registered on a new lease', async () => {
    ({ c } = await cluster([2]));
    const grant = c.store.grantLease.bind(c.store);
    let starved = 2;
    c.store.grantLease = async (ttlMs) => {
      const lease = await grant(ttlMs);
      // The process gets no CPU for longer than the session between the grant and the put.
      if (starved-- > 0) {
        c.clock.advance(ttlMs + 1);
        c.store.checkLeases();
      }
      return lease;
    };
    await c.startBroker(1);
    await c.settle();
    assert.equal(c.brokers.get(2)!.image().brokers.has(1), true, 'registered on its third lease');
    await c.advance(20_000);
    assert.equal(c.brokers.get(2)!.image().brokers.has(1), true, 'and its session lives on');
  });
});
