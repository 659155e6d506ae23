/**
 * message.timestamp.before.max.ms / message.timestamp.after.max.ms (KIP-937) with real clients
 * against `skiff broker` as a child process: a CreateTime record older or newer than the topic
 * allows is refused with INVALID_TIMESTAMP and nothing of its batch is appended; records inside the
 * window are taken. KafkaJS and python3-confluent-kafka (librdkafka) each set their own timestamps.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Kafka } from 'kafkajs';
import type { BrokerProcess } from '../support/broker-process.js';
import { highWatermarkOf, kafkaJsWithTopics, runPython, startCompatBroker } from './clients.js';

const TOPIC = 'bounded-timestamps';
const HOUR_MS = 3_600_000;

const PY_PRODUCE = `
import json, sys, time
from confluent_kafka import Producer
bs = sys.argv[1]
now = int(time.time() * 1000)
p = Producer({'bootstrap.servers': bs, 'acks': 'all', 'retries': 0})
out = []
def done(err, m):
    out.append(err.name() if err else m.offset())
for ts in [now, now - 2 * ${HOUR_MS}, now + 2 * ${HOUR_MS}]:
    p.produce('${TOPIC}', value=b'v', timestamp=ts, on_delivery=done)
    p.flush(20)
print(json.dumps(out))
`;

describe('message.timestamp.before.max.ms and message.timestamp.after.max.ms with real clients', () => {
  let broker: BrokerProcess;
  let kafka: Kafka;

  before(async () => {
    broker = await startCompatBroker();
    kafka = await kafkaJsWithTopics(broker, 'skiff-timestamps', [
      {
        topic: TOPIC,
        numPartitions: 1,
        configEntries: [
          { name: 'message.timestamp.before.max.ms', value: String(HOUR_MS) },
          { name: 'message.timestamp.after.max.ms', value: String(HOUR_MS) },
        ],
      },
    ]);
  });
  after(async () => {
    await broker?.stop();
  });

  const highWatermark = (): Promise<bigint> => highWatermarkOf(kafka, TOPIC);

  it('KafkaJS: a record two hours old or two hours ahead is INVALID_TIMESTAMP; one of now is taken', async () => {
    const producer = kafka.producer({ retry: { retries: 0 } });
    await producer.connect();
    try {
      await producer.send({ topic: TOPIC, messages: [{ value: 'now', timestamp: String(Date.now()) }] });
      for (const offsetMs of [-2 * HOUR_MS, 2 * HOUR_MS]) {
        await assert.rejects(
          producer.send({
            topic: TOPIC,
            messages: [
              { value: 'fine', timestamp: String(Date.now()) },
              { value: 'out of range', timestamp: String(Date.now() + offsetMs) },
            ],
          }),
          (e: Error & { type?: string }) => {
            assert.equal(e.type, 'INVALID_TIMESTAMP', e.message);
            return true;
          },
        );
      }
    } finally {
      await producer.disconnect();
    }
    // The in-range record sent with each refused one went nowhere either.
    assert.equal(await highWatermark(), 1n);
  });

  it('python3-confluent-kafka: its record of now is taken, its old and future ones are INVALID_TIMESTAMP', async () => {
    const before = await highWatermark();
    const out = await runPython<(number | string)[]>(
      PY_PRODUCE,
      broker.bootstrap,
      'confluent_kafka',
      'python3-confluent-kafka',
    );
    assert.deepEqual(out, [Number(before), 'INVALID_TIMESTAMP', 'INVALID_TIMESTAMP']);
    assert.equal(await highWatermark(), before + 1n);
  });
});
