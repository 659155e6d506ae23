import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import type { FetchRequest } from '../../src/protocol/generated/FetchRequest.js';
import { defaultPartitionData, type FetchResponse } from '../../src/protocol/generated/FetchResponse.js';
import { DEFAULT_FETCHER_CONFIG, fetcherIdFor, ReplicaFetcher } from '../../src/replication/fetcher.js';
import { PartitionFollower } from '../../src/replication/follower.js';
import { ReplicationQuota } from '../../src/replication/quota.js';
import { ReplicationManager } from '../../src/replication/replication-manager.js';
import { makeBatch } from '../storage/helpers.js';
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

test('two fetchers share one follower budget: a throttled partition on a fetcher that long-polls for idle ones still gets its turn', async () => {
  const { dir, cleanup } = tempDir('skiff-fetchers-fair-');
  const ctx = testContext();
  const rate = 100_000;
  const quota = new ReplicationQuota({
    side: 'follower',
    localBrokerId: 2,
    clock: ctx.clock,
    rate: () => rate,
    throttledReplicas: () => '0:2,1:2',
  });
  const next = new Map<number, bigint>([
    [0, 0n],
    [1, 0n],
  ]);
  // The leader: a throttled partition gets whole 1,000-byte batches up to its maxBytes (at least
  // one); a Fetch with nothing to return long-polls for its maxWaitMs (on the manual clock).
  const transport = {
    fetch: (_leader: number, req: FetchRequest): Promise<FetchResponse> => {
      let bytes = 0;
      const responses = req.topics.map((t) => ({
        topic: t.topic,
        topicId: t.topicId,
        partitions: t.partitions.map((p) => {
          let records = Buffer.alloc(0);
          if (p.partition < 2) {
            const chunks: Buffer[] = [];
            let size = 0;
            do {
              const batch = makeBatch({
                baseOffset: next.get(p.partition)!,
                count: 1,
                valueBytes: 930,
                epoch: 1,
              });
              chunks.push(batch);
              size += batch.length;
              next.set(p.partition, next.get(p.partition)! + 1n);
            } while (size + 1000 <= p.partitionMaxBytes);
            records = Buffer.concat(chunks);
            bytes += records.length;
          }
          return {
            ...defaultPartitionData(),
            partitionIndex: p.partition,
            highWatermark: 1_000_000n,
            logStartOffset: 0n,
            records,
          };
        }),
      }));
      const answer = { throttleTimeMs: 0, errorCode: 0, sessionId: 0, nodeEndpoints: [], responses };
      if (bytes > 0) return Promise.resolve(answer);
      return new Promise((resolve) =>
        ctx.scheduler.schedule('long-poll', req.maxWaitMs, () => resolve(answer)),
      );
    },
    leaderOffsets: () => new Promise<never>(() => {}),
  };
  const fetcher = (id: number) =>
    new ReplicaFetcher(
      1,
      {
        localBrokerId: 2,
        clock: ctx.clock,
        logger: ctx.logger,
        scheduler: ctx.scheduler,
        transport,
        brokerEpoch: () => -1n,
        config: () => DEFAULT_FETCHER_CONFIG,
        quota,
      },
      id,
    );
  const follow = (p: number) => {
    const f = new PartitionFollower(
      't',
      p,
      'AAAAAAAAAAAAAAAAAAAAAA',
      openLog(path.join(dir, `t-${p}`), ctx),
      {
        localBrokerId: 2,
        clock: ctx.clock,
        logger: ctx.logger,
      },
    );
    f.makeFollower(1, 1);
    return f;
  };
  try {
    const a = fetcher(0);
    const b = fetcher(1);
    const p0 = follow(0);
    a.addPartition(p0);
    a.addPartition(follow(2)); // unthrottled, nothing to fetch: fetcher a long-polls
    const p1 = follow(1);
    b.addPartition(p1);
    a.start();
    b.start();
    for (let ms = 0; ms < 20_000; ms += 5) {
      ctx.clock.advance(5);
      ctx.scheduler.runDue();
      await settle();
    }
    const sizes = [p0.log.size, p1.log.size];
    const sum = sizes[0]! + sizes[1]!;
    assert.ok(Math.abs(sum - 20 * rate) <= 0.05 * 20 * rate, `sum ${sum} for 20 s at ${rate} B/s`);
    assert.ok(
      sizes.every((x) => x >= 0.3 * sum),
      `each partition gets a share: ${sizes.join(' + ')}`,
    );
    a.stop();
    b.stop();
  } finally {
    cleanup();
  }
});
