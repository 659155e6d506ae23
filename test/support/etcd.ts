import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as https from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Real etcd processes for tests: one member or a cluster on 127.0.0.1, each with a temporary data
 * dir and free ports, fast heartbeats (so leases can be 1 s and a lost leader is replaced in
 * about a second) — or, with a placement, on a given address inside a network namespace (`ip netns
 * exec`), as a host of its own (test/system). Owned by one test file; stop() kills everything it
 * started.
 */

/** Where the members run instead of 127.0.0.1: `host` inside network namespace `netns`. */
export interface EtcdPlacement {
  readonly host: string;
  readonly netns: string;
  /** A new directory for the members' data dirs (its owner's, so its clean-up finds them). */
  readonly dataRoot: string;
}

/** A namespace of its own has every port free: member i takes these, 10 apart. */
const PLACED_CLIENT_PORT = 2379;
const PLACED_PEER_PORT = 2380;

export interface EtcdMember {
  readonly name: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly dataDir: string;
  process: ChildProcess | null;
}

/** TLS on the members' client URLs (https): their certificate, and client certificates asked or not. */
export interface EtcdTls {
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** --client-cert-auth: a client must show a certificate signed by the CA. */
  readonly clientCertAuth: boolean;
  /** The client certificate the harness itself uses (health checks, etcdctl). */
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
}

export class EtcdCluster {
  private constructor(
    readonly members: EtcdMember[],
    private readonly root: string,
    readonly tls: EtcdTls | null = null,
    private readonly placement: EtcdPlacement | null = null,
  ) {}

  get endpoints(): string[] {
    return this.members.map((m) => m.clientUrl);
  }

  /**
   * Starts `size` members and waits until every one reports healthy (at most `timeoutMs`). Tries
   * again with new ports if a member dies at start: another process may have taken a port between
   * our probe and etcd's bind.
   */
  static async start(
    size: number,
    timeoutMs = 20_000,
    tls: EtcdTls | null = null,
    placement: EtcdPlacement | null = null,
  ): Promise<EtcdCluster> {
    requireEtcd();
    for (let attempt = 1; ; attempt++) {
      try {
        return await EtcdCluster.startOnce(size, timeoutMs, tls, placement);
      } catch (e) {
        if (attempt >= 3) throw e;
      }
    }
  }

  private static async startOnce(
    size: number,
    timeoutMs: number,
    tls: EtcdTls | null,
    placement: EtcdPlacement | null,
  ): Promise<EtcdCluster> {
    const root = placement === null ? mkdtempSync(join(tmpdir(), 'skiff-etcd-')) : placement.dataRoot;
    const members: EtcdMember[] = [];
    const host = placement?.host ?? '127.0.0.1';
    for (let i = 0; i < size; i++) {
      const [client, peer] =
        placement === null
          ? [await freePort(), await freePort()]
          : [PLACED_CLIENT_PORT + 10 * i, PLACED_PEER_PORT + 10 * i];
      members.push({
        name: `m${i}`,
        clientUrl: `${tls === null ? 'http' : 'https'}://${host}:${client}`,
        peerUrl: `http://${host}:${peer}`,
        dataDir: join(root, `m${i}`),
        process: null,
      });
    }
    const cluster = new EtcdCluster(members, root, tls, placement);
    for (const m of members) cluster.spawnMember(m);
    try {
      await Promise.all(members.map((m) => waitHealthy(m, timeoutMs, tls)));
    } catch (e) {
      cluster.stop();
      throw e;
    }
    return cluster;
  }

