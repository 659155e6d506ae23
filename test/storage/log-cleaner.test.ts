import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { MemoryLogger } from '../../src/common/logger.js';
import { decodeRecords, encodeBatch } from '../../src/protocol/records/codec.js';
import { batchesIn } from '../../src/protocol/records/validate.js';
import { Cleaner, groupSegmentsBySize } from '../../src/storage/cleaner.js';
import { type FileHandle, NodeFileSystem } from '../../src/storage/fs.js';
import { Log } from '../../src/storage/log.js';
import {
  CLEANER_OFFSET_CHECKPOINT,
  type CleanerConfig,
  DEFAULT_CLEANER_CONFIG,
  LogCleaner,
} from '../../src/storage/log-cleaner.js';
import { type LogConfig, logConfig } from '../../src/storage/log-config.js';
import { OffsetMap } from '../../src/storage/offset-map.js';
import { cleanOnce, type TestContext, tempDir, testContext } from './helpers.js';

const COMPACT: Partial<LogConfig> = {
  compact: true,
  delete: false,
  segmentBytes: 4096,
  minCleanableDirtyRatio: 0.5,
};

function openLog(dir: string, ctx: TestContext, config: Partial<LogConfig>, clean = true): Log {
  return Log.open({
    dir: path.join(dir, 'c-0'),
    topic: 'c',
    partition: 0,
    config: logConfig(config),
    ctx,
    hadCleanShutdown: clean,
  });
}

/** Appends `count` records `k<i % keys>` → `v<i>` (null values where `tombstone` says), 10 per batch. */
function produce(
  log: Log,
  from: number,
  count: number,
  keys: number,
  tombstone: (i: number) => boolean = () => false,
  prefix = 'k',
): void {
  for (let i = from; i < from + count; i += 10) {
    const n = Math.min(10, from + count - i);
    log.appendAsLeader(
      encodeBatch({
        baseTimestamp: 1_700_000_000_000n,
        records: Array.from({ length: n }, (_, j) => ({
          key: Buffer.from(`${prefix}${(i + j) % keys}`),
          value: tombstone(i + j) ? null : Buffer.from(`v${i + j}`),
          timestampDelta: BigInt(j),
        })),
      }),
      0,
    );
  }
  log.updateHighWatermark(log.logEndOffset);
}

interface Read {
  offset: bigint;
  key: string;
  value: string | null;
  active: boolean;
}

function readAll(log: Log): Read[] {
  const out: Read[] = [];
  const activeBase = log.local.segments.active().baseOffset;
  for (const s of log.local.segments.values()) {
    const buf = Buffer.alloc(s.size);
    s.reader(s.size).view(0, s.size).copy(buf);
    for (const e of batchesIn(buf)) {
      const d = decodeRecords(buf.subarray(e.pos, e.pos + e.size), { decompress: true });
      for (const r of d.records) {
        out.push({
          offset: d.header.baseOffset + BigInt(r.offsetDelta),
          key: r.key!.toString(),
          value: r.value === null ? null : r.value.toString(),
          active: s.baseOffset === activeBase,
        });
      }
    }
  }
  return out;
}

/** The latest value written per key, for the records `produce` wrote. */
function latest(
  total: number,
  keys: number,
  tombstone: (i: number) => boolean = () => false,
): Map<string, string | null> {
  const m = new Map<string, string | null>();
  for (let i = 0; i < total; i++) m.set(`k${i % keys}`, tombstone(i) ? null : `v${i}`);
  return m;
}

