/**
 * One replica fetcher: this broker fetching the partitions it follows from one leader broker in
 * a single Fetch (Kafka's ReplicaFetcherThread: num.replica.fetchers per (follower → leader), a
 * partition on the one `fetcherIdFor` picks). Each round sends one Fetch with replica.fetch.max.bytes per
 * partition and replica.fetch.response.max.bytes in all, hands each partition's answer to its
 * PartitionFollower, asks the leader's offsets for partitions out of range, and backs off
 * (replica.fetch.backoff.ms) on errors.
 *
 * The network is a ReplicaTransport and time a Scheduler, both injected: the broker plugs in its
 * network client, test/sim a simulated network. Owned by the broker's fetcher manager; at most one
 * Fetch in flight; stop() makes every late answer a no-op.
 *
 * Follower-side throttling (Kafka's shouldFollowerThrottle): a partition that is not in sync by
 * this follower's own estimate and is in the broker's follower throttled set is left out of the
 * Fetch while the follower quota is exceeded; Skiff also waits for a useful chunk of the budget
 * (`ReplicationQuota.chunk`) and asks the leader for no more than the budget holds, so the quota
 * holds from the first Fetch on. Bytes appended are recorded in the quota (charged when throttled).
 */

import type { Clock } from '../common/clock.js';
import { LIMITS } from '../common/limits.js';
import { childLogger, type Logger } from '../common/logger.js';
import { topicPartitionKey } from '../common/topic-partition.js';
import {
  defaultFetchRequest,
  type FetchRequest,
  type FetchTopic,
} from '../protocol/generated/FetchRequest.js';
import type { FetchResponse, PartitionData } from '../protocol/generated/FetchResponse.js';
import { type PartitionFollower, replicaFetcherPrefix, type SentFetch } from './follower.js';
import type { ReplicationQuota } from './quota.js';

export interface LeaderOffsets {
  readonly logStartOffset: bigint;
  readonly logEndOffset: bigint;
}

export interface ReplicaTransport {
  /**
   * Sends a follower Fetch to `leaderId` for fetcher `fetcherId` (num.replica.fetchers > 1: one
   * connection per fetcher, as Kafka's fetcher threads); rejects on a connection or timeout failure.
   */
  fetch(leaderId: number, request: FetchRequest, fetcherId?: number): Promise<FetchResponse>;
  /**
   * The leader's log start offset and LEO for one partition (ListOffsets -2 and -1 with this
   * broker's replica id and `currentLeaderEpoch`); used only after OFFSET_OUT_OF_RANGE.
   */
  leaderOffsets(
    leaderId: number,
    topic: string,
    partition: number,
    currentLeaderEpoch: number,
  ): Promise<LeaderOffsets>;
  /**
   * Called once a fetch's response has been processed (its records appended): the transport may
   * reuse the memory the response's records were read into.
   */
  release?(response: FetchResponse): void;
}

export interface FetcherConfig {
  /** replica.fetch.max.bytes (per partition) */
  readonly fetchMaxBytes: number;
  /** replica.fetch.response.max.bytes */
  readonly responseMaxBytes: number;
  /** replica.fetch.wait.max.ms */
  readonly maxWaitMs: number;
  /** replica.fetch.min.bytes */
  readonly minBytes: number;
  /** replica.fetch.backoff.ms */
  readonly backoffMs: number;
}

export const DEFAULT_FETCHER_CONFIG: FetcherConfig = Object.freeze({
  fetchMaxBytes: 1_048_576,
  responseMaxBytes: 10_485_760,
  maxWaitMs: 500,
  minBytes: 1,
  backoffMs: 1000,
});

export interface FetcherContext {
  readonly localBrokerId: number;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly scheduler: { schedule(name: string, delayMs: number, task: () => void): () => void };
  readonly transport: ReplicaTransport;
  /** This broker's registration epoch, sent as replicaState.replicaEpoch. */
  brokerEpoch(): bigint;
  /** Read at every round, so a changed setting applies to the next Fetch. */
  config(): FetcherConfig;
  /** The cluster id sent on Fetch (null when unknown). */
  readonly clusterId?: string | null;
  /** This broker's follower-side replication quota (absent: never throttled). */
  readonly quota?: ReplicationQuota;
}

/**
 * Which of `numFetchers` fetchers of a leader carries a partition: Kafka's
 * AbstractFetcherManager.getFetcherId, abs(31 × topic.hashCode + partition) mod num.replica.fetchers,
 * with Java's String.hashCode and int overflow (so a partition lands on the fetcher it would in Kafka).
 */
export function fetcherIdFor(topic: string, partition: number, numFetchers: number): number {
  let h = 0;
  for (let i = 0; i < topic.length; i++) h = (Math.imul(31, h) + topic.charCodeAt(i)) | 0;
  const v = (Math.imul(31, h) + partition) | 0;
  const abs = v === -2147483648 ? 0 : Math.abs(v);
  return abs % Math.max(1, numFetchers);
}

