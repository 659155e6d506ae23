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

// The manual clock starts at 1_700_000_000_000; `keyed` stamps 1_700_000_000_000 + index.
const NOW = 1_700_000_000_000;

function stamped(timestamps: number[], compression: 0 | 1 = 0, logAppendTime = false): Buffer {
  const base = BigInt(timestamps[0]!);
  return encodeBatch({
    compression,
    baseTimestamp: base,
    maxTimestamp: BigInt(Math.max(...timestamps)),
    timestampType: logAppendTime ? 'LogAppendTime' : 'CreateTime',
    records: timestamps.map((t, i) => ({
      key: Buffer.from(`k${i}`),
      value: Buffer.from(`v${i}`),
      timestampDelta: BigInt(t) - base,
    })),
  });
}

test('message.timestamp.before/after.max.ms refuse records too old or too far ahead: INVALID_TIMESTAMP, RecordErrors by index, nothing appended', () => {
  withLog({ messageTimestampBeforeMaxMs: 60_000, messageTimestampAfterMaxMs: 1_000 }, (log) => {
    for (const compression of [0, 1] as const) {
      const batch = stamped([NOW - 60_000, NOW - 60_001, NOW + 1_000, NOW + 1_001, NOW], compression);
      assert.throws(
        () => log.appendAsLeader(batch, 0),
        (e: unknown) => {
          assert.ok(e instanceof RecordValidationError);
          assert.equal(e.error.errorName, 'INVALID_TIMESTAMP');
          assert.equal(e.error.message, 'One or more records have been rejected due to invalid timestamp');
          assert.deepEqual(e.recordErrors, [
            {
              batchIndex: 1,
              message: `Timestamp ${NOW - 60_001} of message with offset 1 is out of range. The timestamp should be within [${NOW - 60_000}, ${NOW + 1_000}]`,
            },
            {
              batchIndex: 3,
              message: `Timestamp ${NOW + 1_001} of message with offset 3 is out of range. The timestamp should be within [${NOW - 60_000}, ${NOW + 1_000}]`,
            },
          ]);
          return true;
        },
      );
      assert.equal(log.logEndOffset, 0n);
    }
    // The bounds follow the broker's clock, and the edges are inside.
    assert.equal(log.appendAsLeader(stamped([NOW - 60_000, NOW + 1_000]), 0).lastOffset, 1n);
  });
});

test('with one bound unset Kafka prints the other end as a Java long (now + Long.MAX_VALUE wraps)', () => {
  withLog({ messageTimestampBeforeMaxMs: 0 }, (log) => {
    assert.throws(
      () => log.appendAsLeader(stamped([NOW - 1]), 0),
      (e: unknown) => {
        assert.ok(e instanceof RecordValidationError);
        const wrapped = BigInt.asIntN(64, BigInt(NOW) + 9223372036854775807n);
        assert.equal(
          e.recordErrors[0]!.message,
          `Timestamp ${NOW - 1} of message with offset 0 is out of range. The timestamp should be within [${NOW}, ${wrapped}]`,
        );
        return true;
      },
    );
  });
});

test('a keyless record on a compacted topic is reported as INVALID_RECORD before its timestamp, another record’s timestamp makes the batch INVALID_TIMESTAMP', () => {
  withLog({ compact: true, delete: false, messageTimestampBeforeMaxMs: 10 }, (log) => {
    const batch = encodeBatch({
      baseTimestamp: BigInt(NOW - 100),
      records: [
        { key: null, value: Buffer.from('a'), timestampDelta: 0n },
        { key: Buffer.from('k'), value: Buffer.from('b'), timestampDelta: 0n },
      ],
    });
    assert.throws(
      () => log.appendAsLeader(batch, 0),
      (e: unknown) => {
        assert.ok(e instanceof RecordValidationError);
        assert.equal(e.error.errorName, 'INVALID_TIMESTAMP');
        assert.deepEqual(
          e.recordErrors.map((r) => r.message?.slice(0, 30)),
          [MESSAGE.slice(0, 30), `Timestamp ${NOW - 100} of mes`],
        );
        return true;
      },
    );
  });
});

test('a producer batch marked LogAppendTime is refused, as Kafka refuses it, on LogAppendTime topics too', () => {
  for (const messageTimestampType of ['CreateTime', 'LogAppendTime'] as const) {
    withLog({ messageTimestampType }, (log) => {
      const batch = encodeBatch({
        baseTimestamp: -1n,
        maxTimestamp: -1n,
        timestampType: 'LogAppendTime',
        records: [{ key: null, value: Buffer.from('abc'), timestampDelta: 0n }],
      });
      assert.throws(
        () => log.appendAsLeader(batch, 0),
        (e: unknown) => {
          assert.ok(e instanceof RecordValidationError);
          assert.equal(e.error.errorName, 'INVALID_TIMESTAMP');
          assert.equal(
            e.recordErrors[0]!.message,
            'Invalid timestamp type in message DefaultRecord(offset=0, timestamp=-1, key=0 bytes, value=3 bytes). Producer should not set timestamp type to LogAppendTime.',
          );
          return true;
        },
      );
    });
  }
});

test('without bounds a CreateTime record of any age is taken', () => {
  withLog({}, (log) => {
    assert.equal(log.appendAsLeader(stamped([0, NOW * 2]), 0).lastOffset, 1n);
  });
});
