/**
 * The connection layer of the tools' client: bootstrap, one connection per broker with its
 * ApiVersions-negotiated versions, a metadata cache, routing to a node / the controller / any broker,
 * and bounded retries of retriable failures. Owned by one tool run (or test), which must close() it.
 *
 * Routing follows Kafka's admin client (KafkaAdminClient's node providers over NetworkClient): "any
 * broker" is the least-loaded node — one already connected, else the first known broker or
 * bootstrap server that is not backed off — and a node that refuses a connection is backed off
 * (reconnect.backoff.ms, doubled up to reconnect.backoff.max.ms) while the next one is tried at
 * once, so a request fails only when no listed broker answers.
 */
import type * as tls from 'node:tls';
import {
  ClientConnection,
  ConnectionClosedError,
  RequestTimeoutError,
} from '../network/client-connection.js';
import type { SaslClientCredentials } from '../network/sasl-client-auth.js';
import { defaultMetadataRequestTopic } from '../protocol/generated/MetadataRequest.js';
import type { MetadataResponse } from '../protocol/generated/MetadataResponse.js';
import { ZERO_UUID } from '../protocol/uuid.js';
import { type Api, Apis } from './apis.js';
import { ClientError, checkCode, describeSocketError, KafkaResponseError, kafkaError } from './errors.js';
import type { ClientRuntime, HostPort } from './runtime.js';

export interface KafkaClientOptions {
  readonly bootstrap: readonly HostPort[];
  readonly clientId: string;
  readonly runtime: ClientRuntime;
  /** request.timeout.ms */
  readonly requestTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  /** Attempts after the first for a retriable failure. */
  readonly retries?: number;
  /** default.api.timeout.ms: no retry starts after an operation has run this long. */
  readonly apiTimeoutMs?: number;
  /** retry.backoff.ms, doubled per attempt up to retry.backoff.max.ms. */
  readonly retryBackoffMs?: number;
  readonly retryBackoffMaxMs?: number;
  /** security.protocol SSL: every connection is TLS with these options (see security-config.ts). */
  readonly tls?: tls.ConnectionOptions;
  /** security.protocol SASL_*: every connection authenticates with these first. */
  readonly sasl?: SaslClientCredentials;
}

export interface PartitionMetadata {
  readonly partition: number;
  readonly errorCode: number;
  /** -1 without a leader. */
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  readonly offlineReplicas: readonly number[];
}

export interface TopicMetadata {
  readonly name: string;
  readonly topicId: string;
  readonly errorCode: number;
  readonly isInternal: boolean;
  /** Sorted by partition. */
  readonly partitions: readonly PartitionMetadata[];
}

export interface ClusterMetadata {
  readonly clusterId: string | null;
  readonly controllerId: number;
  readonly brokers: ReadonlyMap<number, HostPort>;
  readonly topics: ReadonlyMap<string, TopicMetadata>;
}

/** A network-level failure talking to one broker; retriable, as Kafka's NetworkException. */
export class BrokerUnreachableError extends ClientError {}

interface Link {
  readonly conn: ClientConnection;
  readonly versions: ReadonlyMap<number, { min: number; max: number }>;
}

export type Target = { kind: 'any' } | { kind: 'node'; id: number } | { kind: 'controller' };

function address(hp: HostPort): string {
  return `${hp.host}:${hp.port}`;
}

/** reconnect.backoff.ms and reconnect.backoff.max.ms, Kafka's defaults. */
const RECONNECT_BACKOFF_MS = 50;
const RECONNECT_BACKOFF_MAX_MS = 1000;

interface Connected {
  readonly hp: HostPort;
  readonly link: Link;
}

export class KafkaClient {
  private readonly links = new Map<string, Promise<Link>>();
  /** Addresses that answered once: losing them later is retriable, never reaching them is not. */
  private readonly reached = new Set<string>();
  /** Addresses whose last connection attempt failed: not tried again before `untilMs`. */
  private readonly backoff = new Map<string, { failures: number; untilMs: number }>();
  private cached: ClusterMetadata | null = null;
  /** The brokers of the latest metadata, kept when the cache is dropped: "any" tries them too. */
  private knownBrokers: readonly HostPort[] = [];
  private closed = false;
  readonly requestTimeoutMs: number;
  private readonly retries: number;

