import * as path from 'node:path';
import {
  type BatchHeader,
  compressionCodec,
  hasDeleteHorizon,
  isControl,
  isTransactional,
  lastOffset,
  readBatchHeader,
  timestampType,
} from '../protocol/records/batch.js';
import { decodeRecords } from '../protocol/records/codec.js';
import { CODEC_NAMES } from '../protocol/records/compression.js';
import {
  type KafkaRecord,
  readControlRecordKey,
  recordOffset,
  recordTimestamp,
} from '../protocol/records/record.js';
import { type BatchCheck, checkBatch } from './batch-scan.js';
import {
  type CheckpointCodec,
  CLEANER_OFFSET_CHECKPOINT,
  epochEntryCodec,
  LEADER_EPOCH_CHECKPOINT,
  LOG_START_OFFSET_CHECKPOINT,
  parseCheckpoint,
  partitionOffsetCodec,
  RECOVERY_POINT_CHECKPOINT,
  REPLICATION_OFFSET_CHECKPOINT,
} from './checkpoint.js';
import type { FileSystem } from './fs.js';
import { OFFSET_INDEX_ENTRY_SIZE, TIME_INDEX_ENTRY_SIZE } from './index-file.js';
import { decodeSnapshot, SNAPSHOT_FILE_SUFFIX } from './producer-state.js';
import { decodeTransactionIndex, TXN_INDEX_FILE_SUFFIX } from './transaction-index.js';

/**
 * `skiff dump-log`: Kafka's DumpLogSegments line formats for `.log`, `.index`, `.timeindex`, `.txnindex`,
 * plus `leader-epoch-checkpoint` and the offset checkpoint files (the cleaner's among them: its
 * offset per partition is the first dirty offset, where the next cleaning starts). A cleaned
 * segment lists as Kafka lists it: each kept batch at its own offsets (a batch the cleaner
 * emptied stays, with count 0), `deleteHorizonMs: OptionalLong[t]` on a batch whose tombstones
 * have their delete horizon, and with --deep-iteration the offsets the cleaning removed reported
 * as Kafka's "Non-consecutive offsets" on standard error, latest first as Kafka prints them. Where Kafka stops at the first
 * torn batch, this resynchronises: it scans forward for the next position where a whole batch
 * verifies (length, magic, CRC), reports the bytes in between as one invalid region with its byte
 * range, and keeps listing. Pure apart from reading the files through the injected FileSystem.
 */

export interface DumpLogOptions {
  /** --print-data-log: keys and payloads (implies deep iteration, as in Kafka). */
  readonly printDataLog: boolean;
  /** --deep-iteration: one line per record. */
  readonly deepIteration: boolean;
  /** --index-sanity-check: only check the index files. */
  readonly indexSanityCheck: boolean;
}

export interface DumpOutput {
  /** Lines for standard output. */
  readonly out: string[];
  /** Lines for standard error (mismatches, as Kafka prints them). */
  readonly err: string[];
}

export function dumpLog(fs: FileSystem, files: readonly string[], options: DumpLogOptions): DumpOutput {
  const output: DumpOutput = { out: [], err: [] };
  for (const file of files) {
    output.out.push(`Dumping ${file}`);
    const name = path.basename(file);
    if (name.endsWith('.log')) dumpLogFile(fs, file, options, output);
    else if (name.endsWith('.index')) dumpOffsetIndex(fs, file, options, output);
    else if (name.endsWith('.timeindex')) dumpTimeIndex(fs, file, options, output);
    else if (name.endsWith(SNAPSHOT_FILE_SUFFIX)) dumpProducerSnapshot(fs, file, output);
    else if (name.endsWith(TXN_INDEX_FILE_SUFFIX)) dumpTxnIndex(fs, file, output);
    else if (name === LEADER_EPOCH_CHECKPOINT)
      dumpCheckpoint(
        fs,
        file,
        epochEntryCodec,
        output,
        (e) => `epoch: ${e.epoch} startOffset: ${e.startOffset}`,
      );
    else if (
      [
        RECOVERY_POINT_CHECKPOINT,
        LOG_START_OFFSET_CHECKPOINT,
        REPLICATION_OFFSET_CHECKPOINT,
        CLEANER_OFFSET_CHECKPOINT,
      ].includes(name)
    ) {
      dumpCheckpoint(
        fs,
        file,
        partitionOffsetCodec,
        output,
        (e) => `topic: ${e.topic} partition: ${e.partition} offset: ${e.offset}`,
      );
    } else output.err.push(`Ignoring unknown file ${file}`);
  }
  return output;
}

