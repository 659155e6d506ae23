/**
 * The examples that are tests (examples/): each runner — node:test with KafkaJS, Vitest with
 * @platformatic/kafka, Jest with @confluentinc/kafka-javascript — runs its suite as a user would,
 * in its own process, and must report every test passed. Each gets its own TMPDIR, so that the
 * clusters' temporary data dirs (startCluster makes them with os.tmpdir()) land in a known place:
 * the test sees them appear while the runner works and checks, once it has exited, that none is
 * left and that no process names that dir (a broker's title is `skiff broker <id> <log dir>`).
 * Also: the examples type-check against the package's published declarations.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { processesMentioning } from '../support/processes.js';

/** The repository root (this file runs as dist/test/examples/examples.test.js). */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const RUNNER_TIMEOUT_MS = 180_000;

interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly output: string;
  /** Every skiff-* entry seen in the runner's TMPDIR while it ran (the clusters' data dirs). */
  readonly dataDirs: ReadonlySet<string>;
  readonly ms: number;
}

/** Runs `node args...` from the repository root with TMPDIR=tmp; resolves when it has exited. */
function runNode(args: readonly string[], tmp: string, env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const started = Date.now();
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    TMPDIR: tmp,
    NO_COLOR: '1',
    FORCE_COLOR: '0',
    ...env,
  };
  // Set by the node:test run this file is in: a child `node --test` would take itself for one of
  // its subprocesses and run nothing.
  delete childEnv.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group, so that a timeout ends the runner's workers too
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    output += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    output += d;
  });
  const dataDirs = new Set<string>();
  const watch = setInterval(() => {
    for (const name of fs.readdirSync(tmp)) if (name.startsWith('skiff-')) dataDirs.add(name);
  }, 100);
  const timer = setTimeout(() => {
    output += `\n[examples.test: timed out after ${RUNNER_TIMEOUT_MS} ms, SIGKILL]\n`;
    process.kill(-child.pid!, 'SIGKILL');
  }, RUNNER_TIMEOUT_MS);
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      clearInterval(watch);
      clearTimeout(timer);
      resolve({ code, signal, output, dataDirs, ms: Date.now() - started });
    });
  });
}

/** Runs one example suite and checks its result and that nothing of its clusters is left. */
async function runExample(
  name: string,
  args: readonly string[],
  summary: (output: string) => { passed: number; failed: number },
  expected: { tests: number; clusters: number },
  env: NodeJS.ProcessEnv = {},
): Promise<void> {
  let tmp = fs.mkdtempSync(path.join(os.tmpdir(), `skiff-example-${name}-`));
  const tmps = [tmp];
  try {
    let run = await runNode(args, tmp, env);
    if (run.signal === 'SIGSEGV' || run.signal === 'SIGBUS') {
      // A native crash of the runner's process (the client's librdkafka binding under Jest's VM
      // modules crashed so once in CI, before any test ran; not reproduced in six runs here): said,
      // and run once more — a crash that repeats fails the test.
      console.log(
        `${name}: the runner died by ${run.signal} after ${run.ms} ms; running it again:\n${run.output.slice(-2000)}`,
      );
      // In a TMPDIR of its own: the crashed run's clusters had no chance to remove their data dirs.
      tmp = fs.mkdtempSync(path.join(os.tmpdir(), `skiff-example-${name}-`));
      tmps.push(tmp);
      run = await runNode(args, tmp, env);
    }
    const tail = run.output.slice(-6000);
    assert.equal(run.signal, null, `${name} ended by ${run.signal}:\n${tail}`);
    assert.equal(run.code, 0, `${name} exited with ${run.code}:\n${tail}`);
    assert.deepEqual(summary(run.output), { passed: expected.tests, failed: 0 }, tail);
    // The clusters ran under this TMPDIR, and are gone.
    assert.ok(
      run.dataDirs.size >= expected.clusters,
      `${name}: expected ${expected.clusters} cluster data dir(s) in ${tmp}, saw ${[...run.dataDirs].join(', ')}`,
    );
    const left = fs.readdirSync(tmp).filter((n) => n.startsWith('skiff-'));
    assert.deepEqual(left, [], `${name}: data dirs left in ${tmp}`);
    assert.deepEqual(processesMentioning(tmp), [], `${name}: processes left`);
    console.log(`${name}: ${expected.tests} passed in ${run.ms} ms`);
  } finally {
    for (const t of tmps) fs.rmSync(t, { recursive: true, force: true });
  }
}

function count(output: string, re: RegExp): number {
  const m = re.exec(output);
  return m === null ? -1 : Number(m[1]);
}

describe('examples/: the runners pass their suites and leave nothing behind', () => {
  it('node:test with KafkaJS', async () => {
    const dir = path.join(ROOT, 'examples', 'node-test');
    const files = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.test.js'))
      .map((f) => path.join('examples', 'node-test', f));
    assert.ok(files.length > 0);
    await runExample(
      'node-test',
      ['--test', '--test-reporter=tap', ...files],
      (out) => ({ passed: count(out, /^# pass (\d+)$/m), failed: count(out, /^# fail (\d+)$/m) }),
      { tests: 3, clusters: files.length },
    );
  });

  it('Vitest with @platformatic/kafka', async () => {
    const vitest = path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');
    await runExample(
      'vitest',
      [vitest, 'run', '--root', 'examples/vitest'],
      (out) => ({
        passed: count(out, /^\s*Tests\s+(?:\d+ failed \| )?(\d+) passed/m),
        failed: Math.max(0, count(out, /^\s*Tests\s+(\d+) failed/m)),
      }),
      { tests: 3, clusters: 1 },
    );
  });

  it('Jest with @confluentinc/kafka-javascript', async () => {
    const jest = path.join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js');
    await runExample(
      'jest',
      [jest, '--config', 'examples/jest/jest.config.js'],
      (out) => ({
        passed: count(out, /^Tests:.*?(\d+) passed/m),
        failed: Math.max(0, count(out, /^Tests:.*?(\d+) failed/m)),
      }),
      { tests: 3, clusters: 1 },
      // Jest's documented way to run ES modules.
      { NODE_OPTIONS: '--experimental-vm-modules' },
    );
  });

  it('the examples type-check against the published declarations (tsc -p examples)', async () => {
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-example-tsc-'));
    try {
      const run = await runNode([tsc, '-p', 'examples'], tmp);
      assert.equal(run.code, 0, run.output);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
});
