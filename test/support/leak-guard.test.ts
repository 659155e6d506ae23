import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const GUARD = fileURLToPath(new URL('./leak-guard.js', import.meta.url));

test('the leak guard fails a file left holding its process open, naming what holds it, and passes one that closes late', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-leak-guard-'));
  try {
    fs.writeFileSync(
      path.join(dir, 'leaks.test.mjs'),
      "import { test } from 'node:test';\ntest('leaves a timer', () => { setInterval(() => {}, 1000); });\n",
    );
    // A child that ends a second after the test: closing late is not a leak.
    fs.writeFileSync(
      path.join(dir, 'closes-late.test.mjs'),
      "import { test } from 'node:test';\nimport { spawn } from 'node:child_process';\ntest('a child ends after the test', () => { spawn('sleep', ['1']); });\n",
    );
    const env: NodeJS.ProcessEnv = { ...process.env, SKIFF_LEAK_GRACE_MS: '3000' };
    // This file runs as a node --test child itself; the inner run must be a runner of its own.
    delete env.NODE_TEST_CONTEXT;
    const r = spawnSync(
      process.execPath,
      ['--test', '--test-reporter=spec', '--import', GUARD, 'leaks.test.mjs', 'closes-late.test.mjs'],
      { cwd: dir, env, encoding: 'utf8', timeout: 60_000 },
    );
    const out = r.stdout + r.stderr;
    assert.equal(r.status, 1, out);
    assert.match(
      out,
      /leak-guard: \S*leaks\.test\.mjs still running 3 s after its tests ended, held open by: Timeout/,
    );
    assert.doesNotMatch(out, /leak-guard: \S*closes-late/);
    assert.match(out, /✖ \S*leaks\.test\.mjs/);
    assert.doesNotMatch(out, /✖ \S*closes-late\.test\.mjs/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
