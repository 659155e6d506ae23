/**
 * A coordinator's writes to its internal topic (__consumer_offsets, __transaction_state) as the
 * leader of the partition written: one batch per append, acks=-1, resolved with the batch's base
 * offset once the HW covers it, in the order issued per partition. Owned by the broker's
 * GroupCoordination / TransactionCoordination; single-threaded.
 */
import type { Clock } from '../common/clock.js';
import type { Scheduler } from '../common/scheduler.js';
import { coordinatorBatch } from '../coordinator/batches.js';
import type { CoordinatorLog, CoordinatorRecord, TxnProducer } from '../coordinator/records.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { KafkaError } from '../protocol/kafka-error.js';
import { awaitAcks } from '../replication/delayed-produce.js';
import type { ReplicaManager } from './replica-manager.js';

export interface CoordinatorAppendsDeps {
  readonly topic: string;
  readonly nodeId: number;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly replicaManager: ReplicaManager;
  /** How long an append waits for its replication, and the config that says so (for the error). */
  readonly timeout: () => { readonly ms: number; readonly config: string };
}

export class CoordinatorAppends implements CoordinatorLog {
  /** The tail of each partition's append chain: appends resolve in issue order. */
  private readonly tails = new Map<number, Promise<void>>();

  constructor(private readonly deps: CoordinatorAppendsDeps) {}

  append(partition: number, records: CoordinatorRecord[], txn?: TxnProducer): Promise<bigint> {
    const previous = this.tails.get(partition) ?? Promise.resolve();
    const run = () => this.appendNow(partition, records, txn);
    const next = previous.then(run, run);
    const tail = next.then(
      () => {},
      () => {},
    );
    this.tails.set(partition, tail);
    void tail.then(() => {
      if (this.tails.get(partition) === tail) this.tails.delete(partition);
    });
    return next;
  }

  /** One leader append with acks=-1: resolves to the batch's base offset once the HW covers it. */
  private async appendNow(
    partition: number,
    records: CoordinatorRecord[],
    txn?: TxnProducer,
  ): Promise<bigint> {
    const { replicaManager, topic, nodeId, clock, scheduler } = this.deps;
    const p = replicaManager.getPartition(topic, partition);
    if (p === undefined) {
      throw KafkaError.fromCode(
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        `${topic}-${partition} is not hosted by broker ${nodeId}`,
      );
    }
    // Throws NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS or MESSAGE_TOO_LARGE as a KafkaError, and
    // INVALID_PRODUCER_EPOCH for a transactional commit of a fenced producer epoch.
    const { info, acks } = p.appendAsLeader(coordinatorBatch(records, clock.nowMs(), txn), -1, 'coordinator');
    const timeout = this.deps.timeout();
    const [code] = await awaitAcks(replicaManager.replication.purgatory, scheduler, [acks], timeout.ms);
    if (code === ErrorCode.REQUEST_TIMED_OUT) {
      throw KafkaError.fromCode(
        code,
        `${p.log.name}: not replicated within ${timeout.config} (${timeout.ms} ms)`,
      );
    }
    if (code !== ErrorCode.NONE)
      throw KafkaError.fromCode(code!, `${p.log.name}: the append was not acknowledged`);
    return info.firstOffset;
  }
}
