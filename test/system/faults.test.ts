/**
 * Faults on real processes across hosts (issue 23): three `skiff broker` processes, each in a
 * network namespace of its own with its own address, etcd in a fourth, the checker's idempotent
 * acks=all producers in the root namespace. RF 3, min.insync.replicas 2. Per scenario, one topic
 * under load while the fault happens and heals; then the checker reads every partition back from
 * its leader — no acknowledged record lost or moved, no duplicate, order kept — and compares the
 * replicas up to the high watermark, and the scenario's line is printed:
 * `records acknowledged N, lost 0, duplicated 0, recovery Xs` (recovery: from the fault to the
 * first acks=all produce sent after it that succeeded).
 *
 * Scenarios: a. the leader cut off (first from the brokers and etcd only, so it appends what it
 * cannot replicate, then altogether) — it truncates by leader epoch after the heal and rejoins;
 * b. a follower cut off — it leaves the ISR, produce goes on with two; c. a flaky link between two
 * brokers; d. the whole cluster SIGKILLed and restarted; e. etcd gone for 30 s — produce and fetch
 * go on, CreateTopics is refused with a retriable error, and works again once etcd is back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import { Admin } from '../../src/client/admin.js';
import { KafkaClient } from '../../src/client/kafka-client.js';
import { parseBootstrap, systemRuntime } from '../../src/client/runtime.js';
import { adminFor, sleep, waitUntil } from '../cluster/helpers.js';
import {
  agreedPartitions,
  clean,
  explain,
  Load,
  readBack,
  replicaFilesDiffer,
  replicasDiffer,
  summary,
  verify,
} from './checker.js';
import { BROKER_PORT, Hosts, hostsUnavailable } from './hosts.js';

const PARTITIONS = 3;
/** How long the load runs before a fault, and on after a heal. */
const STEADY_MS = 1500;
/** A cut-off broker is out of its sessions and ISRs within these (etcd leases are whole seconds). */
const BROKER_PROPS = [
  'broker.session.timeout.ms=2000',
  'broker.heartbeat.interval.ms=500',
  'replica.lag.time.max.ms=3000',
  'min.insync.replicas=2',
  'default.replication.factor=3',
];
const REJOIN_MS = 60_000;
/** How long etcd stays away in scenario e. */
const ETCD_OUTAGE_MS = 30_000;

