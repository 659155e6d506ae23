/**
 * `skiff transactions` against a real `skiff broker` child process: describe-producers reads the
 * partition leader's producer state through DescribeProducers (API 61) and prints Kafka's table.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { formatProducers, prettyTable } from '../../src/cli/tools/transactions.js';
import { KafkaClient } from '../../src/client/kafka-client.js';
import { Producer } from '../../src/client/producer.js';
import { parseBootstrap, systemRuntime } from '../../src/client/runtime.js';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';
import { skiff } from './in-process.js';

describe('skiff transactions describe-producers', () => {
  let broker: BrokerProcess;
  let producer = { producerId: -1n, producerEpoch: -1 };
  const txn = (...args: string[]) => skiff(['transactions', '--bootstrap-server', broker.bootstrap, ...args]);
  before(async () => {
    broker = await startBrokerProcess();
    const bs = ['--bootstrap-server', broker.bootstrap];
    const created = await skiff(['topics', ...bs, '--create', '--topic', 'orders', '--partitions', '2']);
    assert.equal(created.status, 0, created.stderr);
    const client = new KafkaClient({
      bootstrap: parseBootstrap(broker.bootstrap),
      clientId: 'test',
      runtime: systemRuntime(),
    });
    try {
      const p = new Producer(client, { idempotence: true, acks: -1 });
      for (let i = 0; i < 3; i++) {
        await p.produce({
          topic: 'orders',
          partition: 0,
          key: null,
          value: Buffer.from(`v${i}`),
          timestampMs: 1_700_000_000_000 + i,
        });
        await p.flush();
      }
      producer = p.producerIdAndEpoch;
    } finally {
      client.close();
    }
  });
  after(async () => {
    await broker?.stop();
  });

  it("prints the leader's producers of a partition in Kafka's table", async () => {
    const r = await txn('describe-producers', '--topic', 'orders', '--partition', '0');
    assert.equal(r.status, 0, r.stderr);
    assert.ok(producer.producerId >= 0n);
    assert.deepEqual(
      r.stdout.split('\n').slice(0, -1),
      formatProducers([
        {
          producerId: producer.producerId,
          producerEpoch: producer.producerEpoch,
          coordinatorEpoch: -1,
          lastSequence: 2,
          lastTimestamp: 1_700_000_000_002n,
          currentTxnStartOffset: -1n,
        },
      ]),
    );
    // The same replica, asked by broker id.
    const byId = await txn('describe-producers', '--topic', 'orders', '--partition', '0', '--broker-id', '1');
    assert.equal(byId.stdout, r.stdout);
    const empty = await txn('describe-producers', '--topic', 'orders', '--partition', '1');
    assert.equal(empty.status, 0, empty.stderr);
    assert.equal(empty.stdout, `${formatProducers([]).join('\n')}\n`, 'the headers alone');
  });

  it("lays the table out as Kafka's prettyPrintTable: cells padded to the widest, each followed by a tab", () => {
    assert.deepEqual(prettyTable(['A', 'Bee'], [['long', 'x']]), ['A   \tBee\t', 'long\tx  \t']);
    assert.deepEqual(formatProducers([]), [
      'ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\tCurrentTransactionStartOffset\t',
    ]);
  });

  it('fails with one line for a partition that does not exist and for bad usage', async () => {
    const unknown = await txn('describe-producers', '--topic', 'nope', '--partition', '0');
    assert.equal(unknown.status, 1);
    assert.match(
      unknown.stderr,
      /^skiff transactions: Failed to describe producers for partition nope-0 on leader: /,
    );
    assert.equal(unknown.stderr.trimEnd().split('\n').length, 1);
    const noPartition = await txn('describe-producers', '--topic', 'orders');
    assert.equal(noPartition.status, 2);
    assert.match(noPartition.stderr, /--partition/);
    const badCommand = await txn('abort-everything');
    assert.equal(badCommand.status, 2);
    assert.match(badCommand.stderr, /invalid choice: 'abort-everything'/);
  });
});
