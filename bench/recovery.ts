/**
 * Issue 23's recovery target: the whole cluster (3 brokers, RF 3) SIGKILLed with gigabytes of log
 * and restarted, time from the restart to serving — the first acks=all produce acknowledged and
 * the partition's tail fetched — <= 10 s, printed beside a raw sequential read of the same files
 * (`cat` of every file in the brokers' log dirs, after dropping the page cache when this process
 * may; otherwise both are warm and the line says so). The log is sized to the machine: LOG_BYTES
 * in all, or a quarter of the free space on the data dir's file system if less. The metadata store
 * (the launcher's) stays up: what is measured is the brokers' recovery of their logs.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startCluster } from '../src/api/index.js';
import { KafkaClient } from '../src/client/kafka-client.js';
import { Producer } from '../src/client/producer.js';
import { parseBootstrap, systemRuntime } from '../src/client/runtime.js';
import { dropCaches, dropCachesPossible } from './baseline.js';

/** Bytes of log across the three brokers (each record stored three times). */
const LOG_BYTES = 3 * 2 ** 30;
const RECORD_BYTES = 1024;
const PARTITIONS = 6;
const TARGET_MS = 10_000;
const SKIFF = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src/cli/main.js');

function run(cmd: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    p.stderr.on('data', (c: Buffer) => {
      out += c.toString();
    });
    p.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} exited ${code}:\n${out}`)),
    );
  });
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

/** Seconds `cat` takes to read `files` into /dev/null, in one sequential pass. */
function catSeconds(files: readonly string[]): number {
  const t = performance.now();
  const r = spawnSync('sh', ['-c', 'xargs -0 cat > /dev/null'], { input: files.join('\0') });
  if (r.status !== 0) throw new Error(`cat: ${r.stderr}`);
  return (performance.now() - t) / 1000;
}

export async function benchRecovery(): Promise<void> {
  const cold = dropCachesPossible();
  const cluster = await startCluster({
    brokers: 3,
    config: { 'default.replication.factor': 3, 'min.insync.replicas': 2, 'log.segment.bytes': 128 * 2 ** 20 },
  });
  try {
    const free = fs.statfsSync(cluster.dataDir);
    const logBytes = Math.min(LOG_BYTES, Math.floor((Number(free.bavail) * free.bsize) / 4));
    const records = Math.floor(logBytes / 3 / RECORD_BYTES);
    await cluster.createTopic('recovery', { partitions: PARTITIONS, replicationFactor: 3 });
    const bootstrap = cluster.bootstrapServers.join(',');
    console.log(
      `recovery (issue 23): 3 brokers, RF 3, ${PARTITIONS} partitions, ${records} records of ${RECORD_BYTES} B acks=all (~${(logBytes / 2 ** 30).toFixed(1)} GiB of log), all brokers SIGKILLed, restarted`,
    );
    const t0 = performance.now();
    await run(process.execPath, [
      SKIFF,
      'producer-perf-test',
      '--topic',
      'recovery',
      '--num-records',
      String(records),
      '--record-size',
      String(RECORD_BYTES),
      '--throughput',
      '-1',
      '--producer-props',
      `bootstrap.servers=${bootstrap}`,
      'acks=all',
      'batch.size=262144',
      'linger.ms=5',
    ]);
    console.log(`  written in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    await Promise.all([1, 2, 3].map((id) => cluster.stopBroker(id, { kill: true })));
    const files = [1, 2, 3].flatMap((id) => filesUnder(path.join(cluster.dataDir, `broker-${id}`)));
    const bytes = files.reduce((n, f) => n + fs.statSync(f).size, 0);
    if (cold) dropCaches();
    const rawSeconds = catSeconds(files);
    if (cold) dropCaches();

    const t1 = performance.now();
    await Promise.all([1, 2, 3].map((id) => cluster.startBroker(id)));
    const client = new KafkaClient({
      bootstrap: parseBootstrap(bootstrap),
      clientId: 'bench-recovery',
      runtime: systemRuntime(),
      requestTimeoutMs: 10_000,
    });
    try {
      // Tried every 20 ms until acknowledged (a retrying producer's growing backoff would be measured).
      const producer = new Producer(client, { acks: -1, idempotence: false, retries: 0, lingerMs: 0 });
      let acked: { offset: bigint } | null = null;
      while (acked === null) {
        acked = await producer
          .produce({ topic: 'recovery', partition: 0, key: null, value: Buffer.from('after') })
          .catch(() => new Promise<null>((r) => setTimeout(() => r(null), 20)));
      }
      const tail = await run('kcat', [
        '-b',
        bootstrap,
        '-C',
        '-t',
        'recovery',
        '-p',
        '0',
        '-o',
        String(acked.offset),
        '-c',
        '1',
        '-e',
        '-q',
      ]);
      const servingSeconds = (performance.now() - t1) / 1000;
      if (tail.trim() !== 'after')
        throw new Error(`the tail fetched is ${JSON.stringify(tail.slice(0, 80))}, not the record produced`);
      console.log(
        `  raw sequential read of the ${files.length} files (${(bytes / 2 ** 30).toFixed(2)} GiB, cat, ${cold ? 'page cache dropped' : 'page cache WARM: could not drop it'}): ${rawSeconds.toFixed(2)} s (${(bytes / 2 ** 20 / rawSeconds).toFixed(0)} MiB/s)`,
      );
      console.log(
        `  restart to serving (3 brokers started, acks=all produce acknowledged, tail fetched): ${servingSeconds.toFixed(2)} s — ${(servingSeconds / rawSeconds).toFixed(2)}x the raw read; target <= ${TARGET_MS / 1000} s: ${servingSeconds * 1000 <= TARGET_MS ? 'met' : 'NOT met'}`,
      );
    } finally {
      client.close();
    }
  } finally {
    await cluster.close();
  }
}
