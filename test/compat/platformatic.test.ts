/**
 * @platformatic/kafka (devDependency, in this process) against `skiff broker` as a child process:
 * admin (createTopics, metadata, listGroups, describeConfigs; createTopics over a
 * controller_mutation_rate), a producer, and a consumer-group stream. Also the guard for a stall once seen with this client: while its consumer sits in a
 * long-polling Fetch v17 (its second and later fetches: no session, epoch 0, every time), the
 * broker must keep serving other connections and timers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  Admin,
  Consumer,
  MultipleErrors,
  Producer,
  ResponseError,
  stringDeserializers,
  stringSerializers,
} from '@platformatic/kafka';
import { ClientConnection } from '../../src/network/client-connection.js';
import { ApiVersionsRequestCodec } from '../../src/protocol/generated/ApiVersionsRequest.js';
import { ApiVersionsResponseCodec } from '../../src/protocol/generated/ApiVersionsResponse.js';
import type { CreateTopicsResponse } from '../../src/protocol/generated/CreateTopicsResponse.js';
import type { BrokerProcess } from '../support/broker-process.js';
import { setControllerMutationRate, startCompatBroker } from './clients.js';

describe('@platformatic/kafka against skiff broker', () => {
  let broker: BrokerProcess;
  let bootstrapBrokers: string[];
  before(async () => {
    broker = await startCompatBroker();
    bootstrapBrokers = [broker.bootstrap];
  });
  after(async () => {
    await broker?.stop();
  });

  it('admin: createTopics, metadata, describeConfigs', async () => {
    const admin = new Admin({ clientId: 'skiff-platformatic-admin', bootstrapBrokers });
    try {
      // CreateTopics v5+ answers the created topic's resulting configs (KIP-525).
      const [created] = await admin.createTopics({
        topics: ['pk-topic'],
        partitions: 3,
        replicas: 1,
        configs: [{ name: 'retention.ms', value: '100000' }],
      });
      assert.deepEqual([created!.partitions, created!.replicas], [3, 1]);
      assert.equal(created!.configuration['retention.ms'], '100000');
      assert.equal(created!.configuration['cleanup.policy'], 'delete');
      assert.equal(created!.configuration['segment.bytes'], '1073741824');
      const md = await admin.metadata({ topics: ['pk-topic'] });
      const topic = md.topics.get('pk-topic')!;
      assert.equal(topic.partitionsCount, 3);
      const configs = await admin.describeConfigs({
        resources: [{ resourceType: 2, resourceName: 'pk-topic', configurationKeys: ['cleanup.policy'] }],
      });
      assert.equal(configs[0]!.configs[0]!.name, 'cleanup.policy');
      assert.equal(configs[0]!.configs[0]!.value, 'delete');
      // An empty list of names asks for every config, as null does.
      const all = await admin.describeConfigs({
        resources: [{ resourceType: 2, resourceName: 'pk-topic', configurationKeys: [] }],
      });
      assert.deepEqual(all[0]!.configs.map((c) => c.name).sort(), Object.keys(created!.configuration).sort());
    } finally {
      await admin.close();
    }
  });

  it('a producer and a consumer-group stream; the broker stays responsive while the consumer long-polls', async () => {
    const producer = new Producer({
      clientId: 'skiff-platformatic-producer',
      bootstrapBrokers,
      serializers: stringSerializers,
    });
    await producer.send({
      messages: Array.from({ length: 30 }, (_, i) => ({
        topic: 'pk-topic',
        key: `k${i}`,
        value: `v${i}`,
        headers: { source: 'platformatic' },
      })),
    });
    const consumer = new Consumer({
      groupId: 'pk-group',
      clientId: 'skiff-platformatic-consumer',
      bootstrapBrokers,
      deserializers: stringDeserializers,
      maxWaitTime: 2_000,
    });
    const probe = await ClientConnection.connect('127.0.0.1', broker.port, { clientId: 'probe' });
    try {
      const stream = await consumer.consume({
        topics: ['pk-topic'],
        mode: 'earliest',
        autocommit: 100,
        sessionTimeout: 6_000,
        heartbeatInterval: 300,
      });
      const seen: string[] = [];
      stream.on('data', (m: { value: string; headers: Map<string, string> }) => {
        seen.push(m.value);
        assert.equal(m.headers.get('source'), 'platformatic');
      });
      const until = async (what: string, check: () => boolean): Promise<void> => {
        const deadline = Date.now() + 15_000;
        while (!check()) {
          if (Date.now() > deadline) assert.fail(`timed out waiting for ${what} (${seen.length} seen)`);
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      await until('30 records', () => seen.length >= 30);
      // Now every partition is caught up: the consumer's next fetches park in the broker.
      for (let i = 0; i < 5; i++) {
        await new Promise((r) => setTimeout(r, 200));
        const started = Date.now();
        const r = await probe.send(
          18,
          3,
          ApiVersionsRequestCodec,
          { clientSoftwareName: 'probe', clientSoftwareVersion: '1' },
          ApiVersionsResponseCodec,
        );
        assert.equal(r.errorCode, 0);
        assert.ok(
          Date.now() - started < 1_000,
          `ApiVersions took ${Date.now() - started} ms during the long poll`,
        );
      }
      await producer.send({
        messages: [{ topic: 'pk-topic', key: 'late', value: 'late', headers: { source: 'platformatic' } }],
      });
      await until('the late record', () => seen.includes('late'));
      assert.deepEqual([...seen].sort(), [...Array.from({ length: 30 }, (_, i) => `v${i}`), 'late'].sort());
      await stream.close();
    } finally {
      probe.close();
      await consumer.close(true);
      await producer.close();
    }
    const admin = new Admin({ clientId: 'skiff-platformatic-admin', bootstrapBrokers });
    try {
      const groups = await admin.listGroups();
      assert.ok(groups.has('pk-group'), `listGroups: ${[...groups.keys()].join(', ')}`);
    } finally {
      await admin.close();
    }
  });

  it('createTopics (v7, strict) over controller_mutation_rate: THROTTLING_QUOTA_EXCEEDED for the topics over it, the first created', async () => {
    // 0.01 partitions/s: a bucket of 0.11 lets the first topic through, then is below zero for minutes.
    await setControllerMutationRate(broker.port, 'pk-mutator', 0.01);
    const admin = new Admin({ clientId: 'pk-mutator', bootstrapBrokers, retries: 0 });
    let error: unknown;
    try {
      await admin.createTopics({ topics: ['pk-m1', 'pk-m2', 'pk-m3'], partitions: 1, replicas: 1 });
    } catch (e) {
      error = e;
    } finally {
      await admin.close();
    }
    // @platformatic/kafka 2.x throws the CreateTopics answer's ResponseError inside a MultipleErrors.
    assert.ok(error instanceof MultipleErrors, `createTopics failed with ${String(error)}`);
    const [cause] = error.errors as unknown[];
    assert.ok(cause instanceof ResponseError, `createTopics failed with ${String(cause)}`);
    const response = (cause as ResponseError & { response: CreateTopicsResponse }).response;
    assert.deepEqual(
      response.topics.map((t) => [t.name, t.errorCode, t.errorMessage]),
      [
        ['pk-m1', 0, null],
        ['pk-m2', 89, 'The throttling quota has been exceeded.'],
        ['pk-m3', 89, 'The throttling quota has been exceeded.'],
      ],
    );
    assert.ok(response.throttleTimeMs > 85_000, `throttle ${response.throttleTimeMs} ms`);
    const reader = new Admin({ clientId: 'pk-reader', bootstrapBrokers });
    try {
      const md = await reader.metadata({ topics: ['pk-m1'] });
      assert.equal(md.topics.get('pk-m1')?.partitionsCount, 1, 'the topic within the quota was created');
      const listed = await reader.listTopics();
      assert.ok(!listed.includes('pk-m2') && !listed.includes('pk-m3'), `topics: ${listed.join(', ')}`);
    } finally {
      await reader.close();
      // The quota entities are the broker's whole map: the next test's order depends on them all.
      await setControllerMutationRate(broker.port, 'pk-mutator', null);
    }
  });

  it("alterClientQuotas / describeClientQuotas answer entities, components and values in Kafka's (HashMap) order", async () => {
    const admin = new Admin({ clientId: 'skiff-platformatic-quotas', bootstrapBrokers });
    const P = 'producer_byte_rate';
    const C = 'consumer_byte_rate';
    const R = 'request_percentage';
    const set = (key: typeof P | typeof C | typeof R, value: number) => ({
      key,
      value,
      remove: false as const,
    });
    const user = (name: string | null) => ({ entityType: 'user' as const, entityName: name });
    const client = (name: string) => ({ entityType: 'client-id' as const, entityName: name });
    try {
      const altered = await admin.alterClientQuotas({
        entries: [
          { entities: [user('alice')], ops: [set(P, 1024)] },
          { entities: [client('app')], ops: [set(P, 2048)] },
          { entities: [user('bob')], ops: [set(C, 4096)] },
          { entities: [user('alice'), client('app')], ops: [set(P, 1048576), set(C, 2097152), set(R, 50)] },
          { entities: [user(null)], ops: [set(R, 25)] },
        ],
      });
      // The controller's HashMap of entity to result: by ClientQuotaEntity.hashCode in 16 buckets.
      assert.deepEqual(
        altered.map((e) => [e.errorCode, e.entity.map((c) => `${c.entityType}=${c.entityName}`).join(',')]),
        [
          [0, 'user=alice'],
          [0, 'client-id=app,user=alice'],
          [0, 'user=bob'],
          [0, 'client-id=app'],
          [0, 'user=null'],
        ],
      );
      // Added one at a time, producer_byte_rate stays before request_percentage (they share a bucket).
      for (const key of [P, R, C] as const) {
        await admin.alterClientQuotas({ entries: [{ entities: [client('staged')], ops: [set(key, 100)] }] });
      }
      let described: Awaited<ReturnType<Admin['describeClientQuotas']>> = [];
      for (let i = 0; i < 100; i++) {
        described = await admin.describeClientQuotas({ components: [] });
        if (described.find((e) => e.entity[0]?.entityName === 'staged')?.values.length === 3) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      // The image's HashMap of six entities (8 buckets); each entity's HashMap of type to name and
      // of key to value.
      assert.deepEqual(
        described.map((e) => [
          e.entity.map((c) => `${c.entityType}=${c.entityName}`).join(','),
          e.values.map((v) => v.key).join(','),
        ]),
        [
          ['client-id=app,user=alice', `${C},${R},${P}`],
          ['user=bob', C],
          ['client-id=app', P],
          ['user=null', R],
          ['user=alice', P],
          ['client-id=staged', `${C},${P},${R}`],
        ],
      );
    } finally {
      await admin.close();
    }
  });
});
