/**
 * Transactions in the simulation (issue 20): one transactional producer and a read_committed
 * consumer per partition, over the real Produce and Fetch handlers and the real Partition's marker
 * appends. The producer plays its own coordinator as Kafka's transaction version 2 does: the
 * batches of transaction n carry producer epoch 2n, its COMMIT or ABORT markers epoch 2n + 1 (so a
 * batch held up in the network and arriving after the markers is fenced, never a hanging
 * transaction), written to each partition's current leader until replicated. A transaction whose
 * batch failed or went unanswered is aborted; others commit or abort at random.
 *
 * Checked as the simulation runs: a read_committed consumer, filtering with the fetch's aborted
 * transactions as Kafka's consumer does, never returns a record of an aborted transaction nor of
 * one not yet decided; every leader's last stable offset ≤ its HW. Checked at the end (clean
 * elections only): every committed record was read by its read_committed consumer, exactly once.
 */
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import { type BatchHeader, isControl, isTransactional } from '../../src/protocol/records/batch.js';
import { batchRecordsSection, encodeBatch } from '../../src/protocol/records/codec.js';
import { readEndTxnMarker } from '../../src/protocol/records/end-txn-marker.js';
import { ControlRecordType, readRecords } from '../../src/protocol/records/record.js';
import { batchesIn } from '../../src/protocol/records/validate.js';
import type { SimCluster } from './sim-cluster.js';

const PRODUCER_ID = 7000n;
const TRANSACTIONAL_ID = 'sim-txn';
const VALUE = /^txn (\d+) /;

export class SimTransactions {
  /** Transaction number → committed (true) or aborted (false), once decided. */
  readonly outcomes = new Map<number, boolean>();
  /** Records of each transaction sent and acknowledged, by partition (values). */
  private readonly written = new Map<number, Map<string, string[]>>();
  /** Records read by each partition's read_committed consumer (values, in order). */
  private readonly read = new Map<string, string[]>();
  private running = false;
  /** A transaction is under way (its markers not all written yet). */
  busy = false;
  private consuming = false;
  private next = 0;
  committed = 0;
  aborted = 0;

  get recordsRead(): number {
    let n = 0;
    for (const r of this.read.values()) n += r.length;
    return n;
  }

  constructor(private readonly c: SimCluster) {}

  private fail(message: string): void {
    this.c.violations.push(message);
  }

  /** Runs transactions one after the other, a pause of about `intervalMs` between them, until stopped. */
  start(intervalMs: number): void {
    this.running = true;
    const loop = async (): Promise<void> => {
      while (this.running && this.next < 16_000) {
        this.busy = true;
        await this.transaction(this.next++);
        this.busy = false;
        await this.sleep(this.c.random.between(Math.floor(intervalMs / 2), intervalMs * 2));
      }
    };
    void loop();
  }

