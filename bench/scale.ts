import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Consumer, type MessagesStream } from '@platformatic/kafka';
import { Admin } from '../src/client/admin.js';
import { KafkaClient } from '../src/client/kafka-client.js';
import { Producer } from '../src/client/producer.js';
import { parseBootstrap, systemRuntime } from '../src/client/runtime.js';
import { ClientConnection } from '../src/network/client-connection.js';
import {
  ApiVersionsRequestCodec,
  defaultApiVersionsRequest,
} from '../src/protocol/generated/ApiVersionsRequest.js';
import { ApiVersionsResponseCodec } from '../src/protocol/generated/ApiVersionsResponse.js';
import { defaultMetadataRequest, MetadataRequestCodec } from '../src/protocol/generated/MetadataRequest.js';
import { MetadataResponseCodec } from '../src/protocol/generated/MetadataResponse.js';
import { median, recordsFile } from './baseline.js';
import { type Broker, produceArgs, runKcat, startBroker } from './broker.js';
import { run } from './replication.js';
import { type Chart, chartsSvg, type Row, renderTable } from './yardsticks-report.js';

/**
 * Issue 25's scale rows, each on a `skiff broker` child process with default settings:
 *  1. partitions (SKIFF_BENCH_SCALE_PARTITIONS, default 1,100,1000,10000): a topic of P partitions
 *     created through the broker (CreateTopics) and 3 records produced to every partition (Skiff's
 *     producer, acks=1), both timed; the broker stopped with SIGTERM and started again: seconds from
 *     the start to serving (a record produced to the last partition acknowledged and fetched back
 *     by kcat), the broker's RSS (VmRSS) and open fds (/proc/PID/fd) once serving. At the largest
 *     point also a crash restart (SIGKILL). Targets at 10,000: restart to serving ≤ 5 s, RSS ≤ 1 GiB.
 *  2. kcat producing SKIFF_BENCH_SCALE_RECORDS (default 100,000) 1 KiB records, acks=1, with the
 *     random partitioner, to 1,000 partitions and to 3, alternated over SKIFF_BENCH_ROUNDS rounds
 *     (default 3), medians: ≥ 0.7× the rate to 3.
 *  3. connections (SKIFF_BENCH_SCALE_CONNECTIONS, default 1,10,100,1000): N idle client
 *     connections open, each after ApiVersions and Metadata; the broker's RSS and fds, and one kcat
 *     producing the same records (one partition) beside them against beside the fewest (N = 1),
 *     alternated (the connections closed and opened again), at least 6 pairs, medians, as a ratio.
 *  4. consumer groups (SKIFF_BENCH_SCALE_MEMBERS, default 1,10,50,200): N @platformatic/kafka
 *     consumers started at once on a topic of as many partitions as the largest N; seconds from the
 *     first member's join to every member holding its share (the shares disjoint, every partition
 *     held), with the classic protocol and with KIP-848's consumer protocol, client and broker
 *     defaults (group.initial.rebalance.delay.ms 3 s, heartbeats every 3 s classic, 5 s KIP-848).
 * SKIFF_BENCH_SCALE_PARTS=partitions,produce,connections,groups picks the parts (default all).
 * benchScale() returns the rows, the report and the charts; benchYardsticks puts them in its table,
 * JSON and bench-results/yardsticks-scale.svg; `node dist/bench/main.js scale` runs it alone (its
 * table, SKIFF_BENCH_OUT/scale.json and the same SVG).
 */
const RECORD_BYTES = 1024;
const FILL_RECORDS = 3;
const RESTART_TARGET_S = 5;
const RSS_TARGET_MIB = 1024;
const PRODUCE_TARGET = 0.7;
const RESTART_PARTITIONS = 10_000;
const PRODUCE_PARTITIONS = 1_000;
/** A start that takes longer than this fails the bench. */
const READY_TIMEOUT_MS = 180_000;
const STABLE_TIMEOUT_MS = 60_000;
const CREATE_TIMEOUT_MS = 600_000;

