import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { KafkaError } from '../../src/protocol/kafka-error.js';
import { encodeBatch } from '../../src/protocol/records/codec.js';
import { NodeFileSystem } from '../../src/storage/fs.js';
import type { Log } from '../../src/storage/log.js';
import { logConfig } from '../../src/storage/log-config.js';
import { parseTopicPartitionDir } from '../../src/storage/log-dir-names.js';
import { CLEAN_SHUTDOWN_FILE, LogManager } from '../../src/storage/log-manager.js';
import { DEFAULT_LOG_MANAGER_CONFIG } from '../../src/storage/log-manager-config.js';
import { PartitionMetadataFile } from '../../src/storage/partition-metadata.js';
import { makeBatch, type TestContext, tempDir, testContext } from './helpers.js';

function manager(dirs: string[], ctx: TestContext): LogManager {
  return new LogManager(dirs, logConfig({ segmentBytes: 3000 }), ctx);
}

test('partition directory names', () => {
  assert.deepEqual(parseTopicPartitionDir('orders-3'), { topic: 'orders', partition: 3 });
  assert.deepEqual(parseTopicPartitionDir('my.topic-with-dash-12'), {
    topic: 'my.topic-with-dash',
    partition: 12,
  });
  assert.equal(parseTopicPartitionDir('orders-3.a1b2c3-delete'), null);
  assert.equal(parseTopicPartitionDir('orders-3.a1b2c3-future'), null);
  assert.equal(parseTopicPartitionDir('recovery-point-offset-checkpoint'), null);
});

test('logs spread over log dirs; clean shutdown writes checkpoints and the marker; restart is clean', () => {
  const { dir, cleanup } = tempDir();
  try {
    const dirs = [path.join(dir, 'd1'), path.join(dir, 'd2')];
    const ctx = testContext();
    const m = manager(dirs, ctx);
    m.startup();
    for (let p = 0; p < 4; p++) {
      const log = m.getOrCreateLog('t', p);
      for (let i = 0; i < 5; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 300 }), 2);
      log.updateHighWatermark(6n);
    }
    assert.deepEqual(
      dirs.map((d) => fs.readdirSync(d).filter((f) => f.startsWith('t-')).length),
      [2, 2],
    );
    m.getLog('t', 1)!.maybeIncrementLogStartOffset(4n, 'test');
    m.shutdown();
    for (const d of dirs) {
      assert.ok(fs.existsSync(path.join(d, CLEAN_SHUTDOWN_FILE)));
      const rp = fs.readFileSync(path.join(d, 'recovery-point-offset-checkpoint'), 'utf8').split('\n');
      assert.equal(rp[0], '0');
      assert.equal(rp[1], '2');
      assert.match(rp[2]!, /^t \d 10$/);
      assert.match(fs.readFileSync(path.join(d, 'replication-offset-checkpoint'), 'utf8'), /t \d 6\n/);
    }
    const ctx2 = testContext();
    const again = manager(dirs, ctx2);
    again.startup();
    assert.ok(ctx2.logger.lines.some((l) => l.includes('clean shutdown')));
    for (const d of dirs)
      assert.ok(!fs.existsSync(path.join(d, CLEAN_SHUTDOWN_FILE)), 'marker removed once loaded');
    assert.equal(again.allLogs().length, 4);
    assert.equal(again.getLog('t', 1)!.logStartOffset, 4n);
    assert.equal(again.getLog('t', 2)!.highWatermark, 6n);
    assert.equal(again.getLog('t', 3)!.logEndOffset, 10n);
    again.shutdown();
  } finally {
    cleanup();
  }
});

