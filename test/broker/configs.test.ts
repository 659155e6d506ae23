import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { brokerConfigFromProperties, parseProperties } from '../../src/broker/config.js';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { AlterConfigsResponse } from '../../src/protocol/generated/AlterConfigsResponse.js';
import type {
  CreatableTopicConfigs,
  CreateTopicsResponse,
} from '../../src/protocol/generated/CreateTopicsResponse.js';
import type { DescribeConfigsResponse } from '../../src/protocol/generated/DescribeConfigsResponse.js';
import type { DescribeLogDirsResponse } from '../../src/protocol/generated/DescribeLogDirsResponse.js';
import type { IncrementalAlterConfigsResponse } from '../../src/protocol/generated/IncrementalAlterConfigsResponse.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import { batch, startBroker, type TestBroker } from './helpers.js';

const TOPIC = 2;
const BROKER = 4;

describe('server.properties through the config table', () => {
  it('types, defaults and validation come from config-defs; unknown keys are warned about once each', () => {
    const warnings: string[] = [];
    const c = brokerConfigFromProperties(
      parseProperties(
        [
          'group.initial.rebalance.delay.ms=0',
          'offsets.topic.num.partitions=5',
          'log.roll.hours=2',
          'log.flush.interval.messages=9223372036854775807',
          'frobnicate=1',
          'frobnicate=2',
          'num.io.threads=8',
        ].join('\n'),
      ),
      (w) => warnings.push(w),
    );
    assert.equal(c.groupInitialRebalanceDelayMs, 0);
    assert.equal(c.offsetsTopicNumPartitions, 5);
    assert.equal(c.offsetsTopicSegmentBytes, 104_857_600);
    assert.equal(c.offsetsTopicReplicationFactor, 3);
    assert.equal(c.log.segmentMs, 2 * 3_600_000);
    assert.equal(c.log.flushMessages, Number.POSITIVE_INFINITY);
    assert.equal(c.log.retentionMs, 168 * 3_600_000);
    assert.equal(c.staticProps['log.roll.hours'], '2');
    assert.equal(warnings.length, 2);
    assert.match(warnings[0]!, /frobnicate/);
    // A Kafka config Skiff does not take says why.
    assert.equal(
      warnings[1],
      "ignoring config 'num.io.threads': a Skiff broker serves every request on its one event loop",
    );
    assert.equal(c.staticProps['num.io.threads'], undefined);
    assert.throws(
      () => brokerConfigFromProperties(parseProperties('log.segment.bytes=10')),
      /Invalid value 10 for configuration log.segment.bytes: Value must be at least 14/,
    );
    assert.throws(
      () => brokerConfigFromProperties(parseProperties('auto.create.topics.enable=yes')),
      /auto.create.topics.enable/,
    );
  });
});