const envInt = (name: string, dflt: number) => Math.max(1, Number(process.env[name] ?? dflt) || dflt);
const envList = (name: string, dflt: readonly number[]) =>
  (process.env[name]?.split(',').map(Number) ?? dflt).filter((n) => Number.isInteger(n) && n > 0);
const POINTS = envList('SKIFF_BENCH_SCALE_PARTITIONS', [1, 100, 1_000, 10_000]);
const CONNECTIONS = envList('SKIFF_BENCH_SCALE_CONNECTIONS', [1, 10, 100, 1_000]);
const MEMBERS = envList('SKIFF_BENCH_SCALE_MEMBERS', [1, 10, 50, 200]);
const RECORDS = envInt('SKIFF_BENCH_SCALE_RECORDS', 100_000);
const ROUNDS = envInt('SKIFF_BENCH_ROUNDS', 3);
const PARTS = (process.env.SKIFF_BENCH_SCALE_PARTS ?? 'partitions,produce,connections,groups').split(',');

const line = (s: string) => process.stdout.write(`${s}\n`);
const loadText = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const seconds = (t0: number) => (performance.now() - t0) / 1000;
const count = (n: number) => n.toLocaleString('en');
const mib = (kib: number) => kib / 1024;

/** The broker process's resident memory (KiB) and open file descriptors. */
function footprint(pid: number): { rssKiB: number; fds: number } {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return { rssKiB: Number(m[1]), fds: fs.readdirSync(`/proc/${pid}/fd`).length };
}

function openFilesLimit(): number {
  const m = /Max open files\s+(\d+)/.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
  return m ? Number(m[1]) : Number.POSITIVE_INFINITY;
}

/** Waits for `child` to exit after `signal`; the seconds it took. */
async function signalled(child: ChildProcess, signal: NodeJS.Signals): Promise<number> {
  const t0 = performance.now();
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill(signal);
    await exited;
  }
  return seconds(t0);
}

function client(bootstrap: string): KafkaClient {
  return new KafkaClient({
    bootstrap: parseBootstrap(bootstrap),
    clientId: 'skiff-bench-scale',
    runtime: systemRuntime(),
    requestTimeoutMs: 60_000,
  });
}

/**
 * Creates `topics` through the broker (one CreateTopics) and waits until Metadata shows every
 * partition with a leader. Returns what CreateTopics answered: '' when it succeeded, else
 * REQUEST_TIMED_OUT or TOPIC_ALREADY_EXISTS after the client's retries — the broker waits 30 s
 * for the controller, which goes on writing the topic after that.
 */
async function createTopics(bootstrap: string, topics: Record<string, number>): Promise<string> {
  const c = client(bootstrap);
  try {
    const results = await new Admin(c).createTopics(
      Object.entries(topics).map(([name, numPartitions]) => ({
        name,
        numPartitions,
        replicationFactor: 1,
        configs: new Map(),
      })),
    );
    const answers: string[] = [];
    for (const r of results) {
      if (r.error === null) continue;
      if (r.error.errorName !== 'TOPIC_ALREADY_EXISTS' && r.error.errorName !== 'REQUEST_TIMED_OUT')
        throw r.error;
      answers.push(`${r.name}: ${r.error.errorName} after the client's retries`);
    }
    const names = Object.keys(topics);
    const deadline = Date.now() + CREATE_TIMEOUT_MS;
    for (;;) {
      if (Date.now() > deadline)
        throw new Error(`${names.join(', ')} not created in ${CREATE_TIMEOUT_MS} ms`);
      const md = await c.fetchMetadata(names);
      const led = names.every((name) => {
        const t = md.topics.get(name);
        return t?.partitions.length === topics[name] && t.partitions.every((p) => p.leader >= 0);
      });
      if (led) return answers.join('; ');
      await sleep(100);
    }
  } finally {
    c.close();
  }
}

