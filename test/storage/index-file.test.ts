import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { NodeFileSystem } from '../../src/storage/fs.js';
import { InvalidIndexEntryError, OffsetIndex, TimeIndex } from '../../src/storage/index-file.js';
import { tempDir } from './helpers.js';

const fsys = new NodeFileSystem();

test('offset index entries are 8 bytes: int32 relative offset, int32 position, big-endian', () => {
  const { dir, cleanup } = tempDir();
  try {
    const p = path.join(dir, '00000000000000000100.index');
    const idx = new OffsetIndex(fsys, p, 100n, 1024);
    idx.append(110n, 4200);
    idx.append(125n, 8500);
    idx.flush();
    // preallocated while active, as Kafka's
    assert.equal(fs.statSync(p).size, 1024);
    idx.trim();
    const raw = fs.readFileSync(p);
    assert.deepEqual([...raw], [0, 0, 0, 10, 0, 0, 0x10, 0x68, 0, 0, 0, 25, 0, 0, 0x21, 0x34]);
    const again = new OffsetIndex(fsys, p, 100n, 1024);
    assert.equal(again.entries, 2);
    assert.deepEqual(again.lookup(99n), { offset: 100n, position: 0 });
    assert.deepEqual(again.lookup(110n), { offset: 110n, position: 4200 });
    assert.deepEqual(again.lookup(124n), { offset: 110n, position: 4200 });
    assert.deepEqual(again.lookup(10_000n), { offset: 125n, position: 8500 });
    assert.throws(() => again.append(125n, 9000), InvalidIndexEntryError);
    assert.throws(() => again.append(126n, 8500), InvalidIndexEntryError);
    assert.throws(() => again.append(100n + 2n ** 31n, 9000), InvalidIndexEntryError);
  } finally {
    cleanup();
  }
});

test('time index entries are 12 bytes: int64 timestamp, int32 relative offset; only growing timestamps', () => {
  const { dir, cleanup } = tempDir();
  try {
    const p = path.join(dir, '00000000000000000100.timeindex');
    const idx = new TimeIndex(fsys, p, 100n, 1200);
    assert.deepEqual(idx.lastEntry(), { timestamp: -1n, offset: 100n });
    assert.equal(idx.maybeAppend(1_700_000_000_000n, 105n), true);
    assert.equal(idx.maybeAppend(1_700_000_000_000n, 107n), false);
    assert.equal(idx.maybeAppend(1_700_000_000_500n, 109n), true);
    idx.close();
    const raw = fs.readFileSync(p);
    assert.equal(raw.length, 24);
    assert.equal(raw.readBigInt64BE(0), 1_700_000_000_000n);
    assert.equal(raw.readInt32BE(8), 5);
    assert.equal(raw.readBigInt64BE(12), 1_700_000_000_500n);
    assert.equal(raw.readInt32BE(20), 9);
    const again = new TimeIndex(fsys, p, 100n, 1200);
    assert.deepEqual(again.lookup(1_600_000_000_000n), { timestamp: -1n, offset: 100n });
    assert.deepEqual(again.lookup(1_700_000_000_499n), { timestamp: 1_700_000_000_000n, offset: 105n });
    assert.deepEqual(again.lookup(1_800_000_000_000n), { timestamp: 1_700_000_000_500n, offset: 109n });
  } finally {
    cleanup();
  }
});

test('time index compares timestamps exactly beyond 2^53 and below zero', () => {
  const { dir, cleanup } = tempDir();
  try {
    const idx = new TimeIndex(fsys, path.join(dir, '00000000000000000000.timeindex'), 0n, 1200);
    assert.equal(idx.maybeAppend(0n, 1n), true);
    assert.equal(idx.maybeAppend(2n ** 60n, 2n), true);
    // 2^60 + 1 is the same double as 2^60: only an exact comparison appends it.
    assert.equal(idx.maybeAppend(2n ** 60n, 3n), false);
    assert.equal(idx.maybeAppend(2n ** 60n + 1n, 4n), true);
    assert.deepEqual(idx.lastEntry(), { timestamp: 2n ** 60n + 1n, offset: 4n });
    idx.close();
  } finally {
    cleanup();
  }
});

test('a crash leaves a zero-filled preallocated tail that is not read as entries', () => {
  const { dir, cleanup } = tempDir();
  try {
    const p = path.join(dir, '00000000000000000000.index');
    const idx = new OffsetIndex(fsys, p, 0n, 4096);
    idx.append(10n, 5000);
    idx.append(20n, 9000);
    idx.flush(); // written, as before the recovery point moves
    idx.closeHandle(); // no trim: as after kill -9
    assert.equal(fs.statSync(p).size, 4096);
    assert.equal(new OffsetIndex(fsys, p, 0n, 4096).entries, 2);
    // a torn, odd-sized file rounds down
    fs.truncateSync(p, 13);
    assert.equal(new OffsetIndex(fsys, p, 0n, 4096).entries, 1);
  } finally {
    cleanup();
  }
});

test('truncation drops entries at and after an offset, on disk too; full index refuses', () => {
  const { dir, cleanup } = tempDir();
  try {
    const p = path.join(dir, 'x.index');
    const idx = new OffsetIndex(fsys, p, 0n, 32);
    for (let i = 1; i <= 4; i++) idx.append(BigInt(i * 10), i * 4100);
    assert.ok(idx.isFull());
    assert.throws(() => idx.append(50n, 50000), /full/);
    idx.truncateTo(25n);
    assert.equal(idx.entries, 2);
    idx.append(27n, 9999);
    idx.flush();
    idx.closeHandle();
    const again = new OffsetIndex(fsys, p, 0n, 32);
    assert.equal(again.entries, 3);
    assert.deepEqual(again.lastEntry(), { offset: 27n, position: 9999 });
    again.truncateToPosition(8200);
    assert.equal(again.entries, 1);
    again.trim();
    assert.equal(fs.statSync(p).size, 8);
    const t = new TimeIndex(fsys, path.join(dir, 'x.timeindex'), 0n, 120);
    t.maybeAppend(5n, 3n);
    t.maybeAppend(6n, 9n);
    t.truncateTo(9n);
    assert.deepEqual(t.lastEntry(), { timestamp: 5n, offset: 3n });
    t.close();
    assert.equal(fs.statSync(path.join(dir, 'x.timeindex')).size, 12);
  } finally {
    cleanup();
  }
});
