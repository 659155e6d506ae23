import { constants as bufferConstants } from 'node:buffer';
import { createRequire } from 'node:module';
import { gunzipSync, gzipSync, constants as zlibConstants } from 'node:zlib';
import type * as Lz4 from 'lz4-napi';
import type * as Snappy from 'snappy';
import type Zstd from 'zstd-napi/binding.js';
import { ProtocolError } from '../protocol-error.js';

// The native codecs load on first use: most brokers never see a compressed batch, and loading the
// three addons (dlopen) took ~100-250 ms of every broker and tool start-up on a loaded machine.
const requireCodec = createRequire(import.meta.url);
let lz4Module: typeof Lz4 | undefined;
let snappyModule: typeof Snappy | undefined;
let zstdModule: typeof Zstd | undefined;
const codecs = {
  get lz4(): typeof Lz4 {
    lz4Module ??= requireCodec('lz4-napi') as typeof Lz4;
    return lz4Module;
  },
  get snappy(): typeof Snappy {
    snappyModule ??= requireCodec('snappy') as typeof Snappy;
    return snappyModule;
  },
  get zstd(): typeof Zstd {
    zstdModule ??= requireCodec('zstd-napi/binding.js') as typeof Zstd;
    return zstdModule;
  },
};

/** Codec ids as stored in attribute bits 0-2 (Kafka's CompressionType). */
export const CompressionCodec = {
  none: 0,
  gzip: 1,
  snappy: 2,
  lz4: 3,
  zstd: 4,
} as const;
export type CompressionCodecId = (typeof CompressionCodec)[keyof typeof CompressionCodec];

export const CODEC_NAMES: readonly string[] = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];

/**
 * Default cap on one batch's decompressed records. A few hundred bytes of gzip or zstd can claim
 * gigabytes; nothing is decompressed past this bound. Kafka itself has no such cap (it streams),
 * but it never holds a whole decompressed batch in memory either.
 */
export const DEFAULT_MAX_UNCOMPRESSED_BYTES = 128 * 1024 * 1024;

export function isKnownCodec(codec: number): codec is CompressionCodecId {
  return Number.isInteger(codec) && codec >= 0 && codec <= 4;
}

export interface CompressOptions {
  /** Codec-specific level; each codec's default (as Kafka's) when absent. */
  level?: number;
}

/** Compresses a records section the way a Kafka producer would. Input is not modified. */
export function compress(codec: CompressionCodecId, data: Buffer, options: CompressOptions = {}): Buffer {
  switch (codec) {
    case CompressionCodec.none:
      return data;
    case CompressionCodec.gzip:
      return gzipSync(data, { level: options.level ?? zlibConstants.Z_DEFAULT_COMPRESSION });
    case CompressionCodec.snappy:
      return xerialSnappyCompress(data);
    case CompressionCodec.lz4:
      // lz4-napi writes the standard frame with independent blocks and no content size, the same
      // shape as Kafka's KafkaLZ4BlockOutputStream, which every client reads.
      return codecs.lz4.compressFrameSync(data);
    case CompressionCodec.zstd:
      return zstdCompress(data, options.level ?? ZSTD_DEFAULT_LEVEL);
    default:
      throw new RangeError(`unknown compression codec ${codec as number}`);
  }
}

/**
 * Decompresses a records section. Any failure (corrupt input, unknown codec, output beyond
 * `maxBytes`) is a ProtocolError: the bytes came from the network or a disk we do not trust.
 */
export function decompress(
  codec: number,
  data: Buffer,
  maxBytes: number = DEFAULT_MAX_UNCOMPRESSED_BYTES,
): Buffer {
  let out: Buffer;
  try {
    out = decompressUnchecked(codec, data, maxBytes);
  } catch (e) {
    if (e instanceof ProtocolError) throw e;
    const name = CODEC_NAMES[codec] ?? String(codec);
    throw new ProtocolError(`${name} decompression failed: ${(e as Error)?.message ?? String(e)}`);
  }
  // Codecs whose output size is only known afterwards are checked here as a last line.
  checkOutput(out.length, maxBytes);
  return out;
}

function decompressUnchecked(codec: number, data: Buffer, maxBytes: number): Buffer {
  switch (codec) {
    case CompressionCodec.none:
      return data;
    case CompressionCodec.gzip:
      return gzipDecompress(data, maxBytes);
    case CompressionCodec.snappy:
      return snappyDecompress(data, maxBytes);
    case CompressionCodec.lz4:
      return lz4Decompress(data, maxBytes);
    case CompressionCodec.zstd:
      return zstdDecompress(data, maxBytes);
    default:
      throw new ProtocolError(`unknown compression codec ${codec}`);
  }
}

function checkOutput(bytes: number, maxBytes: number): void {
  if (bytes > maxBytes) {
    throw new ProtocolError(`decompressed records would take ${bytes} bytes, limit is ${maxBytes}`);
  }
}

/** zlib refuses a maxOutputLength above the largest Buffer. */
const MAX_BUFFER_BYTES = bufferConstants.MAX_LENGTH;