/** FILL_RECORDS records to each of `partitions` partitions of `topic`, acks=1. */
async function fill(bootstrap: string, topic: string, partitions: number): Promise<void> {
  const c = client(bootstrap);
  try {
    const producer = new Producer(c, { acks: 1, lingerMs: 5, idempotence: false });
    const value = Buffer.alloc(100, 'f');
    const acks: Promise<unknown>[] = [];
    for (let r = 0; r < FILL_RECORDS; r++)
      for (let partition = 0; partition < partitions; partition++)
        acks.push(producer.produce({ topic, partition, key: null, value }));
    await producer.flush();
    await Promise.all(acks);
  } finally {
    c.close();
  }
}

/**
 * Serving: a record produced to `partition` acknowledged (tried every 20 ms, no client backoff
 * measured) and fetched back by kcat.
 */
async function serve(bootstrap: string, topic: string, partition: number): Promise<void> {
  const c = client(bootstrap);
  try {
    const producer = new Producer(c, { acks: -1, idempotence: false, retries: 0, lingerMs: 0 });
    const value = Buffer.from(`after-${Date.now()}`);
    let acked: { offset: bigint } | null = null;
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (acked === null) {
      if (Date.now() > deadline) throw new Error(`${topic}-${partition} not writable after the restart`);
      acked = await producer
        .produce({ topic, partition, key: null, value })
        .catch(() => sleep(20).then(() => null));
    }
    const tail = await run('kcat', [
      ...['-b', bootstrap, '-C', '-t', topic, '-p', String(partition)],
      ...['-o', String(acked.offset), '-c', '1', '-e', '-q'],
    ]);
    if (tail.out.trim() !== value.toString())
      throw new Error(`fetched ${JSON.stringify(tail.out.slice(0, 80))}, not the record produced`);
  } finally {
    c.close();
  }
}

interface Restart {
  /** Start of the process to the ready line. */
  readonly readySeconds: number;
  /** Start of the process to serving. */
  readonly servingSeconds: number;
  readonly rssKiB: number;
  readonly fds: number;
}

/** Starts the broker of `dir` and times it to serving; its footprint then. */
async function restart(dir: string, partitions: number): Promise<{ broker: Broker; restart: Restart }> {
  const t0 = performance.now();
  const broker = await startBroker(dir, [], [], READY_TIMEOUT_MS);
  const readySeconds = seconds(t0);
  await serve(`127.0.0.1:${broker.port}`, 'scale', partitions - 1);
  const servingSeconds = seconds(t0);
  return {
    broker,
    restart: { readySeconds, servingSeconds, ...footprint(broker.child.pid as number) },
  };
}

export interface PartitionPoint {
  readonly partitions: number;
  /** Until every partition has a leader. */
  readonly createSeconds: number;
  /** '' when CreateTopics succeeded (see createTopics). */
  readonly createAnswer: string;
  readonly fillSeconds: number;
  /** SIGTERM to the exit of the first broker. */
  readonly stopSeconds: number;
  readonly clean: Restart;
  readonly crash: Restart | null;
}

async function partitionPoint(dir: string, partitions: number, crash: boolean): Promise<PartitionPoint> {
  let broker: Broker | undefined = await startBroker(dir, [], [], READY_TIMEOUT_MS);
  try {
    const bootstrap = `127.0.0.1:${broker.port}`;
    let t0 = performance.now();
    const createAnswer = await createTopics(bootstrap, { scale: partitions });
    const createSeconds = seconds(t0);
    t0 = performance.now();
    await fill(bootstrap, 'scale', partitions);
    const fillSeconds = seconds(t0);
    const stopSeconds = await signalled(broker.child, 'SIGTERM');
    const clean = await restart(dir, partitions);
    broker = clean.broker;
    let crashed: Restart | null = null;
    if (crash) {
      await signalled(broker.child, 'SIGKILL');
      const again = await restart(dir, partitions);
      broker = again.broker;
      crashed = again.restart;
    }
    return {
      partitions,
      createSeconds,
      createAnswer,
      fillSeconds,
      stopSeconds,
      clean: clean.restart,
      crash: crashed,
    };
  } finally {
    await broker?.stop();
  }
}

