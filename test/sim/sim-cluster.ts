/**
 * A simulated cluster: N SimBrokers, the SimController, a seeded network and producers, plus the
 * invariants checked after every event. Everything random comes from one SeededRandom, so a
 * failing run replays exactly from its seed (SKIFF_SIM_SEED=n).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SeededRandom } from '../../src/common/random.js';
import type { PartitionState } from '../../src/metadata/cluster-metadata.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import { readBatchHeader } from '../../src/protocol/records/batch.js';
import { encodeBatch } from '../../src/protocol/records/codec.js';
import { batchesIn } from '../../src/protocol/records/validate.js';
import { DEFAULT_FETCHER_CONFIG } from '../../src/replication/fetcher.js';
import type { Log } from '../../src/storage/log.js';
import { type BrokerSimConfig, type ProduceResult, SimBroker } from './sim-broker.js';
import { SimController } from './sim-controller.js';
import { EventQueue, type NetworkConfig, SimNetwork } from './sim-core.js';

export interface ClusterConfig {
  brokers: number;
  partitions: number;
  replicationFactor: number;
  broker: BrokerSimConfig;
  network: NetworkConfig;
  uncleanElection: boolean;
}

export function defaultClusterConfig(): ClusterConfig {
  return {
    brokers: 3,
    partitions: 2,
    replicationFactor: 3,
    uncleanElection: false,
    broker: {
      replicaLagTimeMaxMs: 2000,
      minInsyncReplicas: 2,
      fetcher: {
        ...DEFAULT_FETCHER_CONFIG,
        maxWaitMs: 100,
        backoffMs: 200,
        fetchMaxBytes: 4096,
        responseMaxBytes: 6144,
      },
      segmentBytes: 16 * 1024,
      sessionTimeoutMs: 600,
      produceTimeoutMs: 1500,
      heartbeatIntervalMs: 150,
    },
    network: {
      minDelayMs: 1,
      maxDelayMs: 8,
      dropRate: 0,
      stallRate: 0,
      stallMaxMs: 300,
      requestTimeoutMs: 2500,
    },
  };
}

export interface AckedRecord {
  readonly key: string;
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly crc: number;
}

export interface BatchInfo {
  readonly base: bigint;
  readonly last: bigint;
  readonly crc: number;
}

/** The batch holding `offset`, or null when the offset is outside the log. */
export function batchAt(log: Log, offset: bigint): BatchInfo | null {
  if (offset < log.logStartOffset || offset >= log.logEndOffset) return null;
  const r = log.read(offset, 1, 'log-end', true).records;
  if (r.length < 61) return null;
  const h = readBatchHeader(r, 0);
  return { base: h.baseOffset, last: h.baseOffset + BigInt(h.lastOffsetDelta), crc: h.crc };
}

export function batchesBetween(log: Log, from: bigint, to: bigint): BatchInfo[] {
  const out: BatchInfo[] = [];
  for (let o = from; o < to; ) {
    const b = batchAt(log, o);
    if (b === null) break;
    out.push(b);
    o = b.last + 1n;
  }
  return out;
}

export class SimCluster {
  readonly random: SeededRandom;
  readonly queue = new EventQueue();
  readonly net: SimNetwork;
  readonly controller: SimController;
  readonly brokers = new Map<number, SimBroker>();
  readonly acked: AckedRecord[] = [];
  readonly produceErrors = new Map<number, number>();
  readonly violations: string[] = [];
  readonly root: string;
  private readonly lastLeaderHw = new Map<string, bigint>();
  private produced = 0;
  private producing = false;
  private consuming = false;
  /** Consumer fetches sent, and batches they read. */
  consumerFetches = 0;
  consumed = 0;
  private eventsSinceCheck = 0;
  /** By partition: the leader epoch of its last unclean election. */
  private readonly uncleanEpoch = new Map<string, number>();

