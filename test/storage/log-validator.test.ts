import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import { encodeBatch } from '../../src/protocol/records/codec.js';
import { RecordValidationError } from '../../src/storage/errors.js';
import { Log } from '../../src/storage/log.js';
import { type LogConfig, logConfig } from '../../src/storage/log-config.js';
import { makeBatch, tempDir, testContext } from './helpers.js';

function withLog(config: Partial<LogConfig>, fn: (log: Log) => void): void {
  const { dir, cleanup } = tempDir();
  const ctx = testContext();
  const log = Log.open({
    dir: path.join(dir, 'c-3'),
    topic: 'c',
    partition: 3,
    config: logConfig(config),
    ctx,
    hadCleanShutdown: true,
  });
  try {
    fn(log);
  } finally {
    log.close();
    cleanup();
  }
}

function keyed(keys: (string | null)[], compression: 0 | 1 = 0): Buffer {
  return encodeBatch({
    compression,
    baseTimestamp: 1_700_000_000_000n,
    records: keys.map((k, i) => ({
      key: k === null ? null : Buffer.from(k),
      value: Buffer.from(`v${i}`),
      timestampDelta: BigInt(i),
    })),
  });
}

const MESSAGE = 'Compacted topic cannot accept message without key in topic partition c-3';

test('a compacted log refuses a batch with keyless records: RecordErrors by index, nothing appended', () => {
  withLog({ compact: true, delete: false }, (log) => {
    log.appendAsLeader(keyed(['a', 'b']), 0);
    for (const compression of [0, 1] as const) {
      const batches = Buffer.concat([keyed(['x']), keyed(['k', null, 'k2', null, null, null], compression)]);
      assert.throws(
        () => log.appendAsLeader(batches, 0),
        (e: unknown) => {
          assert.ok(e instanceof RecordValidationError);
          assert.deepEqual(
            e.recordErrors.map((r) => r.batchIndex),
            [1, 3, 4, 5],
          );
          assert.ok(e.recordErrors.every((r) => r.message === MESSAGE));
          assert.equal(e.error.errorName, 'INVALID_RECORD');
          // Kafka's processRecordErrors summary: the count, then at most three errors.
          assert.equal(
            e.error.message,
            `One or more records have been rejected due to 4 record errors in total, and only showing the first three errors at most: [RecordError(batchIndex=1, message='${MESSAGE}'), RecordError(batchIndex=3, message='${MESSAGE}'), RecordError(batchIndex=4, message='${MESSAGE}')]`,
          );
          return true;
        },
      );
      // The keyed batch before it in the same request is not appended either.
      assert.equal(log.logEndOffset, 2n);
    }
    assert.equal(log.appendAsLeader(keyed(['c']), 0).firstOffset, 2n);
  });
});

test('keyless records are accepted where cleanup.policy has no compact', () => {
  withLog({ compact: false, delete: true }, (log) => {
    assert.equal(log.appendAsLeader(keyed([null, null]), 0).lastOffset, 1n);
  });
});

test('compact without delete: retention.ms and retention.bytes delete nothing', () => {
  withLog({ compact: true, delete: false, retentionMs: 0, retentionBytes: 0, segmentBytes: 200 }, (log) => {
    for (let i = 0; i < 5; i++) log.appendAsLeader(makeBatch({ count: 2, valueBytes: 60 }), 0);
    log.updateHighWatermark(log.logEndOffset);
    assert.ok(log.local.segments.values().length > 1);
    assert.equal(log.deleteOldSegments(), 0);
    assert.equal(log.logStartOffset, 0n);
  });
});
