import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { preallocationAvailable } from '../../src/storage/fs.js';
import { LogSegment } from '../../src/storage/segment.js';
import { makeBatch, tempDir, testContext } from './helpers.js';

const config = { indexIntervalBytes: 4096, maxIndexSize: 10 * 1024 * 1024 };
const BLOCK = 4096;

/** Bytes the file system holds for the file (st_blocks counts 512-byte units). */
const allocated = (file: string): number => fs.statSync(file).blocks * 512;
const roundUp = (n: number): number => Math.ceil(n / BLOCK) * BLOCK;
/** The smallest reserve a segment takes (LogSegment's PREALLOCATE_MIN_BYTES). */
const MIN_RESERVE = 64 * 1024;
/**
 * No reserve held for `size` bytes in `allocatedBytes`: st_blocks also counts the file system's own
 * blocks for the file (an ext4 extent tree block once the file has several extents), so "nothing
 * held past the data" is "less than the smallest reserve past it", not "exactly the data's blocks".
 */
const noReserveIn = (allocatedBytes: number, size: number): boolean =>
  allocatedBytes < roundUp(size) + MIN_RESERVE;
const noReserve = (file: string): boolean => noReserveIn(allocated(file), fs.statSync(file).size);

/** Appends batches of 16 records of 1000 bytes (~16.4 KiB) until the segment holds `bytes`. */
function fillTo(segment: LogSegment, bytes: number, from = 0n): bigint {
  let next = from;
  for (let i = 0; segment.size < bytes; i++) {
    segment.append(makeBatch({ baseOffset: next, count: 16, valueBytes: 1000, seed: i }), next + 15n);
    next += 16n;
  }
  return next;
}

