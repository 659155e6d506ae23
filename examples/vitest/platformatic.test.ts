// @platformatic/kafka against a real three-broker Skiff cluster, with Vitest (TypeScript, which
// Vitest runs as it is): an admin client, a producer and a consumer group, and a broker SIGKILLed
// while the producer and the consumer keep going.
import {
  Admin,
  Consumer,
  FindCoordinatorKeyTypes,
  type MessagesStream,
  ProduceAcks,
  Producer,
  stringDeserializers,
  stringSerializers,
} from '@platformatic/kafka';
import { type SkiffCluster, startCluster } from 'skiff';
import { afterAll, beforeAll, expect, test } from 'vitest';

let cluster: SkiffCluster;
let bootstrapBrokers: string[];

beforeAll(async () => {
  cluster = await startCluster({
    brokers: 3,
    // Every topic, __consumer_offsets included, on all three brokers: any one of them can die.
    // A dead broker is noticed after 2 s rather than Kafka's 9 s.
    config: {
      'default.replication.factor': 3,
      'min.insync.replicas': 2,
      'broker.session.timeout.ms': 2000,
      'broker.heartbeat.interval.ms': 500,
    },
  });
  bootstrapBrokers = [...cluster.bootstrapServers];
});

afterAll(async () => {
  await cluster?.close();
});

