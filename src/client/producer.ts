import { topicPartitionKey } from '../common/topic-partition.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { encodeBatch } from '../protocol/records/index.js';
import { Apis } from './apis.js';
import { ClientError, KafkaResponseError, kafkaError } from './errors.js';
import { isRetriable, type KafkaClient } from './kafka-client.js';
import { partitionForKey } from './partitioner.js';
import { DEFAULT_PRODUCER_OPTIONS, idempotenceConflict, type ProducerOptions } from './producer-options.js';

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

/** transaction.timeout.ms's default, which Kafka's producer sends in InitProducerId. */
const TRANSACTION_TIMEOUT_MS = 60_000;

export type Callback = (error: Error | null, meta: RecordMetadata | null) => void;

interface Pending {
  readonly record: ProducerRecord;
  readonly timestampMs: bigint;
  readonly callback: Callback;
}

/** Records of one partition sent in one Produce request (Kafka's ProducerBatch). */
interface Batch {
  readonly queue: PartitionQueue;
  readonly records: Pending[];
  bytes: number;
  readonly createdMs: number;
  /** Retries made so far. */
  attempts: number;
  /** Not sent again before this time (a retry's back-off). */
  notBeforeMs: number;
  /** Encoded on the first send and reused by retries. */
  encoded: Buffer | null;
  /**
   * The order in which batches were first encoded (producer-wide): a retried batch goes back in
   * front of every batch of its partition encoded after it. -1 before.
   */
  drainOrder: number;
  /** Idempotence: the producer id its sequence counts under; -1n before it has one. */
  producerId: bigint;
}

interface PartitionQueue {
  readonly topic: string;
  readonly partition: number;
  /** Oldest first; only the last one takes new records. */
  readonly batches: Batch[];
  /** Batches of this partition in unanswered requests. */
  inFlight: number;
  /**
   * Idempotence: the batches given a sequence and not yet acknowledged or failed for good (in
   * flight or back in `batches` for a retry), in sequence order.
   */
  readonly unresolved: Batch[];
  /** Idempotence: the producer id the partition's sequences count under, and its next sequence. */
  sequencePid: bigint;
  nextSequence: number;
}

/** The sequence after `n` more records: int32 wraps to 0, as in Kafka. */
function advanceSequence(seq: number, n: number): number {
  const next = seq + n;
  return next > 0x7fffffff ? next - 0x80000000 : next;
}

function sizeOf(r: ProducerRecord): number {
  let n = (r.key?.length ?? 0) + (r.value?.length ?? 0) + 10;
  for (const h of r.headers ?? []) n += h.key.length + (h.value?.length ?? 0) + 4;
  return n;
}

/**
 * A producer for the console and perf tools, shaped like Kafka's: records gather in per-partition
 * batches (an accumulator); a sender drains each broker's ready batches, at most one per partition,
 * into one Produce request while that broker has fewer than max.in.flight.requests.per.connection
 * requests unanswered. A batch is ready when full (batch.size), when it has waited linger.ms, when a
 * later batch of its partition exists, or during flush(). Each record's callback runs when its batch
 * is acknowledged or fails for good.
 *
 * Idempotent by default, as Kafka's producer since 3.0: an InitProducerId gives a producer id and
 * epoch; each batch gets its partition's next sequence when first encoded and keeps it through its
 * retries, so the leader acknowledges a batch it already wrote instead of writing it twice. Up to
 * max.in.flight batches of a partition may be unanswered; a batch sent back for a retry waits until
 * no other batch of its partition is in flight (Kafka's "in flight drops to one" while it recovers),
 * and OUT_OF_ORDER_SEQUENCE_NUMBER is retried only for a batch behind an earlier unresolved one (the
 * gap is that one's). A batch that fails for good leaves a gap in its partition's sequences: the
 * producer takes a new producer id before sequencing further batches (Kafka's producer-id reset);
 * batches already sequenced under the old id keep it. With enable.idempotence=false a retried batch
 * may be written twice. Owned by one tool run, which must flush() before exiting.
 */
