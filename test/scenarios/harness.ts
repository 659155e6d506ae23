/**
 * Shared harness of the seed replays (test/scenarios): one `skiff up` cluster per test file, driven
 * through the same commands the seeds use — `skiff topics`, `skiff log-dirs`, `skiff delete-records`,
 * `skiff producer-perf-test`, `skiff dump-log`, kcat, `skiff cluster stop/start N` in place of
 * `docker stop/start` — plus direct looks at the brokers' log dirs and server logs
 * (`DIR/broker-<id>/`, `DIR/logs/broker-<id>.log`).
 *
 * API (kept stable for other scenario files):
 *   const c = await ScenarioCluster.start({ name, properties, brokers });   // waits for "cluster ... up"
 *   c.bootstrap / c.dir / c.port
 *   await c.skiff([...args])                 // any skiff command, ToolRun
 *   await c.tool('topics', [...args])        // skiff <tool> --bootstrap-server <all brokers> ...
 *   await c.stopBroker(id, { kill })  /  await c.startBroker(id)
 *   await c.createTopic(name, { assignments, configs })
 *   await c.partition(topic, p)              // { leader, leaderEpoch, replicas, isr } (admin Metadata)
 *   await c.describeLine(topic, p)           // parsed `skiff topics --describe` partition line
 *   await c.waitForIsr(topic, p, [1,2,3])  /  c.waitForLeader(topic, p, pred)
 *   await c.logDirs(topic, { inProcess })    // broker -> partition -> { size, offsetLag }
 *   await c.skiffInProcess([...args])        // a skiff command through runCli in this process
 *   c.partitionDir(id, topic, p) / c.files(id, topic, p) / c.logBytes(id, topic, p)
 *   c.serverLog(id) / await c.waitForServerLog(id, regex, timeoutMs, from?)
 *   await c.produce(topic, values, extraKcatArgs) / c.consume(topic, p)
 *   await c.perf(topic, numRecords, recordSize, props)   // producer-perf-test summary
 *   await c.nonController(candidates)        // a broker id among candidates that is not the controller
 *   await c.controllerId() / c.liveBrokers()
 *   await c.close()                          // graceful stop, data dir removed (kept with SKIFF_SCENARIO_KEEP=1)
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli } from '../../src/cli/cli.js';
import {
  activeController,
  adminFor,
  consumeAll,
  describe1,
  freePorts,
  kcat,
  launchSkiffUp,
  removeDataDir,
  requireTool,
  runSkiff,
  type SkiffProcess,
  sleep,
  waitUntil,
} from '../cluster/helpers.js';
import type { ToolRun } from '../support/broker-process.js';

export type { ToolRun };
export { consumeAll, kcat, sleep, waitUntil };

export interface ScenarioOptions {
  /** A short name for the temp dir. */
  readonly name: string;
  /** Extra server.properties lines, applied to every broker. */
  readonly properties?: readonly string[];
  readonly brokers?: number;
}

export interface PartitionView {
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
}

/** One partition line of `skiff topics --describe`, as the seeds read it. */
export interface DescribeLine {
  readonly leader: number | 'none';
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  readonly line: string;
}

export interface LogDirEntry {
  readonly size: number;
  readonly offsetLag: number;
}

export interface FileEntry {
  readonly name: string;
  readonly size: number;
}

const DEFAULT_PROPERTIES = [
  'broker.session.timeout.ms=3000',
  'broker.heartbeat.interval.ms=500',
  'replica.lag.time.max.ms=3000',
  'num.partitions=1',
];

export class ScenarioCluster {
  private constructor(
    readonly dir: string,
    readonly port: number,
    readonly brokers: number,
    private up: SkiffProcess,
  ) {}

  /** Stops the whole `skiff up` (every broker and the store) and starts it again on the same data dir. */
  async restartAll(): Promise<void> {
    const r = await this.up.stop(30_000);
    assert.equal(r.code, 0, `skiff up stopped with ${JSON.stringify(r)}:\n${this.up.output()}`);
    this.up = await launchSkiffUp(this.dir, this.port, this.brokers);
  }

  /** All brokers, comma-separated (the seeds' `--bootstrap-server mq-d1:9092,...`). */
  get bootstrap(): string {
    return Array.from({ length: this.brokers }, (_, i) => `127.0.0.1:${this.port + i}`).join(',');
  }

