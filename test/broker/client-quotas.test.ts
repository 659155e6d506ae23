/**
 * Client quotas on a running broker, over the wire: request_percentage throttles a client's
 * requests (throttle_time_ms in the response, capped at one sample span as Kafka's request quota),
 * the connection is muted for that time (the next request on it waits), another client id is not
 * touched, and removing the quota applies to the next request — no restart.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { AlterClientQuotasResponse } from '../../src/protocol/generated/AlterClientQuotasResponse.js';
import { ApiKey } from '../../src/protocol/generated/index.js';
import { defaultMetadataRequest } from '../../src/protocol/generated/MetadataRequest.js';
import type { MetadataResponse } from '../../src/protocol/generated/MetadataResponse.js';
import { startBroker, type TestBroker } from './helpers.js';

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

  const alter = async (remove: boolean): Promise<void> => {
    const r = await b.call<AlterClientQuotasResponse>(admin, ApiKey.AlterClientQuotas, 1, {
      entries: [
        {
          entity: [{ entityType: 'client-id', entityName: 'busy' }],
          ops: [{ key: 'request_percentage', value: 0.001, remove }],
        },
      ],
      validateOnly: false,
    });
    assert.equal(r.entries[0]?.errorCode, 0, r.entries[0]?.errorMessage ?? '');
    const want = remove ? null : 0.001;
    for (let i = 0; i < 200; i++) {
      const q = b.broker.clientQuotas.request;
      if (q.quotaLimit(q.metricTags('ANONYMOUS', 'busy')) === want) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.fail(`the broker's image never showed request_percentage ${want}`);
  };

  const metadata = (conn: ClientConnection): Promise<MetadataResponse> =>
    b.call<MetadataResponse>(conn, ApiKey.Metadata, 12, { ...defaultMetadataRequest(), topics: [] });

  it('throttles and mutes the client over request_percentage, not others; a removal applies at once', async () => {
    await alter(false);
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

    await alter(true);
    await new Promise((r) => setTimeout(r, 1100)); // the last mute ends
    assert.equal((await metadata(busy)).throttleTimeMs, 0, 'the removed quota no longer applies');
    const m = b.broker.clientQuotas.request.readings(Date.now(), 10).find((r) => r.clientId === 'busy');
    assert.ok(m && m.throttleTimeMs >= 1000 - 1, `the throttle time recorded: ${JSON.stringify(m)}`);
  });
});
