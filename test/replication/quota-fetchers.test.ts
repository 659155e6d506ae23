import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import type { FetchRequest } from '../../src/protocol/generated/FetchRequest.js';
import { DEFAULT_FETCHER_CONFIG, fetcherIdFor } from '../../src/replication/fetcher.js';
import { ReplicationManager } from '../../src/replication/replication-manager.js';
import { openLog, settle, state, tempDir, testContext } from './helpers.js';

test("fetcherIdFor is Kafka's getFetcherId: abs(31 × Java String.hashCode + partition) mod num.replica.fetchers", () => {
  // Expected values from Java's int arithmetic (String.hashCode overflows for all but 't').
  const cases: [string, number, number[]][] = [
    ['t', 3, [2, 0, 1, 2, 0, 1]],
    ['t', 4, [0, 1, 2, 3, 0, 1]],
    ['d1.rebuild', 3, [1, 2, 0, 1, 2, 0]],
    ['d1.rebuild', 4, [2, 3, 0, 1, 2, 3]],
    ['__consumer_offsets', 4, [3, 2, 1, 0, 3, 2]],
    ['a-very-long-topic-name-for-overflow', 4, [0, 3, 2, 1, 0, 3]],
  ];
  for (const [topic, n, ids] of cases) {
    assert.deepEqual(
      ids.map((_, p) => fetcherIdFor(topic, p, n)),
      ids,
      `${topic} over ${n}`,
    );
  }
  assert.equal(fetcherIdFor('d1.rebuild', 5, 1), 0);
});

test('num.replica.fetchers > 1: partitions of one leader spread over N fetchers by the hash, each with its own Fetch; a changed value regroups them', async () => {
  const { dir, cleanup } = tempDir('skiff-fetchers-');
  const ctx = testContext();
  let n = 3;
  const sent: { leaderId: number; fetcherId: number; partitions: number[] }[] = [];
  const m = new ReplicationManager({
    localBrokerId: 1,
    clock: ctx.clock,
    logger: ctx.logger,
    scheduler: ctx.scheduler,
    transport: {
      fetch: (leaderId: number, req: FetchRequest, fetcherId = 0) => {
        sent.push({
          leaderId,
          fetcherId,
          partitions: req.topics.flatMap((t) => t.partitions.map((p) => p.partition)),
        });
        return new Promise(() => {}); // in flight for ever: one Fetch per fetcher
      },
      leaderOffsets: () => new Promise(() => {}),
    },
    brokerEpoch: () => 7n,
    fetcherConfig: () => DEFAULT_FETCHER_CONFIG,
    replicaLagTimeMaxMs: () => 30_000,
    minInsyncReplicas: () => 1,
    isReplicaIsrEligible: () => true,
    alterPartition: () => new Promise(() => {}),
    numReplicaFetchers: () => n,
  });
  try {
    for (let p = 0; p < 6; p++) {
      const log = openLog(path.join(dir, `d1.rebuild-${p}`), ctx);
      m.applyPartitionState(
        state({ topic: 'd1.rebuild', partition: p, leader: 2, leaderEpoch: 1 }),
        log,
        'x',
      );
    }
    const layout = () =>
      m.fetchersFor(2).map(
        (f) =>
          [
            f.fetcherId,
            f
              .partitions()
              .map((x) => x.partition)
              .sort(),
          ] as const,
      );
    assert.deepEqual(layout(), [
      [0, [2, 5]],
      [1, [0, 3]],
      [2, [1, 4]],
    ]);
    ctx.scheduler.runDue();
    await settle();
    assert.deepEqual(
      sent.map((s) => [s.fetcherId, s.partitions.sort()]).sort(),
      [
        [0, [2, 5]],
        [1, [0, 3]],
        [2, [1, 4]],
      ],
      'one Fetch per fetcher, each with its own partitions',
    );
    n = 1;
    m.maybeResizeFetchers();
    assert.deepEqual(layout(), [[0, [0, 1, 2, 3, 4, 5]]], 'back to one fetcher per leader');
    n = 2;
    m.maybeResizeFetchers();
    assert.deepEqual(layout(), [
      [0, [0, 2, 4]],
      [1, [1, 3, 5]],
    ]);
    // A partition that leaves keeps nothing behind on its fetcher.
    m.removePartition('d1.rebuild-0');
    assert.deepEqual(layout(), [
      [0, [2, 4]],
      [1, [1, 3, 5]],
    ]);
    m.shutdown();
  } finally {
    cleanup();
  }
});
