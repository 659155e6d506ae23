/**
 * `skiff replication-rate`'s pure parts: merging every broker's SkiffDescribeReplication answer into
 * broker lines and per-replica lines (the leader's bytes/s to each follower, each follower's
 * bytes/s in with the leader's view of its lag), the text lines (raw bytes/s and MiB/s, none for
 * an unset throttle, n/a when not measured), and its usage errors as one stderr line.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  collectRates,
  formatBrokerRates,
  formatRate,
  formatReplicaRate,
} from '../../src/cli/tools/replication-rate.js';
import {
  defaultDescribeReplicationPartitionResult,
  defaultReplicaView,
  defaultSkiffDescribeReplicationResponse,
  type SkiffDescribeReplicationResponse,
} from '../../src/protocol/generated/SkiffDescribeReplicationResponse.js';
import { skiff } from './in-process.js';

/** Broker 1 leads t-0 (followers 2 and 3), broker 2 follows it and throttles it; broker 3 fails. */
function answers(): Map<number, SkiffDescribeReplicationResponse | Error> {
  const leader: SkiffDescribeReplicationResponse = {
    ...defaultSkiffDescribeReplicationResponse(),
    brokerId: 1,
    leaderReplicationBytesPerSec: 1_048_576n,
    leaderThrottledReplicationBytesPerSec: 1_000_000n,
    followerReplicationBytesPerSec: 0n,
    followerThrottledReplicationBytesPerSec: 0n,
    leaderThrottleRate: 1_048_576n,
    followerThrottleRate: -1n,
    topics: [
      {
        name: 't',
        partitions: [
          {
            ...defaultDescribeReplicationPartitionResult(),
            partitionIndex: 0,
            role: 0,
            leaderId: 1,
            leaderThrottled: true,
            replicas: [
              { ...defaultReplicaView(), brokerId: 1, lag: 0n },
              { ...defaultReplicaView(), brokerId: 2, lag: 500n, observedReplicationBytesPerSec: 1_000_000n },
              { ...defaultReplicaView(), brokerId: 3, lag: -1n, observedReplicationBytesPerSec: -1n },
            ],
          },
        ],
      },
    ],
  };
  const follower: SkiffDescribeReplicationResponse = {
    ...defaultSkiffDescribeReplicationResponse(),
    brokerId: 2,
    leaderReplicationBytesPerSec: 0n,
    leaderThrottledReplicationBytesPerSec: 0n,
    followerReplicationBytesPerSec: 999_000n,
    followerThrottledReplicationBytesPerSec: 999_000n,
    leaderThrottleRate: -1n,
    followerThrottleRate: 2_097_152n,
    topics: [
      {
        name: 't',
        partitions: [
          {
            ...defaultDescribeReplicationPartitionResult(),
            partitionIndex: 0,
            role: 1,
            leaderId: 1,
            followerReplicationBytesPerSec: 999_000n,
            followerThrottled: true,
          },
          { ...defaultDescribeReplicationPartitionResult(), partitionIndex: 1, errorCode: 3 },
        ],
      },
    ],
  };
  return new Map<number, SkiffDescribeReplicationResponse | Error>([
    [2, follower],
    [1, leader],
    [3, new Error('connection refused')],
  ]);
}

describe('skiff replication-rate, pure parts', () => {
  it('one line per answering broker, one per replica and side; the follower line carries the leader-seen lag', () => {
    const { brokers, replicas } = collectRates(answers());
    assert.deepEqual(
      brokers.map((b) => [
        b.broker,
        b.leaderOut.bytesPerSec,
        b.leaderOut.throttleRate,
        b.followerIn.throttleRate,
      ]),
      [
        [1, 1_048_576, 1_048_576, null],
        [2, 0, null, 2_097_152],
      ],
    );
    assert.deepEqual(
      replicas.map((r) => [r.replica, r.role, r.leader, r.bytesPerSec, r.throttled, r.lag]),
      [
        [2, 'leader', 1, 1_000_000, true, 500],
        [2, 'follower', 1, 999_000, true, 500],
        [3, 'leader', 1, null, true, null],
      ],
    );
  });

  it('text lines: raw bytes/s and MiB/s, none for an unset throttle, n/a when not measured', () => {
    const { brokers, replicas } = collectRates(answers());
    assert.equal(formatRate(1_572_864), '1572864 B/s (1.50 MiB/s)');
    assert.equal(
      formatBrokerRates(brokers[0]!),
      'Broker: 1\tLeaderOut: 1048576 B/s (1.00 MiB/s)\tLeaderOutThrottled: 1000000 B/s (0.95 MiB/s)\tLeaderThrottleRate: 1048576 B/s (1.00 MiB/s)\tFollowerIn: 0 B/s (0.00 MiB/s)\tFollowerInThrottled: 0 B/s (0.00 MiB/s)\tFollowerThrottleRate: none',
    );
    assert.equal(
      formatReplicaRate(replicas[1]!),
      'Topic: t\tPartition: 0\tLeader: 1\tReplica: 2\tSide: follower-in\tRate: 999000 B/s (0.95 MiB/s)\tThrottled: yes\tLag: 500',
    );
    assert.equal(
      formatReplicaRate(replicas[2]!),
      'Topic: t\tPartition: 0\tLeader: 1\tReplica: 3\tSide: leader-out\tRate: n/a\tThrottled: yes\tLag: unknown',
    );
  });

  it('usage errors are one line on stderr, exit 2', async () => {
    for (const [args, msg] of [
      [['--broker', '1'], /missing required argument --bootstrap-server/],
      [['--bootstrap-server', '127.0.0.1:1', '--broker', 'x'], /--broker expects an integer, got 'x'/],
      [['--bootstrap-server', '127.0.0.1:1', '--broker', '-1'], /--broker expects a broker id ≥ 0/],
      [['--bootstrap-server', '127.0.0.1:1', '--rate'], /unknown option '--rate'/],
    ] as const) {
      const r = await skiff(['replication-rate', ...args]);
      assert.equal(r.status, 2, r.stderr);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr.split('\n').filter((l) => l !== '').length, 1, r.stderr);
      assert.match(r.stderr, /^skiff replication-rate: /);
      assert.match(r.stderr, msg);
    }
  });
});
