import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { batchesIn } from '../../src/protocol/records/validate.js';
import { Log } from '../../src/storage/log.js';
import { logConfig } from '../../src/storage/log-config.js';
import { makeBatch, tempDir, testContext } from './helpers.js';

/**
 * Random operation sequences against a plain model of the log (a list of batches, the log start
 * offset, the HW). Restarts, clean or after a kill, must change nothing.
 */

interface ModelBatch {
  base: bigint;
  count: number;
  epoch: number;
}

type Op =
  | { kind: 'append'; count: number; epochBump: boolean }
  | { kind: 'truncate'; fraction: number }
  | { kind: 'hw'; fraction: number }
  | { kind: 'deleteRecords'; fraction: number }
  | { kind: 'truncateFully'; gap: number }
  | { kind: 'restart'; clean: boolean }
  | { kind: 'retention' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      count: fc.integer({ min: 1, max: 6 }),
      epochBump: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('truncate' as const),
      fraction: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('hw' as const),
      fraction: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('deleteRecords' as const),
      fraction: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('truncateFully' as const),
      gap: fc.integer({ min: 0, max: 50 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('restart' as const), clean: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('retention' as const) }) },
);

function pick(lo: bigint, hi: bigint, fraction: number): bigint {
  return lo + BigInt(Math.floor(Number(hi - lo) * fraction));
}

test('property: the log agrees with a model across appends, truncations, delete-records and restarts', () => {
  const { dir: root, cleanup } = tempDir();
  let run = 0;
  try {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 25 }), (ops) => {
        const dir = path.join(root, `r${run++}`, 't-0');
        const config = logConfig({ segmentBytes: 1500, indexIntervalBytes: 200, retentionMs: -1 });
        // The log start offset comes from the log dir's log-start-offset-checkpoint, which the
        // LogManager (not the Log) keeps: a restart hands the model's, as a current checkpoint.
        const open = (clean: boolean, logStartOffset?: bigint) =>
          Log.open({
            dir,
            topic: 't',
            partition: 0,
            config,
            ctx: testContext(),
            hadCleanShutdown: clean,
            ...(logStartOffset === undefined ? {} : { logStartOffset }),
          });
        let log = open(true);
        let batches: ModelBatch[] = [];
        let start = 0n;
        let hw = 0n;
        let epoch = 0;
        const leo = () => {
          const last = batches.at(-1);
          return last ? last.base + BigInt(last.count) : start;
        };
        for (const op of ops) {
          switch (op.kind) {
            case 'append': {
              if (op.epochBump) epoch++;
              const info = log.appendAsLeader(
                makeBatch({ count: op.count, valueBytes: 60, seed: Number(leo() % 200n) }),
                epoch,
              );
              assert.equal(info.firstOffset, leo());
              batches.push({ base: leo(), count: op.count, epoch });
              break;
            }
            case 'truncate': {
              // followers truncate at batch boundaries (the leader's epoch end offsets)
              const keep = batches.filter((b) => b.base >= start);
              const cut = keep[Math.floor(op.fraction * keep.length)];
              if (!cut) break;
              log.truncateTo(cut.base);
              batches = batches.filter((b) => b.base < cut.base);
              if (hw > cut.base) hw = cut.base;
              break;
            }
            case 'hw':
              hw = pick(start, leo(), op.fraction);
              log.updateHighWatermark(hw);
              break;
            case 'deleteRecords': {
              const target = pick(start, hw, op.fraction);
              log.maybeIncrementLogStartOffset(target, 'test');
              if (target > start) start = target;
              break;
            }
            case 'truncateFully': {
              const at = leo() + BigInt(op.gap);
              log.truncateFullyAndStartAt(at);
              batches = [];
              start = at;
              hw = at;
              break;
            }
            case 'restart':
              if (op.clean) log.close();
              else log.local.abandon();
              log = open(op.clean, start);
              log.updateHighWatermark(hw);
              break;
            case 'retention':
              log.deleteOldSegments();
              break;
          }
          assert.equal(log.logEndOffset, leo(), `LEO after ${op.kind}`);
          assert.equal(log.logStartOffset, start, `log start after ${op.kind}`);
          assert.equal(log.highWatermark, hw, `HW after ${op.kind}`);
          // every batch at or after the log start reads back, in order, with its epoch
          const visible = batches.filter((b) => b.base + BigInt(b.count) > start);
          if (visible.length > 0) {
            // a read returns batches of one segment, as Kafka's: read on from where it stopped
            const got: [bigint, number, number][] = [];
            for (let next = start; next < leo(); ) {
              const r = log.read(next, 1 << 20, 'log-end', false);
              const headers = [...batchesIn(r.records)].map((e) => e.header);
              assert.ok(headers.length > 0, `no progress reading at ${next}`);
              for (const h of headers) got.push([h.baseOffset, h.recordsCount, h.partitionLeaderEpoch]);
              const last = headers.at(-1)!;
              next = last.baseOffset + BigInt(last.lastOffsetDelta) + 1n;
            }
            assert.deepEqual(
              got,
              visible.map((b) => [b.base, b.count, b.epoch]),
              `read after ${op.kind}`,
            );
          }
          // the epoch cache: first offset of each epoch among the visible batches, the first one clamped to the log start
          const expectedEpochs: { epoch: number; startOffset: bigint }[] = [];
          for (const b of visible) {
            if (expectedEpochs.at(-1)?.epoch !== b.epoch)
              expectedEpochs.push({ epoch: b.epoch, startOffset: b.base < start ? start : b.base });
          }
          assert.deepEqual(log.leaderEpochCache.entries(), expectedEpochs, `epochs after ${op.kind}`);
        }
        log.close();
        fs.rmSync(path.dirname(dir), { recursive: true, force: true });
      }),
      { numRuns: 60 },
    );
  } finally {
    cleanup();
  }
});
