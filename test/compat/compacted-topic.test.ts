/**
 * A compacted topic with real clients against `skiff broker` as a child process (issue 19):
 *
 * - refusal: KafkaJS, kcat and python3-confluent-kafka (librdkafka) each produce a record without
 *   a key; each gets INVALID_RECORD and nothing of its batch is appended (the high watermark
 *   stays); their keyed records and tombstones are accepted;
 * - end to end: KafkaJS, python3-confluent-kafka and kcat produce keyed records and tombstones
 *   (null values) into a compacted topic with 4 KiB segments; the cleaner runs on its own
 *   (log.cleaner.backoff.ms 100); then a consumer of each client reading from the beginning sees
 *   at most one record per key outside the active segment (read from the partition dir), always
 *   the key's latest, every record at the offset it was acknowledged at (the gaps kept); once
 *   delete.retention.ms has passed and the log is cleaned again, the tombstones are gone too, and
 *   with them every record of their keys.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Kafka } from 'kafkajs';
import type { BrokerProcess } from '../support/broker-process.js';
import { cleanedUpToActive, type SegmentView, stableSegments } from '../support/compacted-log.js';
import { highWatermarkOf, kafkaJsWithTopics, runPython, startCompatBroker } from './clients.js';

const REFUSING = 'compacted-js';
const TOPIC = 'compacted-e2e';
/**
 * Long enough that the cleanings while the clients produce (every 100 ms) keep the tombstones
 * they first see until the first reads are done, even on a slow machine.
 */
const DELETE_RETENTION_MS = 5000;

/** What was produced at an offset, as its producer was told. */
interface Written {
  readonly key: string;
  readonly value: string | null;
}

/** A record as a consumer read it. */
interface Read {
  readonly offset: bigint;
  readonly key: string;
  readonly value: string | null;
}

const PY_PRODUCE = `
import json, sys
from confluent_kafka import Producer
bs, topic, records = sys.argv[1], {TOPIC}, json.loads({RECORDS})
p = Producer({'bootstrap.servers': bs, 'acks': 'all', 'linger.ms': 5})
out = []
def done(err, m):
    out.append({'error': err.name() if err else None, 'offset': m.offset(),
                'key': None if m.key() is None else m.key().decode(),
                'value': None if m.value() is None else m.value().decode()})
for key, value in records:
    p.produce(topic, key=None if key is None else key.encode(),
              value=None if value is None else value.encode(), on_delivery=done)
p.flush(20)
print(json.dumps(out))
`;

const PY_CONSUME = `
import json, sys
from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
bs, topic = sys.argv[1], {TOPIC}
c = Consumer({'bootstrap.servers': bs, 'group.id': 'py-compacted', 'enable.auto.commit': False})
low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
out = []
last = -1
while last < high - 1:
    m = c.poll(10)
    if m is None:
        raise Exception('no record within 10 s after offset %d (high watermark %d)' % (last, high))
    if m.error():
        raise Exception(str(m.error()))
    last = m.offset()
    out.append({'offset': m.offset(), 'key': m.key().decode(),
                'value': None if m.value() is None else m.value().decode()})
c.close()
print(json.dumps(out))
`;

interface PyDelivery {
  error: string | null;
  offset: number;
  key: string | null;
  value: string | null;
}

function script(template: string, topic: string, records: unknown = []): string {
  return template
    .replace('{TOPIC}', JSON.stringify(topic))
    .replace('{RECORDS}', JSON.stringify(JSON.stringify(records)));
}

