/**
 * Seed 003 ("ISR/OSR 大量宕机后的补员", section 四) as the durable ISR history tells it, after a full
 * cluster restart — issue 18's acceptance: `skiff up --brokers 4` (the controller on the fourth
 * broker, as in seed-14-isr-osr.test.ts), RF 3, min.insync.replicas 2, unclean off:
 *
 *   one follower down → shrink (controlled-shutdown)   two down → shrink (controlled-shutdown)
 *   leader down → offline (controlled-shutdown)         leader back → election (leader-returned)
 *   followers back → expand (caught-up), twice
 *
 * then the whole `skiff up` is stopped and started again on the same data dir, and `skiff
 * isr-history` still shows that sequence with those kinds. The brokers run with log.format=json:
 * every line of their logs is a JSON object, with the numbers of start-up, shutdown, ISR changes,
 * a truncation (a follower behind an unclean leader, on a second topic) and a segment deletion.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ScenarioCluster } from './harness.js';

const TOPIC = 'mytopic';
const UNCLEAN = 'unclean';
const RETAINED = 'retained';

interface Change {
  broker: number;
  kind: string;
  cause: string;
  leader: number;
  oldIsr: number[];
  newIsr: number[];
  reason: string;
}

type LogObject = Record<string, unknown> & { time: string; level: string; message: string };

describe('seed 003: the ISR history of a mass failure survives a full cluster restart', () => {
  let c: ScenarioCluster;
  let r0: number;
  let r1: number;
  let r2: number;
  let controller: number;
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);

  const history = async (topic: string): Promise<{ changes: Change[]; text: string }> => {
    const json = await c.tool('isr-history', ['--topic', topic, '--partition', '0', '--json']);
    assert.equal(json.status, 0, json.stderr);
    const text = await c.tool('isr-history', ['--topic', topic, '--partition', '0']);
    assert.equal(text.status, 0, text.stderr);
    return { changes: (JSON.parse(json.stdout) as { changes: Change[] }).changes, text: text.stdout };
  };
  const logObjects = (id: number): LogObject[] =>
    c
      .serverLog(id)
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => {
        try {
          return JSON.parse(l) as LogObject;
        } catch {
          throw new Error(`broker ${id} wrote a line that is not JSON: ${l}`);
        }
      });

  before(async () => {
    c = await ScenarioCluster.start({
      name: 'seed-003-history',
      brokers: 4,
      properties: [
        'unclean.leader.election.enable=false',
        'log.format=json',
        'log.retention.check.interval.ms=1000',
      ],
    });
    controller = await c.controllerId();
    [r0, r1, r2] = [1, 2, 3, 4].filter((id) => id !== controller) as [number, number, number];
    await c.createTopic(TOPIC, {
      assignments: [[r0, r1, r2]],
      configs: { 'min.insync.replicas': '2', 'unclean.leader.election.enable': 'false' },
    });
    await c.waitForLeader(TOPIC, 0, (l) => l === r0, 20_000);
    const r = await c.produce(TOPIC, ['a', 'b', 'c']);
    assert.equal(r.status, 0, r.stderr);
  });

  after(async () => {
    await c?.close();
  });

  it('replays the mass failure, restarts the whole cluster, and isr-history still shows it with the right kinds', async () => {
    await c.stopBroker(r1);
    await c.waitForIsr(TOPIC, 0, [r0, r2], 20_000);
    await c.stopBroker(r2);
    await c.waitForIsr(TOPIC, 0, [r0], 20_000);
    await c.stopBroker(r0);
    await c.waitForLeader(TOPIC, 0, (l) => l < 0, 20_000);
    await c.startBroker(r0);
    await c.waitForLeader(TOPIC, 0, (l) => l === r0, 30_000);
    await c.startBroker(r1);
    await c.startBroker(r2);
    await c.waitForIsr(TOPIC, 0, [r0, r1, r2], 60_000);

    await c.restartAll();
    await c.waitForIsr(TOPIC, 0, [r0, r1, r2], 60_000);

    const { changes, text } = await history(TOPIC);
    // The seed's sequence, in order (the restart's own changes come after it).
    const steps: [string, (x: Change) => boolean][] = [
      ['create', (x) => x.kind === 'create' && x.cause === 'topic-created'],
      [
        'one follower down',
        (x) =>
          x.kind === 'shrink' &&
          x.cause === 'controlled-shutdown' &&
          x.broker === r0 &&
          sorted(x.newIsr).join() === sorted([r0, r2]).join(),
      ],
      [
        'two down',
        (x) => x.kind === 'shrink' && x.cause === 'controlled-shutdown' && x.newIsr.join() === `${r0}`,
      ],
      [
        'leader down',
        (x) =>
          x.kind === 'offline' && x.cause === 'controlled-shutdown' && x.leader === -1 && x.broker === r0,
      ],
      ['leader back', (x) => x.kind === 'election' && x.cause === 'leader-returned' && x.leader === r0],
      ['first follower back', (x) => x.kind === 'expand' && x.cause === 'caught-up' && x.newIsr.length === 2],
      [
        'second follower back',
        (x) => x.kind === 'expand' && x.cause === 'caught-up' && x.newIsr.length === 3,
      ],
    ];
    let at = -1;
    for (const [what, match] of steps) {
      const i = changes.findIndex((x, j) => j > at && match(x));
      assert.ok(i > at, `${what} missing after entry ${at}:\n${text}`);
      at = i;
    }
    for (const kind of ['create', 'shrink', 'offline', 'election', 'expand'])
      assert.match(text, new RegExp(`\\tKind: ${kind}\\t`), text);
    assert.match(text, /\tReason: controlled-shutdown: broker \d+ is in controlled shutdown/);
    assert.match(text, /\tReason: caught-up: broker \d+ at offset \d+/);

    // log.format=json: start-up and shutdown with their numbers, the leader's ISR expand, the
    // controller's partition changes with kind and cause.
    for (const id of [r0, r1, r2, controller]) {
      const objects = logObjects(id);
      const startup = objects.filter((o) => o.event === 'startup');
      assert.ok(startup.length >= 2, `broker ${id}: start-up before and after the restart`);
      for (const s of startup) {
        assert.equal(s.nodeId, id);
        assert.equal(typeof s.port, 'number');
        assert.equal(typeof s.durationMs, 'number');
        assert.match(s.time, /^\d{4}-\d\d-\d\dT/);
        assert.equal(s.level, 'INFO');
      }
    }
    const shutdown = logObjects(r1).find((o) => o.event === 'shutdown');
    assert.ok(shutdown && typeof shutdown.durationMs === 'number' && shutdown.nodeId === r1);
    const expand = logObjects(r0).find((o) => o.event === 'isr-expand' && o.topic === TOPIC);
    assert.ok(expand, 'the leader logged its ISR expand');
    assert.equal(
      expand.leaderEpoch,
      changes.find((x) => x.kind === 'expand')!.leader === r0 ? expand.leaderEpoch : -2,
    );
    assert.ok(Array.isArray(expand.oldIsr) && Array.isArray(expand.newIsr));
    assert.equal(typeof expand.replicaLogEndOffset, 'number');
    const partitionChanges = [r0, r1, r2, controller].flatMap((id) =>
      logObjects(id).filter((o) => o.event === 'partition-change' && o.topic === TOPIC),
    );
    assert.ok(
      partitionChanges.some((o) => o.kind === 'offline' && o.cause === 'controlled-shutdown'),
      JSON.stringify(partitionChanges),
    );
  });

  it('an unclean leader election, and the truncation of the old leader when it follows (log.format=json)', async () => {
    await c.createTopic(UNCLEAN, {
      assignments: [[r1, r2]],
      configs: { 'min.insync.replicas': '1', 'unclean.leader.election.enable': 'true' },
    });
    await c.waitForIsr(UNCLEAN, 0, [r1, r2], 20_000);
    await c.stopBroker(r2);
    await c.waitForIsr(UNCLEAN, 0, [r1], 20_000);
    const only1 = await c.produce(UNCLEAN, ['x1', 'x2', 'x3', 'x4']);
    assert.equal(only1.status, 0, only1.stderr);
    await c.stopBroker(r1);
    await c.waitForLeader(UNCLEAN, 0, (l) => l < 0, 20_000);
    await c.startBroker(r2);
    await c.waitForLeader(UNCLEAN, 0, (l) => l === r2, 30_000);
    const on2 = await c.produce(UNCLEAN, ['y1']);
    assert.equal(on2.status, 0, on2.stderr);
    const mark = c.serverLogMark(r1);
    await c.startBroker(r1);
    await c.waitForIsr(UNCLEAN, 0, [r1, r2], 60_000);
    await c.waitForServerLog(r1, /"event":"truncation"/, 20_000, mark);
    const truncation = logObjects(r1).find((o) => o.event === 'truncation' && o.topic === UNCLEAN);
    assert.ok(truncation, c.serverLog(r1).slice(mark));
    assert.equal(truncation.leaderId, r2);
    assert.equal(truncation.oldLogEndOffset, 4);
    assert.equal(truncation.logEndOffset, 0);
    assert.ok((truncation.bytesDiscarded as number) > 0);
    assert.equal(typeof truncation.leaderEpoch, 'number');
    const { changes } = await history(UNCLEAN);
    assert.ok(
      changes.some((x) => x.kind === 'unclean-election' && x.leader === r2 && x.newIsr.join() === `${r2}`),
      JSON.stringify(changes),
    );
  });

  it('a segment deleted by retention is one JSON object with its bytes and offsets', async () => {
    await c.createTopic(RETAINED, {
      assignments: [[controller]],
      configs: { 'segment.bytes': '1024', 'retention.bytes': '1' },
    });
    const mark = c.serverLogMark(controller);
    // One kcat run is one batch, and a batch larger than segment.bytes fills a segment alone.
    for (let run = 0; run < 4; run++) {
      const values = Array.from({ length: 10 }, (_, i) => `${run}-${i}`.padStart(120, '.'));
      const r = await c.produce(RETAINED, values);
      assert.equal(r.status, 0, r.stderr);
    }
    await c.waitForServerLog(controller, /"event":"segment-deletion"/, 20_000, mark);
    const del = logObjects(controller).find((o) => o.event === 'segment-deletion');
    assert.ok(del);
    assert.match(String(del.partitionName), new RegExp(`^${RETAINED}-0`));
    assert.ok((del.bytes as number) > 0);
    const segs = del.segments as { baseOffset: number; sizeBytes: number }[];
    assert.ok(segs.length >= 1 && segs[0]!.baseOffset === 0);
    assert.equal(
      segs.reduce((n, s) => n + s.sizeBytes, 0),
      del.bytes,
    );
    assert.equal(typeof del.logStartOffset, 'number');
  });
});
