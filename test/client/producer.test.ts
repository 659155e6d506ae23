import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type KafkaResponseError, kafkaError } from '../../src/client/errors.js';
import type { ClusterMetadata, KafkaClient } from '../../src/client/kafka-client.js';
import { Producer, type ProducerOptions, type RecordMetadata } from '../../src/client/producer.js';
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

interface Sent {
  readonly leader: number;
  readonly partitions: SentPartition[];
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
      _api: unknown,
      build: (v: number) => {
        topicData: { name: string; partitionData: { index: number; records: Buffer }[] }[];
      },
    ) =>
      new Promise((resolve, reject) => {
        const req = build(11);
        const parts = req.topicData.flatMap((t) =>
          t.partitionData.map((p) => ({
            topic: t.name,
            partition: p.index,
            records: readBatchHeader(p.records, 0).recordsCount,
          })),
        );
        sent.push({
          leader: target.id,
          partitions: parts,
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
  return { client: client as unknown as KafkaClient, sent };
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
  return new Producer(client, { acks: -1, lingerMs: 0, batchSize: 1 << 20, ...o });
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
