/**
 * Metrics (issue 18), two targets:
 *  - GET /metrics of a `skiff broker` hosting 10,000 partitions (one topic, RF 1, so every
 *    partition has its log, state and replica families: ~70,000 samples) answers within 200 ms:
 *    the median of 9 scrapes after a warm-up, each timed from the request to the last byte. Each
 *    log holds 3 descriptors open: the bench raises the broker's open-files limit with prlimit;
 *    where it may not (no CAP_SYS_RESOURCE, as in a container whose hard limit is 20,000), as
 *    many thousand partitions as fit are measured and scaled linearly (one pass per family).
 *  - produce throughput with metrics on ≥ 0.97× with them off, in one run: two brokers side by
 *    side, "off" a plain `skiff broker` (no http.listeners: no registry, no hot-path counters — the
 *    only way metrics are off), "on" the same with http.listeners and a scraper reading its
 *    /metrics every 250 ms (60 times Prometheus's default rate). kcat produces 100,000 × 1 KiB
 *    (acks=1) to a fresh topic on each, alternating which goes first, 21 rounds; the verdict is on
 *    the median of the per-round on/off ratios (the ratio of the medians is printed beside it). On a shared 2-core machine the rounds vary; the interleaving puts the same
 *    noise on both sides.
 */
import { execFile, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { median, recordsFile } from './baseline.js';
import { type Broker, produceArgs, runKcat, SKIFF, startBroker } from './broker.js';

const execFileP = promisify(execFile);

/** `skiff topics --create` without blocking the event loop (the scraper keeps its pace). */
async function createTopicAsync(bootstrap: string, topic: string, partitions = 1): Promise<void> {
  await execFileP(process.execPath, [
    ...[SKIFF, 'topics', '--bootstrap-server', bootstrap, '--create', '--topic', topic],
    ...['--partitions', String(partitions)],
  ]);
}

/** Whether the broker's skiff_partitions gauge says it hosts `n` partitions. */
function partitionsHosted(url: string, n: number): Promise<boolean> {
  const hosted = new RegExp(`^skiff_partitions\\{[^}]*\\} ${n}$`, 'm');
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve(hosted.test(body)));
      })
      .on('error', reject);
  });
}

const PARTITIONS = 10_000;
/** A log keeps its segment's .log, .index and .timeindex open: 3 descriptors per partition. */
const FDS_PER_PARTITION = 3;

/** Descriptors a broker needs besides its logs' (sockets, the metadata log, node's own). */
const FDS_SPARE = 1000;

/**
 * Raises the broker's open-files limit (RLIMIT_NOFILE, soft and hard) to what 10,000 logs need,
 * with prlimit(1); only a process with CAP_SYS_RESOURCE may raise a hard limit (root on a host,
 * not in every container), so a failure leaves the limit as it was and the bench scales.
 */
function raiseOpenFilesLimit(pid: number): string {
  const n = PARTITIONS * FDS_PER_PARTITION + FDS_SPARE;
  const r = spawnSync('prlimit', ['--pid', String(pid), `--nofile=${n}:${n}`], { encoding: 'utf8' });
  return r.status === 0 ? '' : (r.stderr || r.error?.message || `exit ${r.status}`).trim();
}