  stop(): void {
    this.running = false;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.c.queue.schedule('txn-producer', ms, resolve));
  }

  private async transaction(n: number): Promise<void> {
    const { c } = this;
    const partitions = c.config.partitions;
    const first = c.random.int(partitions);
    const keys = [`t-${first}`];
    if (partitions > 1 && c.random.chance(0.5))
      keys.push(`t-${(first + 1 + c.random.int(partitions - 1)) % partitions}`);
    const written = new Map<string, string[]>();
    this.written.set(n, written);
    let ok = true;
    for (const key of keys) {
      let sequence = 0;
      for (let b = c.random.between(1, 3); b > 0 && ok; b--) {
        const values = Array.from(
          { length: c.random.between(1, 3) },
          (_, i) => `txn ${n} ${key} ${sequence + i} ${'y'.repeat(c.random.int(100))}`,
        );
        const batch = encodeBatch({
          producerId: PRODUCER_ID,
          producerEpoch: 2 * n,
          baseSequence: sequence,
          isTransactional: true,
          baseTimestamp: BigInt(c.queue.clock.nowMs()),
          records: values.map((v) => ({ key: null, value: Buffer.from(v) })),
        });
        const leader = c.leaderOf(key);
        const r =
          leader < 0
            ? null
            : await c.net
                .request(
                  -1,
                  leader,
                  () => c.brokers.get(leader)!.produce(key, batch, -1, TRANSACTIONAL_ID),
                  `txn-${key}`,
                )
                .catch(() => null);
        if (r === null || r.errorCode !== 0) {
          ok = false;
          break;
        }
        sequence += values.length;
        written.set(key, [...(written.get(key) ?? []), ...values]);
      }
    }
    const commit = ok && c.random.chance(0.7);
    this.outcomes.set(n, commit);
    if (commit) this.committed++;
    else this.aborted++;
    for (const key of keys) await this.writeMarker(key, 2 * n + 1, commit);
  }

  /** As the coordinator: the marker again, to the partition's current leader, until it is replicated. */
  private async writeMarker(key: string, epoch: number, commit: boolean): Promise<void> {
    const { c } = this;
    for (;;) {
      const leader = c.leaderOf(key);
      const code =
        leader < 0
          ? ErrorCode.LEADER_NOT_AVAILABLE
          : await c.net
              .request(
                -1,
                leader,
                () => c.brokers.get(leader)!.writeMarker(key, PRODUCER_ID, epoch, commit),
                `txn-marker-${key}`,
              )
              .catch(() => ErrorCode.REQUEST_TIMED_OUT);
      if (code === ErrorCode.NONE) return;
      await this.sleep(100);
    }
  }

  /** One read_committed consumer per partition, long-polling its leader from offset 0, until stopped. */
  startConsuming(maxWaitMs = 400): void {
    const { c } = this;
    this.consuming = true;
    for (let p = 0; p < c.config.partitions; p++) {
      const key = `t-${p}`;
      const read: string[] = [];
      this.read.set(key, read);
      let offset = 0n;
      const next = (delayMs: number): void => {
        if (this.consuming) c.queue.schedule('txn-consumer', delayMs, poll);
      };
      const poll = (): void => {
        const leader = c.leaderOf(key);
        if (leader < 0) {
          next(100);
          return;
        }
        void c.net
          .request(
            -1,
            leader,
            () => c.brokers.get(leader)!.consumerFetch(key, offset, maxWaitMs, 1),
            `txn-consumer-${key}`,
          )
          .then(
            (r) => {
              const d = r.responses[0]?.partitions[0];
              if (d === undefined || d.errorCode !== 0) return next(100);
              if (d.lastStableOffset > d.highWatermark)
                this.fail(
                  `${key}: broker ${leader} answered a last stable offset ${d.lastStableOffset} above its HW ${d.highWatermark}`,
                );
              offset = this.consume(
                key,
                d.records ?? Buffer.alloc(0),
                d.abortedTransactions ?? [],
                d.lastStableOffset,
                offset,
                read,
              );
              next(0);
            },
            () => next(100),
          );
      };
      next(0);
    }
  }

  stopConsuming(): void {
    this.consuming = false;
  }

  /**
   * Kafka's consumer in read_committed: a transactional batch of a producer whose transaction the
   * fetch lists as aborted (from its first offset) is skipped until that producer's ABORT marker;
   * control batches are never records. Returns the next fetch offset.
   */
  private consume(
    key: string,
    records: Buffer,
    abortedList: readonly { producerId: bigint; firstOffset: bigint }[],
    lastStableOffset: bigint,
    offset: bigint,
    read: string[],
  ): bigint {
    const pendingAborts = [...abortedList].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1));
    const aborted = new Set<bigint>();
    let nextOffset = offset;
    for (const { header: h, pos: position } of batchesIn(records)) {
      const last = h.baseOffset + BigInt(h.lastOffsetDelta);
      if (last < offset) continue;
      nextOffset = last + 1n;
      if (last >= lastStableOffset)
        this.fail(
          `${key}: a read_committed fetch returned offset ${last} at or above the last stable offset ${lastStableOffset}`,
        );
      if (h.producerId >= 0n) {
        while (pendingAborts.length > 0 && pendingAborts[0]!.firstOffset <= last)
          aborted.add(pendingAborts.shift()!.producerId);
        if (isControl(h.attributes)) {
          if (readEndTxnMarker(records, position)?.type === ControlRecordType.abort)
            aborted.delete(h.producerId);
          continue;
        }
        if (isTransactional(h.attributes) && aborted.has(h.producerId)) continue;
      }
      if (isControl(h.attributes)) continue;
      for (const value of this.values(records, position, h)) {
        const m = VALUE.exec(value);
        if (m === null) continue;
        const n = Number(m[1]);
        const outcome = this.outcomes.get(n);
        if (outcome !== true)
          this.fail(
            `${key}: read_committed returned a record of transaction ${n} (${outcome === false ? 'aborted' : 'not decided'}) at ${h.baseOffset}`,
          );
        read.push(value);
      }
    }
    return nextOffset;
  }

  private values(records: Buffer, position: number, h: BatchHeader): string[] {
    const section = batchRecordsSection(records, position, { decompress: true });
    return readRecords(section.records, h.recordsCount).map((r) => r.value?.toString() ?? '');
  }

  /** Every committed record read once by its partition's read_committed consumer, in order. */
  checkCommittedRead(): void {
    for (const [key, read] of this.read) {
      const expected: string[] = [];
      for (const [n, byKey] of this.written)
        if (this.outcomes.get(n) === true) expected.push(...(byKey.get(key) ?? []));
      const got = new Set(read);
      if (got.size !== read.length)
        this.fail(`${key}: read_committed read ${read.length - got.size} records twice`);
      const missing = expected.filter((v) => !got.has(v));
      if (missing.length > 0)
        this.fail(
          `${key}: ${missing.length} committed records never read by read_committed, first: ${missing[0]!.slice(0, 40)}`,
        );
    }
  }
}
