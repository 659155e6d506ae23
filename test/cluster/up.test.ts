/**
 * `skiff up --brokers 3` as a child process on free ports and a temporary data dir, driven from
 * "another shell" with `skiff cluster`, checked with kcat and the admin client: three brokers in
 * Metadata, a replication-factor-3 topic with ISR 1,2,3, graceful stop/start of a broker with its
 * data intact, a real SIGKILL (pid gone, no clean-shutdown marker), `cluster status`, and a
 * restart of the whole `up` on the same data dir keeping topics and data.
 *
 * Replication is issue 6: until replica fetchers exist nobody copies the leader's records, so the
 * ISR is the assignment as the controller wrote it, and the HW of a partition with followers in
 * its ISR stays where it was. Records are therefore produced with acks=1, and the RF-3 topic's
 * records become readable once the followers have left its ISR (stopped, then fenced).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { processAlive } from '../../src/cluster/control.js';
import { CLEAN_SHUTDOWN_FILE } from '../../src/storage/log-manager.js';
import {
  adminFor,
  consumeAll,
  describe1,
  freePorts,
  kcat,
  launchSkiffUp,
  removeDataDir,
  requireTool,
  runSkiff,
  type SkiffProcess,
  waitUntil,
} from './helpers.js';

/** Short sessions so a killed broker is fenced in seconds, not the default 9. */
const SESSION_MS = 3000;
const RECORDS = 100;

