import { ProtocolError } from '../protocol-error.js';
import { batchRecordsSection, encodeBatch } from './codec.js';
import { ControlRecordType, controlRecordKey, readRecords } from './record.js';

/**
 * The record of a COMMIT or ABORT control batch (Kafka's EndTransactionMarker): the key is the
 * control record key (version, type), the value int16 version 0 and int32 coordinator epoch.
 */
export interface EndTxnMarker {
  readonly type: (typeof ControlRecordType)[keyof typeof ControlRecordType];
  readonly coordinatorEpoch: number;
}

const VALUE_VERSION = 0;
const VALUE_SIZE = 6;

/**
 * The marker of the control batch at `batch[pos]`, or null for a control batch without records
 * (the cleaner removed the whole transaction). A key of another type or a short value is a
 * ProtocolError, as Kafka's EndTransactionMarker.deserialize refuses them.
 */
export function readEndTxnMarker(batch: Buffer, pos = 0): EndTxnMarker | null {
  const { header, records } = batchRecordsSection(batch, pos, { decompress: true });
  if (header.recordsCount <= 0) return null;
  const [record] = readRecords(records, 1);
  if (!record || record.key === null || record.key.length < 4) {
    throw new ProtocolError('control record without a 4-byte key');
  }
  const type = record.key.readInt16BE(2);
  if (type !== ControlRecordType.abort && type !== ControlRecordType.commit) {
    throw new ProtocolError(`control record type ${type} is not a transaction marker`);
  }
  const value = record.value;
  if (value === null || value.length < VALUE_SIZE) {
    throw new ProtocolError(`transaction marker value of ${value === null ? 'null' : value.length} bytes`);
  }
  if (value.readInt16BE(0) < 0) throw new ProtocolError(`transaction marker version ${value.readInt16BE(0)}`);
  return { type, coordinatorEpoch: value.readInt32BE(2) };
}

export interface EndTxnMarkerBatch {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly coordinatorEpoch: number;
  readonly commit: boolean;
  readonly timestamp: bigint;
}

/** A control batch of one marker, as the coordinator's WriteTxnMarkers writes it (uncompressed). */
export function encodeEndTxnMarkerBatch(m: EndTxnMarkerBatch): Buffer {
  const value = Buffer.alloc(VALUE_SIZE);
  value.writeInt16BE(VALUE_VERSION, 0);
  value.writeInt32BE(m.coordinatorEpoch, 2);
  return encodeBatch({
    producerId: m.producerId,
    producerEpoch: m.producerEpoch,
    baseSequence: -1,
    isTransactional: true,
    isControl: true,
    baseTimestamp: m.timestamp,
    records: [
      {
        key: controlRecordKey(m.commit ? ControlRecordType.commit : ControlRecordType.abort),
        value,
      },
    ],
  });
}
