/**
 * What a compaction test reads straight from a replica's partition directory: the live segments
 * (`.log` files, by base offset) decoded record by record, the files a cleaning leaves behind
 * (`.cleaned`, `.swap`, `.deleted`), and the checks every replica must pass after a crash — no
 * two segments holding the same offsets, and each key's
 * latest record the one the producer had acknowledged last, at the offset it was acknowledged at.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decodeRecords } from '../../src/protocol/records/codec.js';
import { batchesIn } from '../../src/protocol/records/validate.js';

export interface LogRecord {
  readonly offset: bigint;
  readonly key: string | null;
  /** null: a tombstone. */
  readonly value: string | null;
}

export interface SegmentView {
  readonly name: string;
  readonly baseOffset: bigint;
  /** The first and last offsets of its batches (null when it holds none). */
  readonly firstOffset: bigint | null;
  readonly lastOffset: bigint | null;
  readonly records: LogRecord[];
}

/** The latest acknowledged record of a key: its value (null: a tombstone) and offset. */
export interface Acked {
  readonly value: string | null;
  readonly offset: bigint;
}

const SEGMENT = /^(\d{20})\.log$/;

/** The live segments of a partition dir, decoded, in offset order (a torn tail batch ends a segment). */
export function readSegments(dir: string): SegmentView[] {
  const names = fs
    .readdirSync(dir)
    .filter((n) => SEGMENT.test(n))
    .sort();
  return names.map((name) => {
    const buf = fs.readFileSync(path.join(dir, name));
    const records: LogRecord[] = [];
    let firstOffset: bigint | null = null;
    let lastOffset: bigint | null = null;
    for (const e of batchesIn(buf)) {
      const d = decodeRecords(buf.subarray(e.pos, e.pos + e.size), { decompress: true });
      firstOffset ??= d.header.baseOffset;
      lastOffset = d.header.baseOffset + BigInt(d.header.lastOffsetDelta);
      for (const r of d.records) {
        records.push({
          offset: d.header.baseOffset + BigInt(r.offsetDelta),
          key: r.key === null ? null : r.key.toString(),
          value: r.value === null ? null : r.value.toString(),
        });
      }
    }
    return { name, baseOffset: BigInt(name.slice(0, 20)), firstOffset, lastOffset, records };
  });
}

/** The files of an unfinished cleaning or swap in a partition dir. */
export function cleaningLeftovers(dir: string): { cleaned: string[]; swap: string[]; deleted: string[] } {
  const names = fs.readdirSync(dir);
  return {
    cleaned: names.filter((n) => n.endsWith('.cleaned')),
    swap: names.filter((n) => n.endsWith('.swap')),
    deleted: names.filter((n) => n.endsWith('.deleted')),
  };
}

/**
 * The live segments of a running broker's partition dir as of one moment: read between two
 * listings that name the same `.log` files with no `.swap` among them (a swap in progress renames
 * segments: a read across it could miss one or see one twice). Retried every 20 ms until stable.
 */
export async function stableSegments(dir: string, timeoutMs = 20_000): Promise<SegmentView[]> {
  const logs = (): string | null => {
    const names = fs.readdirSync(dir);
    if (names.some((n) => n.endsWith('.swap'))) return null;
    return names
      .filter((n) => SEGMENT.test(n))
      .sort()
      .join(',');
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const before = logs();
    if (before !== null) {
      try {
        const segments = readSegments(dir);
        if (logs() === before) return segments;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
    }
    if (Date.now() > deadline)
      throw new Error(`${dir}: no stable listing of its segments in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The checks of a recovered replica (its dir read with stableSegments): segments in offset order
 * with no offset held twice (each segment's batches within [its base offset, the next base
 * offset)), offsets increasing, and for every key in `acked` its latest record in the log the
 * acknowledged one (same offset and value). Returns the segments read.
 */
export async function assertReplicaIntact(
  dir: string,
  acked: ReadonlyMap<string, Acked>,
  who: string,
): Promise<SegmentView[]> {
  const segments = await stableSegments(dir);
  let previous = -1n;
  const latest = new Map<string, LogRecord>();
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]!;
    const next = segments[i + 1]?.baseOffset;
    if (s.firstOffset !== null) {
      assert.ok(
        s.firstOffset >= s.baseOffset,
        `${who}: ${s.name} starts at ${s.firstOffset}, below its base`,
      );
      if (next !== undefined)
        assert.ok(
          s.lastOffset! < next,
          `${who}: ${s.name} reaches ${s.lastOffset}, into the next segment ${next}`,
        );
    }
    for (const r of s.records) {
      assert.ok(r.offset > previous, `${who}: offset ${r.offset} after ${previous} (an offset held twice)`);
      previous = r.offset;
      if (r.key !== null) latest.set(r.key, r);
    }
  }
  for (const [key, want] of acked) {
    const got = latest.get(key);
    assert.ok(got !== undefined, `${who}: key ${key} lost (acknowledged at ${want.offset})`);
    assert.equal(got.offset, want.offset, `${who}: key ${key}'s latest record is at its acknowledged offset`);
    assert.equal(got.value, want.value, `${who}: key ${key}'s latest value`);
  }
  return segments;
}

/** Whether the log is cleaned up to its active segment: every key at most once outside it. */
export function cleanedUpToActive(segments: readonly SegmentView[]): boolean {
  const seen = new Set<string>();
  for (const s of segments.slice(0, -1)) {
    for (const r of s.records) {
      if (r.key === null || seen.has(r.key)) return false;
      seen.add(r.key);
    }
  }
  return true;
}
