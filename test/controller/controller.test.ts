import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { assignReplicas } from '../../src/controller/replica-assignment.js';
import { seededRandom, TestCluster } from './harness.js';

describe('controller: topics and configs', () => {
  let c: TestCluster;
  beforeEach(async () => {
    c = await TestCluster.create();
    for (const id of [1, 2, 3]) await c.startBroker(id);
    const ctl = await c.startController(1);
    await c.settle();
    await ctl.whenActive();
  });
  afterEach(() => c.close());

  it('creates a topic with a balanced assignment, every replica in the ISR, on every broker', async () => {
    const b1 = c.brokers.get(1)!;
    const [r] = await b1.controller.createTopics(
      [{ name: 't', numPartitions: 3, replicationFactor: 3, configs: {} }],
      false,
    );
    assert.equal(r!.errorCode, 0);
    assert.equal(r!.numPartitions, 3);
    assert.equal(r!.replicationFactor, 3);
    await c.settle();
    for (const b of c.brokers.values()) {
      const t = b.image().topics.get('t')!;
      assert.equal(t.topicId, r!.topicId);
      assert.deepEqual(
        t.partitions.map((p) => [...p.isr].sort()),
        [
          [1, 2, 3],
          [1, 2, 3],
          [1, 2, 3],
        ],
      );
    }
    const leaders = c
      .image()
      .topics.get('t')!
      .partitions.map((p) => p.leader);
    assert.deepEqual([...leaders].sort(), [1, 2, 3], 'one leader per broker');
    for (const p of c.image().topics.get('t')!.partitions) {
      assert.equal(p.leader, p.replicas[0]);
      assert.equal(p.leaderEpoch, 0);
      assert.equal(p.partitionEpoch, 0);
    }
    assert.equal(c.image().controllerId, 1);
  });

  it('refuses bad topics with Kafka error codes and creates nothing on validateOnly', async () => {
    const b = c.brokers.get(2)!;
    await b.controller.createTopics(
      [{ name: 'dup', numPartitions: 1, replicationFactor: 1, configs: {} }],
      false,
    );
    const results = await b.controller.createTopics(
      [
        { name: 'dup', numPartitions: 1, replicationFactor: 1, configs: {} },
        { name: 'rf', numPartitions: 1, replicationFactor: 4, configs: {} },
        { name: 'np', numPartitions: 0, replicationFactor: 1, configs: {} },
        { name: 'bad/name', numPartitions: 1, replicationFactor: 1, configs: {} },
        { name: 'cfg', numPartitions: 1, replicationFactor: 1, configs: { 'retention.mss': '1' } },
        { name: 'cfg2', numPartitions: 1, replicationFactor: 1, configs: { 'retention.ms': 'soon' } },
        {
          name: 'asg',
          numPartitions: -1,
          replicationFactor: -1,
          assignments: new Map([[0, [1, 9]]]),
          configs: {},
        },
        { name: 'dry', numPartitions: 2, replicationFactor: 2, configs: {} },
      ],
      false,
    );
    assert.deepEqual(
      results.map((r) => r.errorCode),
      [36, 38, 37, 17, 40, 40, 39, 0],
    );
    assert.match(results[1]!.errorMessage!, /only 3 broker\(s\) are registered/);
    const [dry] = await b.controller.createTopics(
      [{ name: 'dry2', numPartitions: 2, replicationFactor: 2, configs: {} }],
      true,
    );
    assert.equal(dry!.errorCode, 0);
    await c.settle();
    assert.equal(c.image().topics.has('dry2'), false);
    assert.equal(c.image().topics.has('dry'), true);
    // Defaults from the cluster-wide dynamic config.
    const [d] = await b.controller.createTopics(
      [{ name: 'defaults', numPartitions: -1, replicationFactor: -1, configs: {} }],
      false,
    );
    assert.deepEqual([d!.numPartitions, d!.replicationFactor], [1, 1]);
  });

  it('answers a CreateTopics whose first topic ends in a chunk of ISR history alone, without waiting for another write', async () => {
    // 50 partitions: a head op and 100 partition ops (a partition key and its ISR history entry
    // each) fill one 100-op transaction and leave the last history entry to a transaction of its
    // own, outside the watched root. The controller waited for that revision to reach its image,
    // which only a later write under the root (the request's timeout, 30 s) ever brought.
    const b = c.brokers.get(2)!;
    const answered: { name: string; errorCode: number }[][] = [];
    void b.controller
      .createTopics(
        [
          { name: 'fifty', numPartitions: 50, replicationFactor: 1, configs: {} },
          { name: 'after', numPartitions: 1, replicationFactor: 1, configs: {} },
        ],
        false,
      )
      .then((r) => answered.push(r));
    // No time passes: nothing but the controller's own writes moves the store.
    for (let i = 0; i < 20 && answered.length === 0; i++) await c.settle();
    const inTime = answered.length > 0;
    // A stuck controller is freed by the request's timeout (its key deleted), so the test ends.
    if (!inTime) await c.advance(6000);
    assert.ok(inTime, 'answered with no other write to the store');
    assert.deepEqual(
      (answered[0] ?? []).map((r) => [r.name, r.errorCode]),
      [
        ['fifty', 0],
        ['after', 0],
      ],
    );
    assert.equal(c.image().topics.get('fifty')?.partitions.length, 50);
    assert.equal(c.image().topics.get('after')?.partitions.length, 1);
  });

  it('explicit assignments, createPartitions and deleteTopics', async () => {
    const b = c.brokers.get(1)!;
    const assignments = new Map([
      [0, [3, 1]],
      [1, [2, 3]],
    ]);
    const [r] = await b.controller.createTopics(
      [{ name: 'x', numPartitions: -1, replicationFactor: -1, assignments, configs: {} }],
      false,
    );
    assert.equal(r!.errorCode, 0);
    await c.settle();
    assert.deepEqual(c.partition('x', 0).replicas, [3, 1]);
    assert.equal(c.partition('x', 0).leader, 3);
    const bad = await b.controller.createPartitions(
      [
        { name: 'x', totalCount: 1 },
        { name: 'nope', totalCount: 3 },
      ],
      false,
    );
    assert.deepEqual(
      bad.map((x) => x.errorCode),
      [37, 3],
    );
    const [grown] = await b.controller.createPartitions([{ name: 'x', totalCount: 5 }], false);
    assert.equal(grown!.errorCode, 0);
    await c.settle();
    assert.equal(c.image().topics.get('x')!.partitions.length, 5);
    assert.ok(
      c
        .image()
        .topics.get('x')!
        .partitions.every((p) => p.replicas.length === 2 && p.leader > 0),
    );
    const del = await b.controller.deleteTopics(['x', 'missing']);
    assert.deepEqual(
      del.map((x) => x.errorCode),
      [0, 3],
    );
    await c.settle();
    assert.equal(c.image().topics.has('x'), false);
  });

  it('alterConfigs: validated, stored, seen by every broker; replica.lag.time.max.ms is dynamic', async () => {
    const b = c.brokers.get(3)!;
    await b.controller.createTopics(
      [{ name: 't', numPartitions: 1, replicationFactor: 1, configs: { 'retention.ms': '1000' } }],
      false,
    );
    const set = await b.controller.alterConfigs(
      { type: 'topic', name: 't' },
      [{ name: 'min.insync.replicas', value: '2' }],
      true,
      false,
    );
    assert.equal(set.errorCode, 0);
    await c.settle();
    assert.deepEqual(c.brokers.get(1)!.image().topicConfigs.get('t'), {
      'min.insync.replicas': '2',
      'retention.ms': '1000',
    });
    const replaced = await b.controller.alterConfigs(
      { type: 'topic', name: 't' },
      [{ name: 'retention.ms', value: '5' }],
      false,
      false,
    );
    assert.equal(replaced.errorCode, 0);
    await c.settle();
    assert.deepEqual(c.image().topicConfigs.get('t'), { 'retention.ms': '5' });
    const lag = await b.controller.alterConfigs(
      { type: 'broker', id: '2' },
      [{ name: 'replica.lag.time.max.ms', value: '5000' }],
      true,
      false,
    );
    assert.equal(lag.errorCode, 0);
    const dflt = await b.controller.alterConfigs(
      { type: 'broker', id: '' },
      [{ name: 'follower.replication.throttled.rate', value: '1000' }],
      true,
      false,
    );
    assert.equal(dflt.errorCode, 0);
    await c.settle();
    assert.deepEqual(c.brokers.get(2)!.image().brokerConfigs.get('2'), { 'replica.lag.time.max.ms': '5000' });
    assert.deepEqual(c.image().brokerConfigs.get('<default>'), {
      'follower.replication.throttled.rate': '1000',
    });
    // A name Kafka does not define is a custom config: stored, as Kafka's controller does.
    const custom = await b.controller.alterConfigs(
      { type: 'broker', id: '2' },
      [{ name: 'no.such', value: '1' }],
      true,
      false,
    );
    assert.deepEqual(custom, { errorCode: 0, errorMessage: null });
    await c.settle();
    assert.equal(c.image().brokerConfigs.get('2')!['no.such'], '1');
    const fixed = await b.controller.alterConfigs(
      { type: 'broker', id: '2' },
      [{ name: 'replica.fetch.max.bytes', value: '1' }],
      true,
      false,
    );
    assert.equal(fixed.errorCode, 42);
    const missing = await b.controller.alterConfigs(
      { type: 'topic', name: 'zz' },
      [{ name: 'retention.ms', value: '1' }],
      true,
      false,
    );
    assert.equal(missing.errorCode, 3);
    const deleted = await b.controller.alterConfigs(
      { type: 'broker', id: '2' },
      [
        { name: 'replica.lag.time.max.ms', value: null },
        { name: 'no.such', value: null },
      ],
      true,
      false,
    );
    assert.equal(deleted.errorCode, 0);
    await c.settle();
    assert.equal(c.image().brokerConfigs.has('2'), false);
  });
});

