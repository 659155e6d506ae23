import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { crc32c } from '@node-rs/crc32';
import { readBatchHeader } from '../../src/protocol/records/batch.js';
import { LogSegment } from '../../src/storage/segment.js';
import { makeBatch, tempDir, testContext } from './helpers.js';

const config = { indexIntervalBytes: 4096, maxIndexSize: 10 * 1024 * 1024 };

/** Appends `n` batches of 3 records (~1.1 KiB each) from `base`; returns their start positions. */
function fill(segment: LogSegment, base: bigint, n: number): { positions: number[]; next: bigint } {
  const positions: number[] = [];
  let next = base;
  for (let i = 0; i < n; i++) {
    const b = makeBatch({
      baseOffset: next,
      count: 3,
      valueBytes: 350,
      timestamp: 1_700_000_000_000n + BigInt(i * 10),
      seed: i,
    });
    positions.push(segment.size);
    segment.append(b, next + 2n);
    next += 3n;
  }
  return { positions, next };
}

test('append writes an index entry once more than index.interval.bytes were written', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    const seg = LogSegment.open(ctx.fs, dir, 0n, config, ctx.clock, true);
    const { positions } = fill(seg, 0n, 20);
    const batchBytes = positions[1]!;
    assert.ok(batchBytes > 1000 && batchBytes < 1200, `batch size ${batchBytes}`);
    // Kafka's rule: the entry goes before the batch that finds > 4096 bytes since the last one,
    // naming that batch's last offset and its start position.
    const perEntry = Math.floor(4096 / batchBytes) + 1;
    const expected = [];
    for (let i = perEntry; i < 20; i += perEntry)
      expected.push({ offset: BigInt(i * 3 + 2), position: positions[i]! });
    const got = Array.from({ length: seg.offsetIndex.entries }, (_, i) => seg.offsetIndex.entry(i));
    assert.deepEqual(got, expected);
    assert.equal(seg.timeIndex.entries, expected.length);
    seg.close();
    assert.equal(fs.statSync(path.join(dir, '00000000000000000000.index')).size, 8 * expected.length);
  } finally {
    cleanup();
  }
});

test('read by offset: index lookup, then header scan; byte limits and minOneMessage', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    const seg = LogSegment.open(ctx.fs, dir, 100n, config, ctx.clock, true);
    const { positions, next } = fill(seg, 100n, 30);
    assert.equal(seg.readNextOffset(), next);
    const r = seg.read(131n, 100_000)!;
    assert.equal(r.position, positions[10]); // offsets 130..132 are batch 10
    assert.equal(r.firstBatchBaseOffset, 130n);
    assert.equal(readBatchHeader(r.records, 0).baseOffset, 130n);
    assert.equal(r.records.length, seg.size - positions[10]!);
    const small = seg.read(131n, 10)!;
    assert.equal(small.records.length, 10);
    assert.equal(small.firstEntryIncomplete, true);
    const one = seg.read(131n, 10, seg.size, true)!;
    assert.equal(one.records.length, positions[11]! - positions[10]!);
    assert.equal(seg.read(next, 1000), null);
    const capped = seg.read(100n, 1_000_000, positions[2])!;
    assert.equal(capped.records.length, positions[2]);
    assert.deepEqual(seg.translateOffset(99n)?.baseOffset, 100n);
  } finally {
    cleanup();
  }
});

test('find by timestamp and largest timestamp', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    const seg = LogSegment.open(ctx.fs, dir, 0n, config, ctx.clock, true);
    fill(seg, 0n, 30);
    // batch i has timestamps base + 10i .. base + 10i + 2
    const found = seg.findBatchByTimestamp(1_700_000_000_000n + 155n, 0n)!;
    assert.equal(found.baseOffset, 16n * 3n);
    assert.deepEqual(seg.largestTimestamp(), { timestamp: 1_700_000_000_000n + 292n, offset: 89n });
    assert.equal(seg.findBatchByTimestamp(1_800_000_000_000n, 0n), null);
    assert.equal(seg.findBatchByTimestamp(0n, 50n)!.baseOffset, 48n);
  } finally {
    cleanup();
  }
});

test('recover rebuilds the same indexes that appends wrote and truncates a torn tail', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    const seg = LogSegment.open(ctx.fs, dir, 0n, config, ctx.clock, true);
    const { positions } = fill(seg, 0n, 40);
    seg.close();
    const trimmedIndex = fs.readFileSync(path.join(dir, '00000000000000000000.index'));
    const trimmedTime = fs.readFileSync(path.join(dir, '00000000000000000000.timeindex'));
    const again = LogSegment.open(ctx.fs, dir, 0n, config, ctx.clock, false);
    const epochs: bigint[] = [];
    const r = again.recover((h) => epochs.push(h.baseOffset));
    assert.equal(r.truncatedBytes, 0);
    assert.equal(r.batches, 40);
    assert.equal(epochs.length, 40);
    again.close();
    assert.deepEqual(fs.readFileSync(path.join(dir, '00000000000000000000.index')), trimmedIndex);
    assert.deepEqual(fs.readFileSync(path.join(dir, '00000000000000000000.timeindex')), trimmedTime);

    // tear the last batch
    const logPath = path.join(dir, '00000000000000000000.log');
    fs.truncateSync(logPath, fs.statSync(logPath).size - 7);
    const torn = LogSegment.open(ctx.fs, dir, 0n, config, ctx.clock, false);
    const t = torn.validateTail();
    assert.equal(t.validBytes, positions[39]);
    assert.equal(t.nextOffset, 39n * 3n);
    assert.equal(fs.statSync(logPath).size, positions[39]);
    torn.close();
  } finally {
    cleanup();
  }
});

