import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import { Log } from '../../src/storage/log.js';
import { type LogConfig, logConfig } from '../../src/storage/log-config.js';
import { makeBatch, type TestContext, tempDir, testContext } from './helpers.js';

function withLog(config: Partial<LogConfig>, fn: (log: Log, ctx: TestContext) => void): void {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  const log = Log.open({
    dir: path.join(dir, 't-0'),
    topic: 't',
    partition: 0,
    config: logConfig(config),
    ctx,
    hadCleanShutdown: true,
  });
  try {
    fn(log, ctx);
  } finally {
    log.close();
    cleanup();
  }
}

test('flush.messages: the recovery point follows the LEO every N messages', () => {
  withLog({ flushMessages: 5 }, (log) => {
    log.appendAsLeader(makeBatch({ count: 3 }), 0);
    assert.equal(log.recoveryPoint, 0n);
    log.appendAsLeader(makeBatch({ count: 3 }), 0);
    assert.equal(log.recoveryPoint, 6n);
    log.appendAsLeader(makeBatch({ count: 1 }), 0);
    assert.equal(log.recoveryPoint, 6n);
  });
});

test('flush.ms: a flush once the last one is older than the setting', () => {
  withLog({ flushMs: 1000 }, (log, ctx) => {
    log.appendAsLeader(makeBatch({ count: 2 }), 0);
    assert.equal(log.recoveryPoint, 0n);
    ctx.clock.advance(1000);
    log.flushIfDue();
    assert.equal(log.recoveryPoint, 2n);
  });
});

test('the default policy never fsyncs on append; a roll flushes the finished segment in the background', () => {
  withLog({ segmentBytes: 2000 }, (log, ctx) => {
    for (let i = 0; i < 3; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 400 }), 0);
    assert.equal(log.recoveryPoint, 0n);
    assert.ok(log.local.segments.size >= 2);
    ctx.scheduler.runDue();
    assert.equal(log.recoveryPoint, log.local.segments.active().baseOffset);
  });
});

test('retention by time and by size removes the oldest segments below the HW only', () => {
  withLog({ segmentBytes: 2000, retentionMs: 60_000 }, (log, ctx) => {
    const t0 = BigInt(ctx.clock.nowMs());
    for (let i = 0; i < 6; i++) {
      log.appendAsLeader(makeBatch({ count: 2, valueBytes: 400, timestamp: t0 + BigInt(i) * 10_000n }), 0);
    }
    const segments = log.local.segments.size;
    assert.ok(segments >= 3);
    ctx.clock.advance(100_000); // batches 0..3 are older than 60 s
    assert.equal(log.deleteOldSegments(), 0, 'nothing below the HW yet');
    log.updateHighWatermark(log.logEndOffset);
    const deleted = log.deleteOldSegments();
    assert.ok(deleted >= 1);
    assert.equal(log.logStartOffset, log.local.segments.first()!.baseOffset);
    assert.ok(ctx.logger.lines.some((l) => l.includes('due to segment deletion')));
    for (const s of log.local.segments.values()) {
      if (s !== log.local.segments.active()) {
        assert.ok(s.largestTimestamp().timestamp >= BigInt(ctx.clock.nowMs()) - 60_000n);
      }
    }
  });
  withLog({ segmentBytes: 2000, retentionBytes: 2500 }, (log) => {
    for (let i = 0; i < 8; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 400 }), 0);
    log.updateHighWatermark(log.logEndOffset);
    log.deleteOldSegments();
    assert.ok(log.size <= 2500 + 2000, `size ${log.size}`);
    assert.ok(log.size > 0);
  });
});
