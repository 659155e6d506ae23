import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BROKER_CONFIG_DEFS, BROKER_CONFIGS, TOPIC_CONFIGS } from '../../src/metadata/config-defs.js';
import {
  brokerConfigValue,
  type ConfigLayers,
  describeBrokerConfigs,
  describeClusterDefaultConfigs,
  describeTopicConfigs,
  effectiveTopicConfig,
  layersFor,
  parseConfigValue,
  resolveBrokerConfig,
  resolveTopicConfig,
  validateDynamicBrokerConfigs,
  validateTopicConfigs,
} from '../../src/metadata/config-resolve.js';
import { parseProperties } from '../../src/metadata/properties.js';

describe('config definitions', () => {
  it('every default parses and satisfies its own validator; names are unique', () => {
    for (const def of [...TOPIC_CONFIGS, ...BROKER_CONFIGS]) {
      if (def.defaultValue !== null)
        assert.doesNotThrow(() => parseConfigValue(def, def.defaultValue!), def.name);
    }
    assert.equal(new Set(TOPIC_CONFIGS.map((d) => d.name)).size, TOPIC_CONFIGS.length);
    assert.equal(new Set(BROKER_CONFIGS.map((d) => d.name)).size, BROKER_CONFIGS.length);
  });

  it('every topic synonym is a broker config, and the first synonym is dynamic', () => {
    for (const t of TOPIC_CONFIGS) {
      for (const s of t.synonyms ?? []) assert.ok(BROKER_CONFIG_DEFS.has(s.name), `${t.name} ← ${s.name}`);
      const first = t.synonyms?.[0];
      if (first !== undefined) assert.equal(BROKER_CONFIG_DEFS.get(first.name)?.dynamic, true, first.name);
    }
  });

  it('covers the configs the seeds and the reference name', () => {
    for (const name of [
      'replica.lag.time.max.ms',
      'num.replica.fetchers',
      'leader.replication.throttled.rate',
      'follower.replication.throttled.rate',
      'replica.alter.log.dirs.io.max.bytes.per.second',
      'replication.quota.window.num',
      'replication.quota.window.size.seconds',
      'auto.create.topics.enable',
      'num.partitions',
      'default.replication.factor',
      'message.max.bytes',
      'compression.type',
      'log.segment.delete.delay.ms',
      'broker.session.timeout.ms',
      'broker.heartbeat.interval.ms',
      'group.initial.rebalance.delay.ms',
      'group.min.session.timeout.ms',
      'group.max.session.timeout.ms',
      'offsets.topic.replication.factor',
      'offsets.topic.num.partitions',
      'socket.request.max.bytes',
      'connections.max.idle.ms',
      'auto.leader.rebalance.enable',
      'leader.imbalance.check.interval.seconds',
      'controlled.shutdown.enable',
      'min.insync.replicas',
      'unclean.leader.election.enable',
      'transaction.state.log.replication.factor',
      'replica.fetch.max.bytes',
    ]) {
      assert.ok(BROKER_CONFIG_DEFS.has(name), name);
    }
  });
});

