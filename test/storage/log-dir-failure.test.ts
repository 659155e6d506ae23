import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import { KafkaError } from '../../src/protocol/kafka-error.js';
import { RECOVERY_POINT_CHECKPOINT } from '../../src/storage/checkpoint.js';
import { type FileHandle, NodeFileSystem } from '../../src/storage/fs.js';
import { logConfig } from '../../src/storage/log-config.js';
import {
  FailureDetectingFileSystem,
  isStorageError,
  LogDirFailureChannel,
  storageTaskScheduler,
} from '../../src/storage/log-dir-failure.js';
import { CLEAN_SHUTDOWN_FILE, LogManager } from '../../src/storage/log-manager.js';
import { makeBatch, tempDir, testContext } from './helpers.js';

/**
 * The real disk, except that writes under `fullDir` fail with ENOSPC once `full` is set, and
 * opening a file there fails with EROFS once `readOnly` is.
 */
class FillableFileSystem extends NodeFileSystem {
  full = false;
  readOnly = false;
  writes = 0;
  constructor(private readonly fullDir: string) {
    super();
  }
  override open(filePath: string, create: boolean): FileHandle {
    if (this.readOnly && filePath.startsWith(this.fullDir)) {
      throw Object.assign(new Error('EROFS: read-only file system, open'), { code: 'EROFS' });
    }
    const h = super.open(filePath, create);
    const write = h.write.bind(h);
    h.write = (buf, position) => {
      this.writes++;
      if (this.full && filePath.startsWith(this.fullDir)) {
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      }
      write(buf, position);
    };
    return h;
  }
}

test('a full log dir goes offline: KAFKA_STORAGE_ERROR there, the other dir goes on, its logs leave the manager', () => {
  const { dir, cleanup } = tempDir();
  try {
    const [d1, d2] = [path.join(dir, 'd1'), path.join(dir, 'd2')];
    const base = testContext();
    const disk = new FillableFileSystem(d2);
    const channel = new LogDirFailureChannel([d1, `${d2}/`], base.clock, base.scheduler, base.logger);
    const failed: string[] = [];
    channel.onOfflineLogDir((d) => failed.push(d));
    const ctx = { ...base, fs: new FailureDetectingFileSystem(disk, channel) };
    const m = new LogManager([d1, d2], logConfig({}), {
      ...ctx,
      scheduler: storageTaskScheduler(ctx.scheduler),
    });
    m.startup();
    const a = m.getOrCreateLog('a', 0);
    const b = m.getOrCreateLog('b', 0);
    assert.equal(m.logDirOf('b', 0), d2);
    a.appendAsLeader(makeBatch({ count: 2 }), 0);
    b.appendAsLeader(makeBatch({ count: 2 }), 0);

    disk.full = true;
    assert.throws(() => b.appendAsLeader(makeBatch({ count: 2 }), 0), isStorageError);
    assert.ok(channel.hasOfflineLogDir(d2));
    const lines = base.logger.lines.filter((l) => l.includes('Error while'));
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, new RegExp(`in dir ${d2}: ENOSPC.*Stopping serving replicas in dir ${d2}$`));
    // Offline: refused without touching the disk again, and reported once.
    const writes = disk.writes;
    assert.throws(() => b.appendAsLeader(makeBatch({ count: 1 }), 0), isStorageError);
    assert.equal(disk.writes, writes);
    assert.equal(base.logger.lines.filter((l) => l.includes('Error while')).length, 1);
    // The other dir is untouched.
    a.appendAsLeader(makeBatch({ count: 2 }), 0);
    assert.equal(a.logEndOffset, 4n);

    assert.deepEqual(failed, []);
    base.scheduler.runDue();
    assert.deepEqual(failed, [d2]);

    assert.deepEqual(m.handleLogDirFailure(d2), { current: [{ topic: 'b', partition: 0 }], future: [] });
    assert.equal(m.getLog('b', 0), undefined);
    assert.deepEqual(m.liveLogDirs, [d1]);
    assert.ok(base.logger.lines.some((l) => l.includes(`Logs for partitions b-0 are offline`)));
    // New logs, checkpoints and the clean-shutdown marker go to the live dir only.
    m.getOrCreateLog('c', 0);
    assert.equal(m.logDirOf('c', 0), d1);
    m.checkpointRecoveryPoints();
    m.shutdown();
    assert.ok(fs.existsSync(path.join(d1, CLEAN_SHUTDOWN_FILE)));
    assert.ok(!fs.existsSync(path.join(d2, CLEAN_SHUTDOWN_FILE)));
    assert.ok(fs.existsSync(path.join(d1, RECOVERY_POINT_CHECKPOINT)));
  } finally {
    cleanup();
  }
});

