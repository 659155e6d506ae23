import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { NodeFileSystem } from '../../src/storage/fs.js';
import { DelayingFileSystem, type DiskDelays, delaysFromFile } from '../../src/storage/fs-delay.js';
import { tempDir } from './helpers.js';

test('pwrites, fsyncs and atomic writes ask for their delay; reads do not', () => {
  const { dir, cleanup } = tempDir();
  try {
    const asked: DiskDelays[] = [];
    const slow = new DelayingFileSystem(new NodeFileSystem(), () => {
      const d = { writeMs: 0, syncMs: 0 };
      asked.push(d);
      return d;
    });
    const file = path.join(dir, 'f');
    const h = slow.open(file, true);
    h.write(Buffer.from('abc'), 0);
    h.sync();
    const buf = Buffer.alloc(3);
    h.read(buf, 0, 3, 0);
    h.close();
    assert.equal(buf.toString(), 'abc');
    assert.equal(asked.length, 2);
    slow.writeFileAtomic(path.join(dir, 'g'), Buffer.from('x'));
    assert.equal(asked.length, 3);
    assert.equal(slow.readFile(path.join(dir, 'g')).toString(), 'x');
    assert.equal(asked.length, 3);
  } finally {
    cleanup();
  }
});

test('the delays file is read again after its reload interval; a bad file keeps the last delays', () => {
  const { dir, cleanup } = tempDir();
  try {
    const file = path.join(dir, 'delays.json');
    let nowMs = 0;
    const delays = delaysFromFile(file, () => nowMs);
    assert.deepEqual(delays(), { writeMs: 0, syncMs: 0 });
    fs.writeFileSync(file, JSON.stringify({ writeMs: 5, syncMs: 7 }));
    assert.deepEqual(delays(), { writeMs: 0, syncMs: 0 });
    nowMs += 1000;
    assert.deepEqual(delays(), { writeMs: 5, syncMs: 7 });
    fs.writeFileSync(file, '{"writeMs": 5, "sy');
    nowMs += 1000;
    assert.deepEqual(delays(), { writeMs: 5, syncMs: 7 });
  } finally {
    cleanup();
  }
});
