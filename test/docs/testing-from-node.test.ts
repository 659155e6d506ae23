/**
 * docs/testing-from-node.md shows the example suites' real code: every fenced block named by a
 * repository file (```js examples/node-test/kafkajs.test.js) is a run of whole lines of that file,
 * verbatim but for a common indentation (an excerpt from inside a function is shown dedented), so
 * the page cannot drift from the examples that test/examples/examples.test.ts runs.
 * And the page shows each runner's suite, its hooks and a broker killed mid-test.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { it } from 'node:test';
import { repoRoot } from '../../tools/errors/generate.js';
import { fencedBlocks } from '../support/doc-blocks.js';

const ROOT = repoRoot();
/** `lines` without the indentation they all share (blank lines aside). */
function dedent(lines: readonly string[]): string {
  const indent = Math.min(
    ...lines.filter((l) => l.trim() !== '').map((l) => l.length - l.trimStart().length),
  );
  return lines.map((l) => l.slice(indent)).join('\n');
}

/** Whether some run of `file`'s lines is `body`, up to a common indentation. */
function excerptOf(file: string, body: string): boolean {
  const want = body.split('\n');
  const lines = file.split('\n');
  const target = dedent(want);
  for (let i = 0; i + want.length <= lines.length; i++)
    if (dedent(lines.slice(i, i + want.length)) === target) return true;
  return false;
}

const SUITES = [
  'examples/node-test/kafkajs.test.js',
  'examples/vitest/platformatic.test.ts',
  'examples/jest/confluent.test.js',
];

it("every block of docs/testing-from-node.md that names a file is a verbatim run of that file's lines", () => {
  const blocks = fencedBlocks(readFileSync(path.join(ROOT, 'docs', 'testing-from-node.md'), 'utf8'));
  const named = blocks.filter((b) => b.name !== undefined);
  assert.ok(named.length >= 8, `too few named blocks: ${named.length}`);
  for (const block of named) {
    const file = readFileSync(path.join(ROOT, block.name!), 'utf8');
    assert.ok(
      excerptOf(file, block.body.replace(/\n$/, '')),
      `a block differs from ${block.name}:\n${block.body}`,
    );
  }
  const shown = (file: string) => named.filter((b) => b.name === file).map((b) => b.body);
  for (const suite of SUITES) {
    const parts = shown(suite).join('\n');
    assert.match(parts, /await startCluster\(/, `${suite}: no startCluster shown`);
    assert.match(parts, /await cluster\?\.close\(\)/, `${suite}: no close() shown`);
  }
  for (const suite of SUITES.slice(0, 2))
    assert.match(shown(suite).join('\n'), /cluster\.stopBroker\(victim, \{ kill: true \}\)/, suite);
});
