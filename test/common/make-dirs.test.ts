/**
 * makeDirectories: mkdir -p that fails with one clear error where Node's recursive mkdirSync would
 * loop forever (procfs) or a path component is a file.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { makeDirectories } from '../../src/common/make-dirs.js';

describe('makeDirectories', () => {
  it('creates every missing level and accepts what exists', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-mkdirs-'));
    try {
      const deep = path.join(root, 'a', 'b', 'c');
      makeDirectories(deep);
      assert.ok(fs.statSync(deep).isDirectory());
      makeDirectories(deep);
      makeDirectories(`${root}/a//b/./c/`);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('names a file in the way', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-mkdirs-'));
    try {
      fs.writeFileSync(path.join(root, 'f'), 'x');
      assert.throws(
        () => makeDirectories(path.join(root, 'f', 'logs')),
        new RegExp(`^Error: cannot create the directory ${root}/f: it exists and is not a directory$`),
      );
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('fails under /proc, where a recursive mkdirSync never returns', {
    skip: !fs.existsSync('/proc/self'),
  }, () => {
    assert.throws(
      () => makeDirectories('/proc/skiff-no-such/logs'),
      /^Error: cannot create the directory \/proc\/skiff-no-such: ENOENT \(no such file or directory\)$/,
    );
  });
});
