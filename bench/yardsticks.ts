import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Producer } from '@platformatic/kafka';
import { Admin } from '../src/client/admin.js';
import { KafkaClient } from '../src/client/kafka-client.js';
import { parseBootstrap, systemRuntime } from '../src/client/runtime.js';
import { median, recordsFile } from './baseline.js';
import { type Broker, createTopic, produceArgs, runKcat, SKIFF, startBroker } from './broker.js';
import { jetStreamClient, NATS_INSTALL, natsServerInstalled, startJetStream } from './jetstream.js';
import { KafkaSink } from './kafka-sink.js';
import { Cluster, cpuSplit, freePorts, isrOf, kcatProduce, run, waitIsr } from './replication.js';
import { scaleRows } from './scale.js';
import { chartsSvg, latencySvg, type Row, renderTable } from './yardsticks-report.js';

/**
 * Issue 25's yardsticks: Skiff against what a user would compare it with, side by side in one run,
 * each system alternated over SKIFF_BENCH_ROUNDS rounds (default 3), medians compared:
 *  1. kcat into Skiff vs kcat into the ceiling (bench/kafka-sink.ts, stores nothing): produce RF 1
 *     acks=1, RF 3 acks=all (`skiff up --brokers 3`), consume (RF 1);
 *  2. the same kcat command into librdkafka's mock cluster (`-X test.mock.num.brokers=1|3`, in
 *     kcat's own process, in memory);
 *  3. Node clients: @platformatic/kafka into Skiff (acks=all) vs `nats` into NATS JetStream (file storage, R1
 *     and an R3 cluster on loopback), one record per request and batched (100 per send; JetStream:
 *     100 publishes in flight);
 *  4. broker CPU (utime + stime of /proc/PID/stat, the kernel's share beside) per 100 MB and per
 *     one-record request;
 *  5. p50/p99/p999 of acks=all RF 3 (`skiff producer-perf-test --throughput`, steady state) at
 *     10 MB/s and at half of the RF 3 throughput measured in 1 (and at 5 MB/s, for the chart);
 *  6. a CPU profile (--cpu-prof) of the brokers of a separate RF 3 cluster during a kcat produce,
 *     its top 10 self-time functions printed;
 *  7. the scale rows of bench/scale.ts (partitions, idle connections, consumer-group members; its
 *     SKIFF_BENCH_SCALE_* variables shrink them), their curves charted in yardsticks-scale.svg.
 * Records are 1 KiB: SKIFF_BENCH_RECORDS (default 100,000) for kcat, SKIFF_BENCH_SINGLE_RECORDS
 * (default 10,000) for the Node clients. The table is printed; a JSON report, an SVG chart of
 * latency against the offered rate and the profiles go to SKIFF_BENCH_OUT (default bench-results/).
 * nats-server missing: the JetStream part is skipped, saying how to install it.
 */
const RECORD_BYTES = 1024;
const BATCH = 100;
const LATENCY_MBPS = 10;
const envInt = (name: string, dflt: number) => Math.max(1, Number(process.env[name] ?? dflt) || dflt);
const RECORDS = envInt('SKIFF_BENCH_RECORDS', 100_000);
const SINGLE = envInt('SKIFF_BENCH_SINGLE_RECORDS', 10_000);
const ROUNDS = envInt('SKIFF_BENCH_ROUNDS', 3);
const LATENCY_RECORDS = envInt('SKIFF_BENCH_LATENCY_RECORDS', 40_000);
const LATENCY_WARMUP = Math.round(LATENCY_RECORDS / 4);
const MB100 = 100e6;

const line = (s: string) => process.stdout.write(`${s}\n`);
const loadText = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

type Cpu = { user: number; system: number };
/**
 * CPU seconds of this process's children that ended and were waited for (cutime and cstime of
 * /proc/self/stat): while `measured` runs a client command (kcat), the client's own CPU — the
 * brokers, the launcher and the servers are children that go on running and count nothing here.
 */
