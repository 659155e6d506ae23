/**
 * The 16-byte hash the cleaner's offset map stores per key: MurmurHash3 x86_128 (Austin
 * Appleby's, seed 0), in plain 32-bit integer arithmetic. Kafka's SkimpyOffsetMap uses MD5; here
 * node:crypto's MD5 costs ~1.4 µs per key (a call into C++ and a Buffer per hash), most of a
 * cleaning's CPU for small records, while this costs tens of nanoseconds for a short key.
 *
 * Why a non-cryptographic hash keeps Kafka's semantics: the map only needs two different keys to
 * get different 16-byte hashes. For keys that are not chosen to collide, MurmurHash3's 128 bits
 * make a collision among the n keys of one cleaning about n² / 2^129 likely (1e-25 for the 5.6
 * million entries of the default 128 MiB map), as negligible as MD5's. Keys chosen to collide
 * would let a producer make the cleaner drop an older record of another key; a producer allowed
 * to write to the topic can already remove that key's value outright with a tombstone, so a
 * collision-resistant hash would protect nothing (and MD5 is no longer collision resistant
 * either). Owned by one OffsetMap; the result stays in the four fields until the next hash.
 */
const C1 = 0x239b961b;
const C2 = 0xab0e9789;
const C3 = 0x38b34ae5;
const C4 = 0xa1e38b93;

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

/** A lane's 32-bit block as the reference mixes it before folding it into its h. */
function mixLane(k: number, c1: number, r: number, c2: number): number {
  return Math.imul(rotl(Math.imul(k, c1), r), c2);
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** Little-endian uint32 of `b[at..at+4)`, as the reference implementation reads its blocks. */
function block(b: Uint8Array, at: number): number {
  return b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24);
}

/** The first `n` bytes (at least 1; 4 and more read 4) of `b[at..]`, little-endian. */
function lane(b: Uint8Array, at: number, n: number): number {
  if (n >= 4) return block(b, at);
  if (n === 3) return b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16);
  if (n === 2) return b[at]! | (b[at + 1]! << 8);
  return b[at]!;
}

export class KeyHasher {
  /** The last hash: its four 32-bit words, in the reference implementation's output order. */
  h1 = 0;
  h2 = 0;
  h3 = 0;
  h4 = 0;

  /** Hashes `b[start..end)` with `seed` into h1..h4. */
  hash(b: Uint8Array, start: number, end: number, seed = 0): void {
    const len = end - start;
    let h1 = seed | 0;
    let h2 = h1;
    let h3 = h1;
    let h4 = h1;
    const blocksEnd = start + (len & ~15);
    for (let i = start; i < blocksEnd; i += 16) {
      h1 ^= mixLane(block(b, i), C1, 15, C2);
      h1 = (Math.imul(rotl(h1, 19) + h2, 5) + 0x561ccd1b) | 0;
      h2 ^= mixLane(block(b, i + 4), C2, 16, C3);
      h2 = (Math.imul(rotl(h2, 17) + h3, 5) + 0x0bcaa747) | 0;
      h3 ^= mixLane(block(b, i + 8), C3, 17, C4);
      h3 = (Math.imul(rotl(h3, 15) + h4, 5) + 0x96cd1c35) | 0;
      h4 ^= mixLane(block(b, i + 12), C4, 18, C1);
      h4 = (Math.imul(rotl(h4, 13) + h1, 5) + 0x32ac3b17) | 0;
    }
    // The tail: up to 15 bytes, little-endian into k1..k4, as the reference's fall-through switch.
    const tail = len & 15;
    if (tail > 12) h4 ^= mixLane(lane(b, blocksEnd + 12, tail - 12), C4, 18, C1);
    if (tail > 8) h3 ^= mixLane(lane(b, blocksEnd + 8, tail - 8), C3, 17, C4);
    if (tail > 4) h2 ^= mixLane(lane(b, blocksEnd + 4, tail - 4), C2, 16, C3);
    if (tail > 0) h1 ^= mixLane(lane(b, blocksEnd, tail), C1, 15, C2);
    h1 ^= len;
    h2 ^= len;
    h3 ^= len;
    h4 ^= len;
    h1 = (h1 + h2 + h3 + h4) | 0;
    h2 = (h2 + h1) | 0;
    h3 = (h3 + h1) | 0;
    h4 = (h4 + h1) | 0;
    h1 = fmix(h1);
    h2 = fmix(h2);
    h3 = fmix(h3);
    h4 = fmix(h4);
    h1 = (h1 + h2 + h3 + h4) | 0;
    h2 = (h2 + h1) | 0;
    h3 = (h3 + h1) | 0;
    h4 = (h4 + h1) | 0;
    this.h1 = h1;
    this.h2 = h2;
    this.h3 = h3;
    this.h4 = h4;
  }
}
