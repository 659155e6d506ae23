/**
 * The coordinator's records as __consumer_offsets record batches, and back: what the broker needs
 * to implement CoordinatorLog (append one batch as leader) and to replay a partition (walk its
 * stored batches) without knowing the record schemas.
 */

import { encodeBatch } from '../protocol/records/codec.js';
import { type EndTxnMarker, readEndTxnMarker } from '../protocol/records/end-txn-marker.js';
import {
  batchesIn,
  ControlRecordType,
  decodeRecords,
  isControl,
  isTransactional,
  NO_PRODUCER_ID,
} from '../protocol/records/index.js';
import type { ReplayRecord } from './loader.js';
import type { CoordinatorRecord, TxnProducer } from './records.js';

/**
 * One uncompressed v2 batch holding the records in order, CreateTime `timestampMs`. Without `txn`
 * it has no producer id; with it, it is a transactional batch of that producer at base sequence
 * 0, as Kafka's coordinator writes a transactional offset commit (the log checks no sequence on
 * a coordinator's batch). Offsets are assigned by the log on append.
 */
export function coordinatorBatch(
  records: readonly CoordinatorRecord[],
  timestampMs: number,
  txn?: TxnProducer,
): Buffer {
  if (records.length === 0) throw new RangeError('a coordinator batch needs at least one record');
  return encodeBatch({
    baseTimestamp: BigInt(timestampMs),
    producerId: txn?.producerId ?? NO_PRODUCER_ID,
    ...(txn !== undefined && { producerEpoch: txn.producerEpoch, baseSequence: 0, isTransactional: true }),
    records: records.map((r) => ({ key: r.key, value: r.value })),
  });
}

/**
 * Every record of the valid batches in `buf` (concatenated batches as a log segment or a read
 * from the log returns them), oldest first, for GroupCoordinator.load, each with its batch's base
 * offset and producer; a transaction marker comes as one record with `marker` set. The walk stops
 * at the first invalid batch, as log recovery would have truncated there.
 */
export function* recordsInBatches(buf: Buffer): Generator<ReplayRecord> {
  for (const entry of batchesIn(buf)) {
    const h = entry.header;
    const batch = { batchOffset: h.baseOffset, producerId: h.producerId };
    if (isControl(h.attributes)) {
      // A control batch the cleaner emptied, or a control record that is no marker, ends nothing.
      let marker: EndTxnMarker | null = null;
      try {
        marker = readEndTxnMarker(buf, entry.pos);
      } catch {
        marker = null;
      }
      if (marker === null) continue;
      yield {
        key: null,
        value: null,
        ...batch,
        marker: marker.type === ControlRecordType.commit ? 'COMMIT' : 'ABORT',
      };
      continue;
    }
    const transactional = isTransactional(h.attributes);
    const { records } = decodeRecords(buf, { decompress: true }, entry.pos);
    for (const r of records) yield { key: r.key, value: r.value, ...batch, transactional };
  }
}
