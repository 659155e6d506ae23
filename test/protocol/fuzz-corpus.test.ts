/**
 * Corpus-driven fuzzing of the request decoders and the record-batch reader, bounded in time.
 *
 * No coverage-guided fuzzer installs here (@jazzer.js/core's prebuilt addon needs glibc 2.38), so
 * this is fast-check driving mutations of a corpus that grows as it goes: the seeds are the frames
 * real clients sent (test/fixtures/clients) and every input kept in test/fixtures/fuzz-corpus/; a
 * mutant whose outcome (which API and version, which error, how far the decode got) was not seen
 * before joins the pool and is mutated in turn — the outcome standing in for coverage.
 *
 * Properties. Requests: decoding any bytes gives a message or a ProtocolError (never another
 * error); a decoded message holds no more bytes and array elements than its frame; re-encoding it
 * and decoding again gives the same message and the same bytes. Record batches: every reader gives
 * a value or a ProtocolError, the validators never throw, and the answers for a batch are the same
 * whether it sits alone in its buffer or inside a larger one (nothing read outside its bounds).
 *
 * SKIFF_FUZZ_SECONDS (default 2) bounds each target; SKIFF_FUZZ_SEED picks the run; with
 * SKIFF_FUZZ_SAVE=1 inputs with new kinds of outcome are written into the corpus. A failing input is printed as hex
 * and saved there as crash-<hash>.hex, so every later run replays it first.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { API_MESSAGES } from '../../src/protocol/generated/index.js';
import type { ProduceRequest } from '../../src/protocol/generated/ProduceRequest.js';
import { ProtocolError } from '../../src/protocol/protocol-error.js';
import { Reader } from '../../src/protocol/reader.js';
import {
  BATCH_LENGTH_OFFSET,
  batchesIn,
  decodeRecords,
  emptyBatchHeader,
  LOG_OVERHEAD,
  RECORDS_OFFSET,
  validateBatch,
  validateBatchDeep,
  validateBatchInPlace,
  writeCrc,
} from '../../src/protocol/records/index.js';
import { readRequest } from '../../src/protocol/request-frame.js';
import { Writer } from '../../src/protocol/writer.js';

const FIXTURES = resolve(fileURLToPath(import.meta.url), '../../../../test/fixtures');
const CORPUS = join(FIXTURES, 'fuzz-corpus');
const SECONDS = Number(process.env.SKIFF_FUZZ_SECONDS ?? '2');
const SEED = Number(process.env.SKIFF_FUZZ_SEED ?? '23');
const SAVE = process.env.SKIFF_FUZZ_SAVE === '1';
/** The record readers' decompression bound in these runs: past it is a ProtocolError. */
const MAX_UNCOMPRESSED = 1 << 20;

interface Target {
  readonly name: string;
  /** Runs the properties on one input; returns its outcome, what tells inputs apart. */
  run(bytes: Buffer): string;
}

/** An error message without its numbers: one outcome per kind of error, not per value. */
function kind(e: unknown): string {
  if (!(e instanceof ProtocolError)) {
    throw new Error(`not a ProtocolError: ${(e as Error)?.constructor?.name}: ${(e as Error)?.message}`, {
      cause: e,
    });
  }
  return e.message.replace(/0x[0-9a-f]+|-?\d+/gi, 'N');
}

/** Bytes (Buffers) and array elements a decoded value holds: never more than its frame's bytes. */
function heldSize(value: unknown): number {
  if (Buffer.isBuffer(value)) return value.length;
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + 1 + heldSize(v), 0);
  if (value !== null && typeof value === 'object') {
    let n = 0;
    for (const v of Object.values(value)) n += heldSize(v);
    return n;
  }
  return 0;
}

const requestTarget: Target = {
  name: 'request',
  run(frame) {
    let body: Reader;
    try {
      body = readRequest(frame).body;
    } catch (e) {
      return `header:${kind(e)}`;
    }
    const apiKey = frame.readInt16BE(0);
    const version = frame.readInt16BE(2);
    const codec = API_MESSAGES.get(apiKey)?.request;
    if (!codec || version < codec.minVersion || version > codec.maxVersion) return 'unknown-api';
    let value: unknown;
    try {
      value = codec.decode(body, version);
    } catch (e) {
      return `${apiKey}/${version}:${kind(e)}`;
    }
    assert.ok(
      heldSize(value) <= frame.length,
      `${codec.name} v${version} holds more than its ${frame.length} bytes`,
    );
    const w = new Writer();
    codec.encode(w, value, version);
    const encoded = w.toBuffer();
    const again = codec.decode(new Reader(encoded), version);
    assert.deepStrictEqual(again, value, `${codec.name} v${version} does not round-trip`);
    const w2 = new Writer();
    codec.encode(w2, again, version);
    assert.ok(w2.toBuffer().equals(encoded), `${codec.name} v${version} re-encodes differently`);
    return `${apiKey}/${version}:ok`;
  },
};

