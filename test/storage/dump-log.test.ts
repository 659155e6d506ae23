import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { runCli } from '../../src/cli/cli.js';
import { readBatchHeader } from '../../src/protocol/records/batch.js';
import { encodeBatch } from '../../src/protocol/records/codec.js';
import { dumpLog } from '../../src/storage/dump-log.js';
import { NodeFileSystem } from '../../src/storage/fs.js';
import { Log } from '../../src/storage/log.js';
import { logConfig } from '../../src/storage/log-config.js';
import { makeBatch, tempDir, testContext } from './helpers.js';

const fsys = new NodeFileSystem();
const plain = { printDataLog: false, deepIteration: false, indexSanityCheck: false };

function batchAt(base: bigint, n: number, seed: number): Buffer {
  return makeBatch({ baseOffset: base, count: n, valueBytes: 40, seed });
}

test('batch lines use Kafka’s layout, records with --print-data-log', () => {
  const { dir, cleanup } = tempDir();
  try {
    const f = path.join(dir, '00000000000000000000.log');
    const b = encodeBatch({
      baseOffset: 0n,
      partitionLeaderEpoch: 0,
      baseTimestamp: 1_700_000_000_000n,
      records: [
        { key: Buffer.from('k'), value: Buffer.from('hello') },
        { key: null, value: Buffer.from('x'), headers: [{ key: 'h1', value: null }], timestampDelta: 5n },
      ],
    });
    fs.writeFileSync(f, b);
    const crc = readBatchHeader(b, 0).crc;
    const r = dumpLog(fsys, [f], { ...plain, printDataLog: true });
    assert.deepEqual(r.out, [
      `Dumping ${f}`,
      'Log starting offset: 0',
      `baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000005 size: ${b.length} magic: 2 compresscodec: none crc: ${crc} isvalid: true`,
      '| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 5 sequence: -1 headerKeys: [] key: k payload: hello',
      '| offset: 1 CreateTime: 1700000000005 keySize: -1 valueSize: 1 sequence: -1 headerKeys: [h1] payload: x',
    ]);
    assert.deepEqual(r.err, []);
  } finally {
    cleanup();
  }
});

test('a torn batch in the middle: reported as a byte range, the batches after it are listed', () => {
  const { dir, cleanup } = tempDir();
  try {
    const f = path.join(dir, '00000000000000000100.log');
    const a = batchAt(100n, 2, 1);
    const b = batchAt(102n, 3, 2);
    const torn = batchAt(105n, 4, 3).subarray(0, 70); // a write cut short
    const d = batchAt(109n, 2, 4);
    const e = batchAt(111n, 1, 5);
    fs.writeFileSync(f, Buffer.concat([a, b, torn, d, e]));
    const r = dumpLog(fsys, [f], { ...plain, deepIteration: true });
    const batches = r.out.filter((l) => l.startsWith('baseOffset:'));
    assert.deepEqual(
      batches.map((l) => /^baseOffset: (\d+)/.exec(l)![1]),
      ['100', '102', '109', '111'],
    );
    const start = a.length + b.length;
    const end = start + torn.length;
    const region = r.out.find((l) => l.startsWith('Found'))!;
    assert.match(
      region,
      new RegExp(
        `^Found ${torn.length} invalid bytes at positions ${start}-${end - 1} of 00000000000000000100.log \\(.+\\); resuming at position ${end}$`,
      ),
    );
    assert.ok(r.out.some((l) => l.includes(`baseOffset: 109`) && l.includes(`position: ${end} `)));
    // deep iteration notices the hole in the offsets
    assert.ok(r.err.includes('  104 is followed by 109'));
  } finally {
    cleanup();
  }
});

test('a CRC-damaged batch is listed with isvalid: false; a torn tail ends as in Kafka', () => {
  const { dir, cleanup } = tempDir();
  try {
    const f = path.join(dir, '00000000000000000000.log');
    const a = batchAt(0n, 2, 1);
    const b = Buffer.from(batchAt(2n, 2, 2));
    b[b.length - 3]! ^= 0x40;
    const c = batchAt(4n, 2, 3);
    const tail = batchAt(6n, 2, 4).subarray(0, 30);
    fs.writeFileSync(f, Buffer.concat([a, b, c, tail]));
    const r = dumpLog(fsys, [f], plain);
    const lines = r.out.filter((l) => l.startsWith('baseOffset:'));
    assert.equal(lines.length, 3);
    assert.match(lines[1]!, /isvalid: false$/);
    assert.equal(r.out.at(-1), 'Found 30 invalid bytes at the end of 00000000000000000000.log');
  } finally {
    cleanup();
  }
});

