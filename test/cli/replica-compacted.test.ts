/**
 * replica-verification's comparison of a compacted partition (replica-compacted.ts) on batches
 * encoded as Skiff's cleaner writes them: three replicas, one uncleaned, one cleaned once (a
 * tombstone given its delete horizon), one cleaned twice (the tombstone and a superseded batch
 * gone) agree; a record changed, a record dropped without a later one of its key, and a batch
 * no cleaner touched with different bytes are each reported.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MissingRecords } from '../../src/cli/tools/replica-compacted.js';
import {
  batchesOf,
  type PartitionState,
  type ReplicaRead,
  verifyPartition,
} from '../../src/cli/tools/replica-verification.js';
import { encodeBatch } from '../../src/protocol/records/codec.js';

const T0 = 1_700_000_000_000n;
type Rec = readonly [offset: number, key: string, value: string | null];

/** A batch of offsets base..last holding `recs`; with `horizon`, the delete horizon a cleaning set. */
function batch(base: number, last: number, recs: readonly Rec[], horizon?: bigint): Buffer {
  const baseTimestamp = horizon ?? T0;
  return encodeBatch({
    baseOffset: BigInt(base),
    baseTimestamp,
    hasDeleteHorizon: horizon !== undefined,
    lastOffsetDelta: last - base,
    maxTimestamp: recs.length === 0 ? -1n : T0 + BigInt(recs.at(-1)![0]),
    records: recs.map(([o, k, v]) => ({
      offsetDelta: o - base,
      timestampDelta: T0 + BigInt(o) - baseTimestamp,
      key: Buffer.from(k),
      value: v === null ? null : Buffer.from(v),
    })),
  });
}

const B0: Rec[] = [
  [0, 'k0', 'a0'],
  [1, 'k1', 'a1'],
  [2, 'k2', 'a2'],
  [3, 'k3', 'a3'],
];
const B1: Rec[] = [
  [4, 'k0', 'b4'],
  [5, 'k1', null],
  [6, 'k2', 'b6'],
  [7, 'k4', 'b7'],
];
const B2: Rec[] = [
  [8, 'k0', 'c8'],
  [9, 'k3', 'c9'],
];
const uncleaned = () => [batch(0, 3, B0), batch(4, 7, B1), batch(8, 9, B2)];
/** Cleaned below offset 8: k3@3 stays (its later record was not in the cleaned range), the tombstone gets a horizon. */
const cleanedOnce = () => [batch(0, 3, [B0[3]!]), batch(4, 7, B1, T0 + 1000n), batch(8, 9, B2)];
/** Cleaned again below 10 after the horizon: batch 0..3 gone, the tombstone and k0@4 gone. */
const cleanedTwice = (b1 = [B1[2]!, B1[3]!]) => [batch(4, 7, b1, T0 + 1000n), batch(8, 9, B2)];

function read(batches: readonly Buffer[]): ReplicaRead {
  const records = Buffer.concat(batches);
  return { errorCode: 0, highWatermark: 10n, batches: batchesOf(records), recordBytes: records.length };
}

function verify(logs: readonly (readonly Buffer[])[]): { p: PartitionState; lines: string[] } {
  const p: PartitionState = {
    name: 'kv-0',
    tp: { topic: 'kv', partition: 0 },
    replicas: [1, 2, 3],
    fetchOffset: 0n,
    target: 10n,
    divergence: null,
    stopped: false,
    errorsSeen: new Set(),
    compacted: new Map() as MissingRecords,
  };
  const { lines } = verifyPartition(p, new Map(logs.map((l, i) => [i + 1, read(l)])), () => 'TS');
  return { p, lines };
}

describe('replica-verification of a compacted partition', () => {
  it('replicas cleaned at different times agree', () => {
    const { p, lines } = verify([uncleaned(), cleanedOnce(), cleanedTwice()]);
    assert.deepEqual(lines, []);
    assert.equal(p.divergence, null);
    assert.equal(p.fetchOffset, 10n);
  });

  it('a record changed on one replica is reported at its offset', () => {
    const { p, lines } = verify([uncleaned(), cleanedOnce(), cleanedTwice([[6, 'k2', 'XX'], B1[3]!])]);
    assert.deepEqual(lines, [
      'TS: partition kv-0: the record at offset 6 (key "k2") has a different value on replica 1 than on replica 3',
    ]);
    assert.equal(p.divergence?.offset, 6n);
  });

  it('a record dropped without a later record of its key is reported when the walk ends', () => {
    const { p, lines } = verify([uncleaned(), cleanedOnce(), cleanedTwice([B1[2]!])]);
    assert.deepEqual(lines, [
      `TS: partition kv-0: replica 1's record at offset 7 (key "k4") is absent on replica 3, which holds no later record of that key below offset 10`,
    ]);
    assert.equal(p.divergence?.offset, 7n);
  });

  it('a batch no replica compacted compares byte for byte', () => {
    const changed = [batch(0, 3, B0), batch(4, 7, B1), batch(8, 9, [B2[0]!, [9, 'k3', 'zz']])];
    const { p, lines } = verify([uncleaned(), changed, uncleaned()]);
    assert.equal(lines.length, 1);
    assert.match(
      lines[0]!,
      /^TS: partition kv-0: the batch 8\.\.9, compacted on no replica, has replica 1's checksum \d+ and replica 2's checksum \d+$/,
    );
    assert.equal(p.divergence?.offset, 8n);
  });
});
