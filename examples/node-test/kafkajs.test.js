// KafkaJS against a real three-broker Skiff cluster, with node:test: an admin client, a producer
// and a consumer group, and a broker SIGKILLed while the producer and the consumer keep going.
// JavaScript (ESM), so that it runs on every Node.js line node:test does, with nothing to compile.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { startCluster } from 'skiff';

/** @type {import('skiff').SkiffCluster} */
let cluster;
/** @type {Kafka} */
let kafka;

before(async () => {
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
    clientId: 'skiff-example',
    brokers: [...cluster.bootstrapServers],
    // KafkaJS logs every refused connection while a broker is down; the assertions say what matters.
    logLevel: logLevel.NOTHING,
    // Retries start after 100 ms, not 300, and back off to 1 s at most: a failover takes ~2 s.
    retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 10 },
  });
});

after(async () => {
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
  // A fetch waits at most 100 ms for new data (KafkaJS's default, 5 s, is also how long disconnect() waits).
  // A session of 6 s (the broker's group.min.session.timeout.ms), not KafkaJS's 30 s: when the
  // broker killed below was the group's coordinator, KafkaJS may give up on it, restart the consumer
  // as a new member, and the group then waits for the old member's session to run out.
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100, sessionTimeout: 6000 });
  /** @type {Set<string>} */
  const seen = new Set();
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
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
    assert.equal(await admin.createTopics({ topics: [{ topic: 'admin-demo', numPartitions: 4 }] }), true);
    assert.ok((await admin.listTopics()).includes('admin-demo'));
    const { topics } = await admin.fetchTopicMetadata({ topics: ['admin-demo'] });
    assert.equal(topics[0].partitions.length, 4);
    for (const p of topics[0].partitions) assert.equal(p.replicas.length, 3);

    const { consumer, seen } = await startConsumer('admin-demo-group', 'admin-demo');
    try {
      await waitFor('the group to be stable', async () => {
        const { groups } = await admin.describeGroups(['admin-demo-group']);
        return groups[0].state === 'Stable' ? groups[0] : undefined;
      });
      assert.equal(seen.size, 0);
      const { groups } = await admin.listGroups();
      assert.ok(groups.some((g) => g.groupId === 'admin-demo-group'));
    } finally {
      await consumer.disconnect();
    }
  } finally {
    await admin.disconnect();
  }
});

test('produce with acks=all and consume in a group', async () => {
  await cluster.createTopic('greetings', { partitions: 3 });
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const { consumer, seen } = await startConsumer('greetings-group', 'greetings');
  try {
    const values = Array.from({ length: 100 }, (_, i) => `hello ${i}`);
    await producer.send({
      topic: 'greetings',
      acks: -1,
      messages: values.map((value, i) => ({ key: `k${i % 10}`, value })),
    });
    await waitFor('every message', () => (seen.size === values.length ? true : undefined));
    assert.deepEqual([...seen].sort(), [...values].sort());
  } finally {
    await consumer.disconnect();
    await producer.disconnect();
  }
});

test('a broker killed mid-test: no acknowledged message is lost', async () => {
  await cluster.createTopic('payments', { partitions: 3 });
  const admin = kafka.admin();
  await admin.connect();
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
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
          await producer.send({ topic: 'payments', acks: -1, messages: [{ key: String(i), value }] });
          return true;
        } catch {
          return undefined; // not acknowledged: send it again
        }
      });
      acknowledged.push(value);
    }
  }
  try {
    await produce(0, 50);
    const { topics } = await admin.fetchTopicMetadata({ topics: ['payments'] });
    const victim = /** @type {number} */ (topics[0]?.partitions.find((p) => p.partitionId === 0)?.leader);

    await cluster.stopBroker(victim, { kill: true }); // SIGKILL: no controlled shutdown
    assert.equal(cluster.brokers.find((b) => b.id === victim)?.running, false);
    await produce(50, 100);
    await waitFor('every acknowledged message', () =>
      acknowledged.every((v) => seen.has(v)) ? true : undefined,
    );

    await cluster.startBroker(victim);
    await waitFor('the restarted broker back in every ISR', async () => {
      const { topics } = await admin.fetchTopicMetadata({ topics: ['payments'] });
      return topics[0].partitions.every((p) => p.isr.length === 3) ? true : undefined;
    });
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
    assert.deepEqual([...audit.seen].sort(), [...acknowledged].sort());
  } finally {
    await audit.consumer.disconnect();
  }
});
