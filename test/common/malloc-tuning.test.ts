import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const MODULE = fileURLToPath(new URL('../../src/common/malloc-tuning.js', import.meta.url));

/** Runs tuneMallocForBroker in a fresh process (the test runner's own heap is left alone). */
function tuneInChild(env: NodeJS.ProcessEnv): string {
  const r = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import(${JSON.stringify(MODULE)}).then((m) => console.log(m.tuneMallocForBroker()))`,
    ],
    { encoding: 'utf8', env: { ...process.env, ...env } },
  );
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

describe('malloc tuning for broker processes', () => {
  it('applies on Linux/glibc through the native addon that npm ci builds', () => {
    const glibc = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header
      ?.glibcVersionRuntime;
    if (process.platform !== 'linux' || glibc === undefined) return;
    assert.equal(tuneInChild({ SKIFF_MALLOC_DEFAULTS: '' }), 'true');
  });

  it('SKIFF_MALLOC_DEFAULTS=1 leaves glibc defaults', () => {
    assert.equal(tuneInChild({ SKIFF_MALLOC_DEFAULTS: '1' }), 'false');
  });
});
