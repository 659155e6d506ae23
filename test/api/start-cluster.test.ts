/**
 * startCluster() as a test suite uses it: real broker processes, a broker killed and started
 * again, and nothing left behind — after close(), after 20 clusters in a row, after clusters in
 * parallel workers, and after a caller that ends without close() (returns, is SIGKILLed, SIGINT).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type SkiffCluster, startCluster, startSingleBroker } from '../../src/api/index.js';
import { listening } from '../../src/cluster/free-port.js';
import { adminFor, consumeAll, describe1, kcat, waitUntil } from '../cluster/helpers.js';
import { processesMentioning } from '../support/processes.js';

const OWNER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'cluster-owner.js');

interface Owned {
  readonly dataDir: string;
  readonly ports: readonly number[];
  readonly pids: readonly number[];
}

/** Nothing of a closed cluster is left: no process naming its data dir, no listening port, no dir. */
async function assertGone(what: string, c: Owned, timeoutMs = 10_000): Promise<void> {
  await waitUntil(
    `${what}: every process of ${c.dataDir} gone`,
    async () => (processesMentioning(c.dataDir).length === 0 ? true : undefined),
    timeoutMs,
  ).catch((e: Error) => {
    throw new Error(`${e.message}: ${JSON.stringify(processesMentioning(c.dataDir))}`);
  });
  for (const pid of c.pids) assert.equal(alive(pid), false, `${what}: broker pid ${pid} alive`);
  for (const port of c.ports)
    assert.equal(await listening(port), false, `${what}: port ${port} still listens`);
  await waitUntil(
    `${what}: ${c.dataDir} removed`,
    async () => (fs.existsSync(c.dataDir) ? undefined : true),
    timeoutMs,
  );
}

function alive(pid: number | null): boolean {
  if (pid === null) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function owned(cluster: SkiffCluster): Owned {
  return {
    dataDir: cluster.dataDir,
    ports: cluster.brokers.map((b) => b.port),
    pids: cluster.brokers.flatMap((b) => (b.pid === null ? [] : [b.pid])),
  };
}

/** The fixture in its own process; resolves with its first JSON line. */
function spawnOwner(
  brokers: number,
  mode: string,
): { child: ChildProcess; ready: Promise<Owned>; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [OWNER, String(brokers), mode], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = new Promise<Owned>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(JSON.parse(out.slice(0, nl)) as Owned);
    });
    void exited.then((code) =>
      reject(new Error(`cluster owner exited ${code} before its cluster was up: ${err}`)),
    );
  });
  return { child, ready, exited };
}

/** The active handles and requests of this process, by type (timers of the test runner excluded). */
function resources(): string[] {
  return process
    .getActiveResourcesInfo()
    .filter((r) => r !== 'Timeout' && r !== 'Immediate')
    .sort();
}

