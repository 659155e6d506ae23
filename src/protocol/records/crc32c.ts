import { createRequire } from 'node:module';
import type { crc32c as NodeRsCrc32c } from '@node-rs/crc32';
import { nativeAddon } from '../../common/native-addon.js';

/**
 * CRC-32C of `buf[start..end)`, the checksum of Kafka's record batches. Every leader append and
 * every recovery pays one pass over the batch bytes, so it runs through Skiff's own addon
 * (native/crc32c.c, built by `npm ci` through node-gyp): AVX-512 VPCLMULQDQ folding where the CPU
 * has it (SKIFF_CRC_NO_AVX512=1 turns it off), else the SSE4.2 crc32 instruction on three streams
 * at once, about 4x the one-stream speed of @node-rs/crc32. Where the addon was not built, or the
 * CPU has no SSE4.2, or SKIFF_PORTABLE_CRC=1 (for comparisons), @node-rs/crc32 answers instead:
 * the same values, slower.
 */
export type Crc32c = (buf: Uint8Array, start: number, end: number) => number;

interface NativeCrc {
  crc32c: Crc32c;
  crc32cStreams: Crc32c;
  hardware: boolean;
  vpclmul: boolean;
}

function loadNative(): NativeCrc | null {
  if (process.env.SKIFF_PORTABLE_CRC === '1') return null;
  const addon = nativeAddon() as Partial<NativeCrc> | null;
  return addon?.hardware === true && typeof addon.crc32c === 'function' ? (addon as NativeCrc) : null;
}

const native = loadNative();

/** Which implementation computes CRCs in this process (tests and the bench report it). */
export const crc32cImplementation: 'native-avx512-vpclmulqdq' | 'native-sse4.2' | '@node-rs/crc32' =
  native === null ? '@node-rs/crc32' : native.vpclmul ? 'native-avx512-vpclmulqdq' : 'native-sse4.2';

// Loaded on first use: with the addon in place it is only the tests' reference (a dlopen less at start-up).
let nodeRsCrc32c: typeof NodeRsCrc32c | undefined;

/** @node-rs/crc32, always: the fallback, and the reference the native one is tested against. */
export const portableCrc32c: Crc32c = (buf, start, end) => {
  nodeRsCrc32c ??= (createRequire(import.meta.url)('@node-rs/crc32') as { crc32c: typeof NodeRsCrc32c })
    .crc32c;
  return nodeRsCrc32c(Buffer.from(buf.buffer, buf.byteOffset + start, end - start)) >>> 0;
};

export const crc32c: Crc32c = native ? native.crc32c : portableCrc32c;

/** The addon's three-stream crc32 path alone, when the addon is loaded (tests compare the paths). */
export const streamsCrc32c: Crc32c | null = native ? native.crc32cStreams : null;
