/**
 * Snapshot tests: the lines of topics --describe, log-dirs --describe, delete-records,
 * configs --describe, dump-log and replica-verification against Kafka's, field for field. Each
 * KAFKA_* constant is the example of ../shared/design/KAFKA-REFERENCE.md §9 (Kafka's own output);
 * a line's shape is its field names in order with the separators between them, so a renamed,
 * reordered, missing or extra field, or a space for a tab, fails. Values are checked where they
 * are known (offsets, sizes, names). Run against a real `skiff broker` process.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { verifyPartition } from '../../src/cli/tools/replica-verification.js';
import { emptyBatchHeader } from '../../src/protocol/records/batch.js';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';
import { skiff } from './in-process.js';

// KAFKA-REFERENCE.md §9, verbatim.
const KAFKA_TOPIC_HEADER = 'Topic: t\tTopicId: <uuid>\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: k=v';
const KAFKA_TOPIC_PARTITION =
  '\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\tElr: \tLastKnownElr: ';
const KAFKA_LOG_DIRS = [
  'Querying brokers for log directories information',
  'Received log directory information from brokers 1,2,3',
  '{"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"t-0","size":123,"offsetLag":0,"isFuture":false}],"error":null,"logDir":"/d"}]}],"version":1}',
];
const KAFKA_DELETE_RECORDS = [
  'Executing records delete operation',
  'Records delete operation completed:',
  'partition: foo-1\tlow_watermark: 5',
];
const KAFKA_CONFIGS = [
  'Dynamic configs for topic t are:',
  '  name=value sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:name=value}',
];
const KAFKA_DUMP_BATCH =
  'baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 88 magic: 2 compresscodec: none crc: 123 isvalid: true';
const KAFKA_DUMP_RECORD =
  '| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 5 sequence: -1 headerKeys: [] key: k payload: hello';
const KAFKA_VERIFY_STARTED = '2026-10-29 04:50:45,752: verification process is started';
const KAFKA_VERIFY_LAG =
  '2026-10-29 04:50:50,800: max lag is 0 for partition e1.verify.demo-1 at offset 682 among 3 partitions';
const KAFKA_VERIFY_MISMATCH =
  "2026-10-29 04:50:50,800: partition t-0 has unmatched checksum at offset 5; replica 1's checksum 123; replica 2's checksum 456";

/**
 * A line's shape: every `name: value` / `name=value` field reduced to its name, the separators
 * kept. Values (anything not a field name or separator) become `_`.
 */
function fieldShape(line: string): string {
  return line
    .replace(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}/g, '<ts>')
    .replace(/([A-Za-z_]+): [^\t ]*/g, '$1: _')
    .replace(/([A-Za-z_.]+)=[^\t ,}]*/g, '$1=_');
}

/** A JSON document's shape: its keys in order, recursively, values reduced to their type. */
function jsonShape(v: unknown): unknown {
  if (Array.isArray(v)) return v.length === 0 ? [] : [jsonShape(v[0])];
  if (v !== null && typeof v === 'object') return Object.entries(v).map(([k, x]) => [k, jsonShape(x)]);
  return v === null ? 'null-or-string' : typeof v === 'string' ? 'null-or-string' : typeof v;
}

/** Kafka's replica-verification lines with their variable parts as placeholders. */
function verifyShape(line: string): string {
  return line
    .replace(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}: /, '<ts>: ')
    .replace(/partition [^ ]+-\d+/, 'partition <tp>')
    .replace(/-?\d+/g, 'N');
}

