/**
 * The producer tools as Kafka's: against a real `skiff broker` child process with Kafka's default
 * auto.create.topics.enable=true, console-producer and producer-perf-test create a missing topic and
 * write idempotently (the batches on disk, read back with dump-log, carry a producer id, epoch and
 * contiguous sequences); enable.idempotence=false or acks=1 turn it off, an explicit
 * enable.idempotence=true with acks=1 is refused in Kafka's words, and properties the producer does
 * not use are named in Kafka's warning.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';
import { skiff } from './in-process.js';

interface DumpedBatch {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly lastSequence: number;
  readonly count: number;
}

describe('producer tools: auto-creation, idempotence, unused properties', () => {
  let broker: BrokerProcess;
  let bs: string[];
  before(async () => {
    broker = await startBrokerProcess();
    bs = ['--bootstrap-server', broker.bootstrap];
  });
  after(async () => {
    await broker?.stop();
  });

  /** The batches of partition 0 of `topic` as dump-log prints them from the broker's segment. */
  async function batches(topic: string): Promise<DumpedBatch[]> {
    const file = path.join(broker.dir, 'logs', `${topic}-0`, '00000000000000000000.log');
    const r = await skiff(['dump-log', '--files', file]);
    assert.equal(r.status, 0, r.stderr);
    return r.stdout
      .split('\n')
      .filter((l) => l.startsWith('baseOffset:'))
      .map((l) => {
        const field = (name: string) => new RegExp(`\\b${name}: (-?\\d+)`).exec(l)![1]!;
        return {
          producerId: BigInt(field('producerId')),
          producerEpoch: Number(field('producerEpoch')),
          baseSequence: Number(field('baseSequence')),
          lastSequence: Number(field('lastSequence')),
          count: Number(field('count')),
        };
      });
  }

  /** One producer id at epoch 0 throughout, sequences from 0 without a gap, `records` in all. */
  function assertIdempotent(got: DumpedBatch[], records: number): void {
    assert.ok(got.length > 0);
    assert.ok(got[0]!.producerId >= 0n, 'a producer id from InitProducerId');
    let next = 0;
    for (const b of got) {
      assert.deepEqual(
        [b.producerId, b.producerEpoch, b.baseSequence, b.lastSequence],
        [got[0]!.producerId, 0, next, next + b.count - 1],
      );
      next += b.count;
    }
    assert.equal(next, records);
  }

  it('console-producer creates a missing topic and writes idempotently; unused properties are named', async () => {
    const lines = Array.from({ length: 20 }, (_, i) => `line-${i}`);
    let r = await skiff(
      [
        ...['console-producer', ...bs, '--topic', 'auto-console', '--batch-size', '64'],
        ...['--producer-property', 'no.such.setting=1', '--producer-property', 'linger.ms=0'],
      ],
      `${lines.join('\n')}\n`,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.equal(
      r.stderr,
      "skiff console-producer: These configurations '[no.such.setting]' were supplied but are not used yet.\n",
    );
    const got = await batches('auto-console');
    assert.ok(got.length > 1, 'batch.size 64 makes several batches');
    assertIdempotent(got, 20);

    r = await skiff(['topics', ...bs, '--describe', '--topic', 'auto-console']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^Topic: auto-console\tTopicId: \S+\tPartitionCount: 1\t/);
  });

  it('producer-perf-test creates a missing topic and writes idempotently', async () => {
    const r = await skiff([
      ...['producer-perf-test', '--topic', 'auto-perf', '--num-records', '500', '--record-size', '50'],
      ...[
        '--throughput',
        '-1',
        '--producer-props',
        `bootstrap.servers=${broker.bootstrap}`,
        'batch.size=2000',
      ],
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.match(r.stdout, /^500 records sent, /);
    assertIdempotent(await batches('auto-perf'), 500);
  });

  it("enable.idempotence=false or acks=1 turn it off; enable.idempotence=true with acks=1 is refused in Kafka's words", async () => {
    const perf = (topic: string, ...props: string[]) =>
      skiff([
        ...['producer-perf-test', '--topic', topic, '--num-records', '10', '--record-size', '10'],
        ...['--throughput', '-1', '--producer-props', `bootstrap.servers=${broker.bootstrap}`, ...props],
      ]);
    for (const [topic, props] of [
      ['plain-off', ['enable.idempotence=false']],
      ['plain-acks1', ['acks=1']],
    ] as const) {
      const r = await perf(topic, ...props);
      assert.equal(r.status, 0, r.stderr);
      const got = await batches(topic);
      assert.ok(got.length > 0);
      for (const b of got) assert.deepEqual([b.producerId, b.baseSequence], [-1n, -1], topic);
    }
    const r = await perf('refused', 'enable.idempotence=true', 'acks=1');
    assert.equal(r.status, 1);
    assert.equal(
      r.stderr,
      'skiff producer-perf-test: Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence.\n',
    );
    // Kafka 4 refuses max.in.flight above 5 unless idempotence is off, asked for or not.
    const inFlight = 'max.in.flight.requests.per.connection=6';
    const refused = await perf('refused', inFlight);
    assert.deepEqual(
      [refused.status, refused.stderr],
      [
        1,
        'skiff producer-perf-test: Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent producer.\n',
      ],
    );
    const off = await perf('plain-inflight6', inFlight, 'enable.idempotence=false');
    assert.equal(off.status, 0, off.stderr);
  });
});
