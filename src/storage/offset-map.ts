/**
 * The cleaner's offset map (Kafka's SkimpyOffsetMap): key hash → the latest offset of that key, in
 * one preallocated buffer of `memoryBytes` (log.cleaner.dedupe.buffer.size / log.cleaner.threads),
 * open addressing with Kafka's probe sequence. A key is stored as its 16-byte hash only
 * (key-hash.ts says why MurmurHash3 rather than Kafka's MD5), so two keys that collide share an
 * entry; the chance is negligible. The map never grows: the cleaner stops adding keys at
 * `slots × log.cleaner.io.buffer.load.factor` and cleans only the part of the dirty section it
 * mapped. Offsets are numbers: the cleaner cleans only logs whose offsets are safe integers
 * (below 2^53), which it checks once per cleaning. Owned by one cleaner; single-threaded.
 */
import { linuxNativeFunction } from '../common/native-addon.js';
import { KeyHasher } from './key-hash.js';

/** An entry: the hash's four int32 words, then the offset + 1 as a float64 (0: empty slot). */
const ENTRY_BYTES = 24;
const ENTRY_WORDS = ENTRY_BYTES / 4;
const ENTRY_DOUBLES = ENTRY_BYTES / 8;
const HASH_BYTES = 16;
/** Entries whose slots are remembered, so clearing a sparsely used map is cheap. */
const TRACKED_SLOTS = 65_536;

/**
 * native/memory.c's mapZeroed: the map's memory in a mapping of its own, with transparent huge pages
 * (every lookup lands on a random page of the map: with 4 KiB pages nearly each one misses the TLB;
 * on a VM a put into the default 128 MiB map took ~4x as long as into a 1 MiB one). Not from the
 * heap: a broker's tuned heap (malloc-tuning.ts) would zero all of it with memset at once — ~170-560 ms
 * of its start-up and 128 MiB of resident memory before anything is cleaned. Null without the addon
 * or with SKIFF_HUGE_PAGES=0.
 */
function mapZeroed(): ((bytes: number) => ArrayBuffer | null) | null {
  return linuxNativeFunction('mapZeroed', 'SKIFF_HUGE_PAGES');
}

export class OffsetMap {
  readonly slots: number;
  /** The slots probed since the last clear: the first `used` of them (see clear). */
  private used: number;
  private readonly words: Int32Array;
  /** The same memory as `words`: entry i's offset + 1 at index 3i + 2. */
  private readonly offsets: Float64Array;
  private readonly hasher = new KeyHasher();
  private entries = 0;
  private lastOffset = -1;
  /** Slots filled since the last clear, or null once more than TRACKED_SLOTS. */
  private written: number[] | null = [];
  private lookups = 0;
  private probes = 0;

  constructor(memoryBytes: number) {
    this.slots = Math.floor(memoryBytes / ENTRY_BYTES);
    if (this.slots < 1) throw new RangeError(`offset map of ${memoryBytes} bytes holds no entry`);
    this.used = this.slots;
    // Zero pages are mapped lazily by the OS: an unused map costs no resident memory.
    const bytes = this.slots * ENTRY_BYTES;
    const memory = mapZeroed()?.(bytes) ?? new ArrayBuffer(bytes);
    this.words = new Int32Array(memory);
    this.offsets = new Float64Array(memory);
  }

  get size(): number {
    return this.entries;
  }

  /** Bytes of the map's buffer: what it holds in memory at most. */
  get memoryBytes(): number {
    return this.words.byteLength;
  }

  /** Entries over slots (Kafka's "Buffer utilization"). */
  get utilization(): number {
    return this.entries / this.slots;
  }

  /** The largest offset put or set by updateLatestOffset, -1 when none. */
  get latestOffset(): number {
    return this.lastOffset;
  }

  /** Probes per lookup since the last clear (1.0: no collisions). */
  get collisionRate(): number {
    return this.lookups === 0 ? 0 : (this.probes - this.lookups) / this.lookups;
  }

