/**
 * `skiff consumer-groups` against a real `skiff broker` child process, for a group without active
 * members (reset, list, describe with lag, state, delete), and Kafka's table layout for members
 * with long ids.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { formatOffsetRows } from '../../src/cli/tools/consumer-groups.js';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';
import { skiff } from './in-process.js';

describe('skiff consumer-groups', () => {
  let broker: BrokerProcess;
  let groups: (...args: string[]) => ReturnType<typeof skiff>;
  before(async () => {
    broker = await startBrokerProcess();
    const bs = ['--bootstrap-server', broker.bootstrap];
    groups = (...args) => skiff(['consumer-groups', ...bs, ...args]);
    assert.equal(
      (await skiff(['topics', ...bs, '--create', '--topic', 'orders', '--partitions', '2'])).status,
      0,
    );
    // Keys chosen to land on partition 0 (murmur2), so the log end offsets are known.
    const r = await skiff(
      [
        'console-producer',
        ...bs,
        '--topic',
        'orders',
        '--property',
        'parse.key=true',
        '--property',
        'key.separator=:',
      ],
      'a:1\na:2\na:3\n',
    );
    assert.equal(r.status, 0, r.stderr);
  });
  after(async () => {
    await broker?.stop();
  });

  it('resets, lists, describes with lag, and deletes an inactive group', async () => {
    const ends = await skiff(['get-offsets', '--bootstrap-server', broker.bootstrap, '--topic', 'orders']);
    const end = new Map(
      ends.stdout
        .trimEnd()
        .split('\n')
        .map((l) => [Number(l.split(':')[1]), l.split(':')[2]!]),
    );
    const p = end.get(0) === '3' ? 0 : 1;
    const other = 1 - p;

    let r = await groups(
      '--reset-offsets',
      '--group',
      'billing',
      '--topic',
      'orders',
      '--to-offset',
      '1',
      '--execute',
    );
    assert.equal(r.status, 0, r.stderr);
    const line = (a: string, b: string, c: string, d: string) =>
      `${a.padEnd(30)} ${b.padEnd(30)} ${c.padEnd(10)} ${d.padEnd(15)}`;
    assert.deepEqual(r.stdout.split('\n'), [
      '',
      line('GROUP', 'TOPIC', 'PARTITION', 'NEW-OFFSET'),
      line('billing', 'orders', '0', p === 0 ? '1' : '0'),
      line('billing', 'orders', '1', p === 1 ? '1' : '0'),
      '',
    ]);

    r = await groups('--list');
    assert.deepEqual([r.status, r.stdout], [0, 'billing\n']);

    r = await groups('--describe', '--group', 'billing');
    assert.equal(r.status, 0);
    assert.equal(r.stderr, "Consumer group 'billing' has no active members.\n");
    const rows = r.stdout.split('\n');
    assert.equal(rows[0], '');
    assert.equal(
      rows[1],
      'GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID',
    );
    const row = (part: number, cur: string, leo: string, lag: string) =>
      `${'billing'.padEnd(15)} ${'orders'.padEnd(15)} ${String(part).padEnd(10)} ${cur.padEnd(15)} ${leo.padEnd(15)} ${lag.padEnd(15)} ${'-'.padEnd(15)} ${'-'.padEnd(15)} -`;
    assert.deepEqual(rows.slice(2).sort(), [row(p, '1', '3', '2'), row(other, '0', '0', '0'), ''].sort());

    r = await groups('--describe', '--group', 'billing', '--json');
    const [doc] = JSON.parse(r.stdout) as {
      state: string;
      partitions: { partition: number; lag: number | null }[];
    }[];
    assert.equal(doc?.state, 'Empty');
    assert.deepEqual(doc?.partitions.find((x) => x.partition === p)?.lag, 2);

    r = await groups('--reset-offsets', '--group', 'billing', '--all-topics', '--to-latest');
    assert.match(r.stdout, /^WARN: No action will be performed as the --execute option is missing\.\n/);

    r = await groups('--describe', '--group', 'billing', '--state');
    assert.match(r.stdout.split('\n')[2]!, /^billing\s+127\.0\.0\.1:\d+ \(1\)\s+Empty\s+0$/);

    r = await groups('--delete', '--group', 'billing');
    assert.deepEqual(
      [r.status, r.stdout],
      [0, "Deletion of requested consumer groups ('billing') was successful.\n"],
    );
    r = await groups('--delete', '--group', 'billing');
    assert.equal(r.status, 1);
    assert.match(
      r.stdout,
      /^Deletion of some consumer groups failed:\n\* Group 'billing' could not be deleted due to: .+\n$/,
    );

    r = await groups('--describe', '--group', 'billing');
    assert.deepEqual(
      [r.status, r.stderr],
      [1, "skiff consumer-groups: Consumer group 'billing' does not exist.\n"],
    );
    r = await groups('--describe');
    assert.equal(r.status, 2);
    assert.match(r.stderr, /takes one of these options: --all-groups, --group/);
  });

  it('widens the columns to the longest value, as Kafka does', () => {
    const id = 'consumer-1-6b1f0f3e-2a4c-4f57-9a53-3f5e8f7c2d11';
    const lines = formatOffsetRows([
      {
        group: 'g',
        topic: 'orders',
        partition: 0,
        current: 5n,
        logEnd: 9n,
        consumerId: id,
        host: '/127.0.0.1',
        clientId: 'c1',
      },
      {
        group: 'g',
        topic: 'orders',
        partition: 1,
        current: null,
        logEnd: 4n,
        consumerId: id,
        host: '/127.0.0.1',
        clientId: 'c1',
      },
    ]);
    assert.equal(
      lines[1],
      `GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             ${'CONSUMER-ID'.padEnd(id.length)} HOST            CLIENT-ID`,
    );
    assert.equal(
      lines[2],
      `g               orders          0          5               9               4               ${id} /127.0.0.1      c1`,
    );
    assert.equal(
      lines[3],
      `g               orders          1          -               4               -               ${id} /127.0.0.1      c1`,
    );
  });
});