  constructor(private readonly options: KafkaClientOptions) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.retries = options.retries ?? 5;
  }

  get runtime(): ClientRuntime {
    return this.options.runtime;
  }

  /** Sends one request to `target` at the highest version both sides support. No retry. */
  async send<Req, Resp>(target: Target, api: Api<Req, Resp>, build: (version: number) => Req): Promise<Resp> {
    const { request, response } = await api.codecs();
    const { hp, link } = await this.connect(target);
    const version = this.negotiate(link, api, hp);
    try {
      return await link.conn.send(api.key, version, request, build(version), response);
    } catch (e) {
      this.drop(hp);
      throw this.networkError(hp, e);
    }
  }

  /** Sends a request the broker does not answer (Produce with acks=0). */
  async sendOneWay<Req>(
    target: Target,
    api: Api<Req, unknown>,
    build: (version: number) => Req,
  ): Promise<void> {
    const { request } = await api.codecs();
    const { hp, link } = await this.connect(target);
    const version = this.negotiate(link, api, hp);
    try {
      await link.conn.sendOneWay(api.key, version, request, build(version));
    } catch (e) {
      this.drop(hp);
      throw this.networkError(hp, e);
    }
  }

  /** The version `api` would be sent at to `target`, or null when the broker does not serve it. */
  async versionFor(target: Target, api: Api<unknown, unknown>): Promise<number | null> {
    const { hp, link } = await this.connect(target);
    try {
      return this.negotiate(link, api, hp);
    } catch {
      return null;
    }
  }

  /**
   * Runs `attempt` until it succeeds, fails with a non-retriable error, or runs out of retries.
   * Between attempts the metadata cache is dropped, since most retriable errors (NOT_LEADER,
   * UNKNOWN_TOPIC right after a create, a lost connection) mean it is stale.
   */
  async retry<T>(attempt: () => Promise<T>): Promise<T> {
    let backoffMs = this.options.retryBackoffMs ?? 100;
    const maxBackoffMs = this.options.retryBackoffMaxMs ?? 1000;
    const { clock } = this.options.runtime;
    const deadlineMs = clock.nowMs() + (this.options.apiTimeoutMs ?? 60_000);
    for (let n = 0; ; n++) {
      try {
        return await attempt();
      } catch (e) {
        if (n >= this.retries || !isRetriable(e) || this.closed || clock.nowMs() + backoffMs > deadlineMs)
          throw e;
        this.cached = null;
        await this.options.runtime.sleep(backoffMs);
        backoffMs = Math.min(backoffMs * 2, maxBackoffMs);
      }
    }
  }

  /**
   * Metadata for `topics` (all topics when null), refreshed from the cluster. A producer allows
   * auto-creation (as Kafka's does): a broker with auto.create.topics.enable creates missing topics.
   */
  async fetchMetadata(
    topics: readonly string[] | null,
    allowAutoTopicCreation = false,
  ): Promise<ClusterMetadata> {
    const resp = await this.send({ kind: 'any' }, Apis.Metadata, (v) => ({
      topics:
        topics === null
          ? null
          : topics.map((name) => ({ ...defaultMetadataRequestTopic(), topicId: ZERO_UUID, name })),
      allowAutoTopicCreation,
      includeClusterAuthorizedOperations: false,
      includeTopicAuthorizedOperations: false,
      ...(v < 4 ? { allowAutoTopicCreation: true } : {}),
    }));
    const md = toClusterMetadata(resp);
    this.knownBrokers = [...md.brokers.values()];
    // Merge so that a narrow request does not forget topics a wider one learned.
    const merged = new Map(this.cached?.topics ?? []);
    for (const [name, t] of md.topics) merged.set(name, t);
    this.cached = { ...md, topics: merged };
    return md;
  }

  /** Cached metadata that covers `topics`, fetched when missing. */
  async metadataFor(topics: readonly string[], allowAutoTopicCreation = false): Promise<ClusterMetadata> {
    const c = this.cached;
    if (c && topics.every((t) => c.topics.get(t)?.errorCode === 0)) return c;
    await this.fetchMetadata(topics, allowAutoTopicCreation);
    return this.cached!;
  }

  invalidateMetadata(): void {
    this.cached = null;
  }

  close(): void {
    this.closed = true;
    for (const p of this.links.values()) p.then((l) => l.conn.close()).catch(() => {});
    this.links.clear();
  }

  /**
   * A connection for `target`. A node is that broker (its failure is the caller's to judge: a
   * partition leader or a group coordinator moves, a broker's own log dirs do not). The controller
   * is the one the metadata names, else any broker: every Skiff broker forwards the controller's
   * APIs through the metadata store, as every KRaft broker forwards them to the active controller
   * (Kafka's Metadata even names a random live broker as the controller for that reason), so a dead
   * controller must not stop topic administration while another broker lives.
   */
  private async connect(target: Target): Promise<Connected> {
    if (target.kind === 'any') return this.anyBroker();
    const md = this.cached ?? (await this.fetchMetadata([]));
    if (target.kind === 'controller') {
      const hp = md.brokers.get(md.controllerId);
      if (hp === undefined || this.backedOff(address(hp))) return this.anyBroker();
      try {
        return { hp, link: await this.link(hp) };
      } catch (e) {
        if (!(e instanceof ClientError) || this.closed) throw e;
        return this.anyBroker(address(hp));
      }
    }
    let hp = md.brokers.get(target.id);
    if (!hp) hp = (await this.fetchMetadata([])).brokers.get(target.id);
    if (!hp) throw new BrokerUnreachableError(`broker ${target.id} is not in the cluster`);
    return { hp, link: await this.link(hp) };
  }

  /**
   * The least-loaded broker, as Kafka's NetworkClient.leastLoadedNode picks it: one connected (or
   * connecting) already; else every known broker and bootstrap server in turn, those not backed off
   * first (a backed-off one is tried only after all others failed), each failure moving on to the
   * next at once. Fails only when none answers: retriably when
   * one of them answered before (it may be restarting), at once when none ever did (a typo, a
   * stopped cluster).
   */
  private async anyBroker(skip?: string): Promise<Connected> {
    const seen = new Set<string>(skip === undefined ? [] : [skip]);
    const candidates: HostPort[] = [];
    for (const hp of [...(this.cached?.brokers.values() ?? this.knownBrokers), ...this.options.bootstrap]) {
      const key = address(hp);
      if (seen.has(key)) continue;
      seen.add(key);
      candidates.push(hp);
    }
    const now = this.options.runtime.clock.nowMs();
    const wait = (hp: HostPort) => Math.max(0, (this.backoff.get(address(hp))?.untilMs ?? 0) - now);
    const order = [
      ...candidates.filter((hp) => this.links.has(address(hp))),
      ...candidates.filter((hp) => !this.links.has(address(hp))).sort((a, b) => wait(a) - wait(b)),
    ];
    const failures: Error[] = [];
    for (const hp of order) {
      try {
        return { hp, link: await this.link(hp) };
      } catch (e) {
        if (!(e instanceof ClientError) || this.closed) throw e;
        failures.push(e);
      }
    }
    if (failures.length === 0) throw new ClientError('no broker to connect to');
    if (failures.length === 1) throw failures[0]!;
    const message = `cannot connect to any broker: ${failures
      .map((f) => f.message.replace(/^cannot connect to /, ''))
      .join(', ')}`;
    throw failures.some((f) => f instanceof BrokerUnreachableError)
      ? new BrokerUnreachableError(message)
      : new ClientError(message);
  }

  private backedOff(key: string): boolean {
    return (this.backoff.get(key)?.untilMs ?? 0) > this.options.runtime.clock.nowMs();
  }

  /** Backs `key` off after a failed connection: reconnect.backoff.ms, doubled per failure. */
  private failed(key: string): void {
    const failures = (this.backoff.get(key)?.failures ?? 0) + 1;
    const ms = Math.min(RECONNECT_BACKOFF_MS * 2 ** (failures - 1), RECONNECT_BACKOFF_MAX_MS);
    this.backoff.set(key, { failures, untilMs: this.options.runtime.clock.nowMs() + ms });
  }

  private link(hp: HostPort): Promise<Link> {
    const key = address(hp);
    let p = this.links.get(key);
    if (!p) {
      p = this.open(hp);
      this.links.set(key, p);
      p.catch(() => {
        if (this.links.get(key) === p) this.links.delete(key);
      });
    }
    return p;
  }

  private async open(hp: HostPort): Promise<Link> {
    if (this.closed) throw new ClientError('client closed');
    const key = address(hp);
    const { runtime } = this.options;
    const connectTimeoutMs = this.options.connectTimeoutMs ?? 10_000;
    let conn: ClientConnection;
    try {
      conn = await new Promise<ClientConnection>((resolve, reject) => {
        let timedOut = false;
        const cancel = runtime.scheduler.schedule('connect-timeout', connectTimeoutMs, () => {
          timedOut = true;
          reject(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' }));
        });
        ClientConnection.connect(hp.host, hp.port, {
          clientId: this.options.clientId,
          requestTimeoutMs: this.requestTimeoutMs,
          scheduler: runtime.scheduler,
          ...(this.options.tls && { tls: this.options.tls }),
          ...(this.options.sasl && { sasl: this.options.sasl }),
        }).then(
          (c) => {
            cancel();
            if (timedOut) c.close();
            else resolve(c);
          },
          (e) => {
            cancel();
            reject(e);
          },
        );
      });
    } catch (e) {
      this.failed(key);
      const err = new ClientError(`cannot connect to ${key} (${describeSocketError(e)})`);
      // A broker we talked to before may be restarting: worth a retry. A bootstrap address that
      // never answered is most likely a typo or a stopped cluster: say so at once.
      throw this.reached.has(key) ? new BrokerUnreachableError(err.message) : err;
    }
    try {
      const { ApiVersions } = Apis;
      const { request, response } = await ApiVersions.codecs();
      const resp = await conn.send(
        ApiVersions.key,
        ApiVersions.max,
        request,
        { clientSoftwareName: 'skiff-tools', clientSoftwareVersion: '0.1.0' },
        response,
      );
      checkCode(resp.errorCode);
      this.reached.add(key);
      this.backoff.delete(key);
      return {
        conn,
        versions: new Map(resp.apiKeys.map((k) => [k.apiKey, { min: k.minVersion, max: k.maxVersion }])),
      };
    } catch (e) {
      conn.close();
      this.failed(key);
      if (e instanceof ClientError) throw e;
      throw new ClientError(
        `${key} did not answer ApiVersions (${describeSocketError(e)}); is it a Kafka broker?`,
      );
    }
  }

  private negotiate(link: Link, api: Api<unknown, unknown>, hp: HostPort): number {
    const theirs = link.versions.get(api.key);
    const version = theirs ? Math.min(api.max, theirs.max) : -1;
    if (!theirs || version < Math.max(api.min, theirs.min)) {
      throw new UnsupportedApiError(
        api.name,
        `the broker at ${address(hp)} does not support ${api.name}${
          theirs ? ` v${api.min}-${api.max} (it has v${theirs.min}-${theirs.max})` : ''
        }`,
      );
    }
    return version;
  }

  /** Closes the link to `hp` after a failed request; the next connection waits out a back-off. */
  private drop(hp: HostPort): void {
    const key = address(hp);
    this.failed(key);
    const p = this.links.get(key);
    this.links.delete(key);
    p?.then((l) => l.conn.close()).catch(() => {});
  }

  private networkError(hp: HostPort, e: unknown): Error {
    if (e instanceof RequestTimeoutError) {
      return new BrokerUnreachableError(`no response from ${address(hp)} within ${this.requestTimeoutMs} ms`);
    }
    if (e instanceof ConnectionClosedError || (e as { code?: string }).code !== undefined) {
      return new BrokerUnreachableError(`lost the connection to ${address(hp)} (${describeSocketError(e)})`);
    }
    return e instanceof Error ? e : new Error(String(e));
  }
}