test('after a kill the logs are recovered from their recovery points; leftovers are removed', () => {
  const { dir, cleanup } = tempDir();
  try {
    const dirs = [path.join(dir, 'd1')];
    const ctx = testContext();
    const m = manager(dirs, ctx);
    m.startup();
    const log = m.getOrCreateLog('t', 0);
    for (let i = 0; i < 12; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 300 }), 1);
    log.truncateTo(14n); // leaves .deleted files behind
    m.abandon();
    const tp = path.join(dirs[0]!, 't-0');
    assert.ok(fs.readdirSync(tp).some((f) => f.endsWith('.deleted')));
    // tear the active segment
    const active = fs
      .readdirSync(tp)
      .filter((f) => f.endsWith('.log'))
      .sort()
      .at(-1)!;
    fs.appendFileSync(path.join(tp, active), Buffer.alloc(100, 7));
    fs.writeFileSync(path.join(dirs[0]!, 'log-start-offset-checkpoint'), 'garbage');
    const ctx2 = testContext();
    const again = manager(dirs, ctx2);
    again.startup();
    assert.ok(!fs.readdirSync(tp).some((f) => f.endsWith('.deleted')));
    assert.equal(again.getLog('t', 0)!.logEndOffset, 14n);
    assert.ok(
      ctx2.logger.lines.some((l) => l.includes('recovered segment') && l.includes('truncated 100 bytes')),
    );
    assert.ok(ctx2.logger.lines.some((l) => l.includes('ignoring log-start-offset-checkpoint')));
    assert.ok(ctx2.logger.lines.some((l) => l.includes('no clean-shutdown marker')));
    again.shutdown();
  } finally {
    cleanup();
  }
});

test('a log start offset that moves is checkpointed at once (background writes too): a kill does not bring deleted records back', async () => {
  const { dir, cleanup } = tempDir();
  try {
    for (const background of [false, true]) {
      const dirs = [path.join(dir, background ? 'bg' : 'sync')];
      const ctx = testContext();
      const fsImpl = background
        ? Object.assign(Object.create(ctx.fs) as typeof ctx.fs, {
            writeFileAtomicInBackground: new NodeFileSystem({ backgroundWrites: true })
              .writeFileAtomicInBackground,
          })
        : ctx.fs;
      const m = manager(dirs, { ...ctx, fs: fsImpl });
      m.startup();
      const log = m.getOrCreateLog('t', 0);
      for (let i = 0; i < 6; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 300 }), 1);
      log.updateHighWatermark(12n);
      log.maybeIncrementLogStartOffset(5n, 'test');
      log.maybeIncrementLogStartOffset(7n, 'test');
      await m.whenLogStartOffsetsPersisted();
      const checkpoint = path.join(dirs[0]!, 'log-start-offset-checkpoint');
      assert.equal(fs.readFileSync(checkpoint, 'utf8'), '0\n1\nt 0 7\n', `background ${background}`);
      m.abandon(); // killed: no shutdown checkpoint
      const again = manager(dirs, testContext());
      again.startup();
      assert.equal(again.getLog('t', 0)!.logStartOffset, 7n, `background ${background}`);
      again.shutdown();
    }
  } finally {
    cleanup();
  }
});

test('checkpoints are written periodically through the scheduler', () => {
  const { dir, cleanup } = tempDir();
  try {
    const ctx = testContext();
    const m = manager([dir], ctx);
    m.startup();
    m.getOrCreateLog('t', 0).appendAsLeader(makeBatch({ count: 3 }), 0);
    m.getLog('t', 0)!.updateHighWatermark(3n);
    const hwFile = path.join(dir, 'replication-offset-checkpoint');
    assert.ok(!fs.existsSync(hwFile));
    ctx.clock.advance(5000);
    ctx.scheduler.runDue();
    assert.equal(fs.readFileSync(hwFile, 'utf8'), '0\n1\nt 0 3\n');
    ctx.clock.advance(5000);
    ctx.scheduler.runDue();
    assert.ok(ctx.scheduler.pendingNames().includes('checkpoint-high-watermarks'));
    m.shutdown();
    assert.deepEqual(
      ctx.scheduler.pendingNames().filter((n) => n.startsWith('checkpoint')),
      [],
    );
  } finally {
    cleanup();
  }
});

