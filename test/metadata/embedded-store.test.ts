import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { EmbeddedStore } from '../../src/metadata/embedded-store.js';
import { put, rangeAll, StoreError } from '../../src/metadata/store.js';
import { eventually, storeContract } from './store-contract.js';

storeContract('embedded', async () => {
  const clock = new ManualClock();
  const store = await EmbeddedStore.open({ clock });
  return {
    store,
    other: store,
    prefix: '/test/',
    leaseTtlMs: 1000,
    letTimePass: async (ms) => {
      clock.advance(ms);
      store.checkLeases();
    },
    close: () => store.close(),
  };
});

storeContract('embedded, persisted', async () => {
  const clock = new ManualClock();
  const dir = mkdtempSync(join(tmpdir(), 'skiff-meta-'));
  const store = await EmbeddedStore.open({ clock, dataDir: dir });
  return {
    store,
    other: store,
    prefix: '/test/',
    leaseTtlMs: 1000,
    letTimePass: async (ms) => {
      clock.advance(ms);
      store.checkLeases();
    },
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('EmbeddedStore persistence', () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'skiff-meta-'));
    dirs.push(d);
    return d;
  };
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('keeps keys and revisions across a restart; leased keys are gone', async () => {
    const clock = new ManualClock();
    const dir = tempDir();
    const s1 = await EmbeddedStore.open({ clock, dataDir: dir });
    await put(s1, '/skiff/c/topics/a', '{"id":1}');
    const lease = await s1.grantLease(5000);
    await put(s1, '/skiff/c/brokers/1', 'b1', lease);
    const r = await put(s1, '/skiff/c/topics/b', '{"id":2}');
    await s1.close();
    const s2 = await EmbeddedStore.open({ clock, dataDir: dir });
    const all = await rangeAll(s2, '/skiff/c/');
    assert.deepEqual(
      all.kvs.map((kv) => kv.key),
      ['/skiff/c/topics/a', '/skiff/c/topics/b'],
    );
    assert.equal(all.kvs[1]!.modRevision, r.revision);
    // The deletion of the orphaned broker key is a new revision, so watchers of the old process's
    // revisions would see it too.
    assert.equal(await s2.currentRevision(), r.revision + 1n);
    assert.equal((await s2.grantLease(1000)) > lease, true);
    // Reads before the restart's revision are gone; watches from after it work.
    await assert.rejects(
      s2.range('/skiff/', { revision: 1n }),
      (e: unknown) => e instanceof StoreError && e.kind === 'compacted',
    );
    const r3 = await put(s2, '/skiff/c/topics/c', '{}');
    await s2.close();
    const s3 = await EmbeddedStore.open({ clock, dataDir: dir });
    assert.equal((await s3.get('/skiff/c/topics/c'))?.modRevision, r3.revision);
    await s3.close();
  });

  it('drops a torn journal tail and keeps appending after it', async () => {
    const clock = new ManualClock();
    const dir = tempDir();
    const s1 = await EmbeddedStore.open({ clock, dataDir: dir });
    await put(s1, '/k/1', 'one');
    await s1.close();
    appendFileSync(join(dir, 'metadata.journal'), '{"r":"9","o":[["p","/k/2"');
    const s2 = await EmbeddedStore.open({ clock, dataDir: dir });
    assert.equal(await s2.get('/k/2'), null);
    await put(s2, '/k/3', 'three');
    await s2.close();
    const s3 = await EmbeddedStore.open({ clock, dataDir: dir });
    assert.equal((await s3.get('/k/3'))?.value, 'three');
    assert.equal((await s3.get('/k/1'))?.value, 'one');
    await s3.close();
  });

  it('refuses a snapshot it does not understand', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'metadata.snapshot'), '{"format":"other"}');
    await assert.rejects(EmbeddedStore.open({ clock: new ManualClock(), dataDir: dir }));
  });

  it('a watch from a revision older than the kept history fails with compacted', async () => {
    const store = await EmbeddedStore.open({ clock: new ManualClock(), historyEvents: 10 });
    for (let i = 0; i < 30; i++) await put(store, `/k/${i}`, 'v');
    const errors: StoreError[] = [];
    store.watch('/k/', 2n, { onEvents: () => {}, onError: (e) => errors.push(e) });
    await eventually(() => errors.length === 1);
    assert.equal(errors[0]!.kind, 'compacted');
    assert.ok(errors[0]!.compactRevision > 2n);
    await store.close();
  });
});
