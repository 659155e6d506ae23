import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { KafkaError } from '../../src/protocol/kafka-error.js';
import { readBatchHeader } from '../../src/protocol/records/batch.js';
import { batchesIn } from '../../src/protocol/records/validate.js';
import { UnexpectedAppendOffsetError } from '../../src/storage/errors.js';
import { rollJitterMs } from '../../src/storage/local-log.js';
import { Log } from '../../src/storage/log.js';
import { type LogConfig, logConfig } from '../../src/storage/log-config.js';
import { makeBatch, type TestContext, tempDir, testContext } from './helpers.js';

function openLog(dir: string, ctx: TestContext, config: Partial<LogConfig> = {}, clean = true): Log {
  return Log.open({
    dir: path.join(dir, 't-0'),
    topic: 't',
    partition: 0,
    config: logConfig(config),
    ctx,
    hadCleanShutdown: clean,
  });
}

function withLog(fn: (dir: string, ctx: TestContext) => void): void {
  const { dir, cleanup } = tempDir();
  try {
    fn(dir, testContext());
  } finally {
    cleanup();
  }
}

test('leader append assigns offsets from the LEO and stamps the leader epoch', () => {
  withLog((dir, ctx) => {
    const log = openLog(dir, ctx);
    const b1 = makeBatch({ baseOffset: 999n, count: 3 });
    const info = log.appendAsLeader(b1, 4);
    assert.equal(info.firstOffset, 0n);
    assert.equal(info.lastOffset, 2n);
    assert.equal(log.logEndOffset, 3n);
    const two = Buffer.concat([makeBatch({ count: 2 }), makeBatch({ count: 5 })]);
    const info2 = log.appendAsLeader(two, 5);
    assert.equal(info2.firstOffset, 3n);
    assert.equal(info2.lastOffset, 9n);
    assert.deepEqual(log.leaderEpochCache.entries(), [
      { epoch: 4, startOffset: 0n },
      { epoch: 5, startOffset: 3n },
    ]);
    const read = log.read(0n, 1 << 20, 'log-end', false);
    const headers = [...batchesIn(read.records)].map((e) => e.header);
    assert.deepEqual(
      headers.map((h) => [h.baseOffset, h.partitionLeaderEpoch]),
      [
        [0n, 4],
        [3n, 5],
        [5n, 5],
      ],
    );
    // the HW bounds what a consumer sees
    log.updateHighWatermark(3n);
    const hwRead = log.read(0n, 1 << 20, 'high-watermark', false);
    assert.equal([...batchesIn(hwRead.records)].length, 1);
    assert.equal(
      fs.readFileSync(path.join(dir, 't-0', 'leader-epoch-checkpoint'), 'utf8'),
      '0\n2\n4 0\n5 3\n',
    );
    assert.throws(
      () => log.read(11n, 100, 'log-end', false),
      (e: unknown) => e instanceof KafkaError && e.code === 1,
    );
    log.close();
  });
});

test('leader append refuses corrupt and oversized batches and appends nothing', () => {
  withLog((dir, ctx) => {
    const log = openLog(dir, ctx, { maxMessageBytes: 500 });
    const bad = makeBatch({ count: 2 });
    bad[bad.length - 1]! ^= 0xff;
    assert.throws(
      () => log.appendAsLeader(bad, 0),
      (e: unknown) => e instanceof KafkaError && e.code === 2,
    );
    assert.throws(
      () => log.appendAsLeader(makeBatch({ count: 2, valueBytes: 600 }), 0),
      (e: unknown) => e instanceof KafkaError && e.code === 10,
    );
    assert.equal(log.logEndOffset, 0n);
    assert.equal(log.size, 0);
    log.close();
  });
});

test('follower append keeps offsets, checks CRC, refuses offsets below the LEO', () => {
  withLog((dir, ctx) => {
    const log = openLog(dir, ctx);
    log.appendAsFollower(
      Buffer.concat([
        makeBatch({ baseOffset: 0n, count: 2, epoch: 1 }),
        makeBatch({ baseOffset: 5n, count: 2, epoch: 2 }),
      ]),
    );
    assert.equal(log.logEndOffset, 7n);
    assert.deepEqual(log.leaderEpochCache.entries(), [
      { epoch: 1, startOffset: 0n },
      { epoch: 2, startOffset: 5n },
    ]);
    assert.throws(
      () => log.appendAsFollower(makeBatch({ baseOffset: 6n, count: 2 })),
      UnexpectedAppendOffsetError,
    );
    const bad = makeBatch({ baseOffset: 7n, count: 2 });
    bad[40]! ^= 1;
    assert.throws(
      () => log.appendAsFollower(bad),
      (e: unknown) => e instanceof KafkaError && e.code === 2,
    );
    log.close();
  });
});

