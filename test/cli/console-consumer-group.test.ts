/**
 * `skiff console-consumer --group` against a real `skiff broker` child process (issue 22): it joins
 * the group as Kafka's console consumer does (subscribe, range assignment, auto-commit), shows in
 * `consumer-groups --describe` with its member while it runs, commits exactly what it printed, and
 * a second run resumes from that commit (--from-beginning only applies without one); it shares
 * its group after a rebalance with another console consumer and with kcat (librdkafka, range).
 * Also the range assignor and Kafka's checks of --group against --partition and group.id.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { runConsoleConsumer } from '../../src/cli/tools/console-consumer.js';
import { rangeAssign } from '../../src/client/group-consumer.js';
import { systemRuntime } from '../../src/client/runtime.js';
import { requireTool, waitUntil } from '../cluster/helpers.js';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';
import { produceRecords, skiff } from './in-process.js';

const TOPIC = 'feed';

describe('skiff console-consumer --group', () => {
  let broker: BrokerProcess;
  let bs: string[];
  before(async () => {
    // No initial rebalance delay: a lone console consumer joins at once.
    broker = await startBrokerProcess(['group.initial.rebalance.delay.ms=0']);
    bs = ['--bootstrap-server', broker.bootstrap];
    const created = await skiff(['topics', ...bs, '--create', '--topic', TOPIC, '--partitions', '2']);
    assert.equal(created.status, 0, created.stderr);
    await produceRecords(
      broker.bootstrap,
      Array.from({ length: 10 }, (_, i) => ({
        topic: TOPIC,
        partition: i % 2,
        key: null,
        value: Buffer.from(`m${i}`),
      })),
    );
  });
  after(async () => {
    await broker?.stop();
  });

  /** A console consumer in this process, stopped by `stop` (Ctrl-C) or by its own flags. */
  const start = (args: string[], stop = new AbortController().signal) => {
    const out = { stdout: '', stderr: '' };
    const io = {
      out: (l: string) => {
        out.stdout += `${l}\n`;
      },
      err: (l: string) => {
        out.stderr += `${l}\n`;
      },
    };
    const done = runConsoleConsumer([...bs, '--topic', TOPIC, ...args], io, systemRuntime(), stop).then(
      (status) => ({ status, ...out }),
    );
    return { out, done };
  };
  const consume = (args: string[]) => start(args).done;
  const describeGroup = async (...extra: string[]) =>
    skiff(['consumer-groups', ...bs, '--describe', '--group', 'readers', ...extra]);

  it('joins, shows as a member, commits what it printed, and a second run resumes there', async () => {
    const first = await consume(['--group', 'readers', '--from-beginning', '--max-messages', '6']);
    assert.equal(first.status, 0, first.stderr);
    assert.equal(first.stderr, 'Processed a total of 6 messages\n');
    const printed = first.stdout.trimEnd().split('\n');
    assert.equal(printed.length, 6);

    // Closed: the group is empty and its committed offsets add up to what was printed.
    let d = await describeGroup('--json');
    const [doc] = JSON.parse(d.stdout) as { state: string; partitions: { currentOffset: number }[] }[];
    assert.equal(doc?.state, 'Empty');
    assert.equal(
      doc?.partitions.reduce((n, p) => n + p.currentOffset, 0),
      6,
    );

    // Running: the member and its two partitions are in the group's description.
    const stop = new AbortController();
    const second = start(['--group', 'readers', '--from-beginning'], stop.signal);
    // Listed once the rebalance has completed: the member with both partitions.
    const member = /^readers\s+console-consumer-\S+\s+\/127\.0\.0\.1\s+console-consumer\s+2\s+$/m;
    await waitUntil(
      'the console consumer as the member of readers with both partitions',
      async () => (member.test((await describeGroup('--members')).stdout) ? true : undefined),
      15_000,
    );
    d = await describeGroup('--state');
    assert.match(d.stdout.split('\n')[2]!, /^readers\s+\S+ \(1\)\s+range\s+Stable\s+1$/);
    // It resumes at the commit, not at the beginning: together the runs print every record once.
    await waitUntil(
      'the four records after the commit',
      async () => (second.out.stdout.split('\n').length > 4 ? true : undefined),
      15_000,
    );
    stop.abort();
    const rest = await second.done;
    assert.equal(rest.status, 0, rest.stderr);
    assert.equal(rest.stderr, 'Processed a total of 4 messages\n');
    const all = [...printed, ...rest.stdout.trimEnd().split('\n')].sort();
    assert.deepEqual(all, Array.from({ length: 10 }, (_, i) => `m${i}`).sort());
    d = await describeGroup('--state');
    assert.match(d.stdout.split('\n')[2]!, /^readers\s+\S+ \(1\)\s+\S*\s+Empty\s+0$/);

    // group.id given as a consumer property is the same group: nothing is left to read.
    const third = await consume([
      '--consumer-property',
      'group.id=readers',
      '--from-beginning',
      '--timeout-ms',
      '1500',
    ]);
    assert.deepEqual(
      [third.status, third.stdout, third.stderr],
      [0, '', 'Processed a total of 0 messages\n'],
    );
  });

  it('shares the partitions with a second member after a rebalance', async () => {
    const stop = new AbortController();
    const args = ['--group', 'pair', '--consumer-property', 'heartbeat.interval.ms=300'];
    const partitionsOf = async () =>
      (await skiff(['consumer-groups', ...bs, '--describe', '--group', 'pair', '--members'])).stdout
        .split('\n')
        .filter((l) => l.startsWith('pair '))
        .map((l) => Number(l.trim().split(/\s+/).at(-1)))
        .sort();
    const a = start(args, stop.signal);
    await waitUntil(
      'one member with both partitions',
      async () => ((await partitionsOf()).join() === '2' ? true : undefined),
      15_000,
    );
    // The first member notices the rebalance by its heartbeat, rejoins, and gives one partition up.
    const b = start(args, stop.signal);
    await waitUntil(
      'two members with one partition each',
      async () => ((await partitionsOf()).join() === '1,1' ? true : undefined),
      15_000,
    );
    stop.abort();
    for (const r of await Promise.all([a.done, b.done])) assert.equal(r.status, 0, r.stderr);
  });

  it('shares a group with kcat (librdkafka), both on the range assignor', async () => {
    requireTool('kcat', '-V');
    const stop = new AbortController();
    const ours = start(['--group', 'mixed', '--consumer-property', 'heartbeat.interval.ms=300'], stop.signal);
    const members = async () =>
      (await skiff(['consumer-groups', ...bs, '--describe', '--group', 'mixed', '--members'])).stdout
        .split('\n')
        .filter((l) => l.startsWith('mixed '))
        .map((l) => `${l.split(/\s+/)[3]}:${l.trim().split(/\s+/).at(-1)}`)
        .sort();
    await waitUntil(
      'the console consumer in mixed',
      async () => ((await members()).length === 1 ? true : undefined),
      15_000,
    );
    // Consuming until stopped (no -e: it would leave the group once at the end of its partitions).
    const theirs = spawn('kcat', ['-b', broker.bootstrap, '-G', 'mixed', TOPIC, '-q'], { stdio: 'ignore' });
    const theirsExited = once(theirs, 'exit');
    try {
      await waitUntil(
        'kcat and the console consumer with one partition each',
        async () => ((await members()).join() === 'console-consumer:1,rdkafka:1' ? true : undefined),
        20_000,
      );
      const d = await skiff(['consumer-groups', ...bs, '--describe', '--group', 'mixed', '--state']);
      assert.match(d.stdout.split('\n')[2]!, /^mixed\s+\S+ \(1\)\s+range\s+Stable\s+2$/);
    } finally {
      stop.abort();
      theirs.kill('SIGTERM');
      await Promise.all([ours.done, theirsExited]);
    }
  });

  it("refuses Kafka's invalid combinations with --group", async () => {
    let r = await consume(['--group', 'a', '--partition', '0']);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /Options group and partition cannot be specified together\./);
    r = await consume(['--group', 'a', '--consumer-property', 'group.id=b']);
    assert.equal(r.status, 2);
    assert.match(
      r.stderr,
      /The group ids provided in different places \(directly using '--group', via '--consumer-property', or via '--consumer\.config'\) do not match\. Detected group ids: 'a', 'b'/,
    );
    r = await consume([
      '--group',
      'a',
      '--from-beginning',
      '--consumer-property',
      'auto.offset.reset=latest',
    ]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /Can't simultaneously specify --from-beginning and 'auto\.offset\.reset=latest'/);
  });

  it("assigns ranges as Kafka's RangeAssignor", () => {
    const shares = rangeAssign(
      [
        { memberId: 'c-2', groupInstanceId: null, topics: ['a', 'b'] },
        { memberId: 'c-1', groupInstanceId: null, topics: ['a'] },
      ],
      new Map([
        ['a', 5],
        ['b', 2],
      ]),
    );
    const names = (id: string) => shares.get(id)!.map((tp) => `${tp.topic}-${tp.partition}`);
    assert.deepEqual(names('c-1'), ['a-0', 'a-1', 'a-2']);
    assert.deepEqual(names('c-2'), ['a-3', 'a-4', 'b-0', 'b-1']);
  });
});