function endedChildrenCpu(): number {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

/**
 * CPU seconds the processes `pids` spend while `f` runs, the client commands `f` ran (kcat), and
 * its wall-clock seconds.
 */
async function measured<T>(
  pids: readonly number[],
  f: () => Promise<T>,
): Promise<{ seconds: number; cpu: Cpu[]; clientCpu: number }> {
  const before = pids.map(cpuSplit);
  const clientBefore = endedChildrenCpu();
  const t0 = performance.now();
  await f();
  const seconds = (performance.now() - t0) / 1000;
  const cpu = pids.map((pid, i) => {
    const [u, s] = cpuSplit(pid);
    return { user: u - before[i]![0], system: s - before[i]![1] };
  });
  return { seconds, cpu, clientCpu: endedChildrenCpu() - clientBefore };
}

/**
 * What the machine allows at best with the CPU a run measured: its brokers and its client need
 * that many CPU-seconds, so with `cores` cores the run takes at least their sum over the cores
 * (perfectly parallel, nothing else running); that floor against the yardstick's measured time is
 * the largest ratio any scheduling of the same work can reach here. A target above it needs less
 * CPU per byte (or more cores), not better overlap.
 */
function cpuBoundRow(
  what: string,
  runs: readonly { seconds: number; cpu: Cpu[]; clientCpu: number }[],
  peerSeconds: number,
  target: number,
): Row {
  const cores = os.cpus().length;
  const brokers = median(runs.map((r) => r.cpu.reduce((a, c) => a + total(c), 0)));
  const client = median(runs.map((r) => r.clientCpu));
  const floor = (brokers + client) / cores;
  const bound = peerSeconds / floor;
  return {
    run: `${what}: best ratio ${cores} cores allow`,
    skiff: `brokers ${brokers.toFixed(2)} + kcat ${client.toFixed(2)} CPU-s over ${cores} cores ≥ ${floor.toFixed(2)} s`,
    peer: `ceiling ${peerSeconds.toFixed(2)} s`,
    measured: `≤ ${bound.toFixed(2)}×`,
    value: bound,
    target: `≥ ${target}× reachable`,
    met: bound >= target,
  };
}

const total = (c: Cpu) => c.user + c.system;
const cpuText = (c: Cpu, per: number, unit: string) =>
  `${((total(c) * per) / 1).toFixed(unit === 'µs' ? 1 : 2)} ${unit} (kernel ${((c.system / Math.max(total(c), 1e-9)) * 100).toFixed(0)}%)`;
const medianCpu = (cs: readonly Cpu[]): Cpu => ({
  user: median(cs.map((c) => c.user)),
  system: median(cs.map((c) => c.system)),
});
const mbps = (records: number, seconds: number) => (records * RECORD_BYTES) / 1e6 / seconds;

/** Runs `systems` (name -> one timed run) alternately, `ROUNDS` times; their runs by name. */
async function alternate<T>(
  systems: Record<string, (round: number) => Promise<T>>,
): Promise<Record<string, T[]>> {
  const out: Record<string, T[]> = Object.fromEntries(Object.keys(systems).map((k) => [k, []]));
  for (let r = 0; r < ROUNDS; r++) for (const [k, f] of Object.entries(systems)) out[k]!.push(await f(r));
  return out;
}

/** Median seconds of timed runs. */
const med = (runs: readonly { seconds: number }[]) => median(runs.map((r) => r.seconds));

function throughputRow(
  what: string,
  skiff: number,
  records: number,
  peer: string,
  peerSeconds: number,
  target?: number,
): Row {
  const ratio = peerSeconds / skiff;
  return {
    run: what,
    skiff: `${skiff.toFixed(2)} s, ${mbps(records, skiff).toFixed(0)} MB/s`,
    peer: `${peer} ${peerSeconds.toFixed(2)} s`,
    measured: `${ratio.toFixed(2)}×`,
    value: ratio,
    target: target === undefined ? null : `≥ ${target}×`,
    met: target === undefined ? null : ratio >= target,
  };
}

/**
 * @platformatic/kafka producing 1 KiB records with acks=all, `batch` per send, `n` in all; the first
 * send (connection, metadata) before the clock starts. The fastest Node Kafka client at hand: per
 * one-record send it spent 27-94 µs of its own CPU here, KafkaJS 79-153 µs — with KafkaJS the
 * client, not the broker, set the pace of the one-record comparison.
 */
async function nodeProducerRun(
  bootstrap: string,
  topic: string,
  n: number,
  batch: number,
): Promise<() => Promise<void>> {
  const producer = new Producer({ clientId: 'yardsticks', bootstrapBrokers: bootstrap.split(','), acks: -1 });
  const value = Buffer.alloc(RECORD_BYTES, 'k');
  const messages = Array.from({ length: batch }, () => ({ topic, value }));
  try {
    await producer.send({ messages: [{ topic, value }] });
  } catch (e) {
    await producer.close();
    throw e;
  }
  return async () => {
    try {
      for (let i = 0; i < n; i += batch) await producer.send({ messages });
    } finally {
      await producer.close();
    }
  };
}

interface NodeResult {
  readonly seconds: number;
  readonly cpu: Cpu[];
}

/** Node clients into Skiff and JetStream, one record per request and batched, alternated. */
async function nodeClients(
  label: string,
  skiffBootstrap: string,
  skiffPids: readonly number[],
  createSkiffTopic: (name: string) => Promise<void>,
  replicas: number,
  dir: string,
): Promise<{ rows: Row[]; single: Record<string, NodeResult[]>; report: Record<string, unknown> }> {
  const js = natsServerInstalled()
    ? await startJetStream(fs.mkdtempSync(path.join(dir, 'nats-')), replicas, await freePorts(13))
    : null;
  if (js === null) line(`  nats-server not installed (${NATS_INSTALL}): the JetStream comparison is skipped`);
  try {
    const data = Buffer.alloc(RECORD_BYTES, 'k');
    let stream = 0;
    // The broker's one-record path warmed first (JIT), as a broker that has run a while has it:
    // JetStream's server is compiled ahead of time.
    await createSkiffTopic('node-warmup');
    await (await nodeProducerRun(skiffBootstrap, 'node-warmup', Math.min(SINGLE, 5000), 1))();
    const systems: Record<string, (round: number) => Promise<NodeResult>> = {};
    for (const batch of [1, BATCH]) {
      systems[`skiff-${batch}`] = async (round) => {
        const topic = `node-${batch}-${round}`;
        await createSkiffTopic(topic);
        const go = await nodeProducerRun(skiffBootstrap, topic, SINGLE, batch);
        return measured(skiffPids, go);
      };
      if (js !== null)
        systems[`jetstream-${batch}`] = async () => {
          const c = await jetStreamClient(js.servers, `S${stream++}`, replicas);
          try {
            return await measured(js.pids, async () => {
              for (let i = 0; i < SINGLE; i += batch)
                await Promise.all(Array.from({ length: batch }, () => c.publish(data)));
            });
          } finally {
            await c.nc.close();
          }
        };
    }
    const runs = await alternate(systems);
    const rows: Row[] = [];
    for (const batch of [1, BATCH]) {
      const s = med(runs[`skiff-${batch}`]!);
      const how = batch === 1 ? 'one record per request' : `batched (${batch} per send)`;
      if (js === null) continue;
      rows.push(
        throughputRow(
          `Node clients, ${how}, ${label}`,
          s,
          SINGLE,
          `JetStream R${replicas}`,
          med(runs[`jetstream-${batch}`]!),
          batch === 1 ? 1.5 : undefined,
        ),
      );
    }
    return {
      rows,
      single: runs,
      report: Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, v])),
    };
  } finally {
    await js?.stop();
  }
}

