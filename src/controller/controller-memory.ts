import type { Logger } from '../common/logger.js';
import type { BrokerInfo } from '../metadata/cluster-metadata.js';
import type { MetadataKeys } from '../metadata/keys.js';
import type { MetadataStore, Op } from '../metadata/store.js';

/** Commits `ops` under the active controller's guard; true when they were written. */
export type GuardedCommit = (what: string, ops: readonly Op[]) => Promise<boolean>;

/**
 * What an active controller remembers of the brokers between reconciles, kept in the store
 * (`controller-state/…`) so that its successor starts from it:
 * - the broker epochs it last handled: a broker that restarted while no controller was active is
 *   still treated as restarted (its log may be shorter than the ISR thinks);
 * - the brokers it saw in controlled shutdown and not back since: one gone from the registrations
 *   stopped cleanly (history cause controlled-shutdown), any other was fenced — also when the
 *   stopping broker ran the active controller and was gone before its successor took over.
 * Each value is written only when it changed.
 */
export class ControllerMemory {
  private epochs = new Map<number, bigint>();
  private storedEpochs: string | null = null;
  private readonly seen = new Set<number>();
  private storedSeen: string | null = null;

  constructor(
    private readonly store: MetadataStore,
    private readonly keys: MetadataKeys,
    private readonly logger: Logger,
  ) {}

  /** Brokers seen in controlled shutdown and not back since. */
  get shutdownSeen(): ReadonlySet<number> {
    return this.seen;
  }

  /** The epoch last handled for broker `id`. */
  knownEpoch(id: number): bigint | undefined {
    return this.epochs.get(id);
  }

  /** Reads what the previous controller left, for the brokers registered now. */
  async load(brokers: ReadonlyMap<number, BrokerInfo>): Promise<void> {
    this.epochs = new Map([...brokers].map(([id, b]) => [id, b.epoch]));
    const epochs = await this.store.get(this.keys.brokerEpochs);
    this.storedEpochs = epochs?.value ?? null;
    if (epochs !== null) {
      try {
        const stored = JSON.parse(epochs.value) as Record<string, string>;
        for (const id of this.epochs.keys()) {
          const epoch = stored[String(id)];
          if (epoch !== undefined) this.epochs.set(id, BigInt(epoch));
        }
      } catch {
        this.logger.warn('controller: unreadable broker epochs; starting from the current registrations');
      }
    }
    const seen = await this.store.get(this.keys.shutdownSeen);
    this.storedSeen = seen?.value ?? null;
    if (seen === null) return;
    try {
      const ids = JSON.parse(seen.value) as unknown;
      if (!Array.isArray(ids)) throw new TypeError('not an array');
      for (const id of ids) if (Number.isInteger(id)) this.seen.add(id as number);
    } catch {
      this.logger.warn(
        'controller: unreadable shutdown-seen brokers; a broker gone meanwhile counts as fenced',
      );
    }
  }

  /**
   * Notes which registered brokers are in controlled shutdown and saves the set when it changed:
   * before the reconcile's changes, as a broker whose controlled shutdown completes with them may
   * stop at once (and take this controller with it).
   */
  async noteShutdowns(brokers: ReadonlyMap<number, BrokerInfo>, commit: GuardedCommit): Promise<void> {
    for (const [id, b] of brokers) {
      if (b.inControlledShutdown) this.seen.add(id);
      else this.seen.delete(id);
    }
    const value = JSON.stringify([...this.seen].sort((a, b) => a - b));
    if (value === this.storedSeen) return;
    if (await commit('shutdown-seen brokers', [{ type: 'put', key: this.keys.shutdownSeen, value }]))
      this.storedSeen = value;
  }

  /** The epochs of `brokers` handled (their restarts' partitions written); saved when they changed. */
  async saveEpochs(brokers: ReadonlyMap<number, BrokerInfo>, commit: GuardedCommit): Promise<void> {
    this.epochs = new Map([...brokers].map(([id, b]) => [id, b.epoch]));
    const value = JSON.stringify(
      Object.fromEntries([...this.epochs].map(([id, e]) => [String(id), e.toString()])),
    );
    if (value === this.storedEpochs) return;
    if (await commit('broker epochs', [{ type: 'put', key: this.keys.brokerEpochs, value }]))
      this.storedEpochs = value;
  }
}