  constructor(
    readonly seed: number,
    readonly config: ClusterConfig = defaultClusterConfig(),
  ) {
    this.random = new SeededRandom(seed);
    this.root = fs.mkdtempSync(path.join(os.tmpdir(), `skiff-sim-${seed}-`));
    this.net = new SimNetwork(
      this.queue,
      this.random,
      config.network,
      (node) => {
        if (node <= 0) return 0;
        const b = this.brokers.get(node);
        return b?.alive ? b.incarnation : null;
      },
      (node) => this.brokers.get(node)?.pausedUntilMs ?? 0,
    );
    this.controller = new SimController(
      () => this.queue.clock.nowMs(),
      (st) => this.publish(st),
      (key) => {
        // An unclean election may lose acknowledged records by design (Kafka's trade-off): from
        // here on only what is acknowledged after it is held to the durability invariant — and
        // not what a deposed leader of an earlier epoch acknowledges before it learns of it (a
        // paused one whose ISR was itself alone, with min.insync.replicas 1).
        const kept = this.acked.filter((a) => a.key !== key);
        this.acked.length = 0;
        this.acked.push(...kept);
        this.uncleanEpoch.set(key, this.controller.records.get(key)?.leaderEpoch ?? -1);
      },
    );
    this.controller.uncleanElection = config.uncleanElection;
    for (let id = 1; id <= config.brokers; id++) {
      const b = new SimBroker(
        id,
        path.join(this.root, `b${id}`),
        this.queue,
        this.net,
        this.controller,
        config.broker,
      );
      b.peer = (peer) => this.brokers.get(peer)!;
      this.brokers.set(id, b);
    }
  }

  /** Starts every broker and creates the partitions (replicas spread round-robin). */
  start(): void {
    for (const b of this.brokers.values()) b.start();
    const ids = [...this.brokers.keys()];
    for (let p = 0; p < this.config.partitions; p++) {
      const replicas = Array.from(
        { length: this.config.replicationFactor },
        (_, i) => ids[(p + i) % ids.length]!,
      );
      this.controller.createPartition(`t-${p}`, replicas);
    }
    // The controller's session expiry check (the metadata store's lease expiry).
    const expire = (): void => {
      this.controller.expireSessions(this.config.broker.sessionTimeoutMs);
      this.queue.schedule('session-expiry', 50, expire);
    };
    this.queue.schedule('session-expiry', 50, expire);
  }

  close(): void {
    fs.rmSync(this.root, { recursive: true, force: true });
  }

  /** Metadata reaches each live broker after a network delay, in commit order per broker. */
  private publish(st: PartitionState): void {
    for (const b of this.brokers.values()) {
      if (!b.alive) continue;
      const incarnation = b.incarnation;
      this.net.deliver(
        0,
        b.id,
        () => {
          if (b.alive && b.incarnation === incarnation) b.applyState(st);
        },
        true,
        'metadata',
      );
    }
  }

  leaderOf(key: string): number {
    return this.controller.records.get(key)?.leader ?? -1;
  }

  /** Sends one batch with `acks` to the partition's leader, as a client would. */
  produceOnce(key: string, acks: number): Promise<ProduceResult | null> {
    const leader = this.leaderOf(key);
    if (leader < 0) return Promise.resolve(null);
    const n = this.produced++;
    const count = this.random.between(1, 4);
    const batch = encodeBatch({
      baseOffset: 0n,
      baseTimestamp: BigInt(this.queue.clock.nowMs()),
      records: Array.from({ length: count }, (_, i) => ({
        key: null,
        value: Buffer.from(`seed ${this.seed} record ${n}.${i} ${'x'.repeat(this.random.int(200))}`),
      })),
    });
    const crc = readBatchHeader(batch, 0).crc;
    return this.net
      .request(-1, leader, () => this.brokers.get(leader)!.produce(key, batch, acks), 'producer')
      .then(
        (r) => {
          this.produceErrors.set(r.errorCode, (this.produceErrors.get(r.errorCode) ?? 0) + 1);
          if (r.errorCode === 0 && acks === -1 && !this.excused(key, r)) {
            this.acked.push({ key, baseOffset: r.baseOffset, lastOffset: r.lastOffset, crc });
            this.checkAckedOnLeader(this.acked[this.acked.length - 1]!, leader);
          }
          return r;
        },
        () => null,
      );
  }

