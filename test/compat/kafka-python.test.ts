/**
 * kafka-python (Debian python3-kafka, /usr/bin/python3) against `skiff broker` as a child process:
 * KafkaAdminClient create_topics / describe_topics / describe_configs (topic and broker) /
 * alter_configs / list_topics, a producer,
 * and a consumer group that commits, closes, and resumes where it left off.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { BrokerProcess } from '../support/broker-process.js';
import { runPython, startCompatBroker } from './clients.js';

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
    broker = await startCompatBroker();
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
});