test('offset map: latest offset per key, Kafka probe sequence, clear', () => {
  const map = new OffsetMap(24 * 100);
  assert.equal(map.slots, 100);
  assert.equal(map.memoryBytes, 2400);
  const key = (k: string): [Buffer, number, number] => {
    // The key inside a larger buffer, as the cleaner hashes it from its read buffer.
    const b = Buffer.from(`xx${k}yy`);
    return [b, 2, 2 + k.length];
  };
  for (let i = 0; i < 90; i++) map.put(...key(`k${i % 30}`), i);
  assert.equal(map.size, 30);
  assert.equal(map.get(...key('k5')), 65);
  assert.equal(map.get(...key('nope')), -1);
  assert.equal(map.latestOffset, 89);
  // 30 keys in 100 slots probe a little: every one is still found.
  for (let k = 0; k < 30; k++) assert.equal(map.get(...key(`k${k}`)), 60 + k);
  // Filled to the last slot, the probe sequence still finds a place for every distinct key.
  const full = new OffsetMap(24 * 7);
  for (let i = 0; i < 7; i++) full.put(...key(`f${i}`), i);
  assert.equal(full.size, 7);
  for (let i = 0; i < 7; i++) assert.equal(full.get(...key(`f${i}`)), i);
  map.clear();
  assert.equal(map.size, 0);
  assert.equal(map.get(...key('k5')), -1);
  assert.equal(map.latestOffset, -1);
  // Cleared for at most 20 keys, it probes 40 slots: 20 keys all fit and are found.
  map.clear(20);
  for (let i = 0; i < 20; i++) map.put(...key(`s${i}`), i);
  for (let i = 0; i < 20; i++) assert.equal(map.get(...key(`s${i}`)), i);
  assert.equal(map.get(...key('k5')), -1);
});

test('cleaning keeps the latest record per key outside the active segment; offsets as written', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    const log = openLog(dir, ctx, COMPACT);
    const check = (total: number): Read[] => {
      const records = readAll(log);
      const outside = records.filter((r) => !r.active);
      assert.equal(
        new Set(outside.map((r) => r.key)).size,
        outside.length,
        'one record per key outside the active segment',
      );
      // The latest value of every key is still there, at its original offset (v<i> is at offset i).
      const byKey = new Map<string, Read>();
      for (const r of records) byKey.set(r.key, r);
      for (const [k, v] of latest(total, 100)) assert.equal(byKey.get(k)?.value, v, k);
      for (const r of records) assert.equal(r.value, `v${r.offset}`);
      for (let i = 1; i < records.length; i++) assert.ok(records[i]!.offset > records[i - 1]!.offset);
      assert.equal(log.logEndOffset, BigInt(total));
      return records;
    };
    produce(log, 0, 20_000, 100);
    const before = log.local.segments.values().length;
    const first = cleanOnce(log, ctx, dir);
    assert.equal(first.history.length, 1);
    check(20_000);
    // The first cleaning keeps one cleaned segment per segment (grouping goes by the sizes before
    // cleaning); the next one groups the small cleaned segments.
    const firstEnd = log.local.segments.active().baseOffset;
    assert.equal(log.local.segments.values().length, before);
    produce(log, 20_000, 20_000, 100);
    cleanOnce(log, ctx, dir);
    const records = check(40_000);
    assert.ok(
      log.local.segments.range(0n, firstEnd).length < before / 4,
      'small cleaned segments were grouped',
    );
    // cleaner-offset-checkpoint in Kafka's format: version, count, "topic partition offset".
    const checkpoint = fs.readFileSync(path.join(dir, CLEANER_OFFSET_CHECKPOINT), 'utf8');
    assert.match(checkpoint, /^0\n1\nc 0 \d+\n$/);
    assert.ok(ctx.logger.lines.some((l) => /Log cleaner thread 0 cleaned log .*size reduction/.test(l)));
    // Nothing is dirty enough for another pass.
    assert.equal(cleanOnce(log, ctx, dir).history.length, 0);
    log.close();
    // Reopened after a crash (full recovery), the cleaned log reads the same.
    const reopened = openLog(dir, ctx, COMPACT, false);
    assert.deepEqual(readAll(reopened), records);
    reopened.close();
  } finally {
    cleanup();
  }
});