const restartText = (r: Restart) =>
  `${r.servingSeconds.toFixed(2)} s (ready line ${r.readySeconds.toFixed(2)} s), RSS ${mib(r.rssKiB).toFixed(0)} MiB, ${count(r.fds)} fds`;

function partitionRows(points: readonly PartitionPoint[]): Row[] {
  const rows: Row[] = [];
  for (const p of points) {
    const target = p.partitions === RESTART_PARTITIONS;
    rows.push({
      run: `restart (SIGTERM) to serving, ${count(p.partitions)} partitions`,
      skiff: `${restartText(p.clean)}; stopped in ${p.stopSeconds.toFixed(2)} s`,
      peer:
        `created in ${p.createSeconds.toFixed(2)} s${p.createAnswer ? ` (${p.createAnswer})` : ''}, ` +
        `${FILL_RECORDS} records to each in ${p.fillSeconds.toFixed(2)} s`,
      measured: `${p.clean.servingSeconds.toFixed(2)} s`,
      value: p.clean.servingSeconds,
      target: target ? `≤ ${RESTART_TARGET_S} s` : null,
      met: target ? p.clean.servingSeconds <= RESTART_TARGET_S : null,
    });
    if (target)
      rows.push({
        run: `broker RSS after the restart, ${count(p.partitions)} partitions`,
        skiff: `${mib(p.clean.rssKiB).toFixed(0)} MiB, ${count(p.clean.fds)} fds`,
        peer: '',
        measured: `${mib(p.clean.rssKiB).toFixed(0)} MiB`,
        value: mib(p.clean.rssKiB),
        target: `≤ ${RSS_TARGET_MIB} MiB`,
        met: mib(p.clean.rssKiB) <= RSS_TARGET_MIB,
      });
    if (p.crash !== null)
      rows.push({
        run: `crash restart (SIGKILL) to serving, ${count(p.partitions)} partitions`,
        skiff: restartText(p.crash),
        peer: '',
        measured: `${p.crash.servingSeconds.toFixed(2)} s`,
        value: p.crash.servingSeconds,
        target: null,
        met: null,
      });
  }
  return rows;
}

/** Each partition point on a broker of its own; the crash restart at the largest. */
async function partitionsPart(dir: string): Promise<PartitionPoint[]> {
  const limit = openFilesLimit();
  const points: PartitionPoint[] = [];
  const largest = Math.max(...POINTS);
  for (const partitions of POINTS) {
    // Every log holds its active segment open.
    if (partitions + 1000 > limit) {
      line(`  ${count(partitions)} partitions skipped: open files limited to ${count(limit)}`);
      continue;
    }
    const d = fs.mkdtempSync(path.join(dir, `p${partitions}-`));
    const p = await partitionPoint(d, partitions, partitions === largest);
    fs.rmSync(d, { recursive: true, force: true });
    points.push(p);
    line(
      `  ${count(partitions)} partitions: create ${p.createSeconds.toFixed(2)} s${p.createAnswer ? ` (${p.createAnswer})` : ''}, fill ${p.fillSeconds.toFixed(2)} s, ` +
        `SIGTERM restart ${restartText(p.clean)}${p.crash ? `; SIGKILL restart ${restartText(p.crash)}` : ''} (load ${loadText()})`,
    );
  }
  return points;
}

/** kcat with librdkafka's random partitioner (no sticky batches): every partition gets records. */
const randomPartitions = ['-X', 'topic.partitioner=random', '-X', 'sticky.partitioning.linger.ms=0'];

export interface ProduceSpread {
  readonly few: number[];
  readonly many: number[];
}

