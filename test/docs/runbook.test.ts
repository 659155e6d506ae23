/**
 * docs/runbook.md, run as written: its first `sh` block starts `npx skiff up --brokers 4` (on free
 * ports instead of 9092..9095: every 9092..9095 in the page is substituted), then every other `sh`
 * block runs in order as one shell script (`set -e`, stderr into stdout, as a reader's terminal
 * shows both) in the same fresh working directory, so `./.skiff` is that cluster's data dir;
 * `npx skiff` is the package's bin, bin/skiff.js. Each `text` block lists lines that must appear in
 * the output of the `sh` block before it, `…` standing for what differs from run to run and runs of
 * spaces for any column padding (test/support/doc-blocks.ts). Then Ctrl-C (SIGINT) must stop the
 * cluster cleanly.
 *
 * SKIFF_RUNBOOK_CAPTURE=<file> also writes every block's real output there (the ports put back to
 * 9092..9095), which is where the page's output blocks come from when the page is revised.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { it } from 'node:test';
import { repoRoot } from '../../tools/errors/generate.js';
import { freePorts, removeDataDir, SkiffProcess } from '../cluster/helpers.js';
import { runProcess } from '../support/broker-process.js';
import { fencedBlocks, linePattern } from '../support/doc-blocks.js';

const ROOT = repoRoot();
const BIN = path.join(ROOT, 'bin', 'skiff.js');
const DOCUMENTED_PORTS = [9092, 9093, 9094, 9095];
const UP = 'npx skiff up --brokers 4';
const BLOCK_TIMEOUT_MS = 60_000;

it('docs/runbook.md runs as written against a fresh skiff up: every experiment, each command with its documented output', async () => {
  const blocks = fencedBlocks(readFileSync(path.join(ROOT, 'docs', 'runbook.md'), 'utf8'));
  const shells = blocks.filter((b) => b.lang === 'sh');
  assert.equal(shells[0]?.body.trim(), UP, 'the runbook starts with its cluster');
  assert.ok(shells.length >= 20, `too few sh blocks: ${shells.length}`);
  assert.ok(blocks.filter((b) => b.lang === 'text').length >= 20, 'too few text blocks');

  const base = await freePorts(DOCUMENTED_PORTS.length);
  const port = (text: string): string =>
    DOCUMENTED_PORTS.reduce((t, p, i) => t.replaceAll(String(p), String(base + i)), text);
  const unport = (text: string): string =>
    DOCUMENTED_PORTS.reduce((t, p, i) => t.replaceAll(String(base + i), String(p)), text);
  const capture = process.env.SKIFF_RUNBOOK_CAPTURE;
  const work = mkdtempSync(path.join(ROOT, 'dist', 'runbook-'));
  const env = {
    ...process.env,
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}`,
  };
  let up: SkiffProcess | undefined;
  const missing: string[] = [];
  let checked = 0;
  try {
    let output: string | undefined;
    let last = '';
    for (const block of blocks) {
      if (block.lang === 'sh' && block.body.trim() === UP) {
        assert.equal(up, undefined, 'the runbook starts one skiff up');
        const args = ['up', '--brokers', '4', '--port', String(base), '--http-port', '0'];
        up = new SkiffProcess(args, spawn(process.execPath, [BIN, ...args], { cwd: work, env }));
        await up.waitFor(/cluster \S+ up in \d+ ms/, 60_000);
        output = up.output();
      } else if (block.lang === 'sh') {
        assert.notEqual(up, undefined, 'a command before skiff up');
        const script = port(block.body).replaceAll('npx skiff ', `node ${JSON.stringify(BIN)} `);
        const run = await runProcess('sh', ['-c', `exec 2>&1\nset -e\n${script}`], '', BLOCK_TIMEOUT_MS, {
          cwd: work,
          env,
        });
        assert.equal(run.status, 0, `this block exited ${run.status}:\n${block.body}\n${run.stdout}`);
        output = run.stdout;
      } else if (block.lang === 'text') {
        assert.notEqual(output, undefined, 'a text block before any command');
        for (const line of block.body.split('\n').filter((l) => l.trim() !== '')) {
          checked++;
          if (!linePattern(port(line)).test(output!)) missing.push(`${line}\n  after: ${last}`);
        }
        continue;
      } else {
        assert.fail(`unexpected block in the runbook: ${block.lang}`);
      }
      last = block.body.trim().split('\n')[0]!;
      if (capture !== undefined) appendFileSync(capture, `$ ${block.body.trim()}\n${unport(output!)}\n`);
    }
    // Ctrl-C in the first shell stops the cluster: SIGINT, a clean exit.
    const exit = await up?.stop(20_000, 'SIGINT');
    assert.deepEqual(exit, { code: 0, signal: null }, `skiff up after Ctrl-C:\n${up?.output()}`);
  } finally {
    if (up) await up.stop(15_000);
    removeDataDir(work);
  }
  assert.deepEqual(missing, [], `documented output lines not printed (of ${checked} checked)`);
});
