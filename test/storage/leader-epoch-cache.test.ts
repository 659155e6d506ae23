import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { MemoryLogger, silentLogger } from '../../src/common/logger.js';
import { CheckpointFile, epochEntryCodec, LEADER_EPOCH_CHECKPOINT } from '../../src/storage/checkpoint.js';
import { NodeFileSystem } from '../../src/storage/fs.js';
import { LeaderEpochFileCache } from '../../src/storage/leader-epoch-cache.js';
import { makeBatch, openLog, tempDir } from './helpers.js';

function cache(): LeaderEpochFileCache {
  return new LeaderEpochFileCache(null, silentLogger, 't-0');
}

test('assign keeps epochs and start offsets strictly increasing', () => {
  const c = cache();
  c.assign(2, 6n);
  c.assign(2, 10n); // same epoch later: no change
  c.assign(3, 8n);
  assert.deepEqual(c.entries(), [
    { epoch: 2, startOffset: 6n },
    { epoch: 3, startOffset: 8n },
  ]);
  c.assign(4, 7n); // start below the latest: the later entry goes
  assert.deepEqual(c.entries(), [
    { epoch: 2, startOffset: 6n },
    { epoch: 4, startOffset: 7n },
  ]);
  c.assign(1, 20n); // lower epoch: everything ≥ 1 goes
  assert.deepEqual(c.entries(), [{ epoch: 1, startOffset: 20n }]);
  c.assign(1, 15n); // same epoch, earlier start: replaces
  assert.deepEqual(c.entries(), [{ epoch: 1, startOffset: 15n }]);
  assert.throws(() => c.assign(-1, 0n), RangeError);
});

test('conflicting assignments are logged once with what was removed', () => {
  const log = new MemoryLogger();
  const c = new LeaderEpochFileCache(null, log, 't-0');
  c.assign(1, 0n);
  c.assign(2, 5n);
  c.assign(3, 3n);
  assert.equal(log.lines.length, 1);
  assert.match(log.lines[0]!, /3@3 caused removal of conflicting entries 2@5/);
});

test('endOffsetFor follows Kafka’s rules', () => {
  const c = cache();
  assert.deepEqual(c.endOffsetFor(0, 10n), { epoch: -1, endOffset: -1n });
  c.assign(1, 5n);
  c.assign(3, 10n);
  c.assign(5, 20n);
  const leo = 30n;
  assert.deepEqual(c.endOffsetFor(-1, leo), { epoch: -1, endOffset: -1n });
  assert.deepEqual(c.endOffsetFor(5, leo), { epoch: 5, endOffset: 30n }); // latest → LEO
  assert.deepEqual(c.endOffsetFor(6, leo), { epoch: -1, endOffset: -1n }); // nothing higher
  assert.deepEqual(c.endOffsetFor(0, leo), { epoch: 0, endOffset: 5n }); // below all
  assert.deepEqual(c.endOffsetFor(1, leo), { epoch: 1, endOffset: 10n });
  assert.deepEqual(c.endOffsetFor(2, leo), { epoch: 1, endOffset: 10n }); // floor epoch
  assert.deepEqual(c.endOffsetFor(4, leo), { epoch: 3, endOffset: 20n });
});

test('truncateFromEnd and truncateFromStart', () => {
  const c = cache();
  c.assign(1, 5n);
  c.assign(3, 10n);
  c.assign(5, 20n);
  c.truncateFromEnd(25n);
  assert.equal(c.entries().length, 3);
  c.truncateFromEnd(10n);
  assert.deepEqual(c.entries(), [{ epoch: 1, startOffset: 5n }]);
  c.assign(3, 10n);
  c.assign(5, 20n);
  c.truncateFromStart(4n);
  assert.equal(c.entries().length, 3);
  c.truncateFromStart(12n);
  assert.deepEqual(c.entries(), [
    { epoch: 3, startOffset: 12n },
    { epoch: 5, startOffset: 20n },
  ]);
  c.truncateFromStart(20n);
  assert.deepEqual(c.entries(), [{ epoch: 5, startOffset: 20n }]);
  assert.equal(c.epochForOffset(19n), undefined);
  assert.equal(c.epochForOffset(25n), 5);
});

/** The real file system, counting the writes of leader-epoch-checkpoint files. */
class CountingFileSystem extends NodeFileSystem {
  epochWrites = 0;
  override writeFileAtomic(filePath: string, data: Buffer): void {
    if (path.basename(filePath) === LEADER_EPOCH_CHECKPOINT) this.epochWrites++;
    super.writeFileAtomic(filePath, data);
  }
}

