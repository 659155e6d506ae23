import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import {
  CheckpointFile,
  CorruptCheckpointError,
  epochEntryCodec,
  formatCheckpoint,
  parseCheckpoint,
  partitionOffsetCodec,
} from '../../src/storage/checkpoint.js';
import { NodeFileSystem } from '../../src/storage/fs.js';
import { tempDir } from './helpers.js';

test('leader-epoch-checkpoint is written in Kafka’s text layout and read back', () => {
  const { dir, cleanup } = tempDir();
  try {
    const file = new CheckpointFile(
      new NodeFileSystem(),
      path.join(dir, 'leader-epoch-checkpoint'),
      epochEntryCodec,
    );
    assert.deepEqual(file.read(), []);
    file.write([
      { epoch: 0, startOffset: 0n },
      { epoch: 3, startOffset: 349995n },
    ]);
    assert.equal(fs.readFileSync(file.path, 'utf8'), '0\n2\n0 0\n3 349995\n');
    assert.deepEqual(file.read(), [
      { epoch: 0, startOffset: 0n },
      { epoch: 3, startOffset: 349995n },
    ]);
    assert.ok(!fs.existsSync(`${file.path}.tmp`));
  } finally {
    cleanup();
  }
});

test('offset checkpoints hold topic partition offset lines', () => {
  const text = formatCheckpoint(partitionOffsetCodec, [
    { topic: 'orders', partition: 0, offset: 42n },
    { topic: '__consumer_offsets', partition: 17, offset: 9007199254740993n },
  ]);
  assert.equal(text, '0\n2\norders 0 42\n__consumer_offsets 17 9007199254740993\n');
  assert.deepEqual(parseCheckpoint(partitionOffsetCodec, text, 'f')[1], {
    topic: '__consumer_offsets',
    partition: 17,
    offset: 9007199254740993n,
  });
});

test('the parser tolerates CRLF, extra blanks and a missing final newline', () => {
  const parsed = parseCheckpoint(epochEntryCodec, ' 0 \r\n1\r\n  5 \t 100  \r\n\r\n', 'f');
  assert.deepEqual(parsed, [{ epoch: 5, startOffset: 100n }]);
  assert.deepEqual(parseCheckpoint(epochEntryCodec, '0\n0', 'f'), []);
});

test('malformed checkpoint files fail with the file and line', () => {
  const cases: [string, RegExp][] = [
    ['', /line 1: file is empty/],
    ['1\n0\n', /line 1: unrecognized version '1'/],
    ['0\n', /line 2: missing entry count/],
    ['0\nx\n', /line 2: entry count 'x'/],
    ['0\n2\n1 0\n', /expected 2 entries, found 1/],
    ['0\n1\n1 0\n2 5\n', /expected 1 entries, found 2/],
    ['0\n1\n1 0 7\n', /line 3: expected 2 fields/],
    ['0\n1\n1 abc\n', /line 3: start offset 'abc' is not an integer/],
    ['0\n1\n-1 5\n', /line 3: negative epoch entry/],
    ['0\n1\n1 99999999999999999999\n', /does not fit in 64 bits/],
  ];
  for (const [text, pattern] of cases) {
    assert.throws(
      () => parseCheckpoint(epochEntryCodec, text, '/d/leader-epoch-checkpoint'),
      (e: unknown) =>
        e instanceof CorruptCheckpointError && pattern.test(e.message) && e.message.includes('/d/'),
      JSON.stringify(text),
    );
  }
  assert.throws(() => parseCheckpoint(partitionOffsetCodec, '0\n1\nt -1 5\n', 'f'), /negative partition/);
});