/** The partitions the broker `pid` can host under its open-files limit. */
function hostablePartitions(pid: number): number {
  const m = /^Max open files\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/limits`, 'utf8'));
  const limit = m === null ? Number.POSITIVE_INFINITY : Number(m[1]);
  return Math.min(PARTITIONS, Math.floor((limit - FDS_SPARE) / FDS_PER_PARTITION / 1000) * 1000);
}
const SCRAPE_TARGET_MS = 200;
const SCRAPES = 9;
const RATIO_TARGET = 0.97;
const ROUNDS = 21;
const RECORDS = 100_000;
/** The "on" broker is scraped this often (Prometheus's default is every 15 s). */
const SCRAPE_EVERY_MS = 250;
const RECORD_BYTES = 1024;

function metricsUrl(b: Broker): string {
  const m = /metrics on (http:\/\/\S+\/metrics)\)/.exec(b.output);
  if (m === null) throw new Error(`no metrics URL in:\n${b.output}`);
  return m[1]!;
}

/** One GET to the last byte: milliseconds and body size. */
function timedGet(url: string): Promise<{ ms: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    http
      .get(url, (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
        });
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`GET ${url}: ${res.statusCode}`));
          else resolve({ ms: performance.now() - started, bytes });
        });
      })
      .on('error', reject);
  });
}

async function scrapeLatency(dir: string): Promise<void> {
  fs.mkdirSync(dir, { recursive: true });
  const b = await startBroker(dir, ['http.listeners=http://:0']);
  try {
    const refused = raiseOpenFilesLimit(b.child.pid!);
    const partitions = hostablePartitions(b.child.pid!);
    if (refused !== '') console.log(`  (prlimit could not raise the broker's open-files limit: ${refused})`);
    const t0 = performance.now();
    const url = metricsUrl(b);
    // On a busy machine the tool's request can time out and its retry find the topic made.
    await createTopicAsync(`127.0.0.1:${b.port}`, 'm10k', partitions).catch((e: Error) => {
      if (!/already exists/.test(e.message)) throw e;
    });
    // Every partition's log made (the tool answers before the broker has applied them all).
    while (!(await partitionsHosted(url, partitions))) await new Promise((r) => setTimeout(r, 500));
    const createdS = (performance.now() - t0) / 1000;
    await timedGet(url);
    const runs: { ms: number; bytes: number }[] = [];
    for (let i = 0; i < SCRAPES; i++) runs.push(await timedGet(url));
    const ms = median(runs.map((r) => r.ms));
    // Under a lower open-files limit fewer partitions fit: the scrape is linear in them, so scaled.
    const at10k = (ms * PARTITIONS) / partitions;
    const scaled =
      partitions === PARTITIONS
        ? ''
        : ` (the open-files limit allows ${partitions} partitions, ${FDS_PER_PARTITION} descriptors each; scaled linearly to ${PARTITIONS}: ${at10k.toFixed(0)} ms)`;
    console.log(
      `  /metrics at ${partitions} partitions (created in ${createdS.toFixed(1)} s): median ${ms.toFixed(0)} ms of ${SCRAPES} ` +
        `(min ${Math.min(...runs.map((r) => r.ms)).toFixed(0)}, max ${Math.max(...runs.map((r) => r.ms)).toFixed(0)}), ` +
        `${(runs[0]!.bytes / 1e6).toFixed(1)} MB${scaled}; target <= ${SCRAPE_TARGET_MS} ms at ${PARTITIONS}: ${at10k <= SCRAPE_TARGET_MS ? 'met' : 'NOT met'}`,
    );
  } finally {
    await b.stop();
  }
}

async function produceAB(dir: string): Promise<void> {
  const input = path.join(dir, 'records.txt');
  recordsFile(input, RECORDS, RECORD_BYTES);
  for (const side of ['off', 'on']) fs.mkdirSync(path.join(dir, side), { recursive: true });
  const off = await startBroker(path.join(dir, 'off'));
  const on = await startBroker(path.join(dir, 'on'), ['http.listeners=http://:0']);
  const url = metricsUrl(on);
  let scrapes = 0;
  const scraper = setInterval(() => {
    timedGet(url).then(
      () => scrapes++,
      () => {},
    );
  }, SCRAPE_EVERY_MS);
  try {
    const mbps = { off: [] as number[], on: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const);
      for (const side of order) {
        const b = side === 'off' ? off : on;
        const bootstrap = `127.0.0.1:${b.port}`;
        const topic = `ab-${round}`;
        await createTopicAsync(bootstrap, topic);
        const seconds = await runKcat(produceArgs(bootstrap, topic, input), null);
        mbps[side].push((RECORDS * RECORD_BYTES) / 1e6 / seconds);
      }
    }
    const ratio = median(mbps.on) / median(mbps.off);
    // The load of a shared machine drifts over a run: a round's two sides, run back to back, see
    // nearly the same, so the median of the per-round ratios is the steadier estimate.
    const paired = median(mbps.on.map((x, i) => x / mbps.off[i]!));
    const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' ');
    console.log(
      `  produce ${RECORDS} x ${RECORD_BYTES} B (kcat, acks=1), MB/s per round — off: ${fmt(mbps.off)}; on: ${fmt(mbps.on)} (${scrapes} scrapes)`,
    );
    console.log(
      `  on / off: median of the ${ROUNDS} rounds' ratios ${paired.toFixed(3)}, ratio of the medians ${median(mbps.on).toFixed(0)} / ${median(mbps.off).toFixed(0)} = ${ratio.toFixed(3)}; target >= ${RATIO_TARGET}: ${paired >= RATIO_TARGET ? 'met' : 'NOT met'}`,
    );
  } finally {
    clearInterval(scraper);
    await Promise.all([off.stop(), on.stop()]);
  }
}

export async function benchMetrics(): Promise<void> {
  console.log(
    `metrics (issue 18): scrape latency at up to ${PARTITIONS} partitions; produce with metrics on vs off (load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')})`,
  );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-bench-metrics-'));
  try {
    await scrapeLatency(path.join(dir, 'scrape'));
    await produceAB(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
