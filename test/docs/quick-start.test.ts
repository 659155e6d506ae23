/**
 * The README's quick start, run as written: every `sh` block between the quick-start markers is run
 * in order, each line a command (`sh -c`), in one fresh working directory inside the repository (so
 * that `import 'skiff'` resolves to the built package, as it does for a reader in the repository).
 * `npx skiff up` is started as the reader starts it, on free ports instead of 9092..9094 (every
 * 9092..9094 in the section is substituted); `npx skiff` is the package's bin, bin/skiff.js. A
 * named `js` block (```js quick-start.mjs) is written to that file before the commands after it
 * run. Each `text` block lists lines that must appear in the output of the block before it, `…`
 * standing for what differs from run to run and runs of spaces for any column padding.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { it } from 'node:test';
import { repoRoot } from '../../tools/errors/generate.js';
import { freePorts, removeDataDir, SkiffProcess } from '../cluster/helpers.js';
import { runProcess } from '../support/broker-process.js';
import { type Block, fencedBlocks, linePattern } from '../support/doc-blocks.js';

const ROOT = repoRoot();
const BIN = path.join(ROOT, 'bin', 'skiff.js');
const BEGIN = '<!-- quick-start:begin';
const END = '<!-- quick-start:end -->';
const DOCUMENTED_PORTS = [9092, 9093, 9094];

/** The fenced blocks of the README's quick-start section, in order. */
function quickStartBlocks(readme: string): Block[] {
  const start = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  assert.ok(start >= 0 && end > start, 'README.md has no quick-start section between its markers');
  return fencedBlocks(readme.slice(start, end));
}

it("the README's quick start runs as written: skiff up, the kcat commands and the KafkaJS program, each with its documented output", async () => {
  const blocks = quickStartBlocks(readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
  const kinds = blocks.map((b) => b.lang);
  assert.ok(kinds.filter((k) => k === 'sh').length >= 4, `too few sh blocks: ${kinds}`);
  assert.ok(kinds.filter((k) => k === 'text').length >= 4, `too few text blocks: ${kinds}`);
  assert.ok(
    blocks.some((b) => b.lang === 'js' && b.name !== undefined),
    'no named js block',
  );

  const base = await freePorts(DOCUMENTED_PORTS.length);
  const port = (text: string): string =>
    DOCUMENTED_PORTS.reduce((t, p, i) => t.replaceAll(String(p), String(base + i)), text);
  const work = mkdtempSync(path.join(ROOT, 'dist', 'quick-start-'));
  const env = {
    ...process.env,
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}`,
  };
  let up: SkiffProcess | undefined;
  const checked: string[] = [];
  try {
    let output: string | undefined;
    for (const block of blocks) {
      if (block.lang === 'js' && block.name !== undefined) {
        writeFileSync(path.join(work, block.name), block.body);
      } else if (block.lang === 'sh') {
        output = '';
        for (const line of block.body.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'))) {
          const upArgs = /^npx skiff up(?: (.*))?$/.exec(line);
          if (upArgs !== null) {
            assert.equal(up, undefined, 'the quick start starts one skiff up');
            const args = ['up', ...(upArgs[1]?.split(' ') ?? []), '--port', String(base), '--http-port', '0'];
            up = new SkiffProcess(args, spawn(process.execPath, [BIN, ...args], { cwd: work, env }));
            await up.waitFor(/cluster \S+ up in \d+ ms/, 60_000);
            output = up.output();
            continue;
          }
          const command = port(line).replace(/^npx skiff /, `node ${JSON.stringify(BIN)} `);
          const run = await runProcess('sh', ['-c', command], '', 60_000, { cwd: work, env });
          assert.equal(run.status, 0, `${line} exited ${run.status}:\n${run.stdout}${run.stderr}`);
          output += run.stdout;
        }
      } else if (block.lang === 'text') {
        assert.notEqual(output, undefined, 'a text block before any command');
        for (const line of block.body.split('\n').filter((l) => l.trim() !== '')) {
          assert.match(output!, linePattern(port(line)), `documented output line not printed: ${line}`);
          checked.push(line);
        }
      } else {
        assert.fail(`unexpected block in the quick start: ${block.lang}`);
      }
    }
    // "Ctrl-C in the first shell stops the skiff up cluster": SIGINT, a clean exit.
    const exit = await up?.stop(20_000, 'SIGINT');
    assert.deepEqual(exit, { code: 0, signal: null }, `skiff up after Ctrl-C:\n${up?.output()}`);
  } finally {
    if (up) await up.stop(15_000);
    removeDataDir(work);
  }
  assert.ok(
    checked.includes('k1: hello, skiff') && checked.includes('k1: hello from node'),
    `checked ${checked}`,
  );
});
