import {
  BATCH_HEADER_SIZE,
  type BatchHeader,
  batchSize,
  CURRENT_MAGIC,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  MIN_BATCH_LENGTH,
  readBatchHeader,
  viewOf,
} from '../protocol/records/batch.js';
import { validateBatch, validateBatchInto } from '../protocol/records/validate.js';
import type { FileHandle } from './fs.js';

/**
 * Batch-at-a-position checks and a chunked reader over a `.log` file: the pieces recovery,
 * reads and dump-log share. The batch layout itself is the protocol layer's (records/batch.ts).
 */

export type BatchCheck =
  | { readonly ok: true; readonly header: BatchHeader; readonly size: number }
  | {
      readonly ok: false;
      /** The bytes end before the batch does: a torn write, not a damaged one. */
      readonly incomplete: boolean;
      readonly reason: string;
      /** The batch's claimed size when its length field was readable and plausible. */
      readonly claimedSize?: number;
    };

/**
 * Judges a batch from its first bytes (`head`, up to 61 of them) and the number of bytes the file
 * holds from its start (`available`): length (≥ 49 and inside the file), magic = 2 and
 * lastOffsetDelta ≥ 0. Everything except the CRC.
 */
export function checkBatchHeader(head: Buffer, available: number): BatchCheck {
  if (available < LOG_OVERHEAD || head.length < LOG_OVERHEAD) {
    return { ok: false, incomplete: true, reason: `${available} bytes, fewer than the 12-byte log overhead` };
  }
  const batchLength = head.readInt32BE(8);
  if (batchLength < MIN_BATCH_LENGTH) {
    return {
      ok: false,
      incomplete: false,
      reason: `batch length ${batchLength} is below the minimum ${MIN_BATCH_LENGTH}`,
    };
  }
  const size = batchLength + LOG_OVERHEAD;
  const magic = head.length > MAGIC_OFFSET ? head.readInt8(MAGIC_OFFSET) : CURRENT_MAGIC;
  if (magic !== CURRENT_MAGIC) {
    return { ok: false, incomplete: false, reason: `magic ${magic} is not 2`, claimedSize: size };
  }
  if (size > available) {
    return {
      ok: false,
      incomplete: true,
      reason: `batch of ${size} bytes needs ${size - available} more bytes than remain`,
      claimedSize: size,
    };
  }
  const header = readBatchHeader(head, 0);
  if (header.lastOffsetDelta < 0) {
    return {
      ok: false,
      incomplete: false,
      reason: `negative lastOffsetDelta ${header.lastOffsetDelta}`,
      claimedSize: size,
    };
  }
  return { ok: true, header, size: batchSize(header) };
}

/**
 * The full check of a batch at `pos` of `buf[..end]`: the protocol layer's shallow validation
 * (length, magic, CRC, codec, counts), with a torn batch told apart from a damaged one.
 */
export function checkBatch(buf: Buffer, pos: number, end: number): BatchCheck {
  const v = validateBatch(buf, pos, end - pos);
  if (v.ok) return { ok: true, header: v.header, size: v.size };
  const claimed = end - pos >= LOG_OVERHEAD ? buf.readInt32BE(pos + 8) + LOG_OVERHEAD : undefined;
  const base = {
    ok: false as const,
    incomplete: v.reason === 'truncated',
    reason: `${v.reason}: ${v.detail}`,
  };
  return claimed !== undefined && claimed >= BATCH_HEADER_SIZE ? { ...base, claimedSize: claimed } : base;
}

const DEFAULT_CHUNK_BYTES = 1 << 20;

/**
 * Sequential, chunked reads of one `.log` file up to `end`. Keeps one buffer and refills it
 * forward; a batch larger than the buffer gets a buffer of its own size. Owned by one scan.
 */
export class LogFileReader {
  private chunk: Buffer;
  private chunkView: DataView;
  private chunkStart = 0;
  private chunkLength = 0;
  /** Why the last validateInto failed. */
  failure = '';