  /** A producer sending every `intervalMs` (±50%), acks=all 70% of the time, else acks=1 or 0, until stopped. */
  startProducing(intervalMs: number, acksAllShare = 0.7): void {
    this.producing = true;
    const tick = (): void => {
      if (!this.producing) return;
      const key = `t-${this.random.int(this.config.partitions)}`;
      void this.produceOnce(key, this.random.chance(acksAllShare) ? -1 : this.random.chance(0.75) ? 1 : 0);
      this.queue.schedule(
        'producer',
        this.random.between(Math.floor(intervalMs / 2), Math.floor((intervalMs * 3) / 2)),
        tick,
      );
    };
    this.queue.schedule('producer', intervalMs, tick);
  }

  /** An acks=all answer from a leader epoch before the partition's last unclean election. */
  private excused(key: string, r: ProduceResult): boolean {
    return (r.leaderEpoch ?? -1) < (this.uncleanEpoch.get(key) ?? -1);
  }

  stopProducing(): void {
    this.producing = false;
  }

  /**
   * One idempotent acks=all producer per partition (producer id 1000 + partition, one batch in
   * flight, as max.in.flight 1): a batch whose answer is lost or retriable is sent again, as it
   * was, to the partition's current leader — the duplicate a real network makes — and the
   * leader's duplicate detection must answer it with the offsets it was first written at. When
   * the broker has lost the producer's state (UNKNOWN_PRODUCER_ID, OUT_OF_ORDER_SEQUENCE_NUMBER)
   * the producer bumps its epoch and starts its sequence over, as the Java client does.
   */
  startIdempotentProducing(intervalMs: number): void {
    for (let p = 0; p < this.config.partitions; p++) {
      const key = `t-${p}`;
      const producerId = BigInt(1000 + p);
      let producerEpoch = 0;
      let sequence = 0;
      const send = (batch: Buffer, count: number, attempt: number, handled = { times: 0 }): void => {
        const leader = this.leaderOf(key);
        if (leader < 0) {
          this.queue.schedule('idempotent-producer', 100, () => send(batch, count, attempt, handled));
          return;
        }
        if (attempt > 0) this.idempotentRetries++;
        const crc = readBatchHeader(batch, 0).crc;
        void this.net
          .request(
            -1,
            leader,
            () => {
              if (++handled.times === 2) this.idempotentRedelivered++;
              return this.brokers.get(leader)!.produce(key, batch, -1);
            },
            `idempotent-${key}`,
          )
          .then(
            (r) => r,
            () => null,
          )
          .then((r) => {
            const code = r === null ? ErrorCode.REQUEST_TIMED_OUT : r.errorCode;
            if (r !== null) this.produceErrors.set(code, (this.produceErrors.get(code) ?? 0) + 1);
            if (r !== null && code === 0) {
              if (!this.excused(key, r)) {
                const a = { key, baseOffset: r.baseOffset, lastOffset: r.lastOffset, crc };
                this.acked.push(a);
                this.checkAckedOnLeader(a, leader);
              }
              sequence += count;
              if (this.producing) this.queue.schedule('idempotent-producer', intervalMs, next);
            } else if (
              code === ErrorCode.UNKNOWN_PRODUCER_ID ||
              code === ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            ) {
              // A duplicate must be answered with its first offsets, never refused as out of order.
              const log = this.brokers.get(leader)?.logs.get(key);
              const h = readBatchHeader(batch, 0);
              const at = log && this.findProducerBatch(log, producerId, h.producerEpoch, h.baseSequence);
              if (at !== undefined && at !== null)
                this.fail(
                  `${key}: broker ${leader} refused a duplicate of idempotent batch ${producerId}/${h.producerEpoch}/${h.baseSequence} with error ${code} though its log holds it at ${at}`,
                );
              producerEpoch++;
              sequence = 0;
              this.idempotentResets++;
              if (this.producing) this.queue.schedule('idempotent-producer', intervalMs, next);
            } else {
              // Retriable (or no answer): the same batch again; a producer stopping gives up here.
              if (this.producing)
                this.queue.schedule('idempotent-producer', 50, () =>
                  send(batch, count, attempt + 1, handled),
                );
            }
          });
      };
      const next = (): void => {
        const count = this.random.between(1, 4);
        const n = this.produced++;
        const batch = encodeBatch({
          baseOffset: 0n,
          baseTimestamp: BigInt(this.queue.clock.nowMs()),
          producerId,
          producerEpoch,
          baseSequence: sequence,
          records: Array.from({ length: count }, (_, i) => ({
            key: null,
            value: Buffer.from(`seed ${this.seed} idempotent ${n}.${i}`),
          })),
        });
        send(batch, count, 0);
      };
      this.queue.schedule('idempotent-producer', intervalMs, next);
    }
  }

