import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { SystemClock } from '../src/common/clock.js';
import { silentLogger } from '../src/common/logger.js';
import { TimerScheduler } from '../src/common/scheduler.js';
import { encodeBatch } from '../src/protocol/records/index.js';
import { NodeFileSystem } from '../src/storage/fs.js';
import type { StorageContext } from '../src/storage/local-log.js';
import { Log } from '../src/storage/log.js';
import { type CleanerConfig, DEFAULT_CLEANER_CONFIG, LogCleaner } from '../src/storage/log-cleaner.js';
import { logConfig } from '../src/storage/log-config.js';
import { dropCaches, dropCachesPossible, median } from './baseline.js';
import { type Broker, runKcat, SKIFF, startBroker } from './broker.js';

/**
 * The log cleaner (issue 19's performance targets), each ratio measured in the same run:
 *  (a) cleaning throughput >= 0.3x a raw sequential read of the same segments. A compacted log of
 *      CLEAN_MB, dirty from its start (segment.bytes 16 MiB), is cleaned by a LogCleaner on the
 *      event loop — its real slices, setImmediate between them, one cleaner (and offset map, the
 *      default 128 MiB) kept over the rounds as a broker keeps it — timed from handing it the log
 *      to the cleaning's end; the raw side reads the same segment files with fs.readSync in 1 MiB
 *      chunks. Each round cleans a fresh copy of the log and reads another fresh copy; both sides
 *      from the page cache ("warm") and, where this process may drop the caches, both from the
 *      disk ("cold": sync and drop_caches before each side). Rounds interleaved, alternating
 *      which side goes first; medians. Three record shapes: 1 KiB values over 1,000 keys, 16 per
 *      batch; 100 B records over 10,000 keys, 100 per batch; and the same one per batch (the
 *      shape of offset commits).
 *  (b) the offset map stays within log.cleaner.dedupe.buffer.size: 500,000 distinct keys through
 *      a 4 MiB map (174,762 slots, 157,286 keys at the 0.9 load factor) take several cleanings,
 *      each filling the map no further than the load factor; the process's peak RSS growth over
 *      them (sampled every event-loop turn) beside the map's size. And the RSS growth of (a)'s
 *      cleanings with the default 128 MiB map.
 *  (c) produce throughput while the cleaner runs >= 0.8x without it: two `skiff broker`
 *      processes, "on" with log.cleaner.backoff.ms=100 and "off" with log.cleaner.enable=false;
 *      kcat produces 100,000 keyed 1 KiB records over 1,000 keys (acks=1) into a fresh compacted
 *      topic with segment.bytes 1 MiB on each, alternating which goes first, 15 rounds: the
 *      cleaner of "on" cleans the topic as it is written. The verdict is on the median of the
 *      per-round ratios; the cleanings "on" logged meanwhile are counted.
 */
const CLEAN_TARGET = 0.3;
const PRODUCE_TARGET = 0.8;
const CLEAN_MB = Number(process.env.SKIFF_BENCH_CLEAN_MB ?? 64);
const SEGMENT_BYTES = 16 * 1024 * 1024;
const WARM_ROUNDS = 7;
const COLD_ROUNDS = 5;
const READ_CHUNK_BYTES = 1 << 20;
const MAP_KEYS = 500_000;
const SMALL_MAP_BYTES = 4 * 1024 * 1024;
const PRODUCE_ROUNDS = 15;
const PRODUCE_RECORDS = 100_000;
const PRODUCE_KEYS = 1000;
const PRODUCE_VALUE_BYTES = 1024;

const line = (s: string) => process.stdout.write(`${s}\n`);

function context(): StorageContext {
  const clock = new SystemClock();
  return { fs: new NodeFileSystem(), clock, scheduler: new TimerScheduler(), logger: silentLogger };
}

interface Workload {
  readonly name: string;
  readonly valueBytes: number;
  readonly keys: number;
  readonly recordsPerBatch: number;
  readonly mb: number;
}

const WORKLOADS: readonly Workload[] = [
  {
    name: '1 KiB values over 1,000 keys, 16 records per batch',
    valueBytes: 1024,
    keys: 1000,
    recordsPerBatch: 16,
    mb: CLEAN_MB,
  },
  {
    name: '100 B records over 10,000 keys, 100 per batch',
    valueBytes: 80,
    keys: 10_000,
    recordsPerBatch: 100,
    mb: CLEAN_MB,
  },
  {
    name: '100 B records over 10,000 keys, 1 per batch (offset commits)',
    valueBytes: 80,
    keys: 10_000,
    recordsPerBatch: 1,
    mb: CLEAN_MB,
  },
];

