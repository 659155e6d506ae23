/**
 * Admin answers that must be Kafka's, through KafkaJS (in this process) against `skiff broker` as
 * a child process: DeleteRecords' offset rules, DescribeConfigs' synonyms and its empty name list
 * (KafkaJS always sends one), and AlterConfigs on a broker name Kafka does not define.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import kafkajs, { type Admin, Kafka, logLevel } from 'kafkajs';
import type { BrokerProcess } from '../support/broker-process.js';
import { startCompatBroker } from './clients.js';

/** DescribeConfigs' ConfigSource ids, as KafkaJS hands them over. */
const { ConfigResourceTypes } = kafkajs;
const DEFAULT_CONFIG = 5;
const DYNAMIC_TOPIC_CONFIG = 1;
const DYNAMIC_BROKER_CONFIG = 2;

describe('KafkaJS admin: answers as Kafka gives them', () => {
  let broker: BrokerProcess;
  let admin: Admin;
  before(async () => {
    broker = await startCompatBroker(['log.retention.hours=2']);
    const kafka = new Kafka({
      clientId: 'skiff-answers',
      brokers: [broker.bootstrap],
      logLevel: logLevel.NOTHING,
    });
    admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      topics: [
        {
          topic: 'answers',
          numPartitions: 1,
          replicationFactor: 1,
          configEntries: [{ name: 'retention.ms', value: '100000' }],
        },
      ],
      waitForLeaders: true,
    });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic: 'answers',
      messages: Array.from({ length: 10 }, (_, i) => ({ value: `v${i}` })),
    });
    await producer.disconnect();
    // deleteTopicRecords looks for the leader in the metadata the admin already holds.
    await admin.fetchTopicMetadata({ topics: ['answers'] });
  });
  after(async () => {
    await admin?.disconnect();
    await broker?.stop();
  });

  it('DeleteRecords: -1 is the high watermark; -1001 and offsets beyond it are OFFSET_OUT_OF_RANGE', async () => {
    const refused = async (offset: string): Promise<string | undefined> => {
      try {
        await admin.deleteTopicRecords({ topic: 'answers', partitions: [{ partition: 0, offset }] });
        return undefined;
      } catch (e) {
        // KafkaJS's retrier wraps a non-retriable error; the per-partition errors are in its cause.
        type Failed = { partitions?: { error: { type: string } }[]; cause?: Failed };
        const f = e as Failed;
        return (f.partitions ?? f.cause?.partitions)?.[0]?.error.type;
      }
    };
    assert.equal(await refused('-1001'), 'OFFSET_OUT_OF_RANGE');
    assert.equal(await refused('-2'), 'OFFSET_OUT_OF_RANGE');
    assert.equal(await refused('11'), 'OFFSET_OUT_OF_RANGE');
    const earliest = async () => (await admin.fetchTopicOffsetsByTimestamp('answers', 0))[0]!.offset;
    assert.equal(await earliest(), '0', 'nothing deleted by the refused requests');
    assert.equal(await refused('4'), undefined);
    assert.equal(await earliest(), '4');
    assert.equal(await refused('-1'), undefined);
    const [p] = await admin.fetchTopicOffsets('answers');
    assert.deepEqual([p!.low, p!.high], ['10', '10']);
  });

  it("DescribeConfigs: every config for an empty name list, Kafka's synonyms, a custom broker config", async () => {
    const topic = await admin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: 'answers' }],
      includeSynonyms: true,
    });
    const entries = new Map(topic.resources[0]!.configEntries.map((c) => [c.configName, c]));
    assert.ok(entries.size > 20, `all topic configs, got ${entries.size}`);
    const retention = entries.get('retention.ms')!;
    assert.deepEqual(
      [retention.configValue, retention.configSource, retention.configSynonyms],
      [
        '100000',
        DYNAMIC_TOPIC_CONFIG,
        [{ configName: 'retention.ms', configValue: '100000', configSource: DYNAMIC_TOPIC_CONFIG }],
      ],
    );
    // log.retention.hours (set in server.properties) is no synonym of retention.ms in Kafka's answer.
    const segment = entries.get('segment.ms')!;
    assert.deepEqual(
      [segment.configValue, segment.configSource, segment.configSynonyms],
      ['604800000', DEFAULT_CONFIG, []],
    );
    const bytes = entries.get('segment.bytes')!;
    assert.deepEqual(bytes.configSynonyms, [
      { configName: 'log.segment.bytes', configValue: '1073741824', configSource: DEFAULT_CONFIG },
    ]);

    const altered = await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: ConfigResourceTypes.BROKER,
          name: '1',
          configEntries: [{ name: 'custom.plugin.setting', value: 'x' }],
        },
      ],
    });
    assert.equal(altered.resources[0]!.errorCode, 0);
    const brokerConfigs = await admin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.BROKER, name: '1' }],
      includeSynonyms: true,
    });
    const b = new Map(brokerConfigs.resources[0]!.configEntries.map((c) => [c.configName, c]));
    const custom = b.get('custom.plugin.setting')!;
    assert.deepEqual(
      [custom.configValue, custom.configSource, custom.isSensitive, custom.readOnly],
      [null, DYNAMIC_BROKER_CONFIG, true, true],
    );
    const hours = b.get('log.retention.hours')!;
    assert.deepEqual(
      [hours.configValue, hours.configSynonyms.map((s) => s.configSource)],
      ['2', [4, DEFAULT_CONFIG]],
    );
    // Kafka's log.retention.ms is null until set, whatever log.retention.hours says.
    assert.deepEqual(
      [b.get('log.retention.ms')!.configValue, b.get('log.retention.ms')!.configSynonyms],
      [null, []],
    );
  });
});