test('compressed batches are walked decompressed and rewritten with their codec', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    const log = openLog(dir, ctx, COMPACT);
    const codecs = [0, 1, 2, 3, 4] as const;
    for (let i = 0; i < 3000; i += 10) {
      log.appendAsLeader(
        encodeBatch({
          compression: codecs[(i / 10) % codecs.length],
          baseTimestamp: 1_700_000_000_000n,
          records: Array.from({ length: 10 }, (_, j) => ({
            key: Buffer.from(`k${(i + j) % 40}`),
            value: Buffer.from(`v${i + j}`.padEnd(100, '.')),
          })),
        }),
        0,
      );
    }
    log.updateHighWatermark(log.logEndOffset);
    cleanOnce(log, ctx, dir);
    const records = readAll(log);
    const outside = records.filter((r) => !r.active);
    assert.equal(new Set(outside.map((r) => r.key)).size, outside.length);
    const byKey = new Map<string, string | null>();
    for (const r of records) byKey.set(r.key, r.value);
    for (let k = 0; k < 40; k++) {
      const i = 2960 + ((k - (2960 % 40) + 40) % 40);
      assert.equal(byKey.get(`k${k}`), `v${i}`.padEnd(100, '.'));
    }
    for (const r of records) assert.equal(r.value, `v${r.offset}`.padEnd(100, '.'));
    // A rewritten batch keeps its codec (the batch at base offset i was written with codec i/10 % 5).
    let compressed = 0;
    for (const s of log.local.segments.values()) {
      const buf = Buffer.alloc(s.size);
      s.reader(s.size).view(0, s.size).copy(buf);
      for (const e of batchesIn(buf)) {
        const codec = buf.readInt16BE(e.pos + 21) & 7;
        assert.equal(codec, codecs[Number(buf.readBigInt64BE(e.pos) / 10n) % codecs.length]);
        if (codec !== 0) compressed++;
      }
    }
    assert.ok(compressed > 0);
    log.close();
  } finally {
    cleanup();
  }
});

test('tombstones stay until delete.retention.ms after their batch was cleaned, then go', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    const log = openLog(dir, ctx, { ...COMPACT, deleteRetentionMs: 60_000 });
    const dead = (i: number) => i >= 1000 && i < 1010; // the last write of k0..k9 is a tombstone
    produce(log, 0, 1010, 10, dead);
    produce(log, 1010, 990, 1000, () => false, 'other');
    const tombstones = () => readAll(log).filter((r) => r.value === null && !r.active).length;
    cleanOnce(log, ctx, dir);
    assert.equal(tombstones(), 10, 'the tombstones are kept at first');
    assert.equal(readAll(log).filter((r) => r.key === 'k3').length, 1);
    ctx.clock.advance(30_000);
    produce(log, 2000, 4000, 1000, () => false, 'other');
    cleanOnce(log, ctx, dir);
    assert.equal(tombstones(), 10, 'still kept before delete.retention.ms');
    ctx.clock.advance(31_000);
    produce(log, 6000, 8000, 1000, () => false, 'other');
    cleanOnce(log, ctx, dir);
    assert.equal(tombstones(), 0, 'gone after delete.retention.ms');
    assert.equal(readAll(log).filter((r) => r.key === 'k3').length, 0);
    log.close();
  } finally {
    cleanup();
  }
});

test('min.compaction.lag.ms keeps young segments dirty; log.cleaner.enable=false cleans nothing', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    const log = openLog(dir, ctx, { ...COMPACT, minCompactionLagMs: 10 * 60_000 });
    produce(log, 0, 5000, 10);
    const size = log.size;
    const off = new LogCleaner(
      () => ({ ...DEFAULT_CLEANER_CONFIG, enable: false }),
      ctx,
      () => [{ log, logDir: dir }],
    );
    off.startup();
    ctx.scheduler.runDue();
    assert.equal(log.size, size);
    // Records are stamped 1_700_000_000_000 (+ deltas), the clock's start: young.
    assert.equal(cleanOnce(log, ctx, dir).history.length, 0);
    assert.equal(log.size, size);
    ctx.clock.advance(11 * 60_000);
    assert.equal(cleanOnce(log, ctx, dir).history.length, 1);
    assert.ok(log.size < size);
    log.close();
  } finally {
    cleanup();
  }
});

test('the offset map bounds a cleaning: a small map cleans part of the dirty section per pass', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    const log = openLog(dir, ctx, COMPACT);
    produce(log, 0, 6000, 3000);
    const map = new OffsetMap(24 * 1000);
    const cleaner = new Cleaner(0, map, 64 * 1024, 0.9);
    const offsets = { firstDirtyOffset: 0n, firstUncleanableOffset: log.local.segments.active().baseOffset };
    const ltc = {
      log,
      ...offsets,
      cleanBytes: 0,
      cleanableBytes: log.size,
      totalBytes: log.size,
      cleanableRatio: 1,
      needCompactionNow: false,
    };
    const steps = cleaner.clean(ltc, () => ctx.clock.nowMs());
    let r = steps.next();
    while (!r.done) r = steps.next();
    assert.ok(map.size <= 900, `map holds ${map.size} entries`);
    assert.ok(r.value.endOffset < offsets.firstUncleanableOffset, 'stopped where the map filled');
    log.close();
  } finally {
    cleanup();
  }
});