describe('skiff up --brokers 3 and skiff cluster', () => {
  let dir: string;
  let port: number;
  let bootstrap: string;
  let up: SkiffProcess | null = null;
  const lines = (prefix: string) => Array.from({ length: RECORDS }, (_, i) => `${prefix}-${i}`);

  const startUp = (): Promise<SkiffProcess> => launchSkiffUp(dir, port);
  const cluster = (...args: string[]) => runSkiff(['cluster', ...args, '--data-dir', dir], '', 60_000);

  before(async () => {
    requireTool('kcat', '-V');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-up-'));
    fs.writeFileSync(
      path.join(dir, 'server.properties'),
      [
        'listeners=PLAINTEXT://127.0.0.1:9092',
        `broker.session.timeout.ms=${SESSION_MS}`,
        'broker.heartbeat.interval.ms=500',
        'num.partitions=1',
        '',
      ].join('\n'),
    );
    port = await freePorts(3);
    bootstrap = `127.0.0.1:${port}`;
  });

  after(async () => {
    // Graceful: a SIGKILLed launcher leaves its (detached) brokers shutting down on their own,
    // still writing into the data dir while it is being removed.
    await up?.stop(15_000);
    removeDataDir(dir);
  });

  it('starts three brokers with one ready line each, on consecutive ports; kcat sees 3 brokers', async () => {
    up = await startUp();
    for (let id = 1; id <= 3; id++) {
      assert.match(
        up.output(),
        new RegExp(
          `\\[skiff\\] broker ${id} ready on 127\\.0\\.0\\.1:${port + id - 1} \\(log dir ${path.join(dir, `broker-${id}`).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`,
        ),
      );
    }
    const r = await kcat(['-b', bootstrap, '-L']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, / 3 brokers:/);
    for (let id = 1; id <= 3; id++)
      assert.match(r.stdout, new RegExp(`broker ${id} at 127\\.0\\.0\\.1:${port + id - 1}`));
  });

  it('refuses a second skiff up on the same data dir', async () => {
    const second = await runSkiff(['up', '--data-dir', dir, '--port', String(port + 10)], '', 30_000);
    assert.notEqual(second.status, 0);
    assert.match(second.stderr, /another skiff up \(pid \d+\) is running/);
  });

  it('creates a topic with replication factor 3 whose ISR is 1,2,3; kcat produces to it', async () => {
    const { admin, close } = adminFor(bootstrap);
    try {
      const results = await admin.createTopics([
        { name: 'rf3', numPartitions: -1, replicationFactor: -1, assignments: [[1, 2, 3]] },
        { name: 'auto3', numPartitions: 3, replicationFactor: 3 },
        { name: 'on3', numPartitions: -1, replicationFactor: -1, assignments: [[3]] },
      ]);
      for (const r of results) assert.equal(r.error, null, `${r.name}: ${r.error?.message}`);
      const rf3 = await waitUntil(
        'rf3 in the metadata',
        async () => {
          const t = await describe1(admin, 'rf3');
          return t.partitions[0]?.leader === 1 ? t : undefined;
        },
        10_000,
      );
      assert.deepEqual(rf3.partitions[0]!.replicas, [1, 2, 3]);
      // The ISR is the assignment the controller wrote (the followers fetch from the start).
      assert.deepEqual(rf3.partitions[0]!.isr, [1, 2, 3]);
      const auto3 = await describe1(admin, 'auto3');
      for (const p of auto3.partitions) {
        assert.deepEqual([...p.replicas].sort(), [1, 2, 3]);
        assert.deepEqual([...p.isr].sort(), [1, 2, 3]);
      }
      await waitUntil(
        'on3 led by 3',
        async () => ((await describe1(admin, 'on3')).partitions[0]?.leader === 3 ? true : undefined),
        10_000,
      );
    } finally {
      close();
    }
    // acks=1 (acks=all on replicated topics: test/cluster/replication.test.ts).
    for (const topic of ['rf3', 'on3']) {
      const r = await kcat(
        ['-b', bootstrap, '-P', '-t', topic, '-p', '0', '-X', 'acks=1'],
        `${lines(topic).join('\n')}\n`,
      );
      assert.equal(r.status, 0, r.stderr);
    }
  });

  it('cluster status shows every broker with pid, port, state and leader count', async () => {
    const r = await cluster('status');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^ID\s+PID\s+PORT\s+STATE\s+REGISTERED\s+LEADERS/m);
    for (let id = 1; id <= 3; id++)
      assert.match(r.stdout, new RegExp(`^${id}\\s+\\d+\\s+${port + id - 1}\\s+running\\s+yes\\s+\\d+`, 'm'));
    const leaders = [...r.stdout.matchAll(/^\d+\s+\d+\s+\d+\s+running\s+yes\s+(\d+)/gm)].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
    assert.equal(leaders, 5, `rf3 + auto3 (3) + on3 partitions are led:\n${r.stdout}`);
  });

  it('cluster stop 3 stops it cleanly; cluster start 3 brings it back with its data', async () => {
    const stop = await cluster('stop', '3');
    assert.equal(stop.status, 0, stop.stderr);
    assert.match(stop.stdout, /broker 3 stopped/);
    assert.ok(
      fs.existsSync(path.join(dir, 'broker-3', CLEAN_SHUTDOWN_FILE)),
      'clean-shutdown marker written',
    );
    const status = await cluster('status');
    assert.match(status.stdout, /^3\s+-\s+\d+\s+stopped\s+no\s+0/m);

    const start = await cluster('start', '3');
    assert.equal(start.status, 0, start.stderr);
    assert.match(start.stdout, /broker 3 ready on/);
    const { admin, close } = adminFor(bootstrap);
    try {
      await waitUntil(
        'on3 led by 3 again',
        async () => ((await describe1(admin, 'on3')).partitions[0]?.leader === 3 ? true : undefined),
        15_000,
      );
    } finally {
      close();
    }
    assert.deepEqual(await consumeAll(bootstrap, 'on3'), lines('on3'));
  });

  it('cluster stop 2 --kill is a real SIGKILL: the pid is gone and no clean-shutdown marker is written', async () => {
    const before = await cluster('status');
    const pid = Number(/^2\s+(\d+)\s/m.exec(before.stdout)?.[1]);
    assert.ok(pid > 0 && processAlive(pid));
    const t0 = Date.now();
    const kill = await cluster('stop', '2', '--kill');
    assert.equal(kill.status, 0, kill.stderr);
    assert.match(kill.stdout, /broker 2 killed \(SIGKILL/);
    assert.equal(processAlive(pid), false, `pid ${pid} still exists`);
    assert.equal(fs.existsSync(path.join(dir, 'broker-2', CLEAN_SHUTDOWN_FILE)), false);
    assert.match((await cluster('status')).stdout, /^2\s+-\s+\d+\s+killed/m);
    // Fenced when its session runs out (or out of the ISR by replica lag); 3 caught up after its
    // restart, so the records below the HW are readable.
    const { admin, close } = adminFor(bootstrap);
    try {
      await waitUntil(
        'broker 2 fenced out of rf3',
        async () => {
          const p = (await describe1(admin, 'rf3')).partitions[0]!;
          return p.leader === 1 && !p.isr.includes(2) ? true : undefined;
        },
        SESSION_MS + 5000,
      );
      const fencedAfter = Date.now() - t0;
      assert.ok(fencedAfter < SESSION_MS + 5000, `fenced after ${fencedAfter} ms`);
    } finally {
      close();
    }
    assert.deepEqual(await consumeAll(bootstrap, 'rf3'), lines('rf3'));
    const start = await cluster('start', '2');
    assert.equal(start.status, 0, start.stderr);
    // Its logs are recovered (no clean-shutdown marker): skiff up's console says so, with how far.
    const logDir = path.join(dir, 'broker-2');
    const recovering = new RegExp(
      `\\[skiff\\] broker 2: Recovering (\\d+) logs from ${logDir} since no clean shutdown file was found\n`,
    );
    const m = recovering.exec(up!.output());
    assert.ok(m, up!.output());
    assert.match(
      up!.output().slice(m.index),
      new RegExp(
        `\\[skiff\\] broker 2: Completed load of log \\S+ with \\d+ segments, log-start-offset \\d+ and log-end-offset \\d+ in \\d+ms \\(${m[1]}/${m[1]} completed in ${logDir}\\)\n`,
      ),
    );
  });

  it('SIGTERM stops the whole cluster cleanly; cluster commands then say no launcher runs', async () => {
    const exit = await up!.stop();
    assert.equal(exit.code, 0, up!.output());
    assert.match(up!.output(), /\[skiff\] stopped/);
    for (let id = 1; id <= 3; id++)
      assert.ok(fs.existsSync(path.join(dir, `broker-${id}`, CLEAN_SHUTDOWN_FILE)), `broker ${id} marker`);
    const r = await cluster('status');
    assert.equal(r.status, 1);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /no skiff up is running for data dir/);
  });

  it('a restarted skiff up on the same data dir keeps its topics and data', async () => {
    up = await startUp();
    const { admin, close } = adminFor(bootstrap);
    try {
      const topics = await admin.listTopics();
      for (const t of ['rf3', 'auto3', 'on3']) assert.ok(topics.includes(t), `${t} in ${topics}`);
      // Which replica leads after a full restart depends on the order the brokers stopped in (the
      // last one standing keeps leadership, as in Kafka; the preferred leader returns only through a
      // preferred election): wait for a leader and the full ISR, not for broker 1.
      await waitUntil(
        'rf3 led with ISR 1,2,3',
        async () => {
          const p = (await describe1(admin, 'rf3')).partitions[0];
          return p && p.leader > 0 && p.isr.length === 3 ? true : undefined;
        },
        30_000,
      );
      await waitUntil(
        'on3 led by 3',
        async () => ((await describe1(admin, 'on3')).partitions[0]?.leader === 3 ? true : undefined),
        15_000,
      );
    } finally {
      close();
    }
    assert.deepEqual(await consumeAll(bootstrap, 'rf3'), lines('rf3'));
    assert.deepEqual(await consumeAll(bootstrap, 'on3'), lines('on3'));
    const exit = await up.stop();
    assert.equal(exit.code, 0, up.output());
    up = null;
  });
});
