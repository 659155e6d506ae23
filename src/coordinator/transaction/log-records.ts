/**
 * The records of __transaction_state in Kafka's layout: key = int16 version 0 + TransactionLogKey,
 * value = int16 version + TransactionLogValue (null: a tombstone, the id expired). Version 0 of the
 * value is what Kafka writes for clients below transaction version 2, which is all this
 * coordinator serves. Partitions are written only for the states that carry them, as Kafka does
 * (Empty and Complete* hold none).
 */
import {
  type TransactionLogKey,
  TransactionLogKeyCodec,
} from '../../protocol/generated/coordinator/TransactionLogKey.js';
import {
  type TransactionLogValue,
  TransactionLogValueCodec,
} from '../../protocol/generated/coordinator/TransactionLogValue.js';
import { Reader } from '../../protocol/reader.js';
import { Writer } from '../../protocol/writer.js';
import type { CoordinatorRecord } from '../records.js';
import { TxnState as S, type TxnState, type TxnTransit } from './metadata.js';

const KEY_VERSION = 0;
const VALUE_VERSION = 0;

export function transactionLogKey(transactionalId: string): Buffer {
  const w = new Writer(32);
  w.int16(KEY_VERSION);
  TransactionLogKeyCodec.encode(w, { transactionalId } satisfies TransactionLogKey, KEY_VERSION);
  return w.toBuffer();
}

export function transactionLogRecord(transactionalId: string, t: TxnTransit): CoordinatorRecord {
  const value: TransactionLogValue = {
    producerId: t.producerId,
    previousProducerId: t.prevProducerId,
    nextProducerId: t.nextProducerId,
    producerEpoch: t.producerEpoch,
    transactionTimeoutMs: t.txnTimeoutMs,
    transactionStatus: t.state,
    transactionPartitions:
      t.state === S.Empty || t.state === S.CompleteCommit || t.state === S.CompleteAbort || t.state === S.Dead
        ? null
        : [...t.partitions].map(([topic, partitionIds]) => ({ topic, partitionIds: [...partitionIds] })),
    transactionLastUpdateTimestampMs: BigInt(t.txnLastUpdateTimestamp),
    transactionStartTimestampMs: BigInt(t.txnStartTimestamp),
    clientTransactionVersion: 0,
  };
  const w = new Writer(128);
  w.int16(VALUE_VERSION);
  TransactionLogValueCodec.encode(w, value, VALUE_VERSION);
  return { key: transactionLogKey(transactionalId), value: w.toBuffer() };
}

export function transactionTombstone(transactionalId: string): CoordinatorRecord {
  return { key: transactionLogKey(transactionalId), value: null };
}

export interface DecodedTxnRecord {
  readonly transactionalId: string;
  /** null: a tombstone. */
  readonly value: TxnTransit | null;
}

/** Decodes one record; throws on bytes that are not a transaction log record. */
export function decodeTransactionLogRecord(key: Buffer, value: Buffer | null): DecodedTxnRecord {
  const kr = new Reader(key);
  const keyVersion = kr.int16();
  const { transactionalId } = TransactionLogKeyCodec.decode(kr, keyVersion);
  if (value === null) return { transactionalId, value: null };
  const vr = new Reader(value);
  const v = TransactionLogValueCodec.decode(vr, vr.int16());
  if (v.transactionStatus < 0 || v.transactionStatus > 7) {
    throw new RangeError(`transaction status ${v.transactionStatus} of ${transactionalId} is unknown`);
  }
  const partitions = new Map<string, number[]>();
  for (const p of v.transactionPartitions ?? []) {
    const merged = new Set([...(partitions.get(p.topic) ?? []), ...p.partitionIds]);
    partitions.set(
      p.topic,
      [...merged].sort((a, b) => a - b),
    );
  }
  return {
    transactionalId,
    value: {
      producerId: v.producerId,
      prevProducerId: v.previousProducerId,
      nextProducerId: v.nextProducerId,
      producerEpoch: v.producerEpoch,
      lastProducerEpoch: -1,
      txnTimeoutMs: v.transactionTimeoutMs,
      state: v.transactionStatus as TxnState,
      partitions,
      txnStartTimestamp: Number(v.transactionStartTimestampMs),
      txnLastUpdateTimestamp: Number(v.transactionLastUpdateTimestampMs),
    },
  };
}
