/**
 * The log dir's recovery-point-offset-checkpoint after a truncation or a deletion (Kafka's
 * LogManager.truncateTo, truncateFullyAndStartAt, asyncDelete): rewritten at once, so a crash
 * before the next periodic checkpoint does not trust bytes appended since below an older point;
 * and a background write of the file started before such a write is not renamed over it.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { logConfig } from '../../src/storage/log-config.js';
import { LogManager } from '../../src/storage/log-manager.js';
import { makeBatch, type TestContext, tempDir, testContext } from './helpers.js';

const RP_FILE = 'recovery-point-offset-checkpoint';
const LSO_FILE = 'log-start-offset-checkpoint';

/** Overwrites the last 100 bytes of the first `.log` of a partition dir; returns its `.log` files. */
function tearFirstSegment(tp: string): string[] {
  const logs = fs
    .readdirSync(tp)
    .filter((f) => f.endsWith('.log'))
    .sort();
  const first = path.join(tp, logs[0]!);
  const fd = fs.openSync(first, 'r+');
  fs.writeSync(fd, Buffer.alloc(100, 7), 0, 100, fs.statSync(first).size - 100);
  fs.closeSync(fd);
  return logs;
}

function manager(dirs: string[], ctx: TestContext): LogManager {
  return new LogManager(dirs, logConfig({ segmentBytes: 3000 }), ctx);
}

test('a crash after a truncation re-validates what was appended since, below the old recovery point', () => {
  const { dir, cleanup } = tempDir();
  try {
    const dirs = [path.join(dir, 'd1')];
    const m = manager(dirs, testContext());
    m.startup();
    const log = m.getOrCreateLog('t', 0);
    for (let i = 0; i < 12; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 300 }), 1);
    log.flush();
    m.checkpointRecoveryPoints();
    assert.equal(fs.readFileSync(path.join(dirs[0]!, RP_FILE), 'utf8'), '0\n1\nt 0 24\n');
    // A follower diverged: back to 4, then 24 offsets more, none flushed, several segments rolled.
    assert.ok(log.truncateTo(4n, { quiet: true }));
    assert.equal(fs.readFileSync(path.join(dirs[0]!, RP_FILE), 'utf8'), '0\n1\nt 0 4\n');
    for (let i = 0; i < 12; i++)
      log.appendAsLeader(makeBatch({ baseOffset: 4n + BigInt(2 * i), count: 2, valueBytes: 300 }), 2);
    assert.equal(log.logEndOffset, 28n);
    m.abandon(); // killed before the next periodic checkpoint
    // The power cut tore the end of the first segment (written after the truncation, never flushed).
    const logs = tearFirstSegment(path.join(dirs[0]!, 't-0'));
    assert.ok(logs.length >= 3, `segments ${logs.join(' ')}`);
    const ctx2 = testContext();
    const again = manager(dirs, ctx2);
    again.startup();
    const reloaded = again.getLog('t', 0)!;
    assert.ok(reloaded.logEndOffset < 8n, `torn batch found and cut: LEO ${reloaded.logEndOffset}`);
    assert.ok(ctx2.logger.lines.some((l) => l.includes('recovered segment')));
    again.shutdown();
  } finally {
    cleanup();
  }
});

