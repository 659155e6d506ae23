/**
 * `skiff leader-election` on `skiff up --brokers 3` (issue 22), as kafka-leader-election.sh: after
 * a broker restart the leadership it held stays with another replica (the automatic rebalance is
 * off), and a PREFERRED election moves it back to the preferred replica, with Kafka's lines for
 * the elected, the already-elected and the failed partitions.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { skiff } from '../cli/in-process.js';
import {
  adminFor,
  describe1,
  removeDataDir,
  runSkiff,
  type SkiffProcess,
  startTestCluster,
  waitUntil,
} from './helpers.js';

const TOPIC = 'elect';

describe('skiff leader-election', () => {
  let dir: string;
  let bootstrap: string;
  let up: SkiffProcess | null = null;
  const cluster = (...args: string[]) => runSkiff(['cluster', ...args, '--data-dir', dir], '', 60_000);
  const partitions = async () => {
    const { admin, close } = adminFor(bootstrap);
    try {
      return (await describe1(admin, TOPIC)).partitions;
    } finally {
      close();
    }
  };
  const elect = (...args: string[]) =>
    skiff(['leader-election', '--bootstrap-server', bootstrap, '--election-type', 'PREFERRED', ...args]);

  before(async () => {
    let port: number;
    ({ dir, port, up } = await startTestCluster('skiff-leader-election-', [
      'auto.leader.rebalance.enable=false',
    ]));
    bootstrap = `127.0.0.1:${port},127.0.0.1:${port + 1},127.0.0.1:${port + 2}`;
    const { admin, close } = adminFor(bootstrap);
    try {
      const [r] = await admin.createTopics([
        {
          name: TOPIC,
          numPartitions: -1,
          replicationFactor: -1,
          assignments: [
            [1, 2, 3],
            [2, 3, 1],
          ],
        },
      ]);
      assert.equal(r?.error, null);
    } finally {
      close();
    }
  });

  after(async () => {
    await up?.stop(15_000);
    if (dir) removeDataDir(dir);
  });

  it('moves leadership back to the preferred replica after a broker restart', async () => {
    await waitUntil(
      'leaders 1 and 2',
      async () => {
        const ps = await partitions();
        return ps[0]?.leader === 1 && ps[1]?.leader === 2 ? true : undefined;
      },
      20_000,
    );
    let r = await cluster('stop', '1');
    assert.equal(r.status, 0, r.stderr);
    r = await cluster('start', '1');
    assert.equal(r.status, 0, r.stderr);
    const [moved] = await waitUntil(
      'broker 1 back in the ISR of both partitions',
      async () => {
        const ps = await partitions();
        return ps.every((p) => p.isr.includes(1)) ? ps : undefined;
      },
      30_000,
    );
    assert.notEqual(moved?.leader, 1, 'the restart left partition 0 led by another replica');

    const run = await elect('--all-topic-partitions');
    assert.deepEqual(
      [run.status, run.stdout, run.stderr],
      [0, `Successfully completed leader election (PREFERRED) for partitions ${TOPIC}-0\n`, ''],
    );
    assert.deepEqual(
      (await partitions()).map((p) => p.leader),
      [1, 2],
    );

    const again = await elect('--topic', TOPIC, '--partition', '0');
    assert.deepEqual(
      [again.status, again.stdout],
      [0, `Valid replica already elected for partitions ${TOPIC}-0\n`],
    );
  });

  it('takes the partitions from a JSON file, and reports the ones that cannot be elected', async () => {
    const file = path.join(dir, 'election.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        partitions: [
          { topic: TOPIC, partition: 1 },
          { topic: TOPIC, partition: 0 },
        ],
      }),
    );
    const run = await elect('--path-to-json-file', file);
    assert.deepEqual(
      [run.status, run.stdout],
      [0, `Valid replica already elected for partitions ${TOPIC}-0, ${TOPIC}-1\n`],
    );

    const missing = await elect('--topic', TOPIC, '--partition', '7');
    assert.equal(missing.status, 1);
    assert.match(
      missing.stdout,
      new RegExp(
        `^Error completing leader election \\(PREFERRED\\) for partition: ${TOPIC}-7: org\\.apache\\.kafka\\.common\\.errors\\.UnknownTopicOrPartitionException: .+\\n$`,
      ),
    );
    assert.equal(missing.stderr, 'skiff leader-election: 1 replica(s) could not be elected\n');

    fs.writeFileSync(
      file,
      JSON.stringify({
        partitions: [
          { topic: TOPIC, partition: 0 },
          { topic: TOPIC, partition: 0 },
        ],
      }),
    );
    const dup = await elect('--path-to-json-file', file);
    assert.deepEqual(
      [dup.status, dup.stderr],
      [1, `skiff leader-election: Replica election data contains duplicate partitions: ${TOPIC}-0\n`],
    );
  });

  it("refuses Kafka's invalid option combinations", async () => {
    const cases: [string[], RegExp][] = [
      [
        ['--all-topic-partitions', '--topic', TOPIC, '--partition', '0'],
        /One and only one of the following options is required: topic, all-topic-partitions, path-to-json-file/,
      ],
      [['--topic', TOPIC], /Missing required option\(s\): partition/],
      [['--all-topic-partitions', '--partition', '0'], /Option partition is only allowed if topic is used/],
    ];
    for (const [args, message] of cases) {
      const r = await elect(...args);
      assert.equal(r.status, 2, args.join(' '));
      assert.match(r.stderr, message);
    }
    const noType = await skiff([
      'leader-election',
      '--bootstrap-server',
      bootstrap,
      '--all-topic-partitions',
    ]);
    assert.equal(noType.status, 2);
    assert.match(noType.stderr, /Missing required option\(s\): election-type/);
    const badType = await skiff([
      'leader-election',
      '--bootstrap-server',
      bootstrap,
      '--all-topic-partitions',
      '--election-type',
      'fastest',
    ]);
    assert.deepEqual(
      [badType.status, badType.stderr],
      [
        2,
        "skiff leader-election: invalid --election-type 'fastest' (expected PREFERRED or UNCLEAN) (see skiff leader-election --help)\n",
      ],
    );
  });
});