async function producePart(dir: string, input: string): Promise<ProduceSpread> {
  const d = fs.mkdtempSync(path.join(dir, 'produce-'));
  const broker = await startBroker(d, [], [], READY_TIMEOUT_MS);
  try {
    const b = `127.0.0.1:${broker.port}`;
    await createTopics(b, { few: 3, many: PRODUCE_PARTITIONS, warmup: 3 });
    await runKcat([...produceArgs(b, 'warmup', input), ...randomPartitions], null);
    const out: ProduceSpread = { few: [], many: [] };
    for (let r = 0; r < ROUNDS; r++) {
      out.few.push(await runKcat([...produceArgs(b, 'few', input), ...randomPartitions], null));
      out.many.push(await runKcat([...produceArgs(b, 'many', input), ...randomPartitions], null));
    }
    return out;
  } finally {
    await broker.stop();
    fs.rmSync(d, { recursive: true, force: true });
  }
}

function produceRow(s: ProduceSpread): Row {
  const few = median(s.few);
  const many = median(s.many);
  const ratio = few / many;
  const mbps = (t: number) => ((RECORDS * RECORD_BYTES) / 1e6 / t).toFixed(0);
  return {
    run: `kcat produce to ${count(PRODUCE_PARTITIONS)} partitions vs 3 (random partitioner, acks=1)`,
    skiff: `${many.toFixed(2)} s, ${mbps(many)} MB/s`,
    peer: `3 partitions ${few.toFixed(2)} s, ${mbps(few)} MB/s`,
    measured: `${ratio.toFixed(2)}×`,
    value: ratio,
    target: `≥ ${PRODUCE_TARGET}×`,
    met: ratio >= PRODUCE_TARGET,
  };
}

export interface ConnectionPoint {
  readonly connections: number;
  readonly rssKiB: number;
  readonly fds: number;
  /** kcat runs of the active client beside `connections` idle ones. */
  readonly produce: number[];
  /** The runs paired with them, beside the fewest idle connections. */
  readonly baseline: number[];
}

/** One idle client connection, after ApiVersions and Metadata (all topics), as a client leaves it. */
async function idleConnection(port: number): Promise<ClientConnection> {
  const c = await ClientConnection.connect('127.0.0.1', port, { clientId: 'skiff-bench-idle' });
  await c.send(18, 3, ApiVersionsRequestCodec, defaultApiVersionsRequest(), ApiVersionsResponseCodec);
  await c.send(
    3,
    12,
    MetadataRequestCodec,
    { ...defaultMetadataRequest(), topics: null, allowAutoTopicCreation: false },
    MetadataResponseCodec,
  );
  return c;
}

async function connectionsPart(dir: string, input: string): Promise<ConnectionPoint[]> {
  const d = fs.mkdtempSync(path.join(dir, 'conn-'));
  const broker = await startBroker(d, [], [], READY_TIMEOUT_MS);
  const idle: ClientConnection[] = [];
  try {
    const b = `127.0.0.1:${broker.port}`;
    await createTopics(b, { conn: 1 });
    await runKcat([...produceArgs(b, 'conn', input), '-p', '0'], null);
    const points: ConnectionPoint[] = [];
    const sorted = [...CONNECTIONS].sort((x, y) => x - y);
    const base = sorted[0]!;
    const openTo = async (n: number) => {
      while (idle.length < n) {
        const more = Math.min(100, n - idle.length);
        idle.push(...(await Promise.all(Array.from({ length: more }, () => idleConnection(broker.port)))));
      }
      for (const c of idle.splice(n)) c.close();
    };
    const kcat = () => runKcat([...produceArgs(b, 'conn', input), '-p', '0'], null);
    for (const n of sorted) {
      await openTo(n);
      // Settled: the connections' first requests answered and their buffers released.
      await sleep(500);
      const f = footprint(broker.child.pid as number);
      const produce: number[] = [];
      const baseline: number[] = [];
      // Runs of a fraction of a second on a shared machine: each beside N paired with one beside
      // the fewest, and more of them than the other parts' rounds.
      // Each pair's order swapped every round: the runs slow down as the log grows, and the second
      // of a fixed order would always be the slower.
      for (let r = 0; r < Math.max(ROUNDS, 6); r++) {
        const pair: [number, number[]][] = [
          [n, produce],
          [base, baseline],
        ];
        for (const [m, runs] of r % 2 === 0 ? pair : pair.reverse()) {
          await openTo(m);
          // The broker done with the connections just opened or closed.
          await sleep(300);
          runs.push(await kcat());
        }
      }
      points.push({ connections: n, ...f, produce, baseline });
      line(
        `  ${count(n)} idle connections: RSS ${mib(f.rssKiB).toFixed(0)} MiB, ${count(f.fds)} fds, ` +
          `kcat ${median(produce).toFixed(2)} s, beside ${count(base)}: ${median(baseline).toFixed(2)} s (load ${loadText()})`,
      );
    }
    return points;
  } finally {
    for (const c of idle) c.close();
    await broker.stop();
    fs.rmSync(d, { recursive: true, force: true });
  }
}

