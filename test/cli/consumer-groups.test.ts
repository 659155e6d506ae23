/**
 * `skiff consumer-groups` against a real `skiff broker` child process, for a group without active
 * members (reset, list, describe with lag, state, delete), and Kafka's table layout for members
 * with long ids.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { formatOffsetRows } from '../../src/cli/tools/consumer-groups.js';
import { parseDateTime, parseDuration } from '../../src/cli/tools/consumer-groups-reset.js';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';
import { produceRecords, skiff } from './in-process.js';

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
    assert.match(
      r.stderr,
      /^WARN: No action will be performed as the --execute option is missing\. In a future major release/,
    );
    assert.match(r.stdout, /^\nGROUP {26}/);

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

  it('resets by datetime and by duration where ListOffsets by timestamp puts them, and exports and reads back the plan as CSV', async () => {
    const bs = ['--bootstrap-server', broker.bootstrap];
    assert.equal(
      (await skiff(['topics', ...bs, '--create', '--topic', 'events', '--partitions', '2'])).status,
      0,
    );
    // Six records on partition 0, one an hour, the last an hour ago; partition 1 stays empty.
    const hourMs = 3_600_000;
    const nowMs = Date.now();
    const stamps = [6, 5, 4, 3, 2, 1].map((h) => nowMs - h * hourMs);
    await produceRecords(
      broker.bootstrap,
      stamps.map((timestampMs, i) => ({
        topic: 'events',
        partition: 0,
        key: null,
        value: Buffer.from(`e${i}`),
        timestampMs,
      })),
    );
    const reset = (...args: string[]) =>
      groups('--reset-offsets', '--group', 'audit', '--topic', 'events', ...args);
    const newOffsets = (stdout: string) =>
      stdout
        .split('\n')
        .filter((l) => l.startsWith('audit '))
        .map((l) => l.split(/\s+/).slice(2, 4).join(':'));
    const empty = '\nWarn: Partition 1 from topic events is empty. Falling back to latest known offset.';

    // 3 h 30 min ago: the first record at or after it is the one from 3 h ago, offset 3.
    let r = await reset('--by-duration', 'PT3H30M', '--execute');
    assert.equal(r.status, 0, r.stderr);
    assert.ok(r.stdout.startsWith(`${empty}\n`), r.stdout);
    assert.deepEqual(newOffsets(r.stdout), ['0:3', '1:0']);
    const committed = async () => (await groups('--describe', '--group', 'audit', '--json')).stdout;
    assert.deepEqual(
      (
        JSON.parse(await committed()) as { partitions: { partition: number; currentOffset: number }[] }[]
      )[0]!.partitions
        .map((p) => [p.partition, p.currentOffset])
        .sort(),
      [
        [0, 3],
        [1, 0],
      ],
    );

    // A datetime in another zone: 4 h 30 min ago written as local time at +02:00 (offset 2).
    const at = new Date(nowMs - 4.5 * hourMs + 2 * hourMs).toISOString().replace('Z', '+02:00');
    r = await reset('--to-datetime', at, '--dry-run');
    assert.deepEqual(newOffsets(r.stdout), ['0:2', '1:0']);
    // Without a zone it is UTC; a time after every record falls back to the log end (6).
    r = await reset('--to-datetime', new Date(nowMs).toISOString().replace('Z', ''), '--dry-run');
    assert.deepEqual(newOffsets(r.stdout), ['0:6', '1:0']);
    r = await reset('--to-datetime', '2024-04-31T00:00:00.000', '--dry-run');
    assert.equal(r.status, 2);
    assert.match(r.stderr, /invalid --to-datetime '2024-04-31T00:00:00.000'/);
    r = await reset('--by-duration', 'PT', '--dry-run');
    assert.equal(r.status, 2);

    // --export prints Kafka's CSV (and nothing else on stdout); --from-file applies it, clamped to the log.
    r = await groups(
      '--reset-offsets',
      '--group',
      'audit',
      '--topic',
      'events:0',
      '--by-duration',
      'P1D',
      '--export',
      '--dry-run',
    );
    assert.deepEqual([r.status, r.stdout], [0, 'events,0,0\n\n']);
    const file = path.join(broker.dir, 'plan.csv');
    fs.writeFileSync(file, 'events,0,5\nevents,1,40\n');
    r = await groups('--reset-offsets', '--group', 'audit', '--from-file', file, '--execute');
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(newOffsets(r.stdout), ['0:5', '1:0']);
    r = await groups(
      '--reset-offsets',
      '--group',
      'audit',
      '--topic',
      'events:0',
      '--shift-by',
      '-2',
      '--dry-run',
    );
    assert.deepEqual(newOffsets(r.stdout), ['0:3']);
    r = await groups(
      '--reset-offsets',
      '--group',
      'fresh',
      '--topic',
      'events:0',
      '--shift-by',
      '1',
      '--dry-run',
    );
    assert.equal(r.status, 2);
    assert.match(
      r.stderr,
      /Cannot shift offset for partition events-0 since there is no current committed offset/,
    );
    fs.writeFileSync(file, 'audit,events,0,4\nother,events,0,1\n');
    r = await groups(
      '--reset-offsets',
      '--group',
      'audit',
      '--group',
      'other',
      '--from-file',
      file,
      '--export',
      '--dry-run',
    );
    assert.deepEqual([r.status, r.stdout], [0, 'audit,events,0,4\nother,events,0,1\n\n']);
  });

  it("parses Java's Duration and Kafka's datetime formats", () => {
    assert.equal(parseDuration('P1DT2H'), 26 * 3_600_000);
    assert.equal(parseDuration('pt1.5s'), 1500);
    assert.equal(parseDuration('-PT1M'), -60_000);
    assert.equal(parseDuration('PT-1H30M'), -1_800_000);
    for (const bad of ['P', 'PT', 'P1H', '1D', 'P1DT'])
      assert.throws(() => parseDuration(bad), /invalid --by-duration/, bad);
    assert.equal(parseDateTime('2024-03-01T12:00:00.250'), Date.UTC(2024, 2, 1, 12, 0, 0, 250));
    assert.equal(parseDateTime('2024-03-01T12:00:00.000Z'), Date.UTC(2024, 2, 1, 12));
    assert.equal(parseDateTime('2024-03-01T12:00:00.000-05:30'), Date.UTC(2024, 2, 1, 17, 30));
    assert.equal(parseDateTime('2024-03-01T12:00:00.000+01'), Date.UTC(2024, 2, 1, 11));
    for (const bad of [
      '2024-03-01',
      '2024-03-01T12:00:00',
      '2024-02-30T00:00:00.000',
      '2024-03-01T24:00:00.000',
    ])
      assert.throws(() => parseDateTime(bad), /invalid --to-datetime/, bad);
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