export class ReplicaFetcher {
  private readonly followers = new Map<string, PartitionFollower>();
  private inFlight = false;
  private stopped = true;
  private cancelTimer: (() => void) | null = null;
  /** Completed rounds (a metric and a test hook). */
  rounds = 0;
  /** Throttled partitions the latest buildRequest left out for want of quota. */
  private quotaHeld = new Set<PartitionFollower>();
  /** The budget the held partitions wait for (their share of a chunk). */
  private heldNeed = 1;
  /** Where the scan for throttled partitions starts, moved every round (fair share of the budget). */
  private rotation = 0;

  /** Lines with Kafka's prefix for this fetcher: `[ReplicaFetcher replicaId=3, leaderId=1]`. */
  private readonly logger: Logger;

  constructor(
    readonly leaderId: number,
    private readonly ctx: FetcherContext,
    /** Which of the leader's fetchers this is (num.replica.fetchers > 1). */
    readonly fetcherId = 0,
  ) {
    this.logger = childLogger(ctx.logger, replicaFetcherPrefix(ctx.localBrokerId, leaderId));
  }

  get partitionCount(): number {
    return this.followers.size;
  }

  partitions(): PartitionFollower[] {
    return [...this.followers.values()];
  }

  addPartition(f: PartitionFollower): void {
    this.followers.set(f.name, f);
    this.wake();
  }

  removePartition(name: string): void {
    this.followers.delete(name);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.wake();
  }

  /** Stops the loop; an answer still on its way is dropped when it arrives. */
  stop(): void {
    this.stopped = true;
    this.cancelTimer?.();
    this.cancelTimer = null;
  }

  /** Schedules a round now unless one is in flight or scheduled. */
  wake(): void {
    if (this.stopped || this.inFlight) return;
    this.scheduleRound(0);
  }

  private scheduleRound(delayMs: number): void {
    this.cancelTimer?.();
    const name =
      this.fetcherId === 0
        ? `replica-fetcher-${this.leaderId}`
        : `replica-fetcher-${this.leaderId}-${this.fetcherId}`;
    this.cancelTimer = this.ctx.scheduler.schedule(name, delayMs, () => {
      this.cancelTimer = null;
      void this.round();
    });
  }

  /** Builds the next Fetch, or null when no partition may fetch now. */
  buildRequest(): {
    request: FetchRequest;
    sent: Map<PartitionFollower, SentFetch>;
    throttled: Set<PartitionFollower>;
  } | null {
    const now = this.ctx.clock.nowMs();
    const cfg = this.ctx.config();
    const quota = this.ctx.quota;
    const byTopic = new Map<string, FetchTopic>();
    const sent = new Map<PartitionFollower, SentFetch>();
    const throttled = new Set<PartitionFollower>();
    this.quotaHeld = new Set();
    const budget = quota ? quota.allowance(now) : Number.POSITIVE_INFINITY;
    const chunk = quota && Number.isFinite(budget) ? quota.chunk(cfg.fetchMaxBytes, now) : 0;
    const all = [...this.followers.values()];
    const start = all.length > 0 ? this.rotation++ % all.length : 0;
    const ordered = all.map((_, i) => all[(start + i) % all.length]!).filter((f) => f.isFetchable(now));
    for (const f of ordered) if (quota?.isThrottled(f.topic, f.partition)) throttled.add(f);
    // The throttled partitions wanting the budget (in this Fetch and the other fetchers') share it evenly.
    const limited = Number.isFinite(budget)
      ? ordered.filter((f) => throttled.has(f) && !f.inSyncEstimate)
      : [];
    const demand =
      quota && limited.length > 0
        ? quota.demand(
            limited.map((f) => f.name),
            now,
          )
        : 1;
    const sharers = Math.max(limited.length, demand);
    // Each waits for its share of a chunk (not a whole one: another fetcher's partition taking its
    // half at every refill would otherwise keep the budget below a chunk for ever), and leaves the
    // partitions other fetchers hold back theirs first, so they take turns.
    this.heldNeed = Math.max(1, chunk / sharers);
    const limitedSet = new Set(limited);
    const keys = new Set(limited.map((f) => f.name));
    const reserved = quota && limited.length > 0 ? this.heldNeed * quota.othersWaiting(keys, now) : 0;
    const available = budget - reserved;
    const share = Math.max(1, Math.floor(available / limited.length));
    for (const f of ordered) {
      let maxBytes = cfg.fetchMaxBytes;
      if (limitedSet.has(f)) {
        // Over quota (or less than its share of a chunk left): left out of this Fetch.
        if (available < this.heldNeed || budget <= 0) {
          this.quotaHeld.add(f);
          quota?.markWaiting(f.name, now);
          continue;
        }
        quota?.clearWaiting(f.name);
        maxBytes = Math.min(maxBytes, share);
      }
      let t = byTopic.get(f.topic);
      if (!t) {
        t = { topic: f.topic, topicId: f.topicId, partitions: [] };
        byTopic.set(f.topic, t);
      }
      t.partitions.push(f.fetchPartition(maxBytes));
      sent.set(f, f.sent());
    }
    if (sent.size === 0) return null;
    const epoch = this.ctx.brokerEpoch();
    const request: FetchRequest = {
      ...defaultFetchRequest(),
      clusterId: this.ctx.clusterId ?? null,
      replicaId: this.ctx.localBrokerId,
      replicaState: { replicaId: this.ctx.localBrokerId, replicaEpoch: epoch },
      // Throttled partitions held back for the budget: the long poll (for the others) ends when the
      // budget has a chunk again, so they compete for it on time with other fetchers' partitions.
      maxWaitMs:
        quota && this.quotaHeld.size > 0
          ? Math.min(cfg.maxWaitMs, Math.max(1, quota.msUntil(this.heldNeed, now)))
          : cfg.maxWaitMs,
      minBytes: cfg.minBytes,
      maxBytes: cfg.responseMaxBytes,
      // Replicas use sessionless fetches: every partition in every request (Kafka's sessions are
      // an optimisation of the request size we can add later without changing the answers).
      sessionId: 0,
      sessionEpoch: -1,
      topics: [...byTopic.values()],
    };
    return { request, sent, throttled };
  }

