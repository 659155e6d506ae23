import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { readBatchHeader } from '../../src/protocol/records/batch.js';
import { Log } from '../../src/storage/log.js';
import { type LogConfig, logConfig } from '../../src/storage/log-config.js';
import { makeBatch, tempDir, testContext } from './helpers.js';

/**
 * Acceptance tests of issue 3: recovery leaves exactly the longest valid prefix, with no byte
 * beyond it, and indexes equal to a full scan's — after a crash and after a clean shutdown.
 */

const INTERVAL = 300;

interface WrittenBatch {
  position: number;
  size: number;
  baseOffset: bigint;
  lastOffset: bigint;
  maxTimestamp: bigint;
}

interface Pristine {
  dir: string;
  /** Per segment file name: its batches in order. */
  segments: Map<string, WrittenBatch[]>;
  files: Map<string, Buffer>;
}

function config(segmentBytes: number): LogConfig {
  return logConfig({ indexIntervalBytes: INTERVAL, segmentIndexBytes: 4096, segmentBytes });
}

function open(dir: string, clean: boolean, segmentBytes: number, ctx = testContext()): Log {
  return Log.open({
    dir,
    topic: 't',
    partition: 0,
    config: config(segmentBytes),
    ctx,
    hadCleanShutdown: clean,
  });
}

/** Writes `sizes.length` batches with varying sizes and non-monotonic timestamps, then stops. */
function writePristine(root: string, seeds: number[], segmentBytes: number, clean: boolean): Pristine {
  const dir = path.join(root, 'pristine', 't-0');
  const log = open(dir, true, segmentBytes);
  for (const s of seeds) {
    const b = makeBatch({
      count: 1 + (s % 4),
      valueBytes: (s * 37) % 400,
      timestamp: 1_700_000_000_000n + BigInt((s * 7919) % 5000),
      seed: s,
    });
    log.appendAsLeader(b, 1 + Math.floor(s / 50));
  }
  if (clean) log.close();
  else log.local.abandon(); // kill -9: indexes stay preallocated, nothing trimmed
  const files = new Map<string, Buffer>();
  const segments = new Map<string, WrittenBatch[]>();
  for (const f of fs.readdirSync(dir)) {
    const bytes = fs.readFileSync(path.join(dir, f));
    files.set(f, bytes);
    if (!f.endsWith('.log')) continue;
    const batches: WrittenBatch[] = [];
    for (let pos = 0; pos < bytes.length; ) {
      const h = readBatchHeader(bytes, pos);
      const size = h.batchLength + 12;
      batches.push({
        position: pos,
        size,
        baseOffset: h.baseOffset,
        lastOffset: h.baseOffset + BigInt(h.lastOffsetDelta),
        maxTimestamp: h.maxTimestamp,
      });
      pos += size;
    }
    segments.set(f, batches);
  }
  return { dir, segments, files };
}

/** Kafka's index rule applied to a list of batches: the entries a full scan must produce. */
function expectedIndexes(batches: WrittenBatch[]): {
  offsets: [bigint, number][];
  times: [bigint, bigint][];
} {
  const offsets: [bigint, number][] = [];
  const times: [bigint, bigint][] = [];
  let lastIndexed = 0;
  let max: [bigint, bigint] = [-1n, -1n];
  const addTime = (): void => {
    if (max[0] >= 0n && (times.length === 0 || max[0] > times[times.length - 1]![0])) times.push([...max]);
  };
  for (const b of batches) {
    if (b.maxTimestamp > max[0]) max = [b.maxTimestamp, b.lastOffset];
    if (b.position - lastIndexed > INTERVAL) {
      offsets.push([b.lastOffset, b.position]);
      addTime();
      lastIndexed = b.position;
    }
  }
  addTime();
  return { offsets, times };
}

function indexEntries(file: string, base: bigint): [bigint, number][] {
  const raw = fs.readFileSync(file);
  const out: [bigint, number][] = [];
  for (let i = 0; i + 8 <= raw.length; i += 8)
    out.push([base + BigInt(raw.readInt32BE(i)), raw.readInt32BE(i + 4)]);
  return out;
}

function timeEntries(file: string, base: bigint): [bigint, bigint][] {
  const raw = fs.readFileSync(file);
  const out: [bigint, bigint][] = [];
  for (let i = 0; i + 12 <= raw.length; i += 12)
    out.push([raw.readBigInt64BE(i), base + BigInt(raw.readInt32BE(i + 8))]);
  return out;
}

/** Bytes of a batch that only an offset-order check could notice: baseOffset and partitionLeaderEpoch. */
function outsideChecks(batches: WrittenBatch[], pos: number): boolean {
  return batches.some(
    (b) => pos >= b.position && (pos < b.position + 8 || (pos >= b.position + 12 && pos < b.position + 16)),
  );
}

interface Damage {
  segment: number;
  cutFraction: number;
  flips: { fraction: number; mask: number }[];
}

/**
 * Applies `damage` to a copy of the pristine log, opens it, and checks the outcome against the
 * longest undamaged prefix of the written batches.
 */