const connectionRatio = (p: ConnectionPoint) => median(p.baseline) / median(p.produce);

function connectionRows(points: readonly ConnectionPoint[]): Row[] {
  const base = points[0];
  if (base === undefined) return [];
  return points.map((p) => {
    const ratio = connectionRatio(p);
    return {
      run: `one kcat producer beside ${count(p.connections)} idle connections`,
      skiff: `${median(p.produce).toFixed(2)} s; broker RSS ${mib(p.rssKiB).toFixed(0)} MiB, ${count(p.fds)} fds`,
      peer: `beside ${count(base.connections)}, alternated: ${median(p.baseline).toFixed(2)} s`,
      measured: `${ratio.toFixed(2)}×`,
      value: ratio,
      target: null,
      met: null,
    };
  });
}

type Protocol = 'classic' | 'consumer';

export interface GroupPoint {
  readonly protocol: Protocol;
  readonly members: number;
  /** null: not stable within STABLE_TIMEOUT_MS (`unstable` says how far it got). */
  readonly stableSeconds: number | null;
  readonly unstable: string;
  /** Errors the members' clients and message streams emitted (the client's; none is fatal here). */
  readonly streamErrors: number;
}

/** Every member holds a share, no partition twice, all `partitions` held. */
function stable(consumers: readonly Consumer[], topic: string, partitions: number): boolean {
  const held = new Set<number>();
  for (const c of consumers) {
    const mine = (c.assignments ?? []).filter((a) => a.topic === topic).flatMap((a) => a.partitions);
    if (mine.length === 0 && consumers.length <= partitions) return false;
    for (const p of mine) {
      if (held.has(p)) return false;
      held.add(p);
    }
  }
  return held.size === partitions;
}

async function groupPoint(
  bootstrap: string,
  topic: string,
  partitions: number,
  protocol: Protocol,
  members: number,
): Promise<GroupPoint> {
  const groupId = `scale-${protocol}-${members}`;
  const consumers = Array.from(
    { length: members },
    (_, i) =>
      new Consumer({
        clientId: `${groupId}-${i}`,
        groupId,
        groupProtocol: protocol,
        bootstrapBrokers: [bootstrap],
        maxWaitTime: 500,
      }),
  );
  const streams: MessagesStream<Buffer, Buffer, Buffer, Buffer>[] = [];
  let streamErrors = 0;
  try {
    for (const c of consumers)
      c.on('error', () => {
        streamErrors++;
      });
    const t0 = performance.now();
    const consuming = consumers.map((c) =>
      c
        .consume({ topics: [topic], mode: 'committed', fallbackMode: 'latest', autocommit: false })
        .then((s) => {
          // The client's own failures of a read (a KIP-848 OffsetFetch answered STALE_MEMBER_EPOCH
          // while the member's epoch moves): counted, not fatal to the bench; the member stays.
          s.on('error', () => {
            streamErrors++;
          });
          streams.push(s);
        }),
    );
    const deadline = Date.now() + STABLE_TIMEOUT_MS;
    while (!stable(consumers, topic, partitions)) {
      if (Date.now() > deadline) {
        const holding = consumers.filter((c) => (c.assignments ?? []).some((a) => a.partitions.length > 0));
        const held = new Set(consumers.flatMap((c) => (c.assignments ?? []).flatMap((a) => a.partitions)));
        return {
          protocol,
          members,
          stableSeconds: null,
          unstable: `not stable in ${STABLE_TIMEOUT_MS / 1000} s: ${holding.length} of ${members} members hold partitions, ${held.size} of ${partitions} partitions held`,
          streamErrors,
        };
      }
      await sleep(10);
    }
    const stableSeconds = seconds(t0);
    await Promise.all(consuming);
    return { protocol, members, stableSeconds, unstable: '', streamErrors };
  } finally {
    // Bounded: a member stuck mid-join must not hold the bench. Streams first: a consumer refuses
    // to leave its group while a stream of it still consumes ("Cannot leave group while consuming
    // messages"), stays open and goes on heartbeating — against a stopped broker, for ever, so
    // the bench never exited.
    const closing = (async () => {
      await Promise.all(streams.map((s) => s.close().catch(() => {})));
      await Promise.all(consumers.map((c) => c.close(true).catch(() => {})));
    })();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([closing, new Promise((r) => (timer = setTimeout(r, 30_000)))]);
    clearTimeout(timer);
  }
}

