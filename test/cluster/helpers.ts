/**
 * Helpers for the cluster tests: free consecutive ports, `skiff up` / `skiff broker` as child
 * processes, kcat without blocking the event loop, an admin client, and bounded polling.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Admin } from '../../src/client/admin.js';
import { KafkaClient, type TopicMetadata } from '../../src/client/kafka-client.js';
import { parseBootstrap, systemRuntime } from '../../src/client/runtime.js';
import { freePorts } from '../../src/cluster/free-port.js';
import { runProcess, runSkiff, SKIFF, type ToolRun } from '../support/broker-process.js';

export { runSkiff, SKIFF } from '../support/broker-process.js';
export { freePorts };

export function requireTool(name: string, versionArg: string): void {
  const r = spawnSync(name, [versionArg], { encoding: 'utf8' });
  if (r.error)
    assert.fail(`${name} is not installed (Debian: apt-get install ${name}); the cluster tests need it`);
}

/** A long-running skiff child process (`up` or `broker`) whose output is collected. */
export class SkiffProcess {
  private out = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(
    readonly args: readonly string[],
    readonly child: ChildProcess = spawn(process.execPath, [SKIFF, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  ) {
    const collect = (c: Buffer): void => {
      this.out += c.toString();
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  output(): string {
    return this.out;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves with the match once the output matches; rejects on exit or after `timeoutMs`. */
  async waitFor(pattern: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = pattern.exec(this.out);
      if (m !== null) return m;
      if (!this.running) throw new Error(`skiff ${this.args.join(' ')} exited:\n${this.out}`);
      if (Date.now() > deadline) throw new Error(`no ${pattern} after ${timeoutMs} ms:\n${this.out}`);
      await sleep(50);
    }
  }

  /** `signal` (SIGTERM; SIGINT is Ctrl-C), then SIGKILL if still running after `graceMs`. */
  async stop(
    graceMs = 30_000,
    signal: NodeJS.Signals = 'SIGTERM',
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.running) {
      this.child.kill(signal);
      const t = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
      const r = await this.exited;
      clearTimeout(t);
      return r;
    }
    return this.exited;
  }

  kill(): Promise<unknown> {
    if (this.running) this.child.kill('SIGKILL');
    return this.exited;
  }
}

/**
 * `skiff up --brokers N` on `port` (broker i on port + i - 1) with DIR/server.properties as every
 * broker's config; resolves once the launcher reports the cluster up.
 */
export async function launchSkiffUp(
  dir: string,
  port: number,
  brokers = 3,
  /** More arguments of `skiff up` (e.g. --add-scram). */
  args: readonly string[] = [],
): Promise<SkiffProcess> {
  const up = new SkiffProcess([
    'up',
    '--brokers',
    String(brokers),
    '--data-dir',
    dir,
    '--port',
    String(port),
    '--http-port',
    '0',
    '--config-file',
    path.join(dir, 'server.properties'),
    ...args,
  ]);
  try {
    await up.waitFor(/cluster \S+ up in \d+ ms/, 60_000);
  } catch (e) {
    // Not up: stopped here, so no launcher outlives the test that started it.
    await up.stop(15_000);
    throw e;
  }
  return up;
}

/**
 * The brokers' settings of the cluster tests: a killed broker is fenced and out of the ISR within
 * seconds. Broker N listens on the launcher's port + N - 1.
 */
export const FAST_FAILOVER_PROPS: readonly string[] = [
  'listeners=PLAINTEXT://127.0.0.1:9092',
  'broker.session.timeout.ms=3000',
  'broker.heartbeat.interval.ms=500',
  'replica.lag.time.max.ms=3000',
];

/** A new temporary data dir with server.properties (FAST_FAILOVER_PROPS, then `extra`) and `skiff up` on it. */
export async function startTestCluster(
  prefix: string,
  extra: readonly string[] = [],
  brokers = 3,
  args: readonly string[] = [],
): Promise<{ dir: string; port: number; up: SkiffProcess }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  try {
    writeFileSync(path.join(dir, 'server.properties'), [...FAST_FAILOVER_PROPS, ...extra, ''].join('\n'));
    const port = await freePorts(brokers);
    return { dir, port, up: await launchSkiffUp(dir, port, brokers, args) };
  } catch (e) {
    removeDataDir(dir);
    throw e;
  }
}

/** Removes a test's data dir; a broker that just exited may still be closing files (ENOTEMPTY): retried. */
export function removeDataDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `probe` until it returns a value (not undefined) or `timeoutMs` passes. */
export async function waitUntil<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${last})`);
    await sleep(everyMs);
  }
}

export type KcatRun = ToolRun;

export function kcat(args: readonly string[], input = '', timeoutMs = 30_000): Promise<KcatRun> {
  return runProcess('kcat', args, input, timeoutMs);
}

/** Reads a whole partition with kcat (-e: exit at the end); the values, one per line. */
export async function consumeAll(bootstrap: string, topic: string, partition = 0): Promise<string[]> {
  const r = await kcat([
    '-b',
    bootstrap,
    '-C',
    '-t',
    topic,
    '-p',
    String(partition),
    '-o',
    'beginning',
    '-e',
    '-q',
  ]);
  assert.equal(r.status, 0, `kcat consume ${topic}: ${r.stderr}`);
  return r.stdout.split('\n').filter((l) => l !== '');
}

/** An admin client for one test; close() it. */
export function adminFor(
  bootstrap: string,
  requestTimeoutMs = 10_000,
): { admin: Admin; client: KafkaClient; close(): void } {
  const client = new KafkaClient({
    bootstrap: parseBootstrap(bootstrap),
    clientId: 'skiff-cluster-test',
    runtime: systemRuntime(),
    requestTimeoutMs,
  });
  return { admin: new Admin(client), client, close: () => client.close() };
}

export async function describe1(admin: Admin, topic: string): Promise<TopicMetadata> {
  const t = (await admin.describeTopics([topic])).get(topic);
  if (t === undefined || t instanceof Error) throw t ?? new Error(`no topic ${topic}`);
  return t;
}

/** Creates `topic` with one partition on brokers 1, 2 and 3 and waits until 1 leads it with all three in the ISR. */
export async function createLedBy1(
  admin: Admin,
  topic: string,
  configs: ReadonlyMap<string, string> = new Map(),
  timeoutMs = 15_000,
): Promise<void> {
  const [r] = await admin.createTopics([
    {
      name: topic,
      numPartitions: -1,
      replicationFactor: -1,
      assignments: [[1, 2, 3]],
      configs: new Map(configs),
    },
  ]);
  if (r!.error !== null) throw r!.error;
  await waitUntil(
    `${topic} led by 1 with ISR 1,2,3`,
    async () => {
      const p = (await describe1(admin, topic)).partitions[0];
      return p?.leader === 1 && p.isr.length === 3 ? true : undefined;
    },
    timeoutMs,
  );
}

/**
 * The active controller's broker id, from the CONTROLLER column of `skiff cluster status --data-dir
 * DIR` (the launcher reads the metadata image). Metadata and DescribeCluster name a random live
 * broker, as Kafka's KRaft brokers do, so only the image says which broker controls.
 */
export function activeController(dataDir: string, timeoutMs = 15_000): Promise<number> {
  return waitUntil(
    'a broker shown as the controller by skiff cluster status',
    async () => {
      const r = await runSkiff(['cluster', 'status', '--data-dir', dataDir]);
      if (r.status !== 0) throw new Error(r.stderr.trim());
      for (const line of r.stdout.split('\n')) {
        const cells = line.trim().split(/\s+/);
        if (/^\d+$/.test(cells[0]!) && cells.length === 7 && cells[6] === 'yes') return Number(cells[0]);
      }
      return undefined;
    },
    timeoutMs,
  );
}