test('an assignment that changes the entries is written at once; truncations ride on the next write', () => {
  const { dir, cleanup } = tempDir();
  try {
    const fsys = new CountingFileSystem();
    const file = new CheckpointFile(fsys, path.join(dir, LEADER_EPOCH_CHECKPOINT), epochEntryCodec);
    const c = new LeaderEpochFileCache(file, silentLogger, 't-0');
    c.assign(0, 0n);
    c.assign(2, 100n);
    assert.equal(fsys.epochWrites, 2);
    c.assign(2, 150n); // the same epoch later: nothing changed, nothing written
    assert.equal(fsys.epochWrites, 2);
    c.truncateFromStart(50n);
    c.truncateFromEnd(100n);
    assert.equal(fsys.epochWrites, 2);
    assert.deepEqual(file.read(), [
      { epoch: 0, startOffset: 0n },
      { epoch: 2, startOffset: 100n },
    ]);
    c.flushIfChanged();
    c.flushIfChanged();
    assert.equal(fsys.epochWrites, 3);
    assert.deepEqual(new LeaderEpochFileCache(file, silentLogger, 't-0').entries(), [
      { epoch: 0, startOffset: 50n },
    ]);
    c.truncateFromEnd(60n); // nothing starts at or after 60
    c.flushIfChanged();
    assert.equal(fsys.epochWrites, 3);
    c.truncateFromEnd(50n);
    c.assign(3, 50n); // writes the truncation with it
    assert.equal(fsys.epochWrites, 4);
    assert.deepEqual(file.read(), [{ epoch: 3, startOffset: 50n }]);

    // A load: a replay that re-adds what it cleared writes nothing, nor does a truncation alone;
    // an assignment that changes the entries writes once.
    c.deferFlushes();
    c.truncateFromEnd(50n, { quiet: true });
    c.assign(3, 50n);
    c.endDeferredFlushes();
    c.deferFlushes();
    c.truncateFromEnd(50n);
    c.endDeferredFlushes();
    assert.equal(fsys.epochWrites, 4);
    c.deferFlushes();
    c.assign(4, 50n);
    c.assign(5, 60n);
    c.endDeferredFlushes();
    assert.equal(fsys.epochWrites, 5);
    assert.deepEqual(file.read(), [
      { epoch: 4, startOffset: 50n },
      { epoch: 5, startOffset: 60n },
    ]);
  } finally {
    cleanup();
  }
});

test('a truncation left for later is not written into a directory that is gone', () => {
  const { dir, cleanup } = tempDir();
  try {
    const partitionDir = path.join(dir, 't-0');
    fs.mkdirSync(partitionDir);
    const file = new CheckpointFile(
      new NodeFileSystem(),
      path.join(partitionDir, LEADER_EPOCH_CHECKPOINT),
      epochEntryCodec,
    );
    const c = new LeaderEpochFileCache(file, silentLogger, 't-0');
    c.assign(1, 0n);
    c.truncateFromEnd(0n);
    fs.renameSync(partitionDir, path.join(dir, 't-0.deleted')); // the log deleted meanwhile
    c.flushIfChanged();
    assert.deepEqual(fs.readdirSync(dir), ['t-0.deleted']);
  } finally {
    cleanup();
  }
});

test('a clean restart of an empty log writes no checkpoint; becoming leader again writes it once', () => {
  const { dir, cleanup } = tempDir();
  try {
    const fsys = new CountingFileSystem();
    const log = openLog(dir, fsys, { hadCleanShutdown: true });
    log.leaderEpochCache.assign(3, log.logEndOffset); // became leader in epoch 3
    log.close();
    assert.equal(fsys.epochWrites, 1);
    const again = openLog(dir, fsys, { hadCleanShutdown: true });
    // The load drops the entry at the LEO (Kafka's truncateFromEnd does too) without writing.
    assert.deepEqual(again.leaderEpochCache.entries(), []);
    assert.equal(fsys.epochWrites, 1);
    again.leaderEpochCache.assign(4, again.logEndOffset);
    again.close();
    assert.equal(fsys.epochWrites, 2);
    assert.equal(fs.readFileSync(path.join(dir, LEADER_EPOCH_CHECKPOINT), 'utf8'), '0\n1\n4 0\n');
  } finally {
    cleanup();
  }
});

