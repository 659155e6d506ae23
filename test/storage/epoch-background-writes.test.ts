/**
 * Leader epochs written off the event loop (issue 25): an assignment at or past every recovery
 * point the log dir's checkpoint can hold for the log is written in the background; anything that
 * makes offsets past it trusted (a flush, the close) writes it at once first, and a background
 * write overtaken by such a write never renames its older content over the file.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { silentLogger } from '../../src/common/logger.js';
import { CheckpointFile, epochEntryCodec, LEADER_EPOCH_CHECKPOINT } from '../../src/storage/checkpoint.js';
import { NodeFileSystem } from '../../src/storage/fs.js';
import { LeaderEpochFileCache } from '../../src/storage/leader-epoch-cache.js';
import type { Log } from '../../src/storage/log.js';
import { makeBatch, openLog, tempDir } from './helpers.js';

/**
 * The real disk, with background writes that wait until `release()`: the leader-epoch-checkpoint
 * writes are counted, those at once and those handed to the background.
 */
function gatedDisk(): {
  fsys: NodeFileSystem;
  counts: { atOnce: number; background: number };
  release: () => void;
  idle: () => Promise<void>;
} {
  const real = new NodeFileSystem({ backgroundWrites: true });
  const counts = { atOnce: 0, background: 0 };
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const running = new Set<Promise<boolean>>();
  const isEpochFile = (filePath: string) => path.basename(filePath) === LEADER_EPOCH_CHECKPOINT;
  const fsys = Object.assign(Object.create(real) as NodeFileSystem, {
    writeFileAtomic(filePath: string, data: Buffer): void {
      if (isEpochFile(filePath)) counts.atOnce++;
      real.writeFileAtomic(filePath, data);
    },
    writeFileAtomicInBackground(filePath: string, data: Buffer, stillWanted?: () => boolean) {
      if (isEpochFile(filePath)) counts.background++;
      const write = gate.then(() => real.writeFileAtomicInBackground!(filePath, data, stillWanted));
      running.add(write);
      void write.finally(() => running.delete(write));
      return write;
    },
  });
  const idle = async () => {
    while (running.size > 0) await Promise.allSettled([...running]);
    // The cache's own continuation after the write (its bookkeeping) runs a turn later.
    await new Promise((r) => setImmediate(r));
  };
  return { fsys, counts, release: open, idle };
}

function epochFile(dir: string): string {
  return fs.readFileSync(path.join(dir, LEADER_EPOCH_CHECKPOINT), 'utf8');
}

test('a write at once overtakes a background write of the same file, which then never renames', async () => {
  const { dir, cleanup } = tempDir();
  try {
    const disk = gatedDisk();
    const file = new CheckpointFile(disk.fsys, path.join(dir, LEADER_EPOCH_CHECKPOINT), epochEntryCodec);
    const c = new LeaderEpochFileCache(file, silentLogger, 't-0');
    c.writeAssignmentsInBackground(() => 10n);
    c.assign(1, 10n);
    c.assign(2, 15n); // while the first is under way: one more write afterwards, not a second one now
    assert.deepEqual(disk.counts, { atOnce: 0, background: 1 });
    assert.equal(fs.existsSync(file.path), false);
    c.assign(3, 5n); // below the offset given: written at once, with the entries before it
    assert.deepEqual(disk.counts, { atOnce: 1, background: 1 });
    assert.equal(epochFile(dir), '0\n1\n3 5\n');
    disk.release();
    await disk.idle();
    assert.equal(epochFile(dir), '0\n1\n3 5\n', 'the overtaken write left the file alone');
    assert.deepEqual(fs.readdirSync(dir), [LEADER_EPOCH_CHECKPOINT], 'and removed its temporary file');
    assert.deepEqual(disk.counts, { atOnce: 1, background: 1 });

    c.assign(4, 20n);
    c.assign(5, 30n);
    await disk.idle();
    assert.equal(epochFile(dir), '0\n3\n3 5\n4 20\n5 30\n');
    assert.equal(disk.counts.background, 3, 'the second assignment made one more write');
    c.flushIfChanged(); // the file holds the entries: nothing to write
    assert.equal(disk.counts.atOnce, 1);
  } finally {
    cleanup();
  }
});

