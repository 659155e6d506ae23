import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as module from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './baseline.js';
import { SKIFF, startBroker } from './broker.js';

/**
 * Issue 17's start-up targets for the tools, against a bare Node start measured beside them in the
 * same run (interleaved, RUNS of each, medians):
 *  - `skiff topics --help` <= 3x `node -e 0`;
 *  - `skiff topics --list` against a running one-broker cluster <= 4x `node -e 0`.
 * One unmeasured round first, so Node 22.1+'s compile cache (turned on by main.js) is warm, as it
 * is for every run after a user's first. The targets are checked here, never in tests
 * (test/cli/startup.test.ts checks which modules a command loads).
 */
const RUNS = 10;
const HELP_TARGET = 3;
const LIST_TARGET = 4;

/** Runs `node args...` to its end; wall-clock milliseconds. A failed run fails the bench. */
function timeRun(args: readonly string[]): Promise<{ ms: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(process.execPath, [...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.once('close', (code) => {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (code === 0) resolve({ ms, stdout });
      else reject(new Error(`node ${args.join(' ')} exited with ${code}: ${stderr.trim()}`));
    });
  });
}

const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');

export async function benchTools(): Promise<void> {
  const cache =
    'enableCompileCache' in module
      ? 'compile cache: main.js turns it on'
      : 'no compile cache before Node 22.1';
  console.log(`tools: start-up beside a bare node (Node ${process.version}, ${cache}; medians of ${RUNS})`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-bench-tools-'));
  const broker = await startBroker(dir);
  try {
    const topic = 'bench-tools';
    const bs = ['--bootstrap-server', `127.0.0.1:${broker.port}`];
    await timeRun([SKIFF, 'topics', ...bs, '--create', '--topic', topic, '--partitions', '1']);
    const cases = [
      { name: 'node -e 0', args: ['-e', '0'] },
      { name: 'skiff topics --help', args: [SKIFF, 'topics', '--help'] },
      { name: 'skiff topics --list', args: [SKIFF, 'topics', '--list', ...bs] },
      { name: 'skiff --help (diagnostic)', args: [SKIFF, '--help'] },
    ];
    const listed = await timeRun(cases[2]!.args);
    if (listed.stdout !== `${topic}\n`)
      throw new Error(`topics --list printed ${JSON.stringify(listed.stdout)}`);
    const times = cases.map(() => [] as number[]);
    for (let round = 0; round <= RUNS; round++) {
      for (const [i, c] of cases.entries()) {
        const { ms } = await timeRun(c.args);
        if (round > 0) times[i]!.push(ms);
      }
    }
    const [node, help, list, top] = times.map(median) as [number, number, number, number];
    console.log(`  node -e 0: ${node.toFixed(0)} ms`);
    console.log(
      `  skiff topics --help: ${help.toFixed(0)} ms = ${(help / node).toFixed(2)}x node ` +
        `(target <= ${HELP_TARGET}x: ${verdict(help / node <= HELP_TARGET)})`,
    );
    console.log(
      `  skiff topics --list (one broker): ${list.toFixed(0)} ms = ${(list / node).toFixed(2)}x node ` +
        `(target <= ${LIST_TARGET}x: ${verdict(list / node <= LIST_TARGET)})`,
    );
    console.log(`  diagnostic: skiff --help ${top.toFixed(0)} ms = ${(top / node).toFixed(2)}x node`);
  } finally {
    await broker.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await benchTools();