describe('startCluster', { timeout: 240_000 }, () => {
  it('runs real brokers: a topic, records through kcat, a broker killed and started on its port, close() removes all', async () => {
    const cluster = await startCluster({ brokers: 3, config: { 'default.replication.factor': 3 } });
    const before = owned(cluster);
    try {
      assert.equal(cluster.brokers.length, 3);
      assert.equal(new Set(cluster.bootstrapServers).size, 3);
      assert.match(cluster.clusterId, /^[A-Za-z0-9_-]{22}$/);
      for (const b of cluster.brokers) {
        assert.equal(b.running, true);
        assert.equal(await listening(b.port), true, `broker ${b.id} accepts clients`);
        // Its title in ps names it and its log dir.
        assert.equal(
          fs.readFileSync(`/proc/${b.pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim(),
          `skiff broker ${b.id} ${b.logDir}`,
        );
      }
      await cluster.createTopic('orders', { partitions: 1, config: { 'min.insync.replicas': 2 } });
      const bootstrap = cluster.bootstrapServers.join(',');
      const p1 = await kcat(['-b', bootstrap, '-P', '-t', 'orders', '-X', 'acks=all'], 'a\nb\nc\n');
      assert.equal(p1.status, 0, p1.stderr);

      const { admin, close } = adminFor(bootstrap);
      try {
        const leader = (await describe1(admin, 'orders')).partitions[0]!.leader;
        const victim = cluster.brokers.find((b) => b.id === leader)!;
        await cluster.stopBroker(leader, { kill: true });
        assert.equal(alive(victim.pid), false, 'SIGKILLed');
        assert.equal(cluster.brokers.find((b) => b.id === leader)!.running, false);
        const moved = await waitUntil(
          'a new leader',
          async () => {
            const p = (await describe1(admin, 'orders')).partitions[0]!;
            return p.leader >= 0 && p.leader !== leader ? p : undefined;
          },
          20_000,
        );
        assert.notEqual(moved.leader, leader);
        const p2 = await kcat(['-b', bootstrap, '-P', '-t', 'orders', '-X', 'acks=all'], 'd\n');
        assert.equal(p2.status, 0, p2.stderr);
        await cluster.startBroker(leader);
        const back = cluster.brokers.find((b) => b.id === leader)!;
        assert.equal(back.port, victim.port, 'the same port again');
        assert.notEqual(back.pid, victim.pid);
        await waitUntil(
          'the restarted broker back in the ISR',
          async () => ((await describe1(admin, 'orders')).partitions[0]!.isr.length === 3 ? true : undefined),
          20_000,
        );
      } finally {
        close();
      }
      assert.deepEqual(await consumeAll(bootstrap, 'orders'), ['a', 'b', 'c', 'd']);
    } finally {
      await cluster.close();
    }
    await assertGone('after close()', { ...before, pids: [...before.pids, ...owned(cluster).pids] });
    await cluster.close(); // idempotent
    await assert.rejects(cluster.createTopic('late'), /the cluster is closed/);
  });

  it('starts and closes 20 clusters in a row, then 4 in parallel workers: no process, port, dir or handle left', async () => {
    const handlesBefore = resources();
    const seen: Owned[] = [];
    for (let i = 0; i < 20; i++) {
      const cluster = await startSingleBroker();
      seen.push(owned(cluster));
      await cluster.close();
    }
    const workers = [1, 2, 3, 4].map(() => spawnOwner(3, 'close'));
    const results = await Promise.all(
      workers.map(async (w) => ({ owned: await w.ready, code: await w.exited })),
    );
    for (const r of results) assert.equal(r.code, 0, 'a worker closed its cluster and exited 0');
    const ports = results.flatMap((r) => r.owned.ports);
    assert.equal(new Set(ports).size, ports.length, 'parallel clusters never share a port');
    for (const [i, c] of [...seen, ...results.map((r) => r.owned)].entries())
      await assertGone(`cluster ${i + 1}`, c);
    assert.deepEqual(resources(), handlesBefore, 'no handle left open in the caller');
  });

  for (const end of ['return', 'SIGKILL', 'SIGINT'] as const) {
    it(`a caller that ends without close() (${end}) leaves nothing behind`, async () => {
      const owner = spawnOwner(2, end === 'return' ? 'return' : 'wait');
      const c = await owner.ready;
      if (end !== 'return') owner.child.kill(end);
      await owner.exited;
      await assertGone(`after the caller's ${end}`, c);
    });
  }

  it('keepData keeps a temporary data dir; a given dataDir is never removed', async () => {
    const kept = await startSingleBroker({ keepData: true });
    await kept.close();
    try {
      assert.ok(fs.existsSync(path.join(kept.dataDir, 'broker-1')), 'the log dir is kept');
      const again = await startSingleBroker({ dataDir: kept.dataDir });
      assert.equal(again.clusterId, kept.clusterId, 'the same cluster, started again on its data');
      await again.close();
      assert.ok(fs.existsSync(path.join(kept.dataDir, 'metadata')));
    } finally {
      fs.rmSync(kept.dataDir, { recursive: true, force: true });
    }
  });

  it('refuses bad options in one error, leaving nothing', async () => {
    await assert.rejects(startCluster({ brokers: 0 }), /brokers: expected an integer ≥ 1, got 0/);
    await assert.rejects(startCluster({ brokers: 2, ports: [1] }), /ports: expected 2 ports/);
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      await assert.rejects(
        startSingleBroker({ ports: [port] }),
        new RegExp(`cannot listen on 127.0.0.1:${port}: the port is in use`),
      );
    } finally {
      taken.close();
    }
    await assert.rejects(
      startSingleBroker({ config: { 'num.partitions': 'many' } }),
      /the cluster did not start: broker 1 did not start/,
    );
  });
});
