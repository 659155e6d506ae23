/**
 * What acks=all producers were told, and the check against what is read back afterwards: every
 * acknowledged record present, in the acknowledged order, none twice (the disk fault tests of
 * issue 23).
 */
import assert from 'node:assert/strict';
import type { Producer } from '../../src/client/producer.js';

/** What an acks=all producer was told: each partition's acknowledged values, in offset order. */
export class AckLog {
  private readonly acked = new Map<string, { offset: bigint; value: string }[]>();
  failed = 0;

  record(topic: string, value: string, offset: bigint): void {
    let list = this.acked.get(topic);
    if (list === undefined) {
      list = [];
      this.acked.set(topic, list);
    }
    list.push({ offset, value });
  }

  values(topic: string): string[] {
    return [...(this.acked.get(topic) ?? [])].sort((a, b) => Number(a.offset - b.offset)).map((e) => e.value);
  }

  count(topic: string): number {
    return this.acked.get(topic)?.length ?? 0;
  }
}

/** Every acknowledged value is in `read`, in the acknowledged order; nothing in `read` twice. */
export function verify(topic: string, acked: readonly string[], read: readonly string[]): void {
  assert.equal(new Set(read).size, read.length, `${topic}: a record was written twice`);
  const at = new Map(read.map((v, i) => [v, i]));
  const lost = acked.filter((v) => !at.has(v));
  assert.deepEqual(lost.slice(0, 5), [], `${topic}: ${lost.length} acknowledged records lost`);
  for (let i = 1; i < acked.length; i++) {
    assert.ok(at.get(acked[i - 1]!)! < at.get(acked[i]!)!, `${topic}: order broken at ${acked[i]}`);
  }
}

/** Sends `topic`-`i` (padded to about 1 KB) to partition 0; its acknowledgement goes to `acks`. */
export function sendNumbered(producer: Producer, acks: AckLog, topic: string, i: number): Promise<void> {
  const value = `${topic}-${i}-${'x'.repeat(1000)}`;
  return producer.send({ topic, partition: 0, key: null, value: Buffer.from(value) }, (e, meta) => {
    if (e === null) acks.record(topic, value, meta!.offset);
    else acks.failed++;
  });
}