describe('faults across hosts: nothing acknowledged lost', { timeout: 300_000 }, () => {
  let hosts: Hosts;

  before(async () => {
    const why = hostsUnavailable();
    if (why !== null) assert.fail(why);
    hosts = await Hosts.create(3, { properties: BROKER_PROPS });
    await Promise.all([1, 2, 3].map((id) => hosts.startBroker(id)));
  });

  after(async () => {
    await hosts?.destroy();
  });

  /** A new RF 3 topic with every partition led and its ISR full. */
  async function createTopic(topic: string): Promise<void> {
    const { admin, close } = adminFor(hosts.bootstrap);
    try {
      const [r] = await admin.createTopics([
        {
          name: topic,
          numPartitions: PARTITIONS,
          replicationFactor: 3,
          configs: new Map([['min.insync.replicas', '2']]),
        },
      ]);
      if (r!.error !== null) throw r!.error;
    } finally {
      close();
    }
    await waitForIsr(topic, [1, 2, 3], 30_000);
  }

  /**
   * The partitions' metadata once the brokers `askIds` (all by default: every broker reachable)
   * agree on it and `check` holds for every partition.
   */
  function waitForPartitions(
    topic: string,
    what: string,
    check: (p: { leader: number; isr: readonly number[] }) => boolean,
    timeoutMs: number,
    askIds: readonly number[] = [1, 2, 3],
  ) {
    return waitUntil(
      `${topic}: ${what}`,
      async () => {
        const ps = await agreedPartitions(
          askIds.map((id) => `${hosts.address(id)}:${BROKER_PORT}`),
          topic,
        );
        return ps !== undefined && ps.length === PARTITIONS && ps.every(check) ? ps : undefined;
      },
      timeoutMs,
      200,
    );
  }

  const waitForIsr = (topic: string, ids: readonly number[], timeoutMs: number) =>
    waitForPartitions(
      topic,
      `led, ISR ${ids.join(',')}`,
      (p) => p.leader > 0 && ids.every((id) => p.isr.includes(id)),
      timeoutMs,
    );

  /** The end of every broker's output, for a failure's message. */
  const brokerTails = () =>
    [...hosts.brokers].map(([id, b]) => `--- broker ${id}:\n${b.output().slice(-2000)}`).join('\n');

  /** Stops the load, reads back and verifies; prints and returns the scenario's line. */
  async function check(t: TestContext, load: Load, topic: string, recovery: number): Promise<void> {
    await load.stop();
    await waitForIsr(topic, [1, 2, 3], REJOIN_MS);
    const { logs, highWatermarks } = await readBack(hosts.bootstrap, topic, PARTITIONS);
    const verdict = verify(load.acks, logs);
    const line = summary(verdict, recovery);
    t.diagnostic(`${topic}: ${line}${load.failed > 0 ? ` (${load.failed} never acknowledged)` : ''}`);
    assert.ok(verdict.acknowledged > 0, 'nothing was acknowledged');
    assert.ok(clean(verdict), `${line}: ${explain(verdict)}\n${brokerTails()}`);
    assert.equal(await replicasDiffer(hosts.bootstrap, topic), null);
    assert.equal(
      replicaFilesDiffer(
        [1, 2, 3].map((id) => hosts.logDir(id)),
        topic,
        highWatermarks,
      ),
      null,
    );
  }

  it('a. the leader cut off while producing: nothing lost; it truncates by leader epoch and rejoins', async (t) => {
    const topic = 'leader-cut';
    await createTopic(topic);
    const [p0] = await waitForIsr(topic, [1, 2, 3], 10_000);
    const victim = p0!.leader;
    const load = new Load(hosts.bootstrap, topic, PARTITIONS);
    try {
      await sleep(STEADY_MS);
      // First cut off from the other brokers and etcd only: the clients' records still reach it
      // and are appended, but cannot be replicated nor acknowledged (min.insync.replicas 2) — a
      // tail the new leader never has. Then its link goes down altogether.
      const faultMs = Date.now();
      hosts.isolateFromCluster(victim);
      await sleep(STEADY_MS);
      hosts.cut(`b${victim}`);
      hosts.endIsolation(victim);
      const others = [1, 2, 3].filter((id) => id !== victim);
      await waitForPartitions(
        topic,
        `not led by ${victim}`,
        (p) => others.includes(p.leader),
        30_000,
        others,
      );
      const recovery = await load.acknowledgedSince(faultMs);
      await sleep(STEADY_MS);
      hosts.heal(`b${victim}`);
      await waitForIsr(topic, [1, 2, 3], REJOIN_MS);
      // The divergent tail goes: truncated to where the new leader's epoch began.
      await hosts
        .broker(victim)
        .waitFor(new RegExp(`Truncating partition ${topic}-0 with TruncationState.*diverging epoch`), 30_000);
      await check(t, load, topic, recovery);
    } finally {
      await load.stop();
    }
  });

  it('b. a follower cut off: it leaves the ISR, produce goes on with two, it rejoins after the heal', async (t) => {
    const topic = 'follower-cut';
    await createTopic(topic);
    const [p0] = await waitForIsr(topic, [1, 2, 3], 10_000);
    const victim = p0!.isr.find((id) => id !== p0!.leader)!;
    const load = new Load(hosts.bootstrap, topic, PARTITIONS);
    try {
      await sleep(STEADY_MS);
      const faultMs = Date.now();
      hosts.cut(`b${victim}`);
      await waitForPartitions(
        topic,
        `${victim} out of every ISR`,
        (p) => p.leader !== victim && p.leader > 0 && !p.isr.includes(victim),
        30_000,
        [1, 2, 3].filter((id) => id !== victim),
      );
      const recovery = await load.acknowledgedSince(faultMs);
      // Produce goes on with two in the ISR.
      const acked = load.acks.length;
      await sleep(STEADY_MS);
      assert.ok(load.acks.length > acked, 'records acknowledged with the follower out of the ISR');
      hosts.heal(`b${victim}`);
      await check(t, load, topic, recovery);
    } finally {
      await load.stop();
    }
  });

  it('c. a flaky link between two brokers under load, then healed', async (t) => {
    const topic = 'flaky-link';
    await createTopic(topic);
    const load = new Load(hosts.bootstrap, topic, PARTITIONS);
    try {
      await sleep(STEADY_MS);
      const how = hosts.flaky(1, 2);
      t.diagnostic(`flaky link between brokers 1 and 2: ${how}`);
      await sleep(8000);
      const healMs = Date.now();
      hosts.steady();
      const recovery = await load.acknowledgedSince(healMs);
      await sleep(STEADY_MS);
      await check(t, load, topic, recovery);
    } finally {
      hosts.steady();
      await load.stop();
    }
  });

  it('d. the whole cluster SIGKILLed at once and restarted: nothing acknowledged lost', async (t) => {
    const topic = 'cluster-kill';
    await createTopic(topic);
    const load = new Load(hosts.bootstrap, topic, PARTITIONS);
    try {
      await sleep(STEADY_MS);
      const faultMs = Date.now();
      await Promise.all([1, 2, 3].map((id) => hosts.kill(id)));
      await Promise.all([1, 2, 3].map((id) => hosts.startBroker(id)));
      const recovery = await load.acknowledgedSince(faultMs);
      t.diagnostic(`brokers restarted in ${((Date.now() - faultMs) / 1000).toFixed(2)}s`);
      await sleep(STEADY_MS);
      await check(t, load, topic, recovery);
    } finally {
      await load.stop();
    }
  });

  it('e. etcd lost for 30 s: produce and fetch go on, CreateTopics is refused retriably, all recovers when it returns', async (t) => {
    const topic = 'etcd-outage';
    await createTopic(topic);
    const load = new Load(hosts.bootstrap, topic, PARTITIONS);
    try {
      await sleep(STEADY_MS);
      const faultMs = Date.now();
      hosts.etcd.kill(0);
      // Produce needs no metadata change: acknowledged on with the store gone.
      await load.acknowledgedSince(faultMs, 10_000);
      // Fetch too: everything acknowledged so far reads back from the leaders.
      const before = [...load.acks];
      const during = verify(before, (await readBack(hosts.bootstrap, topic, PARTITIONS)).logs);
      assert.equal(during.lost.length, 0, `read back with etcd gone: ${explain(during)}`);
      // A new topic needs the store: refused with a retriable error, not hung, not a crash.
      const client = new KafkaClient({
        bootstrap: parseBootstrap(hosts.bootstrap),
        clientId: 'etcd-outage-admin',
        runtime: systemRuntime(),
        requestTimeoutMs: 40_000,
        retries: 0,
      });
      try {
        const [r] = await new Admin(client).createTopics([
          { name: 'needs-the-store', numPartitions: 1, replicationFactor: 3, configs: new Map() },
        ]);
        assert.ok(r!.error !== null, 'CreateTopics succeeded with etcd gone');
        assert.ok(r!.error.retriable, `CreateTopics refused with ${r!.error.message}: not retriable`);
        t.diagnostic(`CreateTopics with etcd gone: ${r!.error.errorName}`);
      } finally {
        client.close();
      }
      const acked = load.acks.length;
      await sleep(Math.max(0, faultMs + ETCD_OUTAGE_MS - Date.now()));
      assert.ok(load.acks.length > acked, 'produce went on through the outage');
      const healMs = Date.now();
      await hosts.etcd.restart(0);
      // Back: a broker whose keep-alive did not get through in the lease's first seconds after
      // etcd's return registers again; then a change through the store works again.
      const { admin, close } = adminFor(hosts.bootstrap);
      try {
        await waitUntil(
          'three brokers registered',
          async () => ((await admin.describeCluster()).brokers.size === 3 ? true : undefined),
          REJOIN_MS,
          200,
        );
      } finally {
        close();
      }
      await createTopic('after-the-outage');
      t.diagnostic(`CreateTopics again ${((Date.now() - healMs) / 1000).toFixed(2)}s after etcd returned`);
      const recovery = await load.acknowledgedSince(faultMs);
      await check(t, load, topic, recovery);
    } finally {
      await load.stop();
    }
  });
});