/** The broker does not implement an API (or none of the versions this client speaks). */
export class UnsupportedApiError extends ClientError {
  constructor(
    readonly apiName: string,
    message: string,
  ) {
    super(message);
  }
}

export function isRetriable(e: unknown): boolean {
  return e instanceof BrokerUnreachableError || (e instanceof KafkaResponseError && e.retriable);
}

function toClusterMetadata(resp: MetadataResponse): ClusterMetadata {
  const brokers = new Map<number, HostPort>();
  for (const b of resp.brokers) brokers.set(b.nodeId, { host: b.host, port: b.port });
  const topics = new Map<string, TopicMetadata>();
  for (const t of resp.topics) {
    if (t.name === null) continue;
    const partitions = t.partitions
      .map((p) => ({
        partition: p.partitionIndex,
        errorCode: p.errorCode,
        leader: p.leaderId,
        leaderEpoch: p.leaderEpoch,
        replicas: p.replicaNodes,
        isr: p.isrNodes,
        offlineReplicas: p.offlineReplicas,
      }))
      .sort((a, b) => a.partition - b.partition);
    topics.set(t.name, {
      name: t.name,
      topicId: t.topicId,
      errorCode: t.errorCode,
      isInternal: t.isInternal,
      partitions,
    });
  }
  return { clusterId: resp.clusterId, controllerId: resp.controllerId, brokers, topics };
}

/** The error for a topic that a metadata response did not describe cleanly. */
export function topicError(md: ClusterMetadata, topic: string): KafkaResponseError | null {
  const t = md.topics.get(topic);
  if (!t) return kafkaError(3, `Topic '${topic}' does not exist.`);
  return t.errorCode === 0 ? null : kafkaError(t.errorCode);
}
