/**
 * Moving a replica between two log dirs of one broker (AlterLogDirsManager over a real LogManager,
 * manual clock): the future log is copied at the alter-log-dirs rate, follows appends, is swapped
 * in when its LEO meets the current one (same Log object, new dir, old dir deleted later), a move
 * to the current dir cancels, and a move cut by a shutdown resumes at the next start.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { AlterLogDirsManager, wholeBatches } from '../../src/broker/alter-log-dirs.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import { logConfig } from '../../src/storage/log-config.js';
import { LogManager } from '../../src/storage/log-manager.js';
import { makeBatch, type TestContext, tempDir, testContext } from '../storage/helpers.js';

function setup(
  dirs: string[],
  ctx: TestContext,
  rate: { value: number | null },
  config = logConfig({ segmentBytes: 4000, fileDeleteDelayMs: 1000 }),
) {
  const m = new LogManager(dirs, config, ctx);
  m.startup();
  const mover = new AlterLogDirsManager({
    logManager: m,
    clock: ctx.clock,
    scheduler: ctx.scheduler,
    logger: ctx.logger,
    rateBytesPerSec: () => rate.value,
    chunkBytes: () => 1_048_576,
    windowMs: 1000,
  });
  mover.start();
  return { m, mover };
}

function fill(m: LogManager, batches: number): void {
  const log = m.getOrCreateLog('t', 0);
  for (let i = 0; i < batches; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 200 }), 0);
  log.updateHighWatermark(log.logEndOffset);
}

const dirNames = (d: string) => fs.readdirSync(d).filter((f) => f.startsWith('t-0'));

test('a throttled move copies at the alter-log-dirs rate, keeps up with appends and swaps in the future log', () => {
  const { dir, cleanup } = tempDir();
  try {
    const dirs = [path.join(dir, 'd1'), path.join(dir, 'd2')];
    const ctx = testContext();
    const rate: { value: number | null } = { value: 2000 };
    const { m, mover } = setup(dirs, ctx, rate);
    fill(m, 40);
    const log = m.getOrCreateLog('t', 0, undefined, 'ZxTc2JvPRhuNLmJ8dZ5tkQ');
    assert.equal(m.logDirOf('t', 0), dirs[0]);
    const total = log.size;
    assert.ok(total > 15_000, `${total}`);

    assert.equal(mover.alterReplicaLogDir('t', 0, path.join(dir, 'nowhere')), ErrorCode.LOG_DIR_NOT_FOUND);
    assert.equal(mover.alterReplicaLogDir('other', 0, dirs[1]!), ErrorCode.REPLICA_NOT_AVAILABLE);
    assert.equal(mover.alterReplicaLogDir('t', 0, `${dirs[1]}/`), ErrorCode.NONE);
    assert.match(dirNames(dirs[1]!).join(), /^t-0\.[a-z0-9]+-future$/);
    // Asking again for the same target changes nothing.
    assert.equal(mover.alterReplicaLogDir('t', 0, dirs[1]!), ErrorCode.NONE);
    let [f] = mover.futureReplicas();
    assert.deepEqual({ dir: f!.logDir, lag: f!.offsetLag }, { dir: dirs[1], lag: log.logEndOffset });

    // Five seconds at 2000 B/s: the bucket starts empty, so about 10 kB, not the whole log.
    for (let s = 0; s < 5; s++) {
      ctx.clock.advance(1000);
      ctx.scheduler.runDue();
    }
    const copied = mover.copiedBytes;
    assert.ok(copied >= 8000 && copied <= 10_000 + 500, `copied ${copied} bytes in 5 s at 2000 B/s`);
    [f] = mover.futureReplicas();
    assert.ok(f!.offsetLag > 0n && f!.offsetLag < log.logEndOffset, `${f!.offsetLag}`);
    assert.equal(m.logDirOf('t', 0), dirs[0], 'still in the old dir while copying');

    // Appends go on meanwhile; unthrottled, the move catches up with all of them and completes.
    fill(m, 5);
    const leo = log.logEndOffset;
    const hw = log.highWatermark;
    rate.value = null;
    ctx.clock.advance(1000);
    ctx.scheduler.runDue();
    assert.equal(mover.futureReplicas().length, 0);
    assert.equal(m.getLog('t', 0), log, 'the same Log object carries on');
    assert.equal(m.logDirOf('t', 0), dirs[1]);
    assert.equal(log.dir, path.join(dirs[1]!, 't-0'));
    // The future log got the topic id when it was created: partition.metadata moved with the log.
    assert.equal(
      fs.readFileSync(path.join(dirs[1]!, 't-0', 'partition.metadata'), 'utf8'),
      'version: 0\ntopic_id: ZxTc2JvPRhuNLmJ8dZ5tkQ',
    );
    assert.equal(log.topicId, 'ZxTc2JvPRhuNLmJ8dZ5tkQ');
    assert.equal(log.logEndOffset, leo);
    assert.equal(log.highWatermark, hw);
    assert.equal(log.size, total + 5 * (total / 40));
    assert.match(dirNames(dirs[0]!).join(), /^t-0\.[a-z0-9]+-delete$/);
    // Reads and appends use the new files.
    const first = log.read(0n, 1_000_000, 'log-end', true).records;
    const file = fs.readFileSync(path.join(dirs[1]!, 't-0', '00000000000000000000.log'));
    assert.ok(first.length > 0 && first.equals(file.subarray(0, first.length)));
    log.appendAsLeader(makeBatch({ count: 1, valueBytes: 10 }), 0);
    assert.equal(log.logEndOffset, leo + 1n);
    ctx.clock.advance(1000);
    ctx.scheduler.runDue();
    assert.deepEqual(dirNames(dirs[0]!), [], 'the old directory is removed after file.delete.delay.ms');

    mover.shutdown();
    m.shutdown();
    const ctx2 = testContext();
    const again = new LogManager(dirs, logConfig({ segmentBytes: 4000 }), ctx2);
    again.startup();
    assert.equal(again.logDirOf('t', 0), dirs[1]);
    assert.equal(again.getLog('t', 0)!.logEndOffset, leo + 1n);
    again.shutdown();
  } finally {
    cleanup();
  }
});

test('a move to the dir the log is in cancels the move in progress; a move cut by a shutdown resumes', () => {
  const { dir, cleanup } = tempDir();
  try {
    const dirs = [path.join(dir, 'd1'), path.join(dir, 'd2')];
    const ctx = testContext();
    const rate = { value: 1000 };
    const { m, mover } = setup(dirs, ctx, rate);
    fill(m, 20);
    assert.equal(mover.alterReplicaLogDir('t', 0, dirs[1]!), ErrorCode.NONE);
    ctx.clock.advance(1000);
    ctx.scheduler.runDue();
    assert.equal(mover.alterReplicaLogDir('t', 0, dirs[0]!), ErrorCode.NONE);
    assert.equal(mover.futureReplicas().length, 0);
    assert.match(dirNames(dirs[1]!).join(), /-delete$/);
    assert.equal(m.logDirOf('t', 0), dirs[0]);

    // Start again and stop half-way.
    assert.equal(mover.alterReplicaLogDir('t', 0, dirs[1]!), ErrorCode.NONE);
    ctx.clock.advance(2000);
    ctx.scheduler.runDue();
    assert.ok(mover.futureReplicas()[0]!.offsetLag > 0n);
    mover.shutdown();
    m.shutdown();

    const ctx2 = testContext();
    const rate2: { value: number | null } = { value: null };
    const { m: m2, mover: mover2 } = setup(dirs, ctx2, rate2);
    assert.equal(m2.logDirOf('t', 0), dirs[0]);
    ctx2.clock.advance(10);
    ctx2.scheduler.runDue();
    assert.equal(mover2.futureReplicas().length, 0);
    assert.equal(m2.logDirOf('t', 0), dirs[1]);
    assert.equal(m2.getLog('t', 0)!.logEndOffset, 40n);
    mover2.shutdown();
    m2.shutdown();
  } finally {
    cleanup();
  }
});

test('a read cut inside a batch is copied up to the last whole batch', () => {
  const a = makeBatch({ count: 1, valueBytes: 50 });
  const b = makeBatch({ count: 1, valueBytes: 50 });
  const both = Buffer.concat([a, b]);
  assert.equal(wholeBatches(both).length, both.length);
  assert.equal(wholeBatches(both.subarray(0, both.length - 3)).length, a.length);
  assert.equal(wholeBatches(both.subarray(0, 10)).length, 0);
});

test('the future log follows a truncation of the current log (a follower that diverged) and ends byte-identical', () => {
  const { dir, cleanup } = tempDir();
  try {
    const dirs = [path.join(dir, 'd1'), path.join(dir, 'd2')];
    const ctx = testContext();
    const rate: { value: number | null } = { value: 3000 };
    const { m, mover } = setup(dirs, ctx, rate, logConfig({ segmentBytes: 1_000_000 }));
    const log = m.getOrCreateLog('t', 0);
    for (let i = 0; i < 30; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 200 }), 0);
    assert.equal(mover.alterReplicaLogDir('t', 0, dirs[1]!), ErrorCode.NONE);
    for (let s = 0; s < 3; s++) {
      ctx.clock.advance(1000);
      ctx.scheduler.runDue();
    }
    const futureLeo = m.futureLog('t', 0)!.logEndOffset;
    assert.ok(futureLeo > 10n && futureLeo < 60n, `${futureLeo}`);
    // The current log loses its tail below what was copied and gets other batches, in epoch 1.
    log.truncateTo(futureLeo - 6n);
    for (let i = 0; i < 10; i++) log.appendAsLeader(makeBatch({ count: 3, valueBytes: 120 }), 1);
    const expected = Buffer.from(log.read(0n, 10_000_000, 'log-end', true).records);
    rate.value = null;
    ctx.clock.advance(1000);
    ctx.scheduler.runDue();
    assert.equal(m.logDirOf('t', 0), dirs[1]);
    assert.deepEqual(log.read(0n, 10_000_000, 'log-end', true).records, expected);
    assert.deepEqual(log.leaderEpochCache.entries(), [
      { epoch: 0, startOffset: 0n },
      { epoch: 1, startOffset: futureLeo - 6n },
    ]);
    mover.shutdown();
    m.shutdown();
  } finally {
    cleanup();
  }
});

test('a move that fails is dropped with one warning; the log stays where it was and the broker goes on', () => {
  const { dir, cleanup } = tempDir();
  try {
    const dirs = [path.join(dir, 'd1'), path.join(dir, 'd2')];
    const ctx = testContext();
    const { m, mover } = setup(dirs, ctx, { value: null });
    fill(m, 10);
    assert.equal(mover.alterReplicaLogDir('t', 0, dirs[1]!), ErrorCode.NONE);
    m.futureLog('t', 0)!.appendAsFollower = () => {
      throw new Error('No space left on device');
    };
    ctx.clock.advance(10);
    ctx.scheduler.runDue();
    assert.equal(mover.futureReplicas().length, 0);
    assert.equal(m.logDirOf('t', 0), dirs[0]);
    assert.ok(
      ctx.logger.lines.some((l) => /t-0: log dir move failed.*No space left on device/.test(l)),
      ctx.logger.lines.join('\n'),
    );
    // A new request starts a new move, which completes.
    assert.equal(mover.alterReplicaLogDir('t', 0, dirs[1]!), ErrorCode.NONE);
    ctx.clock.advance(10);
    ctx.scheduler.runDue();
    assert.equal(m.logDirOf('t', 0), dirs[1]);
    mover.shutdown();
    m.shutdown();
  } finally {
    cleanup();
  }
});

test('a move into a failed log dir answers KAFKA_STORAGE_ERROR', () => {
  const { dir, cleanup } = tempDir();
  try {
    const dirs = [path.join(dir, 'd1'), path.join(dir, 'd2')];
    const ctx = testContext();
    const { m, mover } = setup(dirs, ctx, { value: null });
    fill(m, 2);
    m.handleLogDirFailure(dirs[1]!);
    assert.equal(mover.alterReplicaLogDir('t', 0, dirs[1]!), ErrorCode.KAFKA_STORAGE_ERROR);
    m.shutdown();
  } finally {
    cleanup();
  }
});
