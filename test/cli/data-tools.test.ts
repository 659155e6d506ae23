/**
 * The data-path tools against a real `skiff broker` child process: console producer → consumer
 * round trip, get-offsets lines, delete-records output, the perf tools' summary formats, and one
 * stderr line with a non-zero exit for each error path (missing broker, bad JSON, unknown topic,
 * unknown flag).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type BrokerProcess, runSkiff, startBrokerProcess, type ToolRun } from '../support/broker-process.js';
import { skiff } from './in-process.js';

describe('data tools against skiff broker', () => {
  let broker: BrokerProcess;
  let bs: string[];
  before(async () => {
    // Without auto-creation, so that a producer to a missing topic fails (producer-tools.test.ts
    // has the producers creating topics).
    broker = await startBrokerProcess(['auto.create.topics.enable=false']);
    bs = ['--bootstrap-server', broker.bootstrap];
    const r = await skiff(['topics', ...bs, '--create', '--topic', 'rt', '--partitions', '2']);
    assert.equal(r.status, 0, r.stderr);
  });
  after(async () => {
    await broker?.stop();
  });

  it('console producer to console consumer, keys kept, then offsets and delete-records', async () => {
    const lines = ['k1:one', 'k2:two', 'k3:three', 'k1:four', 'k2:five:with:colons'];
    let r = await runSkiff(
      [
        'console-producer',
        ...bs,
        '--topic',
        'rt',
        '--property',
        'parse.key=true',
        '--property',
        'key.separator=:',
      ],
      `${lines.join('\n')}\n`,
    );
    assert.deepEqual([r.status, r.stdout, r.stderr], [0, '', '']);

    r = await runSkiff([
      'console-consumer',
      ...bs,
      '--topic',
      'rt',
      '--from-beginning',
      '--max-messages',
      '5',
      '--property',
      'print.key=true',
      '--property',
      'key.separator=:',
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, 'Processed a total of 5 messages\n');
    // Partitions interleave; per key the order is kept because a key always maps to one partition.
    const got = r.stdout.trimEnd().split('\n');
    assert.deepEqual([...got].sort(), [...lines].sort());
    const k1 = got.filter((l) => l.startsWith('k1:'));
    assert.deepEqual(k1, ['k1:one', 'k1:four']);

    // One partition from an offset, with Kafka's Partition:/Offset: prefixes.
    r = await skiff([
      'console-consumer',
      ...bs,
      '--topic',
      'rt',
      '--partition',
      '1',
      '--offset',
      '1',
      '--max-messages',
      '1',
      '--property',
      'print.offset=true',
      '--property',
      'print.partition=true',
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^Partition:1\tOffset:1\t\S+\n$/);

    r = await skiff(['get-offsets', ...bs, '--topic', 'rt']);
    assert.equal(r.status, 0, r.stderr);
    const ends = r.stdout.trimEnd().split('\n');
    assert.equal(ends.length, 2);
    assert.match(ends[0]!, /^rt:0:\d+$/);
    assert.match(ends[1]!, /^rt:1:\d+$/);
    const total = ends.reduce((n, l) => n + Number(l.split(':')[2]), 0);
    assert.equal(total, 5);
    r = await skiff(['get-offsets', ...bs, '--topic', 'rt', '--time', 'earliest']);
    assert.equal(r.stdout, 'rt:0:0\nrt:1:0\n');

    const end0 = BigInt(ends[0]!.split(':')[2]!);
    const file = path.join(broker.dir, 'del.json');
    fs.writeFileSync(
      file,
      JSON.stringify({ version: 1, partitions: [{ topic: 'rt', partition: 0, offset: Number(end0) }] }),
    );
    r = await skiff(['delete-records', ...bs, '--offset-json-file', file]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(
      r.stdout,
      `Executing records delete operation\nRecords delete operation completed:\npartition: rt-0\tlow_watermark: ${end0}\n`,
    );
    r = await skiff(['get-offsets', ...bs, '--topic', 'rt', '--time', '-2', '--partitions', '0']);
    assert.deepEqual([r.status, r.stdout, r.stderr], [0, `rt:0:${end0}\n`, '']);

    // Beyond the high watermark: Kafka's per-partition error line; Skiff also exits non-zero.
    fs.writeFileSync(file, '{"version":1,"partitions":[{"topic":"rt","partition":1,"offset":1000}]}');
    r = await skiff(['delete-records', ...bs, '--offset-json-file', file]);
    assert.equal(r.status, 1);
    assert.match(r.stdout, /\npartition: rt-1\terror: .+\n$/);
    // A negative offset other than -1 (the high watermark) is out of range too, as in Kafka.
    fs.writeFileSync(file, '{"version":1,"partitions":[{"topic":"rt","partition":1,"offset":-1001}]}');
    r = await skiff(['delete-records', ...bs, '--offset-json-file', file]);
    assert.equal(r.status, 1);
    assert.match(r.stdout, /\npartition: rt-1\terror: The requested offset .+\n$/);
  });

  it("producer-perf-test prints Kafka's summary line; consumer-perf-test its header and CSV", async () => {
    // 100-byte records as fast as they go, to `topic`, with `extra` flags and producer props.
    const perf = (topic: string, records: number, extra: string[] = [], props: string[] = []) =>
      skiff([
        ...['producer-perf-test', '--topic', topic, '--num-records', String(records), ...extra],
        ...['--record-size', '100', '--throughput', '-1'],
        ...['--producer-props', `bootstrap.servers=${broker.bootstrap}`, ...props],
      ]);
    const summary =
      '\\d+\\.\\d records\\/sec \\(\\d+\\.\\d\\d MB\\/sec\\), \\d+\\.\\d\\d ms avg latency, \\d+\\.\\d\\d ms max latency, \\d+ ms 50th, \\d+ ms 95th, \\d+ ms 99th, \\d+ ms 99\\.9th\\.';
    let r = await skiff(['topics', ...bs, '--create', '--topic', 'perf', '--partitions', '1']);
    assert.equal(r.status, 0, r.stderr);
    r = await perf('perf', 3000, [], ['acks=all']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.match(r.stdout, new RegExp(`^3000 records sent, ${summary}\\n$`));

    // --warmup-records: Kafka's notice first, then the whole run's summary and the steady state's.
    r = await skiff(['topics', ...bs, '--create', '--topic', 'warm', '--partitions', '1']);
    assert.equal(r.status, 0, r.stderr);
    r = await perf('warm', 3000, ['--warmup-records', '1000']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(
      r.stdout,
      new RegExp(
        `^Warmup first 1000 records\\. Steady state results will print after the complete test summary\\.\\n3000 records sent, ${summary}\\n2000 steady state records sent, ${summary}\\n$`,
      ),
    );
    r = await perf('warm', 10, ['--warmup-records', '10']);
    assert.equal(r.status, 2, 'a usage error');
    assert.match(r.stderr, /--warmup-records must be strictly fewer than the number of records/);

    r = await skiff([
      'consumer-perf-test',
      ...bs,
      '--topic',
      'perf',
      '--messages',
      '3000',
      '--timeout',
      '5000',
    ]);
    assert.equal(r.status, 0, r.stderr);
    const [header, csv, extra] = r.stdout.split('\n');
    assert.equal(
      header,
      'start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec',
    );
    const date = '\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d:\\d{3}';
    assert.match(
      csv!,
      new RegExp(
        `^${date}, ${date}, 0\\.2861, \\d+\\.\\d{4}, 3000, \\d+\\.\\d{4}, \\d+, \\d+, \\d+\\.\\d{4}, \\d+\\.\\d{4}$`,
      ),
    );
    assert.equal(extra, '');
  });

  it('gives one stderr line and a non-zero exit for each error path', async () => {
    const bad = path.join(broker.dir, 'bad.json');
    fs.writeFileSync(bad, '{"version":1,"partitions":[');
    const dup = path.join(broker.dir, 'dup.json');
    fs.writeFileSync(
      dup,
      '{"version":1,"partitions":[{"topic":"rt","partition":0,"offset":1},{"topic":"rt","partition":0,"offset":2}]}',
    );
    const down = ['--bootstrap-server', '127.0.0.1:1'];
    const cases: [string[], number, RegExp][] = [
      [
        ['delete-records', ...bs, '--offset-json-file', bad],
        1,
        /^skiff delete-records: the offset JSON file is not valid JSON/,
      ],
      [['delete-records', ...bs, '--offset-json-file', dup], 1, /duplicate topic partitions: rt-0$/],
      [
        ['delete-records', ...bs, '--offset-json-file', '/nonexistent.json'],
        1,
        /cannot read \/nonexistent\.json \(ENOENT\)$/,
      ],
      [['delete-records', ...down, '--offset-json-file', dup.replace('dup', 'bad')], 1, /not valid JSON/],
      [
        ['get-offsets', ...bs, '--topic', 'nope'],
        1,
        /^skiff get-offsets: Could not match any topic-partitions/,
      ],
      [['get-offsets', ...bs, '--time', 'yesterday'], 2, /Malformed time argument yesterday/],
      [
        ['get-offsets', ...down],
        1,
        /^skiff get-offsets: cannot connect to 127\.0\.0\.1:1 \(connection refused\)$/,
      ],
      [
        ['console-consumer', ...bs, '--topic', 'nope', '--timeout-ms', '100'],
        1,
        /^skiff console-consumer: Topic 'nope' does not exist$/,
      ],
      [
        ['console-consumer', ...down, '--topic', 'rt'],
        1,
        /cannot connect to 127\.0\.0\.1:1 \(connection refused\)$/,
      ],
      [
        ['console-producer', ...bs, '--topic', 'nope'],
        1,
        /^skiff console-producer: Topic nope not present in metadata$/,
      ],
      [
        ['console-producer', ...bs, '--topic', 'rt', '--bogus'],
        2,
        /^skiff console-producer: unknown option '--bogus'/,
      ],
      [
        ['console-producer', ...bs, '--topic', 'rt', '--producer-property', 'acks=2'],
        1,
        /Invalid value 2 for configuration acks/,
      ],
      [
        [
          'producer-perf-test',
          '--topic',
          'rt',
          '--num-records',
          '1',
          '--record-size',
          '1',
          '--throughput',
          '-1',
          '--producer-props',
          'bootstrap.servers=127.0.0.1:1',
        ],
        1,
        /^skiff producer-perf-test: cannot connect to 127\.0\.0\.1:1 \(connection refused\)$/,
      ],
      [
        ['producer-perf-test', '--topic', 'rt', '--num-records', '1', '--throughput', '-1'],
        2,
        /--producer-props or --producer\.config/,
      ],
      [
        ['consumer-perf-test', ...bs, '--topic', 'nope', '--messages', '1'],
        1,
        /^skiff consumer-perf-test: Topic 'nope' does not exist$/,
      ],
      [['log-dirs', ...down, '--describe'], 1, /^skiff log-dirs: cannot connect to 127\.0\.0\.1:1/],
      [
        ['configs', ...down, '--describe', '--entity-type', 'topics'],
        1,
        /^skiff configs: cannot connect to 127\.0\.0\.1:1/,
      ],
    ];
    // Every case gets a line on stdin, so the console producer has a record to fail on. In-process
    // runs go one by one (they share this process); three real processes check exit codes and that
    // no stack trace reaches stderr.
    const runs: ToolRun[] = [];
    for (const [args] of cases) runs.push(await skiff(args, 'x\n'));
    const real = [0, 6, 10];
    const spawned = await Promise.all(real.map((i) => runSkiff(cases[i]![0], 'x\n')));
    real.forEach((c, i) => {
      runs.push(spawned[i]!);
      cases.push(cases[c]!);
    });
    cases.forEach(([args, status, line], i) => {
      const r = runs[i]!;
      const what = args.join(' ');
      assert.equal(r.status, status, `${what}: ${r.stderr}`);
      const errLines = r.stderr.split('\n').filter((l) => l !== '');
      // The consumer perf tool prints its header before it learns the topic is missing, as Kafka's does.
      assert.equal(errLines.length, 1, `one stderr line for ${what}: ${r.stderr}`);
      assert.match(errLines[0]!, line, what);
      assert.doesNotMatch(r.stderr, /\n\s+at /, `no stack trace for ${what}`);
    });
  });
});
