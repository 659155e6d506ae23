import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { SystemClock } from '../../src/common/clock.js';
import { EtcdStore } from '../../src/metadata/etcd-store.js';
import { del, put, rangeAll, StoreError, type WatchEvent } from '../../src/metadata/store.js';
import { EtcdCluster } from '../support/etcd.js';
import { eventually, type StoreHarness, storeContract } from './store-contract.js';

/** Runs the contract against a cluster started once for the whole suite. */
function contractOn(name: string, size: number): void {
  let cluster: EtcdCluster;
  let n = 0;
  before(async () => {
    cluster = await EtcdCluster.start(size);
  });
  after(() => cluster?.stop());
  storeContract(name, async (): Promise<StoreHarness> => {
    const clock = new SystemClock();
    const store = new EtcdStore({ endpoints: cluster.endpoints, clock });
    const other = new EtcdStore({ endpoints: [...cluster.endpoints].reverse(), clock });
    return {
      store,
      other,
      prefix: `/test-${process.pid}-${++n}/`,
      leaseTtlMs: 1000,
      letTimePass: (ms) => new Promise((r) => setTimeout(r, ms)),
      close: async () => {
        await store.close();
        await other.close();
      },
    };
  });
}

describe('etcd, one member', () => contractOn('etcd (1 member)', 1));
describe('etcd, three members', () => contractOn('etcd (3 members)', 3));

describe('etcd, three members, one killed', () => {
  let cluster: EtcdCluster;
  before(async () => {
    cluster = await EtcdCluster.start(3);
  });
  after(() => cluster?.stop());

  it('reads, writes, CAS and an open watch keep working after SIGKILL of a member', async () => {
    const clock = new SystemClock();
    const store = new EtcdStore({ endpoints: cluster.endpoints, clock });
    const watcherStore = new EtcdStore({ endpoints: cluster.endpoints, clock });
    try {
      const events: WatchEvent[] = [];
      const start = (await store.currentRevision()) + 1n;
      const w = watcherStore.watch('/kill/', start, {
        onEvents: (e) => events.push(...e),
        onError: () => {},
      });
      for (let i = 0; i < 5; i++) await put(store, `/kill/${i}`, `before-${i}`);
      await eventually(() => events.length === 5);
      cluster.kill(0);
      // The client fails over to the other endpoints; allow a leader election if m0 led.
      await eventually(async () => {
        try {
          await put(store, '/kill/probe', 'x');
          return true;
        } catch {
          return false;
        }
      }, 15_000);
      for (let i = 5; i < 10; i++) await put(store, `/kill/${i}`, `after-${i}`);
      const kv = (await store.get('/kill/9'))!;
      const cas = await store.txn({
        compare: [{ key: kv.key, target: 'mod', modRevision: kv.modRevision }],
        success: [{ type: 'put', key: kv.key, value: 'cas' }],
      });
      assert.equal(cas.succeeded, true);
      await del(store, '/kill/0');
      const all = await rangeAll(store, '/kill/');
      assert.equal(all.kvs.length, 10);
      // The watch saw every change exactly once, in order, across the failover.
      await eventually(() => events.length >= 13, 15_000);
      const revs = events.map((e) => e.modRevision);
      for (let i = 1; i < revs.length; i++) assert.ok(revs[i]! > revs[i - 1]!);
      assert.equal(events[events.length - 1]!.type, 'delete');
      w.close();
    } finally {
      await store.close();
      await watcherStore.close();
    }
  });
});

describe('etcd compaction', () => {
  let cluster: EtcdCluster;
  before(async () => {
    cluster = await EtcdCluster.start(1);
  });
  after(() => cluster?.stop());

  it('a watch or a read from a compacted revision fails with compacted', async () => {
    const store = new EtcdStore({ endpoints: cluster.endpoints, clock: new SystemClock() });
    const raw = new Etcd3({ hosts: cluster.endpoints });
    try {
      const first = await put(store, '/c/a', '1');
      await put(store, '/c/a', '2');
      const last = await put(store, '/c/a', '3');
      await raw.kv.compact({ revision: last.revision.toString(), physical: true });
      await assert.rejects(
        store.range('/c/', { revision: first.revision }),
        (e: unknown) => e instanceof StoreError && e.kind === 'compacted',
      );
      const errors: StoreError[] = [];
      store.watch('/c/', first.revision, { onEvents: () => {}, onError: (e) => errors.push(e) });
      await eventually(() => errors.length === 1);
      assert.equal(errors[0]!.kind, 'compacted');
    } finally {
      raw.close();
      await store.close();
    }
  });
});
