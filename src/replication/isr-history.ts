/**
 * The ISR and leadership changes of one partition as this broker saw them (time, old → new ISR,
 * reason), for the tools and the dashboard. Bounded: the oldest entries go first.
 * Owned by the partition's replication state; appended to on the event loop only.
 */
export type IsrChangeKind = 'became-leader' | 'became-follower' | 'shrink' | 'expand' | 'metadata';

export interface IsrChange {
  readonly timeMs: number;
  readonly kind: IsrChangeKind;
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly oldIsr: readonly number[];
  readonly newIsr: readonly number[];
  readonly reason: string;
}

export const DEFAULT_ISR_HISTORY_ENTRIES = 64;

export class IsrHistory {
  private readonly entries: IsrChange[] = [];

  constructor(readonly maxEntries = DEFAULT_ISR_HISTORY_ENTRIES) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1)
      throw new RangeError(`bad history size ${maxEntries}`);
  }

  record(change: IsrChange): void {
    this.entries.push(change);
    if (this.entries.length > this.maxEntries) this.entries.splice(0, this.entries.length - this.maxEntries);
  }

  /** Oldest first. */
  list(): readonly IsrChange[] {
    return [...this.entries];
  }

  get size(): number {
    return this.entries.length;
  }
}

export function formatIsr(isr: readonly number[]): string {
  return isr.join(',');
}