function checkRecovery(
  p: Pristine,
  root: string,
  damage: Damage,
  clean: boolean,
  segmentBytes: number,
  run: number,
): void {
  const dir = path.join(root, `run-${run}`, 't-0');
  fs.mkdirSync(dir, { recursive: true });
  for (const [f, bytes] of p.files) fs.writeFileSync(path.join(dir, f), bytes);
  const logNames = [...p.segments.keys()].sort();
  const target = logNames[damage.segment % logNames.length]!;
  const batches = p.segments.get(target)!;
  const original = p.files.get(target)!;
  const fileEnd = original.length;
  // After a clean shutdown only the tail is validated: damage goes after the last index entry.
  const base = BigInt(target.slice(0, 20));
  const lastEntry = indexEntries(path.join(dir, `${target.slice(0, 20)}.index`), base).at(-1);
  const from = clean && lastEntry ? lastEntry[1] : 0;
  if (clean && target !== logNames[logNames.length - 1]) return;
  const cut = from + Math.floor(damage.cutFraction * (fileEnd - from + 1));
  const damaged = Buffer.from(original.subarray(0, Math.min(cut, fileEnd)));
  for (const f of damage.flips) {
    const pos = from + Math.floor(f.fraction * (damaged.length - from));
    if (pos >= damaged.length || outsideChecks(batches, pos)) continue;
    damaged[pos]! ^= f.mask;
  }
  // Two flips of one byte can cancel out: what counts is where the bytes differ.
  let firstDamaged = damaged.length;
  for (let i = 0; i < damaged.length; i++) {
    if (damaged[i] !== original[i]) {
      firstDamaged = i;
      break;
    }
  }
  fs.writeFileSync(path.join(dir, target), damaged);
  const valid = batches.filter((b) => b.position + b.size <= firstDamaged);
  const validEnd = valid.length ? valid[valid.length - 1]!.position + valid[valid.length - 1]!.size : 0;

  const ctx = testContext();
  const log = open(dir, clean, segmentBytes, ctx);
  const laterThanTarget = logNames.filter((n) => n > target);
  const damagedAtAll = validEnd < fileEnd;
  const expectedLeo = valid.length
    ? valid[valid.length - 1]!.lastOffset + 1n
    : damagedAtAll || laterThanTarget.length === 0
      ? base
      : log.logEndOffset;
  if (damagedAtAll) {
    assert.equal(log.logEndOffset, expectedLeo, `LEO (cut ${cut}, first damage ${firstDamaged})`);
    for (const n of laterThanTarget) assert.ok(!fs.existsSync(path.join(dir, n)), `${n} should be deleted`);
  }
  assert.equal(fs.statSync(path.join(dir, target)).size, validEnd, 'no byte beyond the valid prefix');
  assert.deepEqual(fs.readFileSync(path.join(dir, target)), original.subarray(0, validEnd));
  log.close();
  const stem = path.join(dir, target.slice(0, 20));
  const expected = expectedIndexes(valid);
  assert.deepEqual(indexEntries(`${stem}.index`, base), expected.offsets, 'offset index = full scan');
  assert.deepEqual(timeEntries(`${stem}.timeindex`, base), expected.times, 'time index = full scan');
  if (validEnd < damaged.length) {
    const cutText = `truncated ${damaged.length - validEnd} bytes at position ${validEnd}`;
    assert.ok(
      ctx.logger.lines.some(
        (l) =>
          l.includes(`recovered segment ${base}`) && l.includes(cutText) && l.includes(`LEO ${expectedLeo}`),
      ),
      ctx.logger.lines.join('\n'),
    );
  }
  fs.rmSync(path.dirname(dir), { recursive: true, force: true });
}

const damageArb = fc.record({
  segment: fc.nat(),
  cutFraction: fc.oneof(fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true })),
  flips: fc.array(
    fc.record({
      fraction: fc.double({ min: 0, max: 0.9999, noNaN: true }),
      mask: fc.integer({ min: 1, max: 255 }),
    }),
    {
      maxLength: 3,
    },
  ),
});

test('crash recovery keeps exactly the longest valid prefix (property, one segment)', () => {
  const { dir: root, cleanup } = tempDir();
  try {
    const p = writePristine(
      root,
      Array.from({ length: 60 }, (_, i) => i * 13 + 1),
      1 << 30,
      false,
    );
    let run = 0;
    fc.assert(
      fc.property(damageArb, (d) => checkRecovery(p, root, d, false, 1 << 30, run++)),
      { numRuns: 150 },
    );
  } finally {
    cleanup();
  }
});

test('crash recovery across segments drops every segment after the damage (property)', () => {
  const { dir: root, cleanup } = tempDir();
  try {
    const p = writePristine(
      root,
      Array.from({ length: 60 }, (_, i) => i * 29 + 3),
      4000,
      false,
    );
    assert.ok(p.segments.size >= 4);
    let run = 0;
    fc.assert(
      fc.property(damageArb, (d) => checkRecovery(p, root, d, false, 4000, run++)),
      { numRuns: 80 },
    );
  } finally {
    cleanup();
  }
});

