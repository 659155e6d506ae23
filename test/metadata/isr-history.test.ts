/**
 * The durable ISR history's records on both store backends (src/metadata/isr-history.ts): a record
 * per partition epoch under the history prefix, outside the watched root; the size bound applied
 * by the write that adds an entry; readers skipping what is past the bounds and unreadable values;
 * the prune ops; the embedded store keeping them across a reopen of its data dir. etcd is a real
 * one-member etcd (test/support/etcd.ts).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ManualClock, SystemClock } from '../../src/common/clock.js';
import { EmbeddedStore } from '../../src/metadata/embedded-store.js';
import { EtcdStore } from '../../src/metadata/etcd-store.js';
import {
  historyKey,
  historyOps,
  type IsrChangeRecord,
  pruneOps,
  readIsrHistory,
} from '../../src/metadata/isr-history.js';
import { MetadataKeys } from '../../src/metadata/keys.js';
import type { MetadataStore } from '../../src/metadata/store.js';
import { EtcdCluster } from '../support/etcd.js';

const rec = (partitionEpoch: number, timeMs: number): IsrChangeRecord => ({
  timeMs,
  kind: partitionEpoch === 0 ? 'create' : 'shrink',
  cause: partitionEpoch === 0 ? 'topic-created' : 'lag',
  reason: `change ${partitionEpoch}`,
  broker: 1,
  oldLeader: 1,
  leader: 1,
  leaderEpoch: 0,
  partitionEpoch,
  oldIsr: [1, 2, 3],
  newIsr: [1, 2],
});

async function contract(store: MetadataStore, clusterId: string): Promise<void> {
  const keys = new MetadataKeys(clusterId);
  for (let e = 0; e < 5; e++) {
    const ops = historyOps(keys, 'h', 0, rec(e, 1000 + e), 3);
    assert.equal(ops.length, e >= 3 ? 2 : 1);
    await store.txn({ compare: [], success: ops });
  }
  await store.txn({ compare: [], success: historyOps(keys, 'h', 1, rec(0, 1000), 3) });
  assert.ok(!historyKey(keys, 'h', 0, 0).startsWith(keys.root), 'outside the watched root');
  const bounds = { maxEntries: 3, retentionMs: 10_000 };
  let r = await readIsrHistory(store, keys, 'h', null, bounds, 2000);
  assert.deepEqual(
    r.history.get(0)!.map((x) => x.partitionEpoch),
    [2, 3, 4],
  );
  assert.deepEqual(
    r.history.get(1)!.map((x) => x.kind),
    ['create'],
  );
  // A lowered bound applies at once for readers; the prune ops delete the rest.
  r = await readIsrHistory(store, keys, 'h', [0], { maxEntries: 2, retentionMs: 10_000 }, 2000);
  assert.deepEqual(
    r.history.get(0)!.map((x) => x.partitionEpoch),
    [3, 4],
  );
  r = await readIsrHistory(store, keys, 'h', [0], { maxEntries: 3, retentionMs: 1000 }, 2003);
  assert.deepEqual(
    r.history.get(0)!.map((x) => x.partitionEpoch),
    [3, 4],
    'older than the retention',
  );
  // An unreadable value is skipped and counted, not fatal.
  await store.txn({ compare: [], success: [{ type: 'put', key: historyKey(keys, 'h', 0, 9), value: '{' }] });
  r = await readIsrHistory(store, keys, 'h', [0], bounds, 2000);
  assert.equal(r.unreadable, 1);
  const prune = await pruneOps(
    store,
    keys,
    [{ topic: 'h', partition: 0 }],
    { maxEntries: 3, retentionMs: 1000 },
    2003,
  );
  assert.deepEqual(
    prune.map((o) => (o.type === 'delete' ? o.key.slice(-2) : '?')),
    ['02', '09'],
  );
  await store.txn({ compare: [], success: prune });
  r = await readIsrHistory(store, keys, 'h', [0], { maxEntries: 100, retentionMs: 1e12 }, 2003);
  assert.deepEqual(
    r.history.get(0)!.map((x) => x.partitionEpoch),
    [3, 4],
  );
}

describe('ISR history records', () => {
  it('on the embedded store, and kept across a reopen of its data dir', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-isr-history-'));
    try {
      const clock = new ManualClock();
      let store = await EmbeddedStore.open({ clock, dataDir: dir });
      await contract(store, 'emb');
      await store.close();
      store = await EmbeddedStore.open({ clock, dataDir: dir });
      const r = await readIsrHistory(
        store,
        new MetadataKeys('emb'),
        'h',
        null,
        { maxEntries: 100, retentionMs: 1e12 },
        2003,
      );
      assert.deepEqual(
        r.history.get(0)!.map((x) => x.partitionEpoch),
        [3, 4],
      );
      await store.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('on etcd', () => {
    let etcd: EtcdCluster;
    let store: EtcdStore;
    before(async () => {
      etcd = await EtcdCluster.start(1);
      store = new EtcdStore({ endpoints: etcd.endpoints, clock: new SystemClock() });
    });
    after(async () => {
      await store?.close().catch(() => {});
      etcd?.stop();
    });
    it('the same records, bounds and prune ops', async () => {
      await contract(store, `isr-${process.pid}`);
    });
  });
});