  /** Idempotent batches sent again, and producer epoch bumps after the broker lost their state. */
  idempotentRetries = 0;
  /** Idempotent batches that reached a broker more than once (duplicates the network made). */
  idempotentRedelivered = 0;
  idempotentResets = 0;

  async run(ms: number): Promise<void> {
    await this.queue.runFor(ms, () => this.afterEvent());
  }

  private fail(message: string): void {
    if (this.violations.length < 20)
      this.violations.push(`t=${this.queue.clock.nowMs() - 1_700_000_000_000} ${message}`);
  }

  private afterEvent(): void {
    const leaderOfEpoch = new Map<string, number>();
    for (const b of this.brokers.values()) {
      if (!b.alive) continue;
      for (const l of b.replication.leaderStates()) {
        if (!l.isLeader) continue;
        const key = l.name;
        const other = leaderOfEpoch.get(`${key}@${l.leaderEpoch}`);
        if (other !== undefined)
          this.fail(`${key}: brokers ${other} and ${b.id} both lead epoch ${l.leaderEpoch}`);
        leaderOfEpoch.set(`${key}@${l.leaderEpoch}`, b.id);
        const k = `${b.id}/${b.incarnation}/${key}/${l.leaderEpoch}`;
        const hw = l.log.highWatermark;
        const before = this.lastLeaderHw.get(k);
        if (before !== undefined && hw < before)
          this.fail(`${key}: HW of leader ${b.id} went back from ${before} to ${hw}`);
        this.lastLeaderHw.set(k, hw);
      }
    }
    this.checkOutstanding();
    for (const b of this.brokers.values()) for (const v of b.violations.splice(0)) this.fail(v);
    for (const v of this.controller.violations.splice(0)) this.fail(v);
    for (const e of this.net.handlerErrors.splice(0)) this.fail(`handler threw: ${e}`);
    if (++this.eventsSinceCheck >= 200) {
      this.eventsSinceCheck = 0;
      this.checkAcked();
    }
  }

  /**
   * Nothing waits once it could be answered (no wake-up missed by the purgatory): an acks=all
   * produce whose leader's acks=all check is done, a fetch with a partition this broker no longer
   * leads, a consumer fetch below the HW (read_committed: the last stable offset) or a follower
   * fetch below the LEO must have been answered
   * by the end of the event that made it so.
   */
  private checkOutstanding(): void {
    for (const b of this.brokers.values()) {
      if (!b.alive) continue;
      for (const o of b.outstanding) {
        if (o.kind === 'produce') {
          if (
            o.leader !== undefined &&
            o.offset >= 0n &&
            o.leader.checkEnoughReplicasReachOffset(o.offset).done
          )
            this.fail(
              `${o.key}: an acks=all produce up to ${o.offset} still waits on broker ${b.id} though its acks=all check is done (HW ${o.leader.log.highWatermark})`,
            );
          continue;
        }
        const who = o.replicaId < 0 ? 'a consumer fetch' : `a fetch of follower ${o.replicaId}`;
        for (const p of o.partitions) {
          const log = b.replication.leader(p.key)?.log;
          const end =
            o.replicaId >= 0
              ? log?.logEndOffset
              : o.readCommitted
                ? log?.lastStableOffset
                : log?.highWatermark;
          if (log === undefined)
            this.fail(`${p.key}: ${who} still waits on broker ${b.id}, which does not lead it`);
          else if (p.offset >= log.logStartOffset && end! > p.offset)
            this.fail(
              `${p.key}: ${who} at ${p.offset} still waits on broker ${b.id} though records up to ${end} are there to read`,
            );
        }
      }
    }
  }

