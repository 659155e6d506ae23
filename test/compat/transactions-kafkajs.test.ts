/**
 * Transactions with KafkaJS (in this process) against a 3-broker cluster: a transactional producer
 * runs commit and abort cycles over the 3 partitions of an RF 3 topic; a read_committed consumer
 * (KafkaJS's default) sees exactly the committed records, a readUncommitted one everything; a
 * second producer with the same transactionalId fences the first.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import { ScenarioCluster } from '../scenarios/harness.js';

const TXN_PROPS = [
  'group.initial.rebalance.delay.ms=0',
  'group.min.session.timeout.ms=1000',
  'transaction.state.log.num.partitions=5',
  'offsets.topic.num.partitions=5',
];
const TOPIC = 'kjs-txn-cycles';

let cluster: ScenarioCluster;
let kafka: Kafka;

before(async () => {
  cluster = await ScenarioCluster.start({ name: 'txn-kafkajs', properties: TXN_PROPS, brokers: 3 });
  await cluster.createTopic(TOPIC, {
    assignments: [
      [1, 2, 3],
      [2, 3, 1],
      [3, 1, 2],
    ],
  });
  kafka = new Kafka({
    clientId: 'skiff-kjs-txn',
    brokers: cluster.bootstrap.split(','),
    logLevel: logLevel.NOTHING,
  });
});

after(async () => {
  await cluster?.close();
});

/** Reads the topic from the start in a fresh group until `done` holds (or fails after 30 s). */
async function consume(readUncommitted: boolean, done: (seen: string[]) => boolean): Promise<string[]> {
  const consumer = kafka.consumer({
    groupId: `kjs-txn-${readUncommitted ? 'ru' : 'rc'}-${Math.random().toString(36).slice(2)}`,
    readUncommitted,
    sessionTimeout: 6_000,
    heartbeatInterval: 300,
    maxWaitTimeInMs: 300,
  });
  const seen: string[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    let resolve!: () => void;
    const finished = new Promise<void>((r) => {
      resolve = r;
    });
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen.push(message.value!.toString());
        if (done(seen)) resolve();
      },
    });
    const timer = new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`consumed only ${seen.length} records`)), 30_000).unref(),
    );
    await Promise.race([finished, timer]);
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

test('KafkaJS: commit and abort cycles over 3 partitions; read_committed sees exactly the committed records', async () => {
  const producer = kafka.producer({
    transactionalId: 'kjs-cycles',
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  const committed: string[] = [];
  const aborted: string[] = [];
  try {
    for (let cycle = 0; cycle < 6; cycle++) {
      const commit = cycle % 2 === 1;
      const txn = await producer.transaction();
      const values = Array.from({ length: 30 }, (_, i) => `${commit ? 'c' : 'a'}-${cycle}-${i}`);
      await txn.send({ topic: TOPIC, messages: values.map((value, i) => ({ value, partition: i % 3 })) });
      if (commit) {
        await txn.commit();
        committed.push(...values);
      } else {
        await txn.abort();
        aborted.push(...values);
      }
    }
  } finally {
    await producer.disconnect();
  }
  // The last cycle commits: once its records are read, every aborted record before them would have been too.
  const rc = await consume(false, (seen) => seen.length >= committed.length);
  assert.deepEqual([...rc].sort(), [...committed].sort());
  const ru = await consume(true, (seen) => seen.length >= committed.length + aborted.length);
  assert.deepEqual([...ru].sort(), [...committed, ...aborted].sort());
});

test('KafkaJS: a second producer with the same transactionalId fences the first', async () => {
  const options = { transactionalId: 'kjs-fenced', idempotent: true, maxInFlightRequests: 1 };
  const p1 = kafka.producer(options);
  const p2 = kafka.producer(options);
  await p1.connect();
  try {
    const zombie = await p1.transaction();
    await zombie.send({ topic: TOPIC, messages: [{ value: 'zombie', partition: 0 }] });
    // The new instance's InitProducerId (KafkaJS sends it with the first transaction) aborts the
    // zombie's transaction and bumps the epoch.
    await p2.connect();
    const survivor = await p2.transaction();
    const err = await zombie.commit().then(
      () => null,
      (e: { type?: string }) => e,
    );
    assert.ok(err !== null, "the fenced producer's commit succeeded");
    assert.ok(
      err.type === 'INVALID_PRODUCER_EPOCH' || err.type === 'PRODUCER_FENCED',
      `the fenced producer's commit failed with ${err.type}`,
    );
    await survivor.send({ topic: TOPIC, messages: [{ value: 'survivor', partition: 0 }] });
    await survivor.commit();
  } finally {
    await p1.disconnect();
    await p2.disconnect();
  }
  const rc = await consume(false, (seen) => seen.includes('survivor'));
  assert.deepEqual(
    rc.filter((v) => v === 'zombie' || v === 'survivor'),
    ['survivor'],
  );
});
