/**
 * Seed 13.3 (《Kafka 内核与客户端》13.3 副本重建与限流), replayed on `skiff up --brokers 3`:
 *
 * - 实测一 (experiment 1, unthrottled catch-up): topic d1.rebuild, 1 partition, 3 replicas; a follower
 *   is stopped (`skiff cluster stop N` for `docker stop mq-d3`), 100,000 × 1 KiB records are written
 *   with `skiff producer-perf-test ... acks=all`, the follower is started again and
 *   `skiff log-dirs --describe --topic-list d1.rebuild` is polled. The seed's Kafka showed
 *   offsetLag=0 for the follower while it was ~100 MiB behind (the trap); Skiff must show
 *   offsetLag > 0 while it is out of the ISR. It catches up, its .log is the leader's byte for byte,
 *   and the ISR comes back when the sizes match (never before).
 * - 实测三 (experiment 3, a real rebuild): the follower is stopped again, more records are written,
 *   `skiff delete-records --offset-json-file` moves the leader's log start past the follower's LEO
 *   (inside a batch, as the seed's 350000 inside the batch at 349995); on start the follower
 *   discards its segments (renamed .deleted, removed after file.delete.delay.ms — set to a few
 *   seconds on the topic instead of the seed's 60 s), restarts its log at the straddling batch's
 *   base offset with the log start offset at the deleted-to offset, and says so in ONE log line.
 *   Scaled: the seed writes another 100,000 records before deleting; here 30,000.
 *
 * 实测二 (the throttled catch-up) is test/scenarios/seed-13-3-throttle.test.ts.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ScenarioCluster, sleep, waitUntil } from './harness.js';

const TOPIC = 'd1.rebuild';
const RECORDS_1 = 100_000;
const RECORDS_3 = 30_000;
const RECORD_SIZE = 1024;
const FILE_DELETE_DELAY_MS = 6000;

interface Observation {
  readonly t: number;
  readonly inProcess: boolean;
  readonly isr: readonly number[];
  readonly size: number;
  readonly offsetLag: number;
}

describe('seed 13.3: catch-up and rebuild of a stopped follower', () => {
  let c: ScenarioCluster;
  let leader: number;
  let other: number;
  let victim: number;
  const key = `${TOPIC}-0`;

  before(async () => {
    c = await ScenarioCluster.start({
      name: 'seed-13-3',
      properties: ['log.flush.start.offset.checkpoint.interval.ms=500'],
    });
    // The seed stops mq-d3, a follower; here a follower that is not the controller (a stopped
    // controller would delay the ISR changes this test watches by a controller failover).
    const controller = await c.controllerId();
    victim = [3, 2, 1].find((id) => id !== controller)!;
    const rest = [1, 2, 3].filter((id) => id !== victim);
    leader = rest[0]!;
    other = rest[1]!;
    await c.createTopic(TOPIC, {
      assignments: [[leader, other, victim]],
      configs: { 'min.insync.replicas': '2', 'file.delete.delay.ms': String(FILE_DELETE_DELAY_MS) },
    });
    await c.waitForLeader(TOPIC, 0, (l) => l === leader, 20_000);
  });

  after(async () => {
    await c?.close();
  });

  /**
   * The seed's pre-start checklist ("先判断是追赶还是重建"): `skiff rebuild-plan --broker N --json`
   * for the stopped follower — its LEO (as the leader last saw it) against the leader's log start.
   */
  const plan = async (): Promise<{
    action: string;
    replicaLogEndOffset: number;
    leaderLogStartOffset: number;
  }> => {
    const r = await c.tool('rebuild-plan', ['--broker', String(victim), '--topic', TOPIC, '--json']);
    assert.equal(r.status, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as {
      partitions: {
        topic: string;
        partition: number;
        action: string;
        replicaLogEndOffset: number;
        leaderLogStartOffset: number;
      }[];
    };
    const row = doc.partitions.find((x) => x.topic === TOPIC && x.partition === 0);
    assert.ok(row, r.stdout);
    return row;
  };

  it('实测一: a follower stopped during 100,000 × 1 KiB acks=all writes catches up, offsetLag > 0 while out of the ISR, and rejoins when the sizes match', async () => {
    await c.stopBroker(victim);
    await c.waitForIsr(TOPIC, 0, [leader, other], 15_000);

    const t0 = Date.now();
    const perf = await c.perf(TOPIC, RECORDS_1, RECORD_SIZE, ['acks=all']);
    const produceMs = Date.now() - t0;
    console.log(`producer-perf-test: ${perf.stdout.trim().split('\n').pop()} (${produceMs} ms run)`);
    assert.deepEqual((await c.partition(TOPIC, 0)).isr, [leader, other].sort());
    const leaderSize = c.logSize(leader, TOPIC, 0);
    assert.ok(leaderSize > RECORDS_1 * RECORD_SIZE, `leader log ${leaderSize} bytes`);

    const before1 = await plan();
    assert.equal(before1.action, 'CATCH UP', JSON.stringify(before1));

    // docker start mq-d3, while `skiff log-dirs --describe` is polled and the ISR and the on-disk
    // sizes are watched. The catch-up takes about a second on loopback, less than a Node start-up
    // of the command line on a loaded machine: the tool runs in this process (the CLI's own
    // dispatcher, same flags and output) so that it samples the catch-up; one poller also runs it
    // as a child process, as an operator would.
    const tStart = Date.now();
    let done = false;
    const observations: Observation[] = [];
    let failedRuns = 0;
    const pollLogDirs = async (inProcess: boolean): Promise<void> => {
      while (!done) {
        // While the broker starts, Metadata may list it before it listens: the tool then fails to
        // reach it (as Kafka's does with an unreachable broker) — such a run is no observation.
        const dirs = await c.logDirs(TOPIC, { inProcess }).catch(() => undefined);
        if (dirs === undefined) {
          failedRuns++;
          await sleep(50);
          continue;
        }
        const entry = dirs.get(victim)?.get(key);
        if (entry === undefined) {
          // not registered yet (the seed's 12:49:05 line)
          if (inProcess) await sleep(20);
          continue;
        }
        // The ISR read after the tool answered: out of it now means out of it then (it only grows here).
        const isr = (await c.partition(TOPIC, 0)).isr;
        observations.push({
          t: Date.now() - tStart,
          inProcess,
          isr,
          size: entry.size,
          offsetLag: entry.offsetLag,
        });
      }
    };
    const pollers = [pollLogDirs(true), pollLogDirs(false)];
    let tSizesMatch = -1;
    let tIsr = -1;
    try {
      await c.startBroker(victim);
      await waitUntil(
        `broker ${victim} back in the ISR`,
        async () => {
          const isr = (await c.partition(TOPIC, 0)).isr;
          const size = c.logSize(victim, TOPIC, 0); // read after the ISR: sizes only grow
          const t = Date.now() - tStart;
          if (tSizesMatch < 0 && size === leaderSize) tSizesMatch = t;
          if (!isr.includes(victim)) return undefined;
          // The ISR never has the follower back while its log is shorter than the leader's.
          assert.equal(size, leaderSize, `broker ${victim} in the ISR at ${t} ms with ${size} bytes`);
          tIsr = t;
          return true;
        },
        60_000,
        20,
      );
    } finally {
      done = true;
      await Promise.all(pollers);
    }
    const outOfIsr = observations.filter((o) => !o.isr.includes(victim));
    for (const o of outOfIsr.filter((_, i) => i % Math.ceil(outOfIsr.length / 10) === 0))
      console.log(JSON.stringify(o));
    console.log(
      `${observations.length} log-dirs observations (${observations.filter((o) => !o.inProcess).length} by child processes), ${outOfIsr.length} out of the ISR; ${failedRuns} runs could not reach every broker`,
    );
    console.log(
      `broker ${victim}: sizes equal ${tSizesMatch} ms after cluster start began, in the ISR at ${tIsr} ms`,
    );
    // "The ISR returns at the moment sizes match" (the seed's Kafka: not the same moment): within
    // a few fetch round trips — generous for a loaded machine, far below the seed's gap.
    assert.ok(
      tSizesMatch >= 0 && tIsr - tSizesMatch <= 5000,
      `sizes equal at ${tSizesMatch} ms, ISR at ${tIsr} ms`,
    );
    // Skiff's offsetLag is the lag behind the leader's LEO: > 0 while it catches up out of the ISR
    // (the seed's Kafka showed 0 here).
    const lagging = observations.filter((o) => !o.isr.includes(victim) && o.size < leaderSize);
    assert.ok(
      lagging.some((o) => o.offsetLag > 0),
      `no offsetLag > 0 among ${lagging.length} log-dirs observations of broker ${victim} out of the ISR`,
    );
    // And never the trap: no observation of the follower behind with offsetLag 0 — before the
    // leader's first answer it says -1 (unknown), after it the lag.
    for (const o of lagging)
      assert.notEqual(o.offsetLag, 0, `offsetLag 0 while behind: ${JSON.stringify(o)}`);
    console.log(`offsetLag unknown (-1) in ${lagging.filter((o) => o.offsetLag === -1).length} observations`);
    // And it is 0 once the follower is back in the ISR with the leader's size.
    const last = await c.logDirs(TOPIC);
    assert.deepEqual(last.get(victim)?.get(key), { size: leaderSize, offsetLag: 0 });
    // Sizes equal, byte for byte, on all three brokers.
    const bytes = c.logBytes(leader, TOPIC, 0);
    assert.ok(bytes.equals(c.logBytes(victim, TOPIC, 0)), 'follower log differs from the leader');
    assert.ok(bytes.equals(c.logBytes(other, TOPIC, 0)), 'second replica differs from the leader');
    // `skiff topics --describe --under-replicated-partitions` is empty again (the seed's 恢复后 2).
    const urp = await c.tool('topics', ['--describe', '--under-replicated-partitions', '--topic', TOPIC]);
    assert.equal(urp.status, 0, urp.stderr);
    assert.equal(urp.stdout.trim(), '');
    // The leader's ISR history: the follower left, then an 'expand' brought it back.
    const h = await c.tool('isr-history', ['--topic', TOPIC, '--partition', '0', '--json']);
    assert.equal(h.status, 0, h.stderr);
    const changes = (
      JSON.parse(h.stdout) as {
        changes: { broker: number; kind: string; oldIsr: number[]; newIsr: number[] }[];
      }
    ).changes.filter((x) => x.broker === leader);
    const left = changes.findIndex((x) => x.oldIsr.includes(victim) && !x.newIsr.includes(victim));
    const back = changes.findIndex((x, i) => i > left && x.kind === 'expand' && x.newIsr.includes(victim));
    assert.ok(left >= 0 && back > left, h.stdout);
  });
  it("实测三: delete-records past a stopped follower's LEO makes it rebuild from the batch holding the new log start, in one log line; the old segment goes after file.delete.delay.ms", async () => {
    assert.notEqual(await c.controllerId(), victim, 'the victim became the controller');
    await c.waitForIsr(TOPIC, 0, [1, 2, 3], 60_000);
    await c.stopBroker(victim);
    const oldSize = c.logSize(victim, TOPIC, 0);
    await c.waitForIsr(TOPIC, 0, [leader, other], 15_000);
    const oldLeo = BigInt(RECORDS_1);
    await c.perf(TOPIC, RECORDS_3, RECORD_SIZE, ['acks=all']);
    const leaderLeo = oldLeo + BigInt(RECORDS_3);

    // The seed deletes to 350000 of 400000: well past the follower's 300000, inside a batch.
    // Here: the first batch of several records starting at or after LEO - RECORDS_3/3.
    const leaderSegment = path.join(c.partitionDir(leader, TOPIC, 0), '00000000000000000000.log');
    const dump = await c.dumpLog(leaderSegment);
    assert.equal(dump.status, 0, dump.stderr);
    const batches = [
      ...dump.stdout.matchAll(/baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .*?position: (\d+)/g),
    ].map((m) => ({ base: BigInt(m[1]!), last: BigInt(m[2]!), position: Number(m[4]!) }));
    assert.equal(batches.at(-1)!.last + 1n, leaderLeo, "dump-log ends at the leader's LEO");
    const straddling = batches.find((b) => b.base >= leaderLeo - BigInt(RECORDS_3 / 3) && b.last > b.base)!;
    assert.ok(straddling, 'no batch of several records to delete into');
    const target = straddling.base + 1n;

    // kafka-delete-records.sh --offset-json-file /tmp/del.json
    const del = await c.deleteRecords(TOPIC, 0, target);
    assert.equal(del.status, 0, del.stderr);
    assert.match(del.stdout, /^Records delete operation completed:$/m);
    assert.match(
      del.stdout,
      new RegExp(`^partition: ${TOPIC.replace('.', '\\.')}-0\\tlow_watermark: ${target}$`, 'm'),
    );

    // docker start mq-d3: its LEO (100000) is below the leader's log start — a rebuild, as
    // rebuild-plan says beforehand.
    const before3 = await plan();
    assert.deepEqual(
      [before3.action, before3.replicaLogEndOffset, before3.leaderLogStartOffset],
      ['REBUILD', Number(oldLeo), Number(target)],
    );
    // The partition dir is watched from before the start: the old segment renamed .deleted is seen
    // whatever the latency of the tools on a loaded machine (it lives file.delete.delay.ms).
    const segName = (o: bigint) => `${String(o).padStart(20, '0')}.log`;
    const partDir = c.partitionDir(victim, TOPIC, 0);
    let sawDeleted = false;
    let watching = true;
    const look = (): void => {
      const names = fs.existsSync(partDir) ? fs.readdirSync(partDir) : [];
      if (names.includes(`${segName(0n)}.deleted`) && !names.includes(segName(0n))) sawDeleted = true;
    };
    const watcher = (async () => {
      while (watching) {
        look();
        await sleep(20);
      }
    })();
    const mark = c.serverLogMark(victim);
    try {
      await c.startBroker(victim);
      await c.waitForServerLog(victim, /Rebuilding partition d1\.rebuild-0/, 60_000, mark);
    } finally {
      watching = false;
      await watcher;
    }
    // The rename comes just before the rebuild's line, which can be read before the watcher's next
    // look: one more, well within the .deleted file's file.delete.delay.ms.
    look();
    // The old segment was renamed .deleted (not removed at once); the new one starts at the
    // straddling batch's base offset (checked below).
    assert.ok(sawDeleted, `${segName(0n)} was never seen renamed .deleted`);
    const [line] = await c.waitForServerLog(
      victim,
      /^.*Rebuilding partition d1\.rebuild-0.*$/m,
      60_000,
      mark,
    );
    console.log(line);
    assert.match(
      line!,
      new RegExp(
        `local log end offset ${oldLeo} is below the leader's log start offset ${target}; all local segments discarded \\(${oldSize} bytes, renamed \\.deleted until file\\.delete\\.delay\\.ms\\); log restarted at offset ${straddling.base} \\(base offset of the batch holding offset ${target}\\), log start offset ${target}$`,
      ),
    );
    await c.waitForIsr(TOPIC, 0, [1, 2, 3], 60_000);
    const liveSegments = c
      .files(victim, TOPIC, 0)
      .filter((f) => /^\d{20}\.log$/.test(f.name))
      .map((f) => f.name);
    assert.deepEqual(liveSegments, [segName(straddling.base)]);
    // Byte for byte the leader's log from the straddling batch on.
    const leaderBytes = c.logBytes(leader, TOPIC, 0);
    assert.ok(
      c.logBytes(victim, TOPIC, 0).equals(leaderBytes.subarray(straddling.position)),
      "the rebuilt log is not the leader's from the straddling batch on",
    );
    // Its log start offset is the deleted-to offset (the broker's log-start-offset-checkpoint).
    await waitUntil(
      `broker ${victim}'s log start offset ${target} checkpointed`,
      async () => {
        const f = path.join(c.dir, `broker-${victim}`, 'log-start-offset-checkpoint');
        const text = fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : '';
        return text.split('\n').includes(`${TOPIC} 0 ${target}`) ? true : undefined;
      },
      10_000,
    );
    // After file.delete.delay.ms (the topic's 6 s, not the default 60 s) the .deleted files are gone.
    const [deletedLine] = await c.waitForServerLog(
      victim,
      /^.*d1\.rebuild-0: deleted log segment 0 .*$/m,
      FILE_DELETE_DELAY_MS + 15_000,
      mark,
    );
    const stamp = (l: string) => Date.parse(/^\[([^\]]+)\]/.exec(l)![1]!);
    const delay = stamp(deletedLine!) - stamp(line!);
    assert.ok(
      delay >= FILE_DELETE_DELAY_MS - 2000 && delay <= FILE_DELETE_DELAY_MS + 10_000,
      `segment 0 deleted ${delay} ms after the rebuild line`,
    );
    await waitUntil(
      'no .deleted files left',
      async () => (c.files(victim, TOPIC, 0).some((f) => f.name.endsWith('.deleted')) ? undefined : true),
      10_000,
    );

    // ONE line: storage printed nothing of its own for this path.
    const since = c.serverLog(victim).slice(mark);
    assert.equal(since.match(/Rebuilding partition d1\.rebuild-0/g)?.length, 1);
    assert.doesNotMatch(
      since,
      /d1\.rebuild-0: (truncated fully|unexpected offset in append|incremented log start offset)/,
    );
    assert.equal((await c.consume(TOPIC)).length, Number(leaderLeo - target));
  });
});