test('an empty follower whose first batch straddles the log start restarts at the batch base offset', () => {
  withLog((dir, ctx) => {
    const log = openLog(dir, ctx);
    log.truncateFullyAndStartAt(349_997n); // the leader's log start after DeleteRecords
    const info = log.appendAsFollower(makeBatch({ baseOffset: 349_995n, count: 5, epoch: 3 }));
    assert.equal(info.firstOffset, 349_995n);
    assert.equal(log.logStartOffset, 349_995n);
    assert.equal(log.logEndOffset, 350_000n);
    assert.ok(ctx.logger.lines.some((l) => l.includes('will start the log from offset 349995')));
    assert.ok(fs.existsSync(path.join(dir, 't-0', '00000000000000349995.log')));
    log.close();
  });
});

test('roll by segment.bytes, segment.ms and a full index; new base offset = LEO', () => {
  withLog((dir, ctx) => {
    const log = openLog(dir, ctx, {
      segmentBytes: 3000,
      segmentMs: 60_000,
      segmentIndexBytes: 16,
      indexIntervalBytes: 100,
    });
    for (let i = 0; i < 4; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 500 }), 0);
    const bases = log.local.segments.values().map((s) => s.baseOffset);
    assert.ok(bases.length >= 2, `segments ${bases}`);
    assert.equal(bases[0], 0n);
    // by time: the first batch's timestamp counts, as in Kafka
    const before = log.local.segments.size;
    log.appendAsLeader(makeBatch({ count: 1, valueBytes: 10, timestamp: 1_700_000_000_000n + 61_000n }), 0);
    log.appendAsLeader(makeBatch({ count: 1, valueBytes: 10, timestamp: 1_700_000_000_000n + 200_000n }), 0);
    assert.ok(log.local.segments.size > before);
    const names = fs.readdirSync(path.join(dir, 't-0')).filter((f) => f.endsWith('.log'));
    for (const n of names) assert.match(n, /^\d{20}\.log$/);
    // a rolled segment's indexes are trimmed
    const first = log.local.segments.first()!;
    assert.equal(fs.statSync(first.offsetIndex.path).size, first.offsetIndex.entries * 8);
    // full index: 16 bytes = 2 entries
    const log2 = openLog(path.join(dir, 'x'), ctx, { segmentIndexBytes: 16, indexIntervalBytes: 50 });
    for (let i = 0; i < 6; i++) log2.appendAsLeader(makeBatch({ count: 1, valueBytes: 100 }), 0);
    assert.ok(log2.local.segments.size >= 2);
    log.close();
    log2.close();
  });
});

test('segment.jitter.ms: each segment rolls up to that much before segment.ms, by a jitter spread over partitions and the same after a restart', () => {
  const config = logConfig({ segmentMs: 60_000, segmentJitterMs: 30_000 });
  const jitters = Array.from({ length: 64 }, (_, p) => rollJitterMs(`t-${p}`, 0n, config));
  assert.ok(jitters.every((j) => j >= 0 && j < 30_000));
  assert.ok(new Set(jitters).size > 50, `jitters spread: ${new Set(jitters).size} distinct of 64`);
  assert.equal(rollJitterMs('t-0', 0n, config), jitters[0]);
  assert.equal(rollJitterMs('t-0', 0n, logConfig({ segmentMs: 60_000 })), 0);
  // Bounded by segment.ms as Kafka bounds it.
  assert.ok(rollJitterMs('t-0', 0n, logConfig({ segmentMs: 10, segmentJitterMs: 30_000 })) < 10);
  withLog((dir, ctx) => {
    const log = openLog(dir, ctx, config);
    const jitter = rollJitterMs(log.local.name, 0n, config);
    const t0 = 1_700_000_000_000n;
    log.appendAsLeader(makeBatch({ count: 1, valueBytes: 10, timestamp: t0 }), 0);
    log.appendAsLeader(makeBatch({ count: 1, valueBytes: 10, timestamp: t0 + BigInt(60_000 - jitter) }), 0);
    assert.equal(log.local.segments.size, 1, 'not older than segment.ms less the jitter yet');
    log.appendAsLeader(
      makeBatch({ count: 1, valueBytes: 10, timestamp: t0 + BigInt(60_000 - jitter + 1) }),
      0,
    );
    assert.equal(log.local.segments.size, 2);
    log.close();
  });
});

