import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ANONYMOUS_USER, ClientQuotaManager, ClientQuotas } from '../../src/broker/client-quota-manager.js';
import { ControllerMutationQuota } from '../../src/broker/controller-mutation-quota.js';
import { Rate, TokenBucket, tokenBucketThrottleTimeMs } from '../../src/common/sampled-stat.js';
import { quotaEntityKey } from '../../src/metadata/client-quotas.js';
import type { ConfigMap } from '../../src/metadata/cluster-metadata.js';

// Kafka's ControllerMutationQuotaManagerTest: a bound of 10 mutations/s over 10 samples of 1 s.
const WINDOW = { samples: 10, sampleMs: 1000 };

function quotaOf(clientId: string | null, rate: string): ReadonlyMap<string, ConfigMap> {
  const entity = quotaEntityKey([{ entityType: 'client-id', entityName: clientId }]) as string;
  return new Map([[entity, { controller_mutation_rate: rate }]]);
}

const manager = (q: ReadonlyMap<string, ConfigMap>): ClientQuotaManager =>
  new ClientQuotaManager('controller_mutation', WINDOW, () => q);

test('TokenBucket: starts full at samples × span of the bound, takes a value whole, refills at the bound', () => {
  const bucket = new TokenBucket(WINDOW);
  assert.equal(bucket.measure(10, 5000), 100);
  bucket.record(90, 10, 5000);
  bucket.record(90, 10, 5000);
  assert.equal(bucket.measure(10, 5000), -80, 'below zero: the second value is not cut');
  assert.equal(tokenBucketThrottleTimeMs(-80, 10), 8000);
  assert.equal(bucket.measure(10, 9000), -40, '4 s refill 40 credits');
  assert.equal(bucket.measure(10, 60_000), 100, 'never above the burst');
  assert.equal(bucket.measure(20, 60_000), 100, 'a raised bound refills from what is there');
  assert.equal(bucket.measure(20, 65_000), 200, '...up to its own burst');
});

test('strict: accepted while the bucket is not below zero, then refused with the time to refill', () => {
  const m = manager(quotaOf('c', '10'));
  const quota = new ControllerMutationQuota(m, ANONYMOUS_USER, 'c', true);
  assert.equal(quota.record(90, 0), true);
  assert.equal(quota.record(90, 0), true, 'the bucket was at 10: the topic goes through whole');
  assert.equal(quota.throttleTimeMs(0), 0, 'a strict quota throttles only what it refuses');
  assert.equal(quota.record(90, 0), false, 'at -80 the next topic is refused');
  assert.equal(quota.throttleTimeMs(0), 8000);
  assert.equal(quota.record(1, 0), false, 'a refused topic was not recorded: still 8 s');
  assert.equal(quota.throttleTimeMs(5000), 3000, 'the throttle counts down');
  assert.equal(quota.record(1, 8000), true, 'refilled to zero, accepted');
});

test('permissive (old request versions): everything recorded and accepted, the throttle of the deficit', () => {
  const m = manager(quotaOf(null, '10'));
  const quota = new ControllerMutationQuota(m, ANONYMOUS_USER, 'any', false);
  assert.equal(quota.record(90, 0), true);
  assert.equal(quota.throttleTimeMs(0), 0);
  assert.equal(quota.record(90, 0), true);
  assert.equal(quota.throttleTimeMs(0), 8000);
  assert.equal(quota.record(90, 0), true, 'accepted although exhausted');
  assert.equal(quota.throttleTimeMs(0), 17_000);
  assert.equal(quota.throttleTimeMs(5000), 12_000);
});

test("the manager's strict record: Kafka's spike of 110 after ten seconds at the quota", () => {
  const m = manager(quotaOf('c', '10'));
  let t = 0;
  for (let i = 0; i < 10; i++, t += 1000)
    assert.equal(m.recordMutations(ANONYMOUS_USER, 'c', 10, true, t), 0);
  assert.equal(m.recordMutations(ANONYMOUS_USER, 'c', 110, true, t), 0, '100 credits: accepted');
  assert.equal(m.recordMutations(ANONYMOUS_USER, 'c', 110, true, t), 1000, 'at -10: refused, 1 s');
  t += 1000;
  assert.equal(m.recordMutations(ANONYMOUS_USER, 'c', 110, true, t), 0, 'back to zero: accepted');
  const [reading] = m.readings(t, 10);
  assert.equal(reading?.limit, 10);
  assert.equal(reading?.tokens, -110);
  // The mutation rate meters what was accepted, not the refused spike.
  const accepted = new Rate(WINDOW);
  for (let i = 0; i < 10; i++) accepted.record(10, i * 1000);
  accepted.record(110, 10_000);
  accepted.record(110, t);
  assert.equal(reading?.value, accepted.measure(t));
});

test('no controller_mutation_rate configured: unbounded, nothing recorded; another entity without one is only metered', () => {
  const none = manager(
    new Map([
      [quotaEntityKey([{ entityType: 'client-id', entityName: 'c' }]) as string, { producer_byte_rate: '1' }],
    ]),
  );
  const quota = new ControllerMutationQuota(none, ANONYMOUS_USER, 'c', true);
  assert.equal(quota.unbounded, true);
  assert.equal(quota.mayRefuse, false);
  assert.equal(quota.record(1e9, 0), true);
  assert.deepEqual(none.readings(0, 10), []);

  const m = manager(quotaOf('limited', '1'));
  const free = new ControllerMutationQuota(m, ANONYMOUS_USER, 'free', true);
  assert.equal(free.mayRefuse, false);
  assert.equal(free.record(1e6, 0), true);
  assert.equal(free.record(1e6, 0), true);
  assert.deepEqual(
    m.readings(0, 10).map((r) => [r.clientId, r.limit, r.tokens]),
    [['free', null, null]],
  );
});

test('the response throttle: the longer of the mutation and request quotas, the connection muted once by it', () => {
  const entity = quotaEntityKey([{ entityType: 'client-id', entityName: 'c' }]) as string;
  const q = new Map([[entity, { controller_mutation_rate: '10', request_percentage: '1000' }]]);
  const cq = new ClientQuotas({ samples: 11, sampleMs: 1000 }, WINDOW, () => q);
  const muted: number[] = [];
  const req = {
    clientId: 'c',
    apiVersion: 6,
    connection: { throttle: (ms: number) => muted.push(ms) },
    handlingMs: () => 1,
  };
  const quota = cq.controllerMutationQuota(req, 6);
  assert.equal(quota.strict, true);
  assert.equal(cq.controllerMutationQuota({ ...req, apiVersion: 5 }, 6).strict, false);
  quota.record(150, 0);
  quota.record(1, 0);
  assert.equal(cq.throttleWithControllerQuota(req, quota, 1000), 4000);
  assert.deepEqual(muted, [4000]);
  assert.equal(cq.controllerMutation.readings(1000, 10)[0]?.throttleTimeMs, 4000);
});
