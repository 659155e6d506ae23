/**
 * kcat (librdkafka) against `skiff broker` started as a child process on a free port: metadata,
 * 10,000 keyed records to 3 partitions and back byte-exact, key → partition stability, offset
 * queries, and a clean SIGTERM shutdown. kcat must be installed (CI installs it); a missing kcat
 * fails the test with instructions rather than skipping it.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { seededRandomBytes, startBroker, type TestBroker } from '../broker/helpers.js';
import { runProcess, type ToolRun } from '../support/broker-process.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const SKIFF = path.join(ROOT, 'bin', 'skiff.js');
const RECORDS = 10_000;

function requireKcat(): void {
  const r = spawnSync('kcat', ['-V'], { encoding: 'utf8' });
  if (r.error) {
    assert.fail(
      'kcat is not installed: install it (Debian: apt-get install kcat) to run the kcat compatibility tests',
    );
  }
}

function kcat(args: string[], input?: string, timeoutMs = 30_000): { stdout: string; stderr: string } {
  const r = spawnSync('kcat', args, { input, encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 << 20 });
  if (r.error) throw r.error;
  assert.equal(r.status, 0, `kcat ${args.join(' ')} exited with ${r.status}: ${r.stderr}`);
  return { stdout: r.stdout, stderr: r.stderr };
}

/** kcat without blocking this process's event loop (for a broker running in this process). */
function kcatAsync(args: string[], input?: string): Promise<ToolRun> {
  return runProcess('kcat', args, input ?? '');
}

/** Deterministic printable values with awkward bytes (quotes, backslashes, UTF-8, ':'). */
function record(i: number): { key: string; value: string } {
  const key = `key-${(i * 7919) % 613}`;
  const fill = 'abcdefghijklmnopqrstuvwxyz0123456789"\\:{}é€'.repeat(3);
  const value = `v${i}:${fill.slice(i % 20, (i % 20) + 5 + (i % 60))}`;
  return { key, value };
}