function baseOffsetOf(file: string): bigint {
  const stem = path.basename(file).split('.')[0]!;
  if (!/^\d+$/.test(stem)) throw new Error(`${file}: the file name does not start with a base offset`);
  return BigInt(stem);
}

/** Kafka's DefaultRecordBatch.incrementSequence: sequences wrap from Integer.MAX_VALUE to 0. */
function incrementSequence(sequence: number, increment: number): number {
  if (sequence > 0x7fffffff - increment) return increment - (0x7fffffff - sequence) - 1;
  return sequence + increment;
}

function batchLine(h: BatchHeader, position: number, size: number, valid: boolean): string {
  const lastSequence = h.baseSequence === -1 ? -1 : incrementSequence(h.baseSequence, h.lastOffsetDelta);
  const deleteHorizon = hasDeleteHorizon(h.attributes)
    ? `OptionalLong[${h.baseTimestamp}]`
    : 'OptionalLong.empty';
  const codec = CODEC_NAMES[compressionCodec(h.attributes)] ?? `unknown(${compressionCodec(h.attributes)})`;
  return (
    `baseOffset: ${h.baseOffset} lastOffset: ${lastOffset(h)} count: ${h.recordsCount} ` +
    `baseSequence: ${h.baseSequence} lastSequence: ${lastSequence} producerId: ${h.producerId} ` +
    `producerEpoch: ${h.producerEpoch} partitionLeaderEpoch: ${h.partitionLeaderEpoch} ` +
    `isTransactional: ${isTransactional(h.attributes)} isControl: ${isControl(h.attributes)} ` +
    `deleteHorizonMs: ${deleteHorizon} position: ${position} ${timestampType(h.attributes)}: ${h.maxTimestamp} ` +
    `size: ${size} magic: ${h.magic} compresscodec: ${codec} crc: ${h.crc} isvalid: ${valid}`
  );
}

function recordLine(h: BatchHeader, r: KafkaRecord, printData: boolean): string {
  const sequence = h.baseSequence === -1 ? -1 : incrementSequence(h.baseSequence, r.offsetDelta);
  let line =
    `| offset: ${recordOffset(h, r)} ${timestampType(h.attributes)}: ${recordTimestamp(h, r)} ` +
    `keySize: ${r.key === null ? -1 : r.key.length} valueSize: ${r.value === null ? -1 : r.value.length} ` +
    `sequence: ${sequence} headerKeys: [${r.headers.map((x) => x.key).join(',')}]`;
  if (isControl(h.attributes)) {
    try {
      const type = readControlRecordKey(r.key).type;
      const epoch = r.value && r.value.length >= 6 ? r.value.readInt32BE(2) : -1;
      line +=
        type === 0 || type === 1
          ? ` endTxnMarker: ${type === 0 ? 'ABORT' : 'COMMIT'} coordinatorEpoch: ${epoch}`
          : ` controlType: UNKNOWN(${type})`;
    } catch {
      line += ' controlType: UNKNOWN(-1)';
    }
  } else if (printData) {
    if (r.key !== null) line += ` key: ${r.key.toString('utf8')}`;
    if (r.value !== null) line += ` payload: ${r.value.toString('utf8')}`;
  }
  return line;
}

/**
 * The next position at or after `from` where a whole batch verifies, or -1. A cheap filter on
 * magic and length comes first, so only plausible starts pay for a CRC.
 */
export function findNextValidBatch(buf: Buffer, from: number): number {
  for (let p = from; p + 61 <= buf.length; p++) {
    if (buf[p + 16] !== 2) continue;
    const length = buf.readInt32BE(p + 8);
    if (length < 49 || p + 12 + length > buf.length) continue;
    if (checkBatch(buf, p, buf.length).ok) return p;
  }
  return -1;
}

