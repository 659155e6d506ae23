/**
 * The fault suite's checker. Idempotent acks=all producers (Skiff's own client) write, to every
 * partition of a topic, values `p<producer>-<sequence>` with a sequence per producer and
 * partition; every record the broker ACKNOWLEDGED is recorded with the offset it was given. After
 * the faults, every partition is read back from its current leader, and `verify` compares: each
 * acknowledged record must be at its offset (none lost, none moved), each producer's sequences must
 * rise along each partition (order kept, and a record written twice shows as a sequence seen
 * twice), and the replicas must hold the same batches up to the high watermark (`skiff
 * replica-verification` through the brokers, and the segment files read directly). The verdict is computed from the history alone, so hand-made
 * histories test it (checker.test.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Admin } from '../../src/client/admin.js';
import { Consumer } from '../../src/client/consumer.js';
import { KafkaClient, type PartitionMetadata } from '../../src/client/kafka-client.js';
import { Producer } from '../../src/client/producer.js';
import { parseBootstrap, systemRuntime } from '../../src/client/runtime.js';
import { runSkiff } from '../support/broker-process.js';

/** One acknowledged record: where the broker said it is, and when it was sent and acknowledged. */
export interface Ack {
  readonly producer: number;
  readonly partition: number;
  readonly sequence: number;
  readonly offset: bigint;
  readonly sentMs: number;
  readonly ackedMs: number;
}

/** One record as read back from a partition's leader. */
export interface LogRecord {
  readonly offset: bigint;
  readonly value: string;
}

export interface Verdict {
  readonly acknowledged: number;
  /** Acknowledged records absent from their partition. */
  readonly lost: readonly Ack[];
  /** Acknowledged records present, but at an offset other than the one acknowledged. */
  readonly moved: readonly Ack[];
  /** Records present more than once in a partition (one per extra copy). */
  readonly duplicated: readonly string[];
  /** Records that came after a later sequence of their producer in their partition. */
  readonly reordered: readonly string[];
  /** Values the checker never writes: someone else wrote to the topic, or the bytes changed. */
  readonly foreign: readonly string[];
}

export function recordValue(producer: number, sequence: number): string {
  return `p${producer}-${sequence}`;
}

function parseValue(value: string): { producer: number; sequence: number } | null {
  const m = /^p(\d+)-(\d+)$/.exec(value);
  return m === null ? null : { producer: Number(m[1]), sequence: Number(m[2]) };
}

/** The verdict on a history: the acknowledged records against each partition as read back. */
export function verify(acks: readonly Ack[], logs: ReadonlyMap<number, readonly LogRecord[]>): Verdict {
  const lost: Ack[] = [];
  const moved: Ack[] = [];
  const duplicated: string[] = [];
  const reordered: string[] = [];
  const foreign: string[] = [];
  const offsetsOf = new Map<string, bigint[]>();
  for (const [partition, records] of logs) {
    const last = new Map<number, number>();
    for (const r of records) {
      const key = `${partition}/${r.value}`;
      const seen = offsetsOf.get(key);
      if (seen === undefined) offsetsOf.set(key, [r.offset]);
      else {
        seen.push(r.offset);
        duplicated.push(`${key}@${r.offset}`);
        continue;
      }
      const v = parseValue(r.value);
      if (v === null) {
        foreign.push(`${key}@${r.offset}`);
        continue;
      }
      const before = last.get(v.producer);
      if (before !== undefined && v.sequence < before)
        reordered.push(`${key}@${r.offset} after p${v.producer}-${before}`);
      else last.set(v.producer, v.sequence);
    }
  }
  for (const a of acks) {
    const offsets = offsetsOf.get(`${a.partition}/${recordValue(a.producer, a.sequence)}`);
    if (offsets === undefined) lost.push(a);
    else if (!offsets.includes(a.offset)) moved.push(a);
  }
  return { acknowledged: acks.length, lost, moved, duplicated, reordered, foreign };
}

