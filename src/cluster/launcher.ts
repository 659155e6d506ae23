/**
 * The `skiff up` launcher: hosts the embedded metadata store (persisted under DIR/metadata) and
 * runs each broker as a child process that reaches the store over its IPC channel. So a broker
 * uses its own core, `cluster stop --kill` is a real SIGKILL, and a broker's crash never takes the
 * store with it. The controller is not here: every broker process runs a candidate and the
 * election picks one, exactly as on etcd (see README, "Where the controller runs").
 *
 * Owned by the `up` command; start() returns once every broker is listening, shutdown() stops the
 * brokers gracefully (each moves its leadership away first), then the store.
 */

import { type ChildProcess, fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Clock } from '../common/clock.js';
import { LIMITS } from '../common/limits.js';
import { lineLogger } from '../common/logger.js';
import { makeDirectories } from '../common/make-dirs.js';
import { TimerScheduler } from '../common/scheduler.js';
import { EmbeddedStore } from '../metadata/embedded-store.js';
import { MetadataKeys } from '../metadata/keys.js';
import { MetadataFollower } from '../metadata/metadata-follower.js';
import { ipcChannel, serveStore } from '../metadata/remote-store.js';
import { addScramCredentialIfAbsent } from '../metadata/scram-credentials.js';
import { checkListenable } from '../network/socket-server.js';
import type { InitialScramCredential } from '../security/scram.js';
import { isChildMessage, PROPS_ENV } from './child-protocol.js';
import { resolveClusterId } from './cluster-id.js';
import { ChildScraper } from './cluster-metrics.js';
import {
  type BrokerState,
  type BrokerStatus,
  ControlError,
  type ControlServer,
  callLauncher,
  type HttpRoutes,
  type LauncherControl,
  processAlive,
  readLauncherFile,
  removeLauncherFile,
  type StatusReport,
  startControlServer,
  writeLauncherFile,
} from './control.js';
import { freePort } from './free-port.js';

export interface LauncherOptions {
  readonly brokers: number;
  /** Absolute. */
  readonly dataDir: string;
  /**
   * Broker i listens on 127.0.0.1:ports[i-1]; 'auto': on a free port below the ephemeral range,
   * chosen at its first start (another if that one is taken meanwhile) and kept across restarts.
   */
  readonly ports: readonly number[] | 'auto';
  /** The control API's port on 127.0.0.1 (0: any free port). */
  readonly httpPort: number;
  /** `--http-token`: the dashboard's data and /metrics ask for it; null: open on loopback. */
  readonly httpToken?: string | null;
  /** A Kafka-style properties file applied to every broker (--config-file). */
  readonly brokerProps: ReadonlyMap<string, string>;
  readonly clock: Clock;
  readonly randomBytes: (n: number) => Buffer;
  /** Where the launcher's own `[skiff] ...` lines go. */
  readonly log: (line: string) => void;
  /**
   * How long a starting broker may go without listening and without a word on the progress of
   * its logs' recovery (default 60 s): each progress line starts the wait again.
   */
  readonly readyTimeoutMs?: number;
  /** Grace period of a graceful stop before SIGKILL, like `docker stop -t` (default 30 s). */
  readonly stopTimeoutMs?: number;
  /** SCRAM credentials written before any broker starts, where the user has none yet (`--add-scram`). */
  readonly scram?: readonly InitialScramCredential[];
}

interface Slot {
  readonly id: number;
  /** 0 until an 'auto' port is chosen. */
  port: number;
  readonly logDir: string;
  readonly logFile: string;
  state: BrokerState;
  child: ChildProcess | null;
  pid: number | null;
  /** Resolves when the current child has exited (and its store channel is closed). */
  exited: Promise<void>;
  stopRequest: 'graceful' | 'kill' | null;
}

/** How many 'auto' ports a broker's first start tries before it gives up. */
const AUTO_PORT_ATTEMPTS = 5;

/** A broker could not bind its port: another process holds it. */
class PortInUseError extends ControlError {
  constructor(message: string) {
    super(500, message);
  }
}

const CHILD_ENTRY = fileURLToPath(new URL('./broker-child.js', import.meta.url));
/**
 * V8 flags of a broker process (after the launcher's own, so a `node --max-semi-space-size=N`
 * given to `skiff up` wins): a 64 MiB young generation, as a broker's heap is for the
 * short-lived buffers of requests and fetches — V8's default (16 MiB) scavenged often enough to
 * be ~15% of a broker's start-up CPU (module loading) and of a follower's catch-up.
 */
export function brokerExecArgv(launcherExecArgv: readonly string[]): string[] {
  const own = launcherExecArgv.some((a) => /^--max-semi-space-size(=|$)/.test(a));
  return own ? [...launcherExecArgv] : ['--max-semi-space-size=64', ...launcherExecArgv];
}

