/**
 * Replication throttling (Kafka's ReplicationQuotaManager, KAFKA-REFERENCE.md §3), pure and on an
 * injected clock so the broker, test/sim and the bench run the same code.
 *
 * One `ReplicationQuota` per broker and side: the leader side meters bytes sent to followers
 * (`leader.replication.throttled.rate`, `leader.replication.throttled.replicas`), the follower side
 * bytes appended from leaders (`follower.replication.throttled.rate`,
 * `follower.replication.throttled.replicas`). One budget per broker and side, shared by all its
 * throttled partitions. A partition is throttled here when its topic's list is `*` or holds
 * `partition:thisBroker`; both the list and a rate are needed for a throttle to act, as in Kafka.
 *
 * Kafka meters with a Rate over `replication.quota.window.num` samples of
 * `replication.quota.window.size.seconds`, and an idle or fresh Rate lets a burst through: it
 * divides by a padded window, so after a restart (or any idle spell) many window-sizes' worth of
 * bytes pass before the quota reads as exceeded (the seed's 46 MiB in 5 s). Skiff enforces with a
 * token bucket instead — refilled at the configured rate, holding at most one window size of it
 * (`replication.quota.window.size.seconds` × rate), starting EMPTY when the meter is created or a
 * rate is first set — so the long-run rate is exactly the configured one and no interval of T
 * seconds after a start passes more than rate × T plus a record batch per Fetch in flight (after an
 * idle spell, one window of the rate more). Bytes may overdraw the
 * bucket (a batch is never split, and a leader charges the bytes of throttled partitions sent to
 * in-sync followers too, as Kafka records them); the debt is paid before the next bytes go, and
 * is forgotten beyond the whole window (`window.num` × `window.size`) of the rate, as Kafka's Rate
 * forgets samples older than its window.
 *
 * The throttled partitions wanting bytes share the budget evenly, across fetchers and Fetches
 * (`demand`, `othersWaiting`): first come, first served let one fetcher starve another here.
 *
 * Kafka's windowed Rate is kept for what an operator reads: the OBSERVED rate per broker side and
 * per partition (`observed()`), and per follower on the leader (`replicaRate`), over the retained
 * samples. Every meter of one quota averages over the same span (the window, or the time since the
 * quota was created when shorter — not since a partition's first byte), so the partitions add up
 * to the side's total and a leader's and its follower's meters of the same bytes agree once both
 * brokers have run a window; a partition that just began replicating reads low for one window.
 */

/** `replication.quota.window.num` × `replication.quota.window.size.seconds`. */
export interface QuotaWindow {
  readonly samples: number;
  readonly sampleMs: number;
}

/** replica.fetch.max.bytes' default: the largest chunk a withheld Fetch waits for. */
const DEFAULT_CHUNK_LIMIT = 1_048_576;

export const DEFAULT_QUOTA_WINDOW: QuotaWindow = Object.freeze({ samples: 11, sampleMs: 1000 });

/**
 * Kafka's Rate over `samples` windows of `sampleMs`: bytes in the retained samples divided by the
 * time they cover — since the oldest retained window began, or since the meter was created when
 * that is later (no padding: a young meter reports what it saw), at least one sample span.
 */
export class WindowedRate {
  private readonly starts: number[];
  private readonly bytes: number[];
  private totalBytes = 0;

  constructor(
    private readonly window: QuotaWindow,
    private readonly createdMs: number,
  ) {
    this.starts = new Array<number>(window.samples).fill(Number.NEGATIVE_INFINITY);
    this.bytes = new Array<number>(window.samples).fill(0);
  }

  /** Every byte recorded since creation. */
  get total(): number {
    return this.totalBytes;
  }

  record(bytes: number, nowMs: number): void {
    if (!(bytes > 0)) return;
    const start = Math.floor(nowMs / this.window.sampleMs) * this.window.sampleMs;
    const i = Math.floor(start / this.window.sampleMs) % this.window.samples;
    if (this.starts[i] !== start) {
      this.starts[i] = start;
      this.bytes[i] = 0;
    }
    this.bytes[i]! += bytes;
    this.totalBytes += bytes;
  }

  /** Bytes per second over the retained samples. */
  rate(nowMs: number): number {
    const { samples, sampleMs } = this.window;
    const current = Math.floor(nowMs / sampleMs) * sampleMs;
    const oldest = current - (samples - 1) * sampleMs;
    let sum = 0;
    for (let i = 0; i < samples; i++) {
      const s = this.starts[i]!;
      if (s >= oldest && s <= current) sum += this.bytes[i]!;
    }
    const elapsed = Math.max(nowMs - Math.max(oldest, this.createdMs), sampleMs);
    return (sum * 1000) / elapsed;
  }
}

