import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ImageBuilder } from '../../src/metadata/image-builder.js';
import { MetadataKeys } from '../../src/metadata/keys.js';
import type { WatchEvent } from '../../src/metadata/store.js';

const keys = new MetadataKeys('c1');
let rev = 10n;
function put(key: string, value: unknown, createRevision?: bigint): WatchEvent {
  rev++;
  return {
    type: 'put',
    key,
    value: JSON.stringify(value),
    modRevision: rev,
    createRevision: createRevision ?? rev,
    lease: 0n,
  };
}
function del(key: string): WatchEvent {
  rev++;
  return { type: 'delete', key, value: '', modRevision: rev, createRevision: 0n, lease: 0n };
}
const partition = (leader: number, isr: number[]) => ({
  leader,
  leaderEpoch: 0,
  partitionEpoch: 0,
  replicas: [1, 2],
  isr,
  addingReplicas: [],
  removingReplicas: [],
});

describe('MetadataKeys', () => {
  it('parses every kind of key and ignores the rest', () => {
    assert.deepEqual(keys.parse('/skiff/c1/brokers/3'), { kind: 'broker', id: 3 });
    assert.deepEqual(keys.parse('/skiff/c1/partitions/a.b-c/12'), {
      kind: 'partition',
      topic: 'a.b-c',
      partition: 12,
    });
    assert.deepEqual(keys.parse('/skiff/c1/configs/brokers/<default>'), {
      kind: 'brokerConfig',
      entity: '<default>',
    });
    assert.deepEqual(keys.parse('/skiff/c1/configs/topics/t'), { kind: 'topicConfig', name: 't' });
    assert.deepEqual(keys.parse('/skiff/c1/controller'), { kind: 'controller' });
    assert.equal(keys.parse('/skiff/c1/requests/1-a-1'), null);
    assert.equal(keys.parse('/skiff/c2/brokers/1'), null);
    assert.equal(keys.parse('/skiff/c1/brokers/x'), null);
    assert.throws(() => new MetadataKeys('a/b'));
  });
});

describe('ImageBuilder', () => {
  it('applies events in revision order; images are immutable and share unchanged topics', () => {
    const b = new ImageBuilder(keys);
    b.load([], 10n);
    b.apply([
      put(keys.broker(1), { host: 'h', port: 1, rack: null, incarnation: 'a' }),
      put(keys.broker(2), { host: 'h', port: 2, rack: 'r', incarnation: 'b' }),
      put(keys.topic('t'), {
        topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
        internal: false,
        assignment: [
          [1, 2],
          [2, 1],
        ],
        requestId: null,
      }),
      put(keys.topic('u'), {
        topicId: 'AAAAAAAAAAAAAAAAAAAAAg',
        internal: false,
        assignment: [[1, 2]],
        requestId: null,
      }),
      put(keys.partition('t', 0), partition(1, [1, 2])),
      put(keys.partition('u', 0), partition(1, [1])),
      put(keys.controller, 7),
      put(keys.topicConfig('t'), { 'retention.ms': '5' }),
    ]);
    const first = b.image();
    assert.equal(first.controllerId, 7);
    assert.equal(first.brokers.get(2)!.rack, 'r');
    assert.equal(first.brokers.get(1)!.epoch, 11n);
    assert.deepEqual(first.topics.get('t')!.partitions[0]!.isr, [1, 2]);
    // Partition 1 of t has no key yet: shown leaderless with its assigned replicas.
    assert.deepEqual(
      [first.topics.get('t')!.partitions[1]!.leader, first.topics.get('t')!.partitions[1]!.replicas],
      [-1, [2, 1]],
    );
    assert.deepEqual(first.topicConfigs.get('t'), { 'retention.ms': '5' });
    const stale = put(keys.partition('t', 0), partition(2, [2]));
    b.apply([put(keys.partition('t', 0), partition(1, [1])), put(keys.shutdown(2), '1')]);
    // An event at or below the image's revision is ignored.
    assert.equal(b.apply([stale]), false);
    const second = b.image();
    assert.deepEqual(second.topics.get('t')!.partitions[0]!.isr, [1]);
    assert.deepEqual(first.topics.get('t')!.partitions[0]!.isr, [1, 2], 'the old image is unchanged');
    assert.equal(second.topics.get('u'), first.topics.get('u'), 'unchanged topics are shared');
    assert.equal(second.brokers.get(2)!.inControlledShutdown, true);
    assert.equal(b.modRevision(keys.partition('t', 0)), second.revision - 1n);
    b.apply([
      del(keys.topic('t')),
      del(keys.partition('t', 0)),
      del(keys.topicConfig('t')),
      del(keys.broker(1)),
      del(keys.controller),
    ]);
    const third = b.image();
    assert.equal(third.topics.has('t'), false);
    assert.equal(third.topicConfigs.has('t'), false);
    assert.equal(third.brokers.has(1), false);
    assert.equal(third.controllerId, -1);
    assert.equal(third.revision, rev);
  });
});

describe('ImageBuilder identity', () => {
  it('keeps the brokers and config maps of the previous image when they did not change', () => {
    const b = new ImageBuilder(keys);
    b.load([], 100n);
    rev = 100n;
    b.apply([
      put(keys.broker(1), { host: 'h', port: 1, rack: null, incarnation: 'a' }),
      put(keys.brokerConfig('<default>'), { a: '1' }),
    ]);
    const one = b.image();
    b.apply([
      put(keys.topic('t'), {
        topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
        internal: false,
        assignment: [[1]],
        requestId: null,
      }),
    ]);
    const two = b.image();
    assert.equal(two.brokers, one.brokers);
    assert.equal(two.brokerConfigs, one.brokerConfigs);
    assert.equal(two.topicConfigs, one.topicConfigs);
    b.apply([put(keys.brokerConfig('1'), { b: '2' })]);
    assert.notEqual(b.image().brokerConfigs, two.brokerConfigs);
  });
});