  static async start(opts: ScenarioOptions): Promise<ScenarioCluster> {
    requireTool('kcat', '-V');
    const brokers = opts.brokers ?? 3;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `skiff-scn-${opts.name}-`));
    const props = path.join(dir, 'server.properties');
    fs.writeFileSync(
      props,
      ['listeners=PLAINTEXT://127.0.0.1:9092', ...DEFAULT_PROPERTIES, ...(opts.properties ?? []), ''].join(
        '\n',
      ),
    );
    const port = await freePorts(brokers);
    let up: SkiffProcess;
    try {
      up = await launchSkiffUp(dir, port, brokers);
    } catch (e) {
      removeDataDir(dir);
      throw e;
    }
    return new ScenarioCluster(dir, port, brokers, up);
  }

  /** Graceful stop of `skiff up` (its brokers move leadership and exit), then the data dir goes. */
  async close(): Promise<void> {
    await this.up.stop(20_000);
    if (process.env.SKIFF_SCENARIO_KEEP === '1') {
      console.log(`SKIFF_SCENARIO_KEEP=1: data dir kept at ${this.dir}`);
      return;
    }
    removeDataDir(this.dir);
  }

  skiff(args: readonly string[], input = '', timeoutMs = 60_000): Promise<ToolRun> {
    return runSkiff(args, input, timeoutMs);
  }

  /**
   * `skiff <args>` run in this process through the CLI's own dispatcher (runCli: the same code,
   * flags and output as the command line, without a Node start-up per run), for polling a tool
   * faster than a child process can start. Exceptions become a non-zero status.
   */
  async skiffInProcess(args: readonly string[]): Promise<ToolRun> {
    let stdout = '';
    let stderr = '';
    const io = {
      out: (l: string) => {
        stdout += `${l}\n`;
      },
      err: (l: string) => {
        stderr += `${l}\n`;
      },
    };
    try {
      const status = await runCli([...args], io);
      return { status, stdout, stderr };
    } catch (e) {
      return { status: 1, stdout, stderr: `${stderr}${e}\n` };
    }
  }

  /** `skiff <tool> --bootstrap-server <all brokers> <args>`. */
  tool(name: string, args: readonly string[], input = '', timeoutMs = 60_000): Promise<ToolRun> {
    return runSkiff([name, '--bootstrap-server', this.bootstrap, ...args], input, timeoutMs);
  }

  /** `skiff cluster stop <id> [--kill]` (docker stop / docker kill); asserts it succeeded. */
  async stopBroker(id: number, opts: { kill?: boolean } = {}): Promise<void> {
    const r = await runSkiff(
      ['cluster', 'stop', String(id), ...(opts.kill ? ['--kill'] : []), '--data-dir', this.dir],
      '',
      60_000,
    );
    assert.equal(r.status, 0, `cluster stop ${id}: ${r.stderr}`);
  }

  /** `skiff cluster start <id>` (docker start); asserts it succeeded. */
  async startBroker(id: number): Promise<void> {
    const r = await runSkiff(['cluster', 'start', String(id), '--data-dir', this.dir], '', 60_000);
    assert.equal(r.status, 0, `cluster start ${id}: ${r.stderr}`);
  }

  async createTopic(
    name: string,
    opts: { assignments: number[][]; configs?: Record<string, string> },
  ): Promise<void> {
    const { admin, close } = adminFor(this.bootstrap);
    try {
      const [r] = await admin.createTopics([
        {
          name,
          numPartitions: -1,
          replicationFactor: -1,
          assignments: opts.assignments,
          configs: new Map(Object.entries(opts.configs ?? {})),
        },
      ]);
      assert.equal(r!.error, null, r!.error?.message);
    } finally {
      close();
    }
    for (let p = 0; p < opts.assignments.length; p++) {
      const replicas = [...opts.assignments[p]!].sort();
      await this.waitForIsr(name, p, replicas, 20_000);
    }
  }

  async partition(topic: string, p: number): Promise<PartitionView> {
    const { admin, close } = adminFor(this.bootstrap);
    try {
      const part = (await describe1(admin, topic)).partitions.find((x) => x.partition === p);
      if (part === undefined) throw new Error(`no partition ${topic}-${p}`);
      return {
        leader: part.leader,
        leaderEpoch: part.leaderEpoch,
        replicas: [...part.replicas],
        isr: [...part.isr].sort((a, b) => a - b),
      };
    } finally {
      close();
    }
  }

  /** `skiff topics --describe --topic T`, the line of partition `p`. */
  async describeLine(topic: string, p: number): Promise<DescribeLine> {
    const r = await this.tool('topics', ['--describe', '--topic', topic], '', 30_000);
    assert.equal(r.status, 0, `topics --describe: ${r.stderr}`);
    const line = r.stdout
      .split('\n')
      .find((l) => new RegExp(`Topic: ${escapeRegExp(topic)}\\tPartition: ${p}\\t`).test(l));
    if (line === undefined) throw new Error(`no partition ${p} in:\n${r.stdout}`);
    const m = /Leader: (\S+)\tReplicas: ([\d,]*)\tIsr: ([\d,]*)/.exec(line);
    if (m === null) throw new Error(`unparsable describe line: ${line}`);
    const ids = (s: string) =>
      s
        .split(',')
        .filter((x) => x !== '')
        .map(Number);
    return {
      leader: m[1] === 'none' ? 'none' : Number(m[1]),
      replicas: ids(m[2]!),
      isr: ids(m[3]!).sort((a, b) => a - b),
      line,
    };
  }

  /** Waits until the ISR (sorted) equals `ids`. */
  async waitForIsr(
    topic: string,
    p: number,
    ids: readonly number[],
    timeoutMs: number,
  ): Promise<PartitionView> {
    const want = [...ids].sort((a, b) => a - b).join(',');
    return waitUntil(
      `${topic}-${p} ISR ${want}`,
      async () => {
        const v = await this.partition(topic, p);
        return v.isr.join(',') === want ? v : undefined;
      },
      timeoutMs,
      200,
    );
  }

  async waitForLeader(
    topic: string,
    p: number,
    pred: (leader: number) => boolean,
    timeoutMs: number,
  ): Promise<PartitionView> {
    return waitUntil(
      `${topic}-${p} leader`,
      async () => {
        const v = await this.partition(topic, p);
        return pred(v.leader) ? v : undefined;
      },
      timeoutMs,
      200,
    );
  }

  /** The active controller's broker id (`skiff cluster status`; clients are told a random live broker). */
  controllerId(): Promise<number> {
    return activeController(this.dir);
  }

  /** The registered brokers' ids (DescribeCluster), sorted. */
  async liveBrokers(): Promise<number[]> {
    const { admin, close } = adminFor(this.bootstrap);
    try {
      return [...(await admin.describeCluster()).brokers.keys()].sort((a, b) => a - b);
    } finally {
      close();
    }
  }

  /**
   * A broker among `candidates` that is not the controller (stopping the controller delays the
   * ISR changes the scenario watches by a controller failover).
   */
  async nonController(candidates: readonly number[]): Promise<number> {
    const controller = await this.controllerId();
    const id = candidates.find((c) => c !== controller);
    if (id === undefined) throw new Error(`every candidate ${candidates.join(',')} is the controller`);
    return id;
  }

  /**
   * `skiff log-dirs --describe --topic-list T`, parsed: broker -> partition -> { size, offsetLag }.
   * `inProcess`: through skiffInProcess (fast polling), else as a child process.
   */
  async logDirs(
    topic: string,
    opts: { inProcess?: boolean } = {},
  ): Promise<Map<number, Map<string, LogDirEntry>>> {
    const args = ['--bootstrap-server', this.bootstrap, '--describe', '--topic-list', topic];
    const r = opts.inProcess
      ? await this.skiffInProcess(['log-dirs', ...args])
      : await this.skiff(['log-dirs', ...args], '', 30_000);
    assert.equal(r.status, 0, `log-dirs --describe: ${r.stderr}`);
    const json = r.stdout.split('\n').find((l) => l.startsWith('{'));
    if (json === undefined) throw new Error(`no JSON line in log-dirs output:\n${r.stdout}`);
    const parsed = JSON.parse(json) as {
      brokers: {
        broker: number;
        logDirs: { partitions: { partition: string; size: number; offsetLag: number }[] }[];
      }[];
    };
    const out = new Map<number, Map<string, LogDirEntry>>();
    for (const b of parsed.brokers) {
      const m = new Map<string, LogDirEntry>();
      for (const d of b.logDirs)
        for (const p of d.partitions) m.set(p.partition, { size: p.size, offsetLag: p.offsetLag });
      out.set(b.broker, m);
    }
    return out;
  }

  partitionDir(id: number, topic: string, p: number): string {
    return path.join(this.dir, `broker-${id}`, `${topic}-${p}`);
  }

  /** The partition directory's files with their sizes, sorted by name ([] when it does not exist). */
  files(id: number, topic: string, p: number): FileEntry[] {
    const d = this.partitionDir(id, topic, p);
    if (!fs.existsSync(d)) return [];
    // A running broker renames files as it writes them (`*.tmp` → checkpoint): one listed may be
    // gone by the time it is looked at, and is left out.
    return fs
      .readdirSync(d)
      .sort()
      .flatMap((name) => {
        const st = fs.statSync(path.join(d, name), { throwIfNoEntry: false });
        return st === undefined ? [] : [{ name, size: st.size }];
      });
  }

  /** The concatenated bytes of the partition's live `.log` segments, in offset order. */
  logBytes(id: number, topic: string, p: number): Buffer {
    const d = this.partitionDir(id, topic, p);
    const segs = fs
      .readdirSync(d)
      .filter((n) => /^\d{20}\.log$/.test(n))
      .sort();
    return Buffer.concat(segs.map((n) => fs.readFileSync(path.join(d, n))));
  }

  /** Total size of the live `.log` segments. */
  logSize(id: number, topic: string, p: number): number {
    return this.files(id, topic, p)
      .filter((f) => /^\d{20}\.log$/.test(f.name))
      .reduce((s, f) => s + f.size, 0);
  }

  /** The broker's server log (`DIR/logs/broker-<id>.log`, appended across restarts). */
  serverLog(id: number): string {
    const f = path.join(this.dir, 'logs', `broker-${id}.log`);
    return fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : '';
  }

  /** Current length of the server log, to wait for lines written after this point. */
  serverLogMark(id: number): number {
    return this.serverLog(id).length;
  }

  /** Waits for a line matching `pattern` written after `from` (a serverLogMark); the match. */
  waitForServerLog(id: number, pattern: RegExp, timeoutMs: number, from = 0): Promise<RegExpExecArray> {
    return waitUntil(
      `${pattern} in broker ${id}'s log`,
      async () => pattern.exec(this.serverLog(id).slice(from)) ?? undefined,
      timeoutMs,
      100,
    );
  }

  /** kcat -P to one partition; acks=all unless `extra` says otherwise. */
  produce(topic: string, values: readonly string[], extra: readonly string[] = [], p = 0): Promise<ToolRun> {
    return kcat(
      ['-b', this.bootstrap, '-P', '-t', topic, '-p', String(p), '-X', 'acks=all', ...extra],
      `${values.join('\n')}\n`,
      60_000,
    );
  }

  consume(topic: string, p = 0): Promise<string[]> {
    return consumeAll(this.bootstrap, topic, p);
  }

  /**
   * `skiff producer-perf-test --topic T --num-records N --record-size S --throughput -1
   *  --producer-props bootstrap.servers=... acks=all ...`; asserts success, returns its output.
   */
  async perf(topic: string, numRecords: number, recordSize: number, props: readonly string[] = ['acks=all']) {
    const r = await this.skiff(
      [
        'producer-perf-test',
        '--topic',
        topic,
        '--num-records',
        String(numRecords),
        '--record-size',
        String(recordSize),
        '--throughput',
        '-1',
        '--producer-props',
        `bootstrap.servers=${this.bootstrap}`,
        ...props,
      ],
      '',
      180_000,
    );
    assert.equal(r.status, 0, `producer-perf-test: ${r.stderr}\n${r.stdout}`);
    const m = /^(\d+) records sent, .* 50th, .* 99\.9th\.?$/m.exec(r.stdout);
    assert.ok(m, `no summary line in:\n${r.stdout}`);
    assert.equal(Number(m[1]), numRecords, r.stdout);
    return r;
  }

  /** `skiff delete-records --offset-json-file` with the seed's JSON; the tool's output. */
  async deleteRecords(topic: string, p: number, offset: bigint | number): Promise<ToolRun> {
    const file = path.join(this.dir, `del-${topic}-${p}-${offset}.json`);
    fs.writeFileSync(
      file,
      `{"version":1,"partitions":[{"topic":"${topic}","partition":${p},"offset":${offset}}]}`,
    );
    return this.tool('delete-records', ['--offset-json-file', file], '', 60_000);
  }

  /** `skiff dump-log --files F [--print-data-log]`. */
  dumpLog(file: string, printData = false): Promise<ToolRun> {
    return this.skiff(['dump-log', '--files', file, ...(printData ? ['--print-data-log'] : [])], '', 60_000);
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
