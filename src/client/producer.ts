import { type CompressionCodecId, encodeBatch } from '../protocol/records/index.js';
import { Apis } from './apis.js';
import { ClientError, KafkaResponseError, kafkaError } from './errors.js';
import { isRetriable, type KafkaClient } from './kafka-client.js';
import { partitionForKey } from './partitioner.js';

export interface ProducerOptions {
  /** 0, 1 or -1 (all). */
  readonly acks: number;
  readonly compression: CompressionCodecId;
  /** batch.size: bytes of record payload per partition batch. */
  readonly batchSize: number;
  readonly lingerMs: number;
  /** buffer.memory: send() waits while this many payload bytes are unacknowledged. */
  readonly bufferMemory: number;
  /** Attempts after the first for a batch that fails retriably. */
  readonly retries: number;
}

export const DEFAULT_PRODUCER_OPTIONS: ProducerOptions = {
  acks: -1,
  compression: 0,
  batchSize: 16_384,
  lingerMs: 5,
  bufferMemory: 32 * 1024 * 1024,
  retries: 5,
};

export interface ProducerRecord {
  readonly topic: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: readonly { key: string; value: Buffer | null }[];
  /** Chosen by the partitioner when absent. */
  readonly partition?: number;
  readonly timestampMs?: number;
}

export interface RecordMetadata {
  readonly topic: string;
  readonly partition: number;
  /** -1n with acks=0. */
  readonly offset: bigint;
}

export type Callback = (error: Error | null, meta: RecordMetadata | null) => void;

/** acks as the tools accept it: all, -1, 0, 1. */
export function parseAcks(s: string): number {
  if (s === 'all' || s === '-1') return -1;
  if (s === '0' || s === '1') return Number(s);
  throw new ClientError(`invalid value ${s} for acks (expected all, -1, 0 or 1)`);
}

interface Pending {
  record: ProducerRecord;
  bytes: number;
  callback: Callback;
}

interface OpenBatch {
  topic: string;
  partition: number;
  records: Pending[];
  bytes: number;
  cancelLinger: (() => void) | null;
}

function sizeOf(r: ProducerRecord): number {
  let n = (r.key?.length ?? 0) + (r.value?.length ?? 0) + 10;
  for (const h of r.headers ?? []) n += h.key.length + (h.value?.length ?? 0) + 4;
  return n;
}

/**
 * A producer for the console and perf tools: records are appended to one open batch per partition,
 * a batch is sent when it reaches batch.size or has waited linger.ms, and each record's callback
 * runs when its batch is acknowledged (or fails for good). Not idempotent: a retried batch may be
 * written twice, as with Kafka's enable.idempotence=false. Owned by one tool run, which must
 * flush() before exiting.
 */
export class Producer {
  private readonly open = new Map<string, OpenBatch>();
  private readonly sticky = new Map<string, number>();
  private readonly partitionCounts = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private bufferedBytes = 0;
  private spaceWaiters: (() => void)[] = [];
  private nextSticky = 0;
  private readonly options: ProducerOptions;

  constructor(
    private readonly client: KafkaClient,
    options: Partial<ProducerOptions> = {},
  ) {
    this.options = { ...DEFAULT_PRODUCER_OPTIONS, ...options };
  }

  /**
   * Buffers one record; resolves once it is buffered (waiting while buffer.memory is full). The
   * callback runs when the record is acknowledged or has failed for good.
   */
  async send(record: ProducerRecord, callback: Callback): Promise<void> {
    const partitions = await this.partitionsFor(record.topic);
    const bytes = sizeOf(record);
    while (this.bufferedBytes > 0 && this.bufferedBytes + bytes > this.options.bufferMemory) {
      await new Promise<void>((resolve) => this.spaceWaiters.push(resolve));
    }
    const partition = this.choosePartition(record, partitions);
    if (partition < 0 || partition >= partitions) {
      throw new ClientError(`partition ${partition} of topic ${record.topic} does not exist`);
    }
    const key = `${record.topic}-${partition}`;
    let batch = this.open.get(key);
    if (!batch) {
      batch = { topic: record.topic, partition, records: [], bytes: 0, cancelLinger: null };
      this.open.set(key, batch);
      const b = batch;
      b.cancelLinger = this.client.runtime.scheduler.schedule('linger', this.options.lingerMs, () =>
        this.drain(key, b),
      );
    }
    batch.records.push({ record, bytes, callback });
    batch.bytes += bytes;
    this.bufferedBytes += bytes;
    if (batch.bytes >= this.options.batchSize) this.drain(key, batch);
  }

  /** Sends one record and resolves with its metadata once acknowledged. */
  produce(record: ProducerRecord): Promise<RecordMetadata> {
    return new Promise((resolve, reject) => {
      this.send(record, (e, meta) => (e ? reject(e) : resolve(meta!))).catch(reject);
    });
  }