test('a truncation not yet written survives a crash before and after the flush that follows', () => {
  for (const flushed of [false, true]) {
    const { dir, cleanup } = tempDir();
    try {
      const fsys = new NodeFileSystem();
      const log = openLog(dir, fsys, { hadCleanShutdown: true });
      log.appendAsFollower(makeBatch({ baseOffset: 0n, count: 10, epoch: 0 }));
      log.appendAsFollower(makeBatch({ baseOffset: 10n, count: 5, epoch: 5 }));
      // The leader of epoch 0 ended it at 10 with more of its own batches: the follower truncates
      // (the file keeps 5@10 for now) and appends epoch 0 again, which changes no entry.
      log.truncateTo(10n);
      log.appendAsFollower(makeBatch({ baseOffset: 10n, count: 10, epoch: 0 }));
      log.local.roll();
      if (flushed) log.flush(); // the recovery point passes 10: the truncation is written first
      const recoveryPoint = log.recoveryPoint;
      assert.equal(recoveryPoint, flushed ? 20n : 0n);
      log.local.abandon(); // kill -9
      const again = openLog(dir, fsys, { hadCleanShutdown: false, recoveryPoint });
      assert.deepEqual(
        again.leaderEpochCache.entries(),
        [{ epoch: 0, startOffset: 0n }],
        `flushed ${flushed}`,
      );
      assert.deepEqual(again.endOffsetForEpoch(0), { epoch: 0, endOffset: 20n });
      again.close();
    } finally {
      cleanup();
    }
  }
});

/** The rules written as plainly as possible, over an unsorted list. */
class ModelCache {
  entries: { epoch: number; start: bigint }[] = [];
  assign(epoch: number, start: bigint): void {
    const latest = this.entries.at(-1);
    if (latest && latest.epoch === epoch && start >= latest.start) return;
    this.entries = this.entries.filter((e) => e.epoch < epoch && e.start < start);
    this.entries.push({ epoch, start });
  }
  endOffsetFor(epoch: number, leo: bigint): [number, bigint] {
    if (epoch === -1) return [-1, -1n];
    if (this.entries.at(-1)?.epoch === epoch) return [epoch, leo];
    const higher = this.entries.filter((e) => e.epoch > epoch);
    if (higher.length === 0) return [-1, -1n];
    const lower = this.entries.filter((e) => e.epoch <= epoch);
    return [lower.length ? lower.at(-1)!.epoch : epoch, higher[0]!.start];
  }
  truncateFromEnd(offset: bigint): void {
    this.entries = this.entries.filter((e) => e.start < offset);
  }
  truncateFromStart(offset: bigint): void {
    const removed = this.entries.filter((e) => e.start <= offset);
    if (removed.length === 0) return;
    this.entries = [
      { epoch: removed.at(-1)!.epoch, start: offset },
      ...this.entries.filter((e) => e.start > offset),
    ];
  }
}

test('property: the cache agrees with a plain model under random operations', () => {
  const op = fc.oneof(
    fc.tuple(
      fc.constant('assign' as const),
      fc.integer({ min: 0, max: 12 }),
      fc.bigInt({ min: 0n, max: 60n }),
    ),
    fc.tuple(fc.constant('end' as const), fc.integer({ min: 0, max: 0 }), fc.bigInt({ min: 0n, max: 60n })),
    fc.tuple(fc.constant('start' as const), fc.integer({ min: 0, max: 0 }), fc.bigInt({ min: 0n, max: 60n })),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 40 }), fc.integer({ min: -1, max: 14 }), (ops, probe) => {
      const c = cache();
      const m = new ModelCache();
      for (const [kind, epoch, offset] of ops) {
        if (kind === 'assign') {
          c.assign(epoch, offset);
          m.assign(epoch, offset);
        } else if (kind === 'end') {
          c.truncateFromEnd(offset);
          m.truncateFromEnd(offset);
        } else {
          c.truncateFromStart(offset);
          m.truncateFromStart(offset);
        }
        assert.deepEqual(
          c.entries().map((e) => ({ epoch: e.epoch, start: e.startOffset })),
          m.entries,
        );
        for (let i = 1; i < m.entries.length; i++) {
          assert.ok(
            m.entries[i]!.epoch > m.entries[i - 1]!.epoch && m.entries[i]!.start > m.entries[i - 1]!.start,
          );
        }
      }
      const r = c.endOffsetFor(probe, 100n);
      assert.deepEqual([r.epoch, r.endOffset], m.endOffsetFor(probe, 100n));
    }),
    { numRuns: 300 },
  );
});
