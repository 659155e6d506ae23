/**
 * What the tools show of log compaction, against a real `skiff broker` process: `skiff configs`
 * describes the log.cleaner.* broker configs and a compacted topic's cleaner configs with Kafka's
 * sources and synonyms, and refuses a log.cleaner.threads change Kafka's LogCleaner refuses;
 * `skiff log-dirs` sizes shrink when the cleaner has run; `skiff dump-log` lists the cleaned
 * segments (offsets kept with their gaps, the latest record per key, tombstones with their delete
 * horizon) and the cleaner-offset-checkpoint.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type BrokerProcess,
  runProcess,
  startBrokerProcess,
  waitForOutput,
} from '../support/broker-process.js';
import { skiff } from './in-process.js';

const KEYS = 50;
const RECORDS = 2000;
/** Keys whose last record is a tombstone. */
const DELETED = 5;

describe('compaction through the tools', () => {
  let b: BrokerProcess;
  let bs: string[];
  before(async () => {
    b = await startBrokerProcess(['log.cleaner.backoff.ms=100', 'log.cleaner.threads=1']);
    bs = ['--bootstrap-server', b.bootstrap];
  });
  /** A tool's command line without the bootstrap server, as words: `topics --create ...`. */
  const run = (line: string) => {
    const [tool, ...args] = line.split(' ');
    return skiff([tool!, ...bs, ...args]);
  };
  after(async () => {
    await b?.stop();
  });

  it('configs: the broker cleaner configs and a compacted topic, with sources and synonyms', async () => {
    let r = await run('configs --entity-type brokers --entity-name 1 --describe --all');
    assert.equal(r.status, 0, r.stderr);
    const cleaner = r.stdout.split('\n').filter((l) => l.startsWith('  log.cleaner.'));
    assert.deepEqual(
      cleaner.map((l) => l.replace(/ sensitive=false/, '')),
      [
        '  log.cleaner.backoff.ms=100 synonyms={STATIC_BROKER_CONFIG:log.cleaner.backoff.ms=100, DEFAULT_CONFIG:log.cleaner.backoff.ms=15000}',
        '  log.cleaner.dedupe.buffer.size=134217728 synonyms={DEFAULT_CONFIG:log.cleaner.dedupe.buffer.size=134217728}',
        '  log.cleaner.delete.retention.ms=86400000 synonyms={DEFAULT_CONFIG:log.cleaner.delete.retention.ms=86400000}',
        '  log.cleaner.enable=true synonyms={DEFAULT_CONFIG:log.cleaner.enable=true}',
        '  log.cleaner.io.buffer.load.factor=0.9 synonyms={DEFAULT_CONFIG:log.cleaner.io.buffer.load.factor=0.9}',
        '  log.cleaner.io.buffer.size=524288 synonyms={DEFAULT_CONFIG:log.cleaner.io.buffer.size=524288}',
        '  log.cleaner.io.max.bytes.per.second=1.7976931348623157E308 synonyms={DEFAULT_CONFIG:log.cleaner.io.max.bytes.per.second=1.7976931348623157E308}',
        '  log.cleaner.max.compaction.lag.ms=9223372036854775807 synonyms={DEFAULT_CONFIG:log.cleaner.max.compaction.lag.ms=9223372036854775807}',
        '  log.cleaner.min.cleanable.ratio=0.5 synonyms={DEFAULT_CONFIG:log.cleaner.min.cleanable.ratio=0.5}',
        '  log.cleaner.min.compaction.lag.ms=0 synonyms={DEFAULT_CONFIG:log.cleaner.min.compaction.lag.ms=0}',
        '  log.cleaner.threads=1 synonyms={STATIC_BROKER_CONFIG:log.cleaner.threads=1, DEFAULT_CONFIG:log.cleaner.threads=1}',
      ],
    );

    // Kafka's LogCleaner.validateReconfiguration: at most double, at least half, at least 1.
    const alterBroker = (config: string) =>
      run(`configs --entity-type brokers --entity-name 1 --alter --add-config ${config}`);
    r = await alterBroker('log.cleaner.threads=3');
    assert.equal(r.status, 1);
    assert.equal(
      r.stderr,
      'skiff configs: Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads cannot be increased to more than double the current value 1 for configuration Invalid dynamic configuration\n',
    );
    r = await alterBroker('log.cleaner.threads=0');
    assert.match(
      r.stderr,
      /Log cleaner threads should be at least 1 for configuration Invalid dynamic configuration\n$/,
    );
    r = await alterBroker('log.cleaner.enable=false');
    assert.equal(
      r.stderr,
      'skiff configs: Cannot update these configs dynamically: Set(log.cleaner.enable)\n',
    );
    r = await alterBroker('log.cleaner.threads=2');
    assert.equal(r.status, 0, r.stderr);
    r = await run('configs --entity-type brokers --entity-name 1 --describe');
    assert.equal(
      r.stdout,
      'Dynamic configs for broker 1 are:\n  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, STATIC_BROKER_CONFIG:log.cleaner.threads=1, DEFAULT_CONFIG:log.cleaner.threads=1}\n',
    );
    await waitForOutput(b, /log cleaner started with 2 threads/);
    r = await run(
      'configs --entity-type brokers --entity-default --alter --add-config log.cleaner.min.cleanable.ratio=0.2',
    );
    assert.equal(r.status, 0, r.stderr);

    r = await run(
      'topics --create --topic kvc --config cleanup.policy=compact --config delete.retention.ms=3600000',
    );
    assert.equal(r.status, 0, r.stderr);
    r = await run('configs --entity-type topics --entity-name kvc --describe --all');
    const wanted =
      /^ {2}(cleanup\.policy|delete\.retention\.ms|m..\.compaction\.lag\.ms|min\.cleanable\.dirty\.ratio)=/;
    assert.deepEqual(
      r.stdout.split('\n').filter((l) => wanted.test(l)),
      [
        '  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, DEFAULT_CONFIG:log.cleanup.policy=delete}',
        '  delete.retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:delete.retention.ms=3600000, DEFAULT_CONFIG:log.cleaner.delete.retention.ms=86400000}',
        '  max.compaction.lag.ms=9223372036854775807 sensitive=false synonyms={DEFAULT_CONFIG:log.cleaner.max.compaction.lag.ms=9223372036854775807}',
        '  min.cleanable.dirty.ratio=0.2 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.min.cleanable.ratio=0.2, DEFAULT_CONFIG:log.cleaner.min.cleanable.ratio=0.5}',
        '  min.compaction.lag.ms=0 sensitive=false synonyms={DEFAULT_CONFIG:log.cleaner.min.compaction.lag.ms=0}',
      ],
    );
  });

  it('log-dirs sizes shrink after a cleaning; dump-log shows the cleaned segments and the checkpoint', async () => {
    // min.compaction.lag.ms holds the cleaner off until the sizes before it are read.
    let r = await run(
      'topics --create --topic kv --config cleanup.policy=compact --config segment.bytes=4096 --config delete.retention.ms=3600000 --config min.compaction.lag.ms=3600000',
    );
    assert.equal(r.status, 0, r.stderr);
    // key-i → value-<offset>; a new value for every even key (the odd keys' latest records are
    // then apart: gaps inside a cleaned segment); tombstones for the first DELETED keys; filler,
    // so the tombstones are below the active segment.
    const lines = Array.from({ length: RECORDS }, (_, i) => `key-${i % KEYS}:value-${i}`);
    for (let k = 0; k < KEYS; k += 2) lines.push(`key-${k}:value-${lines.length}`);
    for (let k = 0; k < DELETED; k++) lines.push(`key-${k}:`);
    for (let i = 0; i < 300; i++) lines.push(`filler-${i}:value-${lines.length}`);
    const produced = await runProcess(
      'kcat',
      ['-P', '-b', b.bootstrap, '-t', 'kv', '-K:', '-Z', '-z', 'none', '-X', 'batch.num.messages=50'],
      `${lines.join('\n')}\n`,
    );
    assert.equal(produced.status, 0, produced.stderr);

    const sizeNow = async (): Promise<number> => {
      const d = await run('log-dirs --describe --topic-list kv');
      assert.equal(d.status, 0, d.stderr);
      const doc = JSON.parse(d.stdout.trimEnd().split('\n')[2]!) as {
        brokers: { logDirs: { partitions: { partition: string; size: number }[] }[] }[];
      };
      return doc.brokers[0]!.logDirs.flatMap((l) => l.partitions).find((p) => p.partition === 'kv-0')!.size;
    };
    const partitionDir = path.join(b.dir, 'logs', 'kv-0');
    const segmentBytes = (): number =>
      fs
        .readdirSync(partitionDir)
        .filter((f) => f.endsWith('.log'))
        .reduce((sum, f) => sum + fs.statSync(path.join(partitionDir, f)).size, 0);
    const before = await sizeNow();
    assert.equal(before, segmentBytes());

    r = await run(
      'configs --entity-type topics --entity-name kv --alter --delete-config min.compaction.lag.ms',
    );
    assert.equal(r.status, 0, r.stderr);
    await waitForOutput(b, /cleaned log kv-0 /);
    const afterClean = await sizeNow();
    assert.equal(afterClean, segmentBytes());
    assert.ok(afterClean < before / 3, `log-dirs size ${before} → ${afterClean}`);

    const segments = fs
      .readdirSync(partitionDir)
      .filter((f) => f.endsWith('.log'))
      .sort()
      .map((f) => path.join(partitionDir, f));
    const active = segments.pop()!;
    const checkpoint = path.join(b.dir, 'logs', 'cleaner-offset-checkpoint');
    r = await skiff([
      'dump-log',
      '--files',
      [...segments, checkpoint].join(','),
      '--deep-iteration',
      '--print-data-log',
    ]);
    assert.equal(r.status, 0, r.stderr);
    const out = r.stdout.split('\n');
    assert.equal(out[0], `Dumping ${segments[0]}`);
    assert.equal(out[1], 'Log starting offset: 0');

    // Every record kept is the one written at its offset, the latest of its key, once.
    const latest = new Map<string, number>();
    for (const [offset, l] of lines.entries()) latest.set(l.slice(0, l.indexOf(':')), offset);
    const activeBase = Number(path.basename(active, '.log'));
    const seen = new Set<string>();
    let tombstones = 0;
    let horizonBatches = 0;
    let batchHorizon = false;
    for (const l of out) {
      if (l.startsWith('baseOffset: ')) {
        batchHorizon = / deleteHorizonMs: OptionalLong\[\d+\] /.test(l);
        if (batchHorizon) horizonBatches++;
        continue;
      }
      const m =
        /^\| offset: (\d+) CreateTime: \d+ keySize: \d+ valueSize: (-?\d+) .* key: (\S+)( payload: (\S+))?$/.exec(
          l,
        );
      if (m === null) continue;
      const [offset, valueSize, key] = [Number(m[1]), Number(m[2]), m[3]!];
      assert.ok(offset < activeBase);
      assert.ok(!seen.has(key), `${key} twice below the active segment`);
      seen.add(key);
      assert.equal(latest.get(key), offset, `${key} at ${offset} is not its latest record`);
      if (valueSize === -1) {
        tombstones++;
        assert.ok(batchHorizon, `tombstone of ${key} in a batch without a delete horizon`);
      } else assert.equal(m[5], lines[offset]!.slice(lines[offset]!.indexOf(':') + 1));
    }
    assert.equal(tombstones, DELETED, 'tombstones stay until delete.retention.ms after their first cleaning');
    assert.ok(horizonBatches >= 1);
    assert.ok(seen.size > KEYS, 'the filler keys below the active segment are kept too');
    // The offsets the cleaning removed, on standard error as Kafka's DumpLogSegments reports them:
    // per file, the latest pair first.
    const err = r.stderr.trimEnd().split('\n');
    assert.match(err[0]!, /^Non-consecutive offsets in \/\S+\.log$/);
    const pairs = err.slice(1).map((l) => /^ {2}(\d+) is followed by (\d+)$/.exec(l)!.slice(1).map(Number));
    assert.ok(pairs.length >= 10, r.stderr);
    for (const [a, b] of pairs) assert.ok(b! > a! + 1);
    for (let i = 1; i < pairs.length; i++) assert.ok(pairs[i]![0]! < pairs[i - 1]![0]!, 'latest first');

    const at = out.indexOf(`Dumping ${checkpoint}`);
    assert.ok(at > 0, r.stdout);
    assert.equal(out[at + 1], 'version: 0 entries: 1');
    const cp = /^topic: kv partition: 0 offset: (\d+)$/.exec(out[at + 2]!);
    assert.ok(cp, out[at + 2]);
    assert.ok(Number(cp[1]) > 0 && Number(cp[1]) <= activeBase, `cleaner checkpoint ${cp[1]}`);
  });
});