describe('kcat against skiff broker', () => {
  let dir: string;
  let child: ChildProcess;
  let port = 0;
  let output = '';
  let exited: Promise<number | null>;
  const broker = () => `127.0.0.1:${port}`;

  before(async () => {
    requireKcat();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-kcat-'));
    const props = path.join(dir, 'server.properties');
    fs.writeFileSync(
      props,
      [
        'node.id=1',
        'listeners=PLAINTEXT://127.0.0.1:0',
        `log.dirs=${path.join(dir, 'logs')}`,
        'num.partitions=3',
        '',
      ].join('\n'),
    );
    child = spawn(process.execPath, [SKIFF, 'broker', '--config', props], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`broker not ready after 15 s:\n${output}`)), 15_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const m = /ready: listening on PLAINTEXT:\/\/127\.0\.0\.1:(\d+)/.exec(output);
        if (m) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code) => reject(new Error(`broker exited with ${code}:\n${output}`)));
    });
  });

  after(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('kcat -L lists the broker as controller', () => {
    const md = JSON.parse(kcat(['-b', broker(), '-L', '-J']).stdout) as {
      controllerid: number;
      brokers: { id: number; name: string }[];
    };
    assert.equal(md.controllerid, 1);
    assert.deepEqual(md.brokers, [{ id: 1, name: broker() }]);
  });

  it('produces 10,000 keyed records to 3 partitions and consumes them back byte-exact', () => {
    const lines: string[] = [];
    for (let i = 0; i < RECORDS; i++) {
      const r = record(i);
      lines.push(`${r.key}:${r.value}`);
    }
    const t0 = Date.now();
    kcat(['-b', broker(), '-P', '-K:', '-t', 'T', '-X', 'linger.ms=5'], `${lines.join('\n')}\n`);
    const produceMs = Date.now() - t0;

    const t1 = Date.now();
    const out = kcat(['-b', broker(), '-C', '-e', '-o', 'beginning', '-J', '-t', 'T']).stdout;
    const consumeMs = Date.now() - t1;
    const consumed = out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { partition: number; offset: number; key: string; payload: string });
    assert.equal(consumed.length, RECORDS);
    assert.deepEqual(new Set(consumed.map((c) => c.partition)), new Set([0, 1, 2]));

    // Same key → same partition, and per key the production order is kept.
    const partitionOfKey = new Map<string, number>();
    const byPartition = [0, 1, 2].map((p) =>
      consumed.filter((c) => c.partition === p).sort((a, b) => a.offset - b.offset),
    );
    for (const c of consumed) {
      const seen = partitionOfKey.get(c.key);
      if (seen !== undefined) assert.equal(c.partition, seen, `key ${c.key} in two partitions`);
      partitionOfKey.set(c.key, c.partition);
    }
    const expectedByKey = new Map<string, string[]>();
    for (let i = 0; i < RECORDS; i++) {
      const r = record(i);
      expectedByKey.set(r.key, [...(expectedByKey.get(r.key) ?? []), r.value]);
    }
    const gotByKey = new Map<string, string[]>();
    for (const part of byPartition) {
      for (const [i, c] of part.entries()) assert.equal(c.offset, i, 'offsets are dense from 0');
      for (const c of part) gotByKey.set(c.key, [...(gotByKey.get(c.key) ?? []), c.payload]);
    }
    assert.deepEqual(gotByKey, expectedByKey);
    console.log(`kcat: produced ${RECORDS} records in ${produceMs} ms, consumed them in ${consumeMs} ms`);

    // The same with a format string: every byte of key and value.
    const formatted = kcat([
      '-b',
      broker(),
      '-C',
      '-e',
      '-o',
      'beginning',
      '-f',
      '%k:%s\n',
      '-t',
      'T',
    ]).stdout;
    assert.deepEqual(
      formatted
        .split('\n')
        .filter((l) => l !== '')
        .sort(),
      [...lines].sort(),
    );
  });

  it('kcat -Q answers offset queries: end offsets and by timestamp', () => {
    const md = JSON.parse(kcat(['-b', broker(), '-L', '-J', '-t', 'T']).stdout) as {
      topics: { topic: string; partitions: { partition: number }[] }[];
    };
    assert.equal(md.topics[0]!.partitions.length, 3);
    // -1: latest (the HW); the three partitions hold all records between them.
    const latest = kcat(['-b', broker(), '-Q', '-t', 'T:0:-1', '-t', 'T:1:-1', '-t', 'T:2:-1']).stdout;
    const ends = [...latest.matchAll(/T \[(\d)\] offset (\d+)/g)].map((m) => Number(m[2]));
    assert.equal(ends.length, 3);
    assert.equal(
      ends.reduce((a, b) => a + b, 0),
      RECORDS,
    );
    // -2: earliest, and timestamp 1 (before every record): the first offset, 0.
    const earliest = kcat(['-b', broker(), '-Q', '-t', 'T:0:-2', '-t', 'T:1:1']).stdout;
    assert.deepEqual(
      [...earliest.matchAll(/T \[(\d)\] offset (\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]).sort(),
      [
        [0, 0],
        [1, 0],
      ],
    );
  });

  it('kcat -z gzip|snappy|lz4|zstd writes batches compressed with that codec', () => {
    // librdkafka before 2.8 (Debian's is 2.0) compresses with gzip, snappy or lz4 only when the
    // broker lists Produce v0, as Kafka 4.x does (KAFKA-18659); otherwise it sends them uncompressed.
    for (const codec of ['gzip', 'snappy', 'lz4', 'zstd']) {
      const topic = `Z-${codec}`;
      const input = Array.from({ length: 50 }, (_, i) => `${codec} record ${i} ${'x'.repeat(100)}`).join(
        '\n',
      );
      kcat(['-b', broker(), '-P', '-t', topic, '-p', '0', '-z', codec, '-X', 'linger.ms=100'], `${input}\n`);
      const dump = spawnSync(
        process.execPath,
        [SKIFF, 'dump-log', '--files', path.join(dir, 'logs', `${topic}-0`, '00000000000000000000.log')],
        { encoding: 'utf8' },
      );
      assert.equal(dump.status, 0, dump.stderr);
      const codecs = [...dump.stdout.matchAll(/compresscodec: (\S+)/g)].map((m) => m[1]!.toLowerCase());
      assert.ok(codecs.length > 0, `no batch in ${topic}: ${dump.stdout}`);
      assert.deepEqual([...new Set(codecs)], [codec], `${topic}: ${dump.stdout}`);
    }
  });

  it('stops cleanly on SIGTERM and leaves the clean-shutdown marker', async () => {
    child.kill('SIGTERM');
    const code = await exited;
    assert.equal(code, 0, output);
    assert.ok(fs.existsSync(path.join(dir, 'logs', '.kafka_cleanshutdown')));
    assert.ok(fs.existsSync(path.join(dir, 'logs', 'skiff-metadata')));
  });
});

