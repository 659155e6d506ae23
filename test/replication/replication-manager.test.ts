import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import { DEFAULT_FETCHER_CONFIG } from '../../src/replication/fetcher.js';
import { ReplicationManager } from '../../src/replication/replication-manager.js';
import { openLog, state, tempDir, testContext } from './helpers.js';

test('roles follow the partition state: leader, follower of the new leader, offline', () => {
  const { dir, cleanup } = tempDir('skiff-rm-');
  const ctx = testContext();
  const changed: string[] = [];
  const m = new ReplicationManager({
    localBrokerId: 1,
    clock: ctx.clock,
    logger: ctx.logger,
    scheduler: ctx.scheduler,
    transport: {
      fetch: () => new Promise(() => {}),
      leaderOffsets: () => new Promise(() => {}),
    },
    brokerEpoch: () => 7n,
    fetcherConfig: () => DEFAULT_FETCHER_CONFIG,
    replicaLagTimeMaxMs: () => 30_000,
    minInsyncReplicas: () => 1,
    isReplicaIsrEligible: () => true,
    alterPartition: () => new Promise(() => {}),
    onPartitionChange: (key) => changed.push(key),
  });
  try {
    const log = openLog(path.join(dir, 't-0'), ctx);
    m.start();
    assert.equal(m.applyPartitionState(state({ leader: 1, leaderEpoch: 0 }), log, 'x'), 'leader');
    assert.ok(m.leader('t-0')?.isLeader);
    assert.ok(changed.includes('t-0'));
    assert.equal(
      m.applyPartitionState(state({ leader: 2, leaderEpoch: 1, partitionEpoch: 1 }), log, 'x'),
      'follower',
    );
    assert.equal(m.leader('t-0'), undefined);
    assert.equal(m.follower('t-0')?.leaderId, 2);
    assert.equal(m.fetcherFor(2)?.partitionCount, 1);
    assert.equal(
      m.applyPartitionState(state({ leader: 3, leaderEpoch: 2, partitionEpoch: 2 }), log, 'x'),
      'follower',
    );
    assert.equal(m.fetcherFor(2)?.partitionCount, 0, 'moved to the new leader’s fetcher');
    assert.equal(m.fetcherFor(3)?.partitionCount, 1);
    assert.equal(
      m.applyPartitionState(state({ leader: -1, leaderEpoch: 3, partitionEpoch: 3 }), log, 'x'),
      'offline',
    );
    assert.equal(m.follower('t-0'), undefined);
    assert.ok(ctx.scheduler.pendingNames().includes('isr-expiration'));
    m.shutdown();
    assert.ok(!ctx.scheduler.pendingNames().includes('isr-expiration'));
  } finally {
    cleanup();
  }
});
