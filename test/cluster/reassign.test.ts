/**
 * Partition reassignment on `skiff up --brokers 3`, driven by `skiff reassign-partitions` as an
 * operator drives kafka-reassign-partitions.sh: a throttled move that adds a replica completes and
 * --verify clears the throttles it set (checked with `skiff configs --describe`); a move that
 * removes a replica deletes that replica's log (renamed `-delete`, then removed after
 * log.segment.delete.delay.ms); a move held in progress (its new broker SIGSTOPped) shows in
 * --list and in `topics --describe` (Adding Replicas), --verify says it is still in progress and
 * --cancel reverts it; --generate proposes a plan that --execute carries out; bad JSON and unknown
 * topics are one line on stderr with a non-zero exit. Then, on one `skiff broker` with two log
 * dirs, a replica moved with log_dirs under --replica-alter-log-dirs-throttle: DescribeLogDirs shows
 * its future log (isFuture) while it copies, --verify follows it to completion and clears the throttle.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import { skiff } from '../cli/in-process.js';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';
import {
  activeController,
  adminFor,
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

const THROTTLE = 50_000_000;

describe('skiff reassign-partitions on skiff up --brokers 3', () => {
  let dir: string;
  let bootstrap: string;
  let up: SkiffProcess | null = null;
  const frozen: number[] = [];

  // In-process runs (no Node start-up per call); one real process run checks the exit path.
  const tool = (...args: string[]) =>
    skiff(['reassign-partitions', '--bootstrap-server', bootstrap, ...args]);
  const planFile = (name: string, partitions: { topic: string; partition: number; replicas: number[] }[]) => {
    const f = path.join(dir, name);
    fs.writeFileSync(f, JSON.stringify({ version: 1, partitions }));
    return f;
  };
  const configs = async (type: 'brokers' | 'topics', name: string): Promise<string> => {
    const r = await skiff([
      'configs',
      '--bootstrap-server',
      bootstrap,
      '--describe',
      '--entity-type',
      type,
      '--entity-name',
      name,
    ]);
    assert.equal(r.status, 0, r.stderr);
    return r.stdout;
  };
  const replicasOf = async (topic: string, partition = 0): Promise<number[]> => {
    const { admin, close } = adminFor(bootstrap);
    try {
      return [...(await describe1(admin, topic)).partitions[partition]!.replicas];
    } finally {
      close();
    }
  };
  const createTopic = async (name: string, assignments: number[][]): Promise<void> => {
    const { admin, close } = adminFor(bootstrap);
    try {
      const [r] = await admin.createTopics([{ name, numPartitions: -1, replicationFactor: -1, assignments }]);
      assert.equal(r!.error, null, r!.error?.message);
      await waitUntil(
        `${name} has leaders`,
        async () =>
          (await describe1(admin, name)).partitions.every((p) => p.leader >= 0) ? true : undefined,
        15_000,
      );
    } finally {
      close();
    }
  };
  const produce = async (topic: string, partition: number, count: number): Promise<void> => {
    const value = 'x'.repeat(200);
    const lines = Array.from({ length: count }, (_, i) => `${i}-${value}`).join('\n');
    const r = await kcat(
      ['-b', bootstrap, '-P', '-t', topic, '-p', String(partition), '-X', 'acks=all'],
      `${lines}\n`,
    );
    assert.equal(r.status, 0, r.stderr);
  };
  const logSize = (broker: number, topic: string, partition = 0): number => {
    const d = path.join(dir, `broker-${broker}`, `${topic}-${partition}`);
    if (!fs.existsSync(d)) return -1;
    return fs
      .readdirSync(d)
      .filter((f) => f.endsWith('.log'))
      .reduce((sum, f) => sum + fs.statSync(path.join(d, f)).size, 0);
  };
  /** Runs --verify until it reports every partition completed; returns that run's stdout. */
  const verifyUntilDone = (plan: string, partitions: string[]) =>
    waitUntil(
      `--verify reports ${partitions.join(',')} completed`,
      async () => {
        const r = await tool('--verify', '--reassignment-json-file', plan);
        assert.equal(r.status, 0, r.stderr);
        const done = partitions.every((p) =>
          r.stdout.includes(`Reassignment of partition ${p} is completed.`),
        );
        return done && r.stdout.includes('Clearing broker-level throttles') ? r.stdout : undefined;
      },
      60_000,
      500,
    );

  before(async () => {
    requireTool('kcat', '-V');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-reassign-'));
    fs.writeFileSync(
      path.join(dir, 'server.properties'),
      [
        'listeners=PLAINTEXT://127.0.0.1:9092',
        // Long enough that a SIGSTOPped broker stays registered while a move to it is started.
        'broker.session.timeout.ms=10000',
        'broker.heartbeat.interval.ms=1000',
        'replica.lag.time.max.ms=5000',
        'log.segment.delete.delay.ms=1000',
        '',
      ].join('\n'),
    );
    const port = await freePorts(3);
    bootstrap = `127.0.0.1:${port}`;
    up = await launchSkiffUp(dir, port);
  });

  after(async () => {
    for (const pid of frozen) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // already gone
      }
    }
    await up?.stop(15_000);
    removeDataDir(dir);
  });

  it('adds a replica under --throttle: the move completes, --verify reports it and clears the throttles', async () => {
    await createTopic('grow', [[1, 2]]);
    await produce('grow', 0, 2000);
    const plan = planFile('grow.json', [{ topic: 'grow', partition: 0, replicas: [1, 2, 3] }]);
    const ex = await tool('--execute', '--reassignment-json-file', plan, '--throttle', String(THROTTLE));
    assert.equal(ex.status, 0, ex.stderr);
    const out = ex.stdout.split('\n');
    assert.equal(out[0], 'Current partition replica assignment');
    assert.deepEqual(JSON.parse(out[2]!), {
      version: 1,
      partitions: [{ topic: 'grow', partition: 0, replicas: [1, 2], log_dirs: ['any', 'any'] }],
    });
    assert.equal(out[4], 'Save this to use as the --reassignment-json-file option during rollback');
    assert.ok(ex.stdout.includes(`The inter-broker throttle limit was set to ${THROTTLE} B/s`), ex.stdout);
    assert.ok(ex.stdout.includes('Successfully started partition reassignment for grow-0'), ex.stdout);
    // Beside Kafka's lines: how much the new replica has to copy, from its leader's view.
    assert.match(
      ex.stdout,
      /\nSuccessfully started partition reassignment for grow-0\n {2}Adding replica 3: (not fetching yet; \d+ bytes \(.+\) to copy from leader 1 \(LEO 2000\)|at offset \d+ of 2000, \d+ bytes \(.+\) left to copy from leader 1(, in the ISR)?)\n/,
    );
    // Kafka's two layers: the rates on every broker involved, the replica lists on the topic.
    for (const b of ['1', '2', '3']) {
      const c = await configs('brokers', b);
      assert.match(c, new RegExp(`leader\\.replication\\.throttled\\.rate=${THROTTLE}`), c);
      assert.match(c, new RegExp(`follower\\.replication\\.throttled\\.rate=${THROTTLE}`), c);
    }
    const tc = await configs('topics', 'grow');
    assert.match(tc, /leader\.replication\.throttled\.replicas=0:1,0:2/, tc);
    assert.match(tc, /follower\.replication\.throttled\.replicas=0:3/, tc);

    const verified = await verifyUntilDone(plan, ['grow-0']);
    assert.ok(verified.startsWith('Status of partition reassignment:\n'), verified);
    assert.ok(verified.includes('Clearing broker-level throttles on brokers 1,2,3'), verified);
    assert.ok(verified.includes('Clearing topic-level throttles on topic grow'), verified);
    for (const b of ['1', '2', '3']) assert.doesNotMatch(await configs('brokers', b), /throttled/);
    assert.doesNotMatch(await configs('topics', 'grow'), /throttled/);
    assert.deepEqual(await replicasOf('grow'), [1, 2, 3]);
    // The new replica holds the partition's data.
    await waitUntil(
      'broker 3 has as many bytes as broker 1',
      async () => (logSize(3, 'grow') > 0 && logSize(3, 'grow') === logSize(1, 'grow') ? true : undefined),
      15_000,
    );
  });

  it('removes a replica: the partition moves off broker 1 and broker 1 deletes its log', async () => {
    assert.ok(logSize(1, 'grow') > 0);
    const plan = planFile('shrink.json', [{ topic: 'grow', partition: 0, replicas: [2, 3] }]);
    const ex = await tool('--execute', '--reassignment-json-file', plan);
    assert.equal(ex.status, 0, ex.stderr);
    assert.ok(!ex.stdout.includes('throttle'), ex.stdout);
    await verifyUntilDone(plan, ['grow-0']);
    assert.deepEqual(await replicasOf('grow'), [2, 3]);
    const { admin, close } = adminFor(bootstrap);
    try {
      await waitUntil(
        'a leader among 2,3',
        async () =>
          [2, 3].includes((await describe1(admin, 'grow')).partitions[0]!.leader) ? true : undefined,
        15_000,
      );
    } finally {
      close();
    }
    // Deferred deletion as Kafka: renamed at once, removed after log.segment.delete.delay.ms.
    await waitUntil(
      'broker 1 has no grow-0 directory, live or -delete',
      async () =>
        fs.readdirSync(path.join(dir, 'broker-1')).some((f) => f.startsWith('grow-0')) ? undefined : true,
      15_000,
    );
  });

  it('a move held in progress shows in --list and topics --describe; --verify says in progress; --cancel reverts it', async () => {
    const controller = await activeController(dir);
    // The new replica's broker is stopped (not the controller, not the bootstrap broker 1), so the
    // move cannot complete; its registration outlives the stop by the session timeout.
    const victim = controller === 3 ? 2 : 3;
    const others = [1, 2, 3].filter((b) => b !== victim);
    await createTopic('held', [others]);
    await produce('held', 0, 100);
    const pid = Number(
      new RegExp(`broker ${victim} ready on \\S+ \\(log dir [^,]+, pid (\\d+)\\)`).exec(up!.output())?.[1],
    );
    assert.ok(pid > 0, up!.output());
    const target = [...others, victim];
    const plan = planFile('held.json', [{ topic: 'held', partition: 0, replicas: target }]);
    process.kill(pid, 'SIGSTOP');
    frozen.push(pid);
    try {
      const ex = await tool('--execute', '--reassignment-json-file', plan);
      assert.equal(ex.status, 0, ex.stderr);

      const list = await tool('--list');
      assert.equal(list.status, 0, list.stderr);
      assert.equal(
        list.stdout,
        `Current partition reassignments:\nheld-0: replicas: ${target.join(',')}. adding: ${victim}.\n`,
      );
      // A real client reads the same from ListPartitionReassignments.
      const kadmin = new Kafka({
        clientId: 'skiff-reassign-kafkajs',
        brokers: [bootstrap],
        logLevel: logLevel.NOTHING,
      }).admin();
      await kadmin.connect();
      try {
        const listed = await kadmin.listPartitionReassignments({});
        assert.deepEqual(listed.topics, [
          {
            name: 'held',
            partitions: [{ partition: 0, replicas: target, addingReplicas: [victim], removingReplicas: [] }],
          },
        ]);
      } finally {
        await kadmin.disconnect();
      }
      const d = await skiff(['topics', '--bootstrap-server', bootstrap, '--describe', '--topic', 'held']);
      assert.equal(d.status, 0, d.stderr);
      // Kafka's replication factor leaves out the replicas being added.
      assert.match(d.stdout, /\tReplicationFactor: 2\t/);
      assert.match(
        d.stdout,
        new RegExp(
          `\\tPartition: 0\\tLeader: \\d\\tReplicas: ${target.join(',')}\\tIsr: [\\d,]+\\tAdding Replicas: ${victim}\\tRemoving Replicas: \\tElr: `,
        ),
        d.stdout,
      );
      const v = await tool('--verify', '--reassignment-json-file', plan);
      assert.equal(v.status, 0, v.stderr);
      // Kafka's line, then what is left: the stopped new replica has fetched nothing.
      assert.match(
        v.stdout,
        new RegExp(
          `\nReassignment of partition held-0 is still in progress\\.\n {2}Adding replica ${victim}: not fetching yet; \\d+ bytes \\(.+\\) to copy from leader \\d \\(LEO 100\\)\n`,
        ),
      );
      assert.ok(!v.stdout.includes('Clearing'), v.stdout);

      // A second --execute while one runs needs --additional.
      const again = await tool('--execute', '--reassignment-json-file', plan);
      assert.equal(again.status, 1);
      assert.match(
        again.stderr,
        /^skiff reassign-partitions: Cannot execute because there is an existing partition assignment/,
      );
      assert.equal(again.stderr.trim().split('\n').length, 1);

      // --preserve-throttles: clearing them would address the stopped broker.
      const c = await tool('--cancel', '--reassignment-json-file', plan, '--preserve-throttles');
      assert.equal(c.status, 0, c.stderr);
      assert.ok(c.stdout.includes('Successfully cancelled partition reassignment for: held-0'), c.stdout);
      assert.deepEqual(await replicasOf('held'), others);
      const after = await tool('--list');
      assert.equal(after.stdout, 'No partition reassignments found.\n');
      const none = await tool('--cancel', '--reassignment-json-file', plan, '--preserve-throttles');
      assert.ok(
        none.stdout.includes('None of the specified partition reassignments are active.'),
        none.stdout,
      );
    } finally {
      process.kill(pid, 'SIGCONT');
      frozen.splice(frozen.indexOf(pid), 1);
    }
    // Stopped longer than its session, it was fenced; the next tests need it registered again.
    await waitUntil(
      `broker ${victim} registered again`,
      async () => {
        const a = adminFor(bootstrap);
        try {
          return (await a.admin.describeCluster()).brokers.has(victim) ? true : undefined;
        } finally {
          a.close();
        }
      },
      30_000,
      200,
    );
  });

  it('--generate proposes a valid plan for the brokers given, and --execute carries it out', async () => {
    await createTopic('spread', [
      [1, 2],
      [1, 2],
      [2, 1],
    ]);
    const topicsFile = path.join(dir, 'topics.json');
    fs.writeFileSync(topicsFile, JSON.stringify({ version: 1, topics: [{ topic: 'spread' }] }));
    const g = await tool('--generate', '--topics-to-move-json-file', topicsFile, '--broker-list', '2,3');
    assert.equal(g.status, 0, g.stderr);
    const lines = g.stdout.split('\n');
    assert.equal(lines[0], 'Current partition replica assignment');
    assert.deepEqual(JSON.parse(lines[1]!), {
      version: 1,
      partitions: [
        { topic: 'spread', partition: 0, replicas: [1, 2], log_dirs: ['any', 'any'] },
        { topic: 'spread', partition: 1, replicas: [1, 2], log_dirs: ['any', 'any'] },
        { topic: 'spread', partition: 2, replicas: [2, 1], log_dirs: ['any', 'any'] },
      ],
    });
    assert.equal(lines[2], '');
    assert.equal(lines[3], 'Proposed partition reassignment configuration');
    const proposed = JSON.parse(lines[4]!) as {
      version: number;
      partitions: { topic: string; partition: number; replicas: number[]; log_dirs: string[] }[];
    };
    assert.equal(proposed.version, 1);
    assert.deepEqual(
      proposed.partitions.map((p) => p.partition),
      [0, 1, 2],
    );
    for (const p of proposed.partitions) {
      assert.equal(p.topic, 'spread');
      assert.deepEqual([...p.replicas].sort(), [2, 3], JSON.stringify(p));
      assert.deepEqual(p.log_dirs, ['any', 'any']);
    }
    // Leaders spread round-robin over the brokers given.
    assert.ok(new Set(proposed.partitions.map((p) => p.replicas[0])).size === 2, lines[4]);

    const plan = path.join(dir, 'spread.json');
    fs.writeFileSync(plan, lines[4]!);
    const ex = await tool('--execute', '--reassignment-json-file', plan);
    assert.equal(ex.status, 0, ex.stderr);
    assert.ok(
      ex.stdout.includes('Successfully started partition reassignments for spread-0,spread-1,spread-2'),
    );
    await verifyUntilDone(plan, ['spread-0', 'spread-1', 'spread-2']);
    for (const p of proposed.partitions)
      assert.deepEqual(await replicasOf('spread', p.partition), p.replicas);
  });

  it('a replica removed while its broker is down is deleted when that broker starts again', async () => {
    await createTopic('away', [[1, 2, 3]]);
    await produce('away', 0, 200);
    await waitUntil('broker 3 holds away-0', async () => (logSize(3, 'away') > 0 ? true : undefined), 15_000);
    const cluster = (...args: string[]) => runSkiff(['cluster', ...args, '--data-dir', dir], '', 60_000);
    const stop = await cluster('stop', '3');
    assert.equal(stop.status, 0, stop.stderr);
    try {
      const plan = planFile('away.json', [{ topic: 'away', partition: 0, replicas: [1, 2] }]);
      const ex = await tool('--execute', '--reassignment-json-file', plan);
      assert.equal(ex.status, 0, ex.stderr);
      await verifyUntilDone(plan, ['away-0']);
      assert.ok(logSize(3, 'away') > 0, 'broker 3 is down: its log is still there');
    } finally {
      const start = await cluster('start', '3');
      assert.equal(start.status, 0, start.stderr);
    }
    await waitUntil(
      'broker 3 has no away-0 directory, live or -delete',
      async () =>
        fs.readdirSync(path.join(dir, 'broker-3')).some((f) => f.startsWith('away-0')) ? undefined : true,
      30_000,
    );
    assert.match(fs.readFileSync(path.join(dir, 'logs', 'broker-3.log'), 'utf8'), /away-0: stray log/);
  });

  it('bad input: one line on stderr and a non-zero exit', async () => {
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(bad, '{"version":1,"partitions":[{"topic":');
    const r1 = await runSkiff([
      'reassign-partitions',
      '--bootstrap-server',
      bootstrap,
      '--execute',
      '--reassignment-json-file',
      bad,
    ]);
    assert.equal(r1.status, 1);
    assert.match(r1.stderr, /^skiff reassign-partitions: The input string is not a valid JSON/);
    assert.equal(r1.stderr.trim().split('\n').length, 1);

    const unknown = planFile('unknown.json', [{ topic: 'no-such-topic', partition: 0, replicas: [1] }]);
    const r2 = await tool('--execute', '--reassignment-json-file', unknown);
    assert.equal(r2.status, 1);
    assert.equal(r2.stderr, 'skiff reassign-partitions: Topic no-such-topic not found.\n');

    const badBroker = planFile('broker.json', [{ topic: 'grow', partition: 0, replicas: [2, 9] }]);
    const r3 = await tool('--execute', '--reassignment-json-file', badBroker);
    assert.equal(r3.status, 1);
    assert.equal(r3.stderr, 'skiff reassign-partitions: Unknown broker id 9\n');

    const r4 = await tool('--verify');
    assert.equal(r4.status, 2);
    assert.equal(r4.stderr.trim().split('\n').length, 1);
    const r5 = await tool('--list', '--throttle', '5');
    assert.equal(r5.status, 2);
    assert.match(r5.stderr, /can't be used with action/);
  });
});