/** CPU per one-record request (µs), Skiff's brokers and JetStream's servers, summed. */
function perRequestRow(label: string, single: Record<string, NodeResult[]>, target: boolean): Row {
  const sum = (cs: Cpu[]): Cpu => ({
    user: cs.reduce((a, c) => a + c.user, 0),
    system: cs.reduce((a, c) => a + c.system, 0),
  });
  const skiff = medianCpu(single['skiff-1']!.map((r) => sum(r.cpu)));
  const js = single['jetstream-1'];
  const us = (total(skiff) / SINGLE) * 1e6;
  return {
    run: `broker CPU per one-record request, ${label}`,
    skiff: cpuText(skiff, 1e6 / SINGLE, 'µs'),
    peer:
      js === undefined
        ? 'JetStream: not run'
        : `JetStream ${cpuText(medianCpu(js.map((r) => sum(r.cpu))), 1e6 / SINGLE, 'µs')}`,
    measured: `${us.toFixed(1)} µs`,
    value: us,
    target: target ? '≤ 10 µs' : null,
    met: target ? us <= 10 : null,
  };
}

/**
 * The floor under the per-request target: a Node process that only answers — each 1 KiB message
 * read from a socket is answered with 60 bytes, nothing parsed, stored or replicated — driven the
 * same way (one request in flight, SINGLE of them, ROUNDS rounds). Its CPU per request is what
 * Node's event loop and the kernel's loopback TCP cost here before a broker does any work.
 */
