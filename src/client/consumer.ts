import { topicPartitionKey } from '../common/topic-partition.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import {
  batchesIn,
  decodeRecords,
  isControl,
  recordOffset,
  recordTimestamp,
  timestampType,
} from '../protocol/records/index.js';
import { Apis } from './apis.js';
import { ClientError, kafkaError } from './errors.js';
import { isRetriable, type KafkaClient } from './kafka-client.js';
import { sendToLeaders, type TopicPartition, tpKey } from './partitions.js';

export interface ConsumerOptions {
  /** fetch.max.wait.ms */
  readonly maxWaitMs: number;
  /** fetch.min.bytes */
  readonly minBytes: number;
  /** fetch.max.bytes */
  readonly maxBytes: number;
  /** max.partition.fetch.bytes */
  readonly partitionMaxBytes: number;
  /** auto.offset.reset when a position falls out of the log. */
  readonly resetTo: 'earliest' | 'latest';
}

export const DEFAULT_CONSUMER_OPTIONS: ConsumerOptions = {
  maxWaitMs: 500,
  minBytes: 1,
  maxBytes: 52_428_800,
  partitionMaxBytes: 1_048_576,
  resetTo: 'latest',
};

export interface ConsumedRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  readonly timestamp: bigint;
  readonly timestampType: 'CreateTime' | 'LogAppendTime';
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly { key: string; value: Buffer | null }[];
}

/** Where an assigned partition starts: the log start, the log end, or an offset. */
export type StartAt = 'earliest' | 'latest' | bigint;

/**
 * A consumer with manual assignment (no group): positions per partition, one Fetch per leader per
 * poll. Enough for the console and perf tools, which read whole partitions. Owned by one tool run.
 */
export class Consumer {
  private readonly positions = new Map<string, { tp: TopicPartition; offset: bigint }>();
  private readonly options: ConsumerOptions;

  constructor(
    private readonly client: KafkaClient,
    options: Partial<ConsumerOptions> = {},
  ) {
    this.options = { ...DEFAULT_CONSUMER_OPTIONS, ...options };
  }

  /** Assigns partitions, resolving 'earliest'/'latest' to offsets now. */
  async assign(tps: readonly TopicPartition[], start: StartAt): Promise<void> {
    if (typeof start === 'bigint') {
      for (const tp of tps) this.positions.set(tpKey(tp), { tp, offset: start });
      return;
    }
    await this.resetPositions(tps, start);
  }

  position(tp: TopicPartition): bigint | undefined {
    return this.positions.get(tpKey(tp))?.offset;
  }

  /** auto.offset.reset: where a partition without a position starts. */
  get resetTo(): 'earliest' | 'latest' {
    return this.options.resetTo;
  }

  /** Every assigned partition with its position (the next offset to read). */
  assignment(): { tp: TopicPartition; offset: bigint }[] {
    return [...this.positions.values()].map((p) => ({ tp: p.tp, offset: p.offset }));
  }

  /** Moves an assigned partition's position (Kafka's seek); an unassigned one is ignored. */
  seek(tp: TopicPartition, offset: bigint): void {
    const p = this.positions.get(tpKey(tp));
    if (p) p.offset = offset;
  }

  /** Drops every assignment (a group rebalance revokes them). */
  unassign(): void {
    this.positions.clear();
  }

  /** One fetch round: records from every leader that had some within fetch.max.wait.ms. */
  async poll(): Promise<ConsumedRecord[]> {
    const out: ConsumedRecord[] = [];
    // Nothing assigned (a group member left without partitions): wait as a fetch would, not spin.
    if (this.positions.size === 0) {
      await this.client.runtime.sleep(this.options.maxWaitMs);
      return out;
    }
    const reset: TopicPartition[] = [];
    const tps = [...this.positions.values()].map((p) => p.tp);
    const results = await sendToLeaders(this.client, tps, (leader, group) =>
      this.fetchFrom(leader, group, out),
    );
    for (const tp of tps) {
      const r = results.get(tpKey(tp));
      if (r && !r.ok) {
        if (r.error instanceof Error && 'code' in r.error && r.error.code === ErrorCode.OFFSET_OUT_OF_RANGE)
          reset.push(tp);
        else if (!isRetriable(r.error)) throw r.error;
      }
    }
    if (reset.length > 0) await this.resetPositions(reset, this.options.resetTo);
    return out;
  }