/**
 * Every record-batch reader on `buf`: their answers in detail (to compare) and in kind (the
 * outcome); only ProtocolErrors may escape.
 */
function readBatch(buf: Buffer): { detail: string; outcome: string } {
  const detail: string[] = [];
  const outcome: string[] = [];
  try {
    const d = decodeRecords(buf, { decompress: true, maxUncompressedBytes: MAX_UNCOMPRESSED });
    detail.push(`records:${d.records.length}`);
    outcome.push('records');
  } catch (e) {
    outcome.push(kind(e));
    detail.push((e as Error).message);
  }
  const shallow = validateBatch(buf, 0);
  const deep = validateBatchDeep(buf, 0, buf.length, {
    decompress: true,
    maxUncompressedBytes: MAX_UNCOMPRESSED,
  });
  if (deep.ok) assert.ok(shallow.ok, 'the deep check accepted what the shallow one refused');
  const inPlace = validateBatchInPlace(buf, 0, buf.length, emptyBatchHeader(), { decompress: true });
  const verdicts = [
    shallow.ok ? 'shallow-ok' : shallow.reason,
    deep.ok ? 'deep-ok' : deep.reason,
    typeof inPlace === 'number' ? 'in-place-ok' : inPlace.reason,
  ];
  outcome.push(...verdicts);
  detail.push(...verdicts, `in-place:${typeof inPlace === 'number' ? inPlace : inPlace.detail}`);
  const scan = batchesIn(buf);
  for (const entry of scan) {
    assert.ok(entry.pos + entry.size <= buf.length, 'a scanned batch ends past its buffer');
    detail.push(`batch@${entry.pos}+${entry.size}`);
  }
  detail.push(`end:${scan.validEnd}`);
  return { detail: detail.join(' '), outcome: outcome.join(' ') };
}

const batchTarget: Target = {
  name: 'record-batch',
  run(bytes) {
    const alone = readBatch(Buffer.from(bytes));
    // The same bytes inside a larger buffer: a reader that looks past its view answers differently.
    const padded = Buffer.concat([Buffer.alloc(7, 0x7f), bytes, Buffer.alloc(64, 0x00)]);
    const inside = readBatch(padded.subarray(7, 7 + bytes.length));
    assert.equal(inside.detail, alone.detail, 'a batch reads differently inside a larger buffer');
    return alone.outcome;
  },
};

/** The frames real clients sent, size prefix removed, and the records of their Produce requests. */
function clientSeeds(): { request: Buffer[]; 'record-batch': Buffer[] } {
  const request: Buffer[] = [];
  const batches: Buffer[] = [];
  const dir = join(FIXTURES, 'clients');
  for (const client of readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory())) {
    for (const file of readdirSync(join(dir, client.name))) {
      const f = JSON.parse(readFileSync(join(dir, client.name, file), 'utf8')) as { frameHex: string };
      const frame = Buffer.from(f.frameHex, 'hex').subarray(4);
      request.push(frame);
      if (frame.readInt16BE(0) !== 0) continue;
      const body = readRequest(frame).body;
      const produce = API_MESSAGES.get(0)!.request.decode(body, frame.readInt16BE(2)) as ProduceRequest;
      for (const t of produce.topicData)
        for (const p of t.partitionData) if (p.records) batches.push(p.records);
    }
  }
  return { request, 'record-batch': batches };
}

function corpusOf(target: string): Map<string, Buffer> {
  const dir = join(CORPUS, target);
  const out = new Map<string, Buffer>();
  if (!existsSync(dir)) return out;
  for (const file of readdirSync(dir).sort()) {
    if (file.endsWith('.hex'))
      out.set(file, Buffer.from(readFileSync(join(dir, file), 'utf8').trim(), 'hex'));
  }
  return out;
}