test('groupSegmentsBySize groups while log and index sizes fit', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    const log = openLog(dir, ctx, COMPACT);
    produce(log, 0, 3000, 3000);
    const segments = log.local.segments.values().slice(0, -1);
    const groups = groupSegmentsBySize(segments, 4096 * 3, 10 * 1024 * 1024, log.logEndOffset);
    for (const g of groups) assert.ok(g.reduce((n, s) => n + s.size, 0) <= 4096 * 3);
    assert.deepEqual(groups.flat(), segments);
    assert.ok(groups.length < segments.length);
    log.close();
  } finally {
    cleanup();
  }
});

/**
 * A file system that "crashes" at a chosen operation: that operation and every later change
 * throw, so nothing after the crash point reaches the disk (no cleanup either), as with a kill.
 */
class CrashingFileSystem extends NodeFileSystem {
  crashed = false;
  constructor(private readonly crashAt: (op: string, a: string, b?: string) => boolean) {
    super();
  }
  private check(op: string, a: string, b?: string): void {
    if (!this.crashed && this.crashAt(op, a, b)) this.crashed = true;
    if (this.crashed) throw new Error(`crashed at ${op} ${path.basename(a)} ${b ? path.basename(b) : ''}`);
  }
  override open(filePath: string, create: boolean): FileHandle {
    const h = super.open(filePath, create);
    const write = h.write.bind(h);
    const truncate = h.truncate.bind(h);
    h.write = (buf, position) => {
      this.check('write', filePath);
      write(buf, position);
    };
    h.truncate = (size) => {
      this.check('truncate', filePath);
      truncate(size);
    };
    h.sync = () => {};
    return h;
  }
  override rename(from: string, to: string): void {
    this.check('rename', from, to);
    super.rename(from, to);
  }
  override unlink(filePath: string): void {
    this.check('unlink', filePath);
    super.unlink(filePath);
  }
  override writeFileAtomic(filePath: string, data: Buffer): void {
    this.check('write', filePath);
    fs.writeFileSync(filePath, data);
  }
  override syncDir(): void {}
}

const CRASH_POINTS: [string, (op: string, a: string, b?: string) => boolean][] = [
  ['while writing the .cleaned segment', (op, a) => op === 'write' && a.endsWith('.log.cleaned')],
  [
    'after .cleaned became .swap, before the old segments were renamed .deleted',
    (op, _a, b) => op === 'rename' && b!.endsWith('.deleted'),
  ],
  [
    'after the old segments were renamed .deleted, before .swap became live',
    (op, a, b) => op === 'rename' && a.endsWith('.log.swap') && !b!.endsWith('.swap'),
  ],
  [
    'after the swap, writing the cleaner checkpoint',
    (op, a) => op === 'write' && a.endsWith(CLEANER_OFFSET_CHECKPOINT),
  ],
];

for (const [point, crashAt] of CRASH_POINTS) {
  test(`a crash ${point}: recovery loses nothing and leaves no duplicate segment`, () => {
    const { dir, cleanup } = tempDir();
    try {
      const crashing = new CrashingFileSystem(crashAt);
      const ctx = { ...testContext(), fs: crashing };
      const log = openLog(dir, ctx, COMPACT);
      produce(log, 0, 5000, 50);
      const written = readAll(log);
      const cleaner = new LogCleaner(
        () => ({ ...DEFAULT_CLEANER_CONFIG, dedupeBufferSize: 1 << 20 }),
        ctx,
        () => [{ log, logDir: dir }],
      );
      cleaner.startup();
      ctx.scheduler.runDue();
      assert.ok(crashing.crashed, 'the crash point was reached');
      cleaner.abandon();
      log.local.abandon();
      const after = testContext();
      const reopened = openLog(dir, after, COMPACT, false);
      const files = fs.readdirSync(path.join(dir, 'c-0'));
      assert.deepEqual(
        files.filter((f) => /\.(cleaned|swap)$/.test(f)),
        [],
      );
      const records = readAll(reopened);
      for (let i = 1; i < records.length; i++)
        assert.ok(records[i]!.offset > records[i - 1]!.offset, 'no duplicate offsets');
      for (const r of records) assert.equal(r.value, `v${r.offset}`);
      const byKey = new Map<string, string | null>();
      for (const r of records) byKey.set(r.key, r.value);
      assert.deepEqual(byKey, latest(5000, 50));
      assert.equal(reopened.logEndOffset, 5000n);
      // Groups swap one at a time: those before the crash are cleaned, the rest are not yet.
      assert.ok(records.length <= written.length);
      if (point.includes('.swap became live') || point.includes('before the old segments')) {
        assert.ok(after.logger.lines.some((l) => /from interrupted swap operation/.test(l)));
      }
      reopened.close();
    } finally {
      cleanup();
    }
  });
}