/** Whether the verdict holds every promise. */
export function clean(v: Verdict): boolean {
  return (
    v.lost.length === 0 &&
    v.moved.length === 0 &&
    v.duplicated.length === 0 &&
    v.reordered.length === 0 &&
    v.foreign.length === 0
  );
}

/**
 * Seconds from `sinceMs` (a fault injected or healed) to the first acknowledgement of a record
 * sent at or after it: the first acks=all produce that succeeded; null if none did.
 */
export function recoverySeconds(acks: readonly Ack[], sinceMs: number): number | null {
  let first: number | null = null;
  for (const a of acks) if (a.sentMs >= sinceMs && (first === null || a.ackedMs < first)) first = a.ackedMs;
  return first === null ? null : (first - sinceMs) / 1000;
}

/** The scenario's one line. */
export function summary(v: Verdict, recovery: number | null): string {
  const extra = [
    v.moved.length > 0 ? `, moved ${v.moved.length}` : '',
    v.reordered.length > 0 ? `, reordered ${v.reordered.length}` : '',
    v.foreign.length > 0 ? `, foreign ${v.foreign.length}` : '',
  ].join('');
  const rec = recovery === null ? 'none' : `${recovery.toFixed(2)}s`;
  return `records acknowledged ${v.acknowledged}, lost ${v.lost.length}, duplicated ${v.duplicated.length}${extra}, recovery ${rec}`;
}

/** A detailed account of what failed, for an assertion's message. */
export function explain(v: Verdict): string {
  const few = (xs: readonly unknown[]) =>
    xs
      .slice(0, 5)
      .map((x) =>
        typeof x === 'string'
          ? x
          : `${(x as Ack).partition}/${recordValue((x as Ack).producer, (x as Ack).sequence)}@${(x as Ack).offset}`,
      )
      .join(', ');
  return [
    `lost: ${few(v.lost)}`,
    `moved: ${few(v.moved)}`,
    `duplicated: ${few(v.duplicated)}`,
    `reordered: ${few(v.reordered)}`,
    `foreign: ${few(v.foreign)}`,
  ].join('; ');
}

function clientFor(bootstrap: string, clientId: string): KafkaClient {
  return new KafkaClient({
    bootstrap: parseBootstrap(bootstrap),
    clientId,
    runtime: systemRuntime(),
    requestTimeoutMs: 5_000,
    connectTimeoutMs: 2_000,
  });
}

/** At most this many records of one producer unacknowledged: a bound on the load's memory. */
const MAX_UNACKED = 200;

/**
 * The load: `producers` idempotent acks=all producers, each sending to every partition in turn
 * about every `pauseMs`, until stop(). Records that fail for good (retries spent) are counted, not
 * acknowledged: the promise concerns acknowledged records only. Owned by one scenario.
 */
export class Load {
  readonly acks: Ack[] = [];
  failed = 0;
  private running = true;
  private stopped: Promise<void> | null = null;
  private readonly loops: Promise<void>[] = [];
  private readonly clients: KafkaClient[] = [];

  constructor(
    private readonly bootstrap: string,
    private readonly topic: string,
    private readonly partitions: number,
    producers = 2,
    private readonly pauseMs = 4,
  ) {
    for (let i = 0; i < producers; i++) this.loops.push(this.run(i));
  }