export class Producer {
  private readonly queues = new Map<string, PartitionQueue>();
  private readonly sticky = new Map<string, number>();
  private readonly stickyBytes = new Map<string, number>();
  private readonly partitionCounts = new Map<string, number>();
  /** Metadata requests in flight for a topic's partition count. */
  private readonly partitionCountFetches = new Map<string, Promise<number>>();
  private readonly inFlightByNode = new Map<number, number>();
  /** Batches created and not yet completed (queued or in flight). */
  private unfinished = 0;
  private bufferedBytes = 0;
  private spaceWaiters: (() => void)[] = [];
  private idleWaiters: (() => void)[] = [];
  private flushing = 0;
  private nextSticky = 0;
  private wakeScheduled = false;
  private senderRunning = false;
  private senderAgain = false;
  private timer: { dueMs: number; cancel: () => void } | null = null;
  private readonly options: ProducerOptions;
  /** Idempotence: the producer id and epoch batches are sequenced under; -1n until InitProducerId. */
  private producerId = -1n;
  private producerEpoch = -1;
  /** A batch failed for good with a sequence: the next batch sequenced needs a new producer id. */
  private producerIdStale = false;
  private producerIdRequest: Promise<void> | null = null;
  private drained = 0;

  constructor(
    private readonly client: KafkaClient,
    options: Partial<ProducerOptions> = {},
  ) {
    this.options = { ...DEFAULT_PRODUCER_OPTIONS, ...options };
    if (!(this.options.maxInFlight >= 1)) {
      throw new ClientError(
        `max.in.flight.requests.per.connection must be at least 1, not ${this.options.maxInFlight}`,
      );
    }
    const conflict = this.options.idempotence ? idempotenceConflict(this.options) : null;
    if (conflict !== null) throw new ClientError(conflict);
  }

  /** The producer id and epoch the batches carry (-1n, -1 without idempotence or before the first send). */
  get producerIdAndEpoch(): { producerId: bigint; producerEpoch: number } {
    return { producerId: this.producerId, producerEpoch: this.producerEpoch };
  }

  /**
   * Buffers one record; resolves once it is buffered (waiting while buffer.memory is full). The
   * callback runs when the record is acknowledged or has failed for good.
   */
  async send(record: ProducerRecord, callback: Callback): Promise<void> {
    const partitions = await this.partitionsFor(record.topic);
    const bytes = sizeOf(record);
    while (this.bufferedBytes > 0 && this.bufferedBytes + bytes > this.options.bufferMemory) {
      this.wake();
      await new Promise<void>((resolve) => this.spaceWaiters.push(resolve));
    }
    const partition = this.choosePartition(record, partitions);
    if (partition < 0 || partition >= partitions) {
      throw new ClientError(`partition ${partition} of topic ${record.topic} does not exist`);
    }
    const queue = this.queueFor(record.topic, partition);
    const nowMs = this.client.runtime.clock.nowMs();
    let batch = queue.batches.at(-1);
    // A batch once encoded (sent, and back here for a retry) is closed to appends, as Kafka's
    // drained ProducerBatch: its bytes go again as they are, so a record added now would be
    // acknowledged with the batch without ever reaching the broker.
    if (batch === undefined || batch.encoded !== null || batch.bytes + bytes > this.options.batchSize) {
      // A record larger than batch.size gets a batch of its own, as in Kafka.
      batch = {
        queue,
        records: [],
        bytes: 0,
        createdMs: nowMs,
        attempts: 0,
        notBeforeMs: 0,
        encoded: null,
        drainOrder: -1,
        producerId: -1n,
      };
      queue.batches.push(batch);
      this.unfinished++;
    }
    const timestampMs = record.timestampMs === undefined ? BigInt(nowMs) : BigInt(record.timestampMs);
    batch.records.push({ record, timestampMs, callback });
    batch.bytes += bytes;
    this.bufferedBytes += bytes;
    if (this.sticky.get(record.topic) === partition) {
      // Kafka's uniform sticky partitioner: move on after batch.size bytes to one partition.
      const n = (this.stickyBytes.get(record.topic) ?? 0) + bytes;
      if (n >= this.options.batchSize) {
        this.sticky.delete(record.topic);
        this.stickyBytes.delete(record.topic);
      } else {
        this.stickyBytes.set(record.topic, n);
      }
    }
    this.wake();
  }

  /** Sends one record and resolves with its metadata once acknowledged. */
  produce(record: ProducerRecord): Promise<RecordMetadata> {
    return new Promise((resolve, reject) => {
      this.send(record, (e, meta) => (e ? reject(e) : resolve(meta!))).catch(reject);
    });
  }

