/**
 * The client library's connection layer against a scripted peer: ApiVersions negotiation picks the
 * highest version both sides have, an API the broker lacks is one clear error, retriable errors are
 * retried a bounded number of times, and a broker that never answers fails after
 * request.timeout.ms instead of hanging.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { Admin, ConfigResourceType } from '../../src/client/admin.js';
import { KafkaClient } from '../../src/client/kafka-client.js';
import { parseBootstrap, systemRuntime } from '../../src/client/runtime.js';
import type { CreateTopicsRequest } from '../../src/protocol/generated/CreateTopicsRequest.js';
import type { DescribeConfigsRequest } from '../../src/protocol/generated/DescribeConfigsRequest.js';
import type { DescribeConfigsResponse } from '../../src/protocol/generated/DescribeConfigsResponse.js';
import { type FakeBroker, type Handler, startFakeBroker } from './fake-broker.js';

function answer(errorCode: number): Handler {
  return (req) => {
    const r = (req as DescribeConfigsRequest).resources[0]!;
    const resp: DescribeConfigsResponse = {
      throttleTimeMs: 0,
      results: [
        {
          errorCode,
          errorMessage: null,
          resourceType: r.resourceType,
          resourceName: r.resourceName,
          configs: [],
        },
      ],
    };
    return resp;
  };
}

/** A handler answering `errorCode` that tells `onCall` about each request. */
function counting(errorCode: number, onCall: () => void): Handler {
  return (req, v) => {
    onCall();
    return answer(errorCode)(req, v);
  };
}

describe('client connection layer', () => {
  let fake: FakeBroker | null = null;
  let client: KafkaClient | null = null;
  const open = (f: FakeBroker, options: Partial<ConstructorParameters<typeof KafkaClient>[0]> = {}) => {
    client = new KafkaClient({
      bootstrap: parseBootstrap(f.bootstrap),
      clientId: 'client-test',
      runtime: systemRuntime(),
      retryBackoffMs: 5,
      ...options,
    });
    return client;
  };
  afterEach(async () => {
    client?.close();
    await fake?.close();
    fake = null;
  });

  it('sends each API at the highest version both sides support', async () => {
    fake = await startFakeBroker(new Map([[32, answer(0)]]), [], { 32: 2 });
    await new Admin(open(fake)).describeConfigs({ type: ConfigResourceType.topic, name: 't' });
    const sent = fake.requests.filter((r) => r.apiKey === 32).map((r) => r.apiVersion);
    assert.deepEqual(sent, [2]);
    await client!.fetchMetadata(null);
    assert.equal(fake.requests.find((r) => r.apiKey === 3)?.apiVersion, 12);
  });

  it('names an API the broker does not serve', async () => {
    fake = await startFakeBroker(new Map());
    await assert.rejects(
      new Admin(open(fake)).describeConfigs({ type: ConfigResourceType.topic, name: 't' }),
      {
        message: `the broker at ${fake.bootstrap} does not support DescribeConfigs`,
      },
    );
  });

  it('retries a retriable error a bounded number of times', async () => {
    let calls = 0;
    const flaky: Handler = (req, v) => answer(++calls < 3 ? 15 : 0)(req, v);
    fake = await startFakeBroker(new Map([[32, flaky]]));
    await new Admin(open(fake)).describeConfigs({ type: ConfigResourceType.topic, name: 't' });
    assert.equal(calls, 3);

    await fake.close();
    calls = 0;
    fake = await startFakeBroker(new Map([[32, counting(15, () => calls++)]]));
    await assert.rejects(
      new Admin(open(fake, { retries: 2 })).describeConfigs({ type: ConfigResourceType.topic, name: 't' }),
      {
        message: 'The coordinator is not available.',
      },
    );
    assert.equal(calls, 3);
  });

  it('does not retry a non-retriable error', async () => {
    let calls = 0;
    fake = await startFakeBroker(new Map([[32, counting(42, () => calls++)]]));
    await assert.rejects(
      new Admin(open(fake)).describeConfigs({ type: ConfigResourceType.topic, name: 't' }),
    );
    assert.equal(calls, 1);
  });

  it('fails a request the broker never answers after request.timeout.ms', async () => {
    fake = await startFakeBroker(new Map([[32, () => undefined]]));
    const t0 = Date.now();
    await assert.rejects(
      new Admin(open(fake, { requestTimeoutMs: 200, retries: 1 })).describeConfigs({
        type: ConfigResourceType.topic,
        name: 't',
      }),
      { message: `no response from ${fake.bootstrap} within 200 ms` },
    );
    assert.ok(Date.now() - t0 < 5000);
  });

  it('reports a refused bootstrap connection at once', async () => {
    const c = new KafkaClient({
      bootstrap: parseBootstrap('127.0.0.1:1'),
      clientId: 't',
      runtime: systemRuntime(),
    });
    client = c;
    await assert.rejects(c.fetchMetadata(null), {
      message: 'cannot connect to 127.0.0.1:1 (connection refused)',
    });
  });

  it('skips a bootstrap server that refuses the connection and uses the next one', async () => {
    fake = await startFakeBroker(new Map(), [{ name: 'orders', partitions: 1 }]);
    const c = new KafkaClient({
      bootstrap: parseBootstrap(`127.0.0.1:1,${fake.bootstrap}`),
      clientId: 't',
      runtime: systemRuntime(),
    });
    client = c;
    const md = await c.fetchMetadata(['orders']);
    assert.equal(md.topics.get('orders')?.partitions.length, 1);
  });

  it('sends a controller request to another broker when the controller refuses the connection', async () => {
    // Every Skiff broker forwards the controller's APIs, as every KRaft broker does.
    const created: Handler = (req) => ({
      throttleTimeMs: 0,
      topics: (req as CreateTopicsRequest).topics.map((t) => ({
        name: t.name,
        topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
        errorCode: 0,
        errorMessage: null,
        topicConfigErrorCode: 0,
        numPartitions: 1,
        replicationFactor: 1,
        configs: [],
      })),
    });
    fake = await startFakeBroker(
      new Map([[19, created]]),
      [],
      { 19: 7 },
      {
        brokers: [{ nodeId: 2, port: 1 }],
        controllerId: 2,
      },
    );
    const [r] = await new Admin(open(fake)).createTopics([
      { name: 'x', numPartitions: 1, replicationFactor: 1 },
    ]);
    assert.equal(r?.error, null);
    assert.deepEqual(
      fake.requests
        .filter((q) => q.apiKey === 19)
        .map((q) => (q.body as CreateTopicsRequest).topics[0]?.name),
      ['x'],
    );
  });
});