  /**
   * Starts member `m` on its data dir: a new member the first time; a restarted one recovers from
   * what its data dir holds (etcd then ignores the initial-cluster flags).
   */
  private spawnMember(m: EtcdMember): void {
    const initialCluster = this.members.map((x) => `${x.name}=${x.peerUrl}`).join(',');
    // One token per cluster: members with different tokens refuse each other.
    const token = `skiff-test-${this.members[0]!.peerUrl}`;
    const args = [
      '--name',
      m.name,
      '--data-dir',
      m.dataDir,
      '--listen-client-urls',
      m.clientUrl,
      '--advertise-client-urls',
      m.clientUrl,
      '--listen-peer-urls',
      m.peerUrl,
      '--initial-advertise-peer-urls',
      m.peerUrl,
      '--initial-cluster',
      initialCluster,
      '--initial-cluster-state',
      'new',
      '--initial-cluster-token',
      token,
      '--heartbeat-interval',
      '50',
      '--election-timeout',
      '500',
      '--log-level',
      'error',
      ...(this.tls === null
        ? []
        : [
            '--cert-file',
            this.tls.certFile,
            '--key-file',
            this.tls.keyFile,
            // A trusted CA makes etcd ask clients for certificates: only when they are required.
            ...(this.tls.clientCertAuth ? ['--trusted-ca-file', this.tls.caFile, '--client-cert-auth'] : []),
          ]),
    ];
    const child =
      this.placement === null
        ? spawn('etcd', args, { stdio: ['ignore', 'ignore', 'pipe'] })
        : spawn('ip', ['netns', 'exec', this.placement.netns, 'etcd', ...args], {
            stdio: ['ignore', 'ignore', 'pipe'],
          });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      // Keep the tail only: enough to explain a failure to start.
      stderr = (stderr + d.toString()).slice(-4000);
    });
    child.on('exit', (code, signal) => {
      if (m.process === child) m.process = null;
      if (code !== 0 && signal === null) process.stderr.write(`etcd ${m.name} exited ${code}: ${stderr}\n`);
    });
    m.process = child;
  }

  /** Runs etcdctl against the cluster (over TLS with the harness's client certificate when TLS is on). */
  etcdctl(args: readonly string[]): string {
    const tlsArgs =
      this.tls === null
        ? []
        : ['--cacert', this.tls.caFile, '--cert', this.tls.clientCertFile, '--key', this.tls.clientKeyFile];
    const r = spawnSync('etcdctl', ['--endpoints', this.endpoints.join(','), ...tlsArgs, ...args], {
      encoding: 'utf8',
      env: { ...process.env, ETCDCTL_API: '3' },
    });
    if (r.status !== 0) throw new Error(`etcdctl ${args.join(' ')}: ${r.stderr || r.error}`);
    return r.stdout;
  }

  /** SIGKILL one member: no shutdown, as a crashed machine. */
  kill(index: number): void {
    const m = this.members[index]!;
    m.process?.kill('SIGKILL');
    m.process = null;
  }

  /** Starts a killed member again from its data dir; resolves once it reports healthy. */
  async restart(index: number, timeoutMs = 20_000): Promise<void> {
    const m = this.members[index]!;
    if (m.process !== null) throw new Error(`etcd member ${m.name} is running`);
    this.spawnMember(m);
    await waitHealthy(m, timeoutMs, this.tls);
  }

  stop(): void {
    for (const m of this.members) {
      m.process?.kill('SIGKILL');
      m.process = null;
    }
    rmSync(this.root, { recursive: true, force: true });
  }
}

function requireEtcd(): void {
  const r = spawnSync('etcd', ['--version'], { encoding: 'utf8' });
  if (r.error !== undefined || r.status !== 0) {
    throw new Error(
      'etcd is required by the metadata tests but was not found on PATH. Install it (Debian/Ubuntu: ' +
        '`sudo apt-get install etcd-server`) and run the tests again.',
    );
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** GET /health of a member, over TLS with the harness's client certificate when TLS is on. */
function health(m: EtcdMember, tls: EtcdTls | null): Promise<string> {
  if (tls === null)
    return fetch(`${m.clientUrl}/health`, { signal: AbortSignal.timeout(1000) }).then((r) => r.text());
  return new Promise((resolve, reject) => {
    const req = https.get(
      `${m.clientUrl}/health`,
      {
        ca: readFileSync(tls.caFile),
        cert: readFileSync(tls.clientCertFile),
        key: readFileSync(tls.clientKeyFile),
        timeout: 1000,
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += c.toString();
        });
        res.on('end', () => resolve(body));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

async function waitHealthy(m: EtcdMember, timeoutMs: number, tls: EtcdTls | null): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      const body = JSON.parse(await health(m, tls)) as { health?: string };
      if (body.health === 'true') return;
    } catch {
      // Not listening yet.
    }
    if (m.process === null) throw new Error(`etcd member ${m.name} exited during start-up`);
    if (performance.now() > deadline)
      throw new Error(`etcd member ${m.name} not healthy after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
