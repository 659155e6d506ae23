import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ANONYMOUS_USER,
  ClientQuotaManager,
  ClientQuotas,
  quotaUser,
} from '../../src/broker/client-quota-manager.js';
import { quotaEntityKey } from '../../src/metadata/client-quotas.js';
import type { ConfigMap } from '../../src/metadata/cluster-metadata.js';

const WINDOW = { samples: 11, sampleMs: 1000 };

/** Quotas as the metadata image holds them: `user`/`client` null for <default>, undefined for absent. */
function quotas(
  entries: readonly { user?: string | null; client?: string | null; values: ConfigMap }[],
): ReadonlyMap<string, ConfigMap> {
  const m = new Map<string, ConfigMap>();
  for (const e of entries) {
    const components = [
      ...(e.user !== undefined ? [{ entityType: 'user', entityName: e.user }] : []),
      ...(e.client !== undefined ? [{ entityType: 'client-id', entityName: e.client }] : []),
    ];
    m.set(quotaEntityKey(components) as string, e.values);
  }
  return m;
}

test("Kafka's ClientQuotaManagerTest quota violation: 2,100 ms after a spike, none once it rolled over", () => {
  const q = quotas([{ client: null, values: { producer_byte_rate: '500' } }]);
  const m = new ClientQuotaManager('produce', WINDOW, () => q);
  let t = 0;
  for (let i = 0; i < 10; i++, t += 1000) {
    assert.equal(m.recordAndGetThrottleTimeMs(ANONYMOUS_USER, 'unknown', 400, t), 0, `under quota at ${t}`);
  }
  // 400 × 10 + 2,300 = 6,300 bytes over 10.5 s = 600 B/s: (600 - 500) / 500 × 10.5 s.
  t -= 500;
  assert.equal(m.recordAndGetThrottleTimeMs(ANONYMOUS_USER, 'unknown', 2300, t), 2100);
  t += 2100;
  for (let i = 0; i < 10; i++, t += 1000) m.recordAndGetThrottleTimeMs(ANONYMOUS_USER, 'unknown', 400, t);
  assert.equal(m.recordAndGetThrottleTimeMs(ANONYMOUS_USER, 'unknown', 0, t), 0, 'the burst rolled over');
});

test('no quota of a type: nothing is recorded, nothing throttled', () => {
  const q = quotas([{ client: null, values: { consumer_byte_rate: '1' } }]);
  const m = new ClientQuotaManager('produce', WINDOW, () => q);
  assert.equal(m.enabled, false);
  assert.equal(m.recordAndGetThrottleTimeMs(ANONYMOUS_USER, 'c', 1e9, 0), 0);
  assert.equal(m.readings(0, 10).length, 0);
  assert.equal(m.maxValueInQuotaWindow(ANONYMOUS_USER, 'c', 0), Number.POSITIVE_INFINITY);
});

