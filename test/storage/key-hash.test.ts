import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeyHasher } from '../../src/storage/key-hash.js';

/** h1..h4 as the reference implementation writes its 16 output bytes (little-endian words). */
function digest(h: KeyHasher): Buffer {
  const out = Buffer.alloc(16);
  out.writeInt32LE(h.h1, 0);
  out.writeInt32LE(h.h2, 4);
  out.writeInt32LE(h.h3, 8);
  out.writeInt32LE(h.h4, 12);
  return out;
}

test('MurmurHash3 x86_128 passes SMHasher verification (0xB3ECE62A)', () => {
  // SMHasher's VerificationTest: hash the keys {0}, {0,1}, ... {0..254} (and the empty key),
  // key i with seed 256 - i; hash the 256 digests with seed 0; the first four bytes,
  // little-endian, are the implementation's verification value.
  const h = new KeyHasher();
  const key = Buffer.alloc(256);
  const hashes = Buffer.alloc(256 * 16);
  for (let i = 0; i < 256; i++) {
    key[i] = i;
    h.hash(key, 0, i, 256 - i);
    digest(h).copy(hashes, i * 16);
  }
  h.hash(hashes, 0, hashes.length, 0);
  assert.equal(digest(h).readUInt32LE(0), 0xb3ece62a);
});

test('the hash is of the key bytes only, wherever they lie', () => {
  const h = new KeyHasher();
  h.hash(Buffer.from('some-key'), 0, 8);
  const alone = digest(h);
  h.hash(Buffer.from('..some-key..'), 2, 10);
  assert.deepEqual(digest(h), alone);
  h.hash(Buffer.from('some-kez'), 0, 8);
  assert.notDeepEqual(digest(h), alone);
  h.hash(Buffer.alloc(0), 0, 0);
  assert.deepEqual(digest(h), Buffer.alloc(16), 'the empty key with seed 0 hashes to zeros');
});
