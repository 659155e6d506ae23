import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { MemoryLogger, silentLogger } from '../../src/common/logger.js';
import { CheckpointFile, epochEntryCodec } from '../../src/storage/checkpoint.js';
import { NodeFileSystem } from '../../src/storage/fs.js';
import { LeaderEpochFileCache } from '../../src/storage/leader-epoch-cache.js';
import { tempDir } from './helpers.js';

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

test('every change is checkpointed and a reload sees the same entries', () => {
  const { dir, cleanup } = tempDir();
  try {
    const fsys = new NodeFileSystem();
    const file = new CheckpointFile(fsys, path.join(dir, 'leader-epoch-checkpoint'), epochEntryCodec);
    const c = new LeaderEpochFileCache(file, silentLogger, 't-0');
    c.assign(0, 0n);
    c.assign(2, 100n);
    c.truncateFromStart(50n);
    const again = new LeaderEpochFileCache(file, silentLogger, 't-0');
    assert.deepEqual(again.entries(), [
      { epoch: 0, startOffset: 50n },
      { epoch: 2, startOffset: 100n },
    ]);
  } finally {
    cleanup();
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
