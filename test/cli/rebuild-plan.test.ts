/**
 * rebuild-plan's decisions as pure functions, without a network: CATCH UP or REBUILD from the
 * leader's and the replica's descriptions, the rate that applies, and the per-broker totals.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  applicableRate,
  latestRebuild,
  needsNothing,
  type PlanTarget,
  planRow,
  planTotals,
} from '../../src/cli/tools/rebuild-plan.js';
import type { ConfigEntry } from '../../src/client/admin.js';
import {
  type DescribeReplicationPartitionResult,
  defaultDescribeReplicationPartitionResult,
  defaultReplicaView,
  defaultSkiffDescribeReplicationResponse,
} from '../../src/protocol/generated/SkiffDescribeReplicationResponse.js';

const target: PlanTarget = { topic: 't', partition: 0, broker: 3, leader: 1 };

function leaderView(
  start: bigint,
  leo: bigint,
  replica: { leo: bigint; bytesToCatchUp: bigint; inIsr?: boolean; observed?: bigint },
): DescribeReplicationPartitionResult {
  return {
    ...defaultDescribeReplicationPartitionResult(),
    role: 0,
    logStartOffset: start,
    logEndOffset: leo,
    replicas: [
      {
        ...defaultReplicaView(),
        brokerId: 3,
        logEndOffset: replica.leo,
        bytesToCatchUp: replica.bytesToCatchUp,
        inIsr: replica.inIsr ?? false,
        observedReplicationBytesPerSec: replica.observed ?? -1n,
      },
    ],
  };
}

function ownView(leo: bigint, size: bigint): DescribeReplicationPartitionResult {
  return { ...defaultDescribeReplicationPartitionResult(), role: 1, logEndOffset: leo, sizeBytes: size };
}

function configs(entries: Record<string, string>): ConfigEntry[] {
  return Object.entries(entries).map(([name, value]) => ({ name, value }) as ConfigEntry);
}

describe('rebuild-plan', () => {
  it('catches up a replica at or past the leader log start, with an ETA at the rate', () => {
    const r = planRow(
      target,
      leaderView(100n, 500n, { leo: 300n, bytesToCatchUp: 2000n, observed: 50n }),
      undefined,
      1000n,
    );
    assert.deepEqual(
      [r.action, r.replicaLogEndOffset, r.bytesToCopy, r.bytesToDiscard, r.etaSeconds, r.observedBytesPerSec],
      ['CATCH UP', 300n, 2000n, 0n, 2, 50],
    );
  });

  it("rebuilds a replica below the leader log start, discarding its own log; the replica's LEO when the leader has none", () => {
    const r = planRow(
      target,
      leaderView(400n, 500n, { leo: -1n, bytesToCatchUp: -1n }),
      ownView(300n, 7777n),
      null,
    );
    assert.deepEqual(
      [r.action, r.replicaLogEndOffset, r.bytesToCopy, r.bytesToDiscard, r.etaSeconds],
      ['REBUILD', 300n, -1n, 7777n, null],
    );
  });

  it('is UNKNOWN without a leader description or any LEO, and LEADER for the leader', () => {
    assert.equal(planRow(target, undefined, ownView(5n, 10n), null).action, 'UNKNOWN');
    assert.equal(planRow(target, undefined, ownView(5n, 10n), null).replicaLogEndOffset, 5n);
    assert.equal(
      planRow(target, leaderView(0n, 9n, { leo: -1n, bytesToCatchUp: -1n }), undefined, null).action,
      'UNKNOWN',
    );
    const self = planRow(
      { ...target, broker: 1 },
      leaderView(0n, 9n, { leo: 9n, bytesToCatchUp: 0n }),
      undefined,
      null,
    );
    assert.deepEqual([self.action, self.inIsr, self.bytesToCopy], ['LEADER', true, 0n]);
  });

  it('takes the lower of the rates that apply, each only when the topic lists the replica', () => {
    const leader = configs({ 'leader.replication.throttled.rate': '1000' });
    const follower = configs({ 'follower.replication.throttled.rate': '600' });
    const both = configs({
      'leader.replication.throttled.replicas': '0:1',
      'follower.replication.throttled.replicas': '*',
    });
    assert.equal(applicableRate(leader, follower, both, target), 600n);
    assert.equal(
      applicableRate(leader, follower, configs({ 'leader.replication.throttled.replicas': '0:1' }), target),
      1000n,
    );
    assert.equal(
      applicableRate(leader, follower, configs({ 'leader.replication.throttled.replicas': '0:2' }), target),
      null,
    );
    assert.equal(
      applicableRate(
        configs({ 'leader.replication.throttled.rate': '9223372036854775807' }),
        null,
        both,
        target,
      ),
      null,
      'Long.MAX_VALUE is unlimited',
    );
  });

  it('totals per copying broker: all bytes, the throttled ones at the lowest rate, the unknown', () => {
    const rows = [
      planRow(target, leaderView(0n, 9n, { leo: 1n, bytesToCatchUp: 100n }), undefined, 50n),
      planRow(
        { ...target, partition: 1 },
        leaderView(0n, 9n, { leo: 1n, bytesToCatchUp: 30n }),
        undefined,
        null,
      ),
      planRow({ ...target, partition: 2 }, undefined, undefined, null),
      planRow({ ...target, broker: 1 }, leaderView(0n, 9n, { leo: 9n, bytesToCatchUp: 0n }), undefined, null),
    ];
    assert.deepEqual([...planTotals(rows)], [[3, { bytes: 130n, throttled: 100n, rate: 50n, unknown: 1 }]]);
  });

  it('leaves out what needs no copy: the leader, and a replica caught up to the leader LEO', () => {
    const caughtUp = planRow(
      target,
      leaderView(0n, 500n, { leo: 500n, bytesToCatchUp: 0n, inIsr: true }),
      undefined,
      null,
    );
    const behind = planRow(target, leaderView(0n, 500n, { leo: 400n, bytesToCatchUp: 10n }), undefined, null);
    const leader = planRow(
      { ...target, broker: 1 },
      leaderView(0n, 500n, { leo: 500n, bytesToCatchUp: 0n }),
      undefined,
      null,
    );
    const unknown = planRow(target, undefined, undefined, null);
    assert.deepEqual([caughtUp, behind, leader, unknown].map(needsNothing), [true, false, true, false]);
  });

  it('shows a rebuild in progress: REBUILDING while the rebuild its broker logged has not brought it back into the ISR', () => {
    const event = (timeMs: bigint, topic: string, partition: number, bytesDiscarded: number) => ({
      timeMs,
      event: 'rebuild',
      level: 'WARN',
      message: 'Restarting partition ...',
      fieldsJson: JSON.stringify({ event: 'rebuild', topic, partition, bytesDiscarded }),
    });
    const resp = {
      ...defaultSkiffDescribeReplicationResponse(),
      events: [
        event(100n, 't', 0, 10),
        event(200n, 't', 1, 20),
        event(300n, 't', 0, 30),
        { ...event(400n, 't', 0, 40), event: 'truncation' },
      ],
    };
    assert.deepEqual(latestRebuild(resp, 't', 0), { timeMs: 300, bytesDiscarded: 30 });
    assert.equal(latestRebuild(resp, 't', 2), null);
    assert.equal(latestRebuild(new Error('down'), 't', 0), null);
    const rebuilt = latestRebuild(resp, 't', 0);
    const copying = planRow(
      target,
      leaderView(400n, 500n, { leo: 450n, bytesToCatchUp: 900n }),
      undefined,
      null,
      rebuilt,
    );
    assert.deepEqual(
      [copying.action, copying.rebuildingSinceMs, copying.bytesToCopy],
      ['REBUILDING', 300, 900n],
    );
    const back = planRow(
      target,
      leaderView(400n, 500n, { leo: 500n, bytesToCatchUp: 0n, inIsr: true }),
      undefined,
      null,
      rebuilt,
    );
    assert.deepEqual([back.action, back.rebuildingSinceMs, needsNothing(back)], ['CATCH UP', null, true]);
  });
});