test('.index, .timeindex (with sanity check) and leader-epoch-checkpoint of a real log', () => {
  const { dir, cleanup } = tempDir();
  try {
    const ctx = testContext();
    const tp = path.join(dir, 't-0');
    const log = Log.open({
      dir: tp,
      topic: 't',
      partition: 0,
      config: logConfig({ indexIntervalBytes: 200 }),
      ctx,
      hadCleanShutdown: true,
    });
    for (let i = 0; i < 10; i++)
      log.appendAsLeader(
        makeBatch({ count: 2, valueBytes: 100, timestamp: 1_700_000_000_000n + BigInt(i) }),
        i < 5 ? 0 : 1,
      );
    log.close();
    const idx = path.join(tp, '00000000000000000000.index');
    const r = dumpLog(
      fsys,
      [idx, path.join(tp, '00000000000000000000.timeindex'), path.join(tp, 'leader-epoch-checkpoint')],
      plain,
    );
    const offsets = r.out.filter((l) => l.startsWith('offset:'));
    assert.ok(offsets.length >= 3);
    for (const l of offsets) assert.match(l, /^offset: \d+ position: \d+$/);
    assert.ok(r.out.some((l) => /^timestamp: 1700000000010 offset: 19$/.test(l)));
    assert.deepEqual(r.out.slice(-3), [
      'version: 0 entries: 2',
      'epoch: 0 startOffset: 0',
      'epoch: 1 startOffset: 10',
    ]);
    assert.deepEqual(r.err, []);
    const sanity = dumpLog(fsys, [idx], { ...plain, indexSanityCheck: true });
    assert.deepEqual(sanity.out, [`Dumping ${idx}`, `${idx} passed sanity check.`]);
    fs.appendFileSync(idx, Buffer.from([1, 2, 3]));
    assert.match(
      dumpLog(fsys, [idx], { ...plain, indexSanityCheck: true }).out[1]!,
      /failed sanity check: .*neither positive nor a multiple of 8/,
    );
  } finally {
    cleanup();
  }
});

test('skiff dump-log is registered in the CLI', async () => {
  const { dir, cleanup } = tempDir();
  try {
    const f = path.join(dir, '00000000000000000000.log');
    fs.writeFileSync(f, batchAt(0n, 1, 1));
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['dump-log', '--files', f, '--deep-iteration'], {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
    });
    assert.equal(code, 0, err.join('\n'));
    assert.equal(out[0], `Dumping ${f}`);
    assert.equal(out.length, 4);
    assert.equal(await runCli(['dump-log'], { out: () => {}, err: () => {} }), 2);
  } finally {
    cleanup();
  }
});

test('seed 14.3 on disk: a torn copy of a batch followed by the whole batch again', () => {
  const { dir, cleanup } = tempDir();
  try {
    // Kafka's broker 3: the last batch lost its final 500 bytes, recovery only moved the LEO back,
    // and the refetched batch was appended behind the torn bytes. Kafka's dump stops at the torn
    // copy (isvalid: false) and never lists the good one.
    const f = path.join(dir, '00000000000000000000.log');
    const before = Buffer.concat(Array.from({ length: 20 }, (_, i) => batchAt(BigInt(i * 2), 2, i)));
    const last = makeBatch({ baseOffset: 40n, count: 31, valueBytes: 500, seed: 9 });
    const torn = last.subarray(0, last.length - 500);
    fs.writeFileSync(f, Buffer.concat([before, torn, last]));
    const r = dumpLog(fsys, [f], plain);
    const region = r.out.filter((l) => l.startsWith('Found'));
    assert.deepEqual(region, [
      `Found ${torn.length} invalid bytes at positions ${before.length}-${before.length + torn.length - 1} of 00000000000000000000.log (crc-mismatch: ${region[0]!.split('(crc-mismatch: ')[1]!.split(')')[0]}); resuming at position ${before.length + torn.length}`,
    ]);
    const lastLine = r.out.at(-1)!;
    assert.match(
      lastLine,
      new RegExp(
        `^baseOffset: 40 lastOffset: 70 count: 31 .* position: ${before.length + torn.length} .* isvalid: true$`,
      ),
    );
  } finally {
    cleanup();
  }
});
