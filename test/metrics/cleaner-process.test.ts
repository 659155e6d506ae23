/**
 * The log cleaner's gauges scraped from a real `skiff broker` process that has cleaned a log:
 * keyed records produced with kcat into a compacted topic with small segments, the cleaner's log
 * line awaited, then /metrics read against what that line says.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  type BrokerProcess,
  runProcess,
  SKIFF,
  startBrokerProcess,
  waitForOutput,
} from '../support/broker-process.js';
import { scrape } from '../support/prometheus.js';

describe('skiff broker: the log cleaner gauges after a cleaning', () => {
  let b: BrokerProcess;
  let url: string;
  before(async () => {
    b = await startBrokerProcess([
      'http.listeners=http://:0',
      'log.cleaner.backoff.ms=100',
      // 10,000 offset map slots: the utilization of 200 keys is a whole percent.
      `log.cleaner.dedupe.buffer.size=${24 * 10_000}`,
    ]);
    url = /metrics on (http:\/\/\S+\/metrics)\)/.exec(b.output())![1]!;
  });
  after(async () => {
    await b?.stop();
  });

  it('recopy, buffer utilization, dirty percent, last run, no dead thread, nothing uncleanable', async () => {
    const created = await runProcess(process.execPath, [
      SKIFF,
      'topics',
      '--bootstrap-server',
      b.bootstrap,
      '--create',
      '--topic',
      'kv',
      '--config',
      'cleanup.policy=compact',
      '--config',
      'segment.bytes=8192',
    ]);
    assert.equal(created.status, 0, created.stderr);
    const lines = Array.from({ length: 4000 }, (_, i) => `key-${i % 200}:value-${i}`).join('\n');
    const produced = await runProcess(
      'kcat',
      ['-P', '-b', b.bootstrap, '-t', 'kv', '-K:', '-z', 'none', '-X', 'batch.num.messages=100'],
      `${lines}\n`,
    );
    assert.equal(produced.status, 0, produced.stderr);
    await waitForOutput(b, /cleaned log kv-0/);
    const line =
      /cleaned log kv-0 .*buffer utilization ([\d.]+)%; start size .* \((\d+) messages\), end size .* \((\d+) messages\)/.exec(
        b.output(),
      );
    assert.ok(line, b.output());
    const e = await scrape(url);
    assert.equal(e.sum('skiff_log_cleaner_max_buffer_utilization_percent'), Math.trunc(Number(line[1])));
    assert.ok(e.sum('skiff_log_cleaner_max_buffer_utilization_percent') >= 1);
    const recopy = e.sum('skiff_log_cleaner_recopy_percent');
    assert.ok(recopy > 0 && recopy < 50, `recopy ${recopy}%: ${line[3]} of ${line[2]} messages kept`);
    assert.equal(e.sum('skiff_log_cleaner_max_clean_time_seconds'), 0);
    assert.equal(
      e.sum('skiff_log_cleaner_max_compaction_delay_seconds'),
      0,
      'max.compaction.lag.ms is infinite',
    );
    assert.equal(e.sum('skiff_log_cleaner_dead_threads'), 0);
    const sinceRun = e.sum('skiff_log_cleaner_time_since_last_run_seconds');
    assert.ok(sinceRun >= 0 && sinceRun < 5, `last run ${sinceRun} s ago, backoff 0.1 s`);
    const dirty = e.sum('skiff_log_cleaner_max_dirty_percent');
    assert.ok(dirty >= 0 && dirty < 100, `dirtiest ${dirty}% after the cleaning`);
    const uncleanable = e.find('skiff_log_cleaner_uncleanable_partitions');
    assert.equal(uncleanable.length, 1);
    assert.match(uncleanable[0]!.labels.log_dir!, /logs$/);
    assert.equal(uncleanable[0]!.value, 0);
    assert.equal(e.sum('skiff_log_cleaner_uncleanable_bytes'), 0);
    assert.equal(e.types.get('skiff_log_cleaner_recopy_percent'), 'gauge');
  });
});