  private async resetPositions(tps: readonly TopicPartition[], to: 'earliest' | 'latest'): Promise<void> {
    const ts = to === 'earliest' ? -2n : -1n;
    const results = await sendToLeaders(this.client, tps, async (leader, group) => {
      const resp = await this.client.send({ kind: 'node', id: leader }, Apis.ListOffsets, () => ({
        replicaId: -1,
        isolationLevel: 0,
        topics: groupTopics(group).map(([name, parts]) => ({
          name,
          partitions: parts.map((p) => ({
            partitionIndex: p,
            currentLeaderEpoch: -1,
            timestamp: ts,
            maxNumOffsets: 1,
          })),
        })),
        timeoutMs: this.client.requestTimeoutMs,
      }));
      const m = new Map<string, { errorCode: number; value: bigint }>();
      for (const t of resp.topics)
        for (const p of t.partitions)
          m.set(topicPartitionKey(t.name, p.partitionIndex), { errorCode: p.errorCode, value: p.offset });
      return m;
    });
    for (const tp of tps) {
      const r = results.get(tpKey(tp))!;
      if (!r.ok) throw r.error;
      this.positions.set(tpKey(tp), { tp, offset: r.value });
    }
  }

  private async fetchFrom(
    leader: number,
    group: TopicPartition[],
    out: ConsumedRecord[],
  ): Promise<Map<string, { errorCode: number; value: null }>> {
    const resp = await this.client.send({ kind: 'node', id: leader }, Apis.Fetch, () => ({
      clusterId: null,
      replicaId: -1,
      replicaState: { replicaId: -1, replicaEpoch: -1n },
      maxWaitMs: this.options.maxWaitMs,
      minBytes: this.options.minBytes,
      maxBytes: this.options.maxBytes,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: groupTopics(group).map(([topic, parts]) => ({
        topic,
        topicId: '',
        partitions: parts.map((partition) => ({
          partition,
          currentLeaderEpoch: -1,
          fetchOffset: this.positions.get(topicPartitionKey(topic, partition))!.offset,
          lastFetchedEpoch: -1,
          logStartOffset: -1n,
          partitionMaxBytes: this.options.partitionMaxBytes,
          replicaDirectoryId: '',
        })),
      })),
      forgottenTopicsData: [],
      rackId: '',
    }));
    if (resp.errorCode !== 0) throw kafkaError(resp.errorCode);
    const answers = new Map<string, { errorCode: number; value: null }>();
    for (const t of resp.responses) {
      for (const p of t.partitions) {
        const key = topicPartitionKey(t.topic, p.partitionIndex);
        answers.set(key, { errorCode: p.errorCode, value: null });
        const pos = this.positions.get(key);
        if (p.errorCode !== 0 || !pos || !p.records) continue;
        pos.offset = this.decode(t.topic, p.partitionIndex, p.records, pos.offset, out);
      }
    }
    return answers;
  }

  /** Appends the records at or after `from` and returns the next position. */
  private decode(
    topic: string,
    partition: number,
    records: Buffer,
    from: bigint,
    out: ConsumedRecord[],
  ): bigint {
    let next = from;
    const scan = batchesIn(records);
    for (const entry of scan) {
      const last = entry.header.baseOffset + BigInt(entry.header.lastOffsetDelta);
      if (last < next) continue;
      if (!isControl(entry.header.attributes)) {
        const batch = decodeRecords(records.subarray(entry.pos, entry.pos + entry.size), {
          decompress: true,
        });
        for (const r of batch.records) {
          const offset = recordOffset(batch.header, r);
          if (offset < next) continue;
          out.push({
            topic,
            partition,
            offset,
            timestamp: recordTimestamp(batch.header, r),
            timestampType: timestampType(batch.header.attributes),
            key: r.key,
            value: r.value,
            headers: r.headers,
          });
        }
      }
      next = last + 1n;
    }
    // A batch larger than max.partition.fetch.bytes never fits; Kafka returns the first batch
    // whole, so a truncated one here means the broker broke that rule.
    if (next === from && scan.invalid !== null && scan.invalid.pos === 0 && records.length > 0) {
      throw new ClientError(`fetch of ${topic}-${partition} at offset ${from} returned no complete batch`);
    }
    return next;
  }
}

function groupTopics(tps: readonly TopicPartition[]): [string, number[]][] {
  const m = new Map<string, number[]>();
  for (const tp of tps) m.set(tp.topic, [...(m.get(tp.topic) ?? []), tp.partition]);
  return [...m];
}