function openLog(dir: string, ctx: StorageContext): Log {
  const log = Log.open({
    dir,
    topic: 'bench',
    partition: 0,
    config: logConfig({ compact: true, delete: false, segmentBytes: SEGMENT_BYTES }),
    ctx,
    hadCleanShutdown: true,
  });
  log.updateHighWatermark(log.logEndOffset);
  return log;
}

/** A compacted log of `w.mb` MiB, keys in turn, each value distinct. */
function writeLog(dir: string, w: Workload): { records: number; bytes: number } {
  const log = openLog(dir, context());
  const value = Buffer.alloc(w.valueBytes);
  let i = 0;
  const now = BigInt(Date.now());
  while (log.size < w.mb * 2 ** 20) {
    const records = [];
    for (let j = 0; j < w.recordsPerBatch; j++, i++) {
      value.writeUInt32BE(i, 0);
      records.push({
        key: Buffer.from(`key-${String(i % w.keys).padStart(6, '0')}`),
        value: Buffer.from(value),
        timestampDelta: BigInt(j),
      });
    }
    log.appendAsLeader(encodeBatch({ baseTimestamp: now, records }), 0);
  }
  log.updateHighWatermark(log.logEndOffset);
  const bytes = log.local.segments
    .values()
    .slice(0, -1)
    .reduce((n, s) => n + s.size, 0);
  log.close();
  return { records: i, bytes };
}

/** Every segment file but the active one's (what the cleaner reads), in 1 MiB reads. */
function rawRead(dir: string): number {
  const buf = Buffer.allocUnsafe(READ_CHUNK_BYTES);
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .sort();
  let total = 0;
  for (const f of files.slice(0, -1)) {
    const fd = fs.openSync(path.join(dir, f), 'r');
    for (let at = 0; ; ) {
      const n = fs.readSync(fd, buf, 0, READ_CHUNK_BYTES, at);
      if (n === 0) break;
      at += n;
      total += n;
    }
    fs.closeSync(fd);
  }
  return total;
}

/** sync, then drop the caches: the next read of a file comes from the disk. */
function readFromDiskNext(): void {
  execFileSync('sync');
  dropCaches();
}

/**
 * One LogCleaner (threads and offset map made once, as in a broker) fed one log at a time: its
 * threads look for work every millisecond while idle.
 */
class BenchCleaner {
  private current: { log: Log; logDir: string }[] = [];
  readonly cleaner: LogCleaner;
  peakRss = 0;

  constructor(config: Partial<CleanerConfig> = {}) {
    const c: CleanerConfig = { ...DEFAULT_CLEANER_CONFIG, backoffMs: 1, ...config };
    this.cleaner = new LogCleaner(
      () => c,
      context(),
      () => this.current,
    );
    this.cleaner.startup();
  }

  /** Cleans the log in `dir` `times` times (or until nothing is left to clean); each cleaning's stats. */
  async clean(dir: string, times = 1): Promise<{ ms: number; runs: LogCleaner['history'] }> {
    const log = openLog(dir, context());
    const seen = new Set(this.cleaner.history);
    const started = performance.now();
    this.current = [{ log, logDir: path.dirname(dir) }];
    const runs: LogCleaner['history'] = [];
    let idleSince = performance.now();
    // Until `times` cleanings, or the cleaner has left the log alone for half a second.
    while (runs.length < times && (this.cleaner.isCleaning(log) || performance.now() - idleSince < 500)) {
      await new Promise((r) => setImmediate(r));
      this.peakRss = Math.max(this.peakRss, process.memoryUsage.rss());
      for (const h of this.cleaner.history) {
        if (!seen.has(h)) {
          seen.add(h);
          runs.push(h);
        }
      }
      if (this.cleaner.isCleaning(log)) idleSince = performance.now();
    }
    const ms = performance.now() - started;
    this.current = [];
    log.close();
    return { ms, runs };
  }

  shutdown(): void {
    this.cleaner.shutdown();
  }
}

let copies = 0;

interface Throughput {
  cleanMBps: number;
  rawMBps: number;
  ratio: number;
}

