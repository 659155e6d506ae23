/**
 * Client quotas enforced (Kafka's ClientQuotaManager, ClientRequestQuotaManager,
 * ControllerMutationQuotaManager and their DefaultQuotaCallback): `producer_byte_rate` meters
 * Produce request bytes, `consumer_byte_rate` consumer Fetch response bytes, `request_percentage`
 * the time requests spend being handled, each over Kafka's Rate (common/sampled-stat.ts) of
 * `quota.window.num` samples of `quota.window.size.seconds`; `controller_mutation_rate` the
 * partitions created and deleted (controller-mutation-quota.ts), over Kafka's TokenBucket of
 * `controller.quota.window.num` × `controller.quota.window.size.seconds` (its Rate is only shown).
 * Each is per broker, per quota entity.
 *
 * Which entity a client's usage is metered against follows Kafka exactly: the quota levels ever
 * configured on this broker (sticky until restart, as Kafka's quotaTypesEnabled) choose the metric
 * tags (user, client-id), and the limit of those tags is the most specific configured of
 *   /config/users/<user>/clients/<client-id>, /config/users/<user>/clients/<default>,
 *   /config/users/<user>, /config/users/<default>/clients/<client-id>,
 *   /config/users/<default>/clients/<default>, /config/users/<default>,
 *   /config/clients/<client-id>, /config/clients/<default>.
 * The user is the connection's principal name, as Kafka's session.sanitizedUser: the SASL user,
 * an SSL client certificate's name, or ANONYMOUS.
 *
 * The values are read from the metadata image at every call (an index rebuilt when the image's
 * quotas change), so an altered quota applies to the next request. No quota of a type ever
 * configured: nothing is recorded for that type (Kafka's NoQuotas), the hot path costs one check.
 *
 * One manager per quota type, owned by the broker's ClientQuotas; callers pass the time.
 */
import { LIMITS } from '../common/limits.js';
import {
  Avg,
  DEFAULT_METRIC_WINDOW,
  Rate,
  type SampleWindow,
  TokenBucket,
  throttleTimeMs,
  tokenBucketThrottleTimeMs,
} from '../common/sampled-stat.js';
import {
  type QuotaEntityComponent,
  quotaEntityComponents,
  quotaEntityKey,
} from '../metadata/client-quotas.js';
import type { ConfigMap } from '../metadata/cluster-metadata.js';
import { ControllerMutationQuota } from './controller-mutation-quota.js';

export type ClientQuotaType = 'produce' | 'fetch' | 'request' | 'controller_mutation';

/** The quota key each type enforces (DescribeClientQuotas' names). */
export const QUOTA_KEY_OF: Readonly<Record<ClientQuotaType, string>> = Object.freeze({
  produce: 'producer_byte_rate',
  fetch: 'consumer_byte_rate',
  request: 'request_percentage',
  controller_mutation: 'controller_mutation_rate',
});

/** The user of a connection nobody authenticated (Kafka's KafkaPrincipal.ANONYMOUS). */
export const ANONYMOUS_USER = 'ANONYMOUS';

/** The user whose quotas a request counts against: its connection's principal name. */
export function quotaUser(req: ThrottledRequest): string {
  return req.connection.principal?.name ?? ANONYMOUS_USER;
}

/** Kafka's ClientQuotaManager.InactiveSensorExpirationTimeSeconds. */
const INACTIVE_SENSOR_EXPIRATION_MS = 3600 * 1000;

// Kafka's QuotaTypes: which levels have been configured (bits, OR-ed, never cleared).
const CLIENT_ID = 1;
const USER = 2;
const USER_CLIENT_ID = 4;

/** The metric tags an entity is metered under: '' leaves the level out (Kafka's DefaultTags). */
export interface QuotaTags {
  readonly user: string;
  readonly clientId: string;
}

interface Sensors {
  readonly tags: QuotaTags;
  readonly rate: Rate;
  /** The controller mutation quota's measure (Kafka's "tokens" metric); absent for the other types. */
  readonly bucket: TokenBucket | undefined;
  readonly throttleTime: Avg;
  lastRecordMs: number;
}

/** One entity as the metrics show it. */
export interface QuotaEntityReading {
  readonly user: string;
  readonly clientId: string;
  /** Bytes/s (produce, fetch), percent of one thread (request) or partition mutations/s, over the quota window. */
  readonly value: number;
  /** The limit now; null when none applies. */
  readonly limit: number | null;
  /** Controller mutation credits left (Kafka's TokenBucket "tokens"); null for other types or without a limit. */
  readonly tokens: number | null;
  /** The mean throttle time of the last minute, ms (Kafka's throttle-time Avg); 0 when none. */
  readonly throttleTimeMs: number;
}

