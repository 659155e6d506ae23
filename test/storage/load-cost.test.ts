/**
 * What opening a log costs the disk (issue 25): a restart opens every partition's log, and each
 * extra call per log is thousands of calls on the event loop before the broker serves. One listing
 * of the directory answers every "is this file there"; files that are usually there are read
 * without asking first.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { test } from 'node:test';
import { type FileHandle, NodeFileSystem } from '../../src/storage/fs.js';
import { makeBatch, openLog, tempDir } from './helpers.js';

/** The real disk, counting the calls a load makes. */
class CountingFileSystem extends NodeFileSystem {
  readonly calls = new Map<string, number>();
  private count(what: string): void {
    this.calls.set(what, (this.calls.get(what) ?? 0) + 1);
  }
  override list(dir: string): string[] {
    this.count('list');
    return super.list(dir);
  }
  override exists(filePath: string): boolean {
    this.count('exists');
    return super.exists(filePath);
  }
  override mkdirp(dir: string): void {
    this.count('mkdirp');
    super.mkdirp(dir);
  }
  override open(filePath: string, create: boolean): FileHandle {
    this.count('open');
    return super.open(filePath, create);
  }
  override readFile(filePath: string): Buffer {
    this.count('readFile');
    return super.readFile(filePath);
  }
}

test('opening a log lists its directory once and asks no file whether it exists', () => {
  const { dir, cleanup } = tempDir();
  try {
    const first = openLog(dir, new NodeFileSystem(), { hadCleanShutdown: true });
    first.appendAsLeader(makeBatch({ count: 3 }), 0);
    first.assignTopicId('AAAAAAAAAAAAAAAAAAAAAQ');
    first.close();
    for (const clean of [true, false]) {
      const fsys = new CountingFileSystem();
      const log = openLog(dir, fsys, { hadCleanShutdown: clean, recoveryPoint: clean ? 3n : 0n });
      assert.equal(log.logEndOffset, 3n);
      assert.equal(log.topicId, 'AAAAAAAAAAAAAAAAAAAAAQ');
      assert.deepEqual(log.leaderEpochCache.entries(), [{ epoch: 0, startOffset: 0n }]);
      // The .log, the offset index read, the time index rebuilt by the validation; the
      // leader-epoch-checkpoint and partition.metadata read, and after a clean shutdown the
      // producer snapshot the close took (a crash's recovery replays the batches instead).
      assert.deepEqual(
        Object.fromEntries(fsys.calls),
        { list: 1, open: 3, readFile: clean ? 3 : 2 },
        `clean shutdown ${clean}`,
      );
      log.close();
    }
  } finally {
    cleanup();
  }
});

test('a loaded log holds no descriptor until it is read or appended to; its renamed segment is found', () => {
  const openFds = (): number => fs.readdirSync('/proc/self/fd').length;
  const { dir, cleanup } = tempDir();
  try {
    const first = openLog(dir, new NodeFileSystem(), { hadCleanShutdown: true });
    first.appendAsLeader(makeBatch({ count: 3 }), 0);
    first.local.roll();
    first.appendAsLeader(makeBatch({ count: 2 }), 0);
    first.close();
    const before = openFds();
    const log = openLog(dir, new NodeFileSystem(), { hadCleanShutdown: true, recoveryPoint: 5n });
    assert.equal(openFds(), before, 'loaded: no descriptor held');
    const old = log.local.segments.first()!;
    old.changeFileSuffix('.deleted'); // as a retention deletion renames it, before it was ever opened
    const read = old.read(0n, 1 << 20);
    assert.equal(read?.firstBatchBaseOffset, 0n, 'read from its new name');
    assert.equal(openFds(), before + 1);
    log.appendAsLeader(makeBatch({ count: 1 }), 0);
    assert.equal(openFds(), before + 2, 'the active segment opened by the append');
    log.close();
    assert.equal(openFds(), before);
  } finally {
    cleanup();
  }
});
