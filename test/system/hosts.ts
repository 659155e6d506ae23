/**
 * Hosts for the fault suite: each broker and etcd in a network namespace of its own, with its own
 * address, joined by veth links to a bridge in the root namespace, where the test's clients run
 * (the bridge holds the root side's address). Cutting a host off is its link going down; a flaky
 * link is loss and delay on the traffic between two hosts only.
 *
 * Everything is named after the test's pid (namespaces `skiff-<pid>-…`, links `skf<pid>…`, data
 * dirs `skiff-system-<pid>-…`), so a later run recognises what a killed run left behind and
 * removes it (`removeLeftovers`). Owned by
 * one test file, which must `destroy()` it in an after() hook. Needs root and iproute2; nftables
 * for the loss when the kernel has no netem.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { removeDataDir, SKIFF, SkiffProcess } from '../cluster/helpers.js';
import { EtcdCluster } from '../support/etcd.js';

const NETNS_PREFIX = 'skiff-';
/** The data dirs (brokers' log dirs, etcd's) of a run: `skiff-system-<pid>-…` in the temp dir. */
const DIR_PREFIX = 'skiff-system-';
const LINK_PREFIX = 'skf';
/** The brokers' listener port: each host has its own address, so all use Kafka's port. */
export const BROKER_PORT = 9092;

/** Runs a command to completion; a non-zero exit is an error naming the command and its stderr. */
export function sh(command: string, args: readonly string[], input?: string): string {
  const r = spawnSync(command, [...args], { encoding: 'utf8', input });
  if (r.error !== undefined) throw r.error;
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')}: exit ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes the namespaces (and their processes) and links of runs whose process is gone. */
export function removeLeftovers(): void {
  for (const line of sh('ip', ['netns', 'list']).split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const m = new RegExp(`^${NETNS_PREFIX}(\\d+)-`).exec(name);
    if (m === null || alive(Number(m[1]))) continue;
    for (const pid of sh('ip', ['netns', 'pids', name])
      .split('\n')
      .filter((l) => l !== ''))
      spawnSync('kill', ['-9', pid]);
    spawnSync('ip', ['netns', 'del', name]);
  }
  for (const line of sh('ip', ['-o', 'link', 'show']).split('\n')) {
    const m = new RegExp(`^\\d+: (${LINK_PREFIX}(\\d+)[a-z0-9]*)[@:]`).exec(line);
    if (m !== null && !alive(Number(m[2]))) spawnSync('ip', ['link', 'del', m[1]!]);
  }
  for (const name of fs.readdirSync(os.tmpdir())) {
    const m = new RegExp(`^${DIR_PREFIX}(\\d+)-`).exec(name);
    if (m !== null && !alive(Number(m[1]))) removeDataDir(path.join(os.tmpdir(), name));
  }
}

/** Whether this machine lets the suite build hosts: root, iproute2, network namespaces. */
export function hostsUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'the fault suite needs root (network namespaces)';
  const r = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  if (r.error !== undefined || r.status !== 0)
    return 'the fault suite needs iproute2 (Debian: apt-get install iproute2)';
  return null;
}

export interface BrokerHostOptions {
  /** More server.properties lines, after the suite's own. */
  readonly properties?: readonly string[];
}

/**
 * Three (or `count`) broker hosts and an etcd host. Broker i (1-based) lives in namespace
 * `skiff-<pid>-b<i>` at `<net>.<10 + i>`; etcd in `skiff-<pid>-etcd` at `<net>.2`; the root side
 * (the clients) at `<net>.1`.
 */
export class Hosts {
  readonly brokers = new Map<number, SkiffProcess>();
  private flakyPairs: [number, number][] = [];

  private constructor(
    readonly count: number,
    readonly net: string,
    readonly dir: string,
    readonly etcd: EtcdCluster,
    private readonly brokerProperties: readonly string[],
  ) {}

  private static tag(): string {
    return `${process.pid}`;
  }

  static namespace(host: string): string {
    return `${NETNS_PREFIX}${Hosts.tag()}-${host}`;
  }

  /** The root side's end of host's veth (the bridge's port). */
  static link(host: string): string {
    return `${LINK_PREFIX}${Hosts.tag()}${host}`;
  }

  static bridge(): string {
    return `${LINK_PREFIX}${Hosts.tag()}br`;
  }

