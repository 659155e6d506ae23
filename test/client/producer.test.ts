import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type KafkaResponseError, kafkaError } from '../../src/client/errors.js';
import type { ClusterMetadata, KafkaClient } from '../../src/client/kafka-client.js';
import { Producer, type RecordMetadata } from '../../src/client/producer.js';
import type { ProducerOptions } from '../../src/client/producer-options.js';
import { systemRuntime } from '../../src/client/runtime.js';
import { readBatchHeader } from '../../src/protocol/records/batch.js';

/**
 * The producer's accumulator and sender against a scripted client (pure logic: which batches go in
 * which request, and when). The brokers are promises the test answers by hand.
 */

interface SentPartition {
  readonly topic: string;
  readonly partition: number;
  readonly records: number;
}

/** What an idempotent batch carries besides its records. */
interface Sequenced {
  readonly partition: number;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
}

interface Sent {
  readonly leader: number;
  readonly partitions: SentPartition[];
  readonly sequenced: Sequenced[];
  answer(errorCode?: number): void;
  fail(e: Error): void;
}

function metadata(partitions: number, leaderOf: (p: number) => number): ClusterMetadata {
  return {
    clusterId: 'c',
    controllerId: 1,
    brokers: new Map([
      [1, { host: '127.0.0.1', port: 1 }],
      [2, { host: '127.0.0.1', port: 2 }],
    ]),
    topics: new Map([
      [
        't',
        {
          name: 't',
          topicId: '',
          errorCode: 0,
          isInternal: false,
          partitions: Array.from({ length: partitions }, (_, p) => ({
            partition: p,
            errorCode: 0,
            leader: leaderOf(p),
            leaderEpoch: 0,
            replicas: [1],
            isr: [1],
            offlineReplicas: [],
          })),
        },
      ],
    ]),
  };
}

function scriptedClient(partitions = 1, leaderOf: (p: number) => number = () => 1) {
  const sent: Sent[] = [];
  let nextOffset = 0n;
  /** Producer ids handed out by InitProducerId. */
  const producerIds: bigint[] = [];
  const client = {
    runtime: systemRuntime(),
    requestTimeoutMs: 30_000,
    metadataFor: async () => metadata(partitions, leaderOf),
    fetchMetadata: async () => metadata(partitions, leaderOf),
    retry: <T>(f: () => Promise<T>) => f(),
    invalidateMetadata: () => {},
    sendOneWay: async () => {},
    send: (
      target: { id: number },
      api: { key: number },
      build: (v: number) => {
        topicData: { name: string; partitionData: { index: number; records: Buffer }[] }[];
      },
    ) =>
      new Promise((resolve, reject) => {
        if (api.key === 22) {
          producerIds.push(1000n + BigInt(producerIds.length));
          resolve({ throttleTimeMs: 0, errorCode: 0, producerId: producerIds.at(-1), producerEpoch: 0 });
          return;
        }
        const req = build(11);
        const parts = req.topicData.flatMap((t) =>
          t.partitionData.map((p) => ({
            topic: t.name,
            partition: p.index,
            records: readBatchHeader(p.records, 0).recordsCount,
          })),
        );
        const sequenced = req.topicData.flatMap((t) =>
          t.partitionData.map((p) => {
            const h = readBatchHeader(p.records, 0);
            return {
              partition: p.index,
              producerId: h.producerId,
              producerEpoch: h.producerEpoch,
              baseSequence: h.baseSequence,
            };
          }),
        );
        sent.push({
          leader: target.id,
          partitions: parts,
          sequenced,
          answer: (errorCode = 0) => {
            const responses = req.topicData.map((t) => ({
              name: t.name,
              partitionResponses: t.partitionData.map((p) => {
                const baseOffset = nextOffset;
                if (errorCode === 0) nextOffset += BigInt(readBatchHeader(p.records, 0).recordsCount);
                return { index: p.index, errorCode, errorMessage: null, baseOffset };
              }),
            }));
            resolve({ responses });
          },
          fail: reject,
        });
      }),
  };
  return { client: client as unknown as KafkaClient, sent, producerIds };
}

const until = async (cond: () => boolean, what: string) => {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 2));
  assert.ok(cond(), `timed out waiting for ${what}`);
};

const value = (i: number) => Buffer.from(`record-${i}`);