test('truncateTo, delete-records and deferred deletion of .deleted files', () => {
  withLog((dir, ctx) => {
    const log = openLog(dir, ctx, { segmentBytes: 2500, fileDeleteDelayMs: 60_000 });
    for (let i = 0; i < 10; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 400 }), i < 5 ? 1 : 2);
    assert.equal(log.logEndOffset, 20n);
    const segs = log.local.segments.size;
    assert.ok(segs > 2);
    log.updateHighWatermark(20n);
    assert.equal(log.truncateTo(11n), true);
    assert.equal(log.logEndOffset, 10n); // 11 is inside batch 10..11
    assert.equal(log.highWatermark, 10n);
    assert.deepEqual(log.leaderEpochCache.entries(), [{ epoch: 1, startOffset: 0n }]);
    const tpDir = path.join(dir, 't-0');
    const deleted = () => fs.readdirSync(tpDir).filter((f) => f.endsWith('.deleted'));
    assert.ok(deleted().length > 0);
    ctx.clock.advance(59_999);
    ctx.scheduler.runDue();
    assert.ok(deleted().length > 0);
    ctx.clock.advance(1);
    ctx.scheduler.runDue();
    assert.deepEqual(deleted(), []);

    assert.throws(
      () => log.maybeIncrementLogStartOffset(11n, 'delete-records'),
      (e: unknown) => e instanceof KafkaError && e.code === 1,
    );
    log.updateHighWatermark(8n);
    assert.equal(log.maybeIncrementLogStartOffset(8n, 'delete-records'), true);
    assert.equal(log.logStartOffset, 8n);
    assert.throws(
      () => log.read(6n, 100, 'log-end', false),
      (e: unknown) => e instanceof KafkaError && e.code === 1,
    );
    assert.equal(readBatchHeader(log.read(8n, 1000, 'log-end', false).records, 0).baseOffset, 8n);
    assert.equal(log.deleteOldSegments() >= 1, true);
    assert.ok(log.local.segments.first()!.baseOffset <= 8n);
    log.close();
  });
});

test('truncateFullyAndStartAt renames every segment .deleted and starts empty at the offset', () => {
  withLog((dir, ctx) => {
    const log = openLog(dir, ctx, { segmentBytes: 2500 });
    for (let i = 0; i < 6; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 400 }), 1);
    log.truncateFullyAndStartAt(500n);
    assert.equal(log.logStartOffset, 500n);
    assert.equal(log.logEndOffset, 500n);
    assert.equal(log.highWatermark, 500n);
    assert.deepEqual(log.leaderEpochCache.entries(), []);
    const files = fs.readdirSync(path.join(dir, 't-0'));
    assert.ok(files.includes('00000000000000000500.log'));
    assert.ok(files.filter((f) => f.endsWith('.log.deleted')).length >= 2);
    assert.ok(ctx.logger.lines.some((l) => /truncated fully and restarted at offset 500/.test(l)));
    log.close();
  });
});

test('a clean reopen keeps LEO, epochs and indexes; leftover .deleted files are removed', () => {
  withLog((dir, ctx) => {
    const log = openLog(dir, ctx, { segmentBytes: 2500 });
    for (let i = 0; i < 8; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 400 }), i < 4 ? 1 : 3);
    log.truncateTo(10n);
    log.close();
    const tpDir = path.join(dir, 't-0');
    assert.ok(fs.readdirSync(tpDir).some((f) => f.endsWith('.deleted')));
    const again = openLog(dir, ctx, { segmentBytes: 2500 });
    assert.equal(again.logEndOffset, 10n);
    assert.deepEqual(again.leaderEpochCache.entries(), [
      { epoch: 1, startOffset: 0n },
      { epoch: 3, startOffset: 8n },
    ]);
    assert.ok(!fs.readdirSync(tpDir).some((f) => f.endsWith('.deleted')));
    assert.equal(again.fetchOffsetByTimestamp(1_700_000_000_001n)?.offset, 1n);
    again.close();
  });
});