describe('a compacted topic with KafkaJS, kcat and python3-confluent-kafka', () => {
  let broker: BrokerProcess;
  let kafka: Kafka;
  before(async () => {
    broker = await startCompatBroker(['log.cleaner.backoff.ms=100']);
    kafka = await kafkaJsWithTopics(broker, 'skiff-compacted', [
      {
        topic: REFUSING,
        numPartitions: 1,
        configEntries: [{ name: 'cleanup.policy', value: 'compact' }],
      },
      {
        topic: TOPIC,
        numPartitions: 1,
        configEntries: [
          { name: 'cleanup.policy', value: 'compact' },
          { name: 'segment.bytes', value: '4096' },
          { name: 'min.cleanable.dirty.ratio', value: '0.01' },
          { name: 'delete.retention.ms', value: String(DELETE_RETENTION_MS) },
        ],
      },
    ]);
  });
  after(async () => {
    await broker?.stop();
  });

  const highWatermark = (topic: string): Promise<bigint> => highWatermarkOf(kafka, topic);

  describe('a record without a key is refused', () => {
    it('KafkaJS: keyed records and a tombstone are accepted; a keyless record is INVALID_RECORD', async () => {
      const producer = kafka.producer({ retry: { retries: 0 } });
      await producer.connect();
      try {
        await producer.send({
          topic: REFUSING,
          messages: [
            { key: 'a', value: 'a1' },
            { key: 'b', value: 'b1' },
            { key: 'a', value: null },
          ],
        });
        await assert.rejects(
          producer.send({ topic: REFUSING, messages: [{ key: 'c', value: 'c1' }, { value: 'no key' }] }),
          (e: Error & { type?: string; retriable?: boolean }) => {
            assert.equal(e.type, 'INVALID_RECORD', e.message);
            return true;
          },
        );
      } finally {
        await producer.disconnect();
      }
      assert.equal(await highWatermark(REFUSING), 3n);
    });

    it('kcat reads the keys, values and the tombstone; its keyless produce fails and appends nothing', () => {
      const read = spawnSync(
        'kcat',
        ['-b', broker.bootstrap, '-C', '-t', REFUSING, '-o', 'beginning', '-e', '-Z', '-f', '%o %k=%s\\n'],
        { encoding: 'utf8', timeout: 30_000 },
      );
      assert.equal(read.status, 0, read.stderr);
      assert.deepEqual(read.stdout.trim().split('\n'), ['0 a=a1', '1 b=b1', '2 a=NULL']);
      const write = spawnSync('kcat', ['-b', broker.bootstrap, '-P', '-t', REFUSING], {
        input: 'keyless\n',
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.match(
        `${write.stdout}${write.stderr}`,
        /Delivery failed for message: Broker: Broker failed to validate record/,
      );
    });

    it('python3-confluent-kafka: its keyed record and tombstone are accepted, its keyless one is INVALID_RECORD', async () => {
      const keyed = await runPython<PyDelivery[]>(
        script(PY_PRODUCE, REFUSING, [
          ['d', 'd1'],
          ['d', null],
        ]),
        broker.bootstrap,
        'confluent_kafka',
        'python3-confluent-kafka',
      );
      assert.deepEqual(
        keyed.map((d) => [d.error, d.offset]),
        [
          [null, 3],
          [null, 4],
        ],
      );
      const keyless = await runPython<PyDelivery[]>(
        script(PY_PRODUCE, REFUSING, [[null, 'no key']]),
        broker.bootstrap,
        'confluent_kafka',
        'python3-confluent-kafka',
      );
      assert.deepEqual(
        keyless.map((d) => d.error),
        ['INVALID_RECORD'],
      );
    });

    it('after the refused produces the log still ends where the accepted records left it', async () => {
      assert.equal(await highWatermark(REFUSING), 5n);
    });
  });

  describe('keyed records and tombstones, cleaned, read back from the beginning', () => {
    /** Every acknowledged record by offset. */
    const written = new Map<bigint, Written>();
    const tombstoned = new Set<string>();
    let horizonsBy = 0;
    const producer = () => kafka.producer({ allowAutoTopicCreation: false });
    const partitionDir = () => path.join(broker.dir, 'logs', `${TOPIC}-0`);

    const sendJs = async (messages: { key: string; value: string | null }[]): Promise<void> => {
      const p = producer();
      await p.connect();
      try {
        const [meta] = await p.send({ topic: TOPIC, acks: -1, messages });
        const base = BigInt(meta!.baseOffset!);
        for (const [i, m] of messages.entries()) written.set(base + BigInt(i), m);
      } finally {
        await p.disconnect();
      }
    };

    /** Two segments' worth of one key, so that everything before it leaves the active segment. */
    const filler = async (): Promise<void> => {
      for (let i = 0; i < 4; i++)
        await sendJs(
          Array.from({ length: 25 }, (_, j) => ({ key: 'filler', value: `f${i}-${j}`.padEnd(80, '.') })),
        );
    };

    const readKcat = (): Read[] => {
      const r = spawnSync(
        'kcat',
        [
          '-b',
          broker.bootstrap,
          '-C',
          '-t',
          TOPIC,
          '-o',
          'beginning',
          '-e',
          '-Z',
          '-f',
          '%o\\t%k\\t%S\\t%s\\n',
        ],
        { encoding: 'utf8', timeout: 30_000, maxBuffer: 16 << 20 },
      );
      assert.equal(r.status, 0, r.stderr);
      return r.stdout
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => {
          const [offset, key, size, ...value] = l.split('\t');
          // %S is the value's length, -1 for a null value (-Z also prints NULL for it).
          return { offset: BigInt(offset!), key: key!, value: size === '-1' ? null : value.join('\t') };
        });
    };

    const readKafkaJs = async (): Promise<Read[]> => {
      const end = await highWatermark(TOPIC);
      const consumer = kafka.consumer({ groupId: `js-compacted-${Date.now()}`, maxWaitTimeInMs: 100 });
      await consumer.connect();
      const out: Read[] = [];
      try {
        await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(
            () => reject(new Error(`KafkaJS read ${out.length} records, not to ${end}`)),
            30_000,
          );
          consumer
            .run({
              eachMessage: async ({ message }) => {
                const offset = BigInt(message.offset);
                out.push({
                  offset,
                  key: message.key!.toString(),
                  value: message.value === null ? null : message.value.toString(),
                });
                if (offset + 1n >= end) {
                  clearTimeout(timer);
                  resolve();
                }
              },
            })
            .catch(reject);
        });
      } finally {
        await consumer.disconnect();
      }
      return out;
    };

    const readPython = async (): Promise<Read[]> => {
      const rows = await runPython<{ offset: number; key: string; value: string | null }[]>(
        script(PY_CONSUME, TOPIC),
        broker.bootstrap,
        'confluent_kafka',
        'python3-confluent-kafka',
      );
      return rows.map((r) => ({ offset: BigInt(r.offset), key: r.key, value: r.value }));
    };

    /** The active segment's base offset once the partition dir's segments say `done`. */
    const waitForCleaning = async (
      what: string,
      done: (segments: SegmentView[]) => boolean,
    ): Promise<bigint> => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const segments = await stableSegments(partitionDir());
        if (cleanedUpToActive(segments) && done(segments)) return segments.at(-1)!.baseOffset;
        assert.ok(Date.now() < deadline, `${what} within 30 s`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    /**
     * What a consumer read: offsets increasing, each record the one acknowledged at its offset;
     * outside the active segment each key at most once, as its latest record (every record of
     * the test's keys but the filler is older than the active segment); nothing lost; with
     * `tombstonesGone`, no tombstone and no record of a tombstoned key left.
     */
    const check = (
      client: string,
      read: readonly Read[],
      activeBase: bigint,
      tombstonesGone: boolean,
    ): void => {
      const latest = new Map<string, bigint>();
      for (const [o, w] of written) latest.set(w.key, o);
      let previous = -1n;
      const seen = new Set<string>();
      let gaps = 0;
      for (const r of read) {
        assert.ok(r.offset > previous, `${client}: offset ${r.offset} after ${previous}`);
        if (r.offset > previous + 1n) gaps++;
        previous = r.offset;
        const w = written.get(r.offset);
        assert.deepEqual(
          { key: r.key, value: r.value },
          w,
          `${client}: the record at ${r.offset} is as written`,
        );
        if (r.offset >= activeBase) continue;
        assert.ok(!seen.has(r.key), `${client}: ${r.key} twice outside the active segment`);
        seen.add(r.key);
        if (r.key !== 'filler') assert.equal(r.offset, latest.get(r.key), `${client}: ${r.key}'s latest`);
        if (tombstonesGone)
          assert.notEqual(r.value, null, `${client}: the tombstone of ${r.key} at ${r.offset} is gone`);
      }
      assert.ok(gaps > 0, `${client}: the cleaned offsets keep their gaps`);
      for (const key of latest.keys()) {
        if (tombstonesGone && tombstoned.has(key)) assert.ok(!seen.has(key), `${client}: ${key} deleted`);
        else assert.ok(seen.has(key) || latest.get(key)! >= activeBase, `${client}: ${key} kept`);
      }
    };

    const producePython = async (records: [string, string | null][]): Promise<void> => {
      const deliveries = await runPython<PyDelivery[]>(
        script(PY_PRODUCE, TOPIC, records),
        broker.bootstrap,
        'confluent_kafka',
        'python3-confluent-kafka',
      );
      assert.equal(deliveries.length, records.length);
      for (const d of deliveries) {
        assert.equal(d.error, null);
        written.set(BigInt(d.offset), { key: d.key!, value: d.value });
      }
    };

    /**
     * kcat: one line per record, key:value (-Z: an empty value is a tombstone), acks=all, one in
     * flight, so at offsets from the high watermark on in line order (nothing else writing).
     */
    const produceKcat = async (records: [string, string | null][]): Promise<void> => {
      const from = await highWatermark(TOPIC);
      const args = ['-b', broker.bootstrap, '-P', '-t', TOPIC, '-p', '0', '-K', ':', '-Z'];
      const w = spawnSync('kcat', [...args, '-X', 'acks=all', '-X', 'max.in.flight=1'], {
        input: `${records.map(([k, v]) => `${k}:${v ?? ''}`).join('\n')}\n`,
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.equal(w.status, 0, w.stderr);
      assert.equal(await highWatermark(TOPIC), from + BigInt(records.length));
      for (const [i, [key, value]] of records.entries()) written.set(from + BigInt(i), { key, value });
    };

    const versions = (prefix: string, keys: number, count: number): [string, string][] =>
      Array.from({ length: keys * count }, (_, i) => {
        const key = `${prefix}-${i % keys}`;
        return [key, `${key}-v${Math.floor(i / keys)}`.padEnd(60, '.')];
      });

    it('KafkaJS, python3-confluent-kafka and kcat produce keyed records and tombstones', async () => {
      const js = versions('js', 10, 20);
      for (let i = 0; i < js.length; i += 50)
        await sendJs(js.slice(i, i + 50).map(([key, value]) => ({ key, value })));
      await producePython(versions('py', 5, 10));
      await produceKcat(versions('kc', 5, 5));
      // The tombstones last, close together: their delete horizon is set by the first cleaning
      // that reads them, and the reads after the next test's cleaning must still see them.
      await producePython([['py-4', null]]);
      await produceKcat([['kc-4', null]]);
      await sendJs([
        { key: 'js-8', value: null },
        { key: 'js-9', value: null },
      ]);
      for (const key of ['py-4', 'kc-4', 'js-8', 'js-9']) tombstoned.add(key);
      await filler();
    });

    it('after cleaning each client reads at most one record per key outside the active segment, the latest', async () => {
      const lastData = [...written].filter(([, w]) => w.key !== 'filler').at(-1)![0];
      const activeBase = await waitForCleaning(
        'cleaned past the data',
        (s) => s.at(-1)!.baseOffset > lastData,
      );
      // Every tombstone's delete horizon was set by a cleaning before now.
      horizonsBy = Date.now() + DELETE_RETENTION_MS;
      check('kcat', readKcat(), activeBase, false);
      check('KafkaJS', await readKafkaJs(), activeBase, false);
      check('python3-confluent-kafka', await readPython(), activeBase, false);
    });

    it('after delete.retention.ms and another cleaning the tombstones are gone, with their keys', async () => {
      await new Promise((r) => setTimeout(r, Math.max(horizonsBy + 100 - Date.now(), 0)));
      await filler();
      const activeBase = await waitForCleaning('tombstones removed', (s) =>
        s.slice(0, -1).every((segment) => segment.records.every((r) => r.value !== null)),
      );
      check('kcat', readKcat(), activeBase, true);
      check('KafkaJS', await readKafkaJs(), activeBase, true);
      check('python3-confluent-kafka', await readPython(), activeBase, true);
    });
  });
});
