/**
 * startCluster(): a real replicated Skiff cluster for a test suite, started from code. It forks one
 * cluster process (src/api/cluster-process.ts: the launcher of `skiff up`, hosting the metadata
 * store) which forks one process per broker, so `stopBroker(id, { kill: true })` is a real SIGKILL
 * and a broker's crash never takes the caller with it.
 *
 * Nothing outlives the caller: the cluster process stops everything and removes its temporary
 * data dir when close() is called, and also when the caller's process ends without calling it
 * (the IPC channel closes however the process died). The channel is unref'd between requests, so
 * an open cluster never keeps the caller's event loop alive on its own.
 *
 * This module is the package's entry: it loads no broker code into the caller's process.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  type BrokerInfo,
  CLUSTER_SPEC_ENV,
  type ClusterMessage,
  type ClusterRequest,
  type ClusterSpec,
  isClusterMessage,
} from './cluster-protocol.js';

export type { BrokerInfo } from './cluster-protocol.js';

/** A server.properties value: numbers and booleans are written as Kafka reads them. */
export type ConfigValue = string | number | boolean;

export interface StartClusterOptions {
  /** Brokers with ids 1..N (default 3). */
  readonly brokers?: number;
  /**
   * server.properties for every broker, with Kafka's names (`{ 'num.partitions': 3 }`). Over the
   * test defaults: group.initial.rebalance.delay.ms=0, as Kafka's own config/server.properties
   * ships for development and testing.
   */
  readonly config?: Readonly<Record<string, ConfigValue>>;
  /** Where the metadata and the log dirs go (kept by close()); default: a new temporary dir, removed by close(). */
  readonly dataDir?: string;
  /** Keep the temporary data dir after close() (its path is `cluster.dataDir`). */
  readonly keepData?: boolean;
  /** Broker i's port on 127.0.0.1 (one per broker); default: free ports, chosen per cluster. */
  readonly ports?: readonly number[];
  /** Receives the launcher's lines (`broker 2 ready on 127.0.0.1:...`); default: dropped. */
  readonly log?: (line: string) => void;
}

export interface CreateTopicOptions {
  /** Default 1. */
  readonly partitions?: number;
  /** Default: the brokers' default.replication.factor (1 unless `config` says otherwise). */
  readonly replicationFactor?: number;
  readonly config?: Readonly<Record<string, ConfigValue>>;
}

export interface SkiffCluster {
  readonly clusterId: string;
  /** `host:port` of every broker, for a client's bootstrap list (`.join(',')` for bootstrap.servers). */
  readonly bootstrapServers: readonly string[];
  /** Every broker as of the last start, stop or createTopic. */
  readonly brokers: readonly BrokerInfo[];
  /** The live dashboard of this cluster (brokers, partitions, lag, ISR changes), for a browser. */
  readonly dashboardUrl: string;
  /** The data dir: DIR/metadata, DIR/broker-<id> (its log dir), DIR/logs/broker-<id>.log. */
  readonly dataDir: string;
  /** Stops a broker: gracefully (controlled shutdown), or with `kill` by SIGKILL. Resolves once it has exited. */
  stopBroker(id: number, options?: { readonly kill?: boolean }): Promise<void>;
  /** Starts a stopped broker again on its port; resolves once it accepts clients. */
  startBroker(id: number): Promise<void>;
  /** Creates a topic; resolves once every running broker knows a leader for each partition. */
  createTopic(name: string, options?: CreateTopicOptions): Promise<void>;
  /** Stops every broker and the metadata store, then removes a temporary data dir. Idempotent. */
  close(): Promise<void>;
}

/** The test defaults under `config` (see StartClusterOptions.config). */
const TEST_DEFAULTS: Readonly<Record<string, string>> = { 'group.initial.rebalance.delay.ms': '0' };

/** How long close() waits for the cluster process before SIGKILL (its brokers then stop on their own). */
const CLOSE_TIMEOUT_MS = 60_000;

const CLUSTER_PROCESS = fileURLToPath(new URL('./cluster-process.js', import.meta.url));