test('a full truncation rewrites the checkpoint; a log created again after a deletion and a crash does not load the old entries', () => {
  const { dir, cleanup } = tempDir();
  try {
    const dirs = [path.join(dir, 'd1')];
    const m = manager(dirs, testContext());
    m.startup();
    const read = (file: string) => fs.readFileSync(path.join(dirs[0]!, file), 'utf8');
    const a = m.getOrCreateLog('a', 0);
    const b = m.getOrCreateLog('b', 0);
    for (let i = 0; i < 6; i++) {
      a.appendAsLeader(makeBatch({ count: 2, valueBytes: 300 }), 1);
      b.appendAsLeader(makeBatch({ count: 2, valueBytes: 300 }), 1);
    }
    a.flush();
    b.flush();
    b.updateHighWatermark(12n);
    b.maybeIncrementLogStartOffset(5n, 'test');
    m.checkpointRecoveryPoints();
    assert.equal(read(RP_FILE), '0\n2\na 0 12\nb 0 12\n');
    assert.equal(read(LSO_FILE), '0\n2\na 0 0\nb 0 5\n');
    a.truncateFullyAndStartAt(3n, { quiet: true });
    assert.equal(read(RP_FILE), '0\n2\na 0 3\nb 0 12\n');
    // Raised, not lowered: the file's lower point only costs work, it is left to the period.
    a.truncateFullyAndStartAt(20n, { quiet: true });
    assert.equal(read(RP_FILE), '0\n2\na 0 3\nb 0 12\n');
    assert.ok(m.deleteLog('b', 0));
    m.abandon(); // killed before the files were written again: they still name b
    const m2 = manager(dirs, testContext());
    m2.startup();
    const bAgain = m2.getOrCreateLog('b', 0);
    assert.ok(!read(RP_FILE).includes('b 0') && !read(LSO_FILE).includes('b 0'), 'the old entries are gone');
    for (let i = 0; i < 6; i++) bAgain.appendAsLeader(makeBatch({ count: 2, valueBytes: 300 }), 1);
    m2.abandon();
    // The power cut tore the end of the new log's first segment, never flushed.
    const logs = tearFirstSegment(path.join(dirs[0]!, 'b-0'));
    assert.ok(logs.length >= 2, `segments ${logs.join(' ')}`);
    const m3 = manager(dirs, testContext());
    m3.startup();
    const reloaded = m3.getOrCreateLog('b', 0);
    assert.equal(reloaded.logStartOffset, 0n, 'no records hidden by the old log start');
    assert.ok(
      reloaded.logEndOffset < BigInt(logs[1]!.slice(0, 20)),
      `torn batch cut: LEO ${reloaded.logEndOffset}`,
    );
    m3.shutdown();
  } finally {
    cleanup();
  }
});

test('a background checkpoint write started before a synchronous one is not renamed over it', () => {
  const { dir, cleanup } = tempDir();
  try {
    const base = testContext();
    const calls: { file: string; data: string; stillWanted: () => boolean }[] = [];
    const bgFs = Object.assign(Object.create(base.fs) as typeof base.fs, {
      writeFileAtomicInBackground: (file: string, data: Buffer, stillWanted: () => boolean) => {
        calls.push({ file: path.basename(file), data: data.toString('utf8'), stillWanted });
        return new Promise<boolean>(() => {});
      },
    });
    const ctx: TestContext = { ...base, fs: bgFs };
    const m = manager([dir], ctx);
    m.startup();
    const log = m.getOrCreateLog('t', 0);
    for (let i = 0; i < 6; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 300 }), 1);
    log.flush();
    ctx.clock.advance(60_000);
    ctx.scheduler.runDue();
    const rpWrites = () => calls.filter((c) => c.file === RP_FILE);
    assert.equal(rpWrites().length, 1);
    assert.equal(rpWrites()[0]!.data, '0\n1\nt 0 12\n');
    assert.ok(rpWrites()[0]!.stillWanted(), 'wanted until a synchronous write');
    log.truncateTo(4n, { quiet: true });
    assert.equal(fs.readFileSync(path.join(dir, RP_FILE), 'utf8'), '0\n1\nt 0 4\n');
    assert.equal(rpWrites()[0]!.stillWanted(), false, 'its older offsets would replace the truncation’s');
    // The shutdown's synchronous writes supersede the other files' background writes too.
    const others = calls.filter((c) => c.file !== RP_FILE);
    assert.ok(others.length > 0 && others.every((c) => c.stillWanted()));
    m.shutdown();
    assert.ok(others.every((c) => !c.stillWanted()));
  } finally {
    cleanup();
  }
});