/** Polls until check() returns a value other than undefined. */
async function waitFor<T>(
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 20_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// Retries every 100 ms (the default is 1 s), 50 times: a failover takes about 2 s.
const retrying = { retries: 50, retryDelay: 100 };

function admin(): Admin {
  return new Admin({ clientId: 'skiff-example-admin', bootstrapBrokers, ...retrying });
}

// acks goes with each send(): @platformatic/kafka 2.12's send() does not take it from the
// constructor's options, and defaults to acks=1 (the leader alone) for a producer that is not
// idempotent — with which a SIGKILLed leader does lose acknowledged messages.
function producer(): Producer<string, string, string, string> {
  return new Producer({
    clientId: 'skiff-example-producer',
    bootstrapBrokers,
    serializers: stringSerializers,
    ...retrying,
  });
}

/** A consumer in `groupId` from the start of `topic`; `seen` collects every value it gets. */
async function consume(groupId: string, topic: string) {
  const consumer = new Consumer({
    clientId: 'skiff-example-consumer',
    groupId,
    bootstrapBrokers,
    deserializers: stringDeserializers,
    maxWaitTime: 100,
    sessionTimeout: 6_000,
    heartbeatInterval: 500,
    // Metadata (who leads what) is at most 1 s old, not 5 min.
    metadataMaxAge: 1_000,
    ...retrying,
  });
  const seen = new Set<string>();
  let stream: MessagesStream<string, string, string, string>;
  let closing = false;
  const start = async () => {
    // From the group's committed offsets, from the start when it has none.
    stream = await consumer.consume({
      topics: [topic],
      mode: 'committed',
      fallbackMode: 'earliest',
      autocommit: 100,
    });
    stream.on('data', (message) => seen.add(message.value));
    // A stream of @platformatic/kafka 2.12 ends with an error when a broker it fetches from dies
    // (it retries that broker until its metadata no longer lists it): the consumer goes on with a
    // new stream, from the offsets it committed.
    stream.once('error', () => {
      if (!closing) void start();
    });
  };
  await start();
  return {
    seen,
    async close() {
      closing = true;
      await stream.close();
      await consumer.close(true);
    },
  };
}

test('admin: create a topic, list and describe topics and groups', async () => {
  const client = admin();
  try {
    const [created] = await client.createTopics({ topics: ['admin-demo'], partitions: 4, replicas: 3 });
    expect(created).toMatchObject({ name: 'admin-demo', partitions: 4, replicas: 3 });
    expect(await client.listTopics()).toContain('admin-demo');
    const metadata = await client.metadata({ topics: ['admin-demo'] });
    const partitions = metadata.topics.get('admin-demo')!.partitions;
    expect(partitions).toHaveLength(4);
    for (const p of partitions) expect(p.replicas).toHaveLength(3);

    const group = await consume('admin-demo-group', 'admin-demo');
    try {
      const described = await waitFor('the group to be stable', async () => {
        const g = (await client.describeGroups({ groups: ['admin-demo-group'] })).get('admin-demo-group');
        return g?.state === 'Stable' ? g : undefined;
      });
      expect(described.members.size).toBe(1);
      expect([...(await client.listGroups()).keys()]).toContain('admin-demo-group');
    } finally {
      await group.close();
    }
  } finally {
    await client.close();
  }
});

test('produce with acks=all and consume in a group', async () => {
  await cluster.createTopic('greetings', { partitions: 3 });
  const client = producer();
  const group = await consume('greetings-group', 'greetings');
  try {
    const values = Array.from({ length: 100 }, (_, i) => `hello ${i}`);
    await client.send({
      acks: ProduceAcks.ALL,
      messages: values.map((value, i) => ({ topic: 'greetings', key: `k${i % 10}`, value })),
    });
    await waitFor('every message', () => (group.seen.size === values.length ? true : undefined));
    expect([...group.seen].sort()).toEqual([...values].sort());
  } finally {
    await group.close();
    await client.close();
  }
});

test('a broker killed mid-test: no acknowledged message is lost', async () => {
  await cluster.createTopic('payments', { partitions: 3 });
  const adminClient = admin();
  const client = producer();
  const group = await consume('payments-group', 'payments');
  const acknowledged: string[] = [];
  /** Sends one message at a time with acks=all, again until it is acknowledged. */
  async function produce(from: number, to: number) {
    for (let i = from; i < to; i++) {
      const value = `payment ${i}`;
      await waitFor(`an acknowledgement of ${value}`, async () => {
        try {
          await client.send({
            acks: ProduceAcks.ALL,
            messages: [{ topic: 'payments', key: String(i), value }],
          });
          return true;
        } catch {
          return undefined; // not acknowledged: send it again
        }
      });
      acknowledged.push(value);
    }
  }
  const partitions = async () =>
    (await adminClient.metadata({ topics: ['payments'], forceUpdate: true })).topics.get('payments')!
      .partitions;
  try {
    await produce(0, 50);
    // The leader of a partition, not the group's coordinator: @platformatic/kafka 1.35 kept the
    // coordinator's id once found, and a consumer whose coordinator died threw (a TypeError from
    // its connection pool) instead of looking for the new one. 2.12 forgets the coordinator on a
    // network error; this suite has not been changed to kill it.
    const [coordinator] = await adminClient.findCoordinator({
      keyType: FindCoordinatorKeyTypes.GROUP,
      keys: ['payments-group'],
    });
    const victim =
      (await partitions()).map((p) => p.leader).find((id) => id !== coordinator!.nodeId) ??
      cluster.brokers.find((b) => b.id !== coordinator!.nodeId)!.id;

    await cluster.stopBroker(victim, { kill: true }); // SIGKILL: no controlled shutdown
    expect(cluster.brokers.find((b) => b.id === victim)!.running).toBe(false);
    await produce(50, 100);
    await waitFor('every acknowledged message', () =>
      acknowledged.every((v) => group.seen.has(v)) ? true : undefined,
    );

    await cluster.startBroker(victim);
    await waitFor('the restarted broker back in every ISR', async () =>
      (await partitions()).every((p) => p.isr.length === 3) ? true : undefined,
    );
    await produce(100, 120);
    await waitFor('every acknowledged message', () =>
      acknowledged.every((v) => group.seen.has(v)) ? true : undefined,
    );
  } finally {
    await group.close();
    await client.close();
    await adminClient.close();
  }
  // A new group reads the topic from the start: every acknowledged message is in the log.
  const audit = await consume('payments-audit', 'payments');
  try {
    await waitFor('the audit to read every message', () =>
      audit.seen.size >= acknowledged.length ? true : undefined,
    );
    expect([...audit.seen].sort()).toEqual([...acknowledged].sort());
  } finally {
    await audit.close();
  }
});
