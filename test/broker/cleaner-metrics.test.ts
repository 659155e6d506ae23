/**
 * The log cleaner's gauges (Kafka's LogCleaner and LogCleanerManager metrics) over a real log in
 * a temp dir, cleaned by a LogCleaner on a manual clock and scheduler: each gauge against what the
 * cleaning did, an uncleanable partition after a failed cleaning, a dead thread after an error
 * outside a cleaning. The scrape of a real broker process is in test/metrics/cleaner-process.test.ts.
 */
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import { cleanerGauges } from '../../src/broker/cleaner-metrics.js';
import { encodeBatch } from '../../src/protocol/records/codec.js';
import { cleanableOffsets, logToClean } from '../../src/storage/cleanable.js';
import { type FileHandle, NodeFileSystem } from '../../src/storage/fs.js';
import { Log } from '../../src/storage/log.js';
import { type CleanableLog, DEFAULT_CLEANER_CONFIG, LogCleaner } from '../../src/storage/log-cleaner.js';
import { type LogConfig, logConfig } from '../../src/storage/log-config.js';
import { type TestContext, tempDir, testContext } from '../storage/helpers.js';

const DAY_MS = 24 * 60 * 60 * 1000;

function compactedLog(dir: string, ctx: TestContext, config: Partial<LogConfig> = {}): Log {
  const log = Log.open({
    dir: path.join(dir, 'c-0'),
    topic: 'c',
    partition: 0,
    config: logConfig({
      compact: true,
      delete: false,
      segmentBytes: 4096,
      minCleanableDirtyRatio: 0.5,
      ...config,
    }),
    ctx,
    hadCleanShutdown: true,
  });
  // 300 records over 10 keys, 10 a batch, timestamps a day before the manual clock's start.
  for (let i = 0; i < 300; i += 10) {
    log.appendAsLeader(
      encodeBatch({
        baseTimestamp: BigInt(ctx.clock.nowMs() - DAY_MS),
        records: Array.from({ length: 10 }, (_, j) => ({
          key: Buffer.from(`k${(i + j) % 10}`),
          value: Buffer.from(`value-${i + j}`),
          timestampDelta: BigInt(j),
        })),
      }),
      0,
    );
  }
  log.updateHighWatermark(log.logEndOffset);
  return log;
}

function cleanerOf(ctx: TestContext, logs: () => Iterable<CleanableLog>): LogCleaner {
  return new LogCleaner(() => ({ ...DEFAULT_CLEANER_CONFIG, dedupeBufferSize: 24 * 1000 }), ctx, logs);
}

test('cleaner gauges before and after a cleaning read what it did', (t) => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  const log = compactedLog(dir, ctx, { maxCompactionLagMs: 60 * 60 * 1000 });
  t.after(() => {
    log.close();
    cleanup();
  });
  const cleaner = cleanerOf(ctx, () => [{ log, logDir: dir }]);
  ctx.clock.advance(5_000);
  let g = cleanerGauges(cleaner, [dir], ctx.clock.nowMs());
  assert.deepEqual(
    [g.maxBufferUtilizationPercent, g.recopyPercent, g.maxCleanTimeSecs, g.maxCompactionDelaySecs],
    [0, 0, 0, 0],
    'no cleaning yet',
  );
  assert.equal(g.timeSinceLastRunMs, 5_000, 'since the cleaner was made');
  // Everything below the active segment is dirty before the first cleaning: ratio 1.
  const before = cleanableOffsets(log, undefined, ctx.clock.nowMs());
  assert.equal(
    logToClean(log, before.firstDirtyOffset, before.firstUncleanableDirtyOffset, false).cleanableRatio,
    1,
  );

  cleaner.startup();
  t.after(() => cleaner.shutdown());
  ctx.scheduler.runDue();
  assert.equal(cleaner.history.length, 1);
  const stats = cleaner.history[0]!.stats;
  g = cleanerGauges(cleaner, [dir], ctx.clock.nowMs());
  assert.equal(g.recopyPercent, Math.trunc((100 * stats.bytesWritten) / stats.bytesRead));
  assert.ok(
    g.recopyPercent > 0 && g.recopyPercent < 50,
    `recopy ${g.recopyPercent}%: 10 of 300 records kept`,
  );
  assert.equal(g.maxBufferUtilizationPercent, Math.trunc(100 * stats.bufferUtilization));
  assert.equal(g.maxBufferUtilizationPercent, 1, '10 keys in 1,000 slots');
  assert.equal(g.maxCleanTimeSecs, 0, 'the manual clock stood still');
  // The first batch (max timestamp 9 ms after its first) was written a day and 5 s before the look;
  // max.compaction.lag.ms is an hour.
  assert.equal(g.maxCompactionDelaySecs, Math.trunc((DAY_MS + 5_000 - 9 - 60 * 60 * 1000) / 1000));
  assert.equal(g.timeSinceLastRunMs, 0);
  // The look after the cleaning found the log clean up to the active segment.
  const after = cleanableOffsets(log, cleaner.checkpointOf(dir, log), ctx.clock.nowMs());
  const ratio = logToClean(
    log,
    after.firstDirtyOffset,
    after.firstUncleanableDirtyOffset,
    false,
  ).cleanableRatio;
  assert.equal(g.maxDirtyPercent, Math.trunc(100 * ratio));
  assert.ok(g.maxDirtyPercent < 100);
  assert.equal(g.deadThreadCount, 0);
  assert.deepEqual(g.uncleanable.get(dir), { partitions: 0, bytes: 0 });
});