test('after a clean shutdown the active segment tail is validated and torn bytes removed (property)', () => {
  const { dir: root, cleanup } = tempDir();
  try {
    const p = writePristine(
      root,
      Array.from({ length: 60 }, (_, i) => i * 17 + 5),
      1 << 30,
      true,
    );
    let run = 0;
    fc.assert(
      fc.property(damageArb, (d) => checkRecovery(p, root, d, true, 1 << 30, run++)),
      { numRuns: 150 },
    );
  } finally {
    cleanup();
  }
});

test('seed 14.3: last 500 bytes cut, indexes emptied, clean shutdown → LEO back to the torn batch', () => {
  const { dir: root, cleanup } = tempDir();
  try {
    const dir = path.join(root, 't-0');
    const log = open(dir, true, 1 << 30);
    for (let i = 0; i < 200; i++) log.appendAsLeader(makeBatch({ count: 5, valueBytes: 100, seed: i }), 7);
    log.close();
    const logFile = path.join(dir, '00000000000000000000.log');
    const bytes = fs.readFileSync(logFile);
    const cutAt = bytes.length - 500;
    // find the batch the cut lands in
    let pos = 0;
    let tornBase = 0n;
    while (pos < bytes.length) {
      const h = readBatchHeader(bytes, pos);
      if (pos + h.batchLength + 12 > cutAt) {
        tornBase = h.baseOffset;
        break;
      }
      pos += h.batchLength + 12;
    }
    fs.truncateSync(logFile, cutAt);
    fs.truncateSync(path.join(dir, '00000000000000000000.index'), 0);
    fs.truncateSync(path.join(dir, '00000000000000000000.timeindex'), 0);
    const ctx = testContext();
    const again = open(dir, true, 1 << 30, ctx);
    assert.equal(again.logEndOffset, tornBase);
    assert.equal(fs.statSync(logFile).size, pos, 'file ends at the last valid batch');
    const line = ctx.logger.lines.find((l) => l.includes('recovered segment 0'));
    assert.ok(line, ctx.logger.lines.join('\n'));
    assert.match(line, new RegExp(`truncated ${cutAt - pos} bytes at position ${pos}.*LEO ${tornBase}`));
    // appends continue right after the valid prefix, no torn bytes in between
    again.appendAsLeader(makeBatch({ count: 1 }), 8);
    const r = again.read(tornBase, 1 << 20, 'log-end', false);
    assert.equal(readBatchHeader(r.records, 0).baseOffset, tornBase);
    assert.equal(again.leaderEpochCache.entries().at(-1)?.startOffset, tornBase);
    again.close();
  } finally {
    cleanup();
  }
});

test('seed 14.3 end to end: after the torn restart and a refetch, the follower’s files equal the leader’s', () => {
  const { dir: root, cleanup } = tempDir();
  try {
    const leader = open(path.join(root, 'leader', 't-1'), true, 1 << 30);
    const followerDir = path.join(root, 'follower', 't-1');
    let follower = open(followerDir, true, 1 << 30);
    const replicate = (): void => {
      while (follower.logEndOffset < leader.logEndOffset) {
        const r = leader.read(follower.logEndOffset, 1 << 20, 'log-end', false);
        follower.appendAsFollower(Buffer.from(r.records));
      }
    };
    for (let i = 0; i < 40; i++) leader.appendAsLeader(makeBatch({ count: 31, valueBytes: 500, seed: i }), 5);
    replicate();
    follower.close();
    // the seed: the follower's last batch loses its last 500 bytes, its indexes are emptied, and
    // the broker restarts with the clean-shutdown marker still present
    const seg = path.join(followerDir, '00000000000000000000.log');
    fs.truncateSync(seg, fs.statSync(seg).size - 500);
    fs.truncateSync(path.join(followerDir, '00000000000000000000.index'), 0);
    fs.truncateSync(path.join(followerDir, '00000000000000000000.timeindex'), 0);
    follower = open(followerDir, true, 1 << 30);
    assert.equal(follower.logEndOffset, 39n * 31n);
    replicate();
    leader.close();
    follower.close();
    const leaderBytes = fs.readFileSync(path.join(root, 'leader', 't-1', '00000000000000000000.log'));
    const followerBytes = fs.readFileSync(seg);
    assert.equal(followerBytes.length, leaderBytes.length, 'replica sizes agree (Kafka: 15,712 bytes apart)');
    assert.ok(followerBytes.equals(leaderBytes));
    for (const f of [
      '00000000000000000000.index',
      '00000000000000000000.timeindex',
      'leader-epoch-checkpoint',
    ]) {
      assert.ok(
        fs
          .readFileSync(path.join(followerDir, f))
          .equals(fs.readFileSync(path.join(root, 'leader', 't-1', f))),
        f,
      );
    }
  } finally {
    cleanup();
  }
});