// ---- gzip -------------------------------------------------------------------------------------

function gzipDecompress(data: Buffer, maxBytes: number): Buffer {
  try {
    // zlib stops and throws as soon as the output passes maxOutputLength: the bomb is never inflated.
    return gunzipSync(data, { maxOutputLength: Math.min(Math.max(1, maxBytes), MAX_BUFFER_BYTES) });
  } catch (e) {
    if ((e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new ProtocolError(`gzip records exceed the ${maxBytes}-byte limit`);
    }
    throw e;
  }
}

// ---- snappy (xerial framing) ------------------------------------------------------------------

/** xerial snappy-java stream header: 0x82 "SNAPPY" 0x00, int32 version, int32 min compatible. */
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_SIZE = 16;
const XERIAL_VERSION = 1;
const XERIAL_MIN_COMPATIBLE = 1;
/** snappy-java's default block size, which Kafka's producer uses. */
const XERIAL_BLOCK_SIZE = 32 * 1024;

function xerialSnappyCompress(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  const header = Buffer.alloc(XERIAL_HEADER_SIZE);
  XERIAL_MAGIC.copy(header, 0);
  header.writeInt32BE(XERIAL_VERSION, 8);
  header.writeInt32BE(XERIAL_MIN_COMPATIBLE, 12);
  parts.push(header);
  for (let at = 0; at < data.length; at += XERIAL_BLOCK_SIZE) {
    const block = codecs.snappy.compressSync(data.subarray(at, at + XERIAL_BLOCK_SIZE));
    const len = Buffer.allocUnsafe(4);
    len.writeInt32BE(block.length, 0);
    parts.push(len, block);
  }
  return Buffer.concat(parts);
}

function isXerial(data: Buffer): boolean {
  return data.length >= XERIAL_HEADER_SIZE && data.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC);
}

/**
 * Accepts xerial-framed snappy (Java clients) and plain raw snappy (librdkafka may send either),
 * as snappy-java's SnappyInputStream does. Every raw block starts with its uncompressed length, so
 * the total is checked against the limit before anything is allocated.
 */
function snappyDecompress(data: Buffer, maxBytes: number): Buffer {
  if (!isXerial(data)) {
    checkOutput(rawSnappyLength(data), maxBytes);
    return snappyRaw(data);
  }
  const blocks: Buffer[] = [];
  let total = 0;
  let at = XERIAL_HEADER_SIZE;
  while (at < data.length) {
    if (data.length - at < 4) throw new ProtocolError('truncated xerial snappy block length');
    const len = data.readInt32BE(at);
    at += 4;
    if (len < 0 || len > data.length - at) {
      throw new ProtocolError(`xerial snappy block of ${len} bytes, ${data.length - at} remain`);
    }
    const block = data.subarray(at, at + len);
    at += len;
    total += rawSnappyLength(block);
    checkOutput(total, maxBytes);
    blocks.push(snappyRaw(block));
  }
  return blocks.length === 1 ? (blocks[0] as Buffer) : Buffer.concat(blocks, total);
}

function snappyRaw(block: Buffer): Buffer {
  const out = codecs.snappy.uncompressSync(block, { asBuffer: true });
  if (typeof out === 'string') throw new ProtocolError('snappy returned a string');
  return out;
}

/** The uncompressed length a raw snappy block declares in its leading varint (at most 32 bits). */
function rawSnappyLength(block: Buffer): number {
  let value = 0;
  for (let i = 0; i < 5 && i < block.length; i++) {
    const b = block[i] as number;
    value += (b & 0x7f) * 2 ** (7 * i);
    if ((b & 0x80) === 0) return value;
  }
  throw new ProtocolError('snappy block has no valid length preamble');
}

// ---- lz4 frame --------------------------------------------------------------------------------

const LZ4_MAGIC = 0x184d2204;
const LZ4_SKIPPABLE_MASK = 0xfffffff0;
const LZ4_SKIPPABLE_MAGIC = 0x184d2a50;
const LZ4_FLG_VERSION_MASK = 0xc0;
const LZ4_FLG_VERSION = 0x40;
const LZ4_FLG_BLOCK_CHECKSUM = 0x10;
const LZ4_FLG_CONTENT_SIZE = 0x08;
const LZ4_FLG_CONTENT_CHECKSUM = 0x04;
const LZ4_FLG_DICT_ID = 0x01;
const LZ4_BLOCK_UNCOMPRESSED = 0x80000000;
/** Maximum block sizes for BD codes 4..7: 64 KiB, 256 KiB, 1 MiB, 4 MiB. */
const LZ4_BLOCK_MAX = [0, 0, 0, 0, 64 * 1024, 256 * 1024, 1024 * 1024, 4 * 1024 * 1024];

/**
 * Decodes frame by frame: lz4-napi stops after the first frame and would silently drop the rest
 * of a concatenated stream.
 */
