/**
 * Transactions with librdkafka (python3-confluent-kafka) against a 3-broker cluster: a
 * transactional producer runs commit and abort cycles over the 3 partitions of an RF 3 topic; a
 * read_committed consumer sees exactly the committed records and a read_uncommitted one sees
 * everything; a second producer with the same transactional.id fences the first.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ScenarioCluster } from '../scenarios/harness.js';
import { runPython } from './clients.js';

const TXN_PROPS = [
  'group.initial.rebalance.delay.ms=0',
  'transaction.state.log.num.partitions=5',
  'offsets.topic.num.partitions=5',
];

let cluster: ScenarioCluster;

before(async () => {
  cluster = await ScenarioCluster.start({ name: 'txn-rdkafka', properties: TXN_PROPS, brokers: 3 });
  await cluster.createTopic('txn-cycles', {
    assignments: [
      [1, 2, 3],
      [2, 3, 1],
      [3, 1, 2],
    ],
  });
});

after(async () => {
  await cluster?.close();
});

/** Shared by the scripts: read every partition of a topic from the start at an isolation level. */
const CONSUME = `
import json, sys, time
from confluent_kafka import Consumer, Producer, KafkaException, KafkaError, TopicPartition

def consume(bootstrap, topic, isolation, expected, deadline_s=25, until=None):
    c = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'unused-' + isolation,
                  'enable.auto.commit': False, 'isolation.level': isolation,
                  'auto.offset.reset': 'earliest'})
    c.assign([TopicPartition(topic, p, 0) for p in range(3)])
    seen = []
    end = time.time() + deadline_s
    while len(seen) < expected and time.time() < end:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        seen.append(m.value().decode())
        if until is not None and until(seen):
            break
    c.close()
    return seen
`;

test('librdkafka: commit and abort cycles over 3 partitions; read_committed sees exactly the committed records', async () => {
  const script = `${CONSUME}
bootstrap = sys.argv[1]
p = Producer({'bootstrap.servers': bootstrap, 'transactional.id': 'rdkafka-cycles',
              'enable.idempotence': True, 'linger.ms': 5})
p.init_transactions(30)
committed, aborted = [], []
for cycle in range(6):
    commit = cycle % 2 == 1
    p.begin_transaction()
    for i in range(30):
        v = ('c' if commit else 'a') + '-%d-%d' % (cycle, i)
        p.produce('txn-cycles', value=v.encode(), partition=i % 3)
        (committed if commit else aborted).append(v)
    p.flush(30)
    if commit:
        p.commit_transaction(30)
    else:
        p.abort_transaction(30)
rc = consume(bootstrap, 'txn-cycles', 'read_committed', len(committed))
ru = consume(bootstrap, 'txn-cycles', 'read_uncommitted', len(committed) + len(aborted))
print(json.dumps({'committed': committed, 'aborted': aborted, 'rc': rc, 'ru': ru}))
`;
  const r = await runPython<{ committed: string[]; aborted: string[]; rc: string[]; ru: string[] }>(
    script,
    cluster.bootstrap,
    'confluent_kafka',
    'python3-confluent-kafka',
    55_000,
  );
  assert.deepEqual([...r.rc].sort(), [...r.committed].sort());
  assert.deepEqual([...r.ru].sort(), [...r.committed, ...r.aborted].sort());
});

test('librdkafka: a second producer with the same transactional.id fences the first', async () => {
  const script = `${CONSUME}
bootstrap = sys.argv[1]
conf = {'bootstrap.servers': bootstrap, 'transactional.id': 'rdkafka-fenced', 'enable.idempotence': True}
p1 = Producer(conf)
p1.init_transactions(30)
p1.begin_transaction()
p1.produce('txn-cycles', value=b'zombie', partition=0)
p1.flush(30)
p2 = Producer(conf)
p2.init_transactions(30)
outcome = None
try:
    p1.produce('txn-cycles', value=b'zombie-2', partition=1)
    p1.flush(30)
    p1.commit_transaction(30)
    outcome = {'error': None}
except KafkaException as e:
    err = e.args[0]
    outcome = {'error': err.name(), 'fatal': err.fatal()}
p2.begin_transaction()
p2.produce('txn-cycles', value=b'survivor', partition=0)
p2.commit_transaction(30)
# survivor follows the zombie's record in partition 0: once it is read, the zombie's would have been.
rc = consume(bootstrap, 'txn-cycles', 'read_committed', 10**9, until=lambda seen: 'survivor' in seen)
print(json.dumps({'outcome': outcome, 'zombie': [v for v in rc if v.startswith('zombie')], 'survivor': rc.count('survivor')}))
`;
  const r = await runPython<{
    outcome: { error: string | null; fatal?: boolean };
    zombie: string[];
    survivor: number;
  }>(script, cluster.bootstrap, 'confluent_kafka', 'python3-confluent-kafka', 55_000);
  assert.ok(
    r.outcome.error === '_FENCED' ||
      r.outcome.error === 'PRODUCER_FENCED' ||
      r.outcome.error === 'INVALID_PRODUCER_EPOCH',
    `the fenced producer's commit failed with ${r.outcome.error}`,
  );
  assert.equal(r.outcome.fatal, true);
  assert.deepEqual(r.zombie, []);
  assert.equal(r.survivor, 1);
});