test('errors that are not the device failing pass through and leave the dir online', () => {
  const { dir, cleanup } = tempDir();
  try {
    const base = testContext();
    const channel = new LogDirFailureChannel([dir], base.clock, base.scheduler, base.logger);
    const guarded = new FailureDetectingFileSystem(new NodeFileSystem(), channel);
    assert.throws(
      () => guarded.readFile(path.join(dir, 'missing')),
      (e: NodeJS.ErrnoException) => e.code === 'ENOENT',
    );
    assert.equal(channel.hasOfflineLogDir(dir), false);
    // Paths outside every log dir are not the channel's business.
    assert.equal(channel.logDirOf(path.join(`${dir}-other`, 'x')), null);
    assert.equal(channel.logDirOf(path.join(dir, 'x', 'y')), dir);
  } finally {
    cleanup();
  }
});

test('a background task that meets an offline dir ends there; other errors still escape', () => {
  const base = testContext();
  const scheduler = storageTaskScheduler(base.scheduler);
  let ran = 0;
  scheduler.schedule('offline', 0, () => {
    ran++;
    throw KafkaError.fromCode(ErrorCode.KAFKA_STORAGE_ERROR, 'offline');
  });
  base.scheduler.runDue();
  assert.equal(ran, 1);
  scheduler.schedule('bug', 0, () => {
    throw new TypeError('a bug');
  });
  assert.throws(() => base.scheduler.runDue(), TypeError);
});

test('a dir that fails while loading is offline from the start; a log that may be there is not created elsewhere', () => {
  const { dir, cleanup } = tempDir();
  try {
    const [d1, d2] = [path.join(dir, 'd1'), path.join(dir, 'd2')];
    const base = testContext();
    const disk = new FillableFileSystem(d2);
    const channel = new LogDirFailureChannel([d1, d2], base.clock, base.scheduler, base.logger);
    const open = () =>
      new LogManager([d1, d2], logConfig({}), { ...base, fs: new FailureDetectingFileSystem(disk, channel) });
    const first = open();
    first.startup();
    first.getOrCreateLog('a', 0).appendAsLeader(makeBatch({ count: 1 }), 0);
    first.getOrCreateLog('b', 0).appendAsLeader(makeBatch({ count: 1 }), 0);
    first.shutdown();

    disk.readOnly = true;
    const m = open();
    m.startup();
    assert.ok(channel.hasOfflineLogDir(d2));
    assert.deepEqual(m.liveLogDirs, [d1]);
    assert.equal(m.getLog('a', 0)?.logEndOffset, 1n);
    assert.equal(m.getLog('b', 0), undefined);
    assert.ok(base.logger.lines.some((l) => l.includes(`Error while loading log dir ${d2}`)));
    assert.throws(() => m.getOrCreateLog('b', 0, undefined, undefined, false), isStorageError);
    m.getOrCreateLog('c', 0, undefined, undefined, true);
    assert.equal(m.logDirOf('c', 0), d1);
    m.shutdown();
  } finally {
    cleanup();
  }
});