const key = (components: QuotaEntityComponent[]): string => quotaEntityKey(components) as string;
const userC = (name: string | null): QuotaEntityComponent => ({ entityType: 'user', entityName: name });
const clientC = (name: string | null): QuotaEntityComponent => ({
  entityType: 'client-id',
  entityName: name,
});

export class ClientQuotaManager {
  private enabledLevels = 0;
  private seenQuotas: ReadonlyMap<string, ConfigMap> | undefined | null = null;
  /** This type's limits by canonical entity key. */
  private limits = new Map<string, number>();
  private readonly sensors = new Map<string, Sensors>();
  private lastPurgeMs = Number.NEGATIVE_INFINITY;

  constructor(
    readonly type: ClientQuotaType,
    private readonly window: SampleWindow,
    /** The image's client quotas now (by canonical entity key). */
    private readonly quotas: () => ReadonlyMap<string, ConfigMap> | undefined,
    /** The longest throttle (the request quota's one sample span); Infinity for the byte rates. */
    private readonly maxThrottleMs = Number.POSITIVE_INFINITY,
  ) {}

  /** Some quota of this type has been configured since this broker started (Kafka's quotasEnabled). */
  get enabled(): boolean {
    this.refresh();
    return this.enabledLevels !== 0;
  }

  private refresh(): void {
    const quotas = this.quotas();
    if (quotas === this.seenQuotas) return;
    this.seenQuotas = quotas;
    const name = QUOTA_KEY_OF[this.type];
    const limits = new Map<string, number>();
    for (const [entity, values] of quotas ?? []) {
      const raw = values[name];
      if (raw === undefined) continue;
      const n = Number(raw);
      if (!Number.isFinite(n)) continue;
      limits.set(entity, n);
      const types = quotaEntityComponents(entity).map((c) => c.entityType);
      const hasUser = types.includes('user');
      const hasClient = types.includes('client-id');
      this.enabledLevels |= hasUser && hasClient ? USER_CLIENT_ID : hasUser ? USER : CLIENT_ID;
    }
    this.limits = limits;
  }

  /** Kafka's DefaultQuotaCallback.quotaMetricTags: the entity `user`/`clientId` is metered under. */
  metricTags(user: string, clientId: string): QuotaTags {
    this.refresh();
    switch (this.enabledLevels) {
      case 0:
      case CLIENT_ID:
        return { user: '', clientId };
      case USER:
        return { user, clientId: '' };
      case USER_CLIENT_ID:
        return { user, clientId };
    }
    const has = (components: QuotaEntityComponent[]): boolean => this.limits.has(key(components));
    if (has([userC(user), clientC(clientId)]) || has([userC(user), clientC(null)])) return { user, clientId };
    if (has([userC(user)])) return { user, clientId: '' };
    if (has([userC(null), clientC(clientId)]) || has([userC(null), clientC(null)])) return { user, clientId };
    if (has([userC(null)])) return { user, clientId: '' };
    return { user: '', clientId };
  }

  /** Kafka's DefaultQuotaCallback.quotaLimit: the most specific limit for these tags, or null. */
  quotaLimit(tags: QuotaTags): number | null {
    this.refresh();
    const get = (components: QuotaEntityComponent[]): number | undefined => this.limits.get(key(components));
    const { user, clientId } = tags;
    if (user !== '' && clientId !== '') {
      return (
        get([userC(user), clientC(clientId)]) ??
        get([userC(user), clientC(null)]) ??
        get([userC(null), clientC(clientId)]) ??
        get([userC(null), clientC(null)]) ??
        null
      );
    }
    if (user !== '') return get([userC(user)]) ?? get([userC(null)]) ?? null;
    if (clientId !== '') return get([clientC(clientId)]) ?? get([clientC(null)]) ?? null;
    return null;
  }

  /**
   * Kafka's maybeRecordAndGetThrottleTimeMs: records `value` for the client's entity and returns
   * how long it must be throttled (0 when within its quota, or when no quota of this type exists).
   */
  recordAndGetThrottleTimeMs(user: string, clientId: string, value: number, nowMs: number): number {
    if (!this.enabled) return 0;
    const s = this.sensorsOf(user, clientId, nowMs);
    s.rate.record(value, nowMs);
    const limit = this.quotaLimit(s.tags);
    if (limit === null) return 0;
    const observed = s.rate.measure(nowMs);
    if (observed <= limit) return 0;
    return Math.max(0, throttleTimeMs(observed, limit, s.rate.windowSizeMs(nowMs), this.maxThrottleMs));
  }