test('truncateTo cuts at the batch holding the offset and drops its index entries', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    const seg = LogSegment.open(ctx.fs, dir, 0n, config, ctx.clock, true);
    const { positions } = fill(seg, 0n, 30);
    const removed = seg.truncateTo(46n); // batch 15 holds 45..47
    assert.equal(seg.size, positions[15]);
    assert.equal(removed > 0, true);
    assert.equal(seg.readNextOffset(), 45n);
    for (let i = 0; i < seg.offsetIndex.entries; i++) assert.ok(seg.offsetIndex.entry(i).position < seg.size);
    assert.equal(seg.truncateTo(1000n), 0);
    seg.truncateTo(0n);
    assert.equal(seg.size, 0);
    assert.equal(seg.offsetIndex.entries, 0);
    assert.equal(seg.timeIndex.entries, 0);
  } finally {
    cleanup();
  }
});

test('read by offset costs an index lookup and at most one scan chunk, whatever the segment size', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    let bytesRead = 0;
    let reads = 0;
    const counting = Object.create(ctx.fs) as typeof ctx.fs;
    counting.open = (p: string, create: boolean) => {
      const h = ctx.fs.open(p, create);
      const read = h.read.bind(h);
      h.read = (buf, off, len, pos) => {
        reads++;
        const n = read(buf, off, len, pos);
        bytesRead += n;
        return n;
      };
      return h;
    };
    const seg = LogSegment.open(counting, dir, 0n, config, ctx.clock, true);
    const { positions, next } = fill(seg, 0n, 6000); // ~6.6 MB of 1.1 KiB batches
    assert.ok(seg.size > 6_000_000);
    for (const target of [1n, 7_777n, 12_345n, next - 1n]) {
      bytesRead = 0;
      reads = 0;
      const location = seg.translateOffset(target)!;
      assert.ok(location.baseOffset <= target && location.lastOffset >= target);
      assert.ok(positions.includes(location.position));
      // the index entry is at most index.interval.bytes + one batch before the target batch
      assert.ok(reads <= 2, `${reads} reads for ${target}`);
      assert.ok(bytesRead <= 2 * 8192, `${bytesRead} bytes scanned for ${target}`);
    }
    seg.close();
  } finally {
    cleanup();
  }
});

test('an index entry that points at no batch does not hide the data', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    const seg = LogSegment.open(ctx.fs, dir, 0n, config, ctx.clock, true);
    fill(seg, 0n, 20);
    seg.close();
    const idx = path.join(dir, '00000000000000000000.index');
    const raw = fs.readFileSync(idx);
    raw.writeInt32BE(raw.readInt32BE(raw.length - 4) + 5, raw.length - 4); // last entry off by 5 bytes
    fs.writeFileSync(idx, raw);
    const again = LogSegment.open(ctx.fs, dir, 0n, config, ctx.clock, false);
    assert.equal(again.translateOffset(59n)?.lastOffset, 59n);
    again.close();
  } finally {
    cleanup();
  }
});

test('batches without timestamps (-1) leave the time index empty, as in Kafka', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    const seg = LogSegment.open(ctx.fs, dir, 0n, config, ctx.clock, true);
    let next = 0n;
    for (let i = 0; i < 20; i++) {
      const b = makeBatch({ baseOffset: next, count: 2, valueBytes: 400, timestamp: -1n });
      b.writeBigInt64BE(-1n, 35); // maxTimestamp = NO_TIMESTAMP, which the CRC covers
      b.writeUInt32BE(crc32c(b.subarray(21)) >>> 0, 17);
      seg.append(b, next + 1n);
      next += 2n;
    }
    assert.ok(seg.offsetIndex.entries > 0);
    assert.equal(seg.timeIndex.entries, 0);
    const r = seg.recover();
    assert.equal(r.batches, 20);
    assert.equal(seg.timeIndex.entries, 0);
    seg.close();
  } finally {
    cleanup();
  }
});

test('a fetch at the tail is answered from the latest appends without reading the file, and agrees with a scan', () => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  try {
    let reads = 0;
    const counting = Object.create(ctx.fs) as typeof ctx.fs;
    counting.open = (p, create) => {
      const h = ctx.fs.open(p, create);
      const read = h.read.bind(h);
      h.read = (buf, off, len, pos) => {
        reads++;
        return read(buf, off, len, pos);
      };
      return h;
    };
    const seg = LogSegment.open(counting, dir, 0n, config, ctx.clock, true);
    // More batches than the ring holds (64), with gaps between batches' offsets as a follower may
    // append (a compacted leader's batches).
    let next = 0n;
    const append = (n: number) => {
      for (let i = 0; i < n; i++) {
        const count = 1 + (i % 4);
        const b = makeBatch({ baseOffset: next, count, valueBytes: 300, seed: i });
        seg.append(b, next + BigInt(count - 1));
        next += BigInt(count) + BigInt(i % 3);
      }
    };
    const agreesWithScan = () => {
      for (let o = 0n; o <= next + 1n; o++) {
        const fromScan = seg.translateOffset(o, 0);
        assert.deepEqual(seg.translateOffset(o), fromScan, `offset ${o}`);
      }
    };
    append(100);
    agreesWithScan();
    reads = 0;
    const tail = seg.translateOffset(next - 1n);
    assert.ok(tail !== null && tail.lastOffset >= next - 1n);
    assert.equal(seg.translateOffset(next + 10n), null);
    assert.equal(reads, 0, 'the tail is found without a read');
    // Truncation forgets the ring; appends after it fill it again.
    seg.truncateTo(next - 40n);
    next = seg.readNextOffset();
    agreesWithScan();
    append(10);
    agreesWithScan();
    seg.close();
  } finally {
    cleanup();
  }
});