test('an uncleanable partition is skipped until its log is deleted; created again, it is cleaned', () => {
  const { dir, cleanup } = tempDir();
  let failWrites = true;
  class FailingCleanedWrites extends NodeFileSystem {
    override open(filePath: string, create: boolean): FileHandle {
      const h = super.open(filePath, create);
      const write = h.write.bind(h);
      h.write = (buf, position) => {
        if (failWrites && filePath.endsWith('.log.cleaned')) throw new Error('EIO: injected');
        write(buf, position);
      };
      return h;
    }
  }
  const ctx = { ...testContext(), fs: new FailingCleanedWrites() };
  let logs = [{ log: openLog(dir, ctx, COMPACT), logDir: dir }];
  produce(logs[0]!.log, 0, 2000, 10);
  const sizes = () => logs[0]!.log.local.segments.values().map((s) => s.size);
  const cleaner = new LogCleaner(
    () => ({ ...DEFAULT_CLEANER_CONFIG, dedupeBufferSize: 1 << 20, backoffMs: 1000 }),
    ctx,
    () => logs,
  );
  try {
    cleaner.startup();
    ctx.scheduler.runDue();
    assert.match(ctx.logger.lines.join('\n'), /Marking its partition \(c-0\) as uncleanable/);
    assert.deepEqual(cleaner.uncleanableIn(dir).partitions, 1);
    // The error is gone, but the partition stays uncleanable while its log lives (the groups
    // before the failed one were swapped in; nothing changes any more).
    const after = sizes();
    failWrites = false;
    ctx.clock.advance(1000);
    ctx.scheduler.runDue();
    assert.equal(cleaner.history.length, 0);
    assert.deepEqual(sizes(), after);
    // Deleted, then created again under the same name: the new log is cleaned.
    logs[0]!.log.close();
    fs.rmSync(path.join(dir, 'c-0'), { recursive: true });
    logs = [];
    ctx.clock.advance(1000);
    ctx.scheduler.runDue();
    assert.deepEqual(cleaner.uncleanableIn(dir).partitions, 0);
    logs = [{ log: openLog(dir, ctx, COMPACT), logDir: dir }];
    produce(logs[0]!.log, 0, 2000, 10);
    const again = logs[0]!.log.size;
    ctx.clock.advance(1000);
    ctx.scheduler.runDue();
    assert.equal(cleaner.history.length, 1);
    assert.ok(logs[0]!.log.size < again);
  } finally {
    cleaner.shutdown();
    for (const l of logs) l.log.close();
    cleanup();
  }
});

test('a dynamic change of log.cleaner.threads or its buffers restarts the threads with it, as Kafka reconfigures', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  const logger = new MemoryLogger();
  try {
    const log = openLog(dir, ctx, COMPACT);
    produce(log, 0, 5000, 10);
    const size = log.size;
    let config: CleanerConfig = { ...DEFAULT_CLEANER_CONFIG, dedupeBufferSize: 1 << 20, backoffMs: 1000 };
    const cleaner = new LogCleaner(
      () => config,
      { ...ctx, logger },
      () => [{ log, logDir: dir }],
    );
    cleaner.startup();
    ctx.scheduler.runDue();
    assert.equal(cleaner.history.length, 1, 'the first thread cleaned');
    assert.ok(log.size < size);
    config = { ...config, numThreads: 2, dedupeBufferSize: 2 << 20 };
    ctx.clock.advance(1000);
    ctx.scheduler.runDue();
    const lines = logger.lines.filter((l) => l.includes('log cleaner'));
    assert.match(
      lines.join('\n'),
      /log cleaner reconfigured \(threads 1, dedupe buffer 1048576 .* → threads 2, dedupe buffer 2097152 .*\): restarting its threads\nINFO log cleaner started with 2 threads/,
    );
    cleaner.shutdown();
    log.close();
  } finally {
    cleanup();
  }
});
