import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { createProcessMetrics } from '../../src/metrics/registry.js';
import { registerScrapeFamily } from '../../src/metrics/scrape-family.js';
import { LabelSets, labelSet, registerTextFamily } from '../../src/metrics/text-family.js';
import { parseExposition } from '../support/prometheus.js';

const LABELS = [
  { topic: 'orders', partition: 0 },
  { topic: 'a"b\\c\nd', partition: 7 },
];

/** The lines of family `name` in an exposition. */
function familyLines(text: string, name: string): string[] {
  return text
    .split('\n')
    .filter(
      (l) => l === name || l.startsWith(`${name} `) || l.startsWith(`${name}{`) || l.includes(` ${name} `),
    );
}

describe('TextFamily', () => {
  for (const defaults of [{ node_id: '1' }, null]) {
    it(`writes what prom-client writes for the same samples (${defaults === null ? 'no' : 'with'} default labels)`, async () => {
      const ours = createProcessMetrics(() => 0).registry;
      const theirs = new Registry();
      if (defaults !== null) for (const r of [ours, theirs]) r.setDefaultLabels(defaults);
      const sets = LABELS.map(labelSet);
      registerTextFamily(ours, 'skiff_t', 'help with \\ and\nnewline', 'gauge', (emit) => {
        emit(sets[0]!, 12n);
        emit(sets[1]!, 0.5);
        emit(labelSet({}), 3);
      });
      registerScrapeFamily(theirs, 'skiff_t', 'help with \\ and\nnewline', 'gauge', (emit) => {
        emit(LABELS[0]!, 12);
        emit(LABELS[1]!, 0.5);
        emit({}, 3);
      });
      const text = await ours.metrics();
      assert.deepEqual(familyLines(text, 'skiff_t'), familyLines(await theirs.metrics(), 'skiff_t'));
      const e = parseExposition(text); // the strict parser: throws on a malformed line
      assert.equal(e.sum('skiff_t', { topic: 'a"b\\c\nd', partition: '7' }), 0.5);
      assert.equal(e.types.get('skiff_t'), 'gauge');
      assert.ok(e.find('process_cpu_seconds_total').length > 0, 'prom-client still writes the rest');
      const json = await ours.getMetricsAsJSON();
      assert.deepEqual(
        json.find((m) => m.name === 'skiff_t')?.values.map((v) => v.value),
        [12, 0.5, 3],
      );
    });
  }
});

describe('LabelSets', () => {
  it('renders an object’s labels once, and a new object’s afresh', () => {
    const sets = new LabelSets<object>();
    const a = {};
    let made = 0;
    const labels = () => {
      made++;
      return { topic: 't', partition: 1 };
    };
    const first = sets.of(a, 0, labels);
    assert.equal(first.text, 'topic="t",partition="1"');
    assert.equal(sets.of(a, 0, labels), first);
    assert.notEqual(sets.of(a, 2, labels), first);
    assert.notEqual(sets.of({}, 0, labels), first);
    assert.equal(made, 3);
  });
});