  /** Records `offset` as the latest of the key `b[start..end)`. */
  put(b: Uint8Array, start: number, end: number, offset: number): void {
    const slot = this.find(b, start, end);
    if (this.offsets[slot * ENTRY_DOUBLES + 2] === 0) {
      const w = slot * ENTRY_WORDS;
      const h = this.hasher;
      this.words[w] = h.h1;
      this.words[w + 1] = h.h2;
      this.words[w + 2] = h.h3;
      this.words[w + 3] = h.h4;
      this.entries++;
      if (this.written !== null) {
        if (this.written.length < TRACKED_SLOTS) this.written.push(slot);
        else this.written = null;
      }
    }
    this.offsets[slot * ENTRY_DOUBLES + 2] = offset + 1;
    this.lastOffset = offset;
  }

  /** The latest offset of the key `b[start..end)`, or -1 when the map has none. */
  get(b: Uint8Array, start: number, end: number): number {
    return this.offsets[this.find(b, start, end) * ENTRY_DOUBLES + 2]! - 1;
  }

  /** Moves latestOffset to `offset` (the last offset of a batch, or of a segment's offset range). */
  updateLatestOffset(offset: number): void {
    this.lastOffset = offset;
  }

  /**
   * Empties the map for a cleaning that will put at most `maxKeys` distinct keys (the offsets of
   * its dirty section): it then probes only the first 2 × maxKeys slots (all of them when that is
   * more), so a small dirty section touches a small part of the map, and at most half of those
   * slots ever fill. Which keys fit is unchanged: the cleaner's limit is on the whole map.
   */
  clear(maxKeys = Number.POSITIVE_INFINITY): void {
    this.used = Math.max(1, Math.min(this.slots, 2 * maxKeys));
    if (this.written === null) this.words.fill(0);
    else for (const slot of this.written) this.words.fill(0, slot * ENTRY_WORDS, (slot + 1) * ENTRY_WORDS);
    this.written = [];
    this.entries = 0;
    this.lastOffset = -1;
    this.lookups = 0;
    this.probes = 0;
  }

  /** The slot holding the key's hash, or the empty slot where it would go. */
  private find(b: Uint8Array, start: number, end: number): number {
    const h = this.hasher;
    h.hash(b, start, end);
    this.lookups++;
    for (let attempt = 0; ; attempt++) {
      this.probes++;
      const slot = this.slotOf(attempt);
      if (this.offsets[slot * ENTRY_DOUBLES + 2] === 0) return slot;
      const w = slot * ENTRY_WORDS;
      const words = this.words;
      if (words[w] === h.h1 && words[w + 1] === h.h2 && words[w + 2] === h.h3 && words[w + 3] === h.h4)
        return slot;
    }
  }

  /**
   * Kafka's probe sequence: the first attempts read successive big-endian int32 windows of the
   * hash's 16 bytes (h1..h4 as big-endian words), later ones step linearly from the last window.
   */
  private slotOf(attempt: number): number {
    const h = this.hasher;
    let probe: number;
    if (attempt === 0) probe = h.h1;
    else {
      const at = Math.min(attempt, HASH_BYTES - 4);
      const word = at >> 2;
      const shift = (at & 3) * 8;
      const hi = word === 0 ? h.h1 : word === 1 ? h.h2 : word === 2 ? h.h3 : h.h4;
      const lo = word === 0 ? h.h2 : word === 1 ? h.h3 : h.h4;
      probe = shift === 0 ? hi : (hi << shift) | (lo >>> (32 - shift));
      probe = (probe + Math.max(0, attempt - HASH_BYTES + 4)) | 0;
    }
    // Kafka's Utils.abs: Integer.MIN_VALUE maps to 0.
    const abs = probe === -0x80000000 ? 0 : Math.abs(probe);
    return abs % this.used;
  }
}
