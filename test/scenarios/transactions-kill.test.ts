/**
 * Transactions through a SIGKILL, on a 3-broker `skiff up` cluster: librdkafka's transactional
 * producer (python3-confluent-kafka) runs short transactions over the 3 partitions of an RF 3
 * topic while the transaction coordinator's broker, and in a second run a partition leader, is
 * killed and started again. Every transaction ends committed or aborted: a read_committed consumer
 * sees every committed transaction whole, no aborted record, and each transaction whose outcome the
 * producer could not learn either whole or not at all; no partition is left with an open
 * transaction (the LSO moves again) and `skiff transactions find-hanging` finds none.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { runPython } from '../compat/clients.js';
import { ScenarioCluster, sleep } from './harness.js';

let cluster: ScenarioCluster;

before(async () => {
  cluster = await ScenarioCluster.start({
    name: 'txn-kill',
    properties: [
      'group.initial.rebalance.delay.ms=0',
      'transaction.state.log.num.partitions=3',
      'offsets.topic.num.partitions=3',
    ],
    brokers: 3,
  });
  for (const topic of ['kill-coord', 'kill-leader']) {
    await cluster.createTopic(topic, {
      assignments: [
        [1, 2, 3],
        [2, 3, 1],
        [3, 1, 2],
      ],
    });
  }
});

after(async () => {
  await cluster?.close();
});

interface Outcome {
  committed: string[][];
  aborted: string[][];
  unknown: string[][];
  rc: string[];
}

/**
 * Runs transactions of 30 records for `seconds`: a transaction whose commit returned is committed,
 * one the producer aborted is aborted, one whose commit failed without a verdict is unknown. Then
 * reads the topic read_committed from the start.
 */
function produceFor(topic: string, transactionalId: string, seconds: number): Promise<Outcome> {
  const script = `
import json, sys, time
from confluent_kafka import Consumer, Producer, KafkaException, TopicPartition
bootstrap = sys.argv[1]
conf = {'bootstrap.servers': bootstrap, 'transactional.id': '${transactionalId}', 'linger.ms': 5,
        'transaction.timeout.ms': 10000, 'message.timeout.ms': 9000}
p = Producer(conf)
p.init_transactions(60)
out = {'committed': [], 'aborted': [], 'unknown': []}
n = 0
end = time.time() + ${seconds}
while time.time() < end:
    values = ['${topic}-%d-%d' % (n, i) for i in range(30)]
    n += 1
    try:
        p.begin_transaction()
        for i, v in enumerate(values):
            p.produce('${topic}', value=v.encode(), partition=i % 3)
        p.commit_transaction(30)
        out['committed'].append(values)
    except KafkaException as e:
        err = e.args[0]
        if err.txn_requires_abort():
            try:
                p.abort_transaction(30)
                out['aborted'].append(values)
            except KafkaException:
                out['unknown'].append(values)
                p = Producer(conf)
                p.init_transactions(60)
        else:
            out['unknown'].append(values)
            if err.fatal():
                p = Producer(conf)
                p.init_transactions(60)
            else:
                try:
                    p.abort_transaction(30)
                except KafkaException:
                    p = Producer(conf)
                    p.init_transactions(60)
c = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'check-${topic}', 'enable.auto.commit': False,
              'isolation.level': 'read_committed'})
c.assign([TopicPartition('${topic}', i, 0) for i in range(3)])
want = sum(len(v) for v in out['committed'])
rc = []
stop = time.time() + 30
while time.time() < stop and len(rc) < want:
    rc.extend(m.value().decode() for m in c.consume(num_messages=1000, timeout=0.5) if not m.error())
rc.extend(m.value().decode() for m in c.consume(num_messages=1000, timeout=2) if not m.error())
c.close()
out['rc'] = rc
print(json.dumps(out))
`;
  return runPython<Outcome>(script, cluster.bootstrap, 'confluent_kafka', 'python3-confluent-kafka', 150_000);
}

function checkOutcome(o: Outcome): void {
  assert.ok(o.committed.length > 0, 'some transactions committed');
  const seen = new Set(o.rc);
  assert.equal(seen.size, o.rc.length, 'no record twice');
  for (const t of o.committed)
    assert.deepEqual(
      t.filter((v) => !seen.has(v)),
      [],
      'a committed transaction whole',
    );
  for (const t of o.aborted)
    assert.deepEqual(
      t.filter((v) => seen.has(v)),
      [],
      'no aborted record',
    );
  for (const t of o.unknown) {
    const visible = t.filter((v) => seen.has(v)).length;
    assert.ok(
      visible === 0 || visible === t.length,
      `a transaction half visible (${visible} of ${t.length})`,
    );
  }
  const known = new Set([...o.committed, ...o.unknown].flat());
  assert.deepEqual(
    o.rc.filter((v) => !known.has(v)),
    [],
    'nothing that was not written in a transaction',
  );
}

/** After the run: no partition of `topic` holds an open transaction, and find-hanging finds none. */
async function checkSettled(topic: string): Promise<void> {
  for (let p = 0; p < 3; p++) {
    const r = await cluster.tool('transactions', [
      'describe-producers',
      '--topic',
      topic,
      '--partition',
      String(p),
    ]);
    assert.equal(r.status, 0, r.stderr);
    const open = r.stdout
      .split('\n')
      .slice(1, -1)
      .filter((l) => l.split('\t')[5]!.trim() !== 'None');
    assert.deepEqual(open, [], `${topic}-${p}: no open transaction`);
  }
  const hanging = await cluster.tool('transactions', [
    'find-hanging',
    '--topic',
    topic,
    '--max-transaction-timeout',
    '0',
  ]);
  assert.equal(hanging.status, 0, hanging.stderr);
  assert.equal(hanging.stdout.split('\n').length, 2, `only the header: ${hanging.stdout}`);
}

/** The broker coordinating `transactionalId` (`skiff transactions describe`). */
async function coordinatorOf(transactionalId: string): Promise<number> {
  for (let i = 0; ; i++) {
    const r = await cluster.tool('transactions', ['describe', '--transactional-id', transactionalId]);
    if (r.status === 0) return Number(r.stdout.split('\n')[1]!.split('\t')[0]!.trim());
    if (i >= 50) assert.fail(`no coordinator for ${transactionalId}: ${r.stderr}`);
    await sleep(200);
  }
}

test('SIGKILL of the transaction coordinator in the middle of transactions', async () => {
  const run = produceFor('kill-coord', 'tx-kill-coord', 14);
  const victim = await coordinatorOf('tx-kill-coord');
  await sleep(3_000);
  await cluster.stopBroker(victim, { kill: true });
  await sleep(3_000);
  await cluster.startBroker(victim);
  const outcome = await run;
  checkOutcome(outcome);
  await checkSettled('kill-coord');
});

test('SIGKILL of a partition leader in the middle of transactions', async () => {
  const run = produceFor('kill-leader', 'tx-kill-leader', 14);
  await sleep(3_000);
  const { leader } = await cluster.partition('kill-leader', 0);
  await cluster.stopBroker(leader, { kill: true });
  await sleep(3_000);
  await cluster.startBroker(leader);
  const outcome = await run;
  checkOutcome(outcome);
  await checkSettled('kill-leader');
});