describe('replica assignment', () => {
  it('rack-aware: every partition spans all racks and leaders are spread', () => {
    const brokers = [1, 2, 3, 4, 5, 6].map((id) => ({ id, rack: `r${id % 3}` }));
    const rack = new Map(brokers.map((b) => [b.id, b.rack]));
    const a = assignReplicas(brokers, 12, 3, seededRandom(7).int);
    for (const replicas of a) {
      assert.equal(new Set(replicas).size, 3);
      assert.equal(new Set(replicas.map((r) => rack.get(r))).size, 3, `racks of ${replicas}`);
    }
    const leaders = new Map<number, number>();
    for (const r of a) leaders.set(r[0]!, (leaders.get(r[0]!) ?? 0) + 1);
    assert.deepEqual([...leaders.values()], [2, 2, 2, 2, 2, 2]);
  });

  it('rack-unaware: distinct replicas, leaders round-robin', () => {
    const brokers = [1, 2, 3, 4].map((id) => ({ id, rack: null }));
    const a = assignReplicas(brokers, 8, 3, seededRandom(3).int);
    for (const r of a) assert.equal(new Set(r).size, 3);
    const leaders = a.map((r) => r[0]!);
    for (const id of [1, 2, 3, 4]) assert.equal(leaders.filter((l) => l === id).length, 2);
  });
});