  /** Makes every batch ready at once and waits until all of them are acknowledged or failed. */
  async flush(): Promise<void> {
    this.flushing++;
    try {
      this.wake();
      while (this.unfinished > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    } finally {
      this.flushing--;
    }
    // Nothing left to linger for: a pending timer must not keep the tool's process alive.
    if (this.unfinished === 0) this.setTimer(Number.POSITIVE_INFINITY, true);
  }

  /**
   * The topic's partition count; a topic that stays unknown through the retries is an error. The
   * Metadata request allows auto-creation, as Kafka's producer's always do: a broker with
   * auto.create.topics.enable creates a missing topic.
   */
  async partitionsFor(topic: string): Promise<number> {
    const known = this.partitionCounts.get(topic);
    if (known !== undefined) return known;
    // One Metadata request for the sends made meanwhile, as Kafka's producer waits on one update.
    let fetching = this.partitionCountFetches.get(topic);
    if (fetching === undefined) {
      fetching = this.fetchPartitionCount(topic).finally(() => this.partitionCountFetches.delete(topic));
      this.partitionCountFetches.set(topic, fetching);
    }
    return fetching;
  }

  private async fetchPartitionCount(topic: string): Promise<number> {
    const md = await this.client
      .retry(async () => {
        const m = await this.client.fetchMetadata([topic], true);
        const t = m.topics.get(topic);
        if (t?.errorCode !== 0) throw kafkaError(t?.errorCode ?? 3);
        return t;
      })
      .catch((e: unknown) => {
        if (e instanceof KafkaResponseError && e.code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) {
          throw new ClientError(`Topic ${topic} not present in metadata`);
        }
        throw e;
      });
    this.partitionCounts.set(topic, md.partitions.length);
    return md.partitions.length;
  }

  private queueFor(topic: string, partition: number): PartitionQueue {
    const key = topicPartitionKey(topic, partition);
    let q = this.queues.get(key);
    if (!q) {
      q = { topic, partition, batches: [], inFlight: 0, unresolved: [], sequencePid: -1n, nextSequence: 0 };
      this.queues.set(key, q);
    }
    return q;
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

  /** Runs the sender on the next turn of the event loop, after the records sent in this one. */
  private wake(): void {
    if (this.wakeScheduled) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      void this.runSender();
    });
  }

  private async runSender(): Promise<void> {
    if (this.senderRunning) {
      this.senderAgain = true;
      return;
    }
    this.senderRunning = true;
    try {
      do {
        this.senderAgain = false;
        await this.sendReady();
      } while (this.senderAgain);
    } finally {
      this.senderRunning = false;
    }
  }

  /**
   * The partition's head batch waits for answers: with max.in.flight 1 (order without idempotence)
   * or, idempotent, when it is a retry (it goes alone, after the batches in flight are answered).
   */
  private blocked(q: PartitionQueue): boolean {
    if (q.inFlight === 0) return false;
    return this.options.maxInFlight === 1 || (this.options.idempotence && q.batches[0]!.attempts > 0);
  }

  /** True when the head batch of `q` may be sent now; otherwise the time it becomes so. */
  private readiness(q: PartitionQueue, nowMs: number): true | number {
    const head = q.batches[0]!;
    if (this.blocked(q)) return Number.POSITIVE_INFINITY;
    if (head.notBeforeMs > nowMs) return head.notBeforeMs;
    if (
      this.flushing > 0 ||
      q.batches.length > 1 ||
      head.bytes >= this.options.batchSize ||
      this.spaceWaiters.length > 0 ||
      nowMs - head.createdMs >= this.options.lingerMs
    ) {
      return true;
    }
    return head.createdMs + this.options.lingerMs;
  }