  /** One Fetch round trip and its handling. Resolves when done; the next round is scheduled. */
  async round(): Promise<void> {
    if (this.stopped || this.inFlight) return;
    const built = this.buildRequest();
    if (built === null) {
      this.scheduleIdle();
      return;
    }
    this.inFlight = true;
    let failed = false;
    try {
      const response = await this.ctx.transport.fetch(this.leaderId, built.request, this.fetcherId);
      try {
        if (this.stopped) return;
        failed = await this.processResponse(response, built.sent, built.throttled);
      } finally {
        this.ctx.transport.release?.(response);
      }
    } catch (e) {
      if (this.stopped) return;
      failed = true;
      this.logger.warn(`Error in response for fetch request: ${e instanceof Error ? e.message : String(e)}`);
      for (const f of built.sent.keys()) f.delay(this.ctx.config().backoffMs);
    } finally {
      this.inFlight = false;
      this.rounds++;
    }
    if (this.stopped) return;
    if (failed) this.scheduleIdle();
    else this.scheduleRound(0);
  }

  /**
   * Nothing to fetch now: wake when the earliest back-off ends or the follower quota has a chunk
   * again (or never, without partitions).
   */
  private scheduleIdle(): void {
    const now = this.ctx.clock.nowMs();
    let next = Number.POSITIVE_INFINITY;
    for (const f of this.followers.values()) {
      if (f.status === 'fetching' && !this.quotaHeld.has(f))
        next = Math.min(next, Math.max(f.delayedUntil, now));
    }
    const quota = this.ctx.quota;
    if (this.quotaHeld.size > 0 && quota) {
      const wait = quota.msUntil(this.heldNeed, now);
      next = Math.min(next, now + Math.min(Math.max(wait, 1), LIMITS.followerQuotaWaitMs));
    }
    if (Number.isFinite(next)) this.scheduleRound(next - now);
  }

  /** Returns whether the whole round failed (a request-level error). */
  private async processResponse(
    response: FetchResponse,
    sent: Map<PartitionFollower, SentFetch>,
    throttled: ReadonlySet<PartitionFollower>,
  ): Promise<boolean> {
    const backoffMs = this.ctx.config().backoffMs;
    if (response.errorCode !== 0) {
      for (const f of sent.keys()) f.delay(backoffMs);
      return true;
    }
    const answers = new Map<string, PartitionData>();
    for (const t of response.responses) {
      for (const p of t.partitions) {
        answers.set(topicPartitionKey(t.topic, p.partitionIndex), p);
        answers.set(`id:${t.topicId}-${p.partitionIndex}`, p);
      }
    }
    const outOfRange: PartitionFollower[] = [];
    for (const [f, s] of sent) {
      if (this.followers.get(f.name) !== f) continue;
      const pd =
        answers.get(topicPartitionKey(f.topic, f.partition)) ?? answers.get(`id:${f.topicId}-${f.partition}`);
      if (pd === undefined) continue;
      const outcome = f.handlePartitionData(pd, s);
      if (outcome.kind === 'appended') this.ctx.quota?.record(f.name, outcome.bytes, throttled.has(f));
      if (outcome.kind === 'out-of-range') outOfRange.push(f);
      else if (outcome.kind === 'retry') f.delay(backoffMs);
    }
    for (const f of outOfRange) {
      try {
        const o = await this.ctx.transport.leaderOffsets(this.leaderId, f.topic, f.partition, f.leaderEpoch);
        if (this.stopped) return false;
        f.handleLeaderOffsets(o.logStartOffset, o.logEndOffset);
      } catch {
        if (this.stopped) return false;
        f.leaderOffsetsFailed(backoffMs);
      }
    }
    return false;
  }
}
