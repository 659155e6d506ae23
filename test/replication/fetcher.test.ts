import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import type { FetchRequest } from '../../src/protocol/generated/FetchRequest.js';
import { defaultPartitionData, type FetchResponse } from '../../src/protocol/generated/FetchResponse.js';
import {
  DEFAULT_FETCHER_CONFIG,
  ReplicaFetcher,
  type ReplicaTransport,
} from '../../src/replication/fetcher.js';
import { PartitionFollower, type ReplicationEvent } from '../../src/replication/follower.js';
import { makeBatch } from '../storage/helpers.js';
import { openLog, settle, tempDir, testContext } from './helpers.js';

function setup(answer: (req: FetchRequest) => FetchResponse | Error) {
  const { dir, cleanup } = tempDir('skiff-fetcher-');
  const ctx = testContext();
  const requests: FetchRequest[] = [];
  const offsetAsks: string[] = [];
  const events: ReplicationEvent[] = [];
  const transport: ReplicaTransport = {
    fetch: async (_leader, req) => {
      requests.push(req);
      const a = answer(req);
      if (a instanceof Error) throw a;
      return a;
    },
    leaderOffsets: async (_leader, topic, partition) => {
      offsetAsks.push(`${topic}-${partition}`);
      return { logStartOffset: 500n, logEndOffset: 900n };
    },
  };
  const config = { ...DEFAULT_FETCHER_CONFIG, fetchMaxBytes: 1000, responseMaxBytes: 3000, backoffMs: 1000 };
  const fetcher = new ReplicaFetcher(1, {
    localBrokerId: 3,
    clock: ctx.clock,
    logger: ctx.logger,
    scheduler: ctx.scheduler,
    transport,
    brokerEpoch: () => 42n,
    config: () => config,
  });
  const follower = (topic: string) => {
    const log = openLog(path.join(dir, `${topic}-0`), ctx);
    const f = new PartitionFollower(topic, 0, 'AAAAAAAAAAAAAAAAAAAAAA', log, {
      localBrokerId: 3,
      clock: ctx.clock,
      logger: ctx.logger,
      onEvent: (e) => events.push(e),
    });
    f.makeFollower(1, 4);
    return f;
  };
  /** Runs due rounds and lets their promises settle. */
  const step = async () => {
    ctx.scheduler.runDue();
    await settle();
  };
  return { cleanup, ctx, requests, offsetAsks, events, fetcher, follower, step };
}

function response(
  req: FetchRequest,
  fill: (topic: string) => Partial<ReturnType<typeof defaultPartitionData>>,
): FetchResponse {
  return {
    throttleTimeMs: 0,
    errorCode: 0,
    sessionId: 0,
    nodeEndpoints: [],
    responses: req.topics.map((t) => ({
      topic: t.topic,
      topicId: t.topicId,
      partitions: t.partitions.map((p) => ({
        ...defaultPartitionData(),
        partitionIndex: p.partition,
        ...fill(t.topic),
      })),
    })),
  };
}

test('one Fetch carries every partition followed from that leader, with the replica fields and limits', async () => {
  const t = setup((req) =>
    response(req, () => ({
      highWatermark: 3n,
      logStartOffset: 0n,
      records: makeBatch({ count: 3, epoch: 4 }),
    })),
  );
  try {
    const a = t.follower('a');
    const b = t.follower('b');
    t.fetcher.addPartition(a);
    t.fetcher.addPartition(b);
    t.fetcher.start();
    await t.step();
    const req = t.requests[0]!;
    assert.equal(req.replicaId, 3);
    assert.deepEqual(req.replicaState, { replicaId: 3, replicaEpoch: 42n });
    assert.equal(req.maxBytes, 3000);
    assert.deepEqual(
      req.topics.map((x) => [
        x.topic,
        x.partitions[0]!.fetchOffset,
        x.partitions[0]!.partitionMaxBytes,
        x.partitions[0]!.currentLeaderEpoch,
      ]),
      [
        ['a', 0n, 1000, 4],
        ['b', 0n, 1000, 4],
      ],
    );
    assert.equal(a.log.logEndOffset, 3n);
    assert.equal(a.log.highWatermark, 3n);
    assert.equal(a.lastFetchedEpoch, 4);
    await t.step();
    assert.equal(t.requests[1]!.topics[0]!.partitions[0]!.fetchOffset, 3n, 'next fetch from the new LEO');
    assert.equal(t.requests[1]!.topics[0]!.partitions[0]!.lastFetchedEpoch, 4);
    t.fetcher.stop();
  } finally {
    t.cleanup();
  }
});

test('a failed Fetch backs off replica.fetch.backoff.ms before the next one', async () => {
  const t = setup(() => new Error('connection refused'));
  try {
    t.fetcher.addPartition(t.follower('a'));
    t.fetcher.start();
    await t.step();
    assert.equal(t.requests.length, 1);
    t.ctx.clock.advance(999);
    await t.step();
    assert.equal(t.requests.length, 1);
    t.ctx.clock.advance(1);
    await t.step();
    assert.equal(t.requests.length, 2);
    assert.match(t.ctx.logger.lines.join('\n'), /Error in response for fetch request: connection refused/);
    t.fetcher.stop();
  } finally {
    t.cleanup();
  }
});

test('OFFSET_OUT_OF_RANGE asks the leader its offsets and rebuilds when behind its log start', async () => {
  let first = true;
  const t = setup((req) => {
    const errorCode = first ? 1 : 0;
    first = false;
    return response(req, () => ({ errorCode, highWatermark: 900n, logStartOffset: 500n }));
  });
  try {
    const a = t.follower('a');
    a.log.appendAsFollower(makeBatch({ count: 10, epoch: 2 }));
    a.makeFollower(1, 5);
    t.fetcher.addPartition(a);
    t.fetcher.start();
    await t.step();
    assert.deepEqual(t.offsetAsks, ['a-0']);
    assert.equal(a.log.logStartOffset, 500n);
    assert.equal(a.fetchOffset, 500n);
    await t.step();
    assert.equal(t.requests[1]!.topics[0]!.partitions[0]!.fetchOffset, 500n);
    // The rebuild is reported once the first answer after it arrived (here without records).
    assert.equal(t.events[0]?.kind, 'rebuild');
    t.fetcher.stop();
  } finally {
    t.cleanup();
  }
});