test('DefaultQuotaCallback precedence: the most specific of the eight levels, user before client-id', () => {
  let q = quotas([
    { client: null, values: { producer_byte_rate: '1000' } },
    { client: 'c1', values: { producer_byte_rate: '2000' } },
  ]);
  const m = new ClientQuotaManager('produce', WINDOW, () => q);
  const limit = (client: string) => m.quotaLimit(m.metricTags(ANONYMOUS_USER, client));
  assert.deepEqual(m.metricTags(ANONYMOUS_USER, 'c1'), { user: '', clientId: 'c1' }, 'client-id level only');
  assert.equal(limit('c1'), 2000);
  assert.equal(limit('c2'), 1000, '/config/clients/<default>');

  q = quotas([
    { client: null, values: { producer_byte_rate: '1000' } },
    { client: 'c1', values: { producer_byte_rate: '2000' } },
    { user: null, values: { producer_byte_rate: '3000' } },
  ]);
  assert.deepEqual(m.metricTags(ANONYMOUS_USER, 'c1'), { user: ANONYMOUS_USER, clientId: '' });
  assert.equal(limit('c1'), 3000, '/config/users/<default> comes before /config/clients/<client-id>');

  q = quotas([
    { client: null, values: { producer_byte_rate: '1000' } },
    { client: 'c1', values: { producer_byte_rate: '2000' } },
    { user: null, values: { producer_byte_rate: '3000' } },
    { user: ANONYMOUS_USER, client: 'c1', values: { producer_byte_rate: '4000' } },
    { user: null, client: null, values: { producer_byte_rate: '5000' } },
  ]);
  assert.equal(limit('c1'), 4000, '/config/users/<user>/clients/<client-id> first');
  assert.deepEqual(m.metricTags(ANONYMOUS_USER, 'c2'), { user: ANONYMOUS_USER, clientId: 'c2' });
  assert.equal(limit('c2'), 5000, '/config/users/<default>/clients/<default> before /config/users/<default>');

  q = quotas([{ user: ANONYMOUS_USER, values: { producer_byte_rate: '6000' } }]);
  assert.equal(limit('c1'), 6000, '/config/users/<user>');
  assert.deepEqual(
    m.metricTags('alice', 'c1'),
    { user: '', clientId: 'c1' },
    'levels once configured stay enabled (the multi-level lookup), as in Kafka until a restart',
  );
  assert.equal(m.quotaLimit(m.metricTags('alice', 'c1')), null, 'no client-id quota is left');
});

test('a changed quota applies to the next record; a removed one stops throttling', () => {
  let q = quotas([{ client: 'c', values: { producer_byte_rate: '1000' } }]);
  const m = new ClientQuotaManager('produce', WINDOW, () => q);
  assert.ok(m.recordAndGetThrottleTimeMs(ANONYMOUS_USER, 'c', 20_000, 0) > 0, '2,000 B/s over 10 s');
  q = quotas([{ client: 'c', values: { producer_byte_rate: '100000' } }]);
  assert.equal(m.recordAndGetThrottleTimeMs(ANONYMOUS_USER, 'c', 1, 1), 0);
  q = quotas([{ client: 'c', values: { producer_byte_rate: '10' } }]);
  assert.ok(m.recordAndGetThrottleTimeMs(ANONYMOUS_USER, 'c', 1, 2) > 0);
  q = quotas([]);
  assert.equal(m.recordAndGetThrottleTimeMs(ANONYMOUS_USER, 'c', 1, 3), 0);
});

test('the fetch cap and the request quota: a window of the limit, throttles of at most one sample span', () => {
  const q = quotas([{ client: 'c', values: { consumer_byte_rate: '1000', request_percentage: '10' } }]);
  const cq = new ClientQuotas(WINDOW, WINDOW, () => q);
  assert.equal(cq.fetch.maxValueInQuotaWindow(ANONYMOUS_USER, 'c', 0), 10_000);
  const throttled: number[] = [];
  const req = { clientId: 'c', connection: { throttle: (ms: number) => throttled.push(ms) } };
  // 500 ms of handling in one request: 50 percent-seconds over 10 s = 5 %.
  assert.equal(cq.recordRequestTime(req, 500, 0), 0);
  const ms = cq.recordRequestTime(req, 2000, 1);
  assert.equal(ms, 1000, 'capped at quota.window.size.seconds');
  cq.throttle(cq.request, req, ms, 1);
  assert.deepEqual(throttled, [1000]);
  const [reading] = cq.request.readings(2, 10);
  assert.equal(reading?.throttleTimeMs, 1000);
  assert.equal(reading?.limit, 10);
});

test("a request counts against its connection's principal: the SASL user, else ANONYMOUS", () => {
  assert.equal(quotaUser({ clientId: 'c', connection: { principal: { name: 'alice' } } }), 'alice');
  assert.equal(quotaUser({ clientId: 'c', connection: {} }), ANONYMOUS_USER);
});