describe('blocks reserved ahead of a segment’s appends', { skip: !preallocationAvailable() }, () => {
  test('the file holds exactly the appended bytes while blocks are reserved past them; rolling gives them back', () => {
    const { dir, cleanup } = tempDir();
    const ctx = testContext();
    try {
      const seg = LogSegment.open(ctx.fs, dir, 0n, config, ctx.clock, true);
      const file = seg.logPath;
      const next = fillTo(seg, 100_000);
      assert.equal(fs.statSync(file).size, seg.size, 'ls sees the appended bytes only');
      // Ahead of an append of ~100 KB: as much again (at least 64 KiB), at most 4 MiB.
      const reserve = allocated(file) - roundUp(seg.size);
      assert.ok(reserve >= MIN_RESERVE, `reserve of ${reserve} bytes after ${seg.size}`);
      fillTo(seg, 24 * 1024 * 1024, next);
      const bigReserve = allocated(file) - roundUp(seg.size);
      assert.ok(bigReserve > 0 && bigReserve <= 4 * 1024 * 1024 + 32 * 1024, `reserve ${bigReserve}`);
      assert.equal(fs.statSync(file).size, seg.size);
      seg.onBecomeInactive();
      assert.ok(noReserve(file), `${allocated(file)} bytes held for ${seg.size}`);
      assert.equal(fs.statSync(file).size, seg.size);
      seg.close();
    } finally {
      cleanup();
    }
  });

  test('preallocate=true: a new segment reserves segment.bytes at its first append, ls still sees the appended bytes, a roll gives it back', () => {
    const { dir, cleanup } = tempDir();
    const ctx = testContext();
    try {
      const seg = LogSegment.open(
        ctx.fs,
        dir,
        0n,
        { ...config, preallocateBytes: 32 * 1024 * 1024 },
        ctx.clock,
        true,
      );
      const file = seg.logPath;
      fillTo(seg, 20_000);
      assert.equal(fs.statSync(file).size, seg.size, 'ls sees the appended bytes only');
      assert.ok(
        allocated(file) >= 32 * 1024 * 1024,
        `${allocated(file)} bytes held for segment.bytes 32 MiB`,
      );
      seg.onBecomeInactive();
      assert.ok(noReserve(file), `${allocated(file)} bytes held for ${seg.size}`);
      seg.close();
    } finally {
      cleanup();
    }
  });

  test('truncation frees the reserve with the bytes; later appends reserve again; a clean close gives it back', () => {
    const { dir, cleanup } = tempDir();
    const ctx = testContext();
    try {
      const seg = LogSegment.open(ctx.fs, dir, 0n, config, ctx.clock, true);
      const file = seg.logPath;
      fillTo(seg, 2 * 1024 * 1024);
      assert.ok(allocated(file) > roundUp(seg.size));
      const removed = seg.truncateTo(64n);
      assert.ok(removed > 0);
      assert.equal(fs.statSync(file).size, seg.size);
      assert.ok(noReserve(file), 'a truncation frees the blocks past the new end');
      fillTo(seg, 200_000, seg.readNextOffset());
      assert.ok(allocated(file) > roundUp(seg.size) + MIN_RESERVE - BLOCK, 'reserved again');
      seg.close();
      assert.ok(noReserve(file), 'the close gave the reserve back');
    } finally {
      cleanup();
    }
  });

  test('after a crash with blocks reserved, recovery finds exactly the appended batches', () => {
    const { dir, cleanup } = tempDir();
    const ctx = testContext();
    try {
      const seg = LogSegment.open(ctx.fs, dir, 0n, config, ctx.clock, true);
      const next = fillTo(seg, 1_000_000);
      const size = seg.size;
      const bytes = fs.readFileSync(seg.logPath);
      seg.closeHandles(); // the process dies: nothing trimmed
      assert.ok(allocated(path.join(dir, '00000000000000000000.log')) > roundUp(size));
      const again = LogSegment.open(ctx.fs, dir, 0n, config, ctx.clock, false);
      const result = again.recover();
      assert.equal(result.truncatedBytes, 0);
      assert.equal(result.validBytes, size);
      assert.equal(result.nextOffset, next);
      assert.deepEqual(fs.readFileSync(again.logPath), bytes);
      // Appends go on from there, into a fresh reserve.
      fillTo(again, size + 100_000, next);
      assert.equal(fs.statSync(again.logPath).size, again.size);
      again.close();
    } finally {
      cleanup();
    }
  });

  test('SKIFF_PREALLOCATE=0 turns it off', () => {
    const { dir, cleanup } = tempDir();
    try {
      const url = (p: string) => new URL(p, import.meta.url).href;
      // Each run writes its segment into a directory of its own: SKIFF_PREALLOCATE's value.
      const script = `
        import { LogSegment } from ${JSON.stringify(url('../../src/storage/segment.js'))};
        import { makeBatch, testContext } from ${JSON.stringify(url('./helpers.js'))};
        import * as fs from 'node:fs';
        const ctx = testContext();
        const dir = ${JSON.stringify(dir)} + '/' + process.env.SKIFF_PREALLOCATE;
        fs.mkdirSync(dir);
        const seg = LogSegment.open(ctx.fs, dir, 0n, ${JSON.stringify(config)}, ctx.clock, true);
        for (let i = 0; i < 8; i++) seg.append(makeBatch({ baseOffset: BigInt(i * 16), count: 16, valueBytes: 1000, seed: i }), BigInt(i * 16 + 15));
        const st = fs.statSync(seg.logPath);
        process.stdout.write(JSON.stringify({ size: st.size, allocated: st.blocks * 512 }));
        seg.closeHandles();`;
      const out = (env: string) =>
        JSON.parse(
          execFileSync(process.execPath, ['--input-type=module', '-e', script], {
            env: { ...process.env, SKIFF_PREALLOCATE: env },
            encoding: 'utf8',
          }),
        ) as { size: number; allocated: number };
      const off = out('0');
      assert.ok(noReserveIn(off.allocated, off.size), `off: ${off.allocated} for ${off.size}`);
      const on = out('1');
      assert.ok(on.allocated >= roundUp(on.size) + MIN_RESERVE - BLOCK, `on: ${on.allocated} for ${on.size}`);
    } finally {
      cleanup();
    }
  });
});