/**
 * A token bucket: refilled at `bytesPerSec`, holding at most `burstMs` of it, starting empty.
 * `available` may go below zero (a debt) after `consume`, down to `maxDebtMs` of the rate.
 */
export class TokenBucket {
  private tokens = 0;
  private lastMs: number;

  constructor(
    private bytesPerSec: number,
    private readonly burstMs: number,
    nowMs: number,
    private readonly maxDebtMs = Number.POSITIVE_INFINITY,
  ) {
    this.lastMs = nowMs;
  }

  get rate(): number {
    return this.bytesPerSec;
  }

  get capacity(): number {
    return (this.bytesPerSec * this.burstMs) / 1000;
  }

  private refill(nowMs: number): void {
    if (nowMs <= this.lastMs) return;
    this.tokens = Math.min(this.capacity, this.tokens + ((nowMs - this.lastMs) * this.bytesPerSec) / 1000);
    this.lastMs = nowMs;
  }

  /** A new rate from now on (what accrued so far at the old rate is kept, up to the new capacity). */
  setRate(bytesPerSec: number, nowMs: number): void {
    this.refill(nowMs);
    this.bytesPerSec = bytesPerSec;
    this.tokens = Math.min(this.tokens, this.capacity);
  }

  available(nowMs: number): number {
    this.refill(nowMs);
    return this.tokens;
  }

  consume(bytes: number, nowMs: number): void {
    this.refill(nowMs);
    const floor = Number.isFinite(this.maxDebtMs) ? -(this.bytesPerSec * this.maxDebtMs) / 1000 : -Infinity;
    this.tokens = Math.max(floor, this.tokens - bytes);
  }

  /** Milliseconds until `bytes` (capped at the capacity) are available; 0 when they are now. */
  msUntil(bytes: number, nowMs: number): number {
    const want = Math.min(bytes, this.capacity);
    const have = this.available(nowMs);
    if (have >= want) return 0;
    if (this.bytesPerSec <= 0) return Number.POSITIVE_INFINITY;
    return Math.ceil(((want - have) * 1000) / this.bytesPerSec);
  }
}

/**
 * A throttled-replicas topic config for one broker: `*` → every partition, `p:b,...` → the
 * partitions listed with this broker's id, anything else (empty, absent, malformed) → none.
 */
export type ThrottledSet = '*' | ReadonlySet<number>;

export function parseThrottledReplicas(
  value: string | readonly string[] | undefined | null,
  brokerId: number,
): ThrottledSet {
  if (value === undefined || value === null) return EMPTY_SET;
  const items = (typeof value === 'string' ? value.split(',') : value).map((s) => s.trim()).filter((s) => s);
  if (items.length === 1 && items[0] === '*') return '*';
  const out = new Set<number>();
  for (const item of items) {
    const m = /^(\d+):(\d+)$/.exec(item);
    if (m && Number(m[2]) === brokerId) out.add(Number(m[1]));
  }
  return out;
}

const EMPTY_SET: ReadonlySet<number> = new Set();

export type QuotaSide = 'leader' | 'follower';

export interface ReplicationQuotaConfig {
  readonly side: QuotaSide;
  readonly localBrokerId: number;
  readonly clock: { nowMs(): number };
  readonly window?: QuotaWindow;
  /** The side's `*.replication.throttled.rate` in bytes/s now; null when unlimited. Read at every call. */
  rate(): number | null;
  /** The topic's `*.replication.throttled.replicas` value now (undefined when not set). */
  throttledReplicas(topic: string): string | readonly string[] | undefined;
}

/** What an operator reads: the observed replication rates of one side of one broker. */
export interface ObservedReplicationRate {
  readonly side: QuotaSide;
  /** The configured rate in bytes/s, null when unlimited. */
  readonly throttleRate: number | null;
  /** Every replication byte of this side (sent as leader / appended as follower), bytes/s. */
  readonly bytesPerSec: number;
  /** Of which bytes of throttled partitions (what the quota meters), bytes/s. */
  readonly throttledBytesPerSec: number;
  /** Bytes since this broker started, all partitions. */
  readonly totalBytes: number;
  /** Of which bytes of throttled partitions. */
  readonly throttledTotalBytes: number;
  /** Per partition (`topic-partition`), bytes/s; partitions idle for a whole window are left out. */
  readonly partitions: ReadonlyMap<string, number>;
}

/**
 * One side of one broker's replication quota. Rate and throttled lists are read through the
 * config functions at every call, so a change applies to the very next fetch: a newly set rate
 * starts from an empty bucket (no burst on change), a changed one keeps what accrued (capped at
 * the new capacity), a removed one stops limiting at once.
 */
