/**
 * Issue 17's library targets: `startCluster({ brokers: 3 })` until every broker accepts clients,
 * median <= 1.5 s; `close()` (every process gone, the temporary data dir removed) <= 0.5 s.
 * RUNS clusters in a row after one unmeasured warm-up (the page cache and, on Node 22.1+, the
 * compile cache hold the modules as they do from a test suite's second cluster on). A bare
 * `node -e 0` is timed beside each run, so the figures can be read against this machine's speed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { startCluster } from '../src/api/index.js';
import { listening } from '../src/cluster/free-port.js';
import { median } from './baseline.js';

const RUNS = 10;
const START_TARGET_MS = 1500;
const CLOSE_TARGET_MS = 500;

async function once(): Promise<{ startMs: number; closeMs: number }> {
  const t0 = performance.now();
  const cluster = await startCluster({ brokers: 3 });
  const startMs = performance.now() - t0;
  for (const b of cluster.brokers)
    if (!(await listening(b.port))) throw new Error(`broker ${b.id} does not accept clients after start`);
  const t1 = performance.now();
  await cluster.close();
  const closeMs = performance.now() - t1;
  if (existsSync(cluster.dataDir)) throw new Error(`${cluster.dataDir} left after close()`);
  return { startMs, closeMs };
}

export async function benchStartCluster(): Promise<void> {
  console.log(
    `start-cluster: startCluster({ brokers: 3 }) and close(), ${RUNS} in a row (Node ${process.version})`,
  );
  await once();
  const starts: number[] = [];
  const closes: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    spawnSync(process.execPath, ['-e', '0']);
    bare.push(performance.now() - t);
    const r = await once();
    starts.push(r.startMs);
    closes.push(r.closeMs);
  }
  const [s, c, n] = [median(starts), median(closes), median(bare)];
  const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');
  console.log(`  node -e 0: median ${n.toFixed(0)} ms`);
  console.log(
    `  start (3 brokers accepting clients): median ${s.toFixed(0)} ms (min ${Math.min(...starts).toFixed(0)}, max ${Math.max(...starts).toFixed(0)}) — target <= ${START_TARGET_MS} ms: ${verdict(s <= START_TARGET_MS)}`,
  );
  console.log(
    `  close (processes gone, data removed): median ${c.toFixed(0)} ms (max ${Math.max(...closes).toFixed(0)}) — target <= ${CLOSE_TARGET_MS} ms: ${verdict(c <= CLOSE_TARGET_MS)}`,
  );
}