  /** One consumer per partition, long-polling its leader from the log start, until stopped. */
  startConsuming(maxWaitMs = 400): void {
    this.consuming = true;
    for (let p = 0; p < this.config.partitions; p++) {
      const key = `t-${p}`;
      let offset = 0n;
      const next = (delayMs: number): void => {
        if (this.consuming) this.queue.schedule('consumer', delayMs, poll);
      };
      const poll = (): void => {
        const leader = this.leaderOf(key);
        if (leader < 0) {
          next(100);
          return;
        }
        this.consumerFetches++;
        void this.net
          .request(
            -1,
            leader,
            () => this.brokers.get(leader)!.consumerFetch(key, offset, maxWaitMs),
            `consumer-${key}`,
          )
          .then(
            (r) => {
              const d = r.responses[0]?.partitions[0];
              if (d === undefined) return next(100);
              if (d.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE)
                offset = d.logStartOffset > 0n ? d.logStartOffset : 0n;
              else if (d.errorCode !== 0) return next(100);
              for (const { header: h } of batchesIn(d.records ?? Buffer.alloc(0))) {
                const last = h.baseOffset + BigInt(h.lastOffsetDelta);
                if (last >= d.highWatermark)
                  this.fail(
                    `${key}: a consumer read offset ${last} from broker ${leader} above its HW ${d.highWatermark}`,
                  );
                if (last >= offset) offset = last + 1n;
                this.consumed++;
              }
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

  private checkAckedOnLeader(a: AckedRecord, leaderId: number): void {
    const b = this.brokers.get(leaderId)!;
    const log = b.logs.get(a.key);
    if (!b.alive || !log) return;
    const found = batchAt(log, a.baseOffset);
    if (found && (found.base !== a.baseOffset || found.crc !== a.crc)) {
      this.fail(
        `${a.key}: acknowledged batch at ${a.baseOffset} differs on its leader ${leaderId} right after the ack`,
      );
    }
  }

  /**
   * Every acks=all record is, at its offset with its CRC, on every live member of the committed
   * ISR — so a clean election can only pick a replica that has it.
   */
  checkAcked(): void {
    for (const [key, rec] of this.controller.records) {
      for (const id of rec.isr) {
        const b = this.brokers.get(id)!;
        const log = b.logs.get(key);
        if (!b.alive || !log) continue;
        for (const a of this.acked) {
          if (a.key !== key || a.lastOffset < log.logStartOffset) continue;
          // The log start may sit inside the batch (DeleteRecords): look it up from there.
          const found = batchAt(log, a.baseOffset < log.logStartOffset ? log.logStartOffset : a.baseOffset);
          if (found === null) {
            this.fail(
              `${key}: acknowledged ${a.baseOffset}..${a.lastOffset} missing on ISR member ${id} (LEO ${log.logEndOffset})`,
            );
          } else if (found.base !== a.baseOffset || found.crc !== a.crc) {
            this.fail(`${key}: acknowledged batch at ${a.baseOffset} differs on ISR member ${id}`);
          }
        }
      }
    }
  }

  /** After faults stop: one leader, ISR = all replicas, identical batches up to the HW, acks kept. */
  checkConverged(): void {
    this.checkAcked();
    for (const [key, rec] of this.controller.records) {
      if (rec.leader < 0) {
        this.fail(`${key}: no leader after healing`);
        continue;
      }
      if (rec.isr.length !== rec.replicas.length)
        this.fail(`${key}: ISR ${rec.isr} after healing, replicas ${rec.replicas}`);
      const leaderLog = this.brokers.get(rec.leader)!.logs.get(key)!;
      const hw = leaderLog.highWatermark;
      if (hw !== leaderLog.logEndOffset)
        this.fail(`${key}: leader HW ${hw} ≠ LEO ${leaderLog.logEndOffset} when idle`);
      for (const id of rec.replicas) {
        const log = this.brokers.get(id)!.logs.get(key);
        if (!log) {
          this.fail(`${key}: replica ${id} has no log`);
          continue;
        }
        if (log.logEndOffset !== leaderLog.logEndOffset || log.highWatermark !== hw) {
          this.fail(
            `${key}: replica ${id} LEO ${log.logEndOffset} HW ${log.highWatermark}, leader ${rec.leader} LEO ${leaderLog.logEndOffset} HW ${hw}`,
          );
          continue;
        }
        this.checkNoDuplicates(key, id, log);
        const from =
          log.logStartOffset > leaderLog.logStartOffset ? log.logStartOffset : leaderLog.logStartOffset;
        const mine = batchesBetween(log, from, hw);
        const theirs = batchesBetween(leaderLog, from, hw);
        const diff = mine.findIndex((m, i) => theirs[i]?.base !== m.base || theirs[i]?.crc !== m.crc);
        if (diff >= 0 || mine.length !== theirs.length) {
          const at = mine[diff] ?? theirs[mine.length];
          this.fail(
            `${key}: replica ${id} diverges from leader ${rec.leader} at offset ${at?.base}: crc ${mine[diff]?.crc} vs ${theirs[diff]?.crc}`,
          );
        }
      }
    }
  }

  /** Each idempotent batch in the log, by "producer id/epoch/base sequence", with its base offset. */
  private *producerBatches(log: Log): Generator<[string, bigint]> {
    for (let o = log.logStartOffset; o < log.logEndOffset; ) {
      const r = log.read(o, 1, 'log-end', true).records;
      if (r.length < 61) break;
      const h = readBatchHeader(r, 0);
      // Markers carry no sequence: a coordinator may write one again when its answer was lost.
      if (h.producerId >= 0n && h.baseSequence >= 0)
        yield [`${h.producerId}/${h.producerEpoch}/${h.baseSequence}`, h.baseOffset];
      o = h.baseOffset + BigInt(h.lastOffsetDelta) + 1n;
    }
  }

  private findProducerBatch(log: Log, producerId: bigint, epoch: number, sequence: number): bigint | null {
    const want = `${producerId}/${epoch}/${sequence}`;
    for (const [k, at] of this.producerBatches(log)) if (k === want) return at;
    return null;
  }

  /** An idempotent producer's batch (producer id, epoch, sequence) is in a replica's log once at most. */
  private checkNoDuplicates(key: string, id: number, log: Log): void {
    const seen = new Map<string, bigint>();
    for (const [k, at] of this.producerBatches(log)) {
      const first = seen.get(k);
      if (first !== undefined)
        this.fail(
          `${key}: idempotent batch ${k} (producer/epoch/sequence) written twice on replica ${id}, at ${first} and ${at}`,
        );
      seen.set(k, at);
    }
  }

  /** What to print with a failure: the seed, the violations and each broker's last log lines. */
  report(): string {
    const lines = [`seed ${this.seed} (replay with SKIFF_SIM_SEED=${this.seed})`, ...this.violations];
    for (const [key, rec] of this.controller.records) lines.push(`${key}: ${JSON.stringify(rec)}`);
    for (const b of this.brokers.values()) lines.push(...b.logger.lines.slice(-25));
    return lines.join('\n');
  }
}
