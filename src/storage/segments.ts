import type { LogSegment } from './segment.js';

/**
 * The segments of one log ordered by base offset (Kafka's LogSegments). A sorted array: logs have
 * tens of segments, appends touch only the end, and lookups are binary searches.
 * Owned by one LocalLog.
 */
export class LogSegments {
  private list: LogSegment[] = [];

  add(segment: LogSegment): void {
    const i = this.ceilingIndex(segment.baseOffset);
    if (this.list[i]?.baseOffset === segment.baseOffset) this.list[i] = segment;
    else this.list.splice(i, 0, segment);
  }

  remove(baseOffset: bigint): LogSegment | undefined {
    const i = this.ceilingIndex(baseOffset);
    if (this.list[i]?.baseOffset !== baseOffset) return undefined;
    return this.list.splice(i, 1)[0];
  }

  clear(): LogSegment[] {
    const all = this.list;
    this.list = [];
    return all;
  }

  get size(): number {
    return this.list.length;
  }

  isEmpty(): boolean {
    return this.list.length === 0;
  }

  get(baseOffset: bigint): LogSegment | undefined {
    const s = this.list[this.ceilingIndex(baseOffset)];
    return s?.baseOffset === baseOffset ? s : undefined;
  }

  first(): LogSegment | undefined {
    return this.list[0];
  }

  /** The segment being appended to: the one with the largest base offset. */
  active(): LogSegment {
    const s = this.list[this.list.length - 1];
    if (!s) throw new Error('log has no segments');
    return s;
  }

  /** The segment holding `offset`: the last one with base offset ≤ it. */
  floor(offset: bigint): LogSegment | undefined {
    const i = this.ceilingIndex(offset + 1n) - 1;
    return i >= 0 ? this.list[i] : undefined;
  }

  /** The first segment with base offset > `offset`. */
  higher(offset: bigint): LogSegment | undefined {
    return this.list[this.ceilingIndex(offset + 1n)];
  }

  /** All segments, oldest first (a copy, safe to iterate while removing). */
  values(): LogSegment[] {
    return [...this.list];
  }

  /** Segments that may hold offsets in [from, to): from the floor of `from` up to before `to`. */
  range(from: bigint, to: bigint): LogSegment[] {
    const start = Math.max(0, this.ceilingIndex(from + 1n) - 1);
    const end = this.ceilingIndex(to);
    return this.list.slice(start, Math.max(start, end));
  }

  sizeInBytes(): number {
    let total = 0;
    for (const s of this.list) total += s.size;
    return total;
  }

  /** Index of the first segment with base offset ≥ `offset`. */
  private ceilingIndex(offset: bigint): number {
    let lo = 0;
    let hi = this.list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.list[mid]!.baseOffset < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