function lz4Decompress(data: Buffer, maxBytes: number): Buffer {
  const { bound, frames } = lz4Frames(data);
  checkOutput(bound, maxBytes);
  const out = frames.map(([start, end]) => codecs.lz4.decompressFrameSync(data.subarray(start, end)));
  return out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out);
}

/**
 * Walks the frames' block headers (cheap: no decoding), returning where each data frame lies and
 * an upper bound on the output: each block decodes to at most its frame's declared maximum block
 * size. Structural errors are found here, before the native decoder sees the bytes.
 */
function lz4Frames(data: Buffer): { bound: number; frames: [number, number][] } {
  const frames: [number, number][] = [];
  let bound = 0;
  let at = 0;
  const need = (n: number): void => {
    if (n > data.length - at) throw new ProtocolError(`truncated lz4 frame at ${at}`);
  };
  while (at < data.length) {
    need(4);
    const magic = data.readUInt32LE(at);
    at += 4;
    if ((magic & LZ4_SKIPPABLE_MASK) >>> 0 === LZ4_SKIPPABLE_MAGIC) {
      need(4);
      const size = data.readUInt32LE(at);
      at += 4;
      need(size);
      at += size;
      continue;
    }
    if (magic !== LZ4_MAGIC) throw new ProtocolError(`bad lz4 frame magic 0x${magic.toString(16)}`);
    const frameStart = at - 4;
    need(3);
    const flg = data[at] as number;
    const bd = data[at + 1] as number;
    at += 2;
    if ((flg & LZ4_FLG_VERSION_MASK) !== LZ4_FLG_VERSION) throw new ProtocolError('bad lz4 frame version');
    const blockMax = LZ4_BLOCK_MAX[(bd >> 4) & 7] ?? 0;
    if (blockMax === 0) throw new ProtocolError(`bad lz4 block size code ${bd}`);
    const optional = (flg & LZ4_FLG_CONTENT_SIZE ? 8 : 0) + (flg & LZ4_FLG_DICT_ID ? 4 : 0);
    need(optional + 1);
    at += optional + 1; // + header checksum
    const blockChecksum = (flg & LZ4_FLG_BLOCK_CHECKSUM) !== 0 ? 4 : 0;
    for (;;) {
      need(4);
      const word = data.readUInt32LE(at);
      at += 4;
      if (word === 0) break; // end mark
      const size = (word & ~LZ4_BLOCK_UNCOMPRESSED) >>> 0;
      // Kafka's Lz4BlockInputStream refuses the same: no block may exceed the declared maximum.
      if (size > blockMax)
        throw new ProtocolError(`lz4 block of ${size} bytes exceeds its ${blockMax} maximum`);
      need(size + blockChecksum);
      at += size + blockChecksum;
      bound += (word & LZ4_BLOCK_UNCOMPRESSED) !== 0 ? size : blockMax;
    }
    if (flg & LZ4_FLG_CONTENT_CHECKSUM) {
      need(4);
      at += 4;
    }
    frames.push([frameStart, at]);
  }
  if (frames.length === 0) throw new ProtocolError('lz4 records hold no frame');
  return { bound, frames };
}

// ---- zstd -------------------------------------------------------------------------------------

/** Kafka's default zstd level (CompressionType.ZSTD default level 3). */
const ZSTD_DEFAULT_LEVEL = 3;
/** Output is produced in chunks of at least this size (zstd's own recommended output size is 128 KiB). */
const ZSTD_CHUNK_BYTES = 128 * 1024;
const EMPTY = Buffer.alloc(0);

function zstdCompress(data: Buffer, level: number): Buffer {
  const out = Buffer.allocUnsafe(codecs.zstd.compressBound(data.length));
  const n = codecs.zstd.compress(out, data, level);
  return out.subarray(0, n);
}

/**
 * Streams the input through a fresh decompression context, never asking for more output than
 * the limit allows. Java producers (zstd-jni's stream) do not declare a content size, so a
 * declared size cannot be relied on; the stream is the one path for all inputs.
 */
function zstdDecompress(data: Buffer, maxBytes: number): Buffer {
  const dctx = new codecs.zstd.DCtx();
  const chunks: Buffer[] = [];
  let total = 0;
  let src = data;
  let pending = 0;
  const step = (input: Buffer): [number, number] => {
    const room = Math.min(Math.max(ZSTD_CHUNK_BYTES, input.length * 4), maxBytes - total + 1);
    const out = Buffer.allocUnsafe(room);
    const [hint, written, consumed] = dctx.decompressStream(out, input);
    total += written;
    checkOutput(total, maxBytes);
    if (written > 0) chunks.push(out.subarray(0, written));
    pending = hint;
    return [written, consumed];
  };
  while (src.length > 0) {
    const [written, consumed] = step(src);
    if (written === 0 && consumed === 0) throw new ProtocolError('zstd stream makes no progress');
    src = src.subarray(consumed);
  }
  // The last call may have filled its output before draining the frame: flush what is buffered.
  while (pending !== 0) {
    const [written] = step(EMPTY);
    if (written === 0) throw new ProtocolError('truncated zstd frame');
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, total);
}