function collect(producer: Producer, n: number, from = 0, partition?: number) {
  const results: (RecordMetadata | Error)[] = [];
  const sends: Promise<void>[] = [];
  for (let i = from; i < from + n; i++) {
    sends.push(
      producer.send({ topic: 't', key: null, value: value(i), partition }, (e, m) => {
        results[i - from] = e ?? m!;
      }),
    );
  }
  return { results, sent: Promise.all(sends) };
}

function producerWith(client: KafkaClient, o: Partial<ProducerOptions>): Producer {
  return new Producer(client, { acks: -1, lingerMs: 0, batchSize: 1 << 20, idempotence: false, ...o });
}

describe('Producer accumulator and sender', () => {
  it('holds records while the broker has max.in.flight requests, then sends them as one batch', async () => {
    const { client, sent } = scriptedClient();
    const producer = producerWith(client, { maxInFlight: 1 });
    const first = collect(producer, 1);
    await until(() => sent.length === 1, 'the first request');
    const rest = collect(producer, 50, 1);
    await rest.sent;
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(sent.length, 1, 'nothing more is sent while one request is unanswered');
    sent[0]!.answer();
    await until(() => sent.length === 2, 'the second request');
    assert.deepEqual(sent[1]!.partitions, [{ topic: 't', partition: 0, records: 50 }]);
    sent[1]!.answer();
    await producer.flush();
    assert.deepEqual(
      [...first.results, ...rest.results].map((m) => (m as RecordMetadata).offset),
      Array.from({ length: 51 }, (_, i) => BigInt(i)),
    );
  });

  it('keeps up to max.in.flight requests per broker unanswered, no more', async () => {
    const { client, sent } = scriptedClient();
    const producer = producerWith(client, { maxInFlight: 3, batchSize: 20 });
    // Each record (~18 bytes counted) fills most of a 20-byte batch: one batch per record.
    const c = collect(producer, 10);
    await c.sent;
    await until(() => sent.length === 3, 'three requests');
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(sent.length, 3);
    sent[0]!.answer();
    await until(() => sent.length === 4, 'a fourth request after one answer');
    for (let i = 1; i < 10; i++) {
      await until(() => sent.length > i, `request ${i}`);
      sent[i]!.answer();
    }
    await producer.flush();
    assert.equal(
      sent.reduce((n, s) => n + s.partitions.reduce((m, p) => m + p.records, 0), 0),
      10,
    );
    assert.ok(c.results.every((r) => !(r instanceof Error)));
  });

  it('sends one batch per partition per request and splits at batch.size', async () => {
    const { client, sent } = scriptedClient(2);
    const producer = producerWith(client, { maxInFlight: 1, batchSize: 60 });
    // ~18 counted bytes a record: three fit in 60.
    await collect(producer, 7, 0, 0).sent;
    await collect(producer, 2, 7, 1).sent;
    const flushed = producer.flush();
    for (let i = 0; i < 3; i++) {
      await until(() => sent.length > i, `request ${i}`);
      sent[i]!.answer();
    }
    await flushed;
    assert.deepEqual(
      sent.map((s) => s.partitions.map((p) => `${p.partition}:${p.records}`).join(' ')),
      ['0:3 1:2', '0:3', '0:1'],
    );
  });

  it('waits linger.ms for more records unless flushed', async () => {
    const { client, sent } = scriptedClient();
    const producer = producerWith(client, { lingerMs: 60_000 });
    await collect(producer, 3).sent;
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(sent.length, 0, 'a partial batch waits for linger.ms');
    const flushed = producer.flush();
    await until(() => sent.length === 1, 'the flushed request');
    sent[0]!.answer();
    await flushed;
  });

  it('retries a batch at the head of its partition, before later batches', async () => {
    const { client, sent } = scriptedClient();
    const producer = producerWith(client, { maxInFlight: 1, batchSize: 60, retryBackoffMs: 1 });
    const c = collect(producer, 6);
    await c.sent;
    const flushed = producer.flush();
    await until(() => sent.length === 1, 'the first request');
    sent[0]!.answer(6); // NOT_LEADER_OR_FOLLOWER: retriable
    await until(() => sent.length === 2, 'the retry');
    assert.deepEqual(sent[1]!.partitions, sent[0]!.partitions, 'the same batch again');
    sent[1]!.answer();
    await until(() => sent.length === 3, 'the next batch');
    sent[2]!.answer();
    await flushed;
    assert.deepEqual(
      c.results.map((m) => (m as RecordMetadata).offset),
      [0n, 1n, 2n, 3n, 4n, 5n],
    );
  });

  it('never adds records to a batch already sent: a retried batch goes again as it was sent', async () => {
    const { client, sent } = scriptedClient();
    const producer = producerWith(client, { maxInFlight: 1, retryBackoffMs: 50 });
    const first = collect(producer, 1);
    await first.sent;
    await until(() => sent.length === 1, 'the first request');
    sent[0]!.answer(6); // NOT_LEADER_OR_FOLLOWER: back in its partition, waiting out its back-off
    await new Promise((r) => setTimeout(r, 5));
    // Sent while the batch waits: a batch of their own, not records the encoded batch lacks.
    const later = collect(producer, 2, 1);
    await later.sent;
    const flushed = producer.flush();
    await until(() => sent.length === 2, 'the retry');
    assert.deepEqual(sent[1]!.partitions, [{ topic: 't', partition: 0, records: 1 }]);
    sent[1]!.answer();
    await until(() => sent.length === 3, 'the later records');
    assert.deepEqual(sent[2]!.partitions, [{ topic: 't', partition: 0, records: 2 }]);
    sent[2]!.answer();
    await flushed;
    assert.deepEqual(
      [...first.results, ...later.results].map((m) => (m as RecordMetadata).offset),
      [0n, 1n, 2n],
    );
  });

  it('fails the records of a batch with a non-retriable error, or when retries run out', async () => {
    const { client, sent } = scriptedClient();
    const producer = producerWith(client, { retries: 1, retryBackoffMs: 1, maxInFlight: 1 });
    const c = collect(producer, 2);
    await c.sent;
    const flushed = producer.flush();
    await until(() => sent.length === 1, 'the request');
    sent[0]!.answer(6);
    await until(() => sent.length === 2, 'the one retry');
    sent[1]!.answer(6);
    await flushed;
    assert.equal(sent.length, 2);
    assert.ok(c.results.every((r) => r instanceof Error && (r as KafkaResponseError).code === 6));
    const d = collect(producer, 1, 2);
    await d.sent;
    const flushed2 = producer.flush();
    await until(() => sent.length === 3, 'the next request');
    sent[2]!.fail(kafkaError(87)); // INVALID_RECORD: not retriable
    await flushed2;
    assert.ok(d.results[0] instanceof Error);
    assert.equal(sent.length, 3);
  });

  it('groups partitions by leader, one request per broker', async () => {
    const { client, sent } = scriptedClient(4, (p) => (p % 2) + 1);
    const producer = producerWith(client, { lingerMs: 60_000 });
    for (let p = 0; p < 4; p++) await collect(producer, 1, p, p).sent;
    const flushed = producer.flush();
    await until(() => sent.length === 2, 'two requests');
    for (const s of sent) s.answer();
    await flushed;
    assert.deepEqual(
      sent.map((s) => `${s.leader}: ${s.partitions.map((p) => p.partition).join(',')}`).sort(),
      ['1: 0,2', '2: 1,3'],
    );
  });
});