export class ReplicationQuota {
  readonly side: QuotaSide;
  private readonly window: QuotaWindow;
  private bucket: TokenBucket | null = null;
  private readonly all: WindowedRate;
  private readonly throttledRate: WindowedRate;
  private readonly perPartition = new Map<string, { rate: WindowedRate; lastMs: number }>();
  /** Throttled partitions that recently asked for the budget (key → last time), for fair shares. */
  private readonly demandSeen = new Map<string, number>();
  /** Leader side: per (partition, follower), keyed `topic-partition/brokerId`. */
  private readonly perReplica = new Map<string, { rate: WindowedRate; lastMs: number }>();
  private readonly parsed = new Map<string, { raw: unknown; set: ThrottledSet }>();
  /** When this quota was created: the start of every meter's span. */
  private readonly createdMs: number;

  constructor(private readonly cfg: ReplicationQuotaConfig) {
    this.side = cfg.side;
    this.window = cfg.window ?? DEFAULT_QUOTA_WINDOW;
    const now = cfg.clock.nowMs();
    this.createdMs = now;
    this.all = new WindowedRate(this.window, now);
    this.throttledRate = new WindowedRate(this.window, now);
    this.sync(now);
  }

  /** The configured rate now (null: unlimited), after applying any change to the bucket. */
  private sync(nowMs: number): TokenBucket | null {
    const raw = this.cfg.rate();
    const rate =
      raw === null || !Number.isFinite(raw) || raw >= Number.MAX_SAFE_INTEGER ? null : Math.max(0, raw);
    if (rate === null) {
      this.bucket = null;
    } else if (this.bucket === null) {
      this.bucket = new TokenBucket(
        rate,
        this.window.sampleMs,
        nowMs,
        this.window.samples * this.window.sampleMs,
      );
    } else if (this.bucket.rate !== rate) {
      this.bucket.setRate(rate, nowMs);
    }
    return this.bucket;
  }

  /** The configured rate in bytes/s now, null when unlimited. */
  rate(): number | null {
    return this.sync(this.cfg.clock.nowMs())?.rate ?? null;
  }

  /** Whether the partition is in this broker's throttled set for this side (the topic config). */
  isThrottled(topic: string, partition: number): boolean {
    const raw = this.cfg.throttledReplicas(topic);
    if (raw === undefined) {
      this.parsed.delete(topic);
      return false;
    }
    let p = this.parsed.get(topic);
    if (!p || p.raw !== raw) {
      p = { raw, set: parseThrottledReplicas(raw, this.cfg.localBrokerId) };
      this.parsed.set(topic, p);
    }
    return p.set === '*' || p.set.has(partition);
  }

  /** Kafka's isQuotaExceeded: a rate is set and nothing is left to spend now. */
  isQuotaExceeded(nowMs = this.cfg.clock.nowMs()): boolean {
    const b = this.sync(nowMs);
    return b !== null && b.available(nowMs) <= 0;
  }

  /** Bytes throttled partitions may still move now (≤ 0: exceeded); Infinity when unlimited. */
  allowance(nowMs = this.cfg.clock.nowMs()): number {
    const b = this.sync(nowMs);
    return b === null ? Number.POSITIVE_INFINITY : b.available(nowMs);
  }

  /**
   * The smallest share of the budget worth a fetch: a tenth of a second of the rate, at most
   * `fetchMaxBytes` (so a follower waits for a useful chunk instead of fetching a batch at a time).
   */
  chunk(fetchMaxBytes: number, nowMs = this.cfg.clock.nowMs()): number {
    const b = this.sync(nowMs);
    if (b === null) return fetchMaxBytes;
    return Math.max(1, Math.min(fetchMaxBytes, Math.floor(b.rate / 10)));
  }

  /**
   * How long a Fetch whose throttled partitions were withheld may wait for data: until this
   * quota has a chunk again, at most `maxWaitMs` (a parked follower Fetch answers as soon as the
   * budget refills instead of after replica.fetch.wait.max.ms, so the leader's share is not
   * handed out in half-second lumps).
   */
  withheldWaitMs(maxWaitMs: number, nowMs = this.cfg.clock.nowMs()): number {
    const b = this.sync(nowMs);
    if (b === null) return 0;
    return Math.min(maxWaitMs, Math.max(1, b.msUntil(this.chunk(DEFAULT_CHUNK_LIMIT, nowMs), nowMs)));
  }

