import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(prefix = 'skiff-storage-'): { dir: string; cleanup: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

import { ManualClock } from '../../src/common/clock.js';
import { MemoryLogger } from '../../src/common/logger.js';
import { ManualScheduler } from '../../src/common/scheduler.js';
import { encodeBatch } from '../../src/protocol/records/codec.js';
import { type FileHandle, type FileSystem, NodeFileSystem } from '../../src/storage/fs.js';
import type { StorageContext } from '../../src/storage/local-log.js';
import { Log, type OpenLogParams } from '../../src/storage/log.js';
import { DEFAULT_CLEANER_CONFIG, LogCleaner } from '../../src/storage/log-cleaner.js';
import { logConfig } from '../../src/storage/log-config.js';

/** A producer-style batch: `count` records of `valueBytes` each, offsets from `baseOffset`. */
export function makeBatch(opts: {
  baseOffset?: bigint;
  count?: number;
  valueBytes?: number;
  timestamp?: bigint;
  epoch?: number;
  seed?: number;
}): Buffer {
  const count = opts.count ?? 1;
  const seed = opts.seed ?? 0;
  return encodeBatch({
    baseOffset: opts.baseOffset ?? 0n,
    partitionLeaderEpoch: opts.epoch ?? -1,
    baseTimestamp: opts.timestamp ?? 1_700_000_000_000n,
    records: Array.from({ length: count }, (_, i) => ({
      key: Buffer.from(`k${i}`),
      value: Buffer.alloc(opts.valueBytes ?? 10, (seed + i) & 0xff),
      timestampDelta: BigInt(i),
    })),
  });
}

export interface TestContext extends StorageContext {
  readonly clock: ManualClock;
  readonly scheduler: ManualScheduler;
  readonly logger: MemoryLogger;
}

/**
 * The real file system without fsync: these tests check what is in the files, not what survives a
 * power cut, and thousands of fsyncs would make the property tests slow on a busy machine.
 */
class NoSyncFileSystem extends NodeFileSystem {
  override open(filePath: string, create: boolean): FileHandle {
    const h = super.open(filePath, create);
    h.sync = () => {};
    return h;
  }
  override writeFileAtomic(filePath: string, data: Buffer): void {
    fs.writeFileSync(`${filePath}.tmp`, data);
    fs.renameSync(`${filePath}.tmp`, filePath);
  }
  override syncDir(): void {}
}

export function testContext(): TestContext {
  const clock = new ManualClock();
  return {
    fs: new NoSyncFileSystem(),
    clock,
    scheduler: new ManualScheduler(clock),
    logger: new MemoryLogger(),
  };
}

/** One pass of a LogCleaner over `log` (1 MiB offset map), run on the manual scheduler. */
export function cleanOnce(log: Log, ctx: TestContext, logDir: string): LogCleaner {
  const cleaner = new LogCleaner(
    () => ({ ...DEFAULT_CLEANER_CONFIG, dedupeBufferSize: 1 << 20 }),
    ctx,
    () => [{ log, logDir }],
  );
  cleaner.startup();
  ctx.scheduler.runDue();
  cleaner.shutdown();
  return cleaner;
}

/** Log.open of partition t-0 in `dir` on `fsys`, with the default log config and the test context. */
export function openLog(
  dir: string,
  fsys: FileSystem,
  params: Omit<OpenLogParams, 'dir' | 'topic' | 'partition' | 'config' | 'ctx'>,
): Log {
  return Log.open({
    dir,
    topic: 't',
    partition: 0,
    config: logConfig(),
    ctx: { ...testContext(), fs: fsys },
    ...params,
  });
}
