/**
 * Client quotas on a running broker, over the wire: request_percentage throttles a client's
 * requests (throttle_time_ms in the response, capped at one sample span as Kafka's request quota),
 * the connection is muted for that time (the next request on it waits), another client id is not
 * touched, and removing the quota applies to the next request — no restart. producer_byte_rate:
 * the Produce is appended and answered at once with Kafka's throttle time; consumer_byte_rate: the
 * Fetch is answered empty, its bytes un-recorded (the next Fetch is throttled as much, no more).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ClientQuotaType, QUOTA_KEY_OF } from '../../src/broker/client-quota-manager.js';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { AlterClientQuotasResponse } from '../../src/protocol/generated/AlterClientQuotasResponse.js';
import type { CreateTopicsResponse } from '../../src/protocol/generated/CreateTopicsResponse.js';
import { defaultFetchPartition, defaultFetchRequest } from '../../src/protocol/generated/FetchRequest.js';
import type { FetchResponse } from '../../src/protocol/generated/FetchResponse.js';
import { ApiKey } from '../../src/protocol/generated/index.js';
import { defaultMetadataRequest } from '../../src/protocol/generated/MetadataRequest.js';
import type { MetadataResponse } from '../../src/protocol/generated/MetadataResponse.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import { batch, startBroker, type TestBroker } from './helpers.js';

describe('client quotas over the wire', () => {
  let b: TestBroker;
  let admin: ClientConnection;
  before(async () => {
    b = await startBroker();
    admin = await b.connect('quota-admin');
  });
  after(async () => {
    await b.stop();
  });

  /** Sets (or removes) one quota of a client id and waits for the broker's image to hold it. */
  const alter = async (clientId: string, type: ClientQuotaType, value: number | null): Promise<void> => {
    const key = QUOTA_KEY_OF[type];
    const r = await b.call<AlterClientQuotasResponse>(admin, ApiKey.AlterClientQuotas, 1, {
      entries: [
        {
          entity: [{ entityType: 'client-id', entityName: clientId }],
          ops: [{ key, value: value ?? 0, remove: value === null }],
        },
      ],
      validateOnly: false,
    });
    assert.equal(r.entries[0]?.errorCode, 0, r.entries[0]?.errorMessage ?? '');
    const q = b.broker.clientQuotas.of(type);
    for (let i = 0; i < 200; i++) {
      if (q.quotaLimit(q.metricTags('ANONYMOUS', clientId)) === value) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.fail(`the broker's image never showed ${key} ${value} for ${clientId}`);
  };

  const metadata = (conn: ClientConnection): Promise<MetadataResponse> =>
    b.call<MetadataResponse>(conn, ApiKey.Metadata, 12, { ...defaultMetadataRequest(), topics: [] });

  it('throttles and mutes the client over request_percentage, not others; a removal applies at once', async () => {
    await alter('busy', 'request', 0.001);
    const busy = await b.connect('busy');
    const other = await b.connect('other');
    const first = await metadata(busy);
    // A request of any length over 0.001% of a thread: Kafka's request throttle, capped at 1 s.
    assert.equal(first.throttleTimeMs, 1000);
    const sentMs = Date.now();
    const second = await metadata(busy);
    const waitedMs = Date.now() - sentMs;
    assert.ok(waitedMs >= 900, `the muted connection answered after ${waitedMs} ms`);
    assert.ok(second.throttleTimeMs > 0);
    assert.equal((await metadata(other)).throttleTimeMs, 0, 'another client id has no quota');

    await alter('busy', 'request', null);
    await new Promise((r) => setTimeout(r, 1100)); // the last mute ends
    assert.equal((await metadata(busy)).throttleTimeMs, 0, 'the removed quota no longer applies');
    const m = b.broker.clientQuotas.request.readings(Date.now(), 10).find((r) => r.clientId === 'busy');
    assert.ok(m && m.throttleTimeMs >= 1000 - 1, `the throttle time recorded: ${JSON.stringify(m)}`);
  });

  it('a Produce over producer_byte_rate is appended and answered with its throttle; a Fetch over consumer_byte_rate is answered empty', async () => {
    const created = await b.call<CreateTopicsResponse>(admin, ApiKey.CreateTopics, 7, {
      timeoutMs: 5000,
      validateOnly: false,
      topics: [{ name: 'q', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
    });
    assert.equal(created.topics[0]?.errorCode, 0);
    await alter('p', 'produce', 1000);
    await alter('c', 'fetch', 1000);
    const records = batch(1000);
    const producer = await b.connect('p');
    const produced = await b.call<ProduceResponse>(producer, ApiKey.Produce, 9, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 5000,
      topicData: [{ name: 'q', partitionData: [{ index: 0, records }] }],
    });
    assert.equal(produced.responses[0]?.partitionResponses[0]?.errorCode, 0);
    assert.equal(produced.responses[0]?.partitionResponses[0]?.baseOffset, 0n, 'appended all the same');
    // S bytes over Kafka's padded 10 s window against 1,000 B/s: (S / 10 - 1000) / 1000 × 10 s = S - 10 s.
    const expected = records.length - 10_000;
    assert.ok(
      produced.throttleTimeMs >= expected && produced.throttleTimeMs <= expected + 200,
      `throttle ${produced.throttleTimeMs} ms for a ${records.length}-byte batch`,
    );

    const fetch = async (): Promise<FetchResponse> => {
      const consumer = await b.connect('c'); // a fresh connection: the last one is muted
      return b.call<FetchResponse>(consumer, ApiKey.Fetch, 12, {
        ...defaultFetchRequest(),
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1 << 20,
        topics: [
          {
            topic: 'q',
            topicId: 'AAAAAAAAAAAAAAAAAAAAAA',
            partitions: [
              { ...defaultFetchPartition(), partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 },
            ],
          },
        ],
      });
    };
    const first = await fetch();
    assert.deepEqual(first.responses, [], 'a throttled Fetch carries no data');
    assert.ok(first.throttleTimeMs >= expected, `fetch throttle ${first.throttleTimeMs} ms`);
    const second = await fetch();
    assert.deepEqual(second.responses, []);
    assert.ok(
      Math.abs(second.throttleTimeMs - first.throttleTimeMs) <= 100,
      `the first Fetch's bytes were un-recorded: ${first.throttleTimeMs} then ${second.throttleTimeMs} ms`,
    );
    await alter('c', 'fetch', null);
    const free = await fetch();
    assert.equal(free.throttleTimeMs, 0);
    assert.ok(
      (free.responses[0]?.partitions[0]?.records?.length ?? 0) > 0,
      'the data, once the quota is gone',
    );
  });
});
