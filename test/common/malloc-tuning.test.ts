import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const MODULE = fileURLToPath(new URL('../../src/common/malloc-tuning.js', import.meta.url));

/** Runs tuneMallocForBroker in a fresh process (the test runner's own heap is left alone). */
function tuneInChild(env: NodeJS.ProcessEnv, after = ''): string {
  const r = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import(${JSON.stringify(MODULE)}).then(async (m) => { console.log(m.tuneMallocForBroker()); ${after} })`,
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

  it('asks for transparent huge pages on the grown heap where THP is on (always or madvise)', () => {
    let thp = '';
    try {
      thp = fs.readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8');
    } catch {
      return; // no THP in this kernel
    }
    if (/\[never\]/.test(thp)) return;
    // The child prints whether its [heap] mapping carries VmFlags "hg" (MADV_HUGEPAGE).
    const out = tuneInChild(
      { SKIFF_MALLOC_DEFAULTS: '' },
      `const smaps = (await import('node:fs')).readFileSync('/proc/self/smaps', 'utf8');
       const heap = smaps.split(/\\n(?=[0-9a-f]+-[0-9a-f]+ )/).filter((m) => /\\[heap\\]/.test(m.split('\\n')[0]));
       const kib = heap.reduce((n, m) => n + Number(/^Size:\\s+(\\d+)/m.exec(m)?.[1] ?? 0), 0);
       console.log(heap.some((m) => /^VmFlags:.* hg( |$)/m.test(m)), kib);`,
    );
    if (out.startsWith('false')) return; // off glibc or without the addon: nothing was tuned
    // About one start in 300 here, a mapping lies just above the heap and brk cannot grow it: glibc
    // serves the reserve from mmap, which goes back to the kernel when freed, and there is no grown
    // heap to mark. Where the heap grew (~180 MiB), it must carry the hint.
    const [tuned, hinted, heapKib] = out.split(/\s+/);
    if (Number(heapKib) < 100 * 1024) return;
    assert.deepEqual([tuned, hinted], ['true', 'true']);
  });

  it('SKIFF_MALLOC_DEFAULTS=1 leaves glibc defaults', () => {
    assert.equal(tuneInChild({ SKIFF_MALLOC_DEFAULTS: '1' }), 'false');
  });
});
