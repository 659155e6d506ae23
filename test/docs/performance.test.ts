/**
 * docs/performance.md against the code: its `sh checked` block — the whole yardsticks bench at a
 * tiny size (every comparison, the scale rows, the charts and the report) — runs in the repository
 * and prints the table rows the page documents. Sizes are far too small for its figures to mean
 * anything; the test checks that every comparison runs and is reported, not how fast.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { it } from 'node:test';
import { repoRoot } from '../../tools/errors/generate.js';
import { requireTool } from '../cluster/helpers.js';
import { runCheckedBlocks } from './checked-blocks.js';

const ROOT = repoRoot();
const doc = readFileSync(path.join(ROOT, 'docs', 'performance.md'), 'utf8');

it('the yardsticks bench runs every comparison and prints the rows the page documents', () => {
  requireTool('kcat', '-V');
  return runCheckedBlocks(doc, ROOT, 1, 600_000);
});