describe('config validation', () => {
  it('accepts good topic configs and deletions', () => {
    assert.equal(
      validateTopicConfigs({
        'retention.ms': '1000',
        'cleanup.policy': 'compact,delete',
        'min.insync.replicas': null,
      }).errorCode,
      0,
    );
    assert.equal(validateTopicConfigs({ 'leader.replication.throttled.replicas': '0:1,1:2' }).errorCode, 0);
    assert.equal(validateTopicConfigs({ 'follower.replication.throttled.replicas': '*' }).errorCode, 0);
  });

  it('refuses unknown names and bad values with INVALID_CONFIG', () => {
    assert.deepEqual(validateTopicConfigs({ 'retention.mss': '1' }), {
      errorCode: 40,
      errorMessage: 'Unknown topic config name: retention.mss',
    });
    assert.deepEqual(validateTopicConfigs({ 'retention.ms': 'abc' }), {
      errorCode: 40,
      errorMessage: 'Invalid value abc for configuration retention.ms: Not a number of type LONG',
    });
    assert.deepEqual(validateTopicConfigs({ 'min.insync.replicas': '0' }), {
      errorCode: 40,
      errorMessage: 'Invalid value 0 for configuration min.insync.replicas: Value must be at least 1',
    });
    assert.equal(validateTopicConfigs({ 'cleanup.policy': 'shred' }).errorCode, 40);
    assert.equal(validateTopicConfigs({ 'compression.type': 'brotli' }).errorCode, 40);
    assert.equal(validateTopicConfigs({ 'unclean.leader.election.enable': 'yes' }).errorCode, 40);
    assert.equal(validateTopicConfigs({ 'min.cleanable.dirty.ratio': '1.5' }).errorCode, 40);
    assert.equal(validateTopicConfigs({ 'segment.bytes': '99999999999' }).errorCode, 40);
    assert.equal(validateTopicConfigs({ 'leader.replication.throttled.replicas': '0-1' }).errorCode, 40);
  });

  it("accepts broker names Kafka does not know (custom configs); a bad value is INVALID_REQUEST, as Kafka's", () => {
    assert.equal(validateDynamicBrokerConfigs({ 'no.such.config': '1' }).errorCode, 0);
    assert.deepEqual(validateDynamicBrokerConfigs({ 'no.such.config': '1', 'log.dirs': '/x' }), {
      errorCode: 42,
      errorMessage: 'Cannot update these configs dynamically: Set(log.dirs)',
    });
    assert.deepEqual(validateDynamicBrokerConfigs({ 'log.retention.ms': 'abc' }), {
      errorCode: 42,
      errorMessage: 'Invalid value abc for configuration log.retention.ms: Not a number of type LONG',
    });
  });

  it('refuses static broker configs with INVALID_REQUEST, but replica.lag.time.max.ms is dynamic in Skiff', () => {
    assert.deepEqual(validateDynamicBrokerConfigs({ 'replica.fetch.max.bytes': '1', 'log.dirs': '/x' }), {
      errorCode: 42,
      errorMessage: 'Cannot update these configs dynamically: Set(replica.fetch.max.bytes, log.dirs)',
    });
    assert.equal(validateDynamicBrokerConfigs({ 'replica.lag.time.max.ms': '5000' }).errorCode, 0);
    assert.equal(
      validateDynamicBrokerConfigs({ 'follower.replication.throttled.rate': '1000000' }).errorCode,
      0,
    );
    assert.equal(validateDynamicBrokerConfigs({ 'replica.lag.time.max.ms': '-5' }).errorCode, 42);
  });
});