  /** `buffer`, when given, is the chunk to start with (a caller's scratch, reused across scans). */
  constructor(
    private readonly file: FileHandle,
    readonly end: number,
    chunkBytes = DEFAULT_CHUNK_BYTES,
    buffer?: Buffer,
  ) {
    this.chunk = buffer ?? Buffer.allocUnsafe(chunkBytes);
    this.chunkView = viewOf(this.chunk);
  }

  /** Makes `[pos, pos+length)` (clipped to `end`) resident; returns the bytes available from pos. */
  private ensure(pos: number, length: number): number {
    const want = Math.min(length, this.end - pos);
    if (want <= 0) return 0;
    if (pos >= this.chunkStart && pos + want <= this.chunkStart + this.chunkLength) return want;
    if (want > this.chunk.length) {
      this.chunk = Buffer.allocUnsafe(want);
      this.chunkView = viewOf(this.chunk);
    }
    const toRead = Math.min(this.chunk.length, this.end - pos);
    this.chunkLength = this.file.read(this.chunk, 0, toRead, pos);
    this.chunkStart = pos;
    return Math.min(want, this.chunkLength);
  }

  /**
   * Makes `[pos, pos+length)` resident and returns where `pos` is in `bytes` (its DataView in
   * `dataView`), with the count of bytes available there in `located`: view() without a Buffer
   * per call, for a scan that reads every batch of a segment. Valid until the next call.
   */
  locate(pos: number, length: number): number {
    this.located = this.ensure(pos, length);
    return pos - this.chunkStart;
  }

  /** Bytes resident at the position locate() returned. */
  located = 0;

  /** The chunk locate() points into. */
  get bytes(): Buffer {
    return this.chunk;
  }

  get dataView(): DataView {
    return this.chunkView;
  }

  /** A view of the bytes at `[pos, pos+length)`, shorter when the file ends first. Valid until the next call. */
  view(pos: number, length: number): Buffer {
    const n = this.ensure(pos, length);
    const at = pos - this.chunkStart;
    return this.chunk.subarray(at, at + n);
  }

  /**
   * Recovery's check of the batch at `pos` (check(pos, true): length, magic, CRC, codec, counts),
   * the header read into `header`: returns the batch size, or -1 with `failure` set to the reason
   * check() gives. The file is read in chunks of the reader's size and a valid batch allocates
   * nothing, so a scan costs the reads and the CRC.
   */
  validateInto(pos: number, header: BatchHeader): number {
    const available = this.end - pos;
    if (available >= BATCH_HEADER_SIZE) {
      this.ensure(pos, LOG_OVERHEAD);
      const size = this.chunk.readInt32BE(pos - this.chunkStart + 8) + LOG_OVERHEAD;
      if (size >= BATCH_HEADER_SIZE && size <= available) {
        this.ensure(pos, size);
        const v = validateBatchInto(this.chunk, pos - this.chunkStart, size, header, true, this.chunkView);
        if (typeof v === 'number') return v;
      }
    }
    // Invalid (or torn): the allocating check names the reason exactly as before.
    const check = this.check(pos, true);
    if (check.ok) {
      Object.assign(header, check.header);
      return check.size;
    }
    this.failure = check.reason;
    return -1;
  }

  /**
   * Checks the batch at `pos`. Without `verifyCrc`, only the 61-byte header is read, so scanning
   * for an offset costs one small read per batch however large the batches are.
   */
  check(pos: number, verifyCrc: boolean): BatchCheck {
    const available = this.end - pos;
    const head = this.view(pos, BATCH_HEADER_SIZE);
    if (verifyCrc && head.length >= LOG_OVERHEAD) {
      // Fast path of recovery: one validation of the whole batch when its length is plausible.
      const size = head.readInt32BE(8) + LOG_OVERHEAD;
      if (size >= BATCH_HEADER_SIZE && size <= available) {
        const whole = this.view(pos, size);
        return checkBatch(whole, 0, whole.length);
      }
    }
    const result = checkBatchHeader(head, available);
    if (!result.ok || !verifyCrc) return result;
    const whole = this.view(pos, result.size);
    return checkBatch(whole, 0, whole.length);
  }
}
