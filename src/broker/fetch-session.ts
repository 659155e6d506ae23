/**
 * Incremental fetch sessions (KIP-227; Kafka's FetchSession.scala): a client that fetches the same
 * partitions over and over sends the full list once, then only what changed; the broker answers
 * only partitions with news (records, an error, a new HW or log start offset). The cache holds at
 * most max.incremental.fetch.session.cache.slots sessions; when full, a session unused for
 * longer than EVICTION_IDLE_MS or the smallest one makes room (evictFor), and otherwise the client
 * gets a sessionless answer.
 * Owned by the broker; single-threaded.
 */

import type { Clock } from '../common/clock.js';
import { LIMITS } from '../common/limits.js';
import { ErrorCode } from '../protocol/generated/errors.js';

const { FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH } = ErrorCode;
/** Kafka's evictable threshold for sessions of ordinary clients. */
const EVICTION_IDLE_MS = 120_000;

export interface SessionPartition {
  readonly key: string;
  topic: string;
  topicId: string;
  partition: number;
  fetchOffset: bigint;
  maxBytes: number;
  currentLeaderEpoch: number;
  /** The follower's log start offset (replica fetches); -1 for consumers. */
  logStartOffset: bigint;
  /** The epoch of the follower's last fetched batch (replica fetches, v12+); -1 otherwise. */
  lastFetchedEpoch?: number;
  /** What the last response said, to leave unchanged partitions out of the next one. */
  sentHighWatermark: bigint;
  sentLogStartOffset: bigint;
}

export class FetchSession {
  /** The epoch the next incremental request must carry. */
  nextEpoch = 1;
  lastUsedMs: number;
  readonly partitions = new Map<string, SessionPartition>();

  constructor(
    readonly id: number,
    nowMs: number,
  ) {
    this.lastUsedMs = nowMs;
  }
}

export type FetchContext =
  /** No session: answer every requested partition; sessionId 0. */
  | { readonly kind: 'sessionless'; readonly partitions: SessionPartition[] }
  /** A new session (or null when the cache is full): answer every partition. */
  | { readonly kind: 'full'; readonly session: FetchSession | null; readonly partitions: SessionPartition[] }
  /** An existing session: answer only partitions with news. */
  | { readonly kind: 'incremental'; readonly session: FetchSession; readonly partitions: SessionPartition[] }
  | { readonly kind: 'error'; readonly errorCode: number };

export function sessionPartitionKey(
  topic: string,
  topicId: string,
  partition: number,
  useTopicIds: boolean,
): string {
  return `${useTopicIds ? topicId : topic}:${partition}`;
}

export class FetchSessionCache {
  private readonly sessions = new Map<number, FetchSession>();

  constructor(
    private readonly maxSlots: number,
    private readonly clock: Clock,
    /** A random positive int32 (session ids must not be guessable in sequence). */
    private readonly randomId: () => number,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /**
   * Resolves the session part of a Fetch request. `requested` are the request's partitions,
   * `forgotten` the keys of partitions it drops (incremental only).
   */
  context(
    sessionId: number,
    sessionEpoch: number,
    requested: SessionPartition[],
    forgotten: readonly string[],
  ): FetchContext {
    const now = this.clock.nowMs();
    if (sessionEpoch === -1) {
      if (sessionId !== 0) this.sessions.delete(sessionId);
      return { kind: 'sessionless', partitions: requested };
    }
    if (sessionEpoch === 0) {
      if (sessionId !== 0) this.sessions.delete(sessionId);
      const session = this.create(now, requested.length);
      if (session) for (const p of requested) session.partitions.set(p.key, p);
      return { kind: 'full', session, partitions: requested };
    }
    const session = this.sessions.get(sessionId);
    if (sessionId === 0 || !session) return { kind: 'error', errorCode: FETCH_SESSION_ID_NOT_FOUND };
    if (session.nextEpoch !== sessionEpoch) return { kind: 'error', errorCode: INVALID_FETCH_SESSION_EPOCH };
    for (const p of requested) {
      const cached = session.partitions.get(p.key);
      if (cached) {
        cached.fetchOffset = p.fetchOffset;
        cached.maxBytes = p.maxBytes;
        cached.currentLeaderEpoch = p.currentLeaderEpoch;
        cached.logStartOffset = p.logStartOffset;
      } else {
        session.partitions.set(p.key, p);
      }
    }
    for (const k of forgotten) session.partitions.delete(k);
    session.nextEpoch = session.nextEpoch === 0x7fffffff ? 1 : session.nextEpoch + 1;
    session.lastUsedMs = now;
    // Re-inserting keeps the map in least-recently-used order for eviction.
    this.sessions.delete(session.id);
    this.sessions.set(session.id, session);
    return { kind: 'incremental', session, partitions: [...session.partitions.values()] };
  }

  /**
   * Kafka's FetchSessionCache.tryEvict: a session idle for EVICTION_IDLE_MS goes first; otherwise
   * the smallest session (fewest partitions, then least recently used) makes room for a new one at
   * least as large. Clients that open a session on every fetch and never use it again (epoch 0
   * every time) so keep replacing each other instead of crowding out real sessions for minutes.
   */
  private evictFor(now: number, size: number): boolean {
    const oldest = this.sessions.values().next().value!;
    if (now - oldest.lastUsedMs >= EVICTION_IDLE_MS) {
      this.sessions.delete(oldest.id);
      return true;
    }
    // Iteration is least recently used first, so the first smallest found is the one to go.
    let smallest: FetchSession | null = null;
    for (const s of this.sessions.values()) {
      if (smallest === null || s.partitions.size < smallest.partitions.size) smallest = s;
    }
    if (smallest === null || size < smallest.partitions.size) return false;
    this.sessions.delete(smallest.id);
    return true;
  }

  private create(now: number, size: number): FetchSession | null {
    if (this.maxSlots <= 0) return null;
    if (this.sessions.size >= this.maxSlots && !this.evictFor(now, size)) return null;
    // Bounded: a broken random source (always 0, or cycling through taken ids) must cost this
    // client its session, not spin the broker's event loop.
    let id = this.randomId();
    for (let attempt = 1; id === 0 || this.sessions.has(id); attempt++) {
      if (attempt >= LIMITS.fetchSessionIdAttempts) return null;
      id = this.randomId();
    }
    const session = new FetchSession(id, now);
    this.sessions.set(id, session);
    return session;
  }
}