function dumpLogFile(fs: FileSystem, file: string, options: DumpLogOptions, output: DumpOutput): void {
  const { out, err } = output;
  out.push(`Log starting offset: ${baseOffsetOf(file)}`);
  const buf = fs.readFile(file);
  const name = path.basename(file);
  const deep = options.deepIteration || options.printDataLog;
  const nonConsecutive: string[] = [];
  let lastRecordOffset = -1n;
  let pos = 0;
  while (pos < buf.length) {
    const check: BatchCheck = checkBatch(buf, pos, buf.length);
    let size: number;
    if (check.ok) {
      size = check.size;
      out.push(batchLine(check.header, pos, size, true));
    } else if (check.claimedSize !== undefined && crcOnlyFailure(buf, pos, check.claimedSize)) {
      // A damaged batch that still ends where the next one starts: listed as Kafka would, isvalid: false.
      size = check.claimedSize;
      out.push(batchLine(readBatchHeader(buf, pos), pos, size, false));
    } else {
      const next = findNextValidBatch(buf, pos + 1);
      if (next < 0) {
        out.push(`Found ${buf.length - pos} invalid bytes at the end of ${name}`);
        err.push(`${name}: invalid bytes at positions ${pos}-${buf.length - 1}: ${check.reason}`);
        break;
      }
      out.push(
        `Found ${next - pos} invalid bytes at positions ${pos}-${next - 1} of ${name} (${check.reason}); resuming at position ${next}`,
      );
      pos = next;
      continue;
    }
    if (deep) {
      const h = readBatchHeader(buf, pos);
      try {
        for (const r of decodeRecords(buf.subarray(pos, pos + size), { decompress: true }).records) {
          const offset = recordOffset(h, r);
          if (lastRecordOffset !== -1n && offset !== lastRecordOffset + 1n)
            nonConsecutive.push(`  ${lastRecordOffset} is followed by ${offset}`);
          lastRecordOffset = offset;
          out.push(recordLine(h, r, options.printDataLog));
        }
      } catch (e) {
        out.push(
          `| records of the batch at position ${pos} cannot be read: ${e instanceof Error ? e.message : String(e)}`,
        );
      }
    }
    pos += size;
  }
  if (nonConsecutive.length > 0)
    err.push(`Non-consecutive offsets in ${path.resolve(file)}`, ...nonConsecutive.reverse());
}

/** The batch at `pos` fits the file, has magic 2, and is followed by the end or a valid batch. */
function crcOnlyFailure(buf: Buffer, pos: number, size: number): boolean {
  const end = pos + size;
  if (size < 61 || end > buf.length || buf[pos + 16] !== 2) return false;
  return end === buf.length || checkBatch(buf, end, buf.length).ok;
}

interface RawIndexEntry {
  readonly offset: bigint;
  readonly value: bigint | number;
}

function readIndexEntries(raw: Buffer, base: bigint, entrySize: number): RawIndexEntry[] {
  const entries: RawIndexEntry[] = [];
  for (let at = 0; at + entrySize <= raw.length; at += entrySize) {
    if (entrySize === OFFSET_INDEX_ENTRY_SIZE)
      entries.push({ offset: base + BigInt(raw.readInt32BE(at)), value: raw.readInt32BE(at + 4) });
    else entries.push({ offset: base + BigInt(raw.readInt32BE(at + 8)), value: raw.readBigInt64BE(at) });
  }
  return entries;
}

/** Kafka's sanity checks, plus ordering (Kafka only compares the last entry with the first). */
function sanityProblems(
  raw: Buffer,
  entries: RawIndexEntry[],
  base: bigint,
  kind: 'offset' | 'time',
  file: string,
): string[] {
  const problems: string[] = [];
  const entrySize = kind === 'offset' ? OFFSET_INDEX_ENTRY_SIZE : TIME_INDEX_ENTRY_SIZE;
  if (raw.length % entrySize !== 0) {
    problems.push(
      `Index file ${path.basename(file)} is corrupt, found ${raw.length} bytes which is neither positive nor a multiple of ${entrySize}.`,
    );
  }
  const last = entries[entries.length - 1];
  if (last && last.offset < base) {
    problems.push(
      `Corrupt index found, index file (${file}) has non-zero size but the last offset is ${last.offset} which is less than the base offset ${base}.`,
    );
  }
  if (kind === 'time' && last && (last.value as bigint) < (entries[0]!.value as bigint)) {
    problems.push(
      `Corrupt time index found, time index file (${file}) has non-zero size but the last timestamp is ${last.value} which is less than the first timestamp ${entries[0]!.value}`,
    );
  }
  for (let i = 1; i < entries.length; i++) {
    const a = entries[i - 1]!;
    const b = entries[i]!;
    const zero = b.offset === base && b.value === (kind === 'offset' ? 0 : 0n);
    if (zero) break; // the preallocated tail a crash leaves
    const ordered =
      kind === 'offset'
        ? b.offset > a.offset && (b.value as number) > (a.value as number)
        : b.offset >= a.offset && (b.value as bigint) > (a.value as bigint);
    if (!ordered)
      problems.push(
        `entry ${i} (offset ${b.offset}) does not follow entry ${i - 1} (offset ${a.offset}) in ${file}`,
      );
  }
  return problems;
}

