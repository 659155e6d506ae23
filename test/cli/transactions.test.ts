/**
 * `skiff transactions` against a real `skiff broker` child process (describe-producers, and list,
 * describe, find-hanging and abort over a KafkaJS transaction left open), and against a scripted
 * peer for answers a real broker does not readily give (a hanging transaction, errors).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import { formatProducers, prettyTable, runTransactions } from '../../src/cli/tools/transactions.js';
import { KafkaClient } from '../../src/client/kafka-client.js';
import { Producer } from '../../src/client/producer.js';
import { parseBootstrap, systemRuntime } from '../../src/client/runtime.js';
import { ManualClock } from '../../src/common/clock.js';
import type { DescribeProducersRequest } from '../../src/protocol/generated/DescribeProducersRequest.js';
import type { DescribeTransactionsRequest } from '../../src/protocol/generated/DescribeTransactionsRequest.js';
import { defaultTransactionState as defaultDescribeTransactionsState } from '../../src/protocol/generated/DescribeTransactionsResponse.js';
import { defaultFindCoordinatorResponse } from '../../src/protocol/generated/FindCoordinatorResponse.js';
import type { ListTransactionsRequest } from '../../src/protocol/generated/ListTransactionsRequest.js';
import type { WriteTxnMarkersRequest } from '../../src/protocol/generated/WriteTxnMarkersRequest.js';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';
import { type FakeBroker, type Handler, startFakeBroker } from './fake-broker.js';
import { skiff } from './in-process.js';

describe('skiff transactions against a broker', () => {
  let broker: BrokerProcess;
  let producer = { producerId: -1n, producerEpoch: -1 };
  const tool = (...args: string[]) =>
    skiff(['transactions', '--bootstrap-server', broker.bootstrap, ...args]);
  before(async () => {
    broker = await startBrokerProcess([
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'transaction.state.log.num.partitions=2',
    ]);
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
    const r = await tool('describe-producers', '--topic', 'orders', '--partition', '0');
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
    const byId = await tool(
      'describe-producers',
      '--topic',
      'orders',
      '--partition',
      '0',
      '--broker-id',
      '1',
    );
    assert.equal(byId.stdout, r.stdout);
    const empty = await tool('describe-producers', '--topic', 'orders', '--partition', '1');
    assert.equal(empty.status, 0, empty.stderr);
    assert.equal(empty.stdout, `${formatProducers([]).join('\n')}\n`, 'the headers alone');
  });

  it("lays the table out as Kafka's prettyPrintTable: cells padded to the widest, each followed by a tab", () => {
    assert.deepEqual(prettyTable(['A', 'Bee'], [['long', 'x']]), ['A   \tBee\t', 'long\tx  \t']);
    assert.deepEqual(formatProducers([]), [
      'ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\tCurrentTransactionStartOffset\t',
    ]);
  });

  it('lists, describes and aborts an open transaction of a real transactional producer', async () => {
    const kafka = new Kafka({ clientId: 'cli-tx', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const p = kafka.producer({ transactionalId: 'cli-tx', idempotent: true, maxInFlightRequests: 1 });
    await p.connect();
    try {
      const txn = await p.transaction();
      await txn.send({ topic: 'orders', messages: [{ value: 'open', partition: 1 }] });
      const rows = async (...args: string[]) => {
        const r = await tool(...args);
        assert.equal(r.status, 0, r.stderr);
        return r.stdout
          .split('\n')
          .slice(1, -1)
          .map((l) => l.split('\t').map((c) => c.trim()));
      };
      const listed = await rows('list');
      const mine = listed.find((r) => r[0] === 'cli-tx');
      assert.ok(mine !== undefined, JSON.stringify(listed));
      assert.deepEqual([mine[1], mine[3]], ['1', 'Ongoing']);
      const [described] = await rows('describe', '--transactional-id', 'cli-tx');
      assert.deepEqual(
        [described![0], described![1], described![2], described![4], described![8]],
        ['1', 'cli-tx', mine[2], 'Ongoing', 'orders-1'],
      );
      const [open] = await rows('describe-producers', '--topic', 'orders', '--partition', '1');
      assert.deepEqual([open![0], open![5]], [mine[2], '0'], 'its transaction starts at offset 0');
      // The coordinator still has the partition in the transaction: not hanging, however old.
      assert.deepEqual(await rows('find-hanging', '--topic', 'orders', '--max-transaction-timeout', '0'), []);
      assert.deepEqual(
        await rows('abort', '--topic', 'orders', '--partition', '1', '--start-offset', '0'),
        [],
      );
      const [aborted] = await rows('describe-producers', '--topic', 'orders', '--partition', '1');
      assert.equal(aborted![5], 'None', 'the ABORT marker ended it on the partition');
      await txn.abort();
    } finally {
      await p.disconnect();
    }
  });

  it('fails with one line for a partition that does not exist and for bad usage', async () => {
    const unknown = await tool('describe-producers', '--topic', 'nope', '--partition', '0');
    assert.equal(unknown.status, 1);
    assert.match(
      unknown.stderr,
      /^skiff transactions: Failed to describe producers for partition nope-0 on leader: /,
    );
    assert.equal(unknown.stderr.trimEnd().split('\n').length, 1);
    const noPartition = await tool('describe-producers', '--topic', 'orders');
    assert.equal(noPartition.status, 2);
    assert.match(noPartition.stderr, /--partition/);
    const badCommand = await tool('abort-everything');
    assert.equal(badCommand.status, 2);
    assert.match(badCommand.stderr, /invalid choice: 'abort-everything'/);
  });
});

/** The requests the tool builds and Kafka's tables for constructed answers (fake-broker.ts). */
describe('skiff transactions against a scripted broker', () => {
  const NOW = 1_700_000_600_000;
  const runtime = { ...systemRuntime(), clock: new ManualClock(NOW) };
  const producerState = (producerId: bigint, startOffset: bigint, lastTimestamp: bigint) => ({
    producerId,
    producerEpoch: 3,
    lastSequence: 7,
    lastTimestamp,
    coordinatorEpoch: -1,
    currentTxnStartOffset: startOffset,
  });
  let fake: FakeBroker;
  before(async () => {
    const handlers = new Map<number, Handler>([
      [10, () => ({ ...defaultFindCoordinatorResponse(), nodeId: 1, host: '127.0.0.1', port: 0 })],
      [
        66,
        (body) => {
          const all = [
            { transactionalId: 'tx-a', producerId: 11n, transactionState: 'Ongoing' },
            { transactionalId: 'tx-b', producerId: 12n, transactionState: 'CompleteCommit' },
          ];
          const filter = (body as ListTransactionsRequest).producerIdFilters;
          return {
            throttleTimeMs: 0,
            errorCode: 0,
            unknownStateFilters: [],
            transactionStates: filter.length === 0 ? all : all.filter((s) => filter.includes(s.producerId)),
          };
        },
      ],
      [
        65,
        (body) => ({
          throttleTimeMs: 0,
          transactionStates: (body as DescribeTransactionsRequest).transactionalIds.map((id) =>
            id === 'tx-a'
              ? {
                  errorCode: 0,
                  transactionalId: id,
                  transactionState: 'Ongoing',
                  transactionTimeoutMs: 60_000,
                  transactionStartTimeMs: BigInt(NOW - 2_500),
                  producerId: 11n,
                  producerEpoch: 3,
                  topics: [{ topic: 'orders', partitions: [1, 0] }],
                }
              : { ...defaultDescribeTransactionsState(), errorCode: 105, transactionalId: id },
          ),
        }),
      ],
      [
        61,
        (body) => ({
          throttleTimeMs: 0,
          topics: (body as DescribeProducersRequest).topics.map((t) => ({
            name: t.name,
            partitions: t.partitionIndexes.map((partitionIndex) => ({
              partitionIndex,
              errorCode: 0,
              errorMessage: null,
              // Partition 0: producer 11 (tx-a, whose transaction includes it) and 13 (listed by no
              // coordinator), both open for an hour; partition 1: 14, open for a minute only.
              activeProducers:
                partitionIndex === 0
                  ? [
                      producerState(11n, 40n, BigInt(NOW - 3_600_000)),
                      producerState(13n, 5n, BigInt(NOW - 3_600_000)),
                    ]
                  : [producerState(14n, 9n, BigInt(NOW - 60_000))],
            })),
          })),
        }),
      ],
      [
        27,
        (body) => ({
          markers: (body as WriteTxnMarkersRequest).markers.map((m) => ({
            producerId: m.producerId,
            topics: m.topics.map((t) => ({
              name: t.name,
              partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, errorCode: 0 })),
            })),
          })),
        }),
      ],
    ]);
    fake = await startFakeBroker(handlers, [{ name: 'orders', partitions: 2 }], { 10: 3, 66: 1, 27: 1 });
  });
  after(async () => {
    await fake?.close();
  });
  const run = async (...args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const status = await runTransactions(
      ['--bootstrap-server', fake.bootstrap, ...args],
      { out: (l) => out.push(l), err: (l) => err.push(l) },
      runtime,
    );
    return { status, out, err };
  };
  const last = (apiKey: number) => fake.requests.filter((r) => r.apiKey === apiKey).at(-1)?.body;

  it('list: every broker asked, with the duration filter', async () => {
    const r = await run('list', '--duration-filter', '5000');
    assert.equal(r.status, 0, r.err.join('\n'));
    assert.equal((last(66) as ListTransactionsRequest).durationFilter, 5000n);
    assert.deepEqual(
      r.out,
      prettyTable(
        ['TransactionalId', 'Coordinator', 'ProducerId', 'TransactionState'],
        [
          ['tx-a', '1', '11', 'Ongoing'],
          ['tx-b', '1', '12', 'CompleteCommit'],
        ],
      ),
    );
  });

  it("describe: the coordinator's state, the duration from the start time, the partitions", async () => {
    const r = await run('describe', '--transactional-id', 'tx-a');
    assert.equal(r.status, 0, r.err.join('\n'));
    assert.deepEqual(last(10), { key: 'tx-a', keyType: 1, coordinatorKeys: [] });
    assert.equal(
      r.out[1]!.split('\t')
        .map((c) => c.trim())
        .join('|'),
      `1|tx-a|11|3|Ongoing|60000|${NOW - 2_500}|2500|orders-1,orders-0|`,
    );
    const gone = await run('describe', '--transactional-id', 'tx-gone');
    assert.equal(gone.status, 1);
    assert.match(
      gone.err[0]!,
      /^skiff transactions: Failed to describe transaction state of transactional-id `tx-gone`: /,
    );
  });

  it('abort: by start offset (the producer found in describe-producers) or by producer id and epochs', async () => {
    let r = await run('abort', '--topic', 'orders', '--partition', '0', '--start-offset', '5');
    assert.equal(r.status, 0, r.err.join('\n'));
    assert.deepEqual((last(27) as WriteTxnMarkersRequest).markers, [
      {
        producerId: 13n,
        producerEpoch: 3,
        transactionResult: false,
        topics: [{ name: 'orders', partitionIndexes: [0] }],
        // -1 in the producer state: the tool sends 0, as Kafka's does.
        coordinatorEpoch: 0,
      },
    ]);
    r = await run('abort', '--topic', 'orders', '--partition', '0', '--start-offset', '6');
    assert.equal(r.status, 1);
    assert.deepEqual(r.err, [
      'skiff transactions: Could not find any open transactions starting at offset 6 on partition orders-0',
    ]);
    r = await run(
      'abort',
      '--topic',
      'orders',
      '--partition',
      '1',
      '--producer-id',
      '99',
      '--producer-epoch',
      '2',
      '--coordinator-epoch',
      '4',
    );
    assert.equal(r.status, 0, r.err.join('\n'));
    assert.deepEqual(
      (last(27) as WriteTxnMarkersRequest).markers.map((m) => [
        m.producerId,
        m.producerEpoch,
        m.coordinatorEpoch,
      ]),
      [[99n, 2, 4]],
    );
    r = await run('abort', '--topic', 'orders', '--partition', '1', '--producer-id', '99');
    assert.deepEqual(
      [r.status, r.err],
      [1, ['skiff transactions: Missing required argument --producer-epoch']],
    );
  });

  it('find-hanging: open past the timeout and not in any coordinator transaction', async () => {
    const r = await run('find-hanging', '--topic', 'orders');
    assert.equal(r.status, 0, r.err.join('\n'));
    assert.deepEqual((last(66) as ListTransactionsRequest).producerIdFilters, [11n, 13n]);
    assert.deepEqual(
      r.out,
      prettyTable(
        [
          'Topic',
          'Partition',
          'ProducerId',
          'ProducerEpoch',
          'CoordinatorEpoch',
          'StartOffset',
          'LastTimestamp',
          'Duration(min)',
        ],
        [['orders', '0', '13', '3', '-1', '5', String(NOW - 3_600_000), '60']],
      ),
    );
    const none = await run('find-hanging');
    assert.deepEqual(none.err, [
      'skiff transactions: The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search',
    ]);
    const onlyPartition = await run('find-hanging', '--broker-id', '1', '--partition', '0');
    assert.deepEqual(onlyPartition.err, [
      'skiff transactions: The --partition argument requires --topic to be provided',
    ]);
  });
});
