import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BrokerServices } from '../../src/broker/handler-context.js';
import { controllerIdForClients } from '../../src/broker/handlers/cluster.js';
import { SeededRandom } from '../../src/common/random.js';
import type { BrokerInfo, MetadataImage } from '../../src/metadata/cluster-metadata.js';

function imageOf(brokerIds: readonly number[], controllerId: number): MetadataImage {
  const brokers = new Map<number, BrokerInfo>(
    brokerIds.map((id) => [
      id,
      {
        id,
        host: '127.0.0.1',
        port: 9000 + id,
        endpoints: [],
        rack: null,
        epoch: 1n,
        inControlledShutdown: false,
      },
    ]),
  );
  return {
    clusterId: 'c',
    revision: 1n,
    controllerId,
    brokers,
    topics: new Map(),
    topicConfigs: new Map(),
    brokerConfigs: new Map(),
  };
}

test('clients are told the active controller, or a random live broker while none is live (KIP-590), never -1 while a broker lives', () => {
  const random = new SeededRandom(3);
  const services = { randomInt: (n: number) => random.int(n) } as unknown as BrokerServices;
  assert.equal(controllerIdForClients(services, imageOf([1, 2, 3], 2)), 2);
  // No controller elected yet (a broker answering right after its ready line), or the controller's
  // broker is not live: a live broker — KafkaJS's admin gives up at once on "Broker -1 not found".
  for (const controllerId of [-1, 4]) {
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++)
      seen.add(controllerIdForClients(services, imageOf([1, 2, 3], controllerId)));
    assert.deepEqual([...seen].sort(), [1, 2, 3]);
  }
  // No live broker: -1 (MetadataResponse.NO_CONTROLLER_ID).
  assert.equal(controllerIdForClients(services, imageOf([], 1)), -1);
});
