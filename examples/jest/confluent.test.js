// @confluentinc/kafka-javascript (Confluent's client, librdkafka inside), through its
// KafkaJS-compatible API, against a real three-broker Skiff cluster, with Jest: an admin client,
// a producer and a consumer group, and a broker SIGKILLed while the producer and the consumer keep
// going. JavaScript (ESM): Jest runs it without a transform.

import confluent from '@confluentinc/kafka-javascript';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { startCluster } from 'skiff';

const { Kafka, logLevel, ConsumerGroupStates } = confluent.KafkaJS;

/** @type {import('skiff').SkiffCluster} */
let cluster;
/** @type {InstanceType<typeof Kafka>} */
let kafka;

beforeAll(async () => {
  cluster = await startCluster({
    brokers: 3,
    // Every topic, __consumer_offsets included, on all three brokers: any one of them can die.
    // A dead broker is noticed after 2 s rather than Kafka's 9 s.
    config: {
      'default.replication.factor': 3,
      'min.insync.replicas': 2,
      'broker.session.timeout.ms': 2000,
      'broker.heartbeat.interval.ms': 500,
    },
  });
  kafka = new Kafka({
    kafkaJS: {
      clientId: 'skiff-example',
      brokers: [...cluster.bootstrapServers],
      // librdkafka logs every refused connection while a broker is down; the assertions say what matters.
      logLevel: logLevel.NOTHING,
    },
  });
});

afterAll(async () => {
  await cluster?.close();
});

/**
 * Polls until check() returns a value other than undefined.
 * @template T
 * @param {string} what
 * @param {() => T | undefined | Promise<T | undefined>} check
 */
async function waitFor(what, check, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A consumer in `groupId` from the start of `topic`; `seen` collects every value it gets.
 * @param {string} groupId
 * @param {string} topic
 */
async function startConsumer(groupId, topic) {
  const consumer = kafka.consumer({
    kafkaJS: { groupId, fromBeginning: true },
    // A fetch waits at most 100 ms for new data (librdkafka's default is 500 ms).
    'fetch.wait.max.ms': 100,
  });
  /** @type {Set<string>} */
  const seen = new Set();
  await consumer.connect();
  await consumer.subscribe({ topics: [topic] });
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.add(String(message.value));
    },
  });
  return { consumer, seen };
}

test('admin: create a topic, list and describe topics and groups', async () => {
  const admin = kafka.admin();
  await admin.connect();
  try {
    expect(await admin.createTopics({ topics: [{ topic: 'admin-demo', numPartitions: 4 }] })).toBe(true);
    expect(await admin.listTopics()).toContain('admin-demo');
    const [topic] = await admin.fetchTopicMetadata({ topics: ['admin-demo'] });
    expect(topic.partitions).toHaveLength(4);
    for (const p of topic.partitions) expect(p.replicas).toHaveLength(3);

    const { consumer } = await startConsumer('admin-demo-group', 'admin-demo');
    try {
      const group = await waitFor('the group to be stable', async () => {
        const { groups } = await admin.describeGroups(['admin-demo-group']);
        return groups[0].state === ConsumerGroupStates.STABLE ? groups[0] : undefined;
      });
      expect(group.members).toHaveLength(1);
      const { groups } = await admin.listGroups();
      expect(groups.map((g) => g.groupId)).toContain('admin-demo-group');
    } finally {
      await consumer.disconnect();
    }
  } finally {
    await admin.disconnect();
  }
});

test('produce with acks=all and consume in a group', async () => {
  await cluster.createTopic('greetings', { partitions: 3 });
  const producer = kafka.producer({ kafkaJS: { acks: -1 } });
  await producer.connect();
  const { consumer, seen } = await startConsumer('greetings-group', 'greetings');
  try {
    const values = Array.from({ length: 100 }, (_, i) => `hello ${i}`);
    await producer.send({
      topic: 'greetings',
      messages: values.map((value, i) => ({ key: `k${i % 10}`, value })),
    });
    await waitFor('every message', () => (seen.size === values.length ? true : undefined));
    expect([...seen].sort()).toEqual([...values].sort());
  } finally {
    await consumer.disconnect();
    await producer.disconnect();
  }
});

test('a broker killed mid-test: no acknowledged message is lost', async () => {
  await cluster.createTopic('payments', { partitions: 3 });
  const admin = kafka.admin();
  await admin.connect();
  // librdkafka retries a message until it is acknowledged or 10 s have passed.
  const producer = kafka.producer({ kafkaJS: { acks: -1 }, 'message.timeout.ms': 10_000 });
  await producer.connect();
  const { consumer, seen } = await startConsumer('payments-group', 'payments');
  /** @type {string[]} */
  const acknowledged = [];
  /** Sends one message at a time with acks=all, again until it is acknowledged. */
  async function produce(/** @type {number} */ from, /** @type {number} */ to) {
    for (let i = from; i < to; i++) {
      const value = `payment ${i}`;
      await waitFor(`an acknowledgement of ${value}`, async () => {
        try {
          await producer.send({ topic: 'payments', messages: [{ key: String(i), value }] });
          return true;
        } catch {
          return undefined; // not acknowledged: send it again
        }
      });
      acknowledged.push(value);
    }
  }
  const partitions = async () => (await admin.fetchTopicMetadata({ topics: ['payments'] }))[0].partitions;
  try {
    await produce(0, 50);
    const victim = /** @type {number} */ ((await partitions()).find((p) => p.partitionId === 0)?.leader);

    await cluster.stopBroker(victim, { kill: true }); // SIGKILL: no controlled shutdown
    expect(cluster.brokers.find((b) => b.id === victim)?.running).toBe(false);
    await produce(50, 100);
    await waitFor('every acknowledged message', () =>
      acknowledged.every((v) => seen.has(v)) ? true : undefined,
    );

    await cluster.startBroker(victim);
    await waitFor('the restarted broker back in every ISR', async () =>
      (await partitions()).every((p) => p.isr.length === 3) ? true : undefined,
    );
    await produce(100, 120);
    await waitFor('every acknowledged message', () =>
      acknowledged.every((v) => seen.has(v)) ? true : undefined,
    );
  } finally {
    await consumer.disconnect();
    await producer.disconnect();
    await admin.disconnect();
  }
  // A new group reads the topic from the start: every acknowledged message is in the log.
  const audit = await startConsumer('payments-audit', 'payments');
  try {
    await waitFor('the audit to read every message', () =>
      audit.seen.size >= acknowledged.length ? true : undefined,
    );
    expect([...audit.seen].sort()).toEqual([...acknowledged].sort());
  } finally {
    await audit.consumer.disconnect();
  }
});
