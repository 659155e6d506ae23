/**
 * The fetcher hands each processed Fetch response back to its transport (ReplicaTransport.release)
 * only after the records are in the follower's log, so the transport may reuse the memory they
 * were read into (the broker's transport assembles responses in a FramePool).
 */
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import { defaultPartitionData, type FetchResponse } from '../../src/protocol/generated/FetchResponse.js';
import { DEFAULT_FETCHER_CONFIG, ReplicaFetcher } from '../../src/replication/fetcher.js';
import { PartitionFollower } from '../../src/replication/follower.js';
import { makeBatch } from '../storage/helpers.js';
import { openLog, settle, tempDir, testContext } from './helpers.js';

test('each response is released once, after its records were appended', async () => {
  const { dir, cleanup } = tempDir('skiff-fetcher-release-');
  const ctx = testContext();
  const sent: FetchResponse[] = [];
  const released: { response: FetchResponse; leo: bigint }[] = [];
  let follower: PartitionFollower | undefined;
  let next = 0n;
  const fetcher = new ReplicaFetcher(1, {
    localBrokerId: 3,
    clock: ctx.clock,
    logger: ctx.logger,
    scheduler: ctx.scheduler,
    brokerEpoch: () => 42n,
    config: () => DEFAULT_FETCHER_CONFIG,
    transport: {
      fetch: async (_leader, req) => {
        const records = makeBatch({ baseOffset: next, count: 2, epoch: 4 });
        next += 2n;
        const r: FetchResponse = {
          throttleTimeMs: 0,
          errorCode: 0,
          sessionId: 0,
          nodeEndpoints: [],
          responses: req.topics.map((t) => ({
            topic: t.topic,
            topicId: t.topicId,
            partitions: [{ ...defaultPartitionData(), highWatermark: next, logStartOffset: 0n, records }],
          })),
        };
        sent.push(r);
        return r;
      },
      leaderOffsets: async () => ({ logStartOffset: 0n, logEndOffset: 0n }),
      release: (response) => released.push({ response, leo: follower!.log.logEndOffset }),
    },
  });
  try {
    const log = openLog(path.join(dir, 't-0'), ctx);
    follower = new PartitionFollower('t', 0, 'AAAAAAAAAAAAAAAAAAAAAA', log, {
      localBrokerId: 3,
      clock: ctx.clock,
      logger: ctx.logger,
    });
    follower.makeFollower(1, 4);
    fetcher.addPartition(follower);
    fetcher.start();
    for (let i = 0; i < 3; i++) {
      ctx.scheduler.runDue();
      await settle();
    }
    assert.ok(sent.length >= 3, `${sent.length} fetches`);
    assert.equal(released.length, sent.length, 'every response released');
    released.forEach((r, i) => {
      assert.equal(r.response, sent[i], 'in order, the same response');
      assert.equal(r.leo, BigInt(2 * (i + 1)), 'after its records were appended');
    });
    fetcher.stop();
    log.close();
  } finally {
    cleanup();
  }
});