  private async run(id: number): Promise<void> {
    const client = clientFor(this.bootstrap, `checker-${id}`);
    this.clients.push(client);
    // Retries without end: a record is given up only when the scenario stops the load.
    const producer = new Producer(client, { acks: -1, idempotence: true, retries: 1_000_000, lingerMs: 2 });
    const next = new Array<number>(this.partitions).fill(0);
    let unacked = 0;
    const drained: (() => void)[] = [];
    for (let n = 0; this.running; n++) {
      const partition = n % this.partitions;
      const sequence = next[partition]!++;
      const sentMs = Date.now();
      unacked++;
      await producer.send(
        { topic: this.topic, partition, key: null, value: Buffer.from(recordValue(id, sequence)) },
        (error, meta) => {
          unacked--;
          if (error === null && meta !== null)
            this.acks.push({
              producer: id,
              partition,
              sequence,
              offset: meta.offset,
              sentMs,
              ackedMs: Date.now(),
            });
          else this.failed++;
          if (unacked < MAX_UNACKED) for (const w of drained.splice(0)) w();
        },
      );
      if (unacked >= MAX_UNACKED) await new Promise<void>((resolve) => drained.push(resolve));
      await new Promise((r) => setTimeout(r, this.pauseMs));
    }
    await producer.flush();
  }

