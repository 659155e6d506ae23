import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { TestCluster } from './harness.js';

describe('a restarted cluster on the persisted embedded store', () => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-restart-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps its topics, ids and configs; every partition gets a leader again once the brokers are back', async () => {
    const first = await TestCluster.create(dir);
    for (const id of [1, 2, 3]) await first.startBroker(id);
    const ctl = await first.startController(1);
    await first.settle();
    await ctl.whenActive();
    const b = first.brokers.get(1)!;
    const [t] = await b.controller.createTopics(
      [{ name: 'kept', numPartitions: 3, replicationFactor: 3, configs: { 'retention.ms': '1234' } }],
      false,
    );
    await b.controller.alterConfigs(
      { type: 'broker', id: '' },
      [{ name: 'replica.lag.time.max.ms', value: '5000' }],
      true,
      false,
    );
    await first.settle();
    const revisionBefore = await first.store.currentRevision();
    await first.close();

    const second = await TestCluster.create(dir);
    assert.ok((await second.store.currentRevision()) > revisionBefore, 'revisions continue');
    for (const id of [1, 2, 3]) await second.startBroker(id);
    const ctl2 = await second.startController(1);
    await second.settle();
    await ctl2.whenActive();
    await second.settle();
    const image = second.image();
    assert.equal(image.topics.get('kept')!.topicId, t!.topicId);
    assert.deepEqual(image.topicConfigs.get('kept'), { 'retention.ms': '1234' });
    assert.deepEqual(image.brokerConfigs.get('<default>'), { 'replica.lag.time.max.ms': '5000' });
    for (const p of image.topics.get('kept')!.partitions) {
      assert.ok(p.leader > 0, `partition ${p.partition} has a leader`);
      assert.ok(p.isr.includes(p.leader));
    }
    await second.close();
  });
});
