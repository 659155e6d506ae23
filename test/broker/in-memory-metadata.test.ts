import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { InMemoryClusterMetadata } from '../../src/metadata/in-memory-metadata.js';
import { NodeFileSystem } from '../../src/storage/fs.js';
import { seededRandomBytes } from './helpers.js';

function metadata(filePath: string | null, seed = 1) {
  const m = new InMemoryClusterMetadata({
    clusterId: 'cluster-a',
    filePath,
    fs: new NodeFileSystem(),
    randomBytes: seededRandomBytes(seed),
    defaultNumPartitions: 1,
    defaultReplicationFactor: 1,
  });
  for (const id of [1, 2, 3]) m.registerBroker({ id, host: '127.0.0.1', port: 9090 + id, rack: null });
  return m;
}

describe('InMemoryClusterMetadata', () => {
  it('assigns replicas round-robin; leader = first replica, ISR = replicas', async () => {
    const m = metadata(null);
    const [r] = await m.controller.createTopics(
      [{ name: 'rr', numPartitions: 4, replicationFactor: 2, configs: {} }],
      false,
    );
    assert.equal(r!.errorCode, 0);
    const t = m.image().topics.get('rr')!;
    assert.deepEqual(
      t.partitions.map((p) => p.replicas),
      [
        [1, 2],
        [2, 3],
        [3, 1],
        [1, 2],
      ],
    );
    for (const p of t.partitions) {
      assert.equal(p.leader, p.replicas[0]);
      assert.deepEqual(p.isr, p.replicas);
    }
    assert.equal(m.image().controllerId, 1);
  });

  it('notifies listeners in revision order, before the controller call resolves', async () => {
    const m = metadata(null);
    const seen: bigint[] = [];
    m.onChange((image, previous) => {
      assert.equal(image.revision, previous.revision + 1n);
      seen.push(image.revision);
    });
    const before = m.image().revision;
    await m.controller.createTopics(
      [{ name: 'a', numPartitions: 1, replicationFactor: 1, configs: {} }],
      false,
    );
    assert.deepEqual(seen, [before + 1n]);
    await m.controller.createPartitions([{ name: 'a', totalCount: 3 }], false);
    assert.equal(m.image().topics.get('a')!.partitions.length, 3);
    await m.controller.deleteTopics(['a']);
    assert.equal(m.image().topics.has('a'), false);
    assert.equal(seen.length, 3);
  });

  it("validates names, counts, assignments and configs with Kafka's error codes", async () => {
    const m = metadata(null);
    const results = await m.controller.createTopics(
      [
        { name: 'bad name', numPartitions: 1, replicationFactor: 1, configs: {} },
        { name: 'zero', numPartitions: 0, replicationFactor: 1, configs: {} },
        { name: 'rf', numPartitions: 1, replicationFactor: 4, configs: {} },
        {
          name: 'asg',
          numPartitions: -1,
          replicationFactor: -1,
          assignments: new Map([[0, [1, 9]]]),
          configs: {},
        },
        { name: 'cfg', numPartitions: 1, replicationFactor: 1, configs: { 'no.such.config': '1' } },
        { name: 'cfg2', numPartitions: 1, replicationFactor: 1, configs: { 'retention.ms': 'soon' } },
        { name: 'ok', numPartitions: 1, replicationFactor: 1, configs: { 'retention.ms': '1000' } },
      ],
      false,
    );
    assert.deepEqual(
      results.map((r) => r.errorCode),
      [17, 37, 38, 39, 40, 40, 0],
    );
    assert.deepEqual(m.image().topicConfigs.get('ok'), { 'retention.ms': '1000' });
    const validateOnly = await m.controller.createTopics(
      [{ name: 'vo', numPartitions: 1, replicationFactor: 1, configs: {} }],
      true,
    );
    assert.equal(validateOnly[0]!.errorCode, 0);
    assert.equal(m.image().topics.has('vo'), false);
  });

  it('persists topics, ids and configs across a restart; brokers register again', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-mem-md-'));
    try {
      const file = path.join(dir, 'md.json');
      const first = metadata(file);
      await first.controller.createTopics(
        [{ name: 'kept', numPartitions: 2, replicationFactor: 3, configs: {} }],
        false,
      );
      await first.controller.alterConfigs(
        { type: 'topic', name: 'kept' },
        [{ name: 'retention.ms', value: '5000' }],
        true,
        false,
      );
      const id = first.image().topics.get('kept')!.topicId;
      const second = new InMemoryClusterMetadata({
        clusterId: 'another-id-ignored',
        filePath: file,
        fs: new NodeFileSystem(),
        randomBytes: seededRandomBytes(2),
        defaultNumPartitions: 1,
        defaultReplicationFactor: 1,
      });
      assert.equal(second.image().clusterId, 'cluster-a');
      assert.equal(second.image().topics.get('kept')!.topicId, id);
      assert.deepEqual(second.image().topics.get('kept')!.partitions[1]!.replicas, [2, 3, 1]);
      assert.deepEqual(second.image().topicConfigs.get('kept'), { 'retention.ms': '5000' });
      assert.equal(second.image().brokers.size, 0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