function save(target: string, bytes: Buffer, prefix: string): string {
  const dir = join(CORPUS, target);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${prefix}${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}.hex`);
  writeFileSync(file, `${bytes.toString('hex')}\n`);
  return file;
}

const INTERESTING_INT32 = [0, 1, -1, 0x7f, 0x80, 0xff, 0x7fff, -0x8000, 0x7fffffff, -0x80000000];

const mutation = fc.oneof(
  fc.record({ op: fc.constant('flip' as const), at: fc.nat(), v: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ op: fc.constant('set' as const), at: fc.nat(), v: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ op: fc.constant('int32' as const), at: fc.nat(), v: fc.constantFrom(...INTERESTING_INT32) }),
  fc.record({ op: fc.constant('truncate' as const), at: fc.nat(), v: fc.constant(0) }),
  fc.record({ op: fc.constant('insert' as const), at: fc.nat(), v: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ op: fc.constant('delete' as const), at: fc.nat(), v: fc.integer({ min: 1, max: 16 }) }),
  fc.record({ op: fc.constant('repeat' as const), at: fc.nat(), v: fc.integer({ min: 1, max: 32 }) }),
);
type Mutation = typeof mutation extends fc.Arbitrary<infer M> ? M : never;

function mutate(input: Buffer, ms: readonly Mutation[], fixBatch: boolean): Buffer {
  let b = Buffer.from(input);
  for (const m of ms) {
    if (b.length === 0) break;
    const at = m.at % b.length;
    if (m.op === 'flip') b[at] = b[at]! ^ m.v;
    else if (m.op === 'set') b[at] = m.v;
    else if (m.op === 'int32' && at + 4 <= b.length) b.writeInt32BE(m.v, at);
    else if (m.op === 'truncate') b = b.subarray(0, at);
    else if (m.op === 'insert') b = Buffer.concat([b.subarray(0, at), Buffer.from([m.v]), b.subarray(at)]);
    else if (m.op === 'delete') b = Buffer.concat([b.subarray(0, at), b.subarray(at + m.v)]);
    else if (m.op === 'repeat') b = Buffer.concat([b.subarray(0, at + m.v), b.subarray(at)]);
  }
  // A batch's length and CRC made right again, so that the mutation reaches the records.
  if (fixBatch && b.length >= RECORDS_OFFSET) {
    b.writeInt32BE(b.length - LOG_OVERHEAD, BATCH_LENGTH_OFFSET);
    writeCrc(b, 0);
  }
  return b;
}

function fuzz(target: Target, seeds: readonly Buffer[]): void {
  const corpus = corpusOf(target.name);
  // Replay first: every input kept (crashes found before included) must hold.
  for (const [file, bytes] of corpus) {
    try {
      target.run(bytes);
    } catch (e) {
      throw new Error(`${target.name}: corpus input ${file} fails: ${(e as Error).message}`, { cause: e });
    }
  }
  const pool = [...seeds, ...corpus.values()];
  const seen = new Set(pool.map((b) => target.run(b)));
  const savedKinds = new Set([...seen].map((o) => o.replace(/^-?\d+\/-?\d+:/, '')));
  let failing: Buffer | null = null;
  let runs = 0;
  const result = fc.check(
    fc.property(
      fc.nat(),
      fc.array(mutation, { minLength: 1, maxLength: 4 }),
      fc.boolean(),
      (pick, ms, fix) => {
        const bytes = mutate(pool[pick % pool.length]!, ms, fix && target === batchTarget);
        runs++;
        let outcome: string;
        try {
          outcome = target.run(bytes);
        } catch (e) {
          failing = bytes;
          throw e;
        }
        if (!seen.has(outcome)) {
          seen.add(outcome);
          pool.push(bytes);
          // The kept corpus grows by kinds of outcome, whatever API and version gave them.
          const kept = outcome.replace(/^-?\d+\/-?\d+:/, '');
          if (SAVE && !savedKinds.has(kept)) {
            savedKinds.add(kept);
            save(target.name, bytes, '');
          }
        }
      },
    ),
    {
      seed: SEED,
      numRuns: Number.MAX_SAFE_INTEGER,
      interruptAfterTimeLimit: SECONDS * 1000,
      markInterruptAsFailure: false,
      endOnFailure: true,
    },
  );
  if (result.failed) {
    const bytes = failing as Buffer | null;
    const where = bytes ? save(target.name, bytes, 'crash-') : '(no input)';
    throw new Error(
      `${target.name} fuzzing failed (SKIFF_FUZZ_SEED=${SEED}) on ${bytes?.toString('hex')}, saved as ${where}: ${
        (result.errorInstance as Error | undefined)?.message
      }`,
    );
  }
  console.log(`${target.name}: ${runs} inputs in ${SECONDS} s, ${seen.size} outcomes, pool ${pool.length}`);
  assert.ok(runs > 0);
}

describe('fuzzing from the corpus', { timeout: 60_000 + SECONDS * 4000 }, () => {
  const seeds = clientSeeds();

  it('request frames: a message that round-trips, or a ProtocolError', () => {
    fuzz(requestTarget, seeds.request);
  });

  it('record batches: a value or a ProtocolError, the same answers wherever the batch sits', () => {
    fuzz(batchTarget, seeds['record-batch']);
  });
});