  /**
   * Notes that `keys` (throttled partitions held back by this budget) want bytes now, and returns
   * how many distinct ones wanted bytes within the last sample window — across every fetcher or
   * Fetch sharing this budget — so each can take an even share (allowance / demand) instead of the
   * first to ask taking it all.
   */
  demand(keys: readonly string[], nowMs = this.cfg.clock.nowMs()): number {
    for (const k of keys) this.demandSeen.set(k, nowMs);
    for (const [k, t] of this.demandSeen) if (nowMs - t > this.window.sampleMs) this.demandSeen.delete(k);
    return Math.max(1, this.demandSeen.size);
  }

  /**
   * Held-back partitions waiting for the budget (key → when last held). A partition that asks
   * leaves each OTHER waiting one its share first, so fetchers that come back at different moments
   * (one after a long poll, one on a timer) still take turns instead of the quicker taking all.
   */
  private readonly waitingSince = new Map<string, number>();

  /** Marks `key` as held back for the budget now. */
  markWaiting(key: string, nowMs = this.cfg.clock.nowMs()): void {
    this.waitingSince.set(key, nowMs);
  }

  /** `key` got its share: no longer waiting. */
  clearWaiting(key: string): void {
    this.waitingSince.delete(key);
  }

  /** How many partitions other than `keys` were held back within the last sample window. */
  othersWaiting(keys: ReadonlySet<string>, nowMs = this.cfg.clock.nowMs()): number {
    let n = 0;
    for (const [k, t] of this.waitingSince) {
      if (nowMs - t > this.window.sampleMs) this.waitingSince.delete(k);
      else if (!keys.has(k)) n++;
    }
    return n;
  }

  /** Milliseconds until `bytes` may move (0: now; capped at one window of the rate). */
  msUntil(bytes: number, nowMs = this.cfg.clock.nowMs()): number {
    const b = this.sync(nowMs);
    return b === null ? 0 : b.msUntil(bytes, nowMs);
  }

  /**
   * Bytes replicated for a partition (sent as leader, appended as follower): counted in the
   * observed rates, and charged to the budget when `throttled` (Kafka records the bytes of
   * throttled partitions only).
   */
  record(
    partitionKey: string,
    bytes: number,
    throttled: boolean,
    nowMs = this.cfg.clock.nowMs(),
    /** Leader side: the follower the bytes went to (per-replica observed rate). */
    replicaId?: number,
  ): void {
    if (!(bytes > 0)) return;
    this.all.record(bytes, nowMs);
    this.recordIn(this.perPartition, partitionKey, bytes, nowMs);
    if (replicaId !== undefined) this.recordIn(this.perReplica, `${partitionKey}/${replicaId}`, bytes, nowMs);
    if (throttled) {
      this.throttledRate.record(bytes, nowMs);
      this.sync(nowMs)?.consume(bytes, nowMs);
    }
  }

  private recordIn(
    map: Map<string, { rate: WindowedRate; lastMs: number }>,
    key: string,
    bytes: number,
    nowMs: number,
  ): void {
    let p = map.get(key);
    if (!p) {
      p = { rate: new WindowedRate(this.window, this.createdMs), lastMs: nowMs };
      map.set(key, p);
    }
    p.rate.record(bytes, nowMs);
    p.lastMs = nowMs;
  }

  /**
   * Leader side: the observed bytes/s of one partition to one follower (Kafka's windowed Rate);
   * 0 when nothing went to it for a whole window, null when nothing ever did.
   */
  replicaRate(partitionKey: string, replicaId: number, nowMs = this.cfg.clock.nowMs()): number | null {
    const p = this.perReplica.get(`${partitionKey}/${replicaId}`);
    if (!p) return null;
    return nowMs - p.lastMs > this.window.samples * this.window.sampleMs ? 0 : p.rate.rate(nowMs);
  }

  /** The observed rates now (Kafka's windowed Rate). */
  observed(nowMs = this.cfg.clock.nowMs()): ObservedReplicationRate {
    const span = this.window.samples * this.window.sampleMs;
    const partitions = new Map<string, number>();
    for (const [key, p] of this.perPartition) {
      if (nowMs - p.lastMs > span) this.perPartition.delete(key);
      else partitions.set(key, p.rate.rate(nowMs));
    }
    return {
      side: this.side,
      throttleRate: this.rate(),
      bytesPerSec: this.all.rate(nowMs),
      throttledBytesPerSec: this.throttledRate.rate(nowMs),
      totalBytes: this.all.total,
      throttledTotalBytes: this.throttledRate.total,
      partitions,
    };
  }
}

/** Both sides of one broker. */
export interface ReplicationQuotas {
  readonly leader: ReplicationQuota;
  readonly follower: ReplicationQuota;
}