  /** One pass: sends what is ready to brokers with room, then sets the timer for what is not yet. */
  private async sendReady(): Promise<void> {
    const topics = new Set<string>();
    const before = this.client.runtime.clock.nowMs();
    let lingering = Number.POSITIVE_INFINITY;
    for (const q of this.queues.values()) {
      if (q.batches.length === 0) continue;
      const ready = this.readiness(q, before);
      if (ready === true) topics.add(q.topic);
      else lingering = Math.min(lingering, ready);
    }
    if (topics.size === 0) {
      this.setTimer(lingering, true);
      return;
    }
    let md: Awaited<ReturnType<KafkaClient['metadataFor']>>;
    try {
      md = await this.client.metadataFor([...topics], true);
      await this.ensureProducerId();
    } catch (e) {
      // No metadata or producer id: each ready head batch spends one attempt on it (and backs off).
      for (const q of this.queues.values()) {
        if (q.batches.length > 0 && this.readiness(q, before) === true) {
          this.retryOrFail(q.batches.shift()!, e);
        }
      }
      return;
    }
    // Answers and retries may have come in during the wait: look again.
    const nowMs = this.client.runtime.clock.nowMs();
    const byLeader = new Map<number, PartitionQueue[]>();
    for (const q of this.queues.values()) {
      if (q.batches.length === 0 || this.readiness(q, nowMs) !== true) continue;
      const leader = md.topics.get(q.topic)?.partitions.find((p) => p.partition === q.partition)?.leader;
      if (leader === undefined || leader < 0) {
        this.client.invalidateMetadata();
        this.retryOrFail(q.batches.shift()!, kafkaError(5));
        continue;
      }
      const list = byLeader.get(leader);
      if (list) list.push(q);
      else byLeader.set(leader, [q]);
    }
    for (const [leader, list] of byLeader) {
      // Requests while the broker has room, each with the head batch of every ready partition.
      while ((this.inFlightByNode.get(leader) ?? 0) < this.options.maxInFlight) {
        const batches: Batch[] = [];
        let size = 0;
        for (const q of list) {
          if (q.batches.length === 0 || this.readiness(q, nowMs) !== true) continue;
          const b = q.batches[0]!;
          const bytes = this.encoded(b).length;
          if (batches.length > 0 && size + bytes > this.options.maxRequestSize) break;
          q.batches.shift();
          batches.push(b);
          size += bytes;
        }
        if (batches.length === 0) break;
        this.sendRequest(leader, batches);
      }
    }
    // The timer covers batches still lingering or backing off; the rest wait for an answer.
    let nextMs = Number.POSITIVE_INFINITY;
    for (const q of this.queues.values()) {
      if (q.batches.length === 0) continue;
      const ready = this.readiness(q, nowMs);
      if (ready !== true) nextMs = Math.min(nextMs, ready);
    }
    this.setTimer(nextMs, true);
  }

  /**
   * Makes the sender run again at `dueMs`. `exact` (the end of a pass, which saw every batch) also
   * moves a later timer earlier and drops one nothing needs; otherwise the timer only moves earlier.
   */
  private setTimer(dueMs: number, exact = false): void {
    if (this.timer !== null && (exact ? this.timer.dueMs === dueMs : this.timer.dueMs <= dueMs)) return;
    this.timer?.cancel();
    this.timer = null;
    if (dueMs === Number.POSITIVE_INFINITY) return;
    const delay = Math.max(0, dueMs - this.client.runtime.clock.nowMs());
    const cancel = this.client.runtime.scheduler.schedule('producer-linger', delay, () => {
      this.timer = null;
      this.wake();
    });
    this.timer = { dueMs, cancel };
  }

  /**
   * Idempotence: a producer id from any broker before the first batch is sequenced, and a new one
   * after a batch failed for good (its partition's sequences have a gap the broker would refuse).
   */
  private async ensureProducerId(): Promise<void> {
    if (!this.options.idempotence || (this.producerId >= 0n && !this.producerIdStale)) return;
    this.producerIdRequest ??= this.client
      .retry(async () => {
        const r = await this.client.send({ kind: 'any' }, Apis.InitProducerId, () => ({
          transactionalId: null,
          transactionTimeoutMs: TRANSACTION_TIMEOUT_MS,
          producerId: -1n,
          producerEpoch: -1,
        }));
        if (r.errorCode !== 0) throw kafkaError(r.errorCode);
        return r;
      })
      .then((r) => {
        this.producerId = r.producerId;
        this.producerEpoch = r.producerEpoch;
        this.producerIdStale = false;
      })
      .finally(() => {
        this.producerIdRequest = null;
      });
    await this.producerIdRequest;
  }

  /** Idempotence: gives `b` its partition's next sequence under the current producer id. */
  private sequence(b: Batch): { producerId: bigint; producerEpoch: number; baseSequence: number } {
    const q = b.queue;
    if (q.sequencePid !== this.producerId) {
      q.sequencePid = this.producerId;
      q.nextSequence = 0;
    }
    const baseSequence = q.nextSequence;
    q.nextSequence = advanceSequence(baseSequence, b.records.length);
    q.unresolved.push(b);
    b.producerId = this.producerId;
    return { producerId: this.producerId, producerEpoch: this.producerEpoch, baseSequence };
  }

  private encoded(b: Batch): Buffer {
    if (b.encoded === null) {
      const base = b.records[0]!.timestampMs;
      b.drainOrder = this.drained++;
      b.encoded = encodeBatch({
        ...(this.options.idempotence ? this.sequence(b) : {}),
        baseTimestamp: base,
        compression: this.options.compression,
        records: b.records.map((p) => ({
          key: p.record.key,
          value: p.record.value,
          headers: p.record.headers ? [...p.record.headers] : [],
          timestampDelta: p.timestampMs - base,
        })),
      });
    }
    return b.encoded;
  }