async function throughput(
  root: string,
  pristine: string,
  bytes: number,
  cleaner: BenchCleaner,
  rounds: number,
  cold: boolean,
): Promise<Throughput & { written: number; maxSliceMs: number }> {
  const cleanMs: number[] = [];
  const rawMs: number[] = [];
  let written = 0;
  let maxSliceMs = 0;
  for (let r = 0; r < rounds; r++) {
    // Log dirs never used before: the cleaner remembers each dir's cleaner-offset-checkpoint.
    const a = path.join(root, `a-${copies}`, 'bench-0');
    const b = path.join(root, `b-${copies++}`, 'bench-0');
    fs.cpSync(pristine, a, { recursive: true });
    fs.cpSync(pristine, b, { recursive: true });
    const raw = () => {
      if (cold) readFromDiskNext();
      const t = performance.now();
      if (rawRead(a) !== bytes) throw new Error('raw read short');
      rawMs.push(performance.now() - t);
    };
    const clean = async () => {
      if (cold) readFromDiskNext();
      const c = await cleaner.clean(b);
      const run = c.runs[0];
      if (run === undefined) throw new Error('nothing cleaned');
      cleanMs.push(c.ms);
      written = run.stats.bytesWritten;
      maxSliceMs = Math.max(maxSliceMs, run.maxSliceMs);
    };
    if (r % 2 === 0) {
      raw();
      await clean();
    } else {
      await clean();
      raw();
    }
    fs.rmSync(path.dirname(a), { recursive: true, force: true });
    fs.rmSync(path.dirname(b), { recursive: true, force: true });
  }
  const mbps = (ms: number) => bytes / 1e6 / (ms / 1000);
  const clean = median(cleanMs);
  const raw = median(rawMs);
  return { cleanMBps: mbps(clean), rawMBps: mbps(raw), ratio: raw / clean, written, maxSliceMs };
}

const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
const mib = (b: number) => (b / 2 ** 20).toFixed(1);

async function benchThroughput(
  root: string,
  w: Workload,
  cleaner: BenchCleaner,
  cold: boolean,
): Promise<void> {
  const pristine = path.join(root, 'pristine', 'bench-0');
  const { records, bytes } = writeLog(pristine, w);
  const rssBefore = process.memoryUsage.rss();
  cleaner.peakRss = rssBefore;
  const warm = await throughput(root, pristine, bytes, cleaner, WARM_ROUNDS, false);
  const rssGrowth = cleaner.peakRss - rssBefore;
  line(
    `  (a) ${w.name}: ${mib(bytes)} MiB, ${records} records → ${mib(warm.written)} MiB; longest slice ${warm.maxSliceMs} ms; peak RSS growth ${mib(rssGrowth)} MiB`,
  );
  const report = (state: string, t: Throughput) =>
    line(
      `      ${state}: cleaning ${t.cleanMBps.toFixed(0)} MB/s vs raw read ${t.rawMBps.toFixed(0)} MB/s, ` +
        `ratio ${t.ratio.toFixed(3)} (target >= ${CLEAN_TARGET}: ${verdict(t.ratio >= CLEAN_TARGET)})`,
    );
  if (cold)
    report(
      `cold (caches dropped before each side, ${COLD_ROUNDS} rounds)`,
      await throughput(root, pristine, bytes, cleaner, COLD_ROUNDS, true),
    );
  report(`warm (page cache, ${WARM_ROUNDS} rounds)`, warm);
  fs.rmSync(path.dirname(pristine), { recursive: true, force: true });
}

/** (b) Many more keys than a small map holds: several cleanings, each within the map. */
async function benchMapBound(root: string): Promise<void> {
  const dir = path.join(root, 'map', 'bench-0');
  const w: Workload = { name: '', valueBytes: 80, keys: MAP_KEYS, recordsPerBatch: 100, mb: 64 };
  const { records, bytes } = writeLog(dir, w);
  const cleaner = new BenchCleaner({ dedupeBufferSize: SMALL_MAP_BYTES });
  const rssBefore = process.memoryUsage.rss();
  cleaner.peakRss = rssBefore;
  try {
    const { runs } = await cleaner.clean(dir, 20);
    const maxUtilization = Math.max(...runs.map((r) => r.stats.bufferUtilization));
    const growth = cleaner.peakRss - rssBefore;
    const within = maxUtilization <= DEFAULT_CLEANER_CONFIG.dedupeBufferLoadFactor;
    line(
      `  (b) ${MAP_KEYS} distinct keys (${records} records of 100 B, ${mib(bytes)} MiB) through a ${mib(SMALL_MAP_BYTES)} MiB offset map: ` +
        `${runs.length} cleanings, buffer utilization at most ${(100 * maxUtilization).toFixed(1)}% ` +
        `(load factor ${DEFAULT_CLEANER_CONFIG.dedupeBufferLoadFactor}: ${within ? 'within' : 'EXCEEDED'}); ` +
        `peak RSS growth ${mib(growth)} MiB (the map ${mib(SMALL_MAP_BYTES)} MiB, read and write buffers, the cleaned segments' indexes)`,
    );
  } finally {
    cleaner.shutdown();
    fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  }
}

