/**
 * Kafka's ControllerMutationQuota (KIP-599) for one CreateTopics, CreatePartitions or DeleteTopics
 * request: each topic's partition mutations — partitions created, added or deleted — are recorded
 * against the client's controller_mutation_rate before the topic is changed.
 *
 * Strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+, the versions whose clients
 * know THROTTLING_QUOTA_EXCEEDED): once the client's token bucket is below zero, a topic is
 * refused with that error and not recorded; the others of the request go on, and a topic that
 * finds the bucket at or above zero is let through whole. Permissive (older versions): every topic
 * goes through and the response is throttled by how far below zero the bucket went. No quota of
 * this type configured: nothing is recorded (Kafka's UnboundedControllerMutationQuota).
 *
 * Owned by the handler of one request, for its length; times are the broker clock's.
 */
import { ErrorCode } from '../protocol/generated/errors.js';
import type { ClientQuotaManager } from './client-quota-manager.js';

/** The first strict version of each API that mutates partitions (Kafka's strictSinceVersion). */
export const STRICT_SINCE_VERSION = Object.freeze({ createTopics: 6, createPartitions: 3, deleteTopics: 5 });

/** Kafka's THROTTLING_QUOTA_EXCEEDED answer to a refused topic (Errors.THROTTLING_QUOTA_EXCEEDED.message). */
export const THROTTLED_TOPIC = Object.freeze({
  errorCode: ErrorCode.THROTTLING_QUOTA_EXCEEDED,
  errorMessage: 'The throttling quota has been exceeded.',
});

export class ControllerMutationQuota {
  private lastThrottleMs = 0;
  private lastRecordedMs = 0;

  constructor(
    private readonly manager: ClientQuotaManager,
    private readonly user: string,
    private readonly clientId: string,
    readonly strict: boolean,
  ) {}

  /** No controller_mutation_rate has been configured on this broker: nothing to record. */
  get unbounded(): boolean {
    return !this.manager.enabled;
  }

  /** The quota may refuse a topic: strict, and a limit applies to the client. */
  get mayRefuse(): boolean {
    const m = this.manager;
    return this.strict && m.enabled && m.quotaLimit(m.metricTags(this.user, this.clientId)) !== null;
  }

  /**
   * Records `partitions` mutations of one topic; false when the topic is refused (strict, the
   * quota exhausted), to be answered THROTTLED_TOPIC.
   */
  record(partitions: number, nowMs: number): boolean {
    const ms = this.manager.recordMutations(this.user, this.clientId, partitions, this.strict, nowMs);
    if (ms <= 0) return true;
    this.lastThrottleMs = ms;
    this.lastRecordedMs = nowMs;
    return !this.strict;
  }

  /** The throttle of the last violation less the time since it (the request may have waited). */
  throttleTimeMs(nowMs: number): number {
    return Math.max(0, this.lastThrottleMs - (nowMs - this.lastRecordedMs));
  }
}
