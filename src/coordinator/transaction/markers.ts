/**
 * Writes a transaction's COMMIT or ABORT markers to the leaders of its partitions (Kafka's
 * TransactionMarkerChannelManager): one WriteTxnMarkers per leader broker, partitions whose leader
 * cannot take the marker yet (moved, not enough replicas, unreachable) retried after a backoff
 * until every partition has it or the coordinator stops owning the transaction. A partition of a
 * deleted topic needs no marker. Owned by the TransactionCoordinator; single-threaded.
 */
import type { Logger } from '../../common/logger.js';
import type { Scheduler } from '../../common/scheduler.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { WriteTxnMarkersRequest } from '../../protocol/generated/WriteTxnMarkersRequest.js';
import type { WriteTxnMarkersResponse } from '../../protocol/generated/WriteTxnMarkersResponse.js';

/** How the coordinator reaches partition leaders; the broker implements it. */
export interface TxnMarkerTransport {
  /** The partition's leader; null while it has none; undefined when the topic or partition does not exist. */
  leaderOf(topic: string, partition: number): number | null | undefined;
  /** Sends WriteTxnMarkers to a broker (possibly this one); rejects when it cannot be reached. */
  writeTxnMarkers(brokerId: number, request: WriteTxnMarkersRequest): Promise<WriteTxnMarkersResponse>;
}

export interface MarkerJob {
  readonly transactionalId: string;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly coordinatorEpoch: number;
  readonly commit: boolean;
  /** topic → partitions still waiting for the marker; emptied as leaders acknowledge. */
  readonly pending: Map<string, Set<number>>;
  /** Whether the coordinator still owns the transaction in the state that sent these markers. */
  readonly stillOwned: () => boolean;
}

/** Outcome of a marker job: all written, or given up (the coordinator lost the transaction, or was fenced). */
export type MarkerOutcome = 'written' | 'abandoned';

/** Errors after which retrying cannot help: the coordinator is a zombie, or the markers are invalid. */
const FENCED = new Set<number>([ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED]);
/** Errors after which the partition needs no marker from us (Kafka removes it from the transaction). */
const DROP = new Set<number>([ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, ErrorCode.UNSUPPORTED_VERSION]);

export class TxnMarkerSender {
  private stopped = false;

  constructor(
    private readonly transport: TxnMarkerTransport,
    private readonly scheduler: Scheduler,
    private readonly logger: Logger,
    private readonly retryBackoffMs: number,
  ) {}

  stop(): void {
    this.stopped = true;
  }

  async send(job: MarkerJob): Promise<MarkerOutcome> {
    for (;;) {
      if (this.stopped || !job.stillOwned()) return 'abandoned';
      const byLeader = new Map<number, Map<string, number[]>>();
      for (const [topic, parts] of job.pending) {
        for (const partition of [...parts]) {
          const leader = this.transport.leaderOf(topic, partition);
          if (leader === undefined) {
            parts.delete(partition);
            continue;
          }
          if (leader === null) continue;
          const m = byLeader.get(leader) ?? new Map<string, number[]>();
          byLeader.set(leader, m);
          m.set(topic, [...(m.get(topic) ?? []), partition]);
        }
        if (parts.size === 0) job.pending.delete(topic);
      }
      if (job.pending.size === 0) return 'written';
      let fenced = false;
      await Promise.all(
        [...byLeader].map(async ([brokerId, topics]) => {
          let resp: WriteTxnMarkersResponse;
          try {
            resp = await this.transport.writeTxnMarkers(brokerId, {
              markers: [
                {
                  producerId: job.producerId,
                  producerEpoch: job.producerEpoch,
                  transactionResult: job.commit,
                  coordinatorEpoch: job.coordinatorEpoch,
                  topics: [...topics].map(([name, partitionIndexes]) => ({ name, partitionIndexes })),
                },
              ],
            });
          } catch (e) {
            this.logger.warn(
              `transaction ${job.transactionalId}: markers to broker ${brokerId} failed (${(e as Error).message}); retrying`,
            );
            return;
          }
          for (const m of resp.markers) {
            for (const t of m.topics) {
              for (const p of t.partitions) {
                if (p.errorCode === ErrorCode.NONE || DROP.has(p.errorCode)) {
                  const s = job.pending.get(t.name);
                  s?.delete(p.partitionIndex);
                  if (s?.size === 0) job.pending.delete(t.name);
                } else if (FENCED.has(p.errorCode)) {
                  fenced = true;
                }
              }
            }
          }
        }),
      );
      if (fenced) {
        this.logger.warn(
          `transaction ${job.transactionalId}: a partition leader fenced the markers of coordinator epoch ${job.coordinatorEpoch}; stopped sending them`,
        );
        return 'abandoned';
      }
      if (job.pending.size === 0) return 'written';
      await new Promise<void>((resolve) =>
        this.scheduler.schedule('txn-marker-retry', this.retryBackoffMs, resolve),
      );
    }
  }
}
