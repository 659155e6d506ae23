/**
 * docs/contributing.md against the code: its layer table is LAYER_RULES (the table the import
 * check enforces), its `sh checked` blocks run in the repository with the output the text block
 * after each documents, and the benches it lists are exactly those bench/main.ts runs.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { it } from 'node:test';
import { repoRoot } from '../../tools/errors/generate.js';
import { runProcess } from '../support/broker-process.js';
import { LAYER_RULES } from '../support/import-graph.js';
import { runCheckedBlocks } from './checked-blocks.js';

const ROOT = repoRoot();
const doc = readFileSync(path.join(ROOT, 'docs', 'contributing.md'), 'utf8');

it("the layer table is the import check's LAYER_RULES, row for row", () => {
  const rows = [...doc.matchAll(/^\| `(\w+)` +\| (.+?) +\|$/gm)].map(
    ([, layer, allowed]) => [layer!, allowed === '—' ? [] : allowed!.split(', ')] as const,
  );
  assert.deepEqual(
    Object.fromEntries(rows),
    Object.fromEntries(Object.entries(LAYER_RULES).map(([k, v]) => [k, [...v]])),
  );
});

it('the checked commands run in the repository and print what the page documents', () =>
  runCheckedBlocks(doc, ROOT, 2, 120_000));

it('the benches listed are those bench/main.ts knows', async () => {
  // An unknown name makes bench/main.js exit 2 with the list of known ones, running none.
  const r = await runProcess(process.execPath, [
    path.join(ROOT, 'dist', 'bench', 'main.js'),
    'no-such-bench',
  ]);
  assert.equal(r.status, 2, r.stderr);
  const known = /\(known: ([^)]+)\)/.exec(r.stderr)?.[1]?.split(', ');
  assert.ok(known !== undefined && known.length > 0, r.stderr);
  const listed = /runs only the named ones: ((?:`[\w-]+`,?\s*)+)/.exec(doc)?.[1]?.match(/[\w-]+/g);
  assert.deepEqual([...(listed ?? [])].sort(), [...known].sort());
});