describe('Producer metadata', () => {
  it("sends made before a topic's partition count is known share one Metadata request", async () => {
    const { client, sent } = scriptedClient();
    let requests = 0;
    const fetchMetadata = client.fetchMetadata.bind(client);
    client.fetchMetadata = (...args) => {
      requests++;
      return fetchMetadata(...args);
    };
    const producer = producerWith(client, { lingerMs: 60_000 });
    const c = collect(producer, 100);
    await c.sent;
    assert.equal(requests, 1);
    const flushed = producer.flush();
    await until(() => sent.length === 1, 'one request');
    sent[0]!.answer();
    await flushed;
    assert.equal(c.results.filter((r) => !(r instanceof Error)).length, 100);
  });
});

describe('Idempotent producer', () => {
  it("takes a producer id once and numbers each partition's batches from sequence 0", async () => {
    const { client, sent, producerIds } = scriptedClient(2);
    const producer = producerWith(client, { idempotence: true, maxInFlight: 5, batchSize: 60 });
    // ~18 counted bytes a record: three to a batch; partition 0 gets 7 records, partition 1 two.
    const c0 = collect(producer, 7, 0, 0);
    const c1 = collect(producer, 2, 7, 1);
    await Promise.all([c0.sent, c1.sent]);
    const flushed = producer.flush();
    for (let i = 0; i < 3; i++) {
      await until(() => sent.length > i, `request ${i}`);
      sent[i]!.answer();
    }
    await flushed;
    assert.deepEqual(producerIds, [1000n]);
    assert.deepEqual(producer.producerIdAndEpoch, { producerId: 1000n, producerEpoch: 0 });
    const seqs = sent.flatMap((s) => s.sequenced);
    assert.ok(seqs.every((s) => s.producerId === 1000n && s.producerEpoch === 0));
    assert.deepEqual(
      seqs.filter((s) => s.partition === 0).map((s) => s.baseSequence),
      [0, 3, 6],
    );
    assert.deepEqual(
      seqs.filter((s) => s.partition === 1).map((s) => s.baseSequence),
      [0],
    );
  });

  it('retries in sequence order: the failed batch alone, then those refused behind it', async () => {
    const { client, sent } = scriptedClient();
    const producer = producerWith(client, {
      idempotence: true,
      maxInFlight: 5,
      batchSize: 20,
      retryBackoffMs: 1,
    });
    // One record a batch: three requests in flight at once.
    const c = collect(producer, 3);
    await c.sent;
    const flushed = producer.flush();
    await until(() => sent.length === 3, 'three requests in flight');
    sent[0]!.answer(6); // NOT_LEADER_OR_FOLLOWER: retriable
    sent[1]!.answer(45); // OUT_OF_ORDER_SEQUENCE_NUMBER behind it: retriable here
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(sent.length, 3, 'a retry waits while another batch of its partition is in flight');
    sent[2]!.answer(45);
    await until(() => sent.length === 4, 'the retry of the first batch');
    assert.equal(sent[3]!.sequenced[0]!.baseSequence, 0);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(sent.length, 4, 'the next retry waits for the first');
    sent[3]!.answer();
    await until(() => sent.length === 5, 'the retry of the second batch');
    assert.equal(sent[4]!.sequenced[0]!.baseSequence, 1);
    sent[4]!.answer();
    await until(() => sent.length === 6, 'the retry of the third batch');
    assert.equal(sent[5]!.sequenced[0]!.baseSequence, 2);
    sent[5]!.answer();
    await flushed;
    assert.deepEqual(
      c.results.map((m) => (m as RecordMetadata).offset),
      [0n, 1n, 2n],
    );
  });

  it('fails OUT_OF_ORDER_SEQUENCE_NUMBER of the first unresolved batch, and takes a new producer id', async () => {
    const { client, sent, producerIds } = scriptedClient();
    const producer = producerWith(client, { idempotence: true, retryBackoffMs: 1 });
    const c = collect(producer, 1);
    await c.sent;
    const flushed = producer.flush();
    await until(() => sent.length === 1, 'the request');
    sent[0]!.answer(45);
    await flushed;
    assert.ok(c.results[0] instanceof Error && (c.results[0] as KafkaResponseError).code === 45);
    const d = collect(producer, 1, 1);
    await d.sent;
    const flushed2 = producer.flush();
    await until(() => sent.length === 2, 'the next request');
    sent[1]!.answer();
    await flushed2;
    assert.deepEqual(producerIds, [1000n, 1001n]);
    assert.deepEqual(sent[1]!.sequenced[0], {
      partition: 0,
      producerId: 1001n,
      producerEpoch: 0,
      baseSequence: 0,
    });
  });

  it("refuses settings that conflict with idempotence, in Kafka's words", () => {
    const { client } = scriptedClient();
    assert.throws(
      () => producerWith(client, { idempotence: true, acks: 1 }),
      /^ClientError: Must set acks to all in order to use the idempotent producer\. Otherwise we cannot guarantee idempotence\.$/,
    );
    assert.throws(
      () => producerWith(client, { idempotence: true, retries: 0 }),
      /Must set retries to non-zero/,
    );
    assert.throws(
      () => producerWith(client, { idempotence: true, maxInFlight: 6 }),
      /Must set max.in.flight.requests.per.connection to at most 5/,
    );
    producerWith(client, { idempotence: false, acks: 1 });
  });
});