function openLoaded(dir: string, fsys: NodeFileSystem, clean: boolean, recoveryPoint: bigint): Log {
  return openLog(dir, fsys, { hadCleanShutdown: clean, recoveryPoint, recoveryPointFromCheckpoint: true });
}

/** A log of epoch 0 up to 10 (batches from 0 and 4), closed cleanly: what a restart finds. */
function writeLog(dir: string): void {
  const log = openLog(dir, new NodeFileSystem(), { hadCleanShutdown: true });
  log.appendAsLeader(makeBatch({ count: 4 }), 0);
  log.appendAsLeader(makeBatch({ count: 6 }), 0);
  log.close();
}

test('a new epoch left to the background is never missing below the recovery point after a crash', async () => {
  for (const flushed of [false, true]) {
    const { dir, cleanup } = tempDir();
    try {
      writeLog(dir);
      const disk = gatedDisk(); // never released: every background write is still under way at the kill
      const log = openLoaded(dir, disk.fsys, true, 10n);
      log.leaderEpochCache.assign(1, log.logEndOffset); // leader again after the restart, epoch 1
      assert.deepEqual(disk.counts, { atOnce: 0, background: 1 });
      log.appendAsLeader(makeBatch({ count: 5 }), 1);
      log.local.roll(); // so a recovery from 15 replays nothing of epoch 1
      if (flushed) log.flush(); // the recovery point passes 10: the entry is written at once first
      assert.equal(disk.counts.atOnce, flushed ? 1 : 0);
      const recoveryPoint = log.recoveryPoint;
      assert.equal(recoveryPoint, flushed ? 15n : 10n);
      log.local.abandon(); // kill -9
      const again = openLoaded(dir, new NodeFileSystem(), false, recoveryPoint);
      // Not flushed: the batches of epoch 1 are past the recovery point and replayed. Flushed: the
      // load trusts them without replay, and the file holds their epoch.
      assert.deepEqual(
        again.leaderEpochCache.entries(),
        [
          { epoch: 0, startOffset: 0n },
          { epoch: 1, startOffset: 10n },
        ],
        `flushed ${flushed}`,
      );
      again.close();
    } finally {
      cleanup();
    }
  }
});

test('after a truncation below the checkpointed recovery point, a new epoch is written at once', () => {
  const { dir, cleanup } = tempDir();
  try {
    writeLog(dir);
    const disk = gatedDisk();
    // The checkpoint says 10; a follower truncates to 4 and appends epoch 2 from there. A crash
    // before the next checkpoint would trust [4, 10) without replaying it: its entry must be there.
    const log = openLoaded(dir, disk.fsys, true, 10n);
    log.truncateTo(4n);
    log.appendAsFollower(makeBatch({ baseOffset: 4n, count: 3, epoch: 2 }));
    assert.deepEqual(disk.counts, { atOnce: 1, background: 0 });
    assert.equal(epochFile(dir), '0\n2\n0 0\n2 4\n');
    // Past the highest recovery point again: back to the background.
    log.appendAsFollower(makeBatch({ baseOffset: 7n, count: 5, epoch: 3 }));
    log.appendAsFollower(makeBatch({ baseOffset: 12n, count: 1, epoch: 4 }));
    assert.deepEqual(disk.counts, { atOnce: 2, background: 1 });
    log.close(); // the close writes what the background has not
    assert.equal(disk.counts.atOnce, 3);
    assert.equal(epochFile(dir), '0\n4\n0 0\n2 4\n3 7\n4 12\n');
  } finally {
    cleanup();
  }
});
