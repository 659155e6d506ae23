/**
 * A compacted topic with real clients against `skiff broker` as a child process: KafkaJS creates
 * it with cleanup.policy=compact, produces keyed records and a tombstone, and its keyless produce
 * fails with INVALID_RECORD appending nothing; kcat (librdkafka) reads the topic back end to end and
 * its keyless produce fails the same way.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import type { BrokerProcess } from '../support/broker-process.js';
import { startCompatBroker } from './clients.js';

const TOPIC = 'compacted-js';

describe('a compacted topic with KafkaJS and kcat', () => {
  let broker: BrokerProcess;
  let kafka: Kafka;
  before(async () => {
    broker = await startCompatBroker();
    kafka = new Kafka({
      clientId: 'skiff-compacted',
      brokers: [broker.bootstrap],
      logLevel: logLevel.NOTHING,
    });
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({
        topics: [
          { topic: TOPIC, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] },
        ],
        waitForLeaders: true,
      });
    } finally {
      await admin.disconnect();
    }
  });
  after(async () => {
    await broker?.stop();
  });

  const highWatermark = async (): Promise<string> => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      return (await admin.fetchTopicOffsets(TOPIC))[0]!.high;
    } finally {
      await admin.disconnect();
    }
  };

  it('KafkaJS: keyed records and a tombstone are accepted; a keyless record is INVALID_RECORD', async () => {
    const producer = kafka.producer({ retry: { retries: 0 } });
    await producer.connect();
    try {
      await producer.send({
        topic: TOPIC,
        messages: [
          { key: 'a', value: 'a1' },
          { key: 'b', value: 'b1' },
          { key: 'a', value: null },
        ],
      });
      await assert.rejects(
        producer.send({ topic: TOPIC, messages: [{ key: 'c', value: 'c1' }, { value: 'no key' }] }),
        (e: Error & { type?: string; retriable?: boolean }) => {
          assert.equal(e.type, 'INVALID_RECORD', e.message);
          return true;
        },
      );
    } finally {
      await producer.disconnect();
    }
    assert.equal(await highWatermark(), '3');
  });

  it('kcat reads the keys, values and the tombstone; its keyless produce fails and appends nothing', () => {
    const read = spawnSync(
      'kcat',
      ['-b', broker.bootstrap, '-C', '-t', TOPIC, '-o', 'beginning', '-e', '-Z', '-f', '%o %k=%s\\n'],
      { encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(read.status, 0, read.stderr);
    assert.deepEqual(read.stdout.trim().split('\n'), ['0 a=a1', '1 b=b1', '2 a=NULL']);
    const write = spawnSync('kcat', ['-b', broker.bootstrap, '-P', '-t', TOPIC], {
      input: 'keyless\n',
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.match(
      `${write.stdout}${write.stderr}`,
      /Delivery failed for message: Broker: Broker failed to validate record/,
    );
  });

  it('after the refused produces the log still ends at offset 3', async () => {
    assert.equal(await highWatermark(), '3');
  });
});
