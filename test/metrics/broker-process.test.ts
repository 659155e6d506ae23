/**
 * A real `skiff broker` process with `http.listeners`: GET /metrics answers in the Prometheus text
 * format, binds loopback when the listener names no host, asks for `http.auth.token` (Bearer or
 * ?token=) when one is set, and its gauges and counters move with what the broker does (a topic
 * created, records produced with kcat and consumed). Every metric the Grafana dashboard in
 * dashboards/ refers to is in the broker's output.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type BrokerProcess, runProcess, SKIFF, startBrokerProcess } from '../support/broker-process.js';
import { httpGet, metricNamesIn, scrape } from '../support/prometheus.js';

const TOKEN = 's3cret-token';
const DASHBOARD = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../dashboards/skiff-grafana.json',
);

function metricsUrl(b: BrokerProcess): string {
  const m = /metrics on (http:\/\/\S+\/metrics)\)/.exec(b.output());
  assert.ok(m, `no metrics URL in the ready line:\n${b.output()}`);
  return m[1]!;
}

describe('skiff broker: /metrics on http.listeners', () => {
  let b: BrokerProcess;
  let url: string;
  before(async () => {
    b = await startBrokerProcess(['http.listeners=http://:0', `http.auth.token=${TOKEN}`]);
    url = metricsUrl(b);
  });
  after(async () => {
    await b?.stop();
  });
  const auth = { authorization: `Bearer ${TOKEN}` };

  it('binds loopback when the listener names no host', () => {
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
  });

  it('asks for the token: 401 without or with a wrong one; Bearer and ?token= both work', async () => {
    assert.equal((await httpGet(url)).status, 401);
    assert.equal((await httpGet(url, { authorization: 'Bearer nope' })).status, 401);
    assert.equal((await httpGet(`${url}?token=nope`)).status, 401);
    assert.equal((await httpGet(url, auth)).status, 200);
    assert.equal((await httpGet(`${url}?token=${TOKEN}`)).status, 200);
  });

  it('the gauges and counters move: a topic, records produced and consumed', async () => {
    const created = await runProcess(process.execPath, [
      SKIFF,
      'topics',
      '--bootstrap-server',
      b.bootstrap,
      '--create',
      '--topic',
      'm1',
      '--partitions',
      '2',
    ]);
    assert.equal(created.status, 0, created.stderr);
    const lines = Array.from({ length: 100 }, (_, i) => `v${i}`).join('\n');
    const produced = await runProcess('kcat', ['-P', '-b', b.bootstrap, '-t', 'm1', '-p', '0'], `${lines}\n`);
    assert.equal(produced.status, 0, produced.stderr);
    const consumed = await runProcess('kcat', ['-C', '-b', b.bootstrap, '-t', 'm1', '-p', '0', '-e', '-q']);
    assert.equal(consumed.status, 0, consumed.stderr);
    const e = await scrape(url, auth);
    const p0 = { topic: 'm1', partition: '0', node_id: '1' };
    assert.equal(e.sum('skiff_log_end_offset', p0), 100);
    assert.equal(e.sum('skiff_log_start_offset', p0), 0);
    assert.ok(e.sum('skiff_log_size_bytes', p0) > 100 * 3);
    assert.equal(e.sum('skiff_log_segments', p0), 1);
    assert.equal(e.sum('skiff_log_end_offset', { topic: 'm1', partition: '1' }), 0);
    assert.equal(e.sum('skiff_partitions'), 2);
    assert.equal(e.sum('skiff_leader_partitions'), 2);
    assert.equal(e.sum('skiff_under_replicated_partitions'), 0);
    assert.equal(e.sum('skiff_offline_partitions'), 0);
    assert.equal(e.sum('skiff_at_min_isr_partitions'), 2, 'RF 1 and min.insync.replicas 1: at the minimum');
    assert.equal(e.sum('skiff_active_controller'), 1);
    assert.equal(e.sum('skiff_replica_in_isr', { topic: 'm1', broker: '1' }), 2);
    assert.equal(e.sum('skiff_topic_messages_in_total', { topic: 'm1' }), 100);
    assert.ok(e.sum('skiff_topic_bytes_in_total', { topic: 'm1' }) > 100 * 3);
    assert.ok(e.sum('skiff_topic_bytes_out_total', { topic: 'm1' }) > 100 * 3);
    assert.ok(e.sum('skiff_requests_total', { api: 'Produce' }) >= 1);
    assert.ok(e.sum('skiff_requests_total', { api: 'FetchConsumer' }) >= 1);
    assert.ok(e.sum('skiff_request_duration_seconds_count', { api: 'Produce' }) >= 1);
    assert.equal(e.types.get('skiff_request_errors_total'), 'counter');
    assert.ok(e.sum('process_resident_memory_bytes') > 0);
    assert.ok(e.find('nodejs_eventloop_lag_p99_seconds').length === 1);
    assert.ok(e.find('process_cpu_seconds_total').length === 1);
  });

  it('every metric the Grafana dashboard refers to is in the output', async () => {
    const dash = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as {
      panels: { title: string; targets?: { expr: string }[] }[];
    };
    const e = await scrape(url, auth);
    const declared = new Set(e.types.keys());
    const exists = (name: string): boolean => {
      if (declared.has(name)) return true;
      const m = /^(.*)_(bucket|sum|count)$/.exec(name);
      return m !== null && e.types.get(m[1]!) === 'histogram';
    };
    let names = 0;
    for (const p of dash.panels)
      for (const t of p.targets ?? [])
        for (const name of metricNamesIn(t.expr)) {
          names++;
          assert.ok(exists(name), `panel '${p.title}': ${name} is not in a broker's /metrics`);
        }
    assert.ok(names > 30, `only ${names} metric references found`);
  });
});

describe('skiff broker without http.listeners', () => {
  it('serves no metrics (none are kept) and its ready line names none', async () => {
    const b = await startBrokerProcess();
    try {
      assert.doesNotMatch(b.output(), /metrics on/);
    } finally {
      await b.stop();
    }
  });
});
