/**
 * replica-verification on a compacted RF 3 topic, on `skiff up --brokers 3`: each replica compacts
 * its own log, and here at different times — broker 1 cleans after the first records and again
 * after more (its tombstones gone by then, delete.retention.ms 0), broker 2 once after all of them,
 * broker 3 never (a per-broker log.cleaner.min.compaction.lag.ms holds each back) — so their files
 * differ, and the tool reports no divergence. A record value changed in broker 2's cleaned files
 * is still reported.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  adminFor,
  createLedBy1,
  describe1,
  kcat,
  removeDataDir,
  runSkiff,
  type SkiffProcess,
  startTestCluster,
  waitUntil,
} from './helpers.js';

const TOPIC = 'kv';

/** Whether the byte at `at` of a .log file is in a batch that lost records to the cleaner. */
function inCompactedBatch(log: Buffer, at: number): boolean {
  for (let pos = 0; pos + 61 <= log.length; ) {
    const size = 12 + log.readInt32BE(pos + 8);
    if (at < pos + size) return log.readInt32BE(pos + 57) < log.readInt32BE(pos + 23) + 1;
    pos += size;
  }
  return false;
}
const KEYS = 40;
const HOLD_MS = 86_400_000;

describe('replica-verification on a compacted topic, replicas cleaned at different times', () => {
  let dir: string;
  let bootstrap: string;
  let up: SkiffProcess | null = null;
  const skiff = (...args: string[]) => runSkiff(args, '', 60_000);
  const partitionDir = (broker: number) => path.join(dir, `broker-${broker}`, `${TOPIC}-0`);
  const logFiles = (broker: number) =>
    fs
      .readdirSync(partitionDir(broker))
      .filter((f) => f.endsWith('.log'))
      .sort()
      .map((f) => path.join(partitionDir(broker), f));
  const logBytes = (broker: number) => logFiles(broker).reduce((n, f) => n + fs.statSync(f).size, 0);
  /** The broker's cleaner checkpoint for the partition (0 before its first cleaning). */
  const cleanedTo = (broker: number): number => {
    const file = path.join(dir, `broker-${broker}`, 'cleaner-offset-checkpoint');
    if (!fs.existsSync(file)) return 0;
    const line = fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${TOPIC} 0 `));
    return line === undefined ? 0 : Number(line.split(' ')[2]);
  };
  const holdCleaner = async (broker: number, lagMs: number) => {
    const r = await skiff(
      'configs',
      '--bootstrap-server',
      bootstrap,
      '--entity-type',
      'brokers',
      '--entity-name',
      String(broker),
      '--alter',
      '--add-config',
      `log.cleaner.min.compaction.lag.ms=${lagMs}`,
    );
    assert.equal(r.status, 0, r.stderr);
  };
  /** The lines written so far (key:value, an empty value a tombstone), by offset. */
  const written: string[] = [];
  const produce = async (lines: readonly string[]) => {
    const r = await kcat(
      [
        '-P',
        '-b',
        bootstrap,
        '-t',
        TOPIC,
        '-p',
        '0',
        '-K:',
        '-Z',
        '-z',
        'none',
        '-X',
        'acks=all',
        '-X',
        'batch.num.messages=30',
      ],
      `${lines.join('\n')}\n`,
    );
    assert.equal(r.status, 0, r.stderr);
    written.push(...lines);
  };
  const sameLogEnd = () =>
    waitUntil(
      'every replica holding every record',
      async () => {
        const { admin, close } = adminFor(bootstrap);
        try {
          const p = (await describe1(admin, TOPIC)).partitions[0]!;
          if (p.isr.length !== 3) return undefined;
        } finally {
          close();
        }
        // The active segment is never cleaned: the same name and size on every replica.
        const ends = [1, 2, 3].map((b) => {
          const f = logFiles(b).at(-1)!;
          return `${path.basename(f)} ${fs.statSync(f).size}`;
        });
        return new Set(ends).size === 1 ? true : undefined;
      },
      20_000,
    );
  const verify = () =>
    skiff('replica-verification', '--bootstrap-server', bootstrap, '--topics-include', TOPIC);

  before(async () => {
    let port: number;
    ({ dir, port, up } = await startTestCluster('skiff-verify-compacted-', [
      'log.cleaner.backoff.ms=100',
      // No broker cleans until told to (per broker, below).
      `log.cleaner.min.compaction.lag.ms=${HOLD_MS}`,
    ]));
    bootstrap = `127.0.0.1:${port}`;
    const { admin, close } = adminFor(bootstrap);
    try {
      await createLedBy1(
        admin,
        TOPIC,
        new Map([
          ['cleanup.policy', 'compact'],
          ['segment.bytes', '4096'],
          ['delete.retention.ms', '0'],
          ['min.insync.replicas', '2'],
        ]),
      );
    } finally {
      close();
    }
  });

  after(async () => {
    await up?.stop(15_000);
    removeDataDir(dir);
  });

  it('no divergence is reported although each replica compacted differently', async () => {
    // Keyed values, tombstones for 5 keys, then values of other keys so they are not in the
    // active segment.
    await produce(Array.from({ length: 800 }, (_, i) => `key-${i % KEYS}:value-${i}`));
    await produce(Array.from({ length: 5 }, (_, k) => `key-${k}:`));
    await produce(Array.from({ length: 200 }, (_, i) => `other-${i}:value-${written.length + i}`));
    await sameLogEnd();
    await holdCleaner(1, 0);
    await waitUntil('broker 1 cleaned', async () => (cleanedTo(1) > 0 ? true : undefined), 20_000);
    const first = cleanedTo(1);

    await produce(Array.from({ length: 600 }, (_, i) => `key-${(i * 7) % KEYS}:value-${written.length + i}`));
    await produce(Array.from({ length: 200 }, (_, i) => `more-${i}:value-${written.length + i}`));
    await sameLogEnd();
    await holdCleaner(2, 0);
    await waitUntil(
      'broker 1 cleaned again and broker 2 once',
      async () => (cleanedTo(1) > first && cleanedTo(2) > first ? true : undefined),
      20_000,
    );
    const [a, b, c] = [1, 2, 3].map(logBytes);
    assert.ok(a! < c! && b! < c!, `log bytes: ${a}, ${b}, ${c}`);

    const r = await verify();
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.match(
      lines[1]!,
      /: compacted topics, each replica compacting its own log: kv; batches alike on every replica compare byte for byte; /,
    );
    assert.match(
      lines.at(-1)!,
      /verification completed: the replicas of all 1 partitions agree up to their high watermark at start$/,
    );
  });

  it('a record value changed in a cleaned segment of one replica is reported', async () => {
    // The latest record of a key (every replica holds it) in a batch broker 2's cleaner rewrote.
    const latest = new Map<string, number>();
    for (const [i, l] of written.entries()) latest.set(l.slice(0, l.indexOf(':')), i);
    const candidates = [...latest.values()].filter((o) => o < cleanedTo(2) && !written[o]!.endsWith(':'));
    const stop = await skiff('cluster', 'stop', '2', '--data-dir', dir);
    assert.equal(stop.status, 0, stop.stderr);
    let victim: { file: string; bytes: Buffer; at: number; offset: number } | null = null;
    for (const offset of candidates) {
      const needle = Buffer.concat([Buffer.from(`value-${offset}`), Buffer.from([0])]);
      for (const file of logFiles(2)) {
        const bytes = fs.readFileSync(file);
        const at = bytes.indexOf(needle);
        if (at >= 0 && inCompactedBatch(bytes, at)) victim = { file, bytes, at, offset };
      }
    }
    assert.ok(victim, 'no latest record in a batch broker 2 compacted');
    victim.bytes[victim.at] = 'V'.charCodeAt(0);
    fs.writeFileSync(victim.file, victim.bytes);
    const start = await skiff('cluster', 'start', '2', '--data-dir', dir);
    assert.equal(start.status, 0, start.stderr);
    await sameLogEnd();

    const r = await verify();
    assert.equal(r.status, 1, r.stdout + r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.ok(
      lines.some((l) =>
        l.endsWith(
          `partition ${TOPIC}-0 diverges first at offset ${victim!.offset}: the record at offset ${victim!.offset} (key "${written[victim!.offset]!.split(':')[0]}") has a different value on replica 1 than on replica 2`,
        ),
      ),
      r.stdout,
    );
    assert.match(lines.at(-1)!, /verification completed: 1 of 1 partitions have replicas that diverge$/);
  });
});
