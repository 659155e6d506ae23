import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { MemoryLogger } from '../../src/common/logger.js';
import { ManualScheduler } from '../../src/common/scheduler.js';
import { EmbeddedStore } from '../../src/metadata/embedded-store.js';
import { MetadataKeys } from '../../src/metadata/keys.js';
import { MetadataFollower } from '../../src/metadata/metadata-follower.js';
import { put } from '../../src/metadata/store.js';
import { eventually } from './store-contract.js';

const keys = new MetadataKeys('f');
const topic = (n: number) =>
  JSON.stringify({ topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', internal: false, assignment: [[n]], requestId: null });

async function setup(historyEvents: number) {
  const clock = new ManualClock();
  const scheduler = new ManualScheduler(clock);
  const logger = new MemoryLogger();
  const store = await EmbeddedStore.open({ clock, historyEvents, watchBacklog: 10 });
  await put(store, keys.topic('before'), topic(1));
  const follower = new MetadataFollower(store, keys, scheduler, logger);
  await follower.start();
  return { clock, scheduler, logger, store, follower };
}

/** Writes `n` topics in one burst, so they queue up faster than the watcher drains. */
async function burst(store: EmbeddedStore, n: number): Promise<void> {
  await Promise.all(Array.from({ length: n }, (_, i) => put(store, keys.topic(`t${i}`), topic(i))));
}

describe('MetadataFollower', () => {
  it('resumes after its watch is cancelled for falling behind, missing nothing', async () => {
    const { clock, scheduler, logger, store, follower } = await setup(10_000);
    const seen: bigint[] = [];
    follower.onChange((image) => seen.push(image.revision));
    await burst(store, 30);
    await eventually(() => logger.lines.some((l) => l.includes('overflow')));
    clock.advance(500);
    scheduler.runDue();
    await eventually(() => follower.image().topics.size === 31);
    assert.equal(follower.image().revision, await store.currentRevision());
    follower.close();
    await store.close();
  });

  it('takes a fresh snapshot when the revision to resume from is compacted', async () => {
    const { clock, scheduler, logger, store, follower } = await setup(5);
    await burst(store, 30);
    await eventually(() => logger.lines.some((l) => l.includes('overflow')));
    // More writes push the resume point out of the kept history.
    await burst(store, 30);
    clock.advance(500);
    scheduler.runDue();
    await eventually(() => logger.lines.some((l) => l.includes('compacted')));
    clock.advance(500);
    scheduler.runDue();
    await eventually(() => follower.image().topics.size === 31);
    await put(store, keys.topic('later'), topic(9));
    await eventually(() => follower.image().topics.has('later'));
    follower.close();
    await store.close();
  });

  it('waitForRevision resolves on a change of ours, and after its timeout otherwise', async () => {
    const { clock, scheduler, store, follower } = await setup(10_000);
    const r = await put(store, keys.topic('mine'), topic(2));
    await follower.waitForRevision(r.revision);
    assert.ok(follower.image().topics.has('mine'));
    let done = false;
    void follower.waitForRevision(r.revision + 100n, 1000).then(() => {
      done = true;
    });
    clock.advance(1000);
    scheduler.runDue();
    await eventually(() => done);
    follower.close();
    await store.close();
  });
});
