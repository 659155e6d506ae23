/**
 * librdkafka through python3-confluent-kafka (/usr/bin/python3) against `skiff broker` as a child
 * process: admin create_topics, an idempotent producer, and a consumer group that commits, closes,
 * and resumes where it left off (committed offsets checked too).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { BrokerProcess } from '../support/broker-process.js';
import { runPython, startCompatBroker } from './clients.js';

const SCRIPT = `
import json, sys, time
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

bs = sys.argv[1]
out = {}
admin = AdminClient({'bootstrap.servers': bs})
for f in admin.create_topics([NewTopic('rd-topic', num_partitions=3, replication_factor=1)]).values():
    f.result(10)
p = Producer({'bootstrap.servers': bs, 'enable.idempotence': True, 'linger.ms': 5})
for i in range(30):
    p.produce('rd-topic', key=b'k%d' % i, value=b'v%d' % i)
p.flush(10)

def consume(n):
    c = Consumer({'bootstrap.servers': bs, 'group.id': 'rd-group', 'auto.offset.reset': 'earliest',
                  'enable.auto.commit': False, 'session.timeout.ms': 6000, 'heartbeat.interval.ms': 500})
    c.subscribe(['rd-topic'])
    got = []
    deadline = time.time() + 20
    while len(got) < n and time.time() < deadline:
        for m in c.consume(num_messages=n - len(got), timeout=0.5):
            if m.error():
                raise Exception(str(m.error()))
            got.append(m.value().decode())
    c.commit(asynchronous=False)
    committed = c.committed([TopicPartition('rd-topic', i) for i in range(3)], timeout=10)
    c.close()
    return got, sum(tp.offset for tp in committed if tp.offset >= 0)

out['first'], out['committed_first'] = consume(15)
out['second'], out['committed_second'] = consume(15)
print(json.dumps(out))
`;

interface Result {
  first: string[];
  committed_first: number;
  second: string[];
  committed_second: number;
}

describe('librdkafka (python3-confluent-kafka) against skiff broker', () => {
  let broker: BrokerProcess;
  before(async () => {
    broker = await startCompatBroker();
  });
  after(async () => {
    await broker?.stop();
  });

  it('an idempotent producer, then a group that commits, closes and resumes where it left off', async () => {
    const r = await runPython<Result>(SCRIPT, broker.bootstrap, 'confluent_kafka', 'python3-confluent-kafka');
    assert.equal(r.first.length, 15);
    assert.equal(r.committed_first, 15);
    assert.equal(r.second.length, 15);
    assert.equal(r.committed_second, 30);
    const all = [...r.first, ...r.second];
    assert.deepEqual([...all].sort(), Array.from({ length: 30 }, (_, i) => `v${i}`).sort());
  });
});