test('partition.metadata holds the topic id in Kafka’s layout; read the way Kafka reads it', () => {
  const { dir, cleanup } = tempDir();
  try {
    const f = new PartitionMetadataFile(testContext().fs, path.join(dir, 'partition.metadata'));
    assert.equal(f.read(), null);
    f.write('ZxTc2JvPRhuNLmJ8dZ5tkQ');
    // PartitionMetadata.encode: two lines, no newline at the end.
    assert.deepEqual(
      fs.readFileSync(f.path),
      Buffer.from(
        '76657273696f6e3a20300a746f7069635f69643a205a785463324a76505268754e4c6d4a38645a35746b51',
        'hex',
      ),
    );
    assert.equal(fs.readFileSync(f.path, 'utf8'), 'version: 0\ntopic_id: ZxTc2JvPRhuNLmJ8dZ5tkQ');
    assert.equal(f.read(), 'ZxTc2JvPRhuNLmJ8dZ5tkQ');
    assert.throws(() => f.write('nope'));
    // A later version and a trailing newline are read; the zero Uuid and a bad version line are not.
    fs.writeFileSync(f.path, 'version:  1\ntopic_id:\tZxTc2JvPRhuNLmJ8dZ5tkQ\n');
    assert.equal(f.read(), 'ZxTc2JvPRhuNLmJ8dZ5tkQ');
    fs.writeFileSync(f.path, 'version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA');
    assert.throws(() => f.read(), /Invalid topic ID in partition metadata file/);
    fs.writeFileSync(f.path, 'version 0\ntopic_id: ZxTc2JvPRhuNLmJ8dZ5tkQ');
    assert.throws(() => f.read(), /Malformed line in checkpoint file/);
  } finally {
    cleanup();
  }
});

test('a log gets its topic id when created, keeps it across restarts, refuses another, and takes one when it had none', () => {
  const { dir, cleanup } = tempDir();
  try {
    const id = 'ZxTc2JvPRhuNLmJ8dZ5tkQ';
    const other = 'q1w2e3r4t5y6u7i8o9p0aQ';
    const firstCtx = testContext();
    const m = manager([dir], firstCtx);
    m.startup();
    const created = m.getOrCreateLog('t', 0, undefined, id);
    assert.equal(created.topicId, id);
    // A new log has nothing to recover: no recovery of its empty segment, no line for it.
    assert.deepEqual(
      firstCtx.logger.lines.filter((l) => l.includes('recovered segment')),
      [],
    );
    assert.equal(
      fs.readFileSync(path.join(dir, 't-0', 'partition.metadata'), 'utf8'),
      `version: 0\ntopic_id: ${id}`,
    );
    m.getOrCreateLog('t', 1); // a log as an older Skiff left it: no partition.metadata
    assert.equal(fs.existsSync(path.join(dir, 't-1', 'partition.metadata')), false);
    fs.writeFileSync(path.join(dir, 't-1', 'partition.metadata'), 'garbage');
    m.shutdown();

    const ctx = testContext();
    const again = manager([dir], ctx);
    again.startup();
    assert.equal(again.getLog('t', 0)!.topicId, id);
    assert.equal(again.getLog('t', 1)!.topicId, null, 'a malformed file counts as none');
    assert.ok(ctx.logger.lines.some((l) => l.includes('t-1: ignoring partition.metadata: Malformed line')));
    assert.throws(
      () => again.getOrCreateLog('t', 0, undefined, other),
      (e: unknown) =>
        e instanceof KafkaError &&
        e.code === 103 &&
        e.message ===
          `Tried to assign topic ID ${other} to log for topic partition t-0,but log already contained topic ID ${id}`,
    );
    again.getOrCreateLog('t', 1, undefined, other);
    assert.equal(
      fs.readFileSync(path.join(dir, 't-1', 'partition.metadata'), 'utf8'),
      `version: 0\ntopic_id: ${other}`,
    );
    // Removed with the log: the file goes with its directory.
    again.deleteLog('t', 1);
    const deleted = fs.readdirSync(dir).find((n) => n.startsWith('t-1.') && n.endsWith('-delete'))!;
    assert.ok(fs.existsSync(path.join(dir, deleted, 'partition.metadata')));
    again.shutdown();
  } finally {
    cleanup();
  }
});