  /** Resolves once a record sent at or after `sinceMs` is acknowledged. */
  async acknowledgedSince(sinceMs: number, timeoutMs = 60_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = recoverySeconds(this.acks, sinceMs);
      if (r !== null) return r;
      if (Date.now() > deadline)
        throw new Error(`no record acknowledged within ${timeoutMs} ms of the fault`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /**
   * Stops sending and waits until every record sent is acknowledged or failed; after `graceMs`
   * the clients close, failing what is left (a cluster that never recovers must not hang the run).
   */
  stop(graceMs = 60_000): Promise<void> {
    this.running = false;
    this.stopped ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      const all = Promise.all(this.loops);
      await Promise.race([all, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
      clearTimeout(timer);
      for (const c of this.clients) c.close();
      await all;
    })();
    return this.stopped;
  }
}

/**
 * `topic`'s partitions as every one of `brokers` (host:port each) describes them, when they all
 * agree on each partition's leader, leader epoch and ISR; undefined while one does not answer or
 * differs. A broker cut off from the metadata store keeps its stale view (a leadership it lost, an
 * ISR it left): asking one broker could be answered by it.
 */
export async function agreedPartitions(
  brokers: readonly string[],
  topic: string,
): Promise<readonly PartitionMetadata[] | undefined> {
  const views = await Promise.all(
    brokers.map(async (b) => {
      // A client of its own per broker: its first Metadata goes to its only bootstrap server.
      const client = clientFor(b, 'checker-metadata');
      try {
        const t = (await client.fetchMetadata([topic])).topics.get(topic);
        return t === undefined || t.errorCode !== 0 ? undefined : t.partitions;
      } catch {
        return undefined;
      } finally {
        client.close();
      }
    }),
  );
  const key = (ps: readonly PartitionMetadata[]) =>
    JSON.stringify(ps.map((p) => [p.partition, p.leader, p.leaderEpoch, [...p.isr].sort()]));
  const first = views[0];
  if (first === undefined || views.some((v) => v === undefined || key(v) !== key(first))) return undefined;
  return first;
}

/**
 * Every partition of `topic` read back from its current leader, from the log start to the HW,
 * once every broker agrees on who leads it (agreedPartitions): a deposed leader that has not
 * learned it yet would serve its own, shorter log.
 */
export async function readBack(
  bootstrap: string,
  topic: string,
  partitions: number,
  timeoutMs = 60_000,
): Promise<ReadBack> {
  const deadline = Date.now() + timeoutMs;
  while ((await agreedPartitions(bootstrap.split(','), topic)) === undefined) {
    if (Date.now() > deadline) throw new Error(`the brokers do not agree on the leaders of ${topic}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const client = clientFor(bootstrap, 'checker-read-back');
  try {
    const tps = Array.from({ length: partitions }, (_, partition) => ({ topic, partition }));
    const ends = await new Admin(client).listOffsets(tps, -1n);
    const end = new Map<number, bigint>();
    for (const tp of tps) {
      const r = ends.get(`${topic}-${tp.partition}`);
      if (r === undefined || !r.ok)
        throw new Error(
          `no high watermark for ${topic}-${tp.partition}: ${r?.ok === false ? r.error.message : 'no answer'}`,
        );
      end.set(tp.partition, r.value);
    }
    const consumer = new Consumer(client, { resetTo: 'earliest' });
    await consumer.assign(tps, 'earliest');
    const logs = new Map<number, LogRecord[]>(tps.map((tp) => [tp.partition, []]));
    while (tps.some((tp) => (consumer.position(tp) ?? 0n) < end.get(tp.partition)!)) {
      if (Date.now() > deadline) throw new Error(`read-back of ${topic} not done within ${timeoutMs} ms`);
      for (const r of await consumer.poll())
        if (r.offset < end.get(r.partition)!)
          logs.get(r.partition)!.push({ offset: r.offset, value: r.value?.toString() ?? '' });
    }
    return { logs, highWatermarks: end };
  } finally {
    client.close();
  }
}

/** What readBack read: each partition's records, and the high watermark it read up to. */
export interface ReadBack {
  readonly logs: Map<number, LogRecord[]>;
  readonly highWatermarks: ReadonlyMap<number, bigint>;
}

/**
 * The bytes of the batches a partition directory's segments hold below `highWatermark`, segment
 * after segment (where a replica rolled its segments does not matter). Read from the files, not
 * through a broker: a second opinion beside replica-verification.
 */
export function committedBytes(partitionDir: string, highWatermark: bigint): Buffer {
  const parts: Buffer[] = [];
  const segments = fs
    .readdirSync(partitionDir)
    .filter((f) => /^\d{20}\.log$/.test(f))
    .sort();
  for (const name of segments) {
    const file = fs.readFileSync(path.join(partitionDir, name));
    // A batch: base offset (8 bytes), length (4) of what follows, then its header, where the last
    // offset delta sits 23 bytes from the batch's start.
    for (let pos = 0; pos + LAST_OFFSET_DELTA_AT + 4 <= file.length; ) {
      const size = 12 + file.readInt32BE(pos + 8);
      const last = file.readBigInt64BE(pos) + BigInt(file.readInt32BE(pos + LAST_OFFSET_DELTA_AT));
      if (last >= highWatermark || pos + size > file.length) return Buffer.concat(parts);
      parts.push(file.subarray(pos, pos + size));
      pos += size;
    }
  }
  return Buffer.concat(parts);
}

const LAST_OFFSET_DELTA_AT = 23;

/**
 * Each partition's committed bytes (committedBytes) compared across the replicas' log dirs; what
 * differs first, or null when every replica holds the same bytes up to the high watermark.
 */
export function replicaFilesDiffer(
  logDirs: readonly string[],
  topic: string,
  highWatermarks: ReadonlyMap<number, bigint>,
): string | null {
  for (const [partition, hw] of highWatermarks) {
    const copies = logDirs.map((d) => committedBytes(path.join(d, `${topic}-${partition}`), hw));
    for (let i = 1; i < copies.length; i++) {
      if (!copies[i]!.equals(copies[0]!)) {
        let at = 0;
        while (at < copies[0]!.length && copies[i]![at] === copies[0]![at]) at++;
        return `${topic}-${partition} below the HW ${hw}: ${logDirs[i]} differs from ${logDirs[0]} at byte ${at} (${copies[i]!.length} and ${copies[0]!.length} bytes)`;
      }
    }
  }
  return null;
}

/**
 * The replicas of `topic` compared batch by batch up to the high watermark (`skiff
 * replica-verification`, replica id -2 fetches from each replica); the tool's output when they
 * differ or it cannot finish, null when they are the same.
 */
export async function replicasDiffer(bootstrap: string, topic: string): Promise<string | null> {
  const r = await runSkiff(
    [
      'replica-verification',
      '--bootstrap-server',
      bootstrap,
      '--topics-include',
      topic,
      '--max-duration-ms',
      '60000',
    ],
    '',
    90_000,
  );
  return r.status === 0 ? null : `exit ${r.status}: ${r.stdout}${r.stderr}`;
}
