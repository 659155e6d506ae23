/**
 * A guide's `sh checked` blocks run in the repository as a reader would run them, each with the
 * output the `text` block after it documents (docs/contributing.md, docs/performance.md).
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { runProcess } from '../support/broker-process.js';
import { fencedBlocks, linePattern } from '../support/doc-blocks.js';

/** Runs every `sh checked` block of `doc` in `cwd` (at least `atLeast` of them) and checks its output. */
export async function runCheckedBlocks(doc: string, cwd: string, atLeast: number, timeoutMs: number) {
  const blocks = fencedBlocks(doc);
  const checked = blocks.flatMap((b, i) => (b.lang === 'sh' && b.name === 'checked' ? [i] : []));
  assert.ok(checked.length >= atLeast, 'too few checked blocks');
  // A reader's shell, not this test runner's child: with its NODE_TEST_CONTEXT a nested `node --test`
  // would report to this runner instead of printing.
  const { NODE_TEST_CONTEXT: _, ...outside } = process.env;
  const env = {
    ...outside,
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}`,
  };
  for (const i of checked) {
    const script = blocks[i]!.body;
    const r = await runProcess('sh', ['-e', '-c', script], '', timeoutMs, { cwd, env });
    assert.equal(r.status, 0, `${script} exited ${r.status}:\n${r.stdout}${r.stderr}`);
    const next = blocks[i + 1];
    if (next?.lang !== 'text') continue;
    for (const line of next.body.split('\n').filter((l) => l.trim() !== ''))
      assert.match(r.stdout, linePattern(line), `${script}: not printed: ${line}\n${r.stdout}`);
  }
}
