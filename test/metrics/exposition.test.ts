import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { forEachErrorCode } from '../../src/broker/broker-metrics.js';
import { mergeExpositions } from '../../src/metrics/exposition.js';
import { parseHttpListener } from '../../src/metrics/http-endpoint.js';
import { PerScrape, registerScrapeFamily } from '../../src/metrics/scrape-family.js';
import { metricNamesIn, parseExposition } from '../support/prometheus.js';

async function brokerText(nodeId: number, requests: number): Promise<string> {
  const registry = new Registry();
  registry.setDefaultLabels({ node_id: String(nodeId) });
  new Counter({ name: 'skiff_requests_total', help: 'r', labelNames: ['api'], registers: [registry] })
    .labels('Produce')
    .inc(requests);
  new Histogram({ name: 'skiff_d_seconds', help: 'd', buckets: [1], registers: [registry] }).observe(0.5);
  registerScrapeFamily(registry, 'skiff_g', 'g', 'gauge', (emit) => emit({ topic: 't' }, nodeId * 10));
  return registry.metrics();
}

describe('mergeExpositions', () => {
  it('puts each family together once, every broker’s samples under one HELP and TYPE', async () => {
    const merged = mergeExpositions([await brokerText(1, 3), await brokerText(2, 4)]);
    const e = parseExposition(merged); // throws on a split family
    assert.equal(merged.match(/# TYPE skiff_requests_total/g)?.length, 1);
    assert.equal(e.sum('skiff_requests_total', { node_id: '1' }), 3);
    assert.equal(e.sum('skiff_requests_total', { node_id: '2' }), 4);
    assert.equal(e.find('skiff_d_seconds_bucket').length, 4);
    assert.deepEqual(
      e.find('skiff_g').map((s) => s.value),
      [10, 20],
    );
    assert.equal(e.types.get('skiff_d_seconds'), 'histogram');
  });

  it('is empty for no input', () => {
    assert.equal(mergeExpositions([]), '');
  });
});

describe('PerScrape', () => {
  it('computes once per scrape and again at the next', async () => {
    let n = 0;
    const shared = new PerScrape(() => ++n);
    const registry = new Registry();
    registerScrapeFamily(registry, 'a', 'a', 'gauge', (emit) => emit({}, shared.get()));
    registerScrapeFamily(registry, 'b', 'b', 'gauge', (emit) => emit({}, shared.get()));
    const first = parseExposition(await registry.metrics());
    assert.equal(first.sum('a'), 1);
    assert.equal(first.sum('b'), 1);
    assert.equal(parseExposition(await registry.metrics()).sum('b'), 2);
  });
});

describe('parseHttpListener', () => {
  it('binds loopback for an empty host, takes a named one, refuses what is not http://host:port', () => {
    assert.deepEqual(parseHttpListener('http://:9100'), { host: '127.0.0.1', port: 9100 });
    assert.deepEqual(parseHttpListener('http://0.0.0.0:0'), { host: '0.0.0.0', port: 0 });
    assert.deepEqual(parseHttpListener('HTTP://[::1]:80/'), { host: '::1', port: 80 });
    for (const bad of ['https://:1', '127.0.0.1:9100', 'http://a:1,http://b:2', 'http://a:99999', ''])
      assert.throws(() => parseHttpListener(bad), /http\.listeners/);
  });
});

describe('forEachErrorCode', () => {
  it('finds every non-zero errorCode in plain objects and arrays, and looks into nothing else', () => {
    const codes: number[] = [];
    forEachErrorCode(
      {
        errorCode: 0,
        responses: [
          { partitions: [{ errorCode: 6, records: Buffer.from([1]) }, { errorCode: 0 }] },
          { partitions: [{ errorCode: 3 }] },
        ],
        region: new (class {
          errorCode = 9;
        })(),
      },
      (c) => codes.push(c),
    );
    assert.deepEqual(codes, [6, 3]);
  });
});

describe('metricNamesIn (the dashboard test’s reader of PromQL)', () => {
  it('finds the metric names, not functions, labels, grouping or numbers', () => {
    assert.deepEqual(
      metricNamesIn(
        'histogram_quantile(0.99, sum by (api, le) (rate(skiff_request_duration_seconds_bucket{node_id=~"$node_id"}[5m])))',
      ),
      ['skiff_request_duration_seconds_bucket'],
    );
    assert.deepEqual(metricNamesIn('max by (topic) (skiff_log_end_offset - skiff_log_start_offset) > 0'), [
      'skiff_log_end_offset',
      'skiff_log_start_offset',
    ]);
  });
});