describe('skiff reassign-partitions moves a replica between the log dirs of one broker', () => {
  const RATE = 60_000;
  const RECORDS = 2500;
  let root: string;
  let dirs: [string, string];
  let broker: BrokerProcess;
  const tool = (...args: string[]) =>
    skiff(['reassign-partitions', '--bootstrap-server', broker.bootstrap, ...args]);
  /** Where `moving-0` lives on broker 1: its current dir and the dir of a future log, if any. */
  const placement = async (): Promise<{
    current: string | null;
    future: string | null;
    futureLag: number;
  }> => {
    const r = await skiff(['log-dirs', '--bootstrap-server', broker.bootstrap, '--describe']);
    assert.equal(r.status, 0, r.stderr);
    const json = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {
      brokers: {
        logDirs: {
          logDir: string;
          partitions: { partition: string; offsetLag: number; isFuture: boolean }[];
        }[];
      }[];
    };
    const out = { current: null as string | null, future: null as string | null, futureLag: 0 };
    for (const d of json.brokers[0]!.logDirs) {
      for (const p of d.partitions) {
        if (p.partition !== 'moving-0') continue;
        if (p.isFuture) {
          out.future = d.logDir;
          out.futureLag = p.offsetLag;
        } else out.current = d.logDir;
      }
    }
    return out;
  };

  before(async () => {
    requireTool('kcat', '-V');
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-logdirs-'));
    dirs = [path.join(root, 'a'), path.join(root, 'b')];
    broker = await startBrokerProcess([`log.dirs=${dirs.join(',')}`, 'log.segment.delete.delay.ms=1000']);
  });

  after(async () => {
    await broker?.stop();
    removeDataDir(root);
  });

  it('throttled by --replica-alter-log-dirs-throttle: isFuture while it copies, then swapped in; --verify clears the throttle', async () => {
    const c = await skiff([
      'topics',
      '--bootstrap-server',
      broker.bootstrap,
      '--create',
      '--topic',
      'moving',
      '--partitions',
      '1',
    ]);
    assert.equal(c.status, 0, c.stderr);
    const value = 'v'.repeat(200);
    const p = await kcat(
      // Small batches: the copy is metered batch by batch, as Kafka's is.
      ['-b', broker.bootstrap, '-P', '-t', 'moving', '-p', '0', '-X', 'batch.num.messages=20'],
      `${Array.from({ length: RECORDS }, (_, i) => `${i}-${value}`).join('\n')}\n`,
    );
    assert.equal(p.status, 0, p.stderr);
    const before = await placement();
    assert.ok(before.current !== null && before.future === null, JSON.stringify(before));
    const target = dirs.map((d) => path.resolve(d)).find((d) => d !== before.current)!;
    const size = fs
      .readdirSync(path.join(before.current!, 'moving-0'))
      .filter((f) => f.endsWith('.log'))
      .reduce((s, f) => s + fs.statSync(path.join(before.current!, 'moving-0', f)).size, 0);
    assert.ok(size > 4 * RATE, `${size} bytes: the move must outlast a few seconds at ${RATE} B/s`);

    const plan = path.join(root, 'move.json');
    fs.writeFileSync(
      plan,
      JSON.stringify({
        version: 1,
        partitions: [{ topic: 'moving', partition: 0, replicas: [1], log_dirs: [target] }],
      }),
    );
    const t0 = Date.now();
    const ex = await tool(
      '--execute',
      '--reassignment-json-file',
      plan,
      '--replica-alter-log-dirs-throttle',
      String(RATE),
    );
    assert.equal(ex.status, 0, ex.stderr);
    assert.ok(ex.stdout.includes(`The replica-alter-dir throttle limit was set to ${RATE} B/s`), ex.stdout);
    assert.ok(
      ex.stdout.includes(
        `Successfully started moving log directory to ${target} for replica moving-0 with broker 1 `,
      ),
      ex.stdout,
    );
    const during = await placement();
    assert.deepEqual([during.current, during.future], [before.current, target], JSON.stringify(during));
    assert.ok(during.futureLag > 0, JSON.stringify(during));
    const cfg = await skiff([
      'configs',
      '--bootstrap-server',
      broker.bootstrap,
      '--describe',
      '--entity-type',
      'brokers',
      '--entity-name',
      '1',
    ]);
    assert.match(
      cfg.stdout,
      new RegExp(`replica\\.alter\\.log\\.dirs\\.io\\.max\\.bytes\\.per\\.second=${RATE}`),
    );
    const v = await tool('--verify', '--reassignment-json-file', plan);
    assert.equal(v.status, 0, v.stderr);
    assert.ok(v.stdout.includes('Reassignment of replica moving-0-1 is still in progress.'), v.stdout);
    assert.ok(!v.stdout.includes('Clearing'), v.stdout);

    const done = await waitUntil(
      'the move to complete',
      async () => {
        const r = await tool('--verify', '--reassignment-json-file', plan);
        return r.stdout.includes('Reassignment of replica moving-0-1 completed successfully.')
          ? r.stdout
          : undefined;
      },
      60_000,
      250,
    );
    const elapsedMs = Date.now() - t0;
    assert.ok(done.includes('Clearing broker-level throttles on broker 1'), done);
    assert.ok(done.includes('Clearing topic-level throttles on topic moving'), done);
    const cleared = await skiff([
      'configs',
      '--bootstrap-server',
      broker.bootstrap,
      '--describe',
      '--entity-type',
      'brokers',
      '--entity-name',
      '1',
    ]);
    assert.doesNotMatch(cleared.stdout, /replica\.alter\.log\.dirs/);
    const afterMove = await placement();
    assert.deepEqual([afterMove.current, afterMove.future], [target, null]);
    assert.equal(consumeCount(await kcatAll(broker.bootstrap)), RECORDS);
    console.log(
      `log dir move of ${size} bytes at --replica-alter-log-dirs-throttle ${RATE}: ${elapsedMs} ms (${Math.round((size * 1000) / elapsedMs)} B/s observed, --execute to the --verify that saw it done)`,
    );
  });
});

async function kcatAll(bootstrap: string): Promise<string> {
  const r = await kcat(['-b', bootstrap, '-C', '-t', 'moving', '-p', '0', '-o', 'beginning', '-e', '-q']);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

function consumeCount(out: string): number {
  return out.split('\n').filter((l) => l !== '').length;
}