  private sendRequest(leader: number, batches: Batch[]): void {
    const byTopic = new Map<string, { index: number; records: Buffer }[]>();
    for (const b of batches) {
      let parts = byTopic.get(b.queue.topic);
      if (!parts) {
        parts = [];
        byTopic.set(b.queue.topic, parts);
      }
      parts.push({ index: b.queue.partition, records: b.encoded! });
    }
    const request = () => ({
      transactionalId: null,
      acks: this.options.acks,
      timeoutMs: this.client.requestTimeoutMs,
      topicData: [...byTopic].map(([name, partitionData]) => ({ name, partitionData })),
    });
    const target = { kind: 'node', id: leader } as const;
    if (this.options.acks === 0) {
      // Nothing comes back: written to the socket is as acknowledged as it gets.
      const p = this.client.sendOneWay(target, Apis.Produce, request).then(
        () => {
          for (const b of batches) this.complete(b, null, -1n);
        },
        (e: unknown) => {
          for (const b of batches) this.retryOrFail(b, e);
        },
      );
      this.track(p);
      return;
    }
    this.inFlightByNode.set(leader, (this.inFlightByNode.get(leader) ?? 0) + 1);
    for (const b of batches) b.queue.inFlight++;
    const p = this.client
      .send(target, Apis.Produce, request)
      .then(
        (resp) => {
          for (const b of batches) {
            const r = resp.responses
              .find((t) => t.name === b.queue.topic)
              ?.partitionResponses.find((x) => x.index === b.queue.partition);
            if (!r) {
              this.complete(
                b,
                new ClientError(
                  `broker ${leader} answered Produce without a result for ${b.queue.topic}-${b.queue.partition}`,
                ),
                -1n,
              );
            } else if (r.errorCode !== 0) {
              this.retryOrFail(b, kafkaError(r.errorCode, r.errorMessage));
            } else {
              this.complete(b, null, r.baseOffset);
            }
          }
        },
        (e: unknown) => {
          for (const b of batches) this.retryOrFail(b, e);
        },
      )
      .finally(() => {
        this.inFlightByNode.set(leader, this.inFlightByNode.get(leader)! - 1);
        for (const b of batches) b.queue.inFlight--;
      });
    this.track(p);
  }

  /** The sender looks again once a request is answered or has failed. */
  private track(p: Promise<void>): void {
    void p.finally(() => this.wake());
  }

  /**
   * A retriable failure puts the batch back in its partition, in front of the batches encoded after
   * it, after a back-off. Idempotent, OUT_OF_ORDER_SEQUENCE_NUMBER is retriable for a batch behind
   * an earlier unresolved one of its partition: the gap is that batch's, which is being retried.
   */
  private retryOrFail(b: Batch, e: unknown): void {
    const error = e instanceof Error ? e : new Error(String(e));
    const retriable =
      isRetriable(error) ||
      (error instanceof KafkaResponseError &&
        error.code === ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER &&
        b.queue.unresolved[0] !== b);
    if (b.attempts >= this.options.retries || !retriable) {
      this.complete(b, error, -1n);
      return;
    }
    this.client.invalidateMetadata();
    const backoff = Math.min(this.options.retryBackoffMs * 2 ** b.attempts, 1000);
    b.attempts++;
    b.notBeforeMs = this.client.runtime.clock.nowMs() + backoff;
    const { batches } = b.queue;
    const at = batches.findIndex((x) => x.drainOrder < 0 || x.drainOrder > b.drainOrder);
    batches.splice(at < 0 ? batches.length : at, 0, b);
    this.setTimer(b.notBeforeMs);
  }

  private complete(b: Batch, error: Error | null, baseOffset: bigint): void {
    this.unfinished--;
    this.bufferedBytes -= b.bytes;
    const { unresolved } = b.queue;
    const i = unresolved.indexOf(b);
    if (i >= 0) {
      unresolved.splice(i, 1);
      // The broker may or may not have written it: the sequences after it would be refused.
      if (error !== null && b.producerId === this.producerId) this.producerIdStale = true;
    }
    let thrown: unknown = null;
    b.records.forEach((p, i) => {
      const meta =
        error === null
          ? {
              topic: b.queue.topic,
              partition: b.queue.partition,
              offset: baseOffset < 0n ? -1n : baseOffset + BigInt(i),
            }
          : null;
      try {
        p.callback(error, meta);
      } catch (e) {
        thrown ??= e;
      }
    });
    for (const w of this.spaceWaiters.splice(0)) w();
    if (this.unfinished === 0) for (const w of this.idleWaiters.splice(0)) w();
    // A callback's own failure is the caller's bug: surface it once the bookkeeping is done.
    if (thrown !== null) throw thrown;
  }
}
