/**
 * The tools' parsers and formatters without a broker: Kafka's describe lines (leaderless
 * partitions, the report filters), its input syntaxes (--replica-assignment, --config,
 * --add-config, the delete-records JSON, --time, console producer lines), the console consumer's
 * record format and the perf tools' lines.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddConfig } from '../../src/cli/tools/configs.js';
import { formatRecord, formatterConfig } from '../../src/cli/tools/console-consumer.js';
import { lineReaderConfig, parseLine } from '../../src/cli/tools/console-producer.js';
import { consumerPerfSummary } from '../../src/cli/tools/consumer-perf-test.js';
import { parseOffsetJson } from '../../src/cli/tools/delete-records.js';
import { parseTime } from '../../src/cli/tools/get-offsets.js';
import { fixed, formatDate } from '../../src/cli/tools/perf-format.js';
import { PerfStats } from '../../src/cli/tools/producer-perf-test.js';
import {
  type DescribeFilters,
  formatDescribe,
  parseReplicaAssignment,
  parseTopicConfigs,
  type TopicDescription,
} from '../../src/cli/tools/topics.js';
import { murmur2 } from '../../src/client/partitioner.js';
import { parseBootstrap } from '../../src/client/runtime.js';

const part = (partition: number, leader: number, replicas: number[], isr: number[]) => ({
  partition,
  errorCode: 0,
  leader,
  leaderEpoch: 0,
  replicas,
  isr,
  offlineReplicas: [],
});

const topic: TopicDescription = {
  topic: {
    name: 'd1.rebuild',
    topicId: 'Z1rJ2Y4vQbWw0bq9d3ZkQw',
    errorCode: 0,
    isInternal: false,
    partitions: [
      part(0, 2, [2, 3, 1], [2, 1]),
      part(1, -1, [1, 2, 3], [1]),
      part(2, 3, [3, 1, 2], [3, 1, 2]),
    ],
  },
  configs: [{ name: 'min.insync.replicas', value: '2' }],
  minIsr: 2,
};

const noFilter: DescribeFilters = {
  underReplicated: false,
  unavailable: false,
  underMinIsr: false,
  atMinIsr: false,
  withOverrides: false,
  liveBrokers: new Set([1, 2, 3]),
};

describe('topics describe lines', () => {
  it("prints Kafka's header and partition lines, Leader: none without a leader", () => {
    assert.deepEqual(formatDescribe([topic], noFilter), [
      'Topic: d1.rebuild\tTopicId: Z1rJ2Y4vQbWw0bq9d3ZkQw\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=2',
      '\tTopic: d1.rebuild\tPartition: 0\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,1\tElr: \tLastKnownElr: ',
      '\tTopic: d1.rebuild\tPartition: 1\tLeader: none\tReplicas: 1,2,3\tIsr: 1\tElr: \tLastKnownElr: ',
      '\tTopic: d1.rebuild\tPartition: 2\tLeader: 3\tReplicas: 3,1,2\tIsr: 3,1,2\tElr: \tLastKnownElr: ',
    ]);
  });

  it('the report flags print matching partitions only, without the header', () => {
    const partitionsOf = (f: Partial<DescribeFilters>) =>
      formatDescribe([topic], { ...noFilter, ...f }).map((l) => Number(/Partition: (\d+)/.exec(l)![1]));
    assert.deepEqual(partitionsOf({ underReplicated: true }), [0, 1]);
    assert.deepEqual(partitionsOf({ unavailable: true }), [1]);
    assert.deepEqual(partitionsOf({ underMinIsr: true }), [1]);
    assert.deepEqual(partitionsOf({ atMinIsr: true }), [0]);
    // A leader on a broker that is not live counts as unavailable.
    assert.deepEqual(partitionsOf({ unavailable: true, liveBrokers: new Set([1, 2]) }), [1, 2]);
    assert.deepEqual(formatDescribe([topic], { ...noFilter, withOverrides: true }).length, 1);
  });
});

describe('tool input syntaxes', () => {
  it('parses --replica-assignment and rejects duplicates and uneven replication', () => {
    assert.deepEqual(parseReplicaAssignment('1:2,2:3, 3:1'), [
      [1, 2],
      [2, 3],
      [3, 1],
    ]);
    assert.throws(() => parseReplicaAssignment('1:1'), /duplicate entries: 1/);
    assert.throws(() => parseReplicaAssignment('1:2,3'), /Partition 1 has different replication factor/);
  });

  it('parses --config and --add-config as Kafka does', () => {
    assert.deepEqual(
      parseTopicConfigs(['retention.ms = 1000', 'cleanup.policy=compact']),
      new Map([
        ['retention.ms', '1000'],
        ['cleanup.policy', 'compact'],
      ]),
    );
    assert.throws(() => parseTopicConfigs(['a=b=c']), /Invalid topic config/);
    assert.deepEqual(
      parseAddConfig(
        'leader.replication.throttled.replicas=*,follower.replication.throttled.replicas=[0:1,0:2],x=1',
      ),
      new Map([
        ['leader.replication.throttled.replicas', '*'],
        ['follower.replication.throttled.replicas', '0:1,0:2'],
        ['x', '1'],
      ]),
    );
  });

  it('parses the delete-records JSON, keeping int64 offsets exact', () => {
    assert.deepEqual(
      parseOffsetJson(
        '{"version":1,"partitions":[{"topic":"d1.rebuild","partition":0,"offset":350000},{"topic":"t","partition":2,"offset":9007199254740993}]}',
      ),
      [
        { tp: { topic: 'd1.rebuild', partition: 0 }, offset: 350000n },
        { tp: { topic: 't', partition: 2 }, offset: 9007199254740993n },
      ],
    );
    assert.throws(
      () => parseOffsetJson('{"version":2,"partitions":[]}'),
      /Not supported version field value 2/,
    );
    assert.throws(() => parseOffsetJson('{"partitions":[{"topic":"t"}]}'), /partitions\[0\] needs/);
    assert.throws(() => parseOffsetJson('nope'), /not valid JSON/);
  });

  it('parses --time', () => {
    assert.equal(parseTime('latest'), -1n);
    assert.equal(parseTime('-2'), -2n);
    assert.equal(parseTime('max-timestamp'), -3n);
    assert.equal(parseTime('1700000000000'), 1700000000000n);
    assert.throws(() => parseTime('-7'), /Malformed time argument -7/);
  });

  it('reads console producer lines with keys, headers and a null marker', () => {
    const c = lineReaderConfig(
      new Map([
        ['parse.key', 'true'],
        ['key.separator', ':'],
        ['parse.headers', 'true'],
        ['null.marker', '<null>'],
      ]),
    );
    const r = parseLine('h1:v1,h2\tk:v:w', 1, c);
    assert.deepEqual(
      [r.key?.toString(), r.value?.toString(), r.headers?.map((h) => [h.key, h.value?.toString() ?? null])],
      [
        'k',
        'v:w',
        [
          ['h1', 'v1'],
          ['h2', null],
        ],
      ],
    );
    assert.equal(parseLine('\t<null>:x', 2, c).key, null);
    assert.throws(() => parseLine('\tnokey', 3, c), /No key separator found on line number 3: '\tnokey'/);
  });

  it('parses bootstrap lists', () => {
    assert.deepEqual(parseBootstrap('a:9092, [::1]:9093'), [
      { host: 'a', port: 9092 },
      { host: '::1', port: 9093 },
    ]);
    assert.throws(() => parseBootstrap('localhost'), /expected host:port/);
  });

  it("hashes keys with Kafka's murmur2", () => {
    assert.equal(murmur2(Buffer.from('21')), -973932308);
    assert.equal(murmur2(Buffer.from('a-little-bit-longer-string')), -1486304829);
    assert.equal(murmur2(Buffer.from('abc')), 479470107);
  });
});

describe('output formats', () => {
  it("formats consumed records as Kafka's DefaultMessageFormatter", () => {
    const rec = {
      topic: 't',
      partition: 1,
      offset: 7n,
      timestamp: 1700000000000n,
      timestampType: 'CreateTime' as const,
      key: null,
      value: Buffer.from('v'),
      headers: [{ key: 'h', value: Buffer.from('x') }],
    };
    const all = formatterConfig(
      new Map(
        ['print.timestamp', 'print.partition', 'print.offset', 'print.headers', 'print.key'].map((k) => [
          k,
          'true',
        ]),
      ),
    );
    assert.equal(formatRecord(rec, all), 'CreateTime:1700000000000\tPartition:1\tOffset:7\th:x\tnull\tv\n');
    assert.equal(formatRecord(rec, formatterConfig(new Map())), 'v\n');
  });

  it("prints producer-perf-test's window and summary lines", () => {
    const lines: string[] = [];
    const stats = new PerfStats(4, 0, (l) => lines.push(l), 1000);
    stats.record(10, 100, 100);
    stats.record(20, 100, 200);
    stats.record(30, 100, 1000);
    stats.record(40, 100, 1500);
    stats.printTotal(2000);
    assert.deepEqual(lines, [
      '3 records sent, 3.0 records/sec (0.00 MB/sec), 20.0 ms avg latency, 30.0 ms max latency.',
      '4 records sent, 2.0 records/sec (0.00 MB/sec), 25.00 ms avg latency, 40.00 ms max latency, 30 ms 50th, 40 ms 95th, 40 ms 99th, 40 ms 99.9th.',
    ]);
  });

  it('prints the steady-state window and summary lines of --warmup-records', () => {
    const lines: string[] = [];
    const whole = new PerfStats(4, 0, (l) => lines.push(l), 1000);
    whole.record(50, 100, 100);
    const steady = new PerfStats(3, 200, (l) => lines.push(l), 1000, true);
    whole.suppressPrinting();
    for (const [lat, now] of [
      [10, 300],
      [20, 1200],
      [30, 1900],
    ] as const) {
      whole.record(lat, 100, now);
      steady.record(lat, 100, now);
    }
    whole.printTotal(2000);
    steady.printTotal(2000);
    assert.deepEqual(lines, [
      'In steady state.',
      '2 records sent, 2.0 records/sec (0.00 MB/sec), 15.0 ms avg latency, 20.0 ms max latency.',
      '4 records sent, 2.0 records/sec (0.00 MB/sec), 27.50 ms avg latency, 50.00 ms max latency, 30 ms 50th, 50 ms 95th, 50 ms 99th, 50 ms 99.9th.',
      '3 steady state records sent, 1.7 records/sec (0.00 MB/sec), 20.00 ms avg latency, 30.00 ms max latency, 20 ms 50th, 30 ms 95th, 30 ms 99th, 30 ms 99.9th.',
    ]);
  });

  it("prints consumer-perf-test's CSV line and Java's NaN", () => {
    const start = new Date(2026, 9, 29, 12, 49, 3, 7).getTime();
    assert.equal(
      consumerPerfSummary(start, start + 2000, 2 * 1024 * 1024, 1000, 500, 'yyyy-MM-dd HH:mm:ss:SSS'),
      '2026-10-29 12:49:03:007, 2026-10-29 12:49:05:007, 2.0000, 1.0000, 1000, 500.0000, 500, 1500, 1.3333, 666.6667',
    );
    assert.equal(fixed(0 / 0, 2), 'NaN');
    assert.equal(formatDate(start, "yy/MM/dd 'at' HH"), '26/10/29 at 12');
  });
});