describe('config resolution', () => {
  it('topic dynamic > broker dynamic > cluster default > static > built-in default, with synonyms', () => {
    const layers = {
      topic: { 'retention.ms': '1000' },
      broker: { 'log.retention.ms': '2000' },
      clusterDefault: { 'log.retention.ms': '3000' },
      staticProps: { 'log.retention.hours': '1' },
    };
    const r = resolveTopicConfig('retention.ms', layers);
    assert.equal(r.value, '1000');
    assert.equal(r.source, 'DYNAMIC_TOPIC_CONFIG');
    assert.equal(resolveTopicConfig('retention.ms', { ...layers, topic: {} }).value, '2000');
    assert.equal(
      resolveTopicConfig('retention.ms', { ...layers, topic: {}, broker: {} }).source,
      'DYNAMIC_DEFAULT_BROKER_CONFIG',
    );
    const fromHours = resolveTopicConfig('retention.ms', { staticProps: { 'log.retention.hours': '1' } });
    assert.deepEqual([fromHours.value, fromHours.source], ['3600000', 'STATIC_BROKER_CONFIG']);
    const builtIn = resolveTopicConfig('retention.ms', {});
    assert.deepEqual([builtIn.value, builtIn.source], ['604800000', 'DEFAULT_CONFIG']);
    assert.equal(
      resolveTopicConfig('segment.ms', { clusterDefault: { 'log.roll.ms': '60000' } }).value,
      '60000',
    );
    assert.equal(resolveTopicConfig('leader.replication.throttled.replicas', {}).value, '');
  });

  // Kafka's ConfigHelper.configSynonyms: the group's names set at each layer (per broker, cluster
  // default, static, non-null defaults), everything before the first entry of the asked name dropped.
  const described = (
    configs: readonly {
      name: string;
      value: string | null;
      source: string;
      synonyms: readonly { name: string; value: string | null; source: string }[];
    }[],
    name: string,
  ) => {
    const c = configs.find((x) => x.name === name)!;
    return [`${c.name}=${c.value} ${c.source}`, ...c.synonyms.map((s) => `${s.source}:${s.name}=${s.value}`)];
  };
  const topic = (layers: ConfigLayers, name: string) => described(describeTopicConfigs(layers), name);
  const broker = (layers: ConfigLayers, name: string) => described(describeBrokerConfigs(layers), name);

  it("describes topic configs with Kafka's synonyms: only from the first broker synonym on", () => {
    // Nothing set: log.retention.hours' default comes before log.retention.ms in no layer, so none.
    assert.deepEqual(topic({}, 'retention.ms'), ['retention.ms=604800000 DEFAULT_CONFIG']);
    // Only log.retention.hours set: the value follows it, but Kafka lists no synonym and says DEFAULT_CONFIG.
    assert.deepEqual(topic({ staticProps: { 'log.retention.hours': '2' } }, 'retention.ms'), [
      'retention.ms=7200000 DEFAULT_CONFIG',
    ]);
    assert.deepEqual(topic({ topic: { 'retention.ms': '100000' } }, 'retention.ms'), [
      'retention.ms=100000 DYNAMIC_TOPIC_CONFIG',
      'DYNAMIC_TOPIC_CONFIG:retention.ms=100000',
    ]);
    assert.deepEqual(
      topic(
        {
          topic: { 'retention.ms': '1000' },
          broker: { 'log.retention.hours': '5', 'log.retention.ms': '2000' },
          clusterDefault: { 'log.retention.ms': '3000' },
          staticProps: { 'log.retention.hours': '1', 'log.retention.minutes': '30' },
        },
        'retention.ms',
      ),
      [
        'retention.ms=1000 DYNAMIC_TOPIC_CONFIG',
        'DYNAMIC_TOPIC_CONFIG:retention.ms=1000',
        'DYNAMIC_BROKER_CONFIG:log.retention.ms=2000',
        'DYNAMIC_BROKER_CONFIG:log.retention.hours=5',
        'DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=3000',
        'STATIC_BROKER_CONFIG:log.retention.minutes=30',
        'STATIC_BROKER_CONFIG:log.retention.hours=1',
        'DEFAULT_CONFIG:log.retention.hours=168',
      ],
    );
    // log.retention.ms static, hours dynamic: the dynamic hours entry comes first and is dropped.
    assert.deepEqual(
      topic(
        { broker: { 'log.retention.hours': '5' }, staticProps: { 'log.retention.ms': '60000' } },
        'retention.ms',
      ),
      [
        'retention.ms=18000000 STATIC_BROKER_CONFIG',
        'STATIC_BROKER_CONFIG:log.retention.ms=60000',
        'DEFAULT_CONFIG:log.retention.hours=168',
      ],
    );
    // A single-name synonym with a default.
    assert.deepEqual(topic({}, 'segment.bytes'), [
      'segment.bytes=1073741824 DEFAULT_CONFIG',
      'DEFAULT_CONFIG:log.segment.bytes=1073741824',
    ]);
    assert.deepEqual(topic({ clusterDefault: { 'log.segment.bytes': '2000000' } }, 'segment.bytes'), [
      'segment.bytes=2000000 DYNAMIC_DEFAULT_BROKER_CONFIG',
      'DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=2000000',
      'DEFAULT_CONFIG:log.segment.bytes=1073741824',
    ]);
    // flush.ms: log.flush.interval.ms has no default, so its scheduler synonym's default is dropped.
    assert.deepEqual(topic({}, 'flush.ms'), ['flush.ms=9223372036854775807 DEFAULT_CONFIG']);
    // A topic config with no broker synonym.
    assert.deepEqual(topic({}, 'leader.replication.throttled.replicas'), [
      'leader.replication.throttled.replicas= DEFAULT_CONFIG',
    ]);
  });

  it("describes broker configs with Kafka's synonyms and each name's own value", () => {
    // log.retention.ms is null in Kafka's KafkaConfig until set; the hours default is no synonym of it.
    assert.deepEqual(broker({}, 'log.retention.ms'), ['log.retention.ms=null DEFAULT_CONFIG']);
    assert.deepEqual(broker({}, 'log.retention.hours'), [
      'log.retention.hours=168 DEFAULT_CONFIG',
      'DEFAULT_CONFIG:log.retention.hours=168',
    ]);
    const layers = {
      broker: { 'log.retention.ms': '2000' },
      staticProps: { 'log.retention.hours': '1' },
    };
    assert.deepEqual(broker(layers, 'log.retention.ms'), [
      'log.retention.ms=2000 DYNAMIC_BROKER_CONFIG',
      'DYNAMIC_BROKER_CONFIG:log.retention.ms=2000',
      'STATIC_BROKER_CONFIG:log.retention.hours=1',
      'DEFAULT_CONFIG:log.retention.hours=168',
    ]);
    assert.deepEqual(broker(layers, 'log.retention.hours'), [
      'log.retention.hours=1 STATIC_BROKER_CONFIG',
      'STATIC_BROKER_CONFIG:log.retention.hours=1',
      'DEFAULT_CONFIG:log.retention.hours=168',
    ]);
    assert.deepEqual(broker({}, 'log.retention.minutes'), ['log.retention.minutes=null DEFAULT_CONFIG']);
    // The cluster-default entity: only what is set there, with the synonyms of that level.
    const defaults = describeClusterDefaultConfigs({
      broker: { 'log.retention.hours': '3' },
      clusterDefault: { 'log.retention.ms': '5000', 'log.retention.hours': '2' },
      staticProps: { 'log.retention.ms': '7000' },
    });
    assert.deepEqual(
      defaults.map((c) => described(defaults, c.name)),
      [
        [
          'log.retention.ms=5000 DYNAMIC_DEFAULT_BROKER_CONFIG',
          'DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5000',
          'DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.hours=2',
        ],
        // The per-broker log.retention.hours comes first, so nothing is dropped before the
        // filter to the cluster-default level: log.retention.ms stays in, as in Kafka's answer.
        [
          'log.retention.hours=2 DYNAMIC_DEFAULT_BROKER_CONFIG',
          'DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5000',
          'DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.hours=2',
        ],
      ],
    );
    const alone = describeClusterDefaultConfigs({
      clusterDefault: { 'log.retention.ms': '5000', 'log.retention.hours': '2' },
    });
    assert.deepEqual(described(alone, 'log.retention.hours'), [
      'log.retention.hours=2 DYNAMIC_DEFAULT_BROKER_CONFIG',
      'DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.hours=2',
    ]);
  });

  it('broker configs report their source and whether they are read-only', () => {
    const r = resolveBrokerConfig('replica.lag.time.max.ms', {
      broker: { 'replica.lag.time.max.ms': '5000' },
    });
    assert.deepEqual([r.value, r.source, r.readOnly], ['5000', 'DYNAMIC_BROKER_CONFIG', false]);
    const f = resolveBrokerConfig('replica.fetch.max.bytes', {
      staticProps: { 'replica.fetch.max.bytes': '2048' },
    });
    assert.deepEqual([f.value, f.source, f.readOnly], ['2048', 'STATIC_BROKER_CONFIG', true]);
    const m = resolveBrokerConfig('log.retention.ms', { staticProps: { 'log.retention.minutes': '2' } });
    assert.deepEqual([m.value, m.source], ['120000', 'STATIC_BROKER_CONFIG']);
    assert.equal(describeBrokerConfigs({}).length, BROKER_CONFIGS.length);
  });

  it('gives typed broker config values from an image', () => {
    const image = {
      brokerConfigs: new Map<string, Record<string, string>>([
        ['2', { 'replica.lag.time.max.ms': '5000' }],
        ['<default>', { 'follower.replication.throttled.rate': '1000', 'replica.lag.time.max.ms': '7000' }],
      ]),
      topicConfigs: new Map<string, Record<string, string>>([['t', { 'retention.ms': '1' }]]),
    };
    const b2 = layersFor(image, 2, { 'num.replica.fetchers': '4' });
    assert.equal(brokerConfigValue('replica.lag.time.max.ms', b2), 5000n);
    assert.equal(brokerConfigValue('replica.lag.time.max.ms', layersFor(image, 3, {})), 7000n);
    assert.equal(brokerConfigValue('follower.replication.throttled.rate', b2), 1000n);
    assert.equal(brokerConfigValue('num.replica.fetchers', b2), 4);
    // Unset, so its synonym log.retention.hours (168) supplies it, in milliseconds.
    assert.equal(brokerConfigValue('log.retention.ms', b2), 604800000n);
    assert.equal(brokerConfigValue('broker.rack', b2), null);
    assert.equal(resolveTopicConfig('retention.ms', layersFor(image, 2, {}, 't')).value, '1');
  });

  it('gives typed effective topic configs', () => {
    const eff = effectiveTopicConfig({ topic: { 'min.insync.replicas': '2' } });
    assert.equal(eff.get('min.insync.replicas'), 2);
    assert.equal(eff.get('retention.ms'), 604800000n);
    assert.deepEqual(eff.get('cleanup.policy'), ['delete']);
    assert.equal(eff.get('unclean.leader.election.enable'), false);
  });
});

describe('properties files', () => {
  it('parses Kafka-style server.properties', () => {
    const p = parseProperties(
      [
        '# comment',
        '! also a comment',
        'node.id=1',
        '  listeners = PLAINTEXT://127.0.0.1:9092',
        'log.dirs: /tmp/a,\\',
        '    /tmp/b',
        'key\\=with\\ escapes value',
        'unicode=\\u0041b',
        'empty=',
        'node.id=2',
      ].join('\n'),
    );
    assert.equal(p.get('node.id'), '2');
    assert.equal(p.get('listeners'), 'PLAINTEXT://127.0.0.1:9092');
    assert.equal(p.get('log.dirs'), '/tmp/a,/tmp/b');
    assert.equal(p.get('key=with escapes'), 'value');
    assert.equal(p.get('unicode'), 'Ab');
    assert.equal(p.get('empty'), '');
    assert.equal(p.size, 6);
  });
});