/**
 * A TCP proxy in front of the broker that cuts every connection once, after `cutAfterBytes` of
 * requests went through: requests already forwarded are appended, their responses are lost, and
 * the producer retries them on a new connection.
 */
/** `targetPort` is read at each connection: the proxy listens before the broker it fronts. */
async function cuttingProxy(targetPort: () => number, cutAfterBytes: number) {
  let forwarded = 0;
  let cuts = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: targetPort() });
    sockets.add(client);
    sockets.add(upstream);
    client.on('data', (c: Buffer) => {
      upstream.write(c);
      forwarded += c.length;
      if (cuts === 0 && forwarded > cutAfterBytes) {
        cuts++;
        // Let the broker read what was sent, then drop both sides before any response returns.
        setTimeout(() => {
          client.destroy();
          upstream.destroy();
        }, 20);
      }
    });
    upstream.on('data', (c: Buffer) => {
      if (!client.destroyed) client.write(c);
    });
    for (const s of [client, upstream]) {
      s.on('error', () => {});
      s.on('close', () => {
        client.destroy();
        upstream.destroy();
      });
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    get cuts() {
      return cuts;
    },
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

describe('kcat idempotent producer through a connection that drops', () => {
  let b: TestBroker;
  let proxy: Awaited<ReturnType<typeof cuttingProxy>>;
  before(async () => {
    requireKcat();
    // The broker advertises the proxy's port, so every connection kcat makes goes through it.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-kcat-idem-'));
    proxy = await cuttingProxy(() => b.port, 400_000);
    b = await startBroker(
      { 'num.partitions': '1', 'advertised.listeners': `PLAINTEXT://127.0.0.1:${proxy.port}` },
      dir,
    );
    assert.ok(seededRandomBytes);
  });
  after(async () => {
    proxy?.close();
    await b?.stop();
    if (b) fs.rmSync(b.dir, { recursive: true, force: true });
  });

  it('writes every record exactly once', async () => {
    const n = 20_000;
    const lines = Array.from({ length: n }, (_, i) => `k${i % 100}:${i}-${'x'.repeat(80)}`);
    // Bootstrap straight to the broker: librdkafka then has two broker handles, and kcat does not
    // give up when the cut takes down the one it produces through ("all brokers down").
    const r = await kcatAsync(
      [
        '-b',
        `127.0.0.1:${b.port}`,
        '-P',
        '-K:',
        '-t',
        'idem',
        '-X',
        'enable.idempotence=true',
        '-X',
        'batch.size=65536',
        '-X',
        'linger.ms=2',
      ],
      `${lines.join('\n')}\n`,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.equal(proxy.cuts, 1, 'the connection was cut once during the produce');
    const log = b.broker.replicaManager.getPartition('idem', 0)!.log;
    assert.equal(log.logEndOffset, BigInt(n), 'no duplicates and nothing lost');
    const dups = b.broker.replicaManager.getPartition('idem', 0)!.duplicateBatches;
    console.log(`kcat idempotent: ${dups} retried batches were answered as duplicates`);
    const out = (
      await kcatAsync([
        '-b',
        `127.0.0.1:${proxy.port}`,
        '-C',
        '-e',
        '-o',
        'beginning',
        '-f',
        '%k:%s\n',
        '-t',
        'idem',
      ])
    ).stdout;
    assert.deepEqual(
      out.split('\n').filter((l) => l !== ''),
      lines,
    );
  });
});
