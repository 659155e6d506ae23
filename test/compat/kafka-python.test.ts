/**
 * kafka-python (Debian python3-kafka, /usr/bin/python3) against `skiff broker` as a child process:
 * KafkaAdminClient create_topics / describe_topics / describe_configs (topic and broker) /
 * alter_configs / list_topics, a producer,
 * and a consumer group that commits, closes, and resumes where it left off; create_topics (v3, an
 * old version: Kafka's permissive controller mutation quota) over a controller_mutation_rate.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { BrokerProcess } from '../support/broker-process.js';
import { scrape } from '../support/prometheus.js';
import { runPython, setControllerMutationRate, startCompatBroker } from './clients.js';

const SCRIPT = `
import json, sys, time
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

bs = sys.argv[1]
out = {}
admin = KafkaAdminClient(bootstrap_servers=bs, client_id='py-admin', request_timeout_ms=10000)
admin.create_topics([NewTopic('py-topic', num_partitions=2, replication_factor=1, topic_configs={'retention.ms': '3600000'})])
topics = admin.describe_topics(['py-topic'])
out['describe_topics'] = [{'topic': t['topic'], 'partitions': len(t['partitions']), 'error': t['error_code']} for t in topics]
cfg = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, 'py-topic')])
entries = {c[0]: c[1] for c in cfg[0].resources[0][4]}
out['retention.ms'] = entries.get('retention.ms')
out['list_topics'] = sorted(t for t in admin.list_topics() if not t.startswith('__'))
broker_cfg = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, '1')])
out['broker.group.initial.rebalance.delay.ms'] = {c[0]: c[1] for c in broker_cfg[0].resources[0][4]}.get('group.initial.rebalance.delay.ms')
altered = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, 'py-topic', configs={'retention.ms': '7200000'})])
out['alter_configs'] = [r[0] for r in altered.resources]
cfg = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, 'py-topic')])
out['retention.ms.after'] = {c[0]: c[1] for c in cfg[0].resources[0][4]}.get('retention.ms')
admin.close()

producer = KafkaProducer(bootstrap_servers=bs, client_id='py-producer', acks='all')
for i in range(20):
    producer.send('py-topic', key=b'k%d' % i, value=b'v%d' % i)
producer.flush()
producer.close()

def consume(n):
    c = KafkaConsumer('py-topic', group_id='py-group', bootstrap_servers=bs, client_id='py-consumer',
                      auto_offset_reset='earliest', enable_auto_commit=False, max_poll_records=n,
                      session_timeout_ms=6000, heartbeat_interval_ms=500)
    got = []
    deadline = time.time() + 20
    while len(got) < n and time.time() < deadline:
        for tp, records in c.poll(timeout_ms=500, max_records=n - len(got)).items():
            got.extend(r.value.decode() for r in records)
    c.commit()
    c.close()
    return got

out['first'] = consume(10)
out['second'] = consume(10)
print(json.dumps(out))
`;

const MUTATION_SCRIPT = `
import json, sys
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], client_id='py-mutator', request_timeout_ms=10000)
r = admin.create_topics([NewTopic('py-m1', 1, 1), NewTopic('py-m2', 1, 1)])
admin.close()
print(json.dumps({'version': r.API_VERSION, 'throttle_time_ms': r.throttle_time_ms,
                  'errors': sorted([t[0], t[1]] for t in r.topic_errors)}))
`;

interface Result {
  describe_topics: { topic: string; partitions: number; error: number }[];
  'retention.ms': string;
  list_topics: string[];
  'broker.group.initial.rebalance.delay.ms': string;
  alter_configs: number[];
  'retention.ms.after': string;
  first: string[];
  second: string[];
}

describe('kafka-python (python3-kafka) against skiff broker', () => {
  let broker: BrokerProcess;
  before(async () => {
    broker = await startCompatBroker(['http.listeners=http://127.0.0.1:0']);
  });
  after(async () => {
    await broker?.stop();
  });

  it('admin creates and describes topics; a group commits, closes and resumes where it left off', async () => {
    const r = await runPython<Result>(SCRIPT, broker.bootstrap, 'kafka', 'python3-kafka');
    assert.deepEqual(r.describe_topics, [{ topic: 'py-topic', partitions: 2, error: 0 }]);
    assert.equal(r['retention.ms'], '3600000');
    assert.deepEqual(r.list_topics, ['py-topic']);
    assert.equal(r['broker.group.initial.rebalance.delay.ms'], '0');
    assert.deepEqual(r.alter_configs, [0]);
    assert.equal(r['retention.ms.after'], '7200000');
    assert.equal(r.first.length, 10);
    assert.equal(r.second.length, 10);
    const all = [...r.first, ...r.second];
    assert.equal(new Set(all).size, 20, `no record twice: ${all.join(' ')}`);
    assert.deepEqual([...all].sort(), Array.from({ length: 20 }, (_, i) => `v${i}`).sort());
  });

  it('create_topics (v3) over controller_mutation_rate: every topic created, the response throttled', async () => {
    // 0.01 partitions/s, a bucket of 0.11: two 1-partition topics take it to -1.89, 189 s to refill.
    await setControllerMutationRate(broker.port, 'py-mutator', 0.01);
    const r = await runPython<{ version: number; throttle_time_ms: number; errors: [string, number][] }>(
      MUTATION_SCRIPT,
      broker.bootstrap,
      'kafka',
      'python3-kafka',
    );
    assert.equal(r.version, 3);
    assert.deepEqual(r.errors, [
      ['py-m1', 0],
      ['py-m2', 0],
    ]);
    assert.ok(
      r.throttle_time_ms > 185_000 && r.throttle_time_ms <= 189_000,
      `throttle ${r.throttle_time_ms} ms`,
    );
    const url = /metrics on (http:\/\/\S+\/metrics)/.exec(broker.output())?.[1];
    assert.ok(url, `the broker serves metrics:\n${broker.output()}`);
    const e = await scrape(url);
    const entity = { quota_type: 'controller_mutation', client_id: 'py-mutator' };
    assert.equal(e.sum('skiff_client_quota_limit', entity), 0.01);
    assert.ok(e.sum('skiff_client_quota_mutation_rate', entity) > 0);
    const tokens = e.sum('skiff_client_quota_tokens', entity);
    assert.ok(tokens < -1.85 && tokens >= -1.89, `tokens ${tokens}`);
    assert.ok(e.sum('skiff_client_quota_throttle_time_ms', entity) > 185_000);
  });
});