/** The real file system, except that writing a `.cleaned` segment fails `failures` times. */
class FailingCleanedWrites extends NodeFileSystem {
  constructor(private failures: number) {
    super();
  }
  override open(filePath: string, create: boolean): FileHandle {
    const h = super.open(filePath, create);
    const write = h.write.bind(h);
    h.write = (buf, position) => {
      if (filePath.endsWith('.cleaned') && this.failures > 0) {
        this.failures--;
        throw new Error('EIO: injected');
      }
      write(buf, position);
    };
    h.sync = () => {};
    return h;
  }
}

test('a cleaning that fails marks its partition uncleanable in its log dir, with its dirty bytes', (t) => {
  const { dir, cleanup } = tempDir();
  const ctx = { ...testContext(), fs: new FailingCleanedWrites(1) };
  const log = compactedLog(dir, ctx);
  t.after(() => {
    log.close();
    cleanup();
  });
  const cleaner = cleanerOf(ctx, () => [{ log, logDir: dir }]);
  cleaner.startup();
  t.after(() => cleaner.shutdown());
  ctx.scheduler.runDue();
  assert.equal(cleaner.history.length, 0, 'nothing was cleaned');
  const g = cleanerGauges(cleaner, [dir, '/other/dir'], ctx.clock.nowMs());
  const offsets = cleanableOffsets(log, undefined, ctx.clock.nowMs());
  const dirty = logToClean(log, offsets.firstDirtyOffset, offsets.firstUncleanableDirtyOffset, false);
  assert.ok(dirty.cleanableBytes > 0);
  assert.deepEqual(g.uncleanable.get(dir), { partitions: 1, bytes: dirty.cleanableBytes });
  assert.deepEqual(g.uncleanable.get('/other/dir'), { partitions: 0, bytes: 0 });
  assert.equal(g.deadThreadCount, 0, 'the thread goes on');
  assert.match(ctx.logger.lines.join('\n'), /Marking its partition \(c-0\) as uncleanable/);
});

test('an error outside a cleaning stops the thread (a dead thread), not the broker, until a reconfiguration', (t) => {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  const log = compactedLog(dir, ctx);
  t.after(() => {
    log.close();
    cleanup();
  });
  let broken = true;
  let numThreads = 1;
  const cleaner = new LogCleaner(
    () => ({ ...DEFAULT_CLEANER_CONFIG, numThreads }),
    ctx,
    () => {
      if (broken) {
        broken = false;
        throw new Error('the list of logs failed');
      }
      return [{ log, logDir: dir }];
    },
  );
  cleaner.startup();
  ctx.scheduler.runDue();
  const g = cleanerGauges(cleaner, [dir], ctx.clock.nowMs());
  assert.equal(g.deadThreadCount, 1);
  assert.equal(cleaner.history.length, 0, 'its only thread is dead');
  assert.match(ctx.logger.lines.join('\n'), /log cleaner thread 0 stopped on an unexpected error/);
  // As Kafka's reconfiguration: a change of log.cleaner.threads restarts every thread, the dead one too.
  numThreads = 2;
  ctx.clock.advance(DEFAULT_CLEANER_CONFIG.backoffMs);
  ctx.scheduler.runDue();
  assert.equal(cleanerGauges(cleaner, [dir], ctx.clock.nowMs()).deadThreadCount, 0);
  assert.equal(cleaner.threadStates().length, 2);
  assert.equal(cleaner.history.length, 1, 'the restarted threads cleaned the log');
  cleaner.shutdown();
});