async function groupsPart(dir: string): Promise<GroupPoint[]> {
  const d = fs.mkdtempSync(path.join(dir, 'groups-'));
  const broker = await startBroker(d, [], [], READY_TIMEOUT_MS);
  try {
    const b = `127.0.0.1:${broker.port}`;
    const partitions = Math.max(...MEMBERS);
    await createTopics(b, { groups: partitions });
    const points: GroupPoint[] = [];
    for (const protocol of ['classic', 'consumer'] as const)
      for (const members of MEMBERS) {
        const p = await groupPoint(b, 'groups', partitions, protocol, members);
        points.push(p);
        line(`  ${protocol} protocol, ${count(members)} members: ${stableText(p)} (load ${loadText()})`);
      }
    return points;
  } finally {
    await broker.stop();
    fs.rmSync(d, { recursive: true, force: true });
  }
}

const stableText = (p: GroupPoint) =>
  `${p.stableSeconds === null ? p.unstable : `stable in ${p.stableSeconds.toFixed(2)} s`}` +
  `${p.streamErrors > 0 ? `, ${p.streamErrors} client errors` : ''}`;

function groupRows(points: readonly GroupPoint[]): Row[] {
  return points.map((p) => ({
    run: `${p.protocol === 'classic' ? 'classic' : 'KIP-848 consumer'} protocol group, ${count(p.members)} members: first join to stable`,
    skiff: stableText(p),
    peer:
      p.protocol === 'classic'
        ? 'defaults: initial rebalance delay 3 s, heartbeats every 3 s'
        : 'defaults: heartbeats every 5 s',
    measured: p.stableSeconds === null ? 'not stable' : `${p.stableSeconds.toFixed(2)} s`,
    value: p.stableSeconds,
    target: null,
    met: null,
  }));
}

export interface ScaleReport {
  readonly partitions: PartitionPoint[];
  readonly produce: ProduceSpread | null;
  readonly connections: ConnectionPoint[];
  readonly groups: GroupPoint[];
}

