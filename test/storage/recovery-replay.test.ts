import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { encodeBatch } from '../../src/protocol/records/codec.js';
import { Log } from '../../src/storage/log.js';
import { logConfig } from '../../src/storage/log-config.js';
import { type TestContext, tempDir, testContext } from './helpers.js';

function open(dir: string, ctx: TestContext, clean: boolean, logStartOffset?: bigint): Log {
  return Log.open({
    dir: path.join(dir, 't-0'),
    topic: 't',
    partition: 0,
    config: logConfig({ segmentBytes: 1000 }),
    ctx,
    hadCleanShutdown: clean,
    ...(logStartOffset === undefined ? {} : { logStartOffset }),
  });
}

/** Batches of three producers (one bumps its epoch) and of a non-idempotent one, interleaved. */
function workload(log: Log): void {
  const seq = new Map<bigint, number>();
  for (let i = 0; i < 60; i++) {
    const producerId = i % 4 === 3 ? -1n : BigInt(i % 4);
    const bump = producerId === 2n && i === 30;
    if (bump) seq.set(2n, 0);
    const s = seq.get(producerId) ?? 0;
    const count = 1 + (i % 3);
    log.appendAsLeader(
      encodeBatch({
        producerId,
        producerEpoch: producerId < 0n ? -1 : bump || (producerId === 2n && i > 30) ? 1 : 0,
        baseSequence: producerId < 0n ? -1 : s,
        baseTimestamp: 1_700_000_000_000n + BigInt(i),
        records: Array.from({ length: count }, () => ({ key: null, value: Buffer.alloc(40, i) })),
      }),
      i < 20 ? 0 : 1,
    );
    seq.set(producerId, s + count);
  }
}

test('a crash recovery that replays the whole log rebuilds the producer state of the live log', () => {
  const { dir, cleanup } = tempDir();
  try {
    const live = open(dir, testContext(), true);
    workload(live);
    assert.ok(live.local.segments.size > 3, 'several segments');
    const expected = live.producerState.activeProducers();
    const leo = live.logEndOffset;
    const epochs = live.leaderEpochCache.entries();
    live.local.abandon();

    // No clean-shutdown marker, recovery point 0: every segment validated, state replayed in it.
    const recovered = open(dir, testContext(), false);
    assert.equal(recovered.logEndOffset, leo);
    assert.deepEqual(recovered.producerState.activeProducers(), expected);
    assert.equal(recovered.producerState.endOffset, leo);
    assert.deepEqual(recovered.leaderEpochCache.entries(), epochs);
    // Duplicate detection works from the replayed state.
    const last = expected.find((e) => e.producerId === 1n)!.batches.at(-1)!;
    const dup = recovered.appendAsLeader(
      encodeBatch({
        producerId: 1n,
        producerEpoch: 0,
        baseSequence: last.firstSeq,
        records: Array.from({ length: last.lastSeq - last.firstSeq + 1 }, () => ({ key: null, value: null })),
      }),
      1,
    );
    assert.equal(dup.duplicate, true);
    recovered.local.abandon();
  } finally {
    cleanup();
  }
});

test('the replay skips batches below the log start offset, as the rebuild does', () => {
  const { dir, cleanup } = tempDir();
  try {
    const live = open(dir, testContext(), true);
    workload(live);
    live.local.abandon();
    // The reference is the rebuild: with no snapshot it replays the batches from the log start.
    const start = 40n;
    const viaRecovery = open(dir, testContext(), false, start);
    const replayed = viaRecovery.producerState.activeProducers();
    viaRecovery.local.abandon();
    const tp = path.join(dir, 't-0');
    for (const f of fs.readdirSync(tp)) if (f.endsWith('.snapshot')) fs.unlinkSync(path.join(tp, f));
    // A clean open validates only the tail, so its producer state comes from the rebuild.
    const viaRebuild = open(dir, testContext(), true, start);
    assert.deepEqual(replayed, viaRebuild.producerState.activeProducers());
    viaRebuild.local.abandon();
  } finally {
    cleanup();
  }
});