async function nodeFloorRow(): Promise<Row> {
  const server = spawn(
    process.execPath,
    [
      '-e',
      `const s = require('node:net').createServer((c) => { c.setNoDelay(true); const r = Buffer.alloc(60);
        c.on('data', () => c.write(r)); });
       s.listen(0, '127.0.0.1', () => console.log(s.address().port));`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const port = await new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.stdout!.once('data', (c: Buffer) => resolve(Number(c.toString().trim())));
    });
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const message = Buffer.alloc(RECORD_BYTES, 'k');
    const runs: Cpu[] = [];
    try {
      for (let r = 0; r < ROUNDS; r++) {
        const m = await measured([server.pid!], async () => {
          for (let i = 0; i < SINGLE; i++) {
            const answered = new Promise((resolve) => socket.once('data', resolve));
            socket.write(message);
            await answered;
          }
        });
        runs.push(m.cpu[0]!);
      }
    } finally {
      socket.destroy();
    }
    const cpu = medianCpu(runs);
    const us = (total(cpu) / SINGLE) * 1e6;
    return {
      run: 'the floor: a Node server that only answers (1 KiB in, 60 B out, one request in flight)',
      skiff: cpuText(cpu, 1e6 / SINGLE, 'µs'),
      peer: '',
      measured: `${us.toFixed(1)} µs`,
      value: us,
      target: null,
      met: null,
    };
  } finally {
    server.kill();
  }
}

/** `skiff producer-perf-test` at `mbPerS` into `topic`: its steady-state percentiles. */
async function paced(bootstrap: string, topic: string, mbPerS: number) {
  const rate = Math.round((mbPerS * 1e6) / RECORD_BYTES);
  const perf = await run(process.execPath, [
    ...[
      SKIFF,
      'producer-perf-test',
      '--topic',
      topic,
      '--num-records',
      String(LATENCY_RECORDS + LATENCY_WARMUP),
    ],
    ...['--warmup-records', String(LATENCY_WARMUP), '--record-size', String(RECORD_BYTES)],
    ...['--throughput', String(rate), '--producer-props', `bootstrap.servers=${bootstrap}`],
    ...['acks=-1', 'batch.size=262144', 'linger.ms=1'],
  ]);
  // The last line is the steady state's summary.
  const summary = perf.out.trim().split('\n').at(-1) ?? '';
  const num = (re: RegExp) => Number(re.exec(summary)?.[1] ?? Number.NaN);
  const r = {
    offered: mbPerS,
    // Kafka's tool prints MiB/s as "MB/sec".
    achieved: (num(/\(([\d.]+) MB\/sec\)/) * 2 ** 20) / 1e6,
    p50: num(/([\d.]+) ms 50th/),
    p99: num(/([\d.]+) ms 99th/),
    p999: num(/([\d.]+) ms 99\.9th/),
  };
  if (Number.isNaN(r.p999)) throw new Error(`no percentiles in producer-perf-test output:\n${perf.out}`);
  return r;
}