/** Starts a cluster; resolves once every broker accepts clients. */
export async function startCluster(options: StartClusterOptions = {}): Promise<SkiffCluster> {
  const brokers = options.brokers ?? 3;
  if (!Number.isInteger(brokers) || brokers < 1)
    throw new RangeError(`brokers: expected an integer ≥ 1, got ${brokers}`);
  if (options.ports !== undefined && options.ports.length !== brokers)
    throw new RangeError(`ports: expected ${brokers} ports (one per broker), got ${options.ports.length}`);
  const config: Record<string, string> = { ...TEST_DEFAULTS };
  for (const [k, v] of Object.entries(options.config ?? {})) config[k] = String(v);
  const spec: ClusterSpec = {
    brokers,
    config,
    dataDir: options.dataDir ?? null,
    keepData: options.keepData === true,
    ports: options.ports ?? null,
  };
  const env: NodeJS.ProcessEnv = { ...process.env, [CLUSTER_SPEC_ENV]: JSON.stringify(spec) };
  // The caller's loaders and flags (a test runner's --import hooks, --experimental-vm-modules)
  // are not the brokers': Skiff's processes start with their own.
  delete env.NODE_OPTIONS;
  const child = fork(CLUSTER_PROCESS, [], { execArgv: [], env, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  return RunningCluster.start(child, options.log ?? (() => {}));
}

/** A cluster of one broker: startCluster({ ...options, brokers: 1 }). */
export function startSingleBroker(options: Omit<StartClusterOptions, 'brokers'> = {}): Promise<SkiffCluster> {
  return startCluster({ ...options, brokers: 1 });
}

class RunningCluster implements SkiffCluster {
  private seq = 0;
  private readonly pending = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  private closing: Promise<void> | null = null;
  private exitReason: string | null = null;

  private constructor(
    private readonly child: ChildProcess,
    readonly clusterId: string,
    readonly dataDir: string,
    readonly dashboardUrl: string,
    public brokers: readonly BrokerInfo[],
    private readonly exited: Promise<string>,
  ) {
    child.on('message', (m) => {
      if (!isClusterMessage(m) || m.skiffCluster !== 'reply') return;
      this.brokers = m.brokers;
      const p = this.pending.get(m.seq);
      this.pending.delete(m.seq);
      this.idle();
      if (m.error === null) p?.resolve();
      else p?.reject(new Error(m.error));
    });
    void exited.then((why) => {
      this.exitReason = why;
      for (const p of this.pending.values()) p.reject(new Error(`the cluster process ${why}`));
      this.pending.clear();
    });
  }

  static async start(child: ChildProcess, log: (line: string) => void): Promise<SkiffCluster> {
    let stderr = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (d: string) => {
      stderr = (stderr + d).slice(-4000);
    });
    const exited = new Promise<string>((resolve) =>
      child.once('exit', (code, signal) =>
        resolve(signal !== null ? `was killed by ${signal}` : `exited with code ${code}`),
      ),
    );
    child.on('message', (m) => {
      if (isClusterMessage(m) && m.skiffCluster === 'log') log(m.line);
    });
    const ready = await new Promise<Extract<ClusterMessage, { skiffCluster: 'ready' }>>((resolve, reject) => {
      child.on('message', (m) => {
        if (!isClusterMessage(m)) return;
        if (m.skiffCluster === 'ready') resolve(m);
        else if (m.skiffCluster === 'failed')
          reject(new Error(`skiff: the cluster did not start: ${m.message}`));
      });
      void exited.then((why) =>
        reject(
          new Error(
            `skiff: the cluster process ${why} before it was ready${stderr ? `: ${stderr.trim()}` : ''}`,
          ),
        ),
      );
    }).catch(async (e: unknown) => {
      await exited;
      throw e;
    });
    const cluster = new RunningCluster(
      child,
      ready.clusterId,
      ready.dataDir,
      ready.dashboardUrl,
      ready.brokers,
      exited,
    );
    cluster.idle();
    return cluster;
  }

  get bootstrapServers(): readonly string[] {
    return this.brokers.map((b) => `${b.host}:${b.port}`);
  }

  stopBroker(id: number, options: { readonly kill?: boolean } = {}): Promise<void> {
    return this.request({ seq: 0, op: 'stopBroker', id, kill: options.kill === true });
  }

  startBroker(id: number): Promise<void> {
    return this.request({ seq: 0, op: 'startBroker', id });
  }

  createTopic(name: string, options: CreateTopicOptions = {}): Promise<void> {
    const config: Record<string, string> = {};
    for (const [k, v] of Object.entries(options.config ?? {})) config[k] = String(v);
    return this.request({
      seq: 0,
      op: 'createTopic',
      topic: {
        name,
        partitions: options.partitions ?? 1,
        replicationFactor: options.replicationFactor ?? -1,
        config,
      },
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      // Waiting for the exit keeps the caller alive until everything is gone.
      this.child.ref();
      if (this.child.connected) this.child.disconnect();
      const timer = setTimeout(() => this.child.kill('SIGKILL'), CLOSE_TIMEOUT_MS);
      const why = await this.exited;
      clearTimeout(timer);
      if (why !== 'exited with code 0') throw new Error(`skiff: the cluster process ${why} while closing`);
    })();
    return this.closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private request(req: ClusterRequest): Promise<void> {
    if (this.closing !== null) return Promise.reject(new Error('skiff: the cluster is closed'));
    if (this.exitReason !== null)
      return Promise.reject(new Error(`skiff: the cluster process ${this.exitReason}`));
    const seq = ++this.seq;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(seq, { resolve, reject });
      this.child.ref();
      this.child.channel?.ref();
      this.child.send({ ...req, seq });
    });
  }

  /** With no request outstanding, an open cluster does not keep the caller's event loop alive. */
  private idle(): void {
    if (this.pending.size > 0) return;
    this.child.unref();
    this.child.channel?.unref();
    (this.child.stderr as { unref?: () => void } | null)?.unref?.();
  }
}
