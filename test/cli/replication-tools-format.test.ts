/**
 * The replication tools' pure parts: replica-verification's batch walk (a partial trailing batch is
 * left out, the checksum is computed over the bytes served), Kafka's timestamp format, Kafka's
 * offset-mismatch line, and rebuild-plan's reading of *.replication.throttled.replicas.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { throttledReplicasInclude } from '../../src/cli/tools/rebuild-plan.js';
import { batchesOf, verifyPartition } from '../../src/cli/tools/replica-verification.js';
import { humanBytes, humanDuration, kafkaTimestamp } from '../../src/cli/tools/replication-tools.js';
import { readBatchHeader } from '../../src/protocol/records/batch.js';
import { batch } from '../broker/helpers.js';

describe('replication tools, pure parts', () => {
  it('walks whole batches only, with the CRC-32C of the bytes served', () => {
    const a = batch(3);
    const b = batch(2, { from: 3 });
    // Base offsets as a log would assign them.
    b.writeBigInt64BE(3n, 0);
    const records = Buffer.concat([a, b]);
    const stored = [readBatchHeader(a, 0).crc, readBatchHeader(b, 0).crc];
    const all = batchesOf(records);
    assert.deepEqual(
      all.map((x) => [x.baseOffset, x.lastOffset, x.nextOffset, x.checksum]),
      [
        [0n, 2n, 3n, stored[0]],
        [3n, 4n, 5n, stored[1]],
      ],
    );
    // A fetch cut inside the second batch: only the first is compared.
    assert.equal(batchesOf(records.subarray(0, a.length + 30)).length, 1);
    assert.equal(batchesOf(records.subarray(0, 5)).length, 0);
    // A flipped payload byte changes the computed checksum, not the stored one.
    const flipped = Buffer.from(records);
    flipped[a.length - 3]! ^= 0x01;
    assert.equal(readBatchHeader(flipped, 0).crc, stored[0]);
    assert.notEqual(batchesOf(flipped)[0]!.checksum, stored[0]);
  });

  it("prints Kafka's offset-mismatch line and stops comparing that partition", () => {
    const p = {
      name: 't-1',
      tp: { topic: 't', partition: 1 },
      replicas: [1, 2],
      fetchOffset: 0n,
      target: 10n,
      divergence: null,
      stopped: false,
      errorsSeen: new Set<string>(),
    };
    const info = (base: bigint, last: bigint) => ({
      baseOffset: base,
      lastOffset: last,
      nextOffset: last + 1n,
      checksum: 1,
    });
    const out = verifyPartition(
      p,
      new Map([
        [1, { errorCode: 0, highWatermark: 10n, batches: [info(0n, 4n)] }],
        [2, { errorCode: 0, highWatermark: 10n, batches: [info(0n, 6n)] }],
      ]),
      () => 'TS',
    );
    assert.deepEqual(out.lines, [
      "TS: partition t-1: replica 1's offset 4 doesn't match replica 2's offset 6",
    ]);
    assert.equal(p.stopped, true);
    assert.equal(p.fetchOffset, 0n);
    // A replica that answered with an error: no comparison, no progress.
    const q = { ...p, stopped: false, divergence: null, fetchOffset: 0n };
    const none = verifyPartition(
      q,
      new Map([
        [1, { errorCode: 0, highWatermark: 10n, batches: [info(0n, 4n)] }],
        [2, { errorCode: 6, highWatermark: -1n, batches: [] }],
      ]),
      () => 'TS',
    );
    assert.deepEqual(none.lines, []);
    assert.equal(q.fetchOffset, 0n);
  });

  it("formats Kafka's timestamps and human sizes", () => {
    assert.match(kafkaTimestamp(Date.UTC(2026, 9, 29, 4, 50, 45, 752)), /^\d{4}-\d\d-\d\d \d\d:\d\d:45,752$/);
    assert.equal(humanBytes(1023), '1023 B');
    assert.equal(humanBytes(1048576), '1.0 MiB');
    assert.equal(humanDuration(5.25), '5.3 s');
    assert.equal(humanDuration(1048576), '12.1 d');
  });

  it('reads *.replication.throttled.replicas as Kafka does: partition:broker pairs or *', () => {
    assert.equal(throttledReplicasInclude(undefined, 0, 1), false);
    assert.equal(throttledReplicasInclude('', 0, 1), false);
    assert.equal(throttledReplicasInclude('*', 7, 3), true);
    assert.equal(throttledReplicasInclude('0:1, 1:2', 1, 2), true);
    assert.equal(throttledReplicasInclude('0:1,1:2', 1, 1), false);
  });
});
