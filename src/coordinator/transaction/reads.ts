/**
 * ListTransactions and DescribeTransactions over the coordinator's transactional ids, with Kafka's
 * filters (TransactionStateManager.listTransactionStates, TransactionCoordinator.handleDescribeTransactions).
 * Pure: the coordinator passes its metadata in.
 */
import type { TransactionState } from '../../protocol/generated/DescribeTransactionsResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import { type TransactionMetadata, TXN_STATE_NAMES, TxnState } from './metadata.js';

export interface ListTransactionsResult {
  errorCode: number;
  unknownStateFilters: string[];
  transactionStates: { transactionalId: string; producerId: bigint; transactionState: string }[];
}

/**
 * The ids that pass every filter: a state among `stateFilters` (names Kafka does not know are
 * reported back), a producer id among `producerIdFilters`, running longer than `durationFilterMs`
 * (-1: any). Dead ids, about to be removed, are never listed.
 */
export function listTransactions(
  txns: readonly TransactionMetadata[],
  stateFilters: readonly string[],
  producerIdFilters: readonly bigint[],
  durationFilterMs: bigint,
  nowMs: number,
): ListTransactionsResult {
  const unknownStateFilters: string[] = [];
  const states = new Set<number>();
  for (const name of stateFilters) {
    const i = TXN_STATE_NAMES.indexOf(name);
    if (i < 0) unknownStateFilters.push(name);
    else states.add(i);
  }
  const pids = new Set(producerIdFilters);
  const now = BigInt(nowMs);
  const transactionStates = txns
    .filter(
      (m) =>
        m.state !== TxnState.Dead &&
        (pids.size === 0 || pids.has(m.producerId)) &&
        (stateFilters.length === 0 || states.has(m.state)) &&
        (durationFilterMs < 0n || now - BigInt(m.txnStartTimestamp) > durationFilterMs),
    )
    .map((m) => ({
      transactionalId: m.transactionalId,
      producerId: m.producerId,
      transactionState: TXN_STATE_NAMES[m.state]!,
    }));
  return { errorCode: ErrorCode.NONE, unknownStateFilters, transactionStates };
}

/** One entry of DescribeTransactions' answer. */
export type DescribedTransaction = TransactionState;

export function describeError(transactionalId: string, errorCode: number): DescribedTransaction {
  return {
    errorCode,
    transactionalId,
    transactionState: '',
    transactionTimeoutMs: 0,
    transactionStartTimeMs: -1n,
    producerId: -1n,
    producerEpoch: -1,
    topics: [],
  };
}

/** An id this coordinator owns (or does not know: TRANSACTIONAL_ID_NOT_FOUND). */
export function describeTransaction(
  transactionalId: string,
  m: TransactionMetadata | undefined,
): DescribedTransaction {
  if (m === undefined || m.state === TxnState.Dead) {
    return describeError(transactionalId, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND);
  }
  return {
    errorCode: ErrorCode.NONE,
    transactionalId,
    transactionState: TXN_STATE_NAMES[m.state]!,
    transactionTimeoutMs: m.txnTimeoutMs,
    transactionStartTimeMs: BigInt(m.txnStartTimestamp),
    producerId: m.producerId,
    producerEpoch: m.producerEpoch,
    topics: [...m.partitionsSnapshot()].map(([topic, partitions]) => ({ topic, partitions })),
  };
}