/** Microseconds of the monotonic clock, the one V8's profiles time their samples with. */
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

/**
 * Top `n` self-time functions of a .cpuprofile over the samples taken between `from` and `to`
 * (monotonicUs of this process: the same clock), idle left out.
 */
function topSelf(
  file: string,
  n: number,
  from: number,
  to: number,
): { name: string; ms: number; share: number }[] {
  const prof = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
    startTime: number;
    samples: number[];
    timeDeltas: number[];
  };
  const byId = new Map(prof.nodes.map((x) => [x.id, x.callFrame]));
  const self = new Map<string, number>();
  let all = 0;
  let t = prof.startTime;
  prof.samples.forEach((id, i) => {
    t += prof.timeDeltas[i] ?? 0;
    const f = byId.get(id)!;
    if (f.functionName === '(idle)' || t < from || t > to) return;
    const key =
      `${f.functionName || '(anonymous)'} ${f.url ? `${path.basename(f.url)}:${f.lineNumber + 1}` : ''}`.trim();
    const dt = prof.timeDeltas[i] ?? 0;
    self.set(key, (self.get(key) ?? 0) + dt);
    all += dt;
  });
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, us]) => ({ name, ms: us / 1000, share: us / Math.max(all, 1) }));
}

/** The record batches of the segments in a partition directory, in offset order. */
function storedBatches(partitionDir: string): Buffer[] {
  const batches: Buffer[] = [];
  for (const f of fs
    .readdirSync(partitionDir)
    .filter((x) => /^\d{20}\.log$/.test(x))
    .sort()) {
    const b = fs.readFileSync(path.join(partitionDir, f));
    // A batch: baseOffset (8 bytes), batchLength (4), then batchLength bytes.
    for (let at = 0; at + 12 <= b.length; at += 12 + b.readInt32BE(at + 8))
      batches.push(b.subarray(at, at + 12 + b.readInt32BE(at + 8)));
  }
  return batches;
}

async function rf3Admin(c: Cluster) {
  const client = new KafkaClient({
    bootstrap: parseBootstrap(c.bootstrap),
    clientId: 'skiff-bench',
    runtime: systemRuntime(),
    requestTimeoutMs: 10_000,
  });
  const admin = new Admin(client);
  const create = async (name: string) => {
    const [r] = await admin.createTopics([
      { name, numPartitions: 1, replicationFactor: 3, configs: new Map() },
    ]);
    if (r?.error) throw r.error;
    await waitIsr(admin, name, [1, 2, 3], 30_000);
  };
  const leader = async (name: string) => (await isrOf(admin, name))!.leader;
  return { client, create, leader };
}

