/**
 * The checker's verdicts on hand-made histories: a clean one passes; a lost record, a duplicate, a
 * reorder, a record at another offset than acknowledged and a value it never wrote are each caught;
 * replicas whose segment files differ below the high watermark are caught, and only there.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  type Ack,
  clean,
  type LogRecord,
  recordValue,
  recoverySeconds,
  replicaFilesDiffer,
  summary,
  verify,
} from './checker.js';

/** Producer 0's records 0..n-1 on partition 0 at offsets 0..n-1, acknowledged 10 ms after sending. */
function history(n: number): { acks: Ack[]; log: LogRecord[] } {
  const acks: Ack[] = [];
  const log: LogRecord[] = [];
  for (let i = 0; i < n; i++) {
    acks.push({
      producer: 0,
      partition: 0,
      sequence: i,
      offset: BigInt(i),
      sentMs: 1000 + i,
      ackedMs: 1010 + i,
    });
    log.push({ offset: BigInt(i), value: recordValue(0, i) });
  }
  return { acks, log };
}

const renumber = (log: LogRecord[]): LogRecord[] =>
  log.map((r, i) => ({ offset: BigInt(i), value: r.value }));

describe('the checker', () => {
  it('passes a history where every acknowledged record is where it was acknowledged', () => {
    const { acks, log } = history(5);
    // A record written but never acknowledged (its answer lost) is no fault.
    log.push({ offset: 5n, value: recordValue(0, 5) });
    const v = verify(acks, new Map([[0, log]]));
    assert.ok(clean(v));
    assert.equal(summary(v, 1.5), 'records acknowledged 5, lost 0, duplicated 0, recovery 1.50s');
  });

  it('catches a lost record', () => {
    const { acks, log } = history(5);
    log.splice(4, 1);
    const v = verify(acks, new Map([[0, log]]));
    assert.ok(!clean(v));
    assert.deepEqual(
      v.lost.map((a) => a.sequence),
      [4],
    );
    assert.match(summary(v, null), /lost 1, duplicated 0, recovery none/);
  });

  it('catches a lost partition: nothing read back where records were acknowledged', () => {
    const { acks } = history(3);
    const v = verify(acks, new Map([[0, []]]));
    assert.equal(v.lost.length, 3);
  });

  it('catches a duplicate, even of a record never acknowledged', () => {
    const { acks, log } = history(4);
    log.splice(2, 0, { offset: 0n, value: recordValue(0, 1) });
    const v = verify(acks, new Map([[0, renumber(log)]]));
    assert.ok(!clean(v));
    assert.equal(v.duplicated.length, 1);
    const unacked = verify([], new Map([[0, renumber(log)]]));
    assert.equal(unacked.duplicated.length, 1);
  });

  it('catches a reorder within a producer, not across producers', () => {
    const { acks, log } = history(4);
    [log[1], log[2]] = [log[2]!, log[1]!];
    const v = verify([], new Map([[0, renumber(log)]]));
    assert.ok(!clean(v));
    assert.equal(v.reordered.length, 1);
    // Two producers interleaved, each in order: no reorder.
    const mixed = [recordValue(1, 0), recordValue(0, 0), recordValue(0, 1), recordValue(1, 1)].map(
      (value, i) => ({
        offset: BigInt(i),
        value,
      }),
    );
    assert.ok(clean(verify([], new Map([[0, mixed]]))));
    // And the acknowledged ones of the reordered log are at other offsets than acknowledged.
    assert.equal(verify(acks, new Map([[0, renumber(log)]])).moved.length, 2);
  });

  it('catches a record at another offset than acknowledged, and one in another partition', () => {
    const { acks, log } = history(3);
    const shifted = log.map((r) => ({ offset: r.offset + 1n, value: r.value }));
    assert.equal(verify(acks, new Map([[0, shifted]])).moved.length, 3);
    assert.equal(verify(acks, new Map([[1, log]])).lost.length, 3);
  });

  it('catches a value it never wrote', () => {
    const v = verify([], new Map([[0, [{ offset: 0n, value: 'p0-x' }]]]));
    assert.equal(v.foreign.length, 1);
    assert.ok(!clean(v));
  });

  it('times recovery to the first acknowledgement of a record sent after the fault', () => {
    const acks: Ack[] = [
      // Sent before the fault, acknowledged after it: not what recovery measures.
      { producer: 0, partition: 0, sequence: 0, offset: 0n, sentMs: 900, ackedMs: 1100 },
      { producer: 0, partition: 0, sequence: 1, offset: 1n, sentMs: 1200, ackedMs: 3500 },
      { producer: 1, partition: 0, sequence: 0, offset: 2n, sentMs: 1300, ackedMs: 3000 },
    ];
    assert.equal(recoverySeconds(acks, 1000), 2);
    assert.equal(recoverySeconds(acks, 4000), null);
  });

  it('compares replicas byte for byte below the high watermark, however their segments are split', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-checker-'));
    try {
      /** A batch of `count` records from `base`: offset, length, then a body whose byte 23 - 12 on is the last offset delta. */
      const batch = (base: number, count: number, fill: number) => {
        const b = Buffer.alloc(61, fill);
        b.writeBigInt64BE(BigInt(base), 0);
        b.writeInt32BE(61 - 12, 8);
        b.writeInt32BE(count - 1, 23);
        return b;
      };
      const write = (broker: string, segments: Buffer[][]) => {
        const dir = path.join(root, broker, 't-0');
        fs.mkdirSync(dir, { recursive: true });
        let base = 0;
        for (const batches of segments) {
          fs.writeFileSync(path.join(dir, `${String(base).padStart(20, '0')}.log`), Buffer.concat(batches));
          base += batches.length * 2;
        }
        return path.join(root, broker);
      };
      const batches = [batch(0, 2, 1), batch(2, 2, 2), batch(4, 2, 3)];
      const a = write('a', [batches]);
      const b = write('b', [batches.slice(0, 1), batches.slice(1)]);
      const hw = new Map([[0, 4n]]);
      assert.equal(replicaFilesDiffer([a, b], 't', hw), null);
      // Past the HW the replicas may differ: a follower's uncommitted tail.
      const c = write('c', [[batches[0]!, batches[1]!, batch(4, 2, 9)]]);
      assert.equal(replicaFilesDiffer([a, c], 't', hw), null);
      // Below it they may not: one byte of the second batch changed.
      const rotten = Buffer.from(batches[1]!);
      rotten[40] = 0xee;
      const d = write('d', [[batches[0]!, rotten, batches[2]!]]);
      assert.match(replicaFilesDiffer([a, d], 't', hw) ?? '', /t-0 below the HW 4: .* at byte 101/);
      // Nor may one hold less.
      const e = write('e', [[batches[0]!]]);
      assert.notEqual(replicaFilesDiffer([a, e], 't', hw), null);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