  /**
   * Partition mutations against controller_mutation_rate (Kafka's Strict- and
   * PermissiveControllerMutationQuota.record): the throttle time when the token bucket is below
   * zero. Strict, the bucket is checked first and, below zero, nothing is recorded — the caller
   * refuses the mutation; within it, the mutations are taken whole, however far below zero that
   * goes. Permissive, they are recorded, then the bucket checked. Without a limit for the entity
   * they are only metered (Kafka's unbounded bucket); with no quota of this type, not even that.
   */
  recordMutations(user: string, clientId: string, permits: number, strict: boolean, nowMs: number): number {
    if (!this.enabled) return 0;
    const s = this.sensorsOf(user, clientId, nowMs);
    const limit = this.quotaLimit(s.tags);
    const bucket = s.bucket;
    if (limit === null || bucket === undefined) {
      s.rate.record(permits, nowMs);
      return 0;
    }
    if (strict) {
      const tokens = bucket.measure(limit, nowMs);
      if (tokens < 0) return tokenBucketThrottleTimeMs(tokens, limit);
    }
    s.rate.record(permits, nowMs);
    bucket.record(permits, limit, nowMs);
    const tokens = bucket.measure(limit, nowMs);
    return strict || tokens >= 0 ? 0 : tokenBucketThrottleTimeMs(tokens, limit);
  }

  /** Records without checking (Kafka's recordNoThrottle); a negative value un-records a throttled fetch. */
  recordNoThrottle(user: string, clientId: string, value: number, nowMs: number): void {
    if (!this.enabled) return;
    this.sensorsOf(user, clientId, nowMs).rate.record(value, nowMs);
  }

  /**
   * Kafka's getMaxValueInQuotaWindow: the most a client may take in one go without being certain
   * to be throttled — its limit over `samples` - 1 sample spans; Infinity without a limit.
   */
  maxValueInQuotaWindow(user: string, clientId: string, nowMs: number): number {
    if (!this.enabled) return Number.POSITIVE_INFINITY;
    const limit = this.quotaLimit(this.sensorsOf(user, clientId, nowMs).tags);
    if (limit === null) return Number.POSITIVE_INFINITY;
    return Math.floor((limit * (this.window.samples - 1) * this.window.sampleMs) / 1000);
  }

  /** The client was throttled for `ms` (Kafka's throttle-time sensor). */
  recordThrottle(user: string, clientId: string, ms: number, nowMs: number): void {
    if (ms > 0) this.sensorsOf(user, clientId, nowMs).throttleTime.record(ms, nowMs);
  }

  private sensorsOf(user: string, clientId: string, nowMs: number): Sensors {
    const tags = this.metricTags(user, clientId);
    const id = `${tags.user}\u0000${tags.clientId}`;
    let s = this.sensors.get(id);
    if (s === undefined) {
      this.purge(nowMs);
      s = {
        tags,
        rate: new Rate(this.window),
        bucket: this.type === 'controller_mutation' ? new TokenBucket(this.window) : undefined,
        throttleTime: new Avg(DEFAULT_METRIC_WINDOW),
        lastRecordMs: nowMs,
      };
      this.sensors.set(id, s);
    }
    s.lastRecordMs = nowMs;
    return s;
  }

  /**
   * Drops sensors idle for an hour (Kafka expires them so), and beyond LIMITS.clientQuotaSensors
   * the longest idle: client ids are chosen by clients, the memory they cost is bounded here.
   */
  private purge(nowMs: number): void {
    const full = this.sensors.size >= LIMITS.clientQuotaSensors;
    if (!full && nowMs - this.lastPurgeMs < this.window.sampleMs) return;
    this.lastPurgeMs = nowMs;
    for (const [id, s] of this.sensors) {
      if (nowMs - s.lastRecordMs >= INACTIVE_SENSOR_EXPIRATION_MS) this.sensors.delete(id);
    }
    if (this.sensors.size < LIMITS.clientQuotaSensors) return;
    const byIdle = [...this.sensors].sort((a, b) => a[1].lastRecordMs - b[1].lastRecordMs);
    for (const [id] of byIdle.slice(0, this.sensors.size - LIMITS.clientQuotaSensors + 1))
      this.sensors.delete(id);
  }

  /**
   * The entities metered within the last quota window, busiest first, at most `max` (the metrics'
   * label sets stay bounded however many client ids connect).
   */
  readings(nowMs: number, max: number): QuotaEntityReading[] {
    const spanMs = this.window.samples * this.window.sampleMs;
    const out: QuotaEntityReading[] = [];
    for (const s of this.sensors.values()) {
      if (nowMs - s.lastRecordMs > spanMs) continue;
      const t = s.throttleTime.measure(nowMs);
      const limit = this.quotaLimit(s.tags);
      out.push({
        user: s.tags.user,
        clientId: s.tags.clientId,
        value: s.rate.measure(nowMs),
        limit,
        tokens: s.bucket !== undefined && limit !== null ? s.bucket.measure(limit, nowMs) : null,
        throttleTimeMs: Number.isNaN(t) ? 0 : t,
      });
    }
    out.sort((a, b) => b.value - a.value);
    return out.slice(0, max);
  }
}