export async function benchYardsticks(): Promise<void> {
  const outDir = path.resolve(process.env.SKIFF_BENCH_OUT ?? 'bench-results');
  fs.mkdirSync(outDir, { recursive: true });
  const loadStart = loadText();
  line(
    `yardsticks (issue 25): ${RECORDS} x ${RECORD_BYTES} B by kcat, ${SINGLE} by the Node clients, ` +
      `${ROUNDS} alternated rounds, medians (load average ${loadStart}, ${os.cpus().length} cores)`,
  );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-bench-yard-'));
  const rows: Row[] = [];
  const report: Record<string, unknown> = {
    date: new Date().toISOString(),
    loadStart,
    records: RECORDS,
    singleRecords: SINGLE,
    recordBytes: RECORD_BYTES,
    rounds: ROUNDS,
  };
  const mock = (n: number) => ['-X', `test.mock.num.brokers=${n}`];
  let broker: Broker | undefined;
  let cluster: Cluster | undefined;
  let client: KafkaClient | undefined;
  const sink = await KafkaSink.start();
  let serving: KafkaSink | undefined;
  try {
    const input = path.join(dir, 'records.txt');
    recordsFile(input, RECORDS, RECORD_BYTES);
    // -p 0 everywhere: the mock's topics have 4 partitions, Skiff's and the sink's one.
    const p0 = ['-p', '0'];

    // 1, 2: RF 1.
    fs.mkdirSync(path.join(dir, 'rf1'));
    broker = await startBroker(path.join(dir, 'rf1'));
    const pid1 = broker.child.pid as number;
    const b1 = `127.0.0.1:${broker.port}`;
    createTopic(b1, 'rf1-warmup');
    await runKcat([...produceArgs(b1, 'rf1-warmup', input), ...p0], null);
    const rf1 = await alternate({
      skiff: (r) => {
        createTopic(b1, `rf1-${r}`);
        return measured([pid1], () => runKcat([...produceArgs(b1, `rf1-${r}`, input), ...p0], null));
      },
      sink: (r) =>
        measured([], () => runKcat([...produceArgs(sink.bootstrap, `s-${r}`, input), ...p0], null)),
      mock: (r) =>
        measured([], () =>
          runKcat([...produceArgs('127.0.0.1:1', `m-${r}`, input), ...p0, ...mock(1)], null),
        ),
    });
    // kcat exits on the last record (`-e` would add the broker's final long poll).
    const consumeArgs = (b: string, topic: string) => [
      '-C',
      '-b',
      b,
      '-t',
      topic,
      '-o',
      'beginning',
      '-q',
      '-c',
      String(RECORDS),
    ];
    // The ceiling serves the very batches Skiff stored, from memory.
    serving = await KafkaSink.start(storedBatches(path.join(dir, 'rf1', 'logs', 'rf1-0-0')));
    const served = serving.bootstrap;
    const consume = await alternate({
      skiff: (r) => measured([pid1], () => runKcat(consumeArgs(b1, `rf1-${r}`), null)),
      sink: () => measured([], () => runKcat(consumeArgs(served, 'sink'), null)),
    });
    const rf1s = med(rf1.skiff!);
    rows.push(throughputRow('kcat produce RF 1 acks=1', rf1s, RECORDS, 'ceiling', med(rf1.sink!), 0.9));
    rows.push(cpuBoundRow('kcat produce RF 1 acks=1', rf1.skiff!, med(rf1.sink!), 0.9));
    rows.push(
      throughputRow('kcat produce RF 1 acks=1', rf1s, RECORDS, 'mock (1 broker)', med(rf1.mock!), 1.0),
      // What any broker behind TCP can reach against the mock, which has no socket at all.
      throughputRow(
        'the ceiling itself (stores nothing, over TCP)',
        med(rf1.sink!),
        RECORDS,
        'mock (1 broker)',
        med(rf1.mock!),
      ),
    );
    rows.push(
      throughputRow('kcat consume RF 1', med(consume.skiff!), RECORDS, 'ceiling', med(consume.sink!), 0.9),
    );
    const per100 = (runs: { cpu: Cpu[] }[], i = 0) =>
      cpuText(medianCpu(runs.map((r) => r.cpu[i]!)), MB100 / (RECORDS * RECORD_BYTES), 'CPU-s per 100 MB');
    const cpuRow = (what: string, text: string): Row => ({
      run: what,
      skiff: text,
      peer: '',
      measured: '',
      value: null,
      target: null,
      met: null,
    });
    rows.push(cpuRow('broker CPU, kcat produce RF 1', per100(rf1.skiff!)));
    rows.push(cpuRow('broker CPU, kcat consume RF 1', per100(consume.skiff!)));
    report.rf1 = rf1;
    report.consume = consume;
    line(`  RF 1 kcat done (load ${loadText()})`);

    // 3, 4: Node clients, RF 1 vs JetStream R1.
    const n1 = await nodeClients('RF 1 vs R1', b1, [pid1], async (t) => createTopic(b1, t), 1, dir);
    rows.push(...n1.rows, perRequestRow('RF 1 vs R1', n1.single, true), await nodeFloorRow());
    report.nodeRf1 = n1.report;
    await broker.stop();
    broker = undefined;
    line(`  RF 1 Node clients done (load ${loadText()})`);

    // 1, 2: RF 3 acks=all.
    const cdir = path.join(dir, 'rf3');
    fs.mkdirSync(cdir);
    cluster = await Cluster.start(cdir, []);
    const a = await rf3Admin(cluster);
    client = a.client;
    const c = cluster;
    const pids = await Promise.all([1, 2, 3].map((id) => c.pid(id)));
    await a.create('rf3-warmup');
    await run('kcat', [...kcatProduce(c.bootstrap, 'rf3-warmup', input), ...p0]);
    const leaders: number[] = [];
    const rf3 = await alternate({
      skiff: async (r) => {
        await a.create(`rf3-${r}`);
        leaders.push(await a.leader(`rf3-${r}`));
        return measured(pids, () => run('kcat', [...kcatProduce(c.bootstrap, `rf3-${r}`, input), ...p0]));
      },
      sink: (r) => measured([], () => run('kcat', [...kcatProduce(sink.bootstrap, `s3-${r}`, input), ...p0])),
      mock: (r) =>
        measured([], () => run('kcat', [...kcatProduce('127.0.0.1:1', `m3-${r}`, input), ...p0, ...mock(3)])),
    });
    const rf3s = med(rf3.skiff!);
    rows.push(throughputRow('kcat produce RF 3 acks=all', rf3s, RECORDS, 'ceiling', med(rf3.sink!), 0.7));
    rows.push(cpuBoundRow('kcat produce RF 3 acks=all', rf3.skiff!, med(rf3.sink!), 0.7));
    rows.push(
      throughputRow('kcat produce RF 3 acks=all', rf3s, RECORDS, 'mock (3 brokers)', med(rf3.mock!), 1.0),
      throughputRow(
        'the ceiling itself (stores nothing, over TCP)',
        med(rf3.sink!),
        RECORDS,
        'mock (3 brokers)',
        med(rf3.mock!),
      ),
    );
    // Leader and followers of each round (broker ids are 1-3, pids in that order).
    const role = (leader: boolean) =>
      rf3.skiff!.map((run, r) => {
        const cs = run.cpu.filter((_, i) => (i + 1 === leaders[r]) === leader);
        return { user: median(cs.map((x) => x.user)), system: median(cs.map((x) => x.system)) };
      });
    const scale = MB100 / (RECORDS * RECORD_BYTES);
    rows.push(
      cpuRow(
        'broker CPU, kcat produce RF 3, leader',
        cpuText(medianCpu(role(true)), scale, 'CPU-s per 100 MB'),
      ),
    );
    rows.push(
      cpuRow(
        'broker CPU, kcat produce RF 3, each follower',
        cpuText(medianCpu(role(false)), scale, 'CPU-s per 100 MB'),
      ),
    );
    report.rf3 = { runs: rf3, leaders };
    line(`  RF 3 kcat done (load ${loadText()})`);

    const n3 = await nodeClients('RF 3 vs R3', c.bootstrap, pids, a.create, 3, dir);
    rows.push(...n3.rows, perRequestRow('RF 3 vs R3 (3 brokers summed)', n3.single, false));
    report.nodeRf3 = n3.report;
    line(`  RF 3 Node clients done (load ${loadText()})`);

    // 5: latency at 10 MB/s and at half the RF 3 throughput; at half of 10 MB/s too, a third point
    // of the chart's curve.
    const latencies = [];
    const rates: [number, string][] = [
      [LATENCY_MBPS / 2, ' (a point of the curve)'],
      [LATENCY_MBPS, ''],
      [mbps(RECORDS, rf3s) / 2, ' (half the RF 3 throughput)'],
    ];
    for (const [rate, why] of rates) {
      const topic = `lat-${latencies.length}`;
      await a.create(topic);
      const l = await paced(c.bootstrap, topic, rate);
      latencies.push(l);
      const at = l.achieved >= 0.95 * rate;
      const target = rate === LATENCY_MBPS;
      rows.push({
        run: `acks=all RF 3 latency at ${rate.toFixed(1)} MB/s${why}`,
        skiff: `p50 ${l.p50} ms, p99 ${l.p99} ms, p999 ${l.p999} ms (achieved ${l.achieved.toFixed(1)} MB/s)`,
        peer: '',
        measured: `p99 ${l.p99} ms, p999 ${l.p999} ms`,
        value: l.p99,
        target: target ? 'p99 ≤ 5 ms, p999 ≤ 20 ms at the rate' : null,
        met: target ? at && l.p99 <= 5 && l.p999 <= 20 : null,
      });
    }
    report.latency = latencies;
    fs.writeFileSync(path.join(outDir, 'yardsticks-latency.svg'), latencySvg(latencies));
    client.close();
    client = undefined;
    await cluster.stop();
    cluster = undefined;
    line(`  latency done (load ${loadText()})`);

    // 6: a CPU profile of an RF 3 produce on a cluster of its own.
    const profDir = path.join(outDir, 'yardsticks-profile');
    fs.rmSync(profDir, { recursive: true, force: true });
    const pdir = path.join(dir, 'prof');
    fs.mkdirSync(pdir);
    cluster = await Cluster.start(pdir, ['--cpu-prof', `--cpu-prof-dir=${profDir}`]);
    const pa = await rf3Admin(cluster);
    client = pa.client;
    await pa.create('prof');
    const profLeader = await pa.leader('prof');
    const leaderPid = await cluster.pid(profLeader);
    const from = monotonicUs();
    await run('kcat', [...kcatProduce(cluster.bootstrap, 'prof', input), ...p0]);
    const to = monotonicUs();
    client.close();
    client = undefined;
    await cluster.stop();
    cluster = undefined;
    const profile = fs.readdirSync(profDir).find((f) => f.includes(`.${leaderPid}.`));
    if (profile === undefined) line(`  no profile of the leader (pid ${leaderPid}) in ${profDir}`);
    else {
      const top = topSelf(path.join(profDir, profile), 10, from, to);
      report.profile = { file: path.join(profDir, profile), leader: profLeader, top };
      line(
        `  CPU profile of the RF 3 leader (broker ${profLeader}) during a kcat produce: ${path.join(profDir, profile)}`,
      );
      line('  top 10 self time (share of the non-idle samples taken during the kcat run):');
      for (const t of top)
        line(`    ${t.ms.toFixed(0).padStart(6)} ms ${(t.share * 100).toFixed(1).padStart(5)}%  ${t.name}`);
    }

    // 7: scale.
    const scaled = await scaleRows();
    rows.push(...scaled.rows);
    report.scale = scaled.report;
    fs.writeFileSync(path.join(outDir, 'yardsticks-scale.svg'), chartsSvg(scaled.charts));
    line(`  scale done (load ${loadText()})`);

    report.loadEnd = loadText();
    report.rows = rows;
    line(renderTable(rows));
    line(`  load average at the start ${loadStart}, at the end ${report.loadEnd}`);
    const json = path.join(outDir, 'yardsticks.json');
    fs.writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
    line(
      `  report: ${json}; latency chart: ${path.join(outDir, 'yardsticks-latency.svg')}; ` +
        `scaling curves: ${path.join(outDir, 'yardsticks-scale.svg')}`,
    );
  } finally {
    client?.close();
    await broker?.stop();
    await cluster?.stop();
    await sink.close();
    await serving?.close();
    fs.rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await benchYardsticks();
