/**
 * A minimal controller for the simulation, deciding with the real controller's pure functions
 * (src/controller/partition-change.ts): leader election from the ISR (unclean when enabled),
 * fencing after the session timeout, restarted brokers out of the ISR, AlterPartition validated
 * with Kafka's codes. Commits are instant; brokers learn them through delayed metadata messages.
 */
import {
  type ChangeCause,
  changeRecord,
  leaderCause,
  reconcileCause,
} from '../../src/controller/isr-change.js';
import {
  type BrokerView,
  reconcilePartition,
  validateAlterPartition,
} from '../../src/controller/partition-change.js';
import type { BrokerInfo, PartitionState } from '../../src/metadata/cluster-metadata.js';
import type { IsrChangeRecord } from '../../src/metadata/isr-history.js';
import type { PartitionRecord } from '../../src/metadata/keys.js';
import type { AlterPartitionOutcome, IsrProposal } from '../../src/replication/leader-state.js';

export interface CommittedChange {
  readonly key: string;
  readonly timeMs: number;
  readonly prev: PartitionRecord | undefined;
  readonly next: PartitionRecord;
  readonly unclean: boolean;
  readonly cause: string;
}

export class SimController {
  readonly records = new Map<string, PartitionRecord>();
  private readonly brokers = new Map<number, BrokerInfo>();
  private readonly restarted = new Set<number>();
  private readonly lastHeartbeat = new Map<number, number>();
  private nextBrokerEpoch = 100n;
  readonly changes: CommittedChange[] = [];
  /** (partition, leader epoch) → leader: at most one leader per epoch. */
  private readonly leaderOfEpoch = new Map<string, number>();
  readonly violations: string[] = [];
  /** The durable ISR history as the real controller writes it (same pure functions), by key. */
  readonly history = new Map<string, IsrChangeRecord[]>();
  uncleanElection = false;

  constructor(
    private readonly nowMs: () => number,
    /** Sends a committed state to every live broker (delayed by the simulation). */
    private readonly publish: (state: PartitionState) => void,
    private readonly onUnclean: (key: string) => void = () => {},
  ) {}

  view(): BrokerView {
    return { brokers: this.brokers, restarted: this.restarted };
  }

  brokerEpoch(id: number): bigint | undefined {
    return this.brokers.get(id)?.epoch;
  }

  isEligible(id: number, epoch: bigint): boolean {
    const b = this.brokers.get(id);
    return b !== undefined && !b.inControlledShutdown && (epoch === -1n || epoch === b.epoch);
  }

  createPartition(key: string, replicas: readonly number[]): void {
    const rec: PartitionRecord = {
      leader: replicas[0]!,
      leaderEpoch: 0,
      partitionEpoch: 0,
      replicas: [...replicas],
      isr: [...replicas],
      addingReplicas: [],
      removingReplicas: [],
    };
    this.commit(key, rec, false, 'created', { cause: 'topic-created', reason: 'partition created' });
  }

  /** A broker (re)registers: a new epoch; a returning one leaves the ISRs it was in. */
  register(id: number): bigint {
    const epoch = this.nextBrokerEpoch++;
    const wasKnown = this.brokers.has(id) || [...this.records.values()].some((r) => r.replicas.includes(id));
    this.brokers.set(id, {
      id,
      host: 'sim',
      port: 9092,
      endpoints: [{ listenerName: 'PLAINTEXT', host: 'sim', port: 9092, securityProtocol: 'PLAINTEXT' }],
      rack: null,
      epoch,
      inControlledShutdown: false,
    });
    if (wasKnown) this.restarted.add(id);
    this.lastHeartbeat.set(id, this.nowMs());
    this.reconcileAll(`broker ${id} registered with epoch ${epoch}`);
    this.restarted.delete(id);
    return epoch;
  }

  /** A broker's session keep-alive: false once it is fenced (it must register again). */
  heartbeat(id: number, epoch: bigint): boolean {
    if (this.brokers.get(id)?.epoch !== epoch) return false;
    this.lastHeartbeat.set(id, this.nowMs());
    return true;
  }

  /** Fences every broker whose last heartbeat is older than the session timeout. */
  expireSessions(sessionTimeoutMs: number): void {
    for (const [id, b] of [...this.brokers]) {
      if (this.nowMs() - (this.lastHeartbeat.get(id) ?? 0) > sessionTimeoutMs) this.fence(id, b.epoch);
    }
  }