  /** Builds the network and etcd; the brokers start with startBroker(). */
  static async create(count = 3, options: BrokerHostOptions = {}): Promise<Hosts> {
    removeLeftovers();
    const pid = process.pid;
    // A /24 of its own per run, from the pid: two runs at once do not share addresses.
    const net = `10.${100 + (pid % 100)}.${Math.floor(pid / 100) % 256}`;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${DIR_PREFIX}${pid}-`));
    const hosts = ['etcd', ...Array.from({ length: count }, (_, i) => `b${i + 1}`)];
    try {
      sh('ip', ['link', 'add', Hosts.bridge(), 'type', 'bridge']);
      sh('ip', ['addr', 'add', `${net}.1/24`, 'dev', Hosts.bridge()]);
      sh('ip', ['link', 'set', Hosts.bridge(), 'up']);
      for (const host of hosts) {
        const ns = Hosts.namespace(host);
        const address = host === 'etcd' ? `${net}.2` : `${net}.${10 + Number(host.slice(1))}`;
        sh('ip', ['netns', 'add', ns]);
        sh('ip', ['link', 'add', Hosts.link(host), 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
        sh('ip', ['link', 'set', Hosts.link(host), 'master', Hosts.bridge(), 'up']);
        sh('ip', ['-n', ns, 'addr', 'add', `${address}/24`, 'dev', 'eth0']);
        sh('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
        sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
      }
      const etcd = await EtcdCluster.start(1, 20_000, null, {
        host: `${net}.2`,
        netns: Hosts.namespace('etcd'),
        dataRoot: path.join(dir, 'etcd'),
      });
      return new Hosts(count, net, dir, etcd, options.properties ?? []);
    } catch (e) {
      Hosts.removeNetwork(count);
      removeDataDir(dir);
      throw e;
    }
  }

  address(id: number): string {
    return `${this.net}.${10 + id}`;
  }

  get bootstrap(): string {
    return Array.from({ length: this.count }, (_, i) => `${this.address(i + 1)}:${BROKER_PORT}`).join(',');
  }

  logDir(id: number): string {
    return path.join(this.dir, `broker-${id}`);
  }

  /** `skiff broker` in broker id's namespace; resolves once it is ready. */
  async startBroker(id: number): Promise<SkiffProcess> {
    const props = path.join(this.dir, `server-${id}.properties`);
    const address = this.address(id);
    fs.writeFileSync(
      props,
      [
        `node.id=${id}`,
        `listeners=PLAINTEXT://${address}:${BROKER_PORT}`,
        `advertised.listeners=PLAINTEXT://${address}:${BROKER_PORT}`,
        `log.dirs=${this.logDir(id)}`,
        `etcd.endpoints=${this.etcd.endpoints.join(',')}`,
        ...this.brokerProperties,
        '',
      ].join('\n'),
    );
    const args = ['broker', '--config', props];
    const p = new SkiffProcess(
      args,
      // ip netns exec execs the command: the child's pid is the broker's, SIGKILL reaches it.
      spawn('ip', ['netns', 'exec', Hosts.namespace(`b${id}`), process.execPath, SKIFF, ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    this.brokers.set(id, p);
    await p.waitFor(new RegExp(`skiff broker ${id} ready: listening on`), 30_000);
    return p;
  }

  broker(id: number): SkiffProcess {
    const p = this.brokers.get(id);
    if (p === undefined) throw new Error(`no broker ${id}`);
    return p;
  }

  /** SIGKILL: no shutdown, as a host losing power. */
  async kill(id: number): Promise<void> {
    await this.brokers.get(id)?.kill();
  }

  /** Host's link down: nothing in or out, every peer and client sees silence. */
  cut(host: string): void {
    sh('ip', ['link', 'set', Hosts.link(host), 'down']);
  }

  heal(host: string): void {
    sh('ip', ['link', 'set', Hosts.link(host), 'up']);
  }

  /**
   * Host `b<id>` keeps its link but drops every packet to or from anyone but the clients: cut off
   * from the other brokers and etcd while the clients can still reach it (a partition on the
   * brokers' side).
   */
  isolateFromCluster(id: number): void {
    const clients = `${this.net}.1`;
    this.nft(
      id,
      `table inet skiff_isolate {
  chain input { type filter hook input priority 0; policy accept; iifname "eth0" ip saddr != ${clients} drop; }
  chain output { type filter hook output priority 0; policy accept; oifname "eth0" ip daddr != ${clients} drop; }
}`,
    );
  }

  endIsolation(id: number): void {
    this.nft(id, 'delete table inet skiff_isolate');
  }

  /**
   * Loss and delay on the traffic between brokers a and b, both ways: netem (delay 50 ms, loss
   * 10 %) where the kernel has it; otherwise 10 % of the packets dropped by nftables and the link
   * between them capped at 1 Mbit/s by HTB (queueing delay under load). Returns what was applied.
   */
  flaky(a: number, b: number): string {
    let how = '';
    for (const [from, to] of [
      [a, b],
      [b, a],
    ] as const) {
      const tc = (...args: string[]) => ['netns', 'exec', Hosts.namespace(`b${from}`), 'tc', ...args];
      sh('ip', tc('qdisc', 'add', 'dev', 'eth0', 'root', 'handle', '1:', 'htb', 'default', '1'));
      sh('ip', tc('class', 'add', 'dev', 'eth0', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '10gbit'));
      sh('ip', tc('class', 'add', 'dev', 'eth0', 'parent', '1:', 'classid', '1:2', 'htb', 'rate', '10gbit'));
      const netem = tc(
        'qdisc',
        'add',
        'dev',
        'eth0',
        'parent',
        '1:2',
        'netem',
        'delay',
        '50ms',
        'loss',
        '10%',
      );
      if (spawnSync('ip', netem).status === 0) {
        how = 'tc netem delay 50ms loss 10%';
      } else {
        // CONFIG_NET_SCH_NETEM not set: the class itself becomes the slow link, nftables the loss.
        sh(
          'ip',
          tc('class', 'change', 'dev', 'eth0', 'parent', '1:', 'classid', '1:2', 'htb', 'rate', '1mbit'),
        );
        this.nft(
          from,
          `table inet skiff_flaky {
  chain output { type filter hook output priority 0; policy accept; ip daddr ${this.address(to)} numgen random mod 100 < 10 drop; }
}`,
        );
        how = 'no netem in this kernel: nftables loss 10% + HTB cap 1mbit';
      }
      sh(
        'ip',
        tc(
          'filter',
          'add',
          'dev',
          'eth0',
          'parent',
          '1:',
          'protocol',
          'ip',
          'prio',
          '1',
          'u32',
          'match',
          'ip',
          'dst',
          `${this.address(to)}/32`,
          'flowid',
          '1:2',
        ),
      );
    }
    this.flakyPairs.push([a, b]);
    return how;
  }

  /** Removes every flaky link's qdiscs and drop rules. */
  steady(): void {
    for (const pair of this.flakyPairs.splice(0)) {
      for (const id of pair) {
        const ns = Hosts.namespace(`b${id}`);
        spawnSync('ip', ['netns', 'exec', ns, 'tc', 'qdisc', 'del', 'dev', 'eth0', 'root']);
        spawnSync('ip', ['netns', 'exec', ns, 'nft', 'delete', 'table', 'inet', 'skiff_flaky']);
      }
    }
  }

  private nft(id: number, rules: string): void {
    sh('ip', ['netns', 'exec', Hosts.namespace(`b${id}`), 'nft', '-f', '-'], rules);
  }

  /** Every broker and etcd killed, the namespaces, links and data dir removed. */
  async destroy(): Promise<void> {
    await Promise.all([...this.brokers.values()].map((b) => b.kill()));
    this.etcd.stop();
    Hosts.removeNetwork(this.count);
    removeDataDir(this.dir);
  }

  private static removeNetwork(count: number): void {
    for (const host of ['etcd', ...Array.from({ length: count }, (_, i) => `b${i + 1}`)]) {
      const ns = Hosts.namespace(host);
      const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout ?? '';
      for (const pid of pids.split('\n').filter((l) => l !== '')) spawnSync('kill', ['-9', pid]);
      // Deleting the namespace deletes its veth end, and with it the root side's.
      spawnSync('ip', ['netns', 'del', ns]);
    }
    spawnSync('ip', ['link', 'del', Hosts.bridge()]);
  }
}