function logFileFor(file: string): string {
  return path.join(path.dirname(file), `${path.basename(file).split('.')[0]}.log`);
}

function dumpOffsetIndex(fs: FileSystem, file: string, options: DumpLogOptions, output: DumpOutput): void {
  const base = baseOffsetOf(file);
  const raw = fs.readFile(file);
  const entries = readIndexEntries(raw, base, OFFSET_INDEX_ENTRY_SIZE);
  if (entries.length === 0) {
    output.out.push(`${file} is empty.`);
    return;
  }
  if (options.indexSanityCheck) {
    reportSanity(file, sanityProblems(raw, entries, base, 'offset', file), output);
    return;
  }
  const logFile = logFileFor(file);
  const log = fs.exists(logFile) ? fs.readFile(logFile) : Buffer.alloc(0);
  const mismatches: string[] = [];
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (i > 0 && e.offset === base) break; // zero-filled preallocated tail
    const position = e.value as number;
    const check = position + 61 <= log.length ? checkBatch(log, position, log.length) : null;
    const found = check?.ok ? lastOffset(check.header) : -1n;
    if (found !== e.offset) mismatches.push(`  Index offset: ${e.offset}, log offset: ${found}`);
    output.out.push(`offset: ${e.offset} position: ${position}`);
  }
  if (mismatches.length > 0) output.err.push(`Mismatches in :${path.resolve(file)}`, ...mismatches);
}

function dumpTimeIndex(fs: FileSystem, file: string, options: DumpLogOptions, output: DumpOutput): void {
  const base = baseOffsetOf(file);
  const raw = fs.readFile(file);
  const entries = readIndexEntries(raw, base, TIME_INDEX_ENTRY_SIZE);
  if (options.indexSanityCheck) {
    reportSanity(file, sanityProblems(raw, entries, base, 'time', file), output);
    return;
  }
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (i > 0 && e.offset === base) break;
    output.out.push(`timestamp: ${e.value} offset: ${e.offset}`);
  }
}

function reportSanity(file: string, problems: string[], output: DumpOutput): void {
  if (problems.length === 0) output.out.push(`${file} passed sanity check.`);
  else for (const p of problems) output.out.push(`${file} failed sanity check: ${p}`);
}

function dumpCheckpoint<T>(
  fs: FileSystem,
  file: string,
  codec: CheckpointCodec<T>,
  output: DumpOutput,
  format: (e: T) => string,
): void {
  try {
    const entries = parseCheckpoint(codec, fs.readFile(file).toString('utf8'), file);
    output.out.push(`version: 0 entries: ${entries.length}`);
    for (const e of entries) output.out.push(format(e));
  } catch (e) {
    output.out.push(e instanceof Error ? e.message : String(e));
  }
}

/** Kafka's producer snapshot lines: one per producer, with its last batch. */
/** Kafka's dumpTxnIndex: one line per aborted transaction. */
function dumpTxnIndex(fs: FileSystem, file: string, output: DumpOutput): void {
  try {
    for (const t of decodeTransactionIndex(fs.readFile(file), file)) {
      output.out.push(
        `version: 0 producerId: ${t.producerId} firstOffset: ${t.firstOffset} lastOffset: ${t.lastOffset} lastStableOffset: ${t.lastStableOffset}`,
      );
    }
  } catch (e) {
    output.err.push(`${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

function dumpProducerSnapshot(fs: FileSystem, file: string, output: DumpOutput): void {
  try {
    for (const e of decodeSnapshot(fs.readFile(file))) {
      const txn =
        e.currentTxnFirstOffset >= 0n ? `OptionalLong[${e.currentTxnFirstOffset}]` : 'OptionalLong.empty';
      let line =
        `producerId: ${e.producerId} producerEpoch: ${e.producerEpoch} coordinatorEpoch: ${e.coordinatorEpoch} ` +
        `currentTxnFirstOffset: ${txn} lastTimestamp: ${e.lastTimestamp} `;
      const b = e.batches.at(-1);
      if (b) {
        line +=
          `firstSequence: ${b.firstSeq} lastSequence: ${b.lastSeq} lastOffset: ${b.lastOffset} ` +
          `offsetDelta: ${b.lastOffset - b.firstOffset} timestamp: ${b.timestamp}`;
      }
      output.out.push(line.trimEnd());
    }
  } catch (e) {
    output.err.push(`${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
}
