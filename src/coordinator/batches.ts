/**
 * The coordinator's records as __consumer_offsets record batches, and back: what the broker needs
 * to implement CoordinatorLog (append one batch as leader) and to replay a partition (walk its
 * stored batches) without knowing the record schemas.
 */

import { encodeBatch } from '../protocol/records/codec.js';
import { batchesIn, decodeRecords, isControl, NO_PRODUCER_ID } from '../protocol/records/index.js';
import type { ReplayRecord } from './loader.js';
import type { CoordinatorRecord } from './records.js';

/**
 * One uncompressed v2 batch holding the records in order, CreateTime `timestampMs`, no producer
 * id (Kafka's coordinator writes the same for non-transactional commits). Offsets are assigned
 * by the log on append.
 */
export function coordinatorBatch(records: readonly CoordinatorRecord[], timestampMs: number): Buffer {
  if (records.length === 0) throw new RangeError('a coordinator batch needs at least one record');
  return encodeBatch({
    baseTimestamp: BigInt(timestampMs),
    producerId: NO_PRODUCER_ID,
    records: records.map((r) => ({ key: r.key, value: r.value })),
  });
}

/**
 * Every record of the valid batches in `buf` (concatenated batches as a log segment or a read
 * from the log returns them), oldest first, for GroupCoordinator.load. Control batches
 * (transaction markers) carry no coordinator state and are skipped; the walk stops at the first
 * invalid batch, as log recovery would have truncated there.
 */
export function* recordsInBatches(buf: Buffer): Generator<ReplayRecord> {
  for (const entry of batchesIn(buf)) {
    if (isControl(entry.header.attributes)) continue;
    const { records } = decodeRecords(buf, { decompress: true }, entry.pos);
    for (const r of records) yield { key: r.key, value: r.value };
  }
}
