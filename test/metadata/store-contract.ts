import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Election } from '../../src/metadata/election.js';
import {
  del,
  type MetadataStore,
  put,
  rangeAll,
  StoreError,
  type StoreWatch,
  type WatchEvent,
} from '../../src/metadata/store.js';

/** What a backend's test file provides to the shared contract suite. */
export interface StoreHarness {
  readonly store: MetadataStore;
  /** A second client of the same data (etcd: another connection; embedded: the same store). */
  readonly other: MetadataStore;
  /** A key prefix no other test uses. */
  readonly prefix: string;
  /** The smallest lease TTL the backend honours exactly enough for tests. */
  readonly leaseTtlMs: number;
  /** Lets `ms` of lease time pass (a manual clock moves, or the test really waits). */
  letTimePass(ms: number): Promise<void>;
  close(): Promise<void>;
}

/** Polls `condition` until true, for at most `timeoutMs` of real time. */
export async function eventually(
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) assert.fail(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function collect(
  store: MetadataStore,
  prefix: string,
  from: bigint,
): { events: WatchEvent[]; errors: StoreError[]; watch: StoreWatch } {
  const events: WatchEvent[] = [];
  const errors: StoreError[] = [];
  const watch = store.watch(prefix, from, {
    onEvents: (batch) => events.push(...batch),
    onError: (e) => errors.push(e),
  });
  return { events, errors, watch };
}

export function storeContract(name: string, open: () => Promise<StoreHarness>): void {
  describe(`MetadataStore contract: ${name}`, () => {
    let h: StoreHarness;
    let p: string;
    beforeEach(async () => {
      h = await open();
      p = h.prefix;
    });
    afterEach(async () => {
      await h.close();
    });

    it('put and get track create/mod revisions and versions', async () => {
      const r1 = await put(h.store, `${p}a`, 'one');
      const r2 = await put(h.store, `${p}a`, 'two');
      assert.ok(r2.revision > r1.revision);
      const kv = await h.other.get(`${p}a`);
      assert.deepEqual(
        { value: kv?.value, c: kv?.createRevision, m: kv?.modRevision, v: kv?.version, l: kv?.lease },
        { value: 'two', c: r1.revision, m: r2.revision, v: 2n, l: 0n },
      );
      await del(h.store, `${p}a`);
      assert.equal(await h.store.get(`${p}a`), null);
      assert.ok((await h.store.currentRevision()) > r2.revision);
    });

    it('ranges by prefix in key order, pages, and reads at an older revision', async () => {
      for (const k of ['c', 'a', 'b']) await put(h.store, `${p}x/${k}`, k);
      await put(h.store, `${p}y`, 'outside');
      const all = await h.store.range(`${p}x/`);
      assert.deepEqual(
        all.kvs.map((kv) => kv.value),
        ['a', 'b', 'c'],
      );
      const page = await h.store.range(`${p}x/`, { limit: 2 });
      assert.equal(page.kvs.length, 2);
      assert.equal(page.more, true);
      const rest = await h.store.range(`${p}x/`, { fromKey: `${page.kvs[1]!.key}\u0000` });
      assert.deepEqual(
        rest.kvs.map((kv) => kv.value),
        ['c'],
      );
      const before = await h.store.currentRevision();
      await put(h.store, `${p}x/a`, 'changed');
      await del(h.store, `${p}x/b`);
      const old = await h.store.range(`${p}x/`, { revision: before });
      assert.deepEqual(
        old.kvs.map((kv) => kv.value),
        ['a', 'b', 'c'],
      );
      const now = await rangeAll(h.store, `${p}x/`);
      assert.deepEqual(
        now.kvs.map((kv) => kv.value),
        ['changed', 'c'],
      );
    });

    it('compare-and-set on mod revision, create revision, value and absence', async () => {
      const k = `${p}cas`;
      const created = await h.store.txn({
        compare: [{ key: k, target: 'absent' }],
        success: [{ type: 'put', key: k, value: 'v1' }],
      });
      assert.equal(created.succeeded, true);
      const again = await h.store.txn({
        compare: [{ key: k, target: 'absent' }],
        success: [{ type: 'put', key: k, value: 'nope' }],
        failure: [{ type: 'put', key: `${p}else`, value: 'ran' }],
      });
      assert.equal(again.succeeded, false);
      assert.equal((await h.store.get(`${p}else`))?.value, 'ran');
      const kv = (await h.store.get(k))!;
      const ok = await h.store.txn({
        compare: [
          { key: k, target: 'mod', modRevision: kv.modRevision },
          { key: k, target: 'create', createRevision: created.revision },
          { key: k, target: 'value', value: 'v1' },
        ],
        success: [{ type: 'put', key: k, value: 'v2' }],
      });
      assert.equal(ok.succeeded, true);
      const stale = await h.store.txn({
        compare: [{ key: k, target: 'mod', modRevision: kv.modRevision }],
        success: [{ type: 'put', key: k, value: 'v3' }],
      });
      assert.equal(stale.succeeded, false);
      assert.equal((await h.store.get(k))?.value, 'v2');
      // A missing key has mod and create revision 0.
      const missing = await h.store.txn({
        compare: [{ key: `${p}missing`, target: 'mod', modRevision: 0n }],
        success: [{ type: 'put', key: `${p}missing`, value: 'made' }],
      });
      assert.equal(missing.succeeded, true);
    });

    it('CAS races: of two writers with the same expected revision exactly one wins, every round', async () => {
      const k = `${p}race`;
      await put(h.store, k, '0');
      for (let round = 0; round < 20; round++) {
        const kv = (await h.store.get(k))!;
        const attempt = (s: MetadataStore, who: string) =>
          s.txn({
            compare: [{ key: k, target: 'mod', modRevision: kv.modRevision }],
            success: [{ type: 'put', key: k, value: `${round}:${who}` }],
          });
        const [a, b] = await Promise.all([attempt(h.store, 'a'), attempt(h.other, 'b')]);
        assert.equal(Number(a.succeeded) + Number(b.succeeded), 1, `round ${round}`);
      }
      // Read-modify-write counters from both clients lose no increment.
      await put(h.store, `${p}counter`, '0');
      const increment = async (s: MetadataStore, times: number) => {
        for (let i = 0; i < times; i++) {
          for (let attempt = 0; attempt < 100; attempt++) {
            const cur = (await s.get(`${p}counter`))!;
            const r = await s.txn({
              compare: [{ key: cur.key, target: 'mod', modRevision: cur.modRevision }],
              success: [{ type: 'put', key: cur.key, value: String(Number(cur.value) + 1) }],
            });
            if (r.succeeded) break;
          }
        }
      };
      await Promise.all([increment(h.store, 15), increment(h.other, 15), increment(h.store, 15)]);
      assert.equal((await h.store.get(`${p}counter`))?.value, '45');
    });

    it('watch delivers every change in revision order with no gaps, and resumes', async () => {
      const start = (await h.store.currentRevision()) + 1n;
      const full = collect(h.other, `${p}w/`, start);
      // Two clients write concurrently, each in sequence, interleaved with writes outside the prefix.
      const writer = async (s: MetadataStore, name: string) => {
        for (let i = 0; i < 30; i++) {
          await put(s, `${p}w/${name}${i % 3}`, String(i));
          if (i % 10 === 9) await del(s, `${p}w/${name}${i % 3}`);
          await put(s, `${p}outside/${name}${i}`, 'x');
        }
      };
      await Promise.all([writer(h.store, 'a'), writer(h.other, 'b')]);
      await eventually(() => full.events.length >= 66);
      await new Promise((r) => setTimeout(r, 20));
      full.watch.close();
      const revs = full.events.map((e) => e.modRevision);
      for (let i = 1; i < revs.length; i++)
        assert.ok(revs[i]! > revs[i - 1]!, 'strictly increasing, one key per txn');
      assert.ok(full.events.every((e) => e.key.startsWith(`${p}w/`)));
      assert.equal(full.events.length, 66);
      // Replaying state from the events gives the current state.
      const state = new Map<string, string>();
      for (const e of full.events) {
        if (e.type === 'put') state.set(e.key, e.value);
        else state.delete(e.key);
      }
      const now = await h.store.range(`${p}w/`);
      assert.deepEqual(new Map(now.kvs.map((kv) => [kv.key, kv.value])), state);
      // Resume from the middle: exactly the tail.
      const mid = full.events[30]!;
      const tail = collect(h.store, `${p}w/`, mid.modRevision + 1n);
      await eventually(() => tail.events.length === full.events.length - 31);
      tail.watch.close();
      assert.deepEqual(
        tail.events.map((e) => e.modRevision),
        revs.slice(31),
      );
      assert.deepEqual(tail.errors, []);
    });

    it('a transaction is one revision: its events share it and arrive together, in op order', async () => {
      // An explicit start: "from now" (0) races with the write on a backend whose watch is
      // created asynchronously (etcd).
      const w = collect(h.store, `${p}t/`, (await h.store.currentRevision()) + 1n);
      const r = await h.store.txn({
        compare: [],
        success: [
          { type: 'put', key: `${p}t/1`, value: 'a' },
          { type: 'put', key: `${p}t/2`, value: 'b' },
        ],
      });
      await h.store.txn({ compare: [], success: [{ type: 'deletePrefix', prefix: `${p}t/` }] });
      await eventually(() => w.events.length === 4);
      w.watch.close();
      assert.deepEqual(
        w.events.map((e) => [e.type, e.key.slice(p.length), e.modRevision === r.revision]),
        [
          ['put', 't/1', true],
          ['put', 't/2', true],
          ['delete', 't/1', false],
          ['delete', 't/2', false],
        ],
      );
    });

    it('leases: keep-alive holds keys, expiry and revocation delete them, watchers see the deletes', async () => {
      const ttl = h.leaseTtlMs;
      const lease = await h.store.grantLease(ttl);
      const kept = await h.store.grantLease(ttl);
      await put(h.store, `${p}l/a`, 'a', lease);
      await put(h.store, `${p}l/b`, 'b', lease);
      await put(h.store, `${p}l/kept`, 'k', kept);
      const w = collect(h.other, `${p}l/`, (await h.other.currentRevision()) + 1n);
      const ttlLeft = await h.store.leaseTtlMs(lease);
      // etcd reports whole seconds left, so a fresh 1 s lease may already show 0.
      assert.ok(ttlLeft >= 0 && ttlLeft <= ttl, `ttl ${ttlLeft}`);
      // Half the TTL, keep-alive of one lease, then past the other's deadline.
      await h.letTimePass(ttl / 2);
      assert.equal(await h.store.keepAlive(kept), true);
      await h.letTimePass(ttl / 2 + 50);
      assert.equal(await h.store.keepAlive(kept), true);
      await eventually(async () => (await h.other.get(`${p}l/a`)) === null, ttl + 3000);
      assert.equal(await h.other.get(`${p}l/b`), null);
      assert.equal((await h.other.get(`${p}l/kept`))?.value, 'k');
      assert.equal(await h.store.keepAlive(lease), false);
      assert.equal(await h.store.leaseTtlMs(lease), -1);
      await eventually(() => w.events.filter((e) => e.type === 'delete').length === 2);
      await h.store.revokeLease(kept);
      assert.equal(await h.other.get(`${p}l/kept`), null);
      await h.store.revokeLease(kept);
      await assert.rejects(put(h.store, `${p}l/c`, 'c', lease), (e: unknown) => e instanceof StoreError);
      w.watch.close();
    });

    it('election: of two candidates exactly one leads; the other takes over when it resigns', async () => {
      const key = `${p}controller`;
      const la = await h.store.grantLease(60_000);
      const lb = await h.other.grantLease(60_000);
      const ea = new Election(h.store, key);
      const eb = new Election(h.other, key);
      const abort = new AbortController();
      let aLeads = false;
      let bLeads = false;
      const pa = ea.campaign('a', la, abort.signal).then((l) => {
        aLeads = true;
        return l;
      });
      const pb = eb.campaign('b', lb, abort.signal).then((l) => {
        bLeads = true;
        return l;
      });
      const first = await Promise.race([pa, pb]);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(Number(aLeads) + Number(bLeads), 1, 'exactly one leader');
      assert.equal((await ea.leader())?.candidateId, first.candidateId);
      const firstElection = first.candidateId === 'a' ? ea : eb;
      await firstElection.resign(first);
      const second = await (first.candidateId === 'a' ? pb : pa);
      assert.notEqual(second.candidateId, first.candidateId);
      assert.ok(second.term > first.term);
      // The old leader's guard no longer holds.
      const stale = await h.store.txn({
        compare: [first.guard()],
        success: [{ type: 'put', key: `${p}x`, value: 'x' }],
      });
      assert.equal(stale.succeeded, false);
      abort.abort();
      await h.store.revokeLease(la);
      await h.other.revokeLease(lb);
    });

    it('fencing: a leader whose lease expires mid-change cannot commit, even if nobody touched the key', async () => {
      const key = `${p}controller`;
      const ttl = h.leaseTtlMs;
      const la = await h.store.grantLease(ttl);
      const election = new Election(h.store, key);
      const leader = await election.campaign('a', la);
      await put(h.store, `${p}partition`, '{"leaderEpoch":1}');
      // The change begins: read the state it will compare against.
      const state = (await h.store.get(`${p}partition`))!;
      // The leader stalls (GC pause, partition) past its lease.
      await h.letTimePass(ttl + 50);
      await eventually(async () => (await election.leader()) === null, ttl + 3000);
      const lb = await h.other.grantLease(60_000);
      const next = await new Election(h.other, key).campaign('b', lb);
      assert.ok(next.term > leader.term);
      const late = await h.store.txn({
        compare: [leader.guard(), { key: state.key, target: 'mod', modRevision: state.modRevision }],
        success: [{ type: 'put', key: state.key, value: '{"leaderEpoch":2}' }],
      });
      assert.equal(late.succeeded, false, 'the old leader is fenced');
      const current = await h.store.txn({
        compare: [next.guard(), { key: state.key, target: 'mod', modRevision: state.modRevision }],
        success: [{ type: 'put', key: state.key, value: '{"leaderEpoch":2}' }],
      });
      assert.equal(current.succeeded, true, 'the new leader is not');
      await h.other.revokeLease(lb);
    });

    it('observe reports the leader and its changes', async () => {
      const key = `${p}observed`;
      const seen: (string | null)[] = [];
      const election = new Election(h.store, key);
      const watch = await election.observe(
        (l) => seen.push(l?.candidateId ?? null),
        () => {},
      );
      const lease = await h.other.grantLease(60_000);
      const l = await new Election(h.other, key).campaign('c', lease);
      await eventually(() => seen.length === 2);
      await new Election(h.other, key).resign(l);
      await eventually(() => seen.length === 3);
      watch.close();
      assert.deepEqual(seen, [null, 'c', null]);
      await h.other.revokeLease(lease);
    });
  });
}
