import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { reassign } from '../../src/controller/partition-change.js';
import type { BrokerInfo } from '../../src/metadata/cluster-metadata.js';
import { TestCluster } from './harness.js';

describe('controller: partition reassignment', () => {
  let c: TestCluster;
  afterEach(() => c.close());

  async function setup(): Promise<TestCluster> {
    c = await TestCluster.create();
    for (const id of [1, 2, 3, 4]) await c.startBroker(id);
    const ctl = await c.startController(100);
    await c.settle();
    await ctl.whenActive();
    await c.brokers.get(1)!.controller.createTopics(
      [
        {
          name: 'm',
          numPartitions: -1,
          replicationFactor: -1,
          assignments: new Map([[0, [1, 2, 3]]]),
          configs: {},
        },
      ],
      false,
    );
    await c.settle();
    return c;
  }

  it('moves a replica: adding/removing while the new one catches up, completed when it joins the ISR', async () => {
    await setup();
    const b = c.brokers.get(2)!;
    const r = await b.alterPartitionReassignments([
      { topic: 'm', partitions: [{ partition: 0, replicas: [4, 2, 3] }] },
    ]);
    assert.equal(r.topics[0]!.partitions[0]!.errorCode, 0);
    await c.settle();
    let p = c.partition('m', 0);
    assert.deepEqual(
      [p.replicas, p.addingReplicas, p.removingReplicas, p.isr, p.leader],
      [[4, 2, 3, 1], [4], [1], [1, 2, 3], 1],
    );
    // The leader (1, being removed) proposes the caught-up new replica into the ISR.
    const expand = await c.brokers.get(1)!.alterPartition([
      {
        topic: 'm',
        partitions: [
          {
            partition: 0,
            leaderEpoch: p.leaderEpoch,
            partitionEpoch: p.partitionEpoch,
            newIsr: [1, 2, 3, 4],
          },
        ],
      },
    ]);
    assert.equal(expand.topics[0]!.partitions[0]!.errorCode, 0);
    await c.settle();
    p = c.partition('m', 0);
    assert.deepEqual(
      [p.replicas, p.addingReplicas, p.removingReplicas, p.isr],
      [[4, 2, 3], [], [], [4, 2, 3]],
    );
    assert.deepEqual(
      [p.leader, p.leaderEpoch],
      [4, 1],
      'the removed leader handed over to the first target replica in the ISR',
    );
  });

  it('cancels a move in progress, and refuses a cancel with nothing in progress or a bad target', async () => {
    await setup();
    const b = c.brokers.get(3)!;
    await b.alterPartitionReassignments([
      { topic: 'm', partitions: [{ partition: 0, replicas: [4, 2, 3] }] },
    ]);
    await c.settle();
    const cancel = await b.alterPartitionReassignments([
      { topic: 'm', partitions: [{ partition: 0, replicas: null }] },
    ]);
    assert.equal(cancel.topics[0]!.partitions[0]!.errorCode, 0);
    await c.settle();
    const p = c.partition('m', 0);
    // As in Kafka, cancelling leaves the merged list minus the adding replicas: the target's order,
    // then the replicas that were being removed.
    assert.deepEqual(
      [p.replicas, p.addingReplicas, p.removingReplicas, p.isr, p.leader],
      [[2, 3, 1], [], [], [1, 2, 3], 1],
    );
    const codes = await b.alterPartitionReassignments([
      {
        topic: 'm',
        partitions: [
          { partition: 0, replicas: null },
          { partition: 0, replicas: [1, 9] },
          { partition: 5, replicas: [1] },
        ],
      },
    ]);
    assert.deepEqual(
      codes.topics[0]!.partitions.map((x) => x.errorCode),
      [85, 39, 3],
    );
  });

  it('shrinking the replica set completes at once; a target without an in-sync replica is refused', () => {
    const brokers = new Map<number, BrokerInfo>(
      [1, 2, 3].map((id) => [
        id,
        { id, host: 'h', port: id, endpoints: [], rack: null, epoch: 1n, inControlledShutdown: false },
      ]),
    );
    const view = { brokers, restarted: new Set<number>() };
    const rec = {
      leader: 1,
      leaderEpoch: 0,
      partitionEpoch: 0,
      replicas: [1, 2, 3],
      isr: [1, 2],
      addingReplicas: [],
      removingReplicas: [],
    };
    const shrink = reassign(rec, [2, 3], view);
    assert.deepEqual(
      shrink.next && [shrink.next.replicas, shrink.next.isr, shrink.next.leader, shrink.next.leaderEpoch],
      [[2, 3], [2], 2, 1],
    );
    assert.equal(reassign(rec, [3], view).errorCode, 39);
  });
});
