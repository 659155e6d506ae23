/**
 * controller_mutation_rate on a running broker, over the wire (CreateTopics, CreatePartitions,
 * DeleteTopics, and Metadata's auto-creation). Each case has its own client id and
 * a rate of 0.01 partitions/s, so a bucket of 11 × 1 s × 0.01 = 0.11 credits lets the first topic
 * through (the bucket is not below zero) and then stays below zero for minutes: what is refused
 * does not depend on how fast the machine is.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { QUOTA_KEY_OF } from '../../src/broker/client-quota-manager.js';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { AlterClientQuotasResponse } from '../../src/protocol/generated/AlterClientQuotasResponse.js';
import type { CreatePartitionsResponse } from '../../src/protocol/generated/CreatePartitionsResponse.js';
import type { CreateTopicsResponse } from '../../src/protocol/generated/CreateTopicsResponse.js';
import type { DeleteTopicsResponse } from '../../src/protocol/generated/DeleteTopicsResponse.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import { ApiKey } from '../../src/protocol/generated/index.js';
import { defaultMetadataRequest } from '../../src/protocol/generated/MetadataRequest.js';
import type { MetadataResponse } from '../../src/protocol/generated/MetadataResponse.js';
import { startBroker, type TestBroker } from './helpers.js';

const THROTTLED = {
  errorCode: ErrorCode.THROTTLING_QUOTA_EXCEEDED,
  errorMessage: 'The throttling quota has been exceeded.',
};

describe('controller_mutation_rate over the wire', () => {
  let b: TestBroker;
  let admin: ClientConnection;
  before(async () => {
    b = await startBroker();
    admin = await b.connect('mutation-admin');
  });
  after(async () => {
    await b.stop();
  });

  /** Gives `clientId` a controller_mutation_rate and waits for the broker's image to hold it. */
  const limit = async (clientId: string, rate: number): Promise<void> => {
    const r = await b.call<AlterClientQuotasResponse>(admin, ApiKey.AlterClientQuotas, 1, {
      entries: [
        {
          entity: [{ entityType: 'client-id', entityName: clientId }],
          ops: [{ key: QUOTA_KEY_OF.controller_mutation, value: rate, remove: false }],
        },
      ],
      validateOnly: false,
    });
    assert.equal(r.entries[0]?.errorCode, 0, r.entries[0]?.errorMessage ?? '');
    const q = b.broker.clientQuotas.controllerMutation;
    for (let i = 0; i < 200; i++) {
      if (q.quotaLimit(q.metricTags('ANONYMOUS', clientId)) === rate) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.fail(`the broker's image never showed controller_mutation_rate ${rate} for ${clientId}`);
  };

  const createTopics = (
    conn: ClientConnection,
    version: number,
    names: readonly string[],
    validateOnly = false,
  ): Promise<CreateTopicsResponse> =>
    b.call<CreateTopicsResponse>(conn, ApiKey.CreateTopics, version, {
      timeoutMs: 5000,
      validateOnly,
      topics: names.map((name) => ({
        name,
        numPartitions: 1,
        replicationFactor: 1,
        assignments: [],
        configs: [],
      })),
    });

  const exists = (name: string): boolean => b.metadata.image().topics.has(name);
  /** Waits for the broker's image to show (or no longer show) the topics, which follows the controller. */
  const until = async (what: string, done: () => boolean): Promise<void> => {
    for (let i = 0; i < 300 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(done(), `the broker's image never showed ${what}`);
  };

  /** Within 1 s of the ~89 s it takes 0.01/s to refill the 0.89 credits one more partition took. */
  const assertThrottle = (ms: number, deficit: number): void => {
    const expected = (deficit / 0.01) * 1000;
    assert.ok(ms <= expected && ms >= expected - 1000, `throttle ${ms} ms, expected about ${expected}`);
  };

  it('CreateTopics v7 (strict): the topic over the quota is refused, the others created; the response throttled', async () => {
    await limit('strict-create', 0.01);
    const conn = await b.connect('strict-create');
    const r = await createTopics(conn, 7, ['sc-a', 'sc-b', 'sc-c']);
    assert.deepEqual(
      r.topics.map((t) => [t.name, t.errorCode, t.errorMessage]),
      [
        ['sc-a', 0, null],
        ['sc-b', THROTTLED.errorCode, THROTTLED.errorMessage],
        ['sc-c', THROTTLED.errorCode, THROTTLED.errorMessage],
      ],
    );
    await until('sc-a', () => exists('sc-a'));
    assert.deepEqual([exists('sc-b'), exists('sc-c')], [false, false]);
    assertThrottle(r.throttleTimeMs, 0.89);
    const [m] = b.broker.clientQuotas.controllerMutation
      .readings(Date.now(), 10)
      .filter((x) => x.clientId === 'strict-create');
    assert.ok(m && m.tokens !== null && m.tokens < -0.88, `the bucket: ${JSON.stringify(m)}`);
    assert.ok(m.throttleTimeMs > 88_000, 'the throttle time is recorded for the metrics');
  });

  it('CreateTopics v5 (permissive): every topic created, the response throttled by the whole deficit', async () => {
    await limit('permissive-create', 0.01);
    const conn = await b.connect('permissive-create');
    const r = await createTopics(conn, 5, ['pc-a', 'pc-b']);
    assert.deepEqual(
      r.topics.map((t) => t.errorCode),
      [0, 0],
    );
    await until('pc-a and pc-b', () => exists('pc-a') && exists('pc-b'));
    assertThrottle(r.throttleTimeMs, 1.89);
  });

  it("validate_only is counted, as Kafka's controller does; nothing is created", async () => {
    await limit('validate', 0.01);
    const conn = await b.connect('validate');
    const r = await createTopics(conn, 7, ['vo-a', 'vo-b'], true);
    assert.deepEqual(
      r.topics.map((t) => [t.name, t.errorCode]),
      [
        ['vo-a', 0],
        ['vo-b', THROTTLED.errorCode],
      ],
    );
    assert.ok(!exists('vo-a') && !exists('vo-b'));
  });

  it('CreatePartitions v3 and DeleteTopics v6 (strict) count the partitions added and deleted', async () => {
    const created = await createTopics(admin, 7, ['cp-a', 'cp-b', 'dt-a', 'dt-b']);
    assert.deepEqual(
      created.topics.map((t) => t.errorCode),
      [0, 0, 0, 0],
      'a client without a limit is never refused',
    );
    await until('the four topics', () => ['cp-a', 'cp-b', 'dt-a', 'dt-b'].every(exists));
    await limit('grow', 0.01);
    const grow = await b.connect('grow');
    const p = await b.call<CreatePartitionsResponse>(grow, ApiKey.CreatePartitions, 3, {
      topics: [
        { name: 'cp-a', count: 3, assignments: null },
        { name: 'cp-b', count: 3, assignments: null },
      ],
      timeoutMs: 5000,
      validateOnly: false,
    });
    assert.deepEqual(
      p.results.map((x) => [x.name, x.errorCode, x.errorMessage]),
      [
        ['cp-a', 0, null],
        ['cp-b', THROTTLED.errorCode, THROTTLED.errorMessage],
      ],
    );
    const partitions = (n: string): number | undefined => b.metadata.image().topics.get(n)?.partitions.length;
    await until('cp-a with 3 partitions', () => partitions('cp-a') === 3);
    assert.equal(partitions('cp-b'), 1);
    assertThrottle(p.throttleTimeMs, 1.89);

    await limit('delete', 0.01);
    const del = await b.connect('delete');
    const d = await b.call<DeleteTopicsResponse>(del, ApiKey.DeleteTopics, 6, {
      topics: [
        { name: 'dt-a', topicId: 'AAAAAAAAAAAAAAAAAAAAAA' },
        { name: 'dt-b', topicId: 'AAAAAAAAAAAAAAAAAAAAAA' },
      ],
      topicNames: [],
      timeoutMs: 5000,
    });
    assert.deepEqual(
      d.responses.map((x) => [x.name, x.errorCode, x.errorMessage]),
      [
        ['dt-a', 0, null],
        ['dt-b', THROTTLED.errorCode, THROTTLED.errorMessage],
      ],
    );
    await until('dt-a deleted', () => !exists('dt-a'));
    assert.ok(exists('dt-b'));
    assertThrottle(d.throttleTimeMs, 0.89);
  });

  it("Metadata's auto-creation answers to the client's quota, strictly: the topic past it is LEADER_NOT_AVAILABLE, not created", async () => {
    await limit('auto', 0.01);
    const conn = await b.connect('auto');
    const r = await b.call<MetadataResponse>(conn, ApiKey.Metadata, 12, {
      ...defaultMetadataRequest(),
      topics: [
        { name: 'auto-a', topicId: 'AAAAAAAAAAAAAAAAAAAAAA' },
        { name: 'auto-b', topicId: 'AAAAAAAAAAAAAAAAAAAAAA' },
      ],
      allowAutoTopicCreation: true,
    });
    assert.deepEqual(
      r.topics.map((t) => [t.name, t.errorCode]),
      [
        ['auto-a', 0],
        ['auto-b', ErrorCode.LEADER_NOT_AVAILABLE],
      ],
    );
    assert.equal(r.throttleTimeMs, 0, 'a forwarded creation does not throttle the Metadata response');
    assert.ok(!exists('auto-b'));
  });
});
