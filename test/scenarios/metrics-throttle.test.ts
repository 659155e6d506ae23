/**
 * Issue 18's acceptance for the metrics, on `skiff up --brokers 3 --http-port` (its /metrics: every
 * broker's, merged, with skiff_broker_up): a topic of RF 3 with the seed-13.3 throttles (1 MiB/s on
 * both sides, every replica throttled); a follower stopped (skiff_broker_up 0, the partition
 * under-replicated in /metrics exactly as `topics --describe --under-replicated-partitions` says,
 * the replica out of the ISR with lag > 0 once records are written); then started again: during
 * the throttled catch-up, read beside `topics --describe` and `log-dirs --describe`, the lag stays
 * > 0 while the follower is out of the ISR, its replication bytes/s (the rate of
 * skiff_replication_bytes_in_total between two scrapes ~10 s apart) is within 5% of the throttle,
 * and the under-replicated count matches; once back in the ISR the lag is 0 and the leader counted
 * the shrink and the expansion.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readLauncherFile } from '../../src/cluster/control.js';
import { type Exposition, scrape } from '../support/prometheus.js';
import { ScenarioCluster, sleep, waitUntil } from './harness.js';

const MiB = 1024 * 1024;
const RATE = MiB;
const TOPIC = 'm18.throttle';
const RECORDS = 20 * 1024; // ~20 MiB of 1 KiB records: ~20 s of catch-up at the throttle

interface Look {
  readonly t: number;
  readonly e: Exposition;
  readonly isr: readonly number[];
  readonly urpTool: number;
  readonly offsetLag: number | undefined;
}

describe('metrics during a throttled catch-up (skiff up --http-port /metrics)', () => {
  let c: ScenarioCluster;
  let url: string;
  let leader: number;
  let victim: number;

  before(async () => {
    c = await ScenarioCluster.start({ name: 'metrics-throttle' });
    const launcher = readLauncherFile(c.dir);
    assert.ok(launcher, 'launcher.json');
    url = `${launcher.url}/metrics`;
    const controller = await c.controllerId();
    victim = [3, 2, 1].find((id) => id !== controller)!;
    const rest = [1, 2, 3].filter((id) => id !== victim);
    leader = rest[0]!;
    await c.createTopic(TOPIC, {
      assignments: [[leader, rest[1]!, victim]],
      configs: { 'min.insync.replicas': '2' },
    });
    await c.waitForLeader(TOPIC, 0, (l) => l === leader, 20_000);
  });

  after(async () => {
    await c?.close();
  });

  const urpFromTool = async (): Promise<number> => {
    const r = await c.tool('topics', ['--describe', '--under-replicated-partitions'], '', 30_000);
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.split('\n').filter((l) => /\tPartition: \d+\t/.test(l)).length;
  };
  const replica = { topic: TOPIC, partition: '0' };

  it('the cluster’s /metrics: every broker up, the topic fully replicated, text format valid', async () => {
    const e = await scrape(url);
    for (const id of [1, 2, 3]) {
      assert.equal(e.sum('skiff_broker_up', { node_id: String(id) }), 1);
      assert.ok(e.find('skiff_partitions', { node_id: String(id) }).length === 1, `broker ${id} reports`);
    }
    assert.equal(e.sum('skiff_active_controller'), 1);
    assert.equal(e.sum('skiff_under_replicated_partitions'), 0);
    assert.equal(e.sum('skiff_replica_in_isr', { ...replica, node_id: String(leader) }), 3);
  });

  it('a stopped follower: down, under-replicated as topics --describe says, lag > 0 out of the ISR; caught up at the throttle within 5%', async () => {
    for (const id of [1, 2, 3]) {
      const r = await c.tool('configs', [
        '--alter',
        '--entity-type',
        'brokers',
        '--entity-name',
        String(id),
        '--add-config',
        `follower.replication.throttled.rate=${RATE},leader.replication.throttled.rate=${RATE}`,
      ]);
      assert.equal(r.status, 0, r.stderr);
    }
    const t = await c.tool('configs', [
      '--alter',
      '--entity-type',
      'topics',
      '--entity-name',
      TOPIC,
      '--add-config',
      'leader.replication.throttled.replicas=*,follower.replication.throttled.replicas=*',
    ]);
    assert.equal(t.status, 0, t.stderr);

    await c.stopBroker(victim);
    await c.waitForIsr(
      TOPIC,
      0,
      [1, 2, 3].filter((id) => id !== victim),
      15_000,
    );
    await c.perf(TOPIC, RECORDS, 1024, ['acks=all']);
    const down = await scrape(url);
    const urpDown = await urpFromTool();
    assert.equal(down.sum('skiff_broker_up', { node_id: String(victim) }), 0);
    assert.ok(urpDown >= 1);
    assert.equal(down.sum('skiff_under_replicated_partitions'), urpDown);
    const fromLeader = { ...replica, broker: String(victim), node_id: String(leader) };
    assert.equal(down.sum('skiff_replica_in_isr', fromLeader), 0);
    assert.ok(down.sum('skiff_replica_lag_offsets', fromLeader) >= RECORDS, 'lag of every record written');
    assert.ok(down.sum('skiff_replica_lag_bytes', fromLeader) > 19 * MiB);
    assert.ok(down.sum('skiff_isr_shrinks_total', { node_id: String(leader) }) >= 1);
    for (const side of ['leader', 'follower'])
      assert.equal(
        down.sum('skiff_replication_throttle_rate_bytes_per_second', { side, node_id: String(leader) }),
        RATE,
      );

    // Started again: /metrics beside topics --describe and log-dirs --describe, about once a second.
    await c.startBroker(victim);
    const t0 = Date.now();
    const looks: Look[] = [];
    const look = async (): Promise<Look> => {
      // The time of the scrape (sent first), not of the slower tools beside it: the rate uses it.
      const t = Date.now() - t0;
      const [e, line, urpTool, dirs] = await Promise.all([
        scrape(url),
        c.describeLine(TOPIC, 0),
        urpFromTool(),
        c.logDirs(TOPIC),
      ]);
      const l = {
        t,
        e,
        isr: line.isr,
        urpTool,
        offsetLag: dirs.get(victim)?.get(`${TOPIC}-0`)?.offsetLag,
      };
      looks.push(l);
      return l;
    };
    const bytesIn = (l: Look): number =>
      l.e.sum('skiff_replication_bytes_in_total', { node_id: String(victim) });
    // The leader's quota first pays off what it charged during the writes (up to its 11 s window).
    const first = await waitUntil(
      'first replication bytes',
      async () => {
        const l = await look();
        return bytesIn(l) > 0 ? l : undefined;
      },
      40_000,
      500,
    );
    await sleep(2000);
    const a = await look();
    let b = a;
    while (b.t - a.t < 10_000) {
      await sleep(1000);
      b = await look();
      assert.ok(!b.isr.includes(victim), `broker ${victim} joined the ISR before the window ended`);
    }
    const rate = ((bytesIn(b) - bytesIn(a)) * 1000) / (b.t - a.t);
    const observed = b.e.sum('skiff_replication_observed_bytes_per_second', {
      side: 'follower',
      partitions: 'throttled',
      node_id: String(victim),
    });
    console.log(
      `first bytes ${first.t} ms after the start; rate over ${b.t - a.t} ms: ${(rate / MiB).toFixed(3)} MiB/s (throttle 1), the quota's own window ${(observed / MiB).toFixed(3)} MiB/s`,
    );
    assert.ok(Math.abs(rate - RATE) <= 0.05 * RATE, `replication bytes/s ${rate} not within 5% of ${RATE}`);

    await c.waitForIsr(TOPIC, 0, [1, 2, 3], 60_000);
    const back = await look();
    let outOfIsr = 0;
    let logDirsLagged = 0;
    for (const l of looks) {
      assert.equal(
        l.e.sum('skiff_under_replicated_partitions'),
        l.urpTool,
        `at ${l.t} ms: /metrics and topics --describe --under-replicated-partitions disagree`,
      );
      if (l.isr.includes(victim) || l === first) continue;
      outOfIsr++;
      const fromLeaderNow = { ...replica, broker: String(victim), node_id: String(leader) };
      assert.ok(
        l.e.sum('skiff_replica_lag_offsets', fromLeaderNow) > 0,
        `at ${l.t} ms: lag 0 out of the ISR`,
      );
      assert.equal(l.e.sum('skiff_replica_in_isr', fromLeaderNow), 0);
      // -1: the restarted follower has not fetched yet, its lag is not known (no row: not reachable).
      if (l.offsetLag !== undefined && l.offsetLag >= 0) {
        assert.ok(l.offsetLag > 0, `at ${l.t} ms: log-dirs offsetLag ${l.offsetLag} out of the ISR`);
        logDirsLagged++;
      }
    }
    assert.ok(outOfIsr >= 8, `only ${outOfIsr} looks while out of the ISR`);
    assert.ok(logDirsLagged >= 8, `log-dirs --describe showed the lag only ${logDirsLagged} times`);
    const caught = await waitUntil(
      'lag 0 in /metrics',
      async () => {
        const e = await scrape(url);
        return e.sum('skiff_replica_lag_offsets', {
          ...replica,
          broker: String(victim),
          node_id: String(leader),
        }) === 0
          ? e
          : undefined;
      },
      10_000,
      200,
    );
    assert.equal(
      caught.sum('skiff_replica_in_isr', { ...replica, broker: String(victim), node_id: String(leader) }),
      1,
    );
    assert.ok(caught.sum('skiff_isr_expands_total', { node_id: String(leader) }) >= 1);
    assert.equal(back.e.sum('skiff_broker_up', { node_id: String(victim) }), 1);
  });
});
