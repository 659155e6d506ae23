/**
 * SkiffDescribeReplication (api key 10000) on a single broker (a cluster of one): advertised in
 * ApiVersions, answering for hosted partitions (the leader of each, with its one replica and
 * history), UNKNOWN_TOPIC_OR_PARTITION for one it does not host; and the Fetch of Kafka's
 * debugging consumer (replica id -2) reading up to the HW. With no follower the observed rates
 * are 0; below they are computed from real ReplicationQuotas on a manual clock.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  brokerReplicationRates,
  observeRates,
  partitionReplicationRates,
  ReplicationRole,
} from '../../src/broker/handlers/skiff-replication.js';
import { ManualClock } from '../../src/common/clock.js';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { ApiVersionsResponse } from '../../src/protocol/generated/ApiVersionsResponse.js';
import { defaultFetchPartition, defaultFetchRequest } from '../../src/protocol/generated/FetchRequest.js';
import type { FetchResponse } from '../../src/protocol/generated/FetchResponse.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import type { SkiffDescribeReplicationResponse } from '../../src/protocol/generated/SkiffDescribeReplicationResponse.js';
import { ReplicationQuota, type ReplicationQuotas } from '../../src/replication/quota.js';
import { batch, createTopic, startBroker, type TestBroker } from './helpers.js';

describe('SkiffDescribeReplication on one broker', () => {
  let b: TestBroker;
  let conn: ClientConnection;
  before(async () => {
    b = await startBroker();
    conn = await b.connect();
    await createTopic(b, conn, 'sr', 2);
    const p = await b.call<ProduceResponse>(conn, 0, 9, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 5000,
      topicData: [{ name: 'sr', partitionData: [{ index: 0, records: batch(5) }] }],
    });
    assert.equal(p.responses[0]!.partitionResponses[0]!.errorCode, 0);
  });
  after(async () => {
    await b.stop();
  });

  it('is advertised in ApiVersions at version 0, far above Kafka keys', async () => {
    const r = await b.call<ApiVersionsResponse>(conn, 18, 3, {
      clientSoftwareName: 't',
      clientSoftwareVersion: '1',
    });
    assert.deepEqual(
      r.apiKeys.find((k) => k.apiKey === 10000),
      { apiKey: 10000, minVersion: 0, maxVersion: 0 },
    );
  });

  it('describes hosted partitions and names the ones it does not host', async () => {
    const r = await b.call<SkiffDescribeReplicationResponse>(conn, 10000, 0, {
      topics: [{ name: 'sr', partitions: [0, 7] }],
      includeHistory: true,
    });
    assert.equal(r.errorCode, 0);
    assert.equal(r.brokerId, 1);
    assert.ok(r.nowMs > 0n);
    const parts = r.topics[0]!.partitions;
    assert.deepEqual(
      parts.map((p) => [p.partitionIndex, p.errorCode]),
      [
        [0, 0],
        [7, 3],
      ],
    );
    const p0 = parts[0]!;
    // A single broker is a cluster of one: it leads its RF-1 partitions through replication.
    assert.equal(p0.role, ReplicationRole.leader);
    assert.deepEqual([p0.leaderId, p0.logStartOffset, p0.logEndOffset, p0.highWatermark], [1, 0n, 5n, 5n]);
    assert.deepEqual([p0.leaderEpoch, p0.partitionEpoch], [0, 0]);
    assert.ok(p0.sizeBytes > 0n);
    assert.deepEqual(p0.isr, [1]);
    assert.deepEqual(
      p0.replicas.map((x) => [x.brokerId, x.logEndOffset, x.inIsr, x.lag]),
      [[1, 5n, true, 0n]],
    );
    // The durable history from the store: the controller's record of the creation.
    assert.deepEqual(
      p0.history.map((h) => [h.kind, h.cause, h.brokerId, h.leaderId, h.leaderEpoch, h.oldIsr, h.newIsr]),
      [['create', 'topic-created', 1, 1, 0, [], [1]]],
    );
    // No followers: no replication bytes measured, no throttle set.
    assert.deepEqual(
      [
        r.leaderReplicationBytesPerSec,
        r.leaderThrottledReplicationBytesPerSec,
        r.followerReplicationBytesPerSec,
        r.followerThrottledReplicationBytesPerSec,
        r.leaderThrottleRate,
        r.followerThrottleRate,
      ],
      [0n, 0n, 0n, 0n, -1n, -1n],
    );
    assert.deepEqual(
      [p0.followerReplicationBytesPerSec, p0.leaderThrottled, p0.followerThrottled],
      [-1n, false, false],
    );
    const all = await b.call<SkiffDescribeReplicationResponse>(conn, 10000, 0, {
      topics: null,
      includeHistory: false,
    });
    assert.deepEqual(
      all.topics.map((t) => [t.name, t.partitions.map((p) => p.partitionIndex)]),
      [['sr', [0, 1]]],
    );
  });

  it("serves Kafka's debugging consumer (replica id -2) up to the HW", async () => {
    const r = await b.call<FetchResponse>(conn, 1, 12, {
      ...defaultFetchRequest(),
      replicaId: -2,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      topics: [
        {
          topic: 'sr',
          topicId: 'AAAAAAAAAAAAAAAAAAAAAA',
          partitions: [
            { ...defaultFetchPartition(), partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 },
          ],
        },
      ],
    });
    const p = r.responses[0]!.partitions[0]!;
    assert.equal(p.errorCode, 0);
    assert.equal(p.highWatermark, 5n);
    assert.ok(p.records !== null && p.records.length > 0);
  });
});

describe('SkiffDescribeReplication rate fields from the replication quotas', () => {
  /** Broker 3's two quotas, with configs a test changes at will (as the dynamic configs). */
  function quotas(clock: ManualClock) {
    const cfg = {
      leaderRate: null as number | null,
      followerRate: null as number | null,
      leaderLists: new Map<string, string>(),
      followerLists: new Map<string, string>(),
    };
    const q: ReplicationQuotas = {
      leader: new ReplicationQuota({
        side: 'leader',
        localBrokerId: 3,
        clock,
        rate: () => cfg.leaderRate,
        throttledReplicas: (t) => cfg.leaderLists.get(t),
      }),
      follower: new ReplicationQuota({
        side: 'follower',
        localBrokerId: 3,
        clock,
        rate: () => cfg.followerRate,
        throttledReplicas: (t) => cfg.followerLists.get(t),
      }),
    };
    return { q, cfg };
  }

  it('broker level: observed bytes/s per side (all and throttled partitions), throttle rates or -1', () => {
    const clock = new ManualClock(1_000_000);
    const { q, cfg } = quotas(clock);
    const idle = brokerReplicationRates(observeRates(q, clock.nowMs()));
    assert.deepEqual(
      [idle.leaderReplicationBytesPerSec, idle.followerReplicationBytesPerSec, idle.leaderThrottleRate],
      [0n, 0n, -1n],
      'measured (0), no throttle (-1)',
    );
    assert.deepEqual(
      brokerReplicationRates(observeRates(undefined, clock.nowMs())).followerThrottleRate,
      -1n,
    );
    cfg.leaderRate = 2_000_000;
    cfg.followerRate = 1_048_576;
    cfg.leaderLists.set('a', '0:3');
    cfg.followerLists.set('b', '*');
    // 5 s: as leader, 100 KB/s of a-0 (throttled) and 50 KB/s of a-1 (not); as follower, 30 KB/s of b-0.
    for (let s = 0; s < 5; s++) {
      q.leader.record('a-0', 100_000, q.leader.isThrottled('a', 0), clock.nowMs(), 1);
      q.leader.record('a-1', 50_000, q.leader.isThrottled('a', 1), clock.nowMs(), 1);
      q.follower.record('b-0', 30_000, q.follower.isThrottled('b', 0), clock.nowMs());
      clock.advance(1000);
    }
    const o = observeRates(q, clock.nowMs());
    const r = brokerReplicationRates(o);
    assert.equal(r.leaderReplicationBytesPerSec, 150_000n);
    assert.equal(r.leaderThrottledReplicationBytesPerSec, 100_000n);
    assert.equal(r.followerReplicationBytesPerSec, 30_000n);
    assert.equal(r.followerThrottledReplicationBytesPerSec, 30_000n);
    assert.equal(r.leaderThrottleRate, 2_000_000n);
    assert.equal(r.followerThrottleRate, 1_048_576n);
  });

  it('partition level: the follower bytes/s in only when following (0 once idle a whole window), each side throttled per its list', () => {
    const clock = new ManualClock(1_000_000);
    const { q, cfg } = quotas(clock);
    cfg.followerRate = 1_048_576;
    cfg.followerLists.set('b', '0:3,1:2');
    cfg.leaderLists.set('b', '1:3');
    for (let s = 0; s < 4; s++) {
      q.follower.record('b-0', 40_000, true, clock.nowMs());
      clock.advance(1000);
    }
    const o = observeRates(q, clock.nowMs());
    assert.deepEqual(partitionReplicationRates(o, 'b', 0, true), {
      followerReplicationBytesPerSec: 40_000n,
      leaderThrottled: false,
      followerThrottled: true,
    });
    assert.deepEqual(partitionReplicationRates(o, 'b', 1, true), {
      followerReplicationBytesPerSec: 0n,
      leaderThrottled: true,
      followerThrottled: false,
    });
    assert.equal(partitionReplicationRates(o, 'b', 0, false).followerReplicationBytesPerSec, -1n);
    assert.deepEqual(partitionReplicationRates(null, 'b', 0, true), {
      followerReplicationBytesPerSec: -1n,
      leaderThrottled: false,
      followerThrottled: false,
    });
    // A partition that began later is averaged over the same span as the side's total: they add up.
    for (let s = 0; s < 2; s++) {
      q.follower.record('b-2', 60_000, false, clock.nowMs());
      clock.advance(1000);
    }
    const both = observeRates(q, clock.nowMs());
    assert.equal(partitionReplicationRates(both, 'b', 2, true).followerReplicationBytesPerSec, 20_000n);
    assert.equal(brokerReplicationRates(both).followerReplicationBytesPerSec, 46_667n);
    assert.equal(brokerReplicationRates(both).followerThrottledReplicationBytesPerSec, 26_667n);
    // Idle for more than the whole window (11 x 1 s): 0, not the stale rate.
    clock.advance(12_000);
    const later = observeRates(q, clock.nowMs());
    assert.equal(partitionReplicationRates(later, 'b', 0, true).followerReplicationBytesPerSec, 0n);
    assert.equal(brokerReplicationRates(later).followerReplicationBytesPerSec, 0n);
  });
});