/** The scaling curves, one panel each. */
export function scaleCharts(r: ScaleReport): Chart[] {
  const byPartitions = (f: (p: PartitionPoint) => number) =>
    r.partitions.map((p) => [p.partitions, f(p)] as const);
  const charts: Chart[] = [];
  if (r.partitions.length > 0) {
    charts.push(
      {
        title: 'restart to serving against partitions',
        x: { label: 'partitions', log: true },
        y: { label: 's' },
        series: [
          { name: 'SIGTERM', points: byPartitions((p) => p.clean.servingSeconds) },
          { name: 'ready line', points: byPartitions((p) => p.clean.readySeconds) },
          {
            name: 'SIGKILL',
            points: r.partitions.flatMap((p) =>
              p.crash === null ? [] : [[p.partitions, p.crash.servingSeconds] as const],
            ),
          },
        ],
      },
      {
        title: 'broker RSS after the restart against partitions',
        x: { label: 'partitions', log: true },
        y: { label: 'MiB' },
        series: [{ name: 'RSS', points: byPartitions((p) => mib(p.clean.rssKiB)) }],
      },
      {
        title: 'broker open fds after the restart against partitions',
        x: { label: 'partitions', log: true },
        y: { label: 'fds' },
        series: [{ name: 'fds', points: byPartitions((p) => p.clean.fds) }],
      },
    );
  }
  if (r.groups.length > 0)
    charts.push({
      title: 'first join to a stable group against members',
      x: { label: 'members', log: true },
      y: { label: 's' },
      series: (['classic', 'consumer'] as const).map((protocol) => ({
        name: protocol === 'classic' ? 'classic' : 'KIP-848',
        points: r.groups
          .filter((g) => g.protocol === protocol)
          .flatMap((g) => (g.stableSeconds === null ? [] : [[g.members, g.stableSeconds] as const])),
      })),
    });
  if (r.connections.length > 0)
    charts.push(
      {
        title: 'one producer’s throughput against idle connections (× N = 1)',
        x: { label: 'idle connections', log: true },
        y: { label: 'ratio' },
        series: [
          {
            name: 'throughput',
            points: r.connections.map((c) => [c.connections, connectionRatio(c)] as const),
          },
        ],
      },
      {
        title: 'broker RSS against idle connections',
        x: { label: 'idle connections', log: true },
        y: { label: 'MiB' },
        series: [{ name: 'RSS', points: r.connections.map((c) => [c.connections, mib(c.rssKiB)] as const) }],
      },
    );
  return charts;
}

/** Runs the parts SKIFF_BENCH_SCALE_PARTS names; their rows, report and charts. */
export async function scaleRows(): Promise<{ rows: Row[]; report: ScaleReport; charts: Chart[] }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-bench-scale-'));
  try {
    const input = path.join(dir, 'records.txt');
    recordsFile(input, RECORDS, RECORD_BYTES);
    const report: ScaleReport = {
      partitions: PARTS.includes('partitions') ? await partitionsPart(dir) : [],
      produce: PARTS.includes('produce') ? await producePart(dir, input) : null,
      connections: PARTS.includes('connections') ? await connectionsPart(dir, input) : [],
      groups: PARTS.includes('groups') ? await groupsPart(dir) : [],
    };
    const rows = [
      ...partitionRows(report.partitions),
      ...(report.produce === null ? [] : [produceRow(report.produce)]),
      ...connectionRows(report.connections),
      ...groupRows(report.groups),
    ];
    return { rows, report, charts: scaleCharts(report) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  }
}

/** `node dist/bench/main.js scale`: the scale rows alone, their table, JSON and chart. */
export async function benchScale(): Promise<void> {
  const outDir = path.resolve(process.env.SKIFF_BENCH_OUT ?? 'bench-results');
  fs.mkdirSync(outDir, { recursive: true });
  const loadStart = loadText();
  line(
    `scale (issue 25): partitions ${POINTS.join(', ')}; idle connections ${CONNECTIONS.join(', ')}; ` +
      `group members ${MEMBERS.join(', ')}; ${RECORDS} x ${RECORD_BYTES} B by kcat, ${ROUNDS} rounds ` +
      `(load average ${loadStart}, ${os.cpus().length} cores)`,
  );
  const { rows, report, charts } = await scaleRows();
  line(renderTable(rows));
  const loadEnd = loadText();
  line(`  load average at the start ${loadStart}, at the end ${loadEnd}`);
  const json = path.join(outDir, 'scale.json');
  fs.writeFileSync(
    json,
    `${JSON.stringify({ date: new Date().toISOString(), loadStart, loadEnd, ...report, rows }, null, 2)}\n`,
  );
  const svg = path.join(outDir, 'yardsticks-scale.svg');
  fs.writeFileSync(svg, chartsSvg(charts));
  line(`  report: ${json}; scaling curves: ${svg}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await benchScale();