export class Launcher implements LauncherControl {
  private readonly slots = new Map<number, Slot>();
  private control: ControlServer | null = null;
  private token = '';
  private closing: Promise<void> | null = null;
  private readonly scraper = new ChildScraper();

  private constructor(
    private readonly options: LauncherOptions,
    private readonly store: EmbeddedStore,
    readonly clusterId: string,
    private readonly follower: MetadataFollower,
  ) {
    for (let id = 1; id <= options.brokers; id++) {
      this.slots.set(id, {
        id,
        port: options.ports === 'auto' ? 0 : options.ports[id - 1]!,
        logDir: path.join(options.dataDir, `broker-${id}`),
        logFile: path.join(options.dataDir, 'logs', `broker-${id}.log`),
        state: 'stopped',
        child: null,
        pid: null,
        exited: Promise.resolve(),
        stopRequest: null,
      });
    }
  }

  /** Opens the store, starts the control API, then every broker; resolves once all are listening. */
  static async start(options: LauncherOptions): Promise<Launcher> {
    const { dataDir } = options;
    if (!Number.isInteger(options.brokers) || options.brokers < 1 || options.brokers > LIMITS.upBrokers)
      throw new Error(`--brokers must be between 1 and ${LIMITS.upBrokers}`);
    const { ports } = options;
    if (ports !== 'auto' && ports.length !== options.brokers)
      throw new Error(`${ports.length} ports for ${options.brokers} brokers`);
    if (ports !== 'auto' && ports.some((p) => !Number.isInteger(p) || p < 1 || p > 65535))
      throw new Error(`ports ${ports.join(',')}: not all are valid TCP ports`);
    // Nothing is written for a cluster whose ports cannot be had.
    if (ports !== 'auto') {
      const host = listenerHost(options.brokerProps.get('listeners'));
      for (const port of ports) await checkListenable(host, port);
    }
    makeDirectories(path.join(dataDir, 'logs'));
    await refuseSecondLauncher(dataDir);
    const scheduler = new TimerScheduler();
    const store = await EmbeddedStore.open({
      clock: options.clock,
      dataDir: path.join(dataDir, 'metadata'),
      scheduler,
    });
    const launcherLog = path.join(dataDir, 'logs', 'launcher.log');
    const fileLogger = lineLogger(options.clock, (line) => fs.appendFileSync(launcherLog, `${line}\n`));
    let launcher: Launcher;
    try {
      const clusterId = await resolveClusterId(store, options.randomBytes);
      const keys = new MetadataKeys(clusterId);
      for (const c of options.scram ?? []) {
        if (await addScramCredentialIfAbsent(store, keys, c.user, c.mechanism, c.stored))
          options.log(`created the ${c.mechanism} credential of user ${c.user}`);
      }
      const follower = new MetadataFollower(store, new MetadataKeys(clusterId), scheduler, fileLogger);
      await follower.start();
      launcher = new Launcher(options, store, clusterId, follower);
    } catch (e) {
      await store.close();
      throw e;
    }
    try {
      launcher.token = options.randomBytes(24).toString('base64url');
      launcher.control = await startControlServer(
        launcher,
        options.httpPort,
        launcher.token,
        options.httpToken ?? null,
      );
      writeLauncherFile(dataDir, {
        pid: process.pid,
        url: launcher.control.url,
        token: launcher.token,
        clusterId: launcher.clusterId,
        brokers: options.brokers,
      });
      // Started together (a broker takes about a second to load), announced in id order.
      const results = await Promise.allSettled(
        [...launcher.slots.keys()].map((id) => launcher.startBroker(id, false)),
      );
      const failed = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).message] : []));
      if (failed.length > 0) throw new Error(failed.join('; '));
      for (const r of results) if (r.status === 'fulfilled') options.log(r.value);
    } catch (e) {
      await launcher.shutdown();
      throw e;
    }
    return launcher;
  }

  /** Serves `routes` (GET, no token) on the control API's port: the dashboard. */
  mountHttp(routes: HttpRoutes): void {
    this.control?.mount(routes);
  }

  get controlUrl(): string {
    return this.control?.url ?? '';
  }

  bootstrap(): string {
    return [...this.slots.values()].map((s) => `127.0.0.1:${s.port}`).join(',');
  }

  status(): StatusReport {
    const image = this.follower.image();
    const leaders = new Map<number, number>();
    for (const t of image.topics.values())
      for (const p of t.partitions) leaders.set(p.leader, (leaders.get(p.leader) ?? 0) + 1);
    return {
      clusterId: this.clusterId,
      dataDir: this.options.dataDir,
      metadataRevision: image.revision.toString(),
      brokers: [...this.slots.values()].map(
        (s): BrokerStatus => ({
          id: s.id,
          pid: s.pid,
          port: s.port,
          state: s.state,
          registered: image.brokers.has(s.id),
          controller: image.controllerId === s.id,
          leaders: leaders.get(s.id) ?? 0,
          logDir: s.logDir,
        }),
      ),
    };
  }

  /** Every running broker's metrics and which are up, in Prometheus text (the control API's /metrics). */
  metrics(): Promise<string> {
    return this.scraper.cluster([...this.slots.values()]);
  }

  /** Forks broker `id` and resolves once it listens; rejects (and the broker is left stopped) on failure. */
  async startBroker(id: number, announce = true): Promise<string> {
    const slot = this.slot(id);
    if (this.closing !== null) throw new ControlError(409, 'the cluster is shutting down');
    if (slot.state === 'starting' || slot.state === 'running' || slot.state === 'stopping')
      throw new ControlError(409, `broker ${id} is already ${slot.state} (pid ${slot.pid})`);
    // A previous incarnation must be fully gone (its store channel closed) before the next starts.
    await slot.exited;
    for (let attempt = 1; ; attempt++) {
      const chosen = slot.port === 0;
      if (chosen) slot.port = await freePort();
      try {
        await this.spawnBroker(slot);
        break;
      } catch (e) {
        // An 'auto' port probed free can be taken by another process (a cluster in a parallel test
        // worker) before the broker binds it: choose again.
        if (!chosen || !(e instanceof PortInUseError) || attempt >= AUTO_PORT_ATTEMPTS) throw e;
        slot.port = 0;
      }
    }
    const line = `broker ${id} ready on 127.0.0.1:${slot.port} (log dir ${slot.logDir}, pid ${slot.pid})`;
    if (announce) this.options.log(line);
    return line;
  }

  /** Forks the slot's broker and resolves once it listens. */
  private async spawnBroker(slot: Slot): Promise<void> {
    const { id } = slot;
    const logFd = fs.openSync(slot.logFile, 'a');
    let child: ChildProcess;
    try {
      // The child sets its title from these (brokerTitle); they also give the title its room.
      child = fork(CHILD_ENTRY, ['broker', String(id), slot.logDir], {
        execArgv: brokerExecArgv(process.execArgv),
        serialization: 'advanced',
        // Its own process group: a Ctrl-C in the terminal reaches only the launcher, which then
        // stops the brokers in order instead of all of them at once without coordination.
        detached: true,
        stdio: ['ignore', logFd, logFd, 'ipc'],
        env: { ...process.env, [PROPS_ENV]: JSON.stringify(Object.fromEntries(this.brokerProps(slot))) },
      });
    } finally {
      fs.closeSync(logFd);
    }
    slot.child = child;
    this.scraper.attach(child);
    slot.pid = child.pid ?? null;
    slot.state = 'starting';
    slot.stopRequest = null;
    const stopServing = serveStore(this.store, ipcChannel(child));
    let onExit: (why: string) => void = () => {};
    slot.exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        stopServing();
        const why = signal !== null ? `killed by ${signal}` : `exit code ${code}`;
        const was = slot.state;
        slot.child = null;
        slot.pid = null;
        if (slot.stopRequest === 'kill') slot.state = 'killed';
        else if (slot.stopRequest === 'graceful' && code === 0) slot.state = 'stopped';
        else slot.state = was === 'starting' ? 'failed' : 'exited';
        if (was === 'running' && slot.stopRequest === null) {
          this.options.log(`broker ${id} exited unexpectedly (${why}); its log: ${slot.logFile}`);
        }
        onExit(why);
        resolve();
      });
    });
    const readyTimeoutMs = this.options.readyTimeoutMs ?? 60_000;
    await new Promise<void>((resolve, reject) => {
      const fail = (why: string): void => {
        clearTimeout(timer);
        reject(new ControlError(500, `broker ${id} did not start: ${why} (see ${slot.logFile})`));
      };
      // Counted from the broker's last word: one still saying how far its logs' recovery has got
      // is not stuck, however many logs it has.
      const giveUp = (): NodeJS.Timeout =>
        setTimeout(() => {
          child.kill('SIGKILL');
          fail(`not listening, and silent, for ${readyTimeoutMs} ms`);
        }, readyTimeoutMs);
      let timer = giveUp();
      onExit = (why) => fail(why);
      child.on('error', (e) => fail(e.message));
      child.on('message', (m) => {
        if (!isChildMessage(m)) return;
        if (m.skiffLauncher === 'progress') {
          this.options.log(`broker ${id}: ${m.line}`);
          clearTimeout(timer);
          timer = giveUp();
        } else if (m.skiffLauncher === 'failed') {
          if (m.code === 'EADDRINUSE') {
            clearTimeout(timer);
            reject(new PortInUseError(`broker ${id} did not start: ${m.message}`));
          } else fail(m.message);
        } else {
          clearTimeout(timer);
          onExit = () => {};
          slot.state = 'running';
          resolve();
        }
      });
    });
  }

  /** Graceful (SIGTERM, then SIGKILL after the grace period) or abrupt (SIGKILL); resolves once exited. */
  async stopBroker(id: number, kill: boolean): Promise<string> {
    const slot = this.slot(id);
    const child = slot.child;
    if (
      child === null ||
      (slot.state !== 'running' && slot.state !== 'starting' && slot.state !== 'stopping')
    )
      throw new ControlError(409, `broker ${id} is not running (${slot.state})`);
    if (kill) {
      slot.stopRequest = 'kill';
      child.kill('SIGKILL');
    } else if (slot.stopRequest === null) {
      slot.stopRequest = 'graceful';
      slot.state = 'stopping';
      child.kill('SIGTERM');
    }
    const graceMs = this.options.stopTimeoutMs ?? 30_000;
    const timer = setTimeout(() => {
      this.options.log(`broker ${id} still running ${graceMs} ms after SIGTERM; sending SIGKILL`);
      slot.stopRequest = 'kill';
      child.kill('SIGKILL');
    }, graceMs);
    await slot.exited;
    clearTimeout(timer);
    const line =
      (slot.state as BrokerState) === 'killed'
        ? `broker ${id} killed (SIGKILL, pid ${child.pid}): no clean shutdown, its files are left as they were`
        : `broker ${id} stopped (pid ${child.pid}, ${slot.state})`;
    this.options.log(line);
    return line;
  }

  /** Stops every broker gracefully (concurrently), then the control API and the store. Idempotent. */
  shutdown(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all(
        [...this.slots.values()]
          .filter((s) => s.child !== null)
          .map((s) => this.stopBroker(s.id, false).catch(() => {})),
      );
      await this.control?.close();
      removeLauncherFile(this.options.dataDir, this.token);
      this.follower.close();
      await this.store.close();
    })();
    return this.closing;
  }

  /** A second Ctrl-C: SIGKILL whatever is still running. */
  killAll(): void {
    for (const s of this.slots.values()) {
      if (s.child === null) continue;
      s.stopRequest = 'kill';
      s.child.kill('SIGKILL');
    }
  }

  private slot(id: number): Slot {
    const s = this.slots.get(id);
    if (s === undefined)
      throw new ControlError(404, `no broker ${id} in this cluster (ids 1..${this.options.brokers})`);
    return s;
  }

  /** The --config-file properties with this broker's id, port and log dir (and no etcd). */
  private brokerProps(slot: Slot): Map<string, string> {
    const props = new Map(this.options.brokerProps);
    props.delete('broker.id');
    props.delete('log.dir');
    // Its brokers keep their metadata through the launcher: no etcd endpoint, TLS or user.
    for (const k of [...props.keys()]) if (k.startsWith('etcd.')) props.delete(k);
    props.set('node.id', String(slot.id));
    props.set('listeners', withPort(props.get('listeners') ?? 'PLAINTEXT://127.0.0.1:0', slot.port));
    const advertised = props.get('advertised.listeners');
    if (advertised !== undefined) props.set('advertised.listeners', withPort(advertised, slot.port));
    props.set('log.dirs', slot.logDir);
    return props;
  }
}