test('an inactive segment whose index fails the sanity check is rebuilt at open', () => {
  withLog((dir, ctx) => {
    const log = openLog(dir, ctx, { segmentBytes: 20_000, indexIntervalBytes: 1000 });
    for (let i = 0; i < 40; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 400 }), 0);
    log.close();
    const idx = path.join(dir, 't-0', '00000000000000000000.index');
    const good = fs.readFileSync(idx);
    assert.ok(good.length >= 16);
    const bad = Buffer.from(good);
    bad.writeInt32BE(bad.readInt32BE(bad.length - 8) + 1, bad.length - 8); // last entry names the wrong offset
    fs.writeFileSync(idx, bad);
    const again = openLog(dir, ctx, { segmentBytes: 20_000, indexIntervalBytes: 1000 });
    assert.ok(ctx.logger.lines.some((l) => l.includes('recovered segment 0 (full validation)')));
    again.close();
    assert.deepEqual(fs.readFileSync(idx), good);
  });
});

test('ListOffsets helpers: max timestamp and last stable offset', () => {
  withLog((dir, ctx) => {
    const log = openLog(dir, ctx, { segmentBytes: 1500 });
    assert.equal(log.fetchOffsetOfMaxTimestamp(), null);
    const ts = [5n, 50n, 20n, 10n];
    for (const t of ts)
      log.appendAsLeader(makeBatch({ count: 2, valueBytes: 300, timestamp: 1_700_000_000_000n + t }), 3);
    assert.deepEqual(log.fetchOffsetOfMaxTimestamp(), {
      timestamp: 1_700_000_000_051n,
      offset: 3n,
      leaderEpoch: 3,
    });
    log.updateHighWatermark(6n);
    assert.equal(log.lastStableOffset, 6n);
    log.close();
  });
});

test('a corrupt leader-epoch-checkpoint is rebuilt from the batches', () => {
  withLog((dir, ctx) => {
    const log = openLog(dir, ctx, { segmentBytes: 2000 });
    for (let i = 0; i < 8; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 300 }), i < 3 ? 1 : 4);
    log.close();
    const file = path.join(dir, 't-0', 'leader-epoch-checkpoint');
    fs.writeFileSync(file, '0\n2\n1 0\n4 x\n');
    const again = openLog(dir, ctx, { segmentBytes: 2000 });
    assert.deepEqual(again.leaderEpochCache.entries(), [
      { epoch: 1, startOffset: 0n },
      { epoch: 4, startOffset: 6n },
    ]);
    assert.ok(ctx.logger.lines.some((l) => l.includes('rebuilding the leader epoch cache')));
    assert.equal(fs.readFileSync(file, 'utf8'), '0\n2\n1 0\n4 6\n');
    again.close();
  });
});

test('message.timestamp.type=LogAppendTime stamps the broker time and keeps the CRC valid', () => {
  withLog((dir, ctx) => {
    const log = openLog(dir, ctx, { messageTimestampType: 'LogAppendTime' });
    const info = log.appendAsLeader(makeBatch({ count: 2, timestamp: 5n }), 0);
    assert.equal(info.logAppendTimeMs, BigInt(ctx.clock.nowMs()));
    const r = log.read(0n, 1000, 'log-end', false);
    const [entry] = [...batchesIn(r.records)];
    assert.ok(entry, 'the batch validates (CRC recomputed)');
    assert.equal(entry.header.maxTimestamp, BigInt(ctx.clock.nowMs()));
    assert.equal(entry.header.attributes & 0x08, 0x08);
    log.close();
  });
});

test('a failed write leaves no partial bytes and no state behind', () => {
  withLog((dir, ctx) => {
    let failNext = false;
    const faulty = Object.create(ctx.fs) as typeof ctx.fs;
    faulty.open = (p: string, create: boolean) => {
      const h = ctx.fs.open(p, create);
      const write = h.write.bind(h);
      h.write = (buf, pos) => {
        if (failNext && p.endsWith('.log')) {
          failNext = false;
          write(buf.subarray(0, 30), pos); // a short write, then the error
          throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
        }
        write(buf, pos);
      };
      return h;
    };
    const log = Log.open({
      dir: path.join(dir, 't-0'),
      topic: 't',
      partition: 0,
      config: logConfig(),
      ctx: { ...ctx, fs: faulty },
      hadCleanShutdown: true,
    });
    log.appendAsLeader(makeBatch({ count: 2 }), 1);
    const size = log.size;
    failNext = true;
    assert.throws(() => log.appendAsLeader(makeBatch({ count: 3 }), 2), /ENOSPC/);
    assert.equal(log.logEndOffset, 2n);
    assert.equal(fs.statSync(path.join(dir, 't-0', '00000000000000000000.log')).size, size);
    assert.deepEqual(log.leaderEpochCache.entries(), [{ epoch: 1, startOffset: 0n }]);
    log.appendAsLeader(makeBatch({ count: 3 }), 2);
    assert.equal(log.logEndOffset, 5n);
    log.close();
  });
});