describe('configs: DescribeConfigs, AlterConfigs, IncrementalAlterConfigs; DescribeLogDirs', () => {
  let b: TestBroker;
  let conn: ClientConnection;
  let created: CreatableTopicConfigs[] = [];
  const describe4 = (resourceType: number, resourceName: string, keys: string[] | null, synonyms = true) =>
    b.call<DescribeConfigsResponse>(conn, 32, 4, {
      resources: [{ resourceType, resourceName, configurationKeys: keys }],
      includeSynonyms: synonyms,
      includeDocumentation: true,
    });
  const incremental = (
    resourceType: number,
    resourceName: string,
    configs: { name: string; configOperation: number; value: string | null }[],
  ) =>
    b.call<IncrementalAlterConfigsResponse>(conn, 44, 1, {
      resources: [{ resourceType, resourceName, configs }],
      validateOnly: false,
    });

  before(async () => {
    b = await startBroker({ 'log.retention.hours': '2', 'num.partitions': '1' });
    conn = await b.connect();
    const r = await b.call<CreateTopicsResponse>(conn, 19, 7, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [
        {
          name: 'cfg',
          numPartitions: 2,
          replicationFactor: 1,
          assignments: [],
          configs: [{ name: 'cleanup.policy', value: 'compact' }],
        },
      ],
    });
    assert.equal(r.topics[0]!.errorCode, 0);
    created = r.topics[0]!.configs ?? [];
  });
  after(async () => {
    await b.stop();
  });

  it("CreateTopics answers the topic's resulting configs, sorted by name, each value's source (KIP-525)", () => {
    const names = created.map((c) => c.name);
    assert.deepEqual(names, [...names].sort());
    const byName = new Map(created.map((c) => [c.name, c]));
    const row = (n: string) => {
      const c = byName.get(n)!;
      return [c.value, c.configSource, c.readOnly, c.isSensitive];
    };
    assert.deepEqual(row('cleanup.policy'), ['compact', 1, false, false]);
    // Unlike DescribeConfigs' synonyms, the source is the layer the value comes from (the controller's
    // KafkaConfigSchema): log.retention.hours in server.properties.
    assert.deepEqual(row('retention.ms'), [String(2 * 3_600_000), 4, false, false]);
    assert.deepEqual(row('segment.bytes'), ['1073741824', 5, false, false]);
  });

  it('describes a topic: sources, synonyms, documentation, types, the key filter', async () => {
    const r = await describe4(TOPIC, 'cfg', null);
    const res = r.results[0]!;
    assert.equal(res.errorCode, 0);
    const byName = new Map(res.configs.map((c) => [c.name, c]));
    const policy = byName.get('cleanup.policy')!;
    assert.equal(policy.value, 'compact');
    assert.equal(policy.configSource, 1); // DYNAMIC_TOPIC_CONFIG
    assert.equal(policy.configType, 7); // LIST
    assert.equal(policy.readOnly, false);
    const retention = byName.get('retention.ms')!;
    assert.equal(retention.value, String(2 * 3_600_000));
    // Kafka lists synonyms from log.retention.ms on only: with just log.retention.hours set (in
    // server.properties) there are none, and the source is DEFAULT_CONFIG though the value is 2 h.
    assert.equal(retention.configSource, 5);
    assert.deepEqual(retention.synonyms, []);
    assert.deepEqual(
      byName.get('segment.bytes')!.synonyms.map((s) => [s.name, s.value, s.source]),
      [['log.segment.bytes', '1073741824', 5]],
    );
    assert.ok(retention.documentation);
    const filtered = await describe4(TOPIC, 'cfg', ['segment.bytes', 'no.such.config'], false);
    assert.deepEqual(
      filtered.results[0]!.configs.map((c) => [c.name, c.value, c.isDefault, c.synonyms.length]),
      [['segment.bytes', '1073741824', false, 0]],
    );
    // v1, the lowest Kafka 4 serves: the source instead of v0's isDefault, no type or documentation.
    const v1 = await b.call<DescribeConfigsResponse>(conn, 32, 1, {
      resources: [{ resourceType: TOPIC, resourceName: 'cfg', configurationKeys: ['segment.bytes'] }],
      includeSynonyms: true,
      includeDocumentation: false,
    });
    const v1Config = v1.results[0]!.configs[0]!;
    assert.deepEqual(
      [v1Config.name, v1Config.configSource, v1Config.synonyms.map((x) => [x.name, x.source])],
      ['segment.bytes', 5, [['log.segment.bytes', 5]]],
    );
    const missing = await describe4(TOPIC, 'nope', null);
    assert.deepEqual([missing.results[0]!.errorCode, missing.results[0]!.errorMessage], [3, null]);
    const notId = await describe4(BROKER, 'one', null);
    assert.deepEqual(
      [notId.results[0]!.errorCode, notId.results[0]!.errorMessage],
      [42, 'Broker id must be an integer, but it is: one'],
    );
  });

  it('describes this broker (static, read-only flags) and refuses another broker id', async () => {
    const r = await describe4(BROKER, '1', [
      'log.retention.hours',
      'replica.lag.time.max.ms',
      'num.partitions',
    ]);
    const byName = new Map(r.results[0]!.configs.map((c) => [c.name, c]));
    assert.equal(byName.get('log.retention.hours')!.value, '2');
    assert.equal(byName.get('log.retention.hours')!.configSource, 4);
    assert.equal(byName.get('replica.lag.time.max.ms')!.readOnly, false);
    assert.equal(byName.get('num.partitions')!.readOnly, true);
    const other = await describe4(BROKER, '7', null);
    assert.equal(other.results[0]!.errorCode, 42);
  });

  it('IncrementalAlterConfigs: SET/DELETE/APPEND/SUBTRACT, validation, and the running log follows', async () => {
    const set = await incremental(TOPIC, 'cfg', [
      { name: 'segment.bytes', configOperation: 0, value: '1048576' },
      { name: 'retention.ms', configOperation: 0, value: '60000' },
    ]);
    assert.equal(set.responses[0]!.errorCode, 0);
    const log = b.broker.logManager.getLog('cfg', 0)!;
    assert.equal(log.config.segmentBytes, 1_048_576);
    assert.equal(log.config.retentionMs, 60_000);
    const append = await incremental(TOPIC, 'cfg', [
      { name: 'cleanup.policy', configOperation: 2, value: 'delete' },
    ]);
    assert.equal(append.responses[0]!.errorCode, 0);
    assert.equal(b.metadata.image().topicConfigs.get('cfg')!['cleanup.policy'], 'compact,delete');
    await incremental(TOPIC, 'cfg', [{ name: 'cleanup.policy', configOperation: 3, value: 'compact' }]);
    assert.equal(b.metadata.image().topicConfigs.get('cfg')!['cleanup.policy'], 'delete');
    const del = await incremental(TOPIC, 'cfg', [{ name: 'segment.bytes', configOperation: 1, value: null }]);
    assert.equal(del.responses[0]!.errorCode, 0);
    assert.equal(log.config.segmentBytes, 1_073_741_824);
    const notList = await incremental(TOPIC, 'cfg', [
      { name: 'retention.ms', configOperation: 2, value: '1' },
    ]);
    assert.deepEqual(
      [notList.responses[0]!.errorCode, notList.responses[0]!.errorMessage],
      [40, "Can't APPEND to key retention.ms because its type is not LIST."],
    );
    const unknown = await incremental(TOPIC, 'cfg', [{ name: 'no.such', configOperation: 0, value: '1' }]);
    assert.equal(unknown.responses[0]!.errorCode, 40);
    const bad = await incremental(TOPIC, 'cfg', [
      { name: 'segment.bytes', configOperation: 0, value: 'big' },
    ]);
    assert.equal(bad.responses[0]!.errorCode, 40);
  });

  it('dynamic broker configs: static ones refused with INVALID_REQUEST, dynamic ones applied to logs', async () => {
    const stat = await incremental(BROKER, '1', [
      { name: 'num.partitions', configOperation: 0, value: '3' },
      { name: 'log.dirs', configOperation: 0, value: '/x' },
    ]);
    assert.equal(stat.responses[0]!.errorCode, 42);
    assert.match(
      stat.responses[0]!.errorMessage!,
      /Cannot update these configs dynamically: .*num.partitions/,
    );
    // Kafka stores a broker name it does not know (a custom config, for plugins) and describes it
    // as sensitive: value hidden, type UNKNOWN, read-only.
    const custom = await incremental(BROKER, '1', [{ name: 'frob', configOperation: 0, value: '3' }]);
    assert.deepEqual([custom.responses[0]!.errorCode, custom.responses[0]!.errorMessage], [0, null]);
    const frob = (await describe4(BROKER, '1', ['frob'])).results[0]!.configs;
    assert.deepEqual(
      frob.map((c) => [c.name, c.value, c.configSource, c.isSensitive, c.readOnly, c.configType, c.synonyms]),
      [['frob', null, 2, true, true, 0, [{ name: 'frob', value: null, source: 2 }]]],
    );
    const appendUnknown = await incremental(BROKER, '1', [{ name: 'frob', configOperation: 2, value: '3' }]);
    assert.deepEqual(
      [appendUnknown.responses[0]!.errorCode, appendUnknown.responses[0]!.errorMessage],
      [40, 'Unknown config name: frob'],
    );
    const appendLong = await incremental(BROKER, '1', [
      { name: 'log.retention.ms', configOperation: 2, value: '3' },
    ]);
    assert.deepEqual(
      [appendLong.responses[0]!.errorCode, appendLong.responses[0]!.errorMessage],
      [40, 'Config value append is not allowed for config key: log.retention.ms'],
    );
    const badValue = await incremental(BROKER, '1', [
      { name: 'log.retention.ms', configOperation: 0, value: 'soon' },
    ]);
    assert.deepEqual(
      [badValue.responses[0]!.errorCode, badValue.responses[0]!.errorMessage],
      [42, 'Invalid value soon for configuration log.retention.ms: Not a number of type LONG'],
    );
    const twice = await incremental(BROKER, '1', [
      { name: 'frob', configOperation: 0, value: '3' },
      { name: 'frob', configOperation: 1, value: null },
    ]);
    assert.deepEqual(
      [twice.responses[0]!.errorCode, twice.responses[0]!.errorMessage],
      [42, 'Error due to duplicate config keys'],
    );
    const nulls = await incremental(BROKER, '1', [
      { name: 'frob', configOperation: 0, value: null },
      { name: 'log.retention.ms', configOperation: 2, value: null },
      { name: 'log.cleanup.policy', configOperation: 1, value: null },
    ]);
    assert.deepEqual(
      [nulls.responses[0]!.errorCode, nulls.responses[0]!.errorMessage],
      [42, 'Null value not supported for : frob, log.retention.ms'],
    );
    await incremental(BROKER, '1', [{ name: 'frob', configOperation: 1, value: null }]);
    const sameResource = await b.call<IncrementalAlterConfigsResponse>(conn, 44, 1, {
      resources: [
        { resourceType: BROKER, resourceName: '1', configs: [] },
        { resourceType: TOPIC, resourceName: 'cfg', configs: [] },
        { resourceType: BROKER, resourceName: '1', configs: [] },
      ],
      validateOnly: true,
    });
    assert.deepEqual(
      sameResource.responses.map((r) => [r.resourceName, r.errorCode, r.errorMessage]),
      [
        ['1', 42, 'Each resource must appear at most once.'],
        ['cfg', 0, null],
        ['1', 42, 'Each resource must appear at most once.'],
      ],
    );
    const lag = await incremental(BROKER, '1', [
      { name: 'replica.lag.time.max.ms', configOperation: 0, value: '5000' },
    ]);
    assert.equal(lag.responses[0]!.errorCode, 0);
    assert.equal(b.broker.currentConfig('replica.lag.time.max.ms'), 5000n, 'read at run time, no restart');
    assert.equal(b.broker.currentConfig('log.retention.hours'), 2, 'static properties underneath');
    const seg = await incremental(BROKER, '', [
      { name: 'log.segment.bytes', configOperation: 0, value: '2097152' },
    ]);
    assert.equal(seg.responses[0]!.errorCode, 0);
    assert.equal(b.broker.logManager.getLog('cfg', 1)!.config.segmentBytes, 2_097_152);
    const d = await describe4(BROKER, '1', ['replica.lag.time.max.ms', 'log.segment.bytes']);
    const byName = new Map(d.results[0]!.configs.map((c) => [c.name, c]));
    assert.equal(byName.get('replica.lag.time.max.ms')!.configSource, 2); // DYNAMIC_BROKER_CONFIG
    assert.equal(byName.get('log.segment.bytes')!.configSource, 3); // DYNAMIC_DEFAULT_BROKER_CONFIG
    const dflt = await describe4(BROKER, '', null);
    assert.deepEqual(
      dflt.results[0]!.configs.map((c) => c.name),
      ['log.segment.bytes'],
    );
  });

  it('AlterConfigs replaces the whole dynamic set of a topic; nulls are refused', async () => {
    const r = await b.call<AlterConfigsResponse>(conn, 33, 2, {
      resources: [
        { resourceType: TOPIC, resourceName: 'cfg', configs: [{ name: 'retention.bytes', value: '1000' }] },
      ],
      validateOnly: false,
    });
    assert.equal(r.responses[0]!.errorCode, 0);
    assert.deepEqual(b.metadata.image().topicConfigs.get('cfg'), { 'retention.bytes': '1000' });
    assert.equal(b.broker.logManager.getLog('cfg', 0)!.config.retentionBytes, 1000);
    const nul = await b.call<AlterConfigsResponse>(conn, 33, 0, {
      resources: [
        { resourceType: TOPIC, resourceName: 'cfg', configs: [{ name: 'retention.bytes', value: null }] },
      ],
      validateOnly: false,
    });
    assert.equal(nul.responses[0]!.errorCode, 42);
    const validateOnly = await b.call<AlterConfigsResponse>(conn, 33, 1, {
      resources: [
        { resourceType: TOPIC, resourceName: 'cfg', configs: [{ name: 'retention.bytes', value: '5' }] },
      ],
      validateOnly: true,
    });
    assert.equal(validateOnly.responses[0]!.errorCode, 0);
    assert.deepEqual(b.metadata.image().topicConfigs.get('cfg'), { 'retention.bytes': '1000' });
  });

  // Kafka (3.7+, effectiveMinIsr) counts min.insync.replicas as at most the replication factor: on
  // this one-broker cluster an RF-1 topic with min.insync.replicas=2 still takes acks=-1 writes.
  // Refusals below a committed ISR are asserted where the ISR can shrink (test/sim, test/cluster).
  it('a dynamic min.insync.replicas above the replication factor counts as the RF (effectiveMinIsr)', async () => {
    const produce = (acks: number) =>
      b.call<ProduceResponse>(conn, 0, 9, {
        transactionalId: null,
        acks,
        timeoutMs: 1000,
        topicData: [{ name: 'cfg', partitionData: [{ index: 0, records: batch(1) }] }],
      });
    await incremental(TOPIC, 'cfg', [{ name: 'min.insync.replicas', configOperation: 0, value: '2' }]);
    assert.equal(b.metadata.image().topicConfigs.get('cfg')!['min.insync.replicas'], '2');
    assert.equal((await produce(-1)).responses[0]!.partitionResponses[0]!.errorCode, 0);
    assert.equal((await produce(1)).responses[0]!.partitionResponses[0]!.errorCode, 0);
    await incremental(TOPIC, 'cfg', [{ name: 'min.insync.replicas', configOperation: 1, value: null }]);
    assert.equal((await produce(-1)).responses[0]!.partitionResponses[0]!.errorCode, 0);
  });

  it('DescribeLogDirs: partitions with their .log sizes, offsetLag 0 on the leader, disk space (v4)', async () => {
    const produced = await b.call<ProduceResponse>(conn, 0, 9, {
      transactionalId: null,
      acks: 1,
      timeoutMs: 1000,
      topicData: [{ name: 'cfg', partitionData: [{ index: 1, records: batch(5) }] }],
    });
    assert.equal(produced.responses[0]!.partitionResponses[0]!.errorCode, 0);
    const r = await b.call<DescribeLogDirsResponse>(conn, 35, 4, {
      topics: [{ topic: 'cfg', partitions: [0, 1] }],
    });
    assert.equal(r.errorCode, 0);
    assert.equal(r.results.length, 1);
    const dir = r.results[0]!;
    assert.equal(dir.logDir, path.resolve(b.dir, 'logs'));
    assert.ok(dir.totalBytes > 0n && dir.usableBytes > 0n && dir.usableBytes <= dir.totalBytes);
    const parts = dir.topics[0]!.partitions.sort((x, y) => x.partitionIndex - y.partitionIndex);
    assert.equal(parts[0]!.partitionSize, BigInt(b.broker.logManager.getLog('cfg', 0)!.size));
    assert.equal(parts[1]!.partitionSize, BigInt(b.broker.logManager.getLog('cfg', 1)!.size));
    assert.ok(parts[1]!.partitionSize > 0n);
    assert.ok(parts.every((p) => p.offsetLag === 0n && !p.isFutureKey));
    const all = await b.call<DescribeLogDirsResponse>(conn, 35, 1, { topics: null });
    assert.ok(all.results[0]!.topics.some((t) => t.name === 'cfg'));
  });
});
