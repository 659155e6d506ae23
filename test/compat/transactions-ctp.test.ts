/**
 * Consume-transform-produce, exactly once, with real clients: a transactional producer reads a
 * topic through a consumer group, writes each record transformed to a second topic and commits the
 * input offsets in the same transaction (sendOffsetsToTransaction: AddOffsetsToTxn, then
 * TxnOffsetCommit, the offsets pending in the group until the COMMIT marker). Every few batches a
 * transaction is aborted: librdkafka's consumer is then rewound to its committed offsets, as an
 * application does after a failure; with KafkaJS the batch is written again in a new transaction. The output, read read_committed, holds each input record exactly once, and the
 * group's committed offsets are the input's end offsets.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import type { BrokerProcess } from '../support/broker-process.js';
import { runPython, startCompatBroker } from './clients.js';

const TXN_PROPS = [
  'transaction.state.log.replication.factor=1',
  'transaction.state.log.min.isr=1',
  'transaction.state.log.num.partitions=3',
  'offsets.topic.num.partitions=3',
];

/** Records per input topic: the acceptance figure (SKIFF_CTP_RECORDS overrides it for a quick run). */
const RECORDS = Number(process.env.SKIFF_CTP_RECORDS ?? 100_000);

describe('consume-transform-produce with sendOffsetsToTransaction', () => {
  let broker: BrokerProcess;
  let kafka: Kafka;
  before(async () => {
    broker = await startCompatBroker(TXN_PROPS);
    kafka = new Kafka({ clientId: 'ctp', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({
        topics: ['rd-in', 'rd-out', 'js-in', 'js-out'].map((topic) => ({
          topic,
          numPartitions: 3,
          replicationFactor: 1,
        })),
        waitForLeaders: true,
      });
    } finally {
      await admin.disconnect();
    }
    const producer = kafka.producer();
    await producer.connect();
    try {
      for (const topic of ['rd-in', 'js-in']) {
        for (let from = 0; from < RECORDS; from += 5_000) {
          const n = Math.min(5_000, RECORDS - from);
          await producer.send({
            topic,
            messages: Array.from({ length: n }, (_, i) => ({
              value: String(from + i),
              partition: (from + i) % 3,
            })),
          });
        }
      }
    } finally {
      await producer.disconnect();
    }
  });
  after(async () => {
    await broker?.stop();
  });

  it('librdkafka: every input record in the output exactly once, the input offsets committed', async () => {
    const script = `
import json, sys, time
from confluent_kafka import Consumer, Producer, TopicPartition, KafkaException
bootstrap, total = sys.argv[1], ${RECORDS}
c = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'rd-ctp', 'enable.auto.commit': False,
              'auto.offset.reset': 'earliest', 'isolation.level': 'read_committed'})
c.subscribe(['rd-in'])
p = Producer({'bootstrap.servers': bootstrap, 'transactional.id': 'rd-ctp', 'linger.ms': 5})
p.init_transactions(30)
done, batches, aborts = 0, 0, 0
deadline = time.time() + 90
while done < total and time.time() < deadline:
    msgs = [m for m in c.consume(num_messages=1000, timeout=1) if not m.error()]
    if not msgs:
        continue
    batches += 1
    p.begin_transaction()
    for m in msgs:
        p.produce('rd-out', value=b'out-' + m.value(), partition=m.partition())
    p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
    if batches % 4 == 0:
        p.abort_transaction(30)
        aborts += 1
        # Back to what the group committed: the aborted batch is read and written again.
        committed = c.committed(c.assignment(), 30)
        for tp in committed:
            c.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))
        continue
    p.commit_transaction(30)
    done += len(msgs)
committed = {tp.partition: tp.offset for tp in c.committed([TopicPartition('rd-in', i) for i in range(3)], 30)}
c.close()
r = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'rd-check', 'enable.auto.commit': False,
              'isolation.level': 'read_committed'})
r.assign([TopicPartition('rd-out', i, 0) for i in range(3)])
out = []
end = time.time() + 30
while len(out) < total and time.time() < end:
    out.extend(m.value().decode() for m in r.consume(num_messages=5000, timeout=0.5) if not m.error())
extra = [m for m in r.consume(num_messages=100, timeout=1) if not m.error()]
r.close()
print(json.dumps({'done': done, 'aborts': aborts, 'committed': committed, 'out': len(out),
                  'distinct': len(set(out)), 'extra': len(extra),
                  'missing': sorted(set('out-%d' % i for i in range(total)) - set(out))[:5]}))
`;
    const r = await runPython<{
      done: number;
      aborts: number;
      committed: Record<string, number>;
      out: number;
      distinct: number;
      extra: number;
      missing: string[];
    }>(script, broker.bootstrap, 'confluent_kafka', 'python3-confluent-kafka', 150_000);
    assert.equal(r.done, RECORDS);
    assert.ok(r.aborts > 0, 'some transactions were aborted');
    assert.deepEqual(r.missing, []);
    assert.deepEqual([r.out, r.distinct, r.extra], [RECORDS, RECORDS, 0], 'no loss, no duplicate');
    const ends = [0, 1, 2].map((p) => Math.floor(RECORDS / 3) + (p < RECORDS % 3 ? 1 : 0));
    assert.deepEqual(
      [0, 1, 2].map((p) => r.committed[String(p)]),
      ends,
    );
  });

  it('KafkaJS: every input record in the output exactly once, the input offsets committed', async () => {
    const producer = kafka.producer({ transactionalId: 'js-ctp', idempotent: true, maxInFlightRequests: 1 });
    const consumer = kafka.consumer({
      groupId: 'js-ctp',
      readUncommitted: false,
      maxWaitTimeInMs: 200,
      // Small fetches: many batches, so many transactions (every third one aborted).
      maxBytesPerPartition: 16 * 1024,
    });
    await producer.connect();
    await consumer.connect();
    const admin = kafka.admin();
    await admin.connect();
    /** The group's committed offset of a partition (0 when none yet). */
    const committedOffset = async (topic: string, partition: number): Promise<string> => {
      const [t] = await admin.fetchOffsets({ groupId: 'js-ctp', topics: [topic] });
      const o = t!.partitions.find((p) => p.partition === partition)!.offset;
      return o === '-1' ? '0' : o;
    };
    let done = 0;
    let batches = 0;
    let aborts = 0;
    try {
      await consumer.subscribe({ topic: 'js-in', fromBeginning: true });
      const finished = new Promise<void>((resolve, reject) => {
        void consumer
          .run({
            autoCommit: false,
            eachBatchAutoResolve: false,
            eachBatch: async ({ batch, isRunning, isStale, resolveOffset }) => {
              if (!isRunning() || isStale() || batch.messages.length === 0) return;
              batches++;
              const next = (BigInt(batch.lastOffset()) + 1n).toString();
              /** One transaction over the batch: its records transformed, its offsets committed. */
              const attempt = async (commit: boolean) => {
                const txn = await producer.transaction();
                await txn.send({
                  topic: 'js-out',
                  messages: batch.messages.map((m) => ({
                    value: `out-${m.value}`,
                    partition: batch.partition,
                  })),
                });
                await txn.sendOffsets({
                  consumerGroupId: 'js-ctp',
                  topics: [
                    { topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] },
                  ],
                });
                await (commit ? txn.commit() : txn.abort());
              };
              try {
                if (batches % 3 === 0) {
                  // A failed attempt first: its records stay invisible, its offsets uncommitted.
                  await attempt(false);
                  aborts++;
                  const offset = await committedOffset(batch.topic, batch.partition);
                  if (offset !== batch.firstOffset()) {
                    throw new Error(
                      `after an abort ${batch.topic}-${batch.partition} is at ${offset}, not ${batch.firstOffset()}`,
                    );
                  }
                }
                await attempt(true);
                // Without auto-resolve, KafkaJS moves its position only when told.
                resolveOffset(batch.lastOffset());
                done += batch.messages.length;
                if (done >= RECORDS) resolve();
              } catch (e) {
                reject(e);
              }
            },
          })
          .catch(reject);
      });
      try {
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            finished,
            new Promise((_, reject) => {
              timer = setTimeout(() => reject(new Error(`only ${done} records moved`)), 90_000);
            }),
          ]);
        } finally {
          clearTimeout(timer);
        }
        await consumer.stop();
        const [offsets] = await admin.fetchOffsets({ groupId: 'js-ctp', topics: ['js-in'] });
        const ends = [0, 1, 2].map((p) => String(Math.floor(RECORDS / 3) + (p < RECORDS % 3 ? 1 : 0)));
        assert.deepEqual(
          offsets!.partitions.sort((a, b) => a.partition - b.partition).map((p) => p.offset),
          ends,
        );
      } finally {
        await admin.disconnect();
      }
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
    }
    assert.equal(done, RECORDS);
    assert.ok(aborts > 0, 'some transactions were aborted');
    const check = kafka.consumer({ groupId: 'js-check', readUncommitted: false, maxWaitTimeInMs: 200 });
    await check.connect();
    const seen: string[] = [];
    try {
      await check.subscribe({ topic: 'js-out', fromBeginning: true });
      await check.run({ eachMessage: async ({ message }) => void seen.push(String(message.value)) });
      const deadline = Date.now() + 30_000;
      while (seen.length < RECORDS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      // A moment more: anything beyond RECORDS would be a duplicate.
      await new Promise((r) => setTimeout(r, 1_000));
    } finally {
      await check.disconnect();
    }
    assert.equal(seen.length, RECORDS, 'no loss, no duplicate');
    assert.equal(new Set(seen).size, RECORDS);
  });
});
