/**
 * No orphans: a `skiff up` started through npx and an etcd-backed `skiff broker` stop when the
 * process that started them is killed (SIGTERM or SIGKILL), and a broker whose etcd was SIGKILLed
 * still ends on SIGTERM within its bound.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { EtcdCluster } from '../support/etcd.js';
import { processesMentioning } from '../support/processes.js';
import { freePorts, removeDataDir, SKIFF, waitUntil } from './helpers.js';

/** The repository root (where package.json is): `npx skiff` runs its bin. */
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** The bound: every Skiff process gone this long after its starter was killed. */
const GONE_MS = 10_000;

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

async function waitForLine(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<void> {
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no ${pattern} after ${timeoutMs} ms:\n${out}`)),
      timeoutMs,
    );
    const onData = (d: Buffer): void => {
      out += d.toString();
      if (pattern.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
  });
}

/** Waits until no process names `dir`; returns how long that took. */
async function allGone(dir: string, timeoutMs: number): Promise<number> {
  const started = Date.now();
  await waitUntil(
    `every process of ${dir} to end`,
    async () => (processesMentioning(dir).length === 0 ? true : undefined),
    timeoutMs,
  ).catch((e: Error) => {
    throw new Error(`${e.message}: ${JSON.stringify(processesMentioning(dir))}`);
  });
  return Date.now() - started;
}

describe('a killed starter leaves no Skiff process', { timeout: 180_000 }, () => {
  let root: string;
  let etcd: EtcdCluster;

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-orphans-'));
    etcd = await EtcdCluster.start(1);
  });

  after(() => {
    etcd?.stop();
    removeDataDir(root);
  });

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`npx skiff up: the npx process gets ${signal}, the launcher and every broker end`, async () => {
      const dir = path.join(root, `up-${signal}`);
      const port = await freePorts(2);
      const npx = spawn(
        'npx',
        ['--no-install', 'skiff', 'up', '--data-dir', dir, '--brokers', '2', '--port', String(port)],
        {
          cwd: REPO,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      await waitForLine(npx, /cluster \S+ up in \d+ ms/, 60_000);
      const titles = processesMentioning(dir).map((p) => p.cmdline);
      assert.ok(titles.includes(`skiff up ${dir}`), titles.join('\n'));
      assert.ok(titles.includes(`skiff broker 2 ${dir}/broker-2`), titles.join('\n'));
      npx.kill(signal);
      await exited(npx);
      await allGone(dir, GONE_MS);
    });
  }

  const brokerProps = async (name: string): Promise<{ props: string; dir: string }> => {
    const dir = path.join(root, name);
    fs.mkdirSync(dir);
    const [port] = [await freePorts(1)];
    const props = path.join(dir, 'server.properties');
    fs.writeFileSync(
      props,
      [
        'node.id=1',
        `listeners=PLAINTEXT://127.0.0.1:${port}`,
        `log.dirs=${path.join(dir, 'logs')}`,
        `etcd.endpoints=${etcd.endpoints.join(',')}`,
        '',
      ].join('\n'),
    );
    return { props, dir };
  };

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`an etcd-backed skiff broker: its parent gets ${signal}, the broker ends`, async () => {
      const { props, dir } = await brokerProps(`broker-${signal}`);
      const out = path.join(dir, 'broker.out');
      // A parent as a harness is: a Node process that spawned the broker and stays.
      const parent = spawn(
        process.execPath,
        [
          '-e',
          `const fs = require('fs'); const fd = fs.openSync(${JSON.stringify(out)}, 'a');
           require('child_process').spawn(process.execPath, [${JSON.stringify(SKIFF)}, 'broker', ${JSON.stringify(props)}], { stdio: ['ignore', fd, fd] });
           setInterval(() => {}, 1000);`,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      await waitUntil(
        'the broker ready',
        async () => (/ready: listening on/.test(fs.readFileSync(out, 'utf8')) ? true : undefined),
        30_000,
      );
      assert.equal(
        processesMentioning(`skiff broker 1 ${dir}/logs`).length,
        1,
        'titled skiff broker 1 <log dir>',
      );
      parent.kill(signal);
      await exited(parent);
      await allGone(dir, GONE_MS);
      assert.match(fs.readFileSync(out, 'utf8'), /parent process \d+ is gone, shutting down/);
    });
  }

  /** An etcd-backed `skiff broker` on its own one-member etcd, ready; its output collected. */
  const etcdBroker = async (
    name: string,
  ): Promise<{
    etcd: EtcdCluster;
    broker: ChildProcess;
    output(): string;
    closed: Promise<number | null>;
  }> => {
    const own = await EtcdCluster.start(1);
    const dir = path.join(root, name);
    fs.mkdirSync(dir);
    const port = await freePorts(1);
    const props = path.join(dir, 'server.properties');
    fs.writeFileSync(
      props,
      `node.id=1\nlisteners=PLAINTEXT://127.0.0.1:${port}\nlog.dirs=${dir}/logs\netcd.endpoints=${own.endpoints[0]}\n`,
    );
    const broker = spawn(process.execPath, [SKIFF, 'broker', props], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    for (const stream of [broker.stdout!, broker.stderr!])
      stream.on('data', (d: Buffer) => {
        out += d.toString();
      });
    // 'close': the output is all read (an 'exit' can come before the last lines).
    const closed = new Promise<number | null>((resolve) => broker.once('close', (code) => resolve(code)));
    await waitForLine(broker, /ready: listening on/, 30_000);
    return { etcd: own, broker, output: () => out, closed };
  };

  for (const fault of ['SIGKILL', 'SIGSTOP'] as const) {
    it(`a broker whose etcd got ${fault} (${fault === 'SIGKILL' ? 'gone' : 'hung'}) exits on SIGTERM within 30 s`, async (t) => {
      const { etcd: own, broker, output, closed } = await etcdBroker(`etcd-${fault}`);
      try {
        own.members[0]!.process!.kill(fault);
        const started = Date.now();
        broker.kill('SIGTERM');
        const bounded = await Promise.race([
          closed.then(() => true),
          new Promise<false>((r) => setTimeout(() => r(false), 30_000)),
        ]);
        if (!bounded) broker.kill('SIGKILL');
        assert.ok(bounded, 'the broker was still running 30 s after SIGTERM');
        t.diagnostic(`the broker exited ${Date.now() - started} ms after SIGTERM`);
        assert.match(output(), /received SIGTERM, shutting down/, 'it was running when SIGTERM came');
      } finally {
        own.stop();
      }
    });
  }

  it('a second signal during a slow stop (etcd hung) ends the broker at once, saying so', async () => {
    const { etcd: own, broker, output, closed } = await etcdBroker('second-signal');
    try {
      own.members[0]!.process!.kill('SIGSTOP');
      broker.kill('SIGTERM');
      // The first signal's duplicates (a wrapper forwarding it) are ignored for a second.
      await new Promise((r) => setTimeout(r, 1300));
      broker.kill('SIGINT');
      assert.equal(await closed, 1);
      assert.match(output(), /received SIGINT again: exiting without finishing the shutdown/);
    } finally {
      own.stop();
    }
  });
});
