/**
 * Seed "ISR/OSR 大量宕机后的补员" (section 四, 大量宕机后的完整时序, stages 1–5), replayed on
 * `skiff up --brokers 4`: RF 3 with min.insync.replicas=2 and unclean.leader.election.enable=false,
 * the replicas R0 (leader), R1, R2 on the three brokers that are not the controller (the seed's
 * 5-node cluster keeps brokers beside the replicas; here the fourth broker keeps the controller
 * and answers `skiff topics --describe` while all three replicas are down).
 *
 *   stage 1  R1 down            → ISR {R0,R2}, acks=all writes go on
 *   stage 2  R2 down            → ISR {R0}, acks=all fails with NOT_ENOUGH_REPLICAS (nothing written)
 *   stage 3  R0 (leader) down   → partition offline: `skiff topics --describe` shows Leader: none,
 *                                 `--unavailable-partitions` lists it
 *   stage 4  R1 back, alone     → still offline (a stale replica is not elected, unclean off)
 *   stage 5  R0 back            → it leads again; R1 catches up and rejoins → acks=all succeeds;
 *                                 R2 back → ISR {R0,R1,R2}
 * and every acknowledged record is there at the end, in order (kcat reads the partition).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ScenarioCluster, sleep, waitUntil } from './harness.js';

const TOPIC = 'mytopic';

describe('seed ISR/OSR: mass failure and recovery timeline (RF 3, min.insync.replicas 2, unclean off)', () => {
  let c: ScenarioCluster;
  let r0: number;
  let r1: number;
  let r2: number;
  const acked: string[] = [];
  const values = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  /** acks=all, no retries (a refused batch is reported, not retried into a later stage). */
  const produce = (vs: string[]) =>
    c.produce(TOPIC, vs, ['-X', 'message.send.max.retries=0', '-X', 'enable.idempotence=false']);
  const produceAcked = async (vs: string[]): Promise<void> => {
    const r = await produce(vs);
    assert.equal(r.status, 0, `acks=all refused: ${r.stderr}`);
    acked.push(...vs);
  };

  before(async () => {
    c = await ScenarioCluster.start({
      name: 'seed-14-isr',
      brokers: 4,
      properties: ['unclean.leader.election.enable=false'],
    });
    const controller = await c.controllerId();
    [r0, r1, r2] = [1, 2, 3, 4].filter((id) => id !== controller) as [number, number, number];
    await c.createTopic(TOPIC, {
      assignments: [[r0, r1, r2]],
      configs: { 'min.insync.replicas': '2', 'unclean.leader.election.enable': 'false' },
    });
    await c.waitForLeader(TOPIC, 0, (l) => l === r0, 20_000);
    await produceAcked(values('stage0', 200));
  });

  after(async () => {
    await c?.close();
  });

  it('stage 1: one follower down → ISR shrinks to two, acks=all writes go on', async () => {
    await c.stopBroker(r1);
    const d = await waitUntil(
      'ISR without R1',
      async () => {
        const l = await c.describeLine(TOPIC, 0);
        return l.isr.length === 2 ? l : undefined;
      },
      15_000,
    );
    assert.equal(d.leader, r0);
    assert.deepEqual(d.isr, [r0, r2].sort());
    await produceAcked(values('stage1', 200));
  });

  it('stage 2: two down → ISR {R0}; acks=all fails with NOT_ENOUGH_REPLICAS and writes nothing', async () => {
    await c.stopBroker(r2);
    await c.waitForIsr(TOPIC, 0, [r0], 15_000);
    const under = await c.tool('topics', ['--describe', '--under-min-isr-partitions']);
    assert.equal(under.status, 0, under.stderr);
    assert.match(
      under.stdout,
      new RegExp(`Topic: ${TOPIC}\\tPartition: 0\\tLeader: ${r0}\\t.*\\tIsr: ${r0}\\t`),
    );
    const r = await produce(['refused-0']);
    assert.notEqual(r.status, 0, 'acks=all with ISR {R0} was acknowledged');
    assert.match(r.stderr, /Not enough in-sync replicas|NOT_ENOUGH_REPLICAS/);
  });

  it('stage 3: the leader down too → the partition is offline (Leader: none)', async () => {
    await c.stopBroker(r0);
    const d = await waitUntil(
      'Leader: none',
      async () => {
        const l = await c.describeLine(TOPIC, 0);
        return l.leader === 'none' ? l : undefined;
      },
      15_000,
    );
    console.log(d.line);
    const unavailable = await c.tool('topics', ['--describe', '--unavailable-partitions']);
    assert.equal(unavailable.status, 0, unavailable.stderr);
    assert.match(unavailable.stdout, new RegExp(`Topic: ${TOPIC}\\tPartition: 0\\tLeader: none\\t`));
  });

  it('stage 4: a stale replica (R1) comes back alone → still offline, it is not elected (unclean off)', async () => {
    await c.startBroker(r1); // returns once it listens
    // R1 is up and registered (Metadata lists it)...
    await waitUntil(
      'R1 registered',
      async () => ((await c.liveBrokers()).includes(r1) ? true : undefined),
      15_000,
    );
    // ...and for several heartbeats (500 ms) and a session (3 s) the partition stays leaderless.
    const deadline = Date.now() + 4000;
    while (Date.now() < deadline) {
      const d = await c.describeLine(TOPIC, 0);
      assert.equal(d.leader, 'none', `a stale replica was elected: ${d.line}`);
      await sleep(250);
    }
    // R1 waits for a leader ("进入等待 Leader 状态"): log-dirs does not pretend it is in sync —
    // offsetLag -1 (unknown), where Kafka would print 0.
    const dirs = await c.logDirs(TOPIC);
    assert.equal(dirs.get(r1)?.get(`${TOPIC}-0`)?.offsetLag, -1, JSON.stringify([...(dirs.get(r1) ?? [])]));
    const controller = await c.controllerId();
    assert.doesNotMatch(c.serverLog(controller), /Unclean leader election for mytopic-0/);
    // 写不了: kcat gives up after message.timeout.ms without an acknowledgement.
    const r = await c.produce(TOPIC, ['offline-0'], ['-X', 'message.timeout.ms=2000']);
    assert.notEqual(r.status, 0, 'a write to an offline partition was acknowledged');
    assert.match(r.stderr, /timed out|Local: Message timed out|Leader not available|not available/i);
  });

  it('stage 5: the last leader (R0) comes back and leads; R1 catches up → acks=all succeeds; R2 back → full ISR; nothing acknowledged is lost', async () => {
    await c.startBroker(r0);
    const led = await c.waitForLeader(TOPIC, 0, (l) => l === r0, 30_000);
    assert.ok(led.isr.includes(r0));
    // R1 (stale: it missed stage 1) catches up from R0 and rejoins: min.insync.replicas holds again.
    await c.waitForIsr(TOPIC, 0, [r0, r1], 30_000);
    await produceAcked(values('stage5', 200));
    await c.startBroker(r2);
    await c.waitForIsr(TOPIC, 0, [r0, r1, r2], 30_000);
    await produceAcked(values('stage5b', 100));
    // Every acknowledged record, in order, and nothing that was refused.
    const all = await c.consume(TOPIC);
    assert.deepEqual(all, acked);
    // And the three replicas hold the same bytes.
    await waitUntil(
      'identical replicas',
      async () => {
        const [a, b, d] = [r0, r1, r2].map((id) => c.logBytes(id, TOPIC, 0));
        return a!.equals(b!) && a!.equals(d!) ? true : undefined;
      },
      15_000,
    );
  });
});
