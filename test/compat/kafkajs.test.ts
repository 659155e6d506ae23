/**
 * KafkaJS (devDependency, in this process) against `skiff broker` as a child process: admin
 * createTopics / fetchTopicMetadata / fetchOffsets, a gzip producer with headers read back
 * byte-exact, and a two-member consumer group that reads every message exactly once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CompressionTypes, type Consumer, Kafka, logLevel } from 'kafkajs';
import type { BrokerProcess } from '../support/broker-process.js';
import { startCompatBroker } from './clients.js';

// Short long-polls: KafkaJS heartbeats (and so learns of a rebalance) only between fetches.
const SESSION = {
  sessionTimeout: 6_000,
  heartbeatInterval: 300,
  rebalanceTimeout: 10_000,
  maxWaitTimeInMs: 300,
};

async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('KafkaJS against skiff broker', () => {
  let broker: BrokerProcess;
  let kafka: Kafka;
  before(async () => {
    broker = await startCompatBroker();
    kafka = new Kafka({ clientId: 'skiff-kafkajs', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  });
  after(async () => {
    await broker?.stop();
  });

  it('admin: createTopics, fetchTopicMetadata', async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      assert.equal(
        await admin.createTopics({
          topics: [
            { topic: 'js-group', numPartitions: 4, replicationFactor: 1 },
            { topic: 'js-gzip', numPartitions: 1, replicationFactor: 1 },
          ],
          waitForLeaders: true,
        }),
        true,
      );
      const md = await admin.fetchTopicMetadata({ topics: ['js-group', 'js-gzip'] });
      const byName = new Map(md.topics.map((t) => [t.name, t]));
      assert.equal(byName.get('js-group')!.partitions.length, 4);
      assert.ok(byName.get('js-group')!.partitions.every((p) => p.leader === 1 && p.isr.includes(1)));
      assert.equal(byName.get('js-gzip')!.partitions.length, 1);
    } finally {
      await admin.disconnect();
    }
  });

  it('a gzip producer with headers; the records come back with their headers', async () => {
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic: 'js-gzip',
      compression: CompressionTypes.GZIP,
      messages: Array.from({ length: 50 }, (_, i) => ({
        key: `k${i}`,
        value: `gzip value ${i} ${'x'.repeat(i)}`,
        headers: { source: 'kafkajs', seq: String(i) },
      })),
    });
    await producer.disconnect();
    const consumer = kafka.consumer({ groupId: 'js-gzip-reader', ...SESSION });
    const seen: { key: string; value: string; source: string; seq: string }[] = [];
    await consumer.connect();
    await consumer.subscribe({ topic: 'js-gzip', fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen.push({
          key: message.key!.toString(),
          value: message.value!.toString(),
          source: message.headers!.source!.toString(),
          seq: message.headers!.seq!.toString(),
        });
      },
    });
    try {
      await until('50 gzip records', () => seen.length >= 50);
    } finally {
      await consumer.disconnect();
    }
    assert.equal(seen.length, 50);
    seen.forEach((m, i) => {
      assert.deepEqual(m, {
        key: `k${i}`,
        value: `gzip value ${i} ${'x'.repeat(i)}`,
        source: 'kafkajs',
        seq: String(i),
      });
    });
  });

  it('a two-member consumer group reads every message exactly once; fetchOffsets sees the commits', async () => {
    const groupId = 'js-two-members';
    const members: Consumer[] = [];
    const assigned = new Map<number, number>();
    const received: string[] = [];
    try {
      await readTwoMembers(groupId, members, assigned, received);
    } finally {
      // A failed wait must not leave the members retrying against a broker the file stops.
      for (const c of members) await c.disconnect();
    }
    assert.equal(received.length, 200);
    assert.equal(new Set(received).size, 200);

    const admin = kafka.admin();
    await admin.connect();
    try {
      const [offsets] = await admin.fetchOffsets({ groupId, topics: ['js-group'] });
      assert.equal(offsets!.topic, 'js-group');
      const total = offsets!.partitions.reduce((n, p) => n + Number(p.offset), 0);
      assert.equal(total, 200);
    } finally {
      await admin.disconnect();
    }
  });

  /** Two members join, both take partitions, then 200 records are produced and read. */
  async function readTwoMembers(
    groupId: string,
    members: Consumer[],
    assigned: Map<number, number>,
    received: string[],
  ): Promise<void> {
    for (let m = 0; m < 2; m++) {
      const consumer = kafka.consumer({ groupId, ...SESSION });
      consumer.on(consumer.events.GROUP_JOIN, (e) => {
        const parts = Object.values(e.payload.memberAssignment).reduce((n, ps) => n + ps.length, 0);
        assigned.set(m, parts);
      });
      await consumer.connect();
      await consumer.subscribe({ topic: 'js-group', fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          received.push(message.value!.toString());
        },
      });
      members.push(consumer);
    }
    // Both members hold partitions before anything is produced, so no rebalance moves a partition
    // with records in flight.
    await until(
      'both members assigned',
      () =>
        assigned.size === 2 &&
        [...assigned.values()].every((n) => n > 0) &&
        [...assigned.values()].reduce((a, b) => a + b) === 4,
    );
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic: 'js-group',
      messages: Array.from({ length: 200 }, (_, i) => ({ key: `key-${i}`, value: `m${i}` })),
    });
    await producer.disconnect();
    await until('200 messages', () => received.length >= 200);
    await new Promise((r) => setTimeout(r, 300));
  }
});