describe("tool output matches Kafka's lines field for field", () => {
  let broker: BrokerProcess;
  let bs: string[];
  before(async () => {
    broker = await startBrokerProcess();
    bs = ['--bootstrap-server', broker.bootstrap];
    let r = await skiff([
      'topics',
      ...bs,
      '--create',
      '--topic',
      'snap',
      '--partitions',
      '3',
      '--config',
      'retention.ms=100000',
    ]);
    assert.equal(r.status, 0, r.stderr);
    const lines = Array.from({ length: 30 }, (_, i) => `k${i % 3}:value-${i}`);
    r = await skiff(
      [
        'console-producer',
        ...bs,
        '--topic',
        'snap',
        '--property',
        'parse.key=true',
        '--property',
        'key.separator=:',
      ],
      `${lines.join('\n')}\n`,
    );
    assert.equal(r.status, 0, r.stderr);
  });
  after(async () => {
    await broker?.stop();
  });

  it('topics --describe', async () => {
    const r = await skiff(['topics', ...bs, '--describe', '--topic', 'snap']);
    assert.equal(r.status, 0, r.stderr);
    // Not trimmed: Kafka's partition lines end in "LastKnownElr: ".
    const [header, ...parts] = r.stdout.replace(/\n$/, '').split('\n');
    assert.equal(fieldShape(header!), fieldShape(KAFKA_TOPIC_HEADER));
    assert.match(
      header!,
      /^Topic: snap\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: retention\.ms=100000$/,
    );
    assert.equal(parts.length, 3);
    for (const [i, p] of parts.entries()) {
      assert.equal(fieldShape(p), fieldShape(KAFKA_TOPIC_PARTITION));
      assert.equal(
        p,
        `\tTopic: snap\tPartition: ${i}\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: `,
      );
    }
  });

  it('log-dirs --describe', async () => {
    const r = await skiff(['log-dirs', ...bs, '--describe', '--topic-list', 'snap']);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines.length, KAFKA_LOG_DIRS.length);
    assert.equal(lines[0], KAFKA_LOG_DIRS[0]);
    assert.equal(lines[1], 'Received log directory information from brokers 1');
    assert.deepEqual(jsonShape(JSON.parse(lines[2]!)), jsonShape(JSON.parse(KAFKA_LOG_DIRS[2]!)));
    const doc = JSON.parse(lines[2]!);
    const parts = doc.brokers[0].logDirs[0].partitions as { partition: string; size: number }[];
    assert.deepEqual(parts.map((p) => p.partition).sort(), ['snap-0', 'snap-1', 'snap-2']);
    for (const p of parts) {
      const file = path.join(broker.dir, 'logs', p.partition, '00000000000000000000.log');
      assert.equal(p.size, fs.statSync(file).size);
    }
  });

  it('delete-records', async () => {
    // A partition that holds records (the keys decide which).
    const partition = [0, 1, 2].find(
      (i) => fs.statSync(path.join(broker.dir, 'logs', `snap-${i}`, '00000000000000000000.log')).size > 0,
    )!;
    const file = path.join(broker.dir, 'del.json');
    fs.writeFileSync(
      file,
      JSON.stringify({ partitions: [{ topic: 'snap', partition, offset: 1 }], version: 1 }),
    );
    const r = await skiff(['delete-records', ...bs, '--offset-json-file', file]);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines.length, KAFKA_DELETE_RECORDS.length);
    assert.equal(lines[0], KAFKA_DELETE_RECORDS[0]);
    assert.equal(lines[1], KAFKA_DELETE_RECORDS[1]);
    assert.equal(fieldShape(lines[2]!), fieldShape(KAFKA_DELETE_RECORDS[2]!));
    assert.equal(lines[2], `partition: snap-${partition}\tlow_watermark: 1`);
  });

  it('configs --describe', async () => {
    const r = await skiff([
      'configs',
      ...bs,
      '--describe',
      '--entity-type',
      'topics',
      '--entity-name',
      'snap',
    ]);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines[0], 'Dynamic configs for topic snap are:');
    assert.equal(fieldShape(lines[0]!), fieldShape(KAFKA_CONFIGS[0]!.replace(' t ', ' snap ')));
    assert.equal(lines.length, 2);
    // name=value sensitive=... synonyms={SOURCE:name=value, ...}: Kafka lists the synonyms from
    // log.retention.ms on, so log.retention.hours' default is not one (only log.retention.ms would start the list).
    const configShape = (l: string) =>
      l
        .replace(/^ {2}[a-z.]+=\S*/, '  name=value')
        .replace(/\{.*\}$/, (syn) => syn.replace(/[A-Z_]+:[a-z.]+=[^,}]*/g, 'SOURCE:name=value'))
        .replace(/(, SOURCE:name=value)+\}$/, '}');
    assert.equal(configShape(lines[1]!), configShape(KAFKA_CONFIGS[1]!));
    assert.equal(
      lines[1],
      '  retention.ms=100000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=100000}',
    );
  });

  it('dump-log (with --print-data-log)', async () => {
    const file = path.join(broker.dir, 'logs', 'snap-0', '00000000000000000000.log');
    const r = await skiff(['dump-log', '--files', file, '--print-data-log']);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines[0], `Dumping ${file}`);
    assert.equal(lines[1], 'Log starting offset: 0');
    const batches = lines.filter((l) => l.startsWith('baseOffset: '));
    const records = lines.filter((l) => l.startsWith('| offset: '));
    assert.ok(batches.length > 0 && records.length > 0, r.stdout);
    assert.equal(batches.length + records.length + 2, lines.length, 'no other lines');
    for (const b of batches) assert.equal(fieldShape(b), fieldShape(KAFKA_DUMP_BATCH));
    for (const l of records) assert.equal(fieldShape(l), fieldShape(KAFKA_DUMP_RECORD));
    assert.match(batches[0]!, / position: 0 /);
    assert.match(batches[0]!, / isvalid: true$/);
    assert.match(
      records[0]!,
      /^\| offset: 0 CreateTime: \d+ keySize: 2 valueSize: \d+ sequence: 0 headerKeys: \[\] key: k\d payload: value-\d+$/,
    );
  });

  it('replica-verification (its run lines, and a mismatch line from a real comparison)', async () => {
    const r = await skiff([
      'replica-verification',
      '--broker-list',
      broker.bootstrap,
      '--topics-include',
      'snap',
    ]);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(verifyShape(lines[0]!), verifyShape(KAFKA_VERIFY_STARTED));
    const lag = lines.filter((l) => l.includes(': max lag is '));
    assert.ok(lag.length >= 1, r.stdout);
    for (const l of lag) assert.equal(verifyShape(l), verifyShape(KAFKA_VERIFY_LAG));
    assert.match(lag.at(-1)!, / max lag is 0 for partition snap-\d at offset \d+ among 3 partitions$/);

    // The mismatch line, from verifyPartition on two replicas whose second batch differs.
    const batch = (base: bigint, last: bigint, checksum: number) => ({
      baseOffset: base,
      lastOffset: last,
      nextOffset: last + 1n,
      checksum,
      header: emptyBatchHeader(),
      bytes: Buffer.alloc(0),
    });
    const p = {
      name: 't-0',
      tp: { topic: 't', partition: 0 },
      replicas: [2, 1],
      fetchOffset: 0n,
      target: 10n,
      divergence: null,
      stopped: false,
      errorsSeen: new Set<string>(),
      compacted: null,
    };
    const out = verifyPartition(
      p,
      new Map([
        [
          1,
          {
            errorCode: 0,
            highWatermark: 10n,
            recordBytes: 0,
            batches: [batch(0n, 2n, 7), batch(3n, 5n, 123), batch(6n, 9n, 9)],
          },
        ],
        [
          2,
          {
            errorCode: 0,
            highWatermark: 10n,
            recordBytes: 0,
            batches: [batch(0n, 2n, 7), batch(3n, 5n, 456), batch(6n, 9n, 9)],
          },
        ],
      ]),
      () => '2026-10-29 04:50:50,800',
    );
    assert.deepEqual(out.lines, [KAFKA_VERIFY_MISMATCH]);
    assert.equal(p.fetchOffset, 10n);
    assert.deepEqual(p.divergence, {
      offset: 3n,
      lastOffset: 5n,
      replicaA: 1,
      checksumA: 123,
      replicaB: 2,
      checksumB: 456,
      offsets: false,
    });
  });
});