test('deleting a log renames its directory -delete and removes it after the delay or at start-up', () => {
  const { dir, cleanup } = tempDir();
  try {
    const ctx = testContext();
    const m = manager([dir], ctx);
    m.startup();
    m.getOrCreateLog('gone', 0).appendAsLeader(makeBatch({ count: 2 }), 0);
    m.getOrCreateLog('gone', 1).appendAsLeader(makeBatch({ count: 2 }), 0);
    assert.equal(m.deleteLog('gone', 0), true);
    assert.equal(m.getLog('gone', 0), undefined);
    const pending = () => fs.readdirSync(dir).filter((f) => f.endsWith('-delete'));
    assert.equal(pending().length, 1);
    assert.match(pending()[0]!, /^gone-0\.[0-9a-z]+-delete$/);
    ctx.clock.advance(60_000);
    ctx.scheduler.runDue();
    assert.deepEqual(pending(), []);
    m.deleteLog('gone', 1);
    m.shutdown();
    assert.equal(pending().length, 1);
    const again = manager([dir], testContext());
    again.startup();
    assert.deepEqual(pending(), []);
    assert.equal(again.allLogs().length, 0);
    again.shutdown();
  } finally {
    cleanup();
  }
});

test("loading after a kill says how far recovery has got, in Kafka's LogManager lines", () => {
  const { dir, cleanup } = tempDir();
  try {
    const d = path.join(dir, 'd1');
    const m = manager([d], testContext());
    m.startup();
    for (let p = 0; p < 5; p++)
      m.getOrCreateLog('t', p).appendAsLeader(makeBatch({ count: 2, valueBytes: 10 }), 1);
    m.abandon();
    const load = (clockStepMs: number) => {
      const ctx = testContext();
      // Every reading of the clock moves it on: loading each log takes a few such steps.
      const clock = {
        nowMs: () => {
          ctx.clock.advance(clockStepMs);
          return ctx.clock.nowMs();
        },
      };
      const again = new LogManager([d], logConfig({ segmentBytes: 3000 }), { ...ctx, clock });
      again.startup();
      again.abandon();
      return ctx.logger.events.filter((e) => e.fields.event === 'log-load');
    };
    // Fast: the start and the last log only.
    let events = load(0);
    assert.equal(events.length, 2);
    assert.equal(events[0]!.line, `Recovering 5 logs from ${d} since no clean shutdown file was found`);
    assert.match(
      events[1]!.line,
      new RegExp(
        `^Completed load of log t-\\d with 1 segments, log-start-offset 0 and log-end-offset 2 in 0ms \\(5/5 completed in ${d}\\)$`,
      ),
    );
    assert.deepEqual(events[1]!.fields, {
      event: 'log-load',
      logDir: d,
      loaded: 5,
      total: 5,
      recovering: true,
    });
    // Slow (each clock reading 400 ms later): a line whenever a second has passed, counting up.
    events = load(400);
    const counts = events.slice(1).map((e) => e.fields.loaded as number);
    assert.ok(counts.length > 2, `progress lines: ${counts}`);
    assert.deepEqual(
      counts,
      [...counts].sort((a, b) => a - b),
    );
    assert.equal(counts.at(-1), 5);
  } finally {
    cleanup();
  }
});

test('startupInSlices gives the event loop a turn between logs once a slice has passed, and loads them all', async () => {
  const { dir, cleanup } = tempDir();
  try {
    const ctx = testContext();
    const m = manager([dir], ctx);
    m.startup();
    for (let p = 0; p < 6; p++) m.getOrCreateLog('t', p).appendAsLeader(makeBatch({ count: 1 }), 1);
    m.abandon();
    // A clock that moves 1 ms at each reading: loading a log takes several readings.
    let nowMs = 0;
    const ctx2 = { ...testContext(), clock: { nowMs: () => ++nowMs } };
    const again = new LogManager([dir], logConfig({ segmentBytes: 3000 }), ctx2);
    const loadedAtTurns: number[] = [];
    await again.startupInSlices(5, async () => {
      loadedAtTurns.push(again.allLogs().length);
    });
    assert.equal(again.allLogs().length, 6);
    assert.ok(loadedAtTurns.length >= 2, `turns after ${loadedAtTurns.join(', ')} logs`);
    assert.ok(loadedAtTurns[0]! >= 1 && loadedAtTurns[0]! < 6, `first turn after ${loadedAtTurns[0]} logs`);
    assert.ok(ctx2.logger.lines.some((l) => l.includes('Recovering 6 logs from')));
    // A slice longer than the whole load: no turn at all, as startup().
    again.shutdown();
    const third = new LogManager([dir], logConfig({ segmentBytes: 3000 }), testContext());
    let turns = 0;
    await third.startupInSlices(1000, async () => {
      turns++;
    });
    assert.equal(turns, 0);
    assert.equal(third.allLogs().length, 6);
    third.shutdown();
  } finally {
    cleanup();
  }
});