  /** Sends every open batch and waits for all in-flight batches. */
  async flush(): Promise<void> {
    for (const [key, batch] of [...this.open]) this.drain(key, batch);
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** The topic's partition count; a topic that stays unknown through the retries is an error. */
  async partitionsFor(topic: string): Promise<number> {
    const known = this.partitionCounts.get(topic);
    if (known !== undefined) return known;
    const md = await this.client
      .retry(async () => {
        const m = await this.client.fetchMetadata([topic]);
        const t = m.topics.get(topic);
        if (t?.errorCode !== 0) throw kafkaError(t?.errorCode ?? 3);
        return t;
      })
      .catch((e: unknown) => {
        if (e instanceof KafkaResponseError && e.code === 3) {
          throw new ClientError(`Topic ${topic} not present in metadata`);
        }
        throw e;
      });
    this.partitionCounts.set(topic, md.partitions.length);
    return md.partitions.length;
  }

  private choosePartition(record: ProducerRecord, partitions: number): number {
    if (record.partition !== undefined) return record.partition;
    if (record.key !== null) return partitionForKey(record.key, partitions);
    // Sticky partitioning: unkeyed records fill one partition's batch before moving on, so batches
    // are full rather than one record each.
    let p = this.sticky.get(record.topic);
    if (p === undefined) {
      p = this.nextSticky++ % partitions;
      this.sticky.set(record.topic, p);
    }
    return p;
  }

  private drain(key: string, batch: OpenBatch): void {
    if (this.open.get(key) !== batch) return;
    this.open.delete(key);
    batch.cancelLinger?.();
    if (this.sticky.get(batch.topic) === batch.partition) this.sticky.delete(batch.topic);
    const p = this.sendBatch(batch).finally(() => {
      this.inFlight.delete(p);
      this.bufferedBytes -= batch.bytes;
      for (const w of this.spaceWaiters.splice(0)) w();
    });
    this.inFlight.add(p);
  }

  private async sendBatch(batch: OpenBatch): Promise<void> {
    const now = BigInt(this.client.runtime.clock.nowMs());
    const first = batch.records[0]!.record.timestampMs;
    const base = first === undefined ? now : BigInt(first);
    const bytes = encodeBatch({
      baseTimestamp: base,
      compression: this.options.compression,
      records: batch.records.map((p) => ({
        key: p.record.key,
        value: p.record.value,
        headers: p.record.headers ? [...p.record.headers] : [],
        timestampDelta: (p.record.timestampMs === undefined ? now : BigInt(p.record.timestampMs)) - base,
      })),
    });
    let result: { error: Error | null; offset: bigint };
    try {
      result = { error: null, offset: await this.sendWithRetries(batch, bytes) };
    } catch (e) {
      result = { error: e instanceof Error ? e : new Error(String(e)), offset: -1n };
    }
    batch.records.forEach((p, i) => {
      const meta =
        result.error === null
          ? {
              topic: batch.topic,
              partition: batch.partition,
              offset: result.offset < 0n ? -1n : result.offset + BigInt(i),
            }
          : null;
      p.callback(result.error, meta);
    });
  }

  /** The batch's base offset (-1n with acks=0). */
  private async sendWithRetries(batch: OpenBatch, records: Buffer): Promise<bigint> {
    let backoffMs = 100;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.sendOnce(batch, records);
      } catch (e) {
        if (attempt >= this.options.retries || !isRetriable(e)) throw e;
        this.client.invalidateMetadata();
        await this.client.runtime.sleep(backoffMs);
        backoffMs = Math.min(backoffMs * 2, 1000);
      }
    }
  }

  private async sendOnce(batch: OpenBatch, records: Buffer): Promise<bigint> {
    const md = await this.client.metadataFor([batch.topic]);
    const leader = md.topics
      .get(batch.topic)
      ?.partitions.find((p) => p.partition === batch.partition)?.leader;
    if (leader === undefined || leader < 0) throw kafkaError(5);
    const request = () => ({
      transactionalId: null,
      acks: this.options.acks,
      timeoutMs: this.client.requestTimeoutMs,
      topicData: [{ name: batch.topic, partitionData: [{ index: batch.partition, records }] }],
    });
    if (this.options.acks === 0) {
      await this.client.sendOneWay({ kind: 'node', id: leader }, Apis.Produce, request);
      return -1n;
    }
    const resp = await this.client.send({ kind: 'node', id: leader }, Apis.Produce, request);
    const p = resp.responses[0]?.partitionResponses[0];
    if (!p) throw new ClientError(`broker ${leader} answered Produce without a partition result`);
    if (p.errorCode !== 0) throw kafkaError(p.errorCode, p.errorMessage);
    return p.baseOffset;
  }
}