/** `records` lines `key-<i % keys>:<value>` of `valueBytes` printable bytes: kcat -K: input. */
function keyedRecordsFile(file: string, records: number, keys: number, valueBytes: number): void {
  const fd = fs.openSync(file, 'w');
  try {
    const value = 'x'.repeat(valueBytes - 8);
    let chunk = '';
    for (let i = 0; i < records; i++) {
      chunk += `key-${i % keys}:${String(i).padStart(8, '0')}${value}\n`;
      if (chunk.length > 1 << 20) {
        fs.writeSync(fd, chunk);
        chunk = '';
      }
    }
    fs.writeSync(fd, chunk);
  } finally {
    fs.closeSync(fd);
  }
}

/** Counts the cleanings a broker logs, and the bytes they read. */
function cleaningsOf(b: Broker): { count: number; mb: number } {
  const seen = { count: 0, mb: 0 };
  const onData = (chunk: Buffer) => {
    for (const m of chunk.toString().matchAll(/cleaned log \S+ .*?: ([\d.]+) MB of log processed/g)) {
      seen.count++;
      seen.mb += Number(m[1]);
    }
  };
  b.child.stdout?.on('data', onData);
  b.child.stderr?.on('data', onData);
  return seen;
}

async function createCompacted(bootstrap: string, topic: string): Promise<void> {
  execFileSync(process.execPath, [
    ...[SKIFF, 'topics', '--bootstrap-server', bootstrap, '--create', '--topic', topic],
    ...['--config', 'cleanup.policy=compact', '--config', `segment.bytes=${1 << 20}`],
  ]);
}

/** (c) kcat produce into a compacted topic, the cleaner on vs off. */
async function benchProduce(root: string): Promise<void> {
  const input = path.join(root, 'keyed.txt');
  keyedRecordsFile(input, PRODUCE_RECORDS, PRODUCE_KEYS, PRODUCE_VALUE_BYTES);
  for (const side of ['off', 'on']) fs.mkdirSync(path.join(root, side), { recursive: true });
  const off = await startBroker(path.join(root, 'off'), ['log.cleaner.enable=false']);
  const on = await startBroker(path.join(root, 'on'), ['log.cleaner.backoff.ms=100']);
  const cleanings = cleaningsOf(on);
  try {
    const mbps = { off: [] as number[], on: [] as number[] };
    for (let round = 0; round < PRODUCE_ROUNDS; round++) {
      const order = round % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const);
      for (const side of order) {
        const b = side === 'off' ? off : on;
        const bootstrap = `127.0.0.1:${b.port}`;
        const topic = `kv-${round}`;
        await createCompacted(bootstrap, topic);
        const args = [
          ...['-P', '-b', bootstrap, '-t', topic, '-K:', '-X', 'acks=1', '-X', 'linger.ms=5'],
          ...['-X', 'batch.size=1000000', '-l', input],
        ];
        const seconds = await runKcat(args, null);
        mbps[side].push((PRODUCE_RECORDS * PRODUCE_VALUE_BYTES) / 1e6 / seconds);
      }
    }
    const paired = median(mbps.on.map((x, i) => x / mbps.off[i]!));
    const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' ');
    line(
      `  (c) produce ${PRODUCE_RECORDS} x ${PRODUCE_VALUE_BYTES} B over ${PRODUCE_KEYS} keys (kcat -K, acks=1) into a compacted topic, segment.bytes 1 MiB, MB/s per round — ` +
        `off: ${fmt(mbps.off)}; on: ${fmt(mbps.on)} (the cleaner of "on" logged ${cleanings.count} cleanings, ${cleanings.mb.toFixed(0)} MB read)`,
    );
    line(
      `      on / off: median of the ${PRODUCE_ROUNDS} rounds' ratios ${paired.toFixed(3)}, ratio of the medians ` +
        `${median(mbps.on).toFixed(0)} / ${median(mbps.off).toFixed(0)} = ${(median(mbps.on) / median(mbps.off)).toFixed(3)}; ` +
        `target >= ${PRODUCE_TARGET}: ${verdict(paired >= PRODUCE_TARGET)}`,
    );
  } finally {
    await Promise.all([off.stop(), on.stop()]);
  }
}

export async function benchCleaner(): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-bench-cleaner-'));
  try {
    const cold = dropCachesPossible();
    line(
      `cleaner (issue 19): disk under ${os.tmpdir()}; medians of interleaved rounds (load ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(
          ' ',
        )})${cold ? '' : '; warm only: cannot drop caches (not root or no /proc/sys/vm/drop_caches)'}`,
    );
    const cleaner = new BenchCleaner();
    try {
      line(
        `  (a) one cleaner, its offset map ${mib(DEFAULT_CLEANER_CONFIG.dedupeBufferSize)} MiB (log.cleaner.dedupe.buffer.size default)`,
      );
      for (const w of WORKLOADS) await benchThroughput(root, w, cleaner, cold);
    } finally {
      cleaner.shutdown();
    }
    await benchMapBound(root);
    await benchProduce(root);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}