/** What ClientQuotas needs of a request: who sent it, and the connection to mute. */
export interface ThrottledRequest {
  readonly clientId: string | null;
  /** principal: absent on a connection nobody authenticated (a test's). */
  readonly connection: { throttle?(ms: number): void; readonly principal?: { readonly name: string } };
}

/**
 * The broker's four client quota managers (Kafka's QuotaFactory.QuotaManagers, client part) and
 * the throttling of a request's connection. Owned by the Broker; handlers use it through
 * BrokerServices, on the broker's clock.
 */
export class ClientQuotas {
  readonly produce: ClientQuotaManager;
  readonly fetch: ClientQuotaManager;
  readonly request: ClientQuotaManager;
  readonly controllerMutation: ClientQuotaManager;

  constructor(
    /** quota.window.num, quota.window.size.seconds */
    readonly window: SampleWindow,
    /** controller.quota.window.num, controller.quota.window.size.seconds */
    controllerWindow: SampleWindow,
    quotas: () => ReadonlyMap<string, ConfigMap> | undefined,
  ) {
    this.produce = new ClientQuotaManager('produce', window, quotas);
    this.fetch = new ClientQuotaManager('fetch', window, quotas);
    // ClientRequestQuotaManager: its throttle is bounded by one sample span.
    this.request = new ClientQuotaManager('request', window, quotas, window.sampleMs);
    this.controllerMutation = new ClientQuotaManager('controller_mutation', controllerWindow, quotas);
  }

  /** The manager of each quota type. */
  of(type: ClientQuotaType): ClientQuotaManager {
    return type === 'controller_mutation' ? this.controllerMutation : this[type];
  }

  get all(): readonly ClientQuotaManager[] {
    return [this.produce, this.fetch, this.request, this.controllerMutation];
  }

  /** Kafka's ControllerMutationQuotaManager.newQuotaFor: strict from `strictSinceVersion` on. */
  controllerMutationQuota(
    req: ThrottledRequest & { readonly apiVersion: number },
    strictSinceVersion: number,
  ): ControllerMutationQuota {
    return new ControllerMutationQuota(
      this.controllerMutation,
      quotaUser(req),
      req.clientId ?? '',
      req.apiVersion >= strictSinceVersion,
    );
  }

  /**
   * Kafka's sendResponseMaybeThrottleWithControllerQuota: the request's handling time is recorded
   * against request_percentage, and the connection muted for the longer of that throttle and the
   * controller mutation quota's; the response carries the time returned.
   */
  throttleWithControllerQuota(
    req: ThrottledRequest & { handlingMs(): number },
    quota: ControllerMutationQuota,
    nowMs: number,
  ): number {
    const mutationMs = quota.throttleTimeMs(nowMs);
    const requestMs = this.recordRequestTime(req, req.handlingMs(), nowMs);
    const ms = Math.max(mutationMs, requestMs);
    this.throttle(mutationMs > requestMs ? this.controllerMutation : this.request, req, ms, nowMs);
    return ms;
  }

  /**
   * Kafka's ClientRequestQuotaManager.maybeRecordAndGetThrottleTimeMs: `handlingMs` of the
   * request as percent-seconds of one thread; the throttle time when over `request_percentage`.
   */
  recordRequestTime(req: ThrottledRequest, handlingMs: number, nowMs: number): number {
    return this.request.recordAndGetThrottleTimeMs(
      quotaUser(req),
      req.clientId ?? '',
      handlingMs / 10,
      nowMs,
    );
  }

  /**
   * Kafka's recordNetworkThreadTimeCallback: the time spent producing a request's response,
   * recorded against request_percentage without throttling this request (it counts for the next).
   */
  recordResponseTime(req: ThrottledRequest, ms: number, nowMs: number): void {
    this.request.recordNoThrottle(quotaUser(req), req.clientId ?? '', ms / 10, nowMs);
  }

  /**
   * Kafka's ClientQuotaManager.throttle: counts `ms` in the entity's throttle time and mutes the
   * request's connection for it (the response itself goes out at once, KIP-219).
   */
  throttle(manager: ClientQuotaManager, req: ThrottledRequest, ms: number, nowMs: number): void {
    if (ms <= 0) return;
    manager.recordThrottle(quotaUser(req), req.clientId ?? '', ms, nowMs);
    req.connection.throttle?.(ms);
  }
}
