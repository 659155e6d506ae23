/**
 * The replication tools' pure parts: replica-verification's batch walk (a partial trailing batch is
 * left out, the checksum is computed over the bytes served), Kafka's timestamp format, Kafka's
 * offset-mismatch line, and rebuild-plan's reading of *.replication.throttled.replicas.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { throttledReplicasInclude } from '../../src/cli/tools/rebuild-plan.js';
import {
  batchesOf,
  type PartitionState,
  verdict,
  verifyPartition,
} from '../../src/cli/tools/replica-verification.js';
import { humanBytes, humanDuration, kafkaTimestamp } from '../../src/cli/tools/replication-tools.js';
import { emptyBatchHeader, readBatchHeader } from '../../src/protocol/records/batch.js';
import { batch } from '../broker/helpers.js';
import { skiff } from './in-process.js';

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
      compacted: null,
    };
    const info = (base: bigint, last: bigint) => ({
      baseOffset: base,
      lastOffset: last,
      nextOffset: last + 1n,
      checksum: 1,
      header: emptyBatchHeader(),
      bytes: Buffer.alloc(0),
    });
    const out = verifyPartition(
      p,
      new Map([
        [1, { errorCode: 0, highWatermark: 10n, recordBytes: 0, batches: [info(0n, 4n)] }],
        [2, { errorCode: 0, highWatermark: 10n, recordBytes: 0, batches: [info(0n, 6n)] }],
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
        [1, { errorCode: 0, highWatermark: 10n, recordBytes: 0, batches: [info(0n, 4n)] }],
        [2, { errorCode: 6, highWatermark: -1n, recordBytes: 0, batches: [] }],
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

  it('a missing broker or a bad flag is one stderr line and a non-zero exit', async () => {
    const cases: [string[], number, RegExp][] = [
      [
        ['isr-history', '--bootstrap-server', '127.0.0.1:1', '--topic', 't'],
        1,
        /^skiff isr-history: cannot connect to 127\.0\.0\.1:1/,
      ],
      [['rebuild-plan', '--bootstrap-server', '127.0.0.1:1'], 1, /^skiff rebuild-plan: cannot connect/],
      [
        ['replica-verification', '--broker-list', '127.0.0.1:1'],
        1,
        /^skiff replica-verification: cannot connect/,
      ],
      [
        ['rebuild-plan', '--bootstrap-server', '127.0.0.1:1', '--broker', 'x'],
        2,
        /--broker expects an integer/,
      ],
      [
        ['isr-history', '--bootstrap-server', '127.0.0.1:1', '--topic', 't', '--bogus'],
        2,
        /unknown option '--bogus'/,
      ],
      [
        ['isr-history', '--bootstrap-server', '127.0.0.1:1', '--topic', 't', '--partition', '-1'],
        2,
        /--partition expects a partition number/,
      ],
      [['replica-verification'], 2, /missing required argument --bootstrap-server \(or --broker-list\)/],
      [['replica-verification', '--broker-list', '127.0.0.1:1', '--time', '-3'], 2, /--time expects/],
      [
        ['replica-verification', '--broker-list', '127.0.0.1:1', '--max-duration-ms', '0'],
        2,
        /--max-duration-ms must be > 0/,
      ],
    ];
    for (const [args, status, re] of cases) {
      const r = await skiff(args);
      assert.equal(r.status, status, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, '', args.join(' '));
      assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, re);
    }
  });
});

describe('replica-verification verdict', () => {
  const state = (name: string, fetchOffset: bigint, target: bigint): PartitionState => ({
    name,
    tp: { topic: name.split('-')[0]!, partition: 0 },
    replicas: [1, 2],
    fetchOffset,
    target,
    divergence: null,
    stopped: false,
    errorsSeen: new Set(),
    compacted: null,
  });
  const now = () => 'T';

  it('0 when every partition agrees up to its HW at start', () => {
    const r = verdict([state('a-0', 10n, 10n)], null, now);
    assert.equal(r.code, 0);
    assert.deepEqual(r.lines, [
      'T: verification completed: the replicas of all 1 partitions agree up to their high watermark at start',
    ]);
  });

  it('1 naming the first divergent batch and both checksums, before a stop', () => {
    const bad = state('b-0', 5n, 10n);
    bad.divergence = {
      offset: 3n,
      lastOffset: 4n,
      replicaA: 1,
      checksumA: 111,
      replicaB: 2,
      checksumB: 222,
      offsets: false,
    };
    const r = verdict([state('a-0', 10n, 10n), bad], 500, now);
    assert.equal(r.code, 1);
    assert.deepEqual(r.lines, [
      "T: partition b-0 diverges first at offset 3 (the batch 3..4); replica 1's checksum 111; replica 2's checksum 222",
      'T: verification stopped after 500 ms (--max-duration-ms): 0 of 2 partitions not compared up to their high watermark at start: ',
      'T: verification completed: 1 of 2 partitions have replicas that diverge',
    ]);
  });

  it('3 when --max-duration-ms ends it first, naming the partitions left', () => {
    const r = verdict([state('a-0', 10n, 10n), state('c-0', 4n, 9n)], 500, now);
    assert.equal(r.code, 3);
    assert.deepEqual(r.lines, [
      'T: verification stopped after 500 ms (--max-duration-ms): 1 of 2 partitions not compared up to their high watermark at start: c-0 at offset 4 of 9',
    ]);
  });
});
