/**
 * Periodic recovery-point and HW checkpoints through the file system's background write (a
 * broker's NodeFileSystem has it): the offsets are taken when the period fires, the file lands
 * through `<file>.bg.tmp`, a write still going makes the next period skip that file, a failure
 * is one warning; the log start offset checkpoint stays synchronous.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { NodeFileSystem } from '../../src/storage/fs.js';
import { logConfig } from '../../src/storage/log-config.js';
import { LogManager } from '../../src/storage/log-manager.js';
import { makeBatch, type TestContext, tempDir, testContext } from './helpers.js';

const HW_FILE = 'replication-offset-checkpoint';

async function until(what: string, probe: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !probe(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(probe(), what);
}

test('a real background write puts the offsets taken at the period in place', async () => {
  const { dir, cleanup } = tempDir();
  try {
    const ctx: TestContext = { ...testContext(), fs: new NodeFileSystem({ backgroundWrites: true }) };
    const m = new LogManager([dir], logConfig({ segmentBytes: 3000 }), ctx);
    m.startup();
    const log = m.getOrCreateLog('t', 0);
    log.appendAsLeader(makeBatch({ count: 3 }), 0);
    log.updateHighWatermark(3n);
    ctx.clock.advance(5000);
    ctx.scheduler.runDue();
    // Moved after the period fired: the file holds the offsets of that moment.
    log.appendAsLeader(makeBatch({ baseOffset: 3n, count: 2 }), 0);
    log.updateHighWatermark(5n);
    const hwFile = path.join(dir, HW_FILE);
    await until('HW checkpoint written', () => fs.existsSync(hwFile));
    assert.equal(fs.readFileSync(hwFile, 'utf8'), '0\n1\nt 0 3\n');
    await until('no temporary file left', () => !fs.existsSync(`${hwFile}.bg.tmp`));
    m.shutdown();
    assert.equal(fs.readFileSync(hwFile, 'utf8'), '0\n1\nt 0 5\n', 'shutdown writes the latest');
  } finally {
    cleanup();
  }
});

test('a file still being written is skipped; failures warn; log start offsets have a writer of their own', async () => {
  const { dir, cleanup } = tempDir();
  try {
    const base = testContext();
    const calls: { file: string; data: string; finish: (e?: Error) => void }[] = [];
    const bgFs = Object.assign(Object.create(base.fs) as typeof base.fs, {
      writeFileAtomicInBackground: (file: string, data: Buffer) =>
        new Promise<void>((resolve, reject) =>
          calls.push({
            file: path.basename(file),
            data: data.toString('utf8'),
            finish: (e?: Error) => (e ? reject(e) : resolve()),
          }),
        ),
    });
    const ctx: TestContext = { ...base, fs: bgFs };
    const m = new LogManager([dir], logConfig({ segmentBytes: 3000 }), ctx);
    m.startup();
    const log = m.getOrCreateLog('t', 0);
    log.appendAsLeader(makeBatch({ count: 3 }), 0);
    log.updateHighWatermark(3n);
    ctx.clock.advance(5000);
    ctx.scheduler.runDue();
    const hw = () => calls.filter((c) => c.file === HW_FILE);
    assert.equal(hw().length, 1);
    assert.equal(hw()[0]!.data, '0\n1\nt 0 3\n');
    assert.ok(!fs.existsSync(path.join(dir, HW_FILE)), 'through the background write only');
    ctx.clock.advance(5000);
    ctx.scheduler.runDue();
    assert.equal(hw().length, 1, 'skipped while the previous write is going');
    hw()[0]!.finish(new Error('disk full'));
    await new Promise((r) => setImmediate(r));
    assert.ok(base.logger.lines.some((l) => /replication-offset-checkpoint failed: disk full/.test(l)));
    ctx.clock.advance(5000);
    ctx.scheduler.runDue();
    assert.equal(hw().length, 2, 'written again after the failure');
    // The log start offset checkpoint has a writer of its own: at once when a log start moves,
    // one write at a time (a move during a write makes one more), and every 60 s.
    const ls = () => calls.filter((c) => c.file === 'log-start-offset-checkpoint');
    log.maybeIncrementLogStartOffset(1n, 'test');
    assert.equal(ls().length, 1);
    assert.equal(ls()[0]!.data, '0\n1\nt 0 1\n');
    log.maybeIncrementLogStartOffset(2n, 'test');
    assert.equal(ls().length, 1, 'one write at a time');
    const persisted = m.whenLogStartOffsetsPersisted();
    ls()[0]!.finish();
    for (let i = 0; i < 5 && ls().length < 2; i++) await new Promise((r) => setImmediate(r));
    assert.equal(ls().length, 2, 'the move during the write is written after it');
    assert.equal(ls()[1]!.data, '0\n1\nt 0 2\n');
    ls()[1]!.finish();
    await persisted;
    ctx.clock.advance(60_000);
    ctx.scheduler.runDue();
    assert.equal(ls().length, 3, 'and every log.flush.start.offset.checkpoint.interval.ms');
    assert.ok(
      !fs.existsSync(path.join(dir, 'log-start-offset-checkpoint')),
      'through the background write only',
    );
    for (const c of calls) c.finish();
    await m.whenLogStartOffsetsPersisted();
    m.shutdown();
  } finally {
    cleanup();
  }
});