/**
 * The listener list with the first listener's port replaced by the broker's slot port; the other
 * listeners of each broker listen on a free port (port 0), which the broker registers once bound.
 */
export function withPort(listeners: string, port: number): string {
  return listeners
    .split(',')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .map((entry, i) => {
      const m = /^([A-Za-z0-9_]+:\/\/(?:\[[^\]]*\]|[^:]*)):\d+$/.exec(entry);
      if (m === null) throw new Error(`listeners: expected NAME://host:port, got '${entry}'`);
      return `${m[1]}:${i === 0 ? port : 0}`;
    })
    .join(',');
}

/** The host of the first listener (`PLAINTEXT://host:port`), 127.0.0.1 without one. */
function listenerHost(listeners: string | undefined): string {
  if (listeners === undefined) return '127.0.0.1';
  const m = /^[A-Za-z_]+:\/\/(\[[^\]]*\]|[^:]*):\d+$/.exec(listeners.split(',')[0]!.trim());
  const host = m?.[1]?.replace(/^\[|\]$/g, '') ?? '';
  return host === '' ? '0.0.0.0' : host;
}

/** One launcher per data dir: a live one that answers on its control API wins. */
async function refuseSecondLauncher(dataDir: string): Promise<void> {
  const file = readLauncherFile(dataDir);
  if (file === null || file.pid === process.pid || !processAlive(file.pid)) return;
  const answering = await callLauncher(file, 'GET', '/status', 2000).then(
    () => true,
    () => false,
  );
  if (answering) throw new Error(`another skiff up (pid ${file.pid}) is running on ${dataDir}`);
}