test('producer.id.expiration.ms: idle producers are forgotten at the periodic check, one in a transaction is kept', () => {
  const { dir, cleanup } = tempDir();
  try {
    const ctx = testContext();
    let expirationMs = 60_000;
    const m = new LogManager(
      [dir],
      logConfig(),
      ctx,
      { ...DEFAULT_LOG_MANAGER_CONFIG, producerIdExpirationCheckIntervalMs: 10_000 },
      undefined,
      undefined,
      () => expirationMs,
    );
    m.startup();
    const log = m.getOrCreateLog('t', 0);
    const now = BigInt(ctx.clock.nowMs());
    const produce = (producerId: bigint, timestamp: bigint, isTransactional = false) =>
      log.appendAsLeader(
        encodeBatch({
          producerId,
          producerEpoch: 0,
          baseSequence: 0,
          isTransactional,
          baseTimestamp: timestamp,
          records: [{ key: null, value: Buffer.from('v'), timestampDelta: 0n }],
        }),
        0,
      );
    produce(1n, now - 30_000n); // idle for 30 s now
    produce(2n, now - 30_000n, true); // its transaction is still open
    produce(3n, now); // active
    ctx.clock.advance(10_000);
    ctx.scheduler.runDue();
    assert.deepEqual(ids(log), [1n, 2n, 3n], 'nobody idle for 60 s yet');
    ctx.clock.advance(20_000);
    ctx.scheduler.runDue();
    assert.deepEqual(ids(log), [2n, 3n], 'producer 1 idle for 60 s');
    // A dynamic change applies at the next check.
    expirationMs = 1_000;
    ctx.clock.advance(10_000);
    ctx.scheduler.runDue();
    assert.deepEqual(ids(log), [2n]);
    m.shutdown();
  } finally {
    cleanup();
  }
});

function ids(log: Log): bigint[] {
  return log.producerState
    .activeProducers()
    .map((e) => e.producerId)
    .sort((a, b) => (a < b ? -1 : 1));
}

test('a new partition holds no file descriptor until written: its .log is opened by the first append, the indexes by their first write of entries', () => {
  const openFds = (): number => fs.readdirSync('/proc/self/fd').length;
  const { dir, cleanup } = tempDir();
  try {
    const ctx = testContext();
    const m = new LogManager([dir], logConfig({ indexIntervalBytes: 1 }), ctx);
    m.startup();
    const before = openFds();
    for (let p = 0; p < 200; p++) m.getOrCreateLog('idle', p);
    const idle = openFds() - before;
    assert.ok(idle < 20, `${idle} descriptors for 200 idle partitions`);
    // The first append opens the .log; 600 appends with an entry in each index write a page of
    // entries of both (4 KiB: 512 offset entries, 341 time entries), which takes their handles —
    // on that partition only.
    const log = m.getLog('idle', 0)!;
    log.appendAsLeader(makeBatch({ count: 1, valueBytes: 10, timestamp: 1_700_000_000_000n }), 0);
    assert.equal(openFds() - before, idle + 1);
    for (let i = 1; i < 600; i++)
      log.appendAsLeader(
        makeBatch({ count: 1, valueBytes: 10, timestamp: BigInt(1_700_000_000_000 + i) }),
        0,
      );
    assert.equal(openFds() - before, idle + 3);
    m.shutdown();
  } finally {
    cleanup();
  }
});
