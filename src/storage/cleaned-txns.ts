import type { AbortedTxn } from './transaction-index.js';

/**
 * Which transactional batches a cleaning meets belong to aborted transactions (Kafka's
 * CleanedTransactionMetadata, without its marker removal): the aborted transactions of the range
 * come from the `.txnindex` files; walking the batches in offset order, a producer is inside an
 * aborted transaction from that transaction's first offset to its marker. Owned by one cleaning
 * pass (the offset map's, or one group's), single-threaded.
 */
export class CleanedTransactions {
  /** Not yet reached, by first offset. */
  private pending: AbortedTxn[] = [];
  private readonly seen = new Set<string>();
  /** Producers whose batches are now in an aborted transaction. */
  private readonly ongoingAborted = new Set<bigint>();

  /** Adds the aborted transactions of the next range (a transaction met twice counts once). */
  add(txns: readonly AbortedTxn[]): void {
    let added = false;
    for (const t of txns) {
      const k = `${t.producerId}:${t.firstOffset}`;
      if (this.seen.has(k)) continue;
      this.seen.add(k);
      this.pending.push(t);
      added = true;
    }
    if (added)
      this.pending.sort((a, b) =>
        a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0,
      );
  }

  private consumeUpTo(offset: bigint): void {
    let i = 0;
    while (i < this.pending.length && this.pending[i]!.firstOffset <= offset)
      this.ongoingAborted.add(this.pending[i++]!.producerId);
    if (i > 0) this.pending = this.pending.slice(i);
  }

  /** A data batch: true when its records belong to an aborted transaction (to discard). */
  onDataBatch(producerId: bigint, isTransactional: boolean, lastOffset: bigint): boolean {
    this.consumeUpTo(lastOffset);
    return isTransactional && this.ongoingAborted.has(producerId);
  }

  /** A control batch: its producer's transaction ends there. */
  onControlBatch(producerId: bigint, lastOffset: bigint): void {
    this.consumeUpTo(lastOffset);
    this.ongoingAborted.delete(producerId);
  }
}
