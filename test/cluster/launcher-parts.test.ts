/**
 * The launcher's small parts in process: the listener port rewrite of --config-file, the cluster
 * id agreed on by concurrent starters, and `skiff cluster` without a running launcher (no
 * launcher.json, a stale one, bad arguments).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { runBroker } from '../../src/cli/broker-command.js';
import { runCluster } from '../../src/cli/cluster.js';
import { runUp } from '../../src/cli/up.js';
import { CLUSTER_ID_KEY, resolveClusterId } from '../../src/cluster/cluster-id.js';
import { LAUNCHER_FILE, writeLauncherFile } from '../../src/cluster/control.js';
import { withPort } from '../../src/cluster/launcher.js';
import { ManualClock } from '../../src/common/clock.js';
import { EmbeddedStore } from '../../src/metadata/embedded-store.js';
import { removeDataDir } from './helpers.js';

function capture(): { io: { out(l: string): void; err(l: string): void }; out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l) => out.push(l), err: (l) => err.push(l) }, out, err };
}

describe('launcher parts', () => {
  it('replaces only the port of the listener, keeping its host', () => {
    assert.equal(withPort('PLAINTEXT://127.0.0.1:9092', 9093), 'PLAINTEXT://127.0.0.1:9093');
    assert.equal(withPort('PLAINTEXT://0.0.0.0:1', 19094), 'PLAINTEXT://0.0.0.0:19094');
    assert.equal(withPort('PLAINTEXT://:9092', 9095), 'PLAINTEXT://:9095');
    assert.equal(withPort('PLAINTEXT://[::1]:9092', 9096), 'PLAINTEXT://[::1]:9096');
    assert.equal(
      withPort('PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093', 9097),
      'PLAINTEXT://127.0.0.1:9097,SSL://127.0.0.1:0',
    );
    assert.throws(() => withPort('localhost', 1), /expected NAME:\/\/host:port/);
  });

  it('concurrent starters on one store agree on one cluster id, which survives a restart', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-cluster-id-'));
    try {
      let n = 0;
      const bytes = (k: number) => Buffer.alloc(k, ++n);
      const store = await EmbeddedStore.open({ clock: new ManualClock(), dataDir: dir });
      const ids = await Promise.all([1, 2, 3, 4].map(() => resolveClusterId(store, bytes)));
      assert.equal(new Set(ids).size, 1);
      assert.match(ids[0]!, /^[A-Za-z0-9_-]{22}$/);
      await store.close();
      const reopened = await EmbeddedStore.open({ clock: new ManualClock(), dataDir: dir });
      assert.equal((await reopened.get(CLUSTER_ID_KEY))?.value, ids[0]);
      assert.equal(await resolveClusterId(reopened, bytes), ids[0]);
      await reopened.close();
    } finally {
      removeDataDir(dir);
    }
  });

  it('skiff cluster says in one stderr line that no launcher runs, and exits 1', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-no-launcher-'));
    try {
      const none = capture();
      assert.equal(await runCluster(['status', '--data-dir', dir], none.io), 1);
      assert.equal(none.err.length, 1);
      assert.match(none.err[0]!, /no skiff up is running for data dir .* \(no launcher\.json\)/);

      // A launcher that died without cleaning up: its pid is gone (pid 2^22 + 1 is above Linux's max).
      writeLauncherFile(dir, {
        pid: 4_194_305,
        url: 'http://127.0.0.1:1',
        token: 't',
        clusterId: 'c',
        brokers: 3,
      });
      assert.equal((fs.statSync(path.join(dir, LAUNCHER_FILE)).mode & 0o777).toString(8), '600');
      const stale = capture();
      assert.equal(await runCluster(['stop', '2', '--kill', '--data-dir', dir], stale.io), 1);
      assert.equal(stale.err.length, 1);
      assert.match(stale.err[0]!, /launcher pid 4194305 is gone/);
    } finally {
      removeDataDir(dir);
    }
  });

  it('skiff cluster refuses malformed calls with one error line naming the bad argument, then its usage (exit 2)', async () => {
    for (const [args, error] of [
      [[], 'missing the action: status, stop or start'],
      [['stop'], 'stop needs a broker id, got none'],
      [['stop', 'x'], "stop needs a broker id, got 'x'"],
      [['start', '1', '--kill'], '--kill applies to stop only'],
      [['status', '1'], "unexpected argument '1'"],
      [['restart', '1'], "unknown action 'restart'"],
    ] as const) {
      const c = capture();
      assert.equal(await runCluster([...args], c.io), 2, args.join(' '));
      assert.deepEqual(c.err, [`skiff cluster: ${error} (see skiff cluster --help)`], args.join(' '));
      assert.match(c.out.join('\n'), /^Usage: skiff cluster status/);
    }
  });
});

describe('skiff broker start-up input', () => {
  it('without a properties file prints its usage and exits 2, starting nothing (as kafka-server-start.sh)', async () => {
    for (const args of [[], ['--override', 'node.id=1']]) {
      const c = capture();
      assert.equal(await runBroker(args, c.io), 2, args.join(' '));
      assert.deepEqual(c.err, [
        'skiff broker: missing the broker configuration: --config <server.properties> (see skiff broker --help)',
      ]);
      assert.match(c.out.join('\n'), /^Usage: skiff broker --config <server.properties>/);
    }
  });

  it('an unusable log dir or data dir is one line and exit 1, nothing created (not a spin in mkdir)', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-bad-dirs-'));
    try {
      const file = path.join(root, 'a-file');
      fs.writeFileSync(file, 'x');
      const props = path.join(root, 'server.properties');
      for (const logDirs of ['/proc/skiff-no-such/logs', path.join(file, 'logs')]) {
        fs.writeFileSync(props, `node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0\nlog.dirs=${logDirs}\n`);
        const c = capture();
        assert.equal(await runBroker(['--config', props], c.io), 1, logDirs);
        assert.equal(c.err.length, 1, c.err.join('\n'));
        assert.match(
          c.err[0]!,
          /^skiff broker: cannot create the directory \S+: (ENOENT \(no such file or directory\)|it exists and is not a directory)$/,
        );
      }
      const up = capture();
      assert.equal(await runUp(['--data-dir', file], up.io), 1);
      assert.deepEqual(up.err, [
        `skiff up: cannot create the directory ${file}: it exists and is not a directory`,
      ]);
      const proc = capture();
      assert.equal(await runUp(['--data-dir', '/proc/skiff-no-such'], proc.io), 1);
      assert.deepEqual(proc.err, [
        'skiff up: cannot create the directory /proc/skiff-no-such: ENOENT (no such file or directory)',
      ]);
      assert.deepEqual(fs.readdirSync(root).sort(), ['a-file', 'server.properties']);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('a data dir without permission to write is one line and exit 1, nothing created', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-no-write-'));
    const locked = path.join(root, 'locked');
    fs.mkdirSync(locked);
    // root writes through a mode of 0500; only an immutable directory refuses it (EPERM).
    const asRoot = process.getuid?.() === 0;
    const lock = (on: boolean): void => {
      if (asRoot) execFileSync('chattr', [on ? '+i' : '-i', locked]);
      else fs.chmodSync(locked, on ? 0o500 : 0o700);
    };
    lock(true);
    try {
      const props = path.join(root, 'server.properties');
      fs.writeFileSync(props, `node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0\nlog.dirs=${locked}/logs\n`);
      const why = asRoot ? 'EPERM (operation not permitted)' : 'EACCES (permission denied)';
      const broker = capture();
      assert.equal(await runBroker(['--config', props], broker.io), 1);
      assert.deepEqual(broker.err, [`skiff broker: cannot create the directory ${locked}/logs: ${why}`]);
      const up = capture();
      assert.equal(await runUp(['--data-dir', `${locked}/cluster`], up.io), 1);
      assert.deepEqual(up.err, [`skiff up: cannot create the directory ${locked}/cluster: ${why}`]);
      assert.deepEqual(fs.readdirSync(locked), []);
    } finally {
      lock(false);
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('a listener port in use is one line and exit 1 before anything is written', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-port-in-use-'));
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (taken.address() as net.AddressInfo).port;
      const props = path.join(root, 'server.properties');
      const logs = path.join(root, 'logs');
      fs.writeFileSync(props, `node.id=1\nlisteners=PLAINTEXT://127.0.0.1:${port}\nlog.dirs=${logs}\n`);
      const c = capture();
      assert.equal(await runBroker(['--config', props], c.io), 1);
      assert.deepEqual(c.err, [`skiff broker: cannot listen on 127.0.0.1:${port}: the port is in use`]);
      assert.equal(fs.existsSync(logs), false, 'no log dir, no metadata store');
      const up = capture();
      const data = path.join(root, 'cluster');
      assert.equal(await runUp(['--data-dir', data, '--brokers', '2', '--port', String(port - 1)], up.io), 1);
      assert.deepEqual(up.err, [`skiff up: cannot listen on 127.0.0.1:${port}: the port is in use`]);
      assert.equal(fs.existsSync(data), false, 'no data dir');
    } finally {
      taken.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('a properties file that cannot be read is one line and exit 1', async () => {
    const c = capture();
    const missing = path.join(os.tmpdir(), `skiff-no-such-${process.pid}.properties`);
    assert.equal(await runBroker(['--config', missing], c.io), 1);
    assert.equal(c.err.length, 1);
    assert.match(c.err[0]!, /^skiff broker: ENOENT: no such file or directory/);
  });
});