  /** The session of `id` at `epoch` expired: fenced, its ISR places and leaderships go. */
  fence(id: number, epoch: bigint): void {
    if (this.brokers.get(id)?.epoch !== epoch) return;
    this.brokers.delete(id);
    this.reconcileAll(`broker ${id} fenced`);
  }

  isRegistered(id: number): boolean {
    return this.brokers.has(id);
  }

  private reconcileAll(cause: string): void {
    for (const [key, rec] of this.records) {
      const out = reconcilePartition(rec, this.view(), this.uncleanElection);
      if (out)
        this.commit(
          key,
          out.next,
          out.unclean,
          cause,
          reconcileCause(rec, out.next, this.view(), new Set(), out.unclean),
        );
    }
  }

  alterPartition(senderId: number, senderEpoch: bigint, p: IsrProposal): AlterPartitionOutcome {
    const key = `${p.topic}-${p.partition}`;
    const rec = this.records.get(key);
    const fail = (errorCode: number): AlterPartitionOutcome => ({
      errorCode,
      leaderId: -1,
      leaderEpoch: -1,
      isr: [],
      partitionEpoch: -1,
    });
    if (this.brokers.get(senderId)?.epoch !== senderEpoch) return fail(77); // STALE_BROKER_EPOCH
    const decision = validateAlterPartition(
      rec,
      senderId,
      {
        partition: p.partition,
        leaderEpoch: p.leaderEpoch,
        partitionEpoch: p.partitionEpoch,
        newIsr: p.newIsr,
        newIsrEpochs: p.newIsrEpochs.map(String),
      },
      this.view(),
    );
    if (decision.errorCode !== 0) return fail(decision.errorCode);
    let next = rec!;
    if (decision.next) {
      next = decision.next;
      this.commit(
        key,
        next,
        false,
        `AlterPartition from ${senderId}`,
        leaderCause(rec!, next, p.cause, p.reason),
      );
    }
    return {
      errorCode: 0,
      leaderId: next.leader,
      leaderEpoch: next.leaderEpoch,
      isr: next.isr,
      partitionEpoch: next.partitionEpoch,
    };
  }

  private commit(
    key: string,
    next: PartitionRecord,
    unclean: boolean,
    cause: string,
    why: ChangeCause,
  ): void {
    const prev = this.records.get(key);
    const list = this.history.get(key) ?? [];
    list.push(changeRecord(prev, next, why, unclean, this.nowMs()));
    if (list.length > 1000) list.shift();
    this.history.set(key, list);
    if (next.leader >= 0) {
      const epochKey = `${key}@${next.leaderEpoch}`;
      const seen = this.leaderOfEpoch.get(epochKey);
      if (seen !== undefined && seen !== next.leader) {
        this.violations.push(
          `${key}: two leaders (${seen}, ${next.leader}) in leader epoch ${next.leaderEpoch}`,
        );
      }
      this.leaderOfEpoch.set(epochKey, next.leader);
    }
    if (prev && next.partitionEpoch !== prev.partitionEpoch + 1) {
      this.violations.push(`${key}: partition epoch ${prev.partitionEpoch} → ${next.partitionEpoch}`);
    }
    this.records.set(key, next);
    this.changes.push({ key, timeMs: this.nowMs(), prev, next, unclean, cause });
    if (unclean) this.onUnclean(key);
    if (this.changes.length > 2000) this.changes.shift();
    this.publish(toState(key, next));
  }

  /** Every partition's current state, for a broker that just registered. */
  allStates(): PartitionState[] {
    return [...this.records].map(([key, rec]) => toState(key, rec));
  }
}

export function toState(key: string, rec: PartitionRecord): PartitionState {
  const dash = key.lastIndexOf('-');
  return {
    topic: key.slice(0, dash),
    partition: Number(key.slice(dash + 1)),
    leader: rec.leader,
    leaderEpoch: rec.leaderEpoch,
    partitionEpoch: rec.partitionEpoch,
    replicas: rec.replicas,
    isr: rec.isr,
    addingReplicas: rec.addingReplicas,
    removingReplicas: rec.removingReplicas,
  };
}
