/**
 * Three `skiff broker` processes on a one-member etcd for the disk fault tests (issue 23): each
 * broker with its own server.properties (log dirs, extra props) and environment, so a test can give
 * one broker a second log dir or a slow disk. stop() kills every broker and etcd and removes the
 * data dir.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePorts, removeDataDir, SKIFF, SkiffProcess } from '../cluster/helpers.js';
import { EtcdCluster } from '../support/etcd.js';

export interface BrokerSpec {
  /** log.dirs; absent: `<data dir>/broker-<id>`. */
  readonly logDirs?: readonly string[];
  /** More lines of server.properties. */
  readonly props?: readonly string[];
  /** More environment variables of the broker process. */
  readonly env?: Readonly<Record<string, string>>;
}

export class EtcdBrokerSet {
  readonly brokers = new Map<number, SkiffProcess>();

  /** The tmpfs mounted for the brokers, unmounted by stop(). */
  private readonly mounts: string[] = [];

  private constructor(
    readonly etcd: EtcdCluster,
    readonly dir: string,
    readonly basePort: number,
    private readonly specs: ReadonlyMap<number, BrokerSpec>,
  ) {}

  /**
   * etcd, a data dir and the brokers of `specs` (given the data dir); `tmpfs`: directories under
   * the data dir to mount a tmpfs of that many bytes on first (the tests run as root).
   */
  static async start(
    prefix: string,
    specs: (dir: string) => ReadonlyMap<number, BrokerSpec>,
    tmpfs: Readonly<Record<string, number>> = {},
  ): Promise<EtcdBrokerSet> {
    const etcd = await EtcdCluster.start(1);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    const set = new EtcdBrokerSet(etcd, dir, await freePorts(3), specs(dir));
    try {
      for (const [name, bytes] of Object.entries(tmpfs)) {
        const mountPoint = path.join(dir, name);
        fs.mkdirSync(mountPoint);
        run('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', mountPoint]);
        set.mounts.push(mountPoint);
      }
      await Promise.all([1, 2, 3].map((id) => set.startBroker(id)));
      return set;
    } catch (e) {
      await set.stop();
      throw e;
    }
  }

  get bootstrap(): string {
    return [1, 2, 3].map((id) => `127.0.0.1:${this.basePort + id - 1}`).join(',');
  }

  logDirsOf(id: number): readonly string[] {
    return this.specs.get(id)?.logDirs ?? [path.join(this.dir, `broker-${id}`)];
  }

  async startBroker(id: number): Promise<SkiffProcess> {
    const spec = this.specs.get(id) ?? {};
    const props = path.join(this.dir, `server-${id}.properties`);
    fs.writeFileSync(
      props,
      [
        `node.id=${id}`,
        `listeners=PLAINTEXT://127.0.0.1:${this.basePort + id - 1}`,
        `log.dirs=${this.logDirsOf(id).join(',')}`,
        `etcd.endpoints=${this.etcd.endpoints.join(',')}`,
        'broker.heartbeat.interval.ms=500',
        ...(spec.props ?? []),
        '',
      ].join('\n'),
    );
    const args = ['broker', '--config', props];
    const p = new SkiffProcess(
      args,
      spawn(process.execPath, [SKIFF, ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ...spec.env },
      }),
    );
    this.brokers.set(id, p);
    await p.waitFor(new RegExp(`skiff broker ${id} ready: listening on`), 30_000);
    return p;
  }

  broker(id: number): SkiffProcess {
    return this.brokers.get(id)!;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.brokers.values()].map((b) => b.kill()));
    for (const m of this.mounts.splice(0)) run('umount', [m]);
    this.etcd.stop();
    removeDataDir(this.dir);
  }
}

/** Runs a system command (mount, umount) to its end; fails the test if it fails. */
export function run(cmd: string, args: readonly string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
}
