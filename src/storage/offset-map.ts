/**
 * The cleaner's offset map (Kafka's SkimpyOffsetMap): key hash → the latest offset of that key, in
 * one preallocated buffer of `memoryBytes` (log.cleaner.dedupe.buffer.size / log.cleaner.threads),
 * open addressing with Kafka's probe sequence. A key is stored as its 16-byte MD5 only, so two keys
 * that collide share an entry (as in Kafka, with MD5 the chance is negligible). The map never
 * grows: the cleaner stops adding keys at `slots × log.cleaner.io.buffer.load.factor` and cleans
 * only the part of the dirty section it mapped. Owned by one cleaner; single-threaded.
 */
import { hash } from 'node:crypto';

const HASH_BYTES = 16;
const ENTRY_BYTES = HASH_BYTES + 8;
/** Entries whose positions are remembered, so clearing a sparsely used map is cheap. */
const TRACKED_POSITIONS = 65_536;

export class OffsetMap {
  readonly slots: number;
  private readonly bytes: Buffer;
  private entries = 0;
  private lastOffset = -1n;
  /** Positions of the entries since the last clear, or null once more than TRACKED_POSITIONS. */
  private written: number[] | null = [];
  private lookups = 0;
  private probes = 0;

  constructor(memoryBytes: number) {
    this.slots = Math.floor(memoryBytes / ENTRY_BYTES);
    if (this.slots < 1) throw new RangeError(`offset map of ${memoryBytes} bytes holds no entry`);
    // Zero pages are mapped lazily by the OS: an unused map costs no resident memory.
    this.bytes = Buffer.alloc(this.slots * ENTRY_BYTES);
  }

  get size(): number {
    return this.entries;
  }

  /** Bytes of the map's buffer: what it holds in memory at most. */
  get memoryBytes(): number {
    return this.bytes.length;
  }

  /** Entries over slots (Kafka's "Buffer utilization"). */
  get utilization(): number {
    return this.entries / this.slots;
  }

  /** The largest offset put or set by updateLatestOffset, -1 when none. */
  get latestOffset(): bigint {
    return this.lastOffset;
  }

  /** Probes per lookup since the last clear (1.0: no collisions). */
  get collisionRate(): number {
    return this.lookups === 0 ? 0 : (this.probes - this.lookups) / this.lookups;
  }

  put(key: Buffer, offset: bigint): void {
    const h = hash('md5', key, 'buffer');
    this.lookups++;
    for (let attempt = 0; ; attempt++) {
      this.probes++;
      const pos = this.positionOf(h, attempt);
      if (this.isEmpty(pos)) {
        h.copy(this.bytes, pos);
        this.bytes.writeBigInt64BE(offset, pos + HASH_BYTES);
        this.entries++;
        if (this.written !== null) {
          if (this.written.length < TRACKED_POSITIONS) this.written.push(pos);
          else this.written = null;
        }
        break;
      }
      if (this.bytes.compare(h, 0, HASH_BYTES, pos, pos + HASH_BYTES) === 0) {
        this.bytes.writeBigInt64BE(offset, pos + HASH_BYTES);
        break;
      }
    }
    this.lastOffset = offset;
  }

  /** The latest offset of `key`, or -1 when the map has none. */
  get(key: Buffer): bigint {
    const h = hash('md5', key, 'buffer');
    this.lookups++;
    for (let attempt = 0; ; attempt++) {
      this.probes++;
      const pos = this.positionOf(h, attempt);
      if (this.isEmpty(pos)) return -1n;
      if (this.bytes.compare(h, 0, HASH_BYTES, pos, pos + HASH_BYTES) === 0) {
        return this.bytes.readBigInt64BE(pos + HASH_BYTES);
      }
    }
  }

  /** Moves latestOffset to `offset` (the last offset of a batch, or of a segment's offset range). */
  updateLatestOffset(offset: bigint): void {
    this.lastOffset = offset;
  }

  clear(): void {
    if (this.written === null) this.bytes.fill(0);
    else for (const pos of this.written) this.bytes.fill(0, pos, pos + ENTRY_BYTES);
    this.written = [];
    this.entries = 0;
    this.lastOffset = -1n;
    this.lookups = 0;
    this.probes = 0;
  }

  /**
   * Kafka's probe sequence: the first attempts read successive int32 windows of the hash, later
   * ones step linearly from the last window.
   */
  private positionOf(h: Buffer, attempt: number): number {
    const probe =
      (h.readInt32BE(Math.min(attempt, HASH_BYTES - 4)) + Math.max(0, attempt - HASH_BYTES + 4)) | 0;
    // Kafka's Utils.abs: Integer.MIN_VALUE maps to 0.
    const abs = probe === -0x80000000 ? 0 : Math.abs(probe);
    return (abs % this.slots) * ENTRY_BYTES;
  }

  /** An entry of 24 zero bytes is empty (an MD5 of all zeros with offset 0 is not a concern). */
  private isEmpty(pos: number): boolean {
    const b = this.bytes;
    for (let i = pos; i < pos + ENTRY_BYTES; i += 4) if (b.readInt32BE(i) !== 0) return false;
    return true;
  }
}
