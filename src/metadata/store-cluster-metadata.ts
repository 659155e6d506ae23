import { LIMITS } from '../common/limits.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { aclRecordOf } from './acls.js';
import type {
  ApiResult,
  BrokerEndpoint,
  ClientQuotaResource,
  ClusterMetadata,
  ConfigAlteration,
  ConfigResource,
  ControllerClient,
  CreateTopicRequest,
  CreateTopicResult,
  MetadataImage,
  ScramUserResource,
} from './cluster-metadata.js';
import type {
  AlterPartitionRequest,
  AlterPartitionResult,
  ControllerRequestBody,
  ControllerResponse,
  ElectLeadersResult,
  PartitionResults,
} from './controller-requests.js';
import { type IsrChangeRecord, type IsrHistoryBounds, readIsrHistory } from './isr-history.js';
import { type BrokerRecord, type LogDirFailureRecord, MetadataKeys } from './keys.js';
import { MetadataFollower } from './metadata-follower.js';
import { type MetadataStore, StoreError, type StoreWatch } from './store.js';

export interface BrokerRegistration {
  readonly id: number;
  readonly host: string;
  readonly port: number;
  readonly rack: string | null;
  /** Every advertised listener; absent: one PLAINTEXT listener at host:port. */
  readonly endpoints?: readonly BrokerEndpoint[];
}

export interface StoreClusterMetadataOptions {
  readonly store: MetadataStore;
  readonly clusterId: string;
  readonly broker: BrokerRegistration;
  readonly scheduler: Scheduler;
  readonly logger: Logger;
  readonly randomBytes: (n: number) => Buffer;
  /** broker.session.timeout.ms: the registration lease's TTL (default 9000). */
  readonly sessionTimeoutMs?: number;
  /** broker.heartbeat.interval.ms: how often the lease is kept alive (default 2000). */
  readonly heartbeatIntervalMs?: number;
  /** How long a controller request may wait for its response (default 30000). */
  readonly requestTimeoutMs?: number;
}

/** How many leases a registration is tried on before start-up fails (each lasting a whole session). */
const REGISTRATION_ATTEMPTS = 5;
/** How long a controller response waits for this broker's image to include the change. */
const RESPONSE_IMAGE_WAIT_MS = 5000;

interface Pending {
  resolve(response: ControllerResponse | null): void;
  cancelTimer(): void;
}

/**
 * ClusterMetadata for one broker, backed by a MetadataStore (embedded or etcd).
 *
 * Reading: a snapshot at revision R, then the watch from R + 1, through MetadataFollower; start()
 * resolves only when the snapshot (configs included) is applied and the broker's own registration
 * is visible, so the caller can apply configs before starting fetchers or listeners.
 *
 * Writing: brokers never write cluster state. A controller call puts a request under `requests/`
 * on this broker's lease; the active controller (whichever process holds the election) executes
 * it with its guarded CAS, deletes the request and puts the response under
 * `responses/<broker>/`, which this class watches. Requests and responses vanish with the lease.
 *
 * Liveness: the registration `brokers/<id>` lives on a lease kept alive every heartbeat interval;
 * if the lease is lost (the broker was fenced), it registers again with a new epoch.
 */
export class StoreClusterMetadata implements ClusterMetadata {
  readonly controller: ControllerClient;
  private readonly keys: MetadataKeys;
  private readonly follower: MetadataFollower;
  private readonly incarnation: string;
  private lease = 0n;
  private epoch = -1n;
  private seq = 0;
  private readonly pending = new Map<string, Pending>();
  private responseWatch: StoreWatch | null = null;
  private cancelHeartbeat: (() => void) | null = null;
  /** A new lease and registration under way (register()); one at a time. */
  private registering: Promise<void> | null = null;
  private closed = false;
  /** Registered fenced until unfence() (the broker listens); a re-registration keeps the state. */
  private fenced = true;
  /** The endpoints registered: the configured ones until unfence() names the ports the broker listens on. */
  private endpoints: readonly BrokerEndpoint[];
  /** The offline log dirs reported (reportOfflineReplicas); null: none failed. */
  private offlineReport: LogDirFailureRecord | null = null;

  private constructor(private readonly options: StoreClusterMetadataOptions) {
    this.keys = new MetadataKeys(options.clusterId);
    this.follower = new MetadataFollower(options.store, this.keys, options.scheduler, options.logger);
    this.incarnation = options.randomBytes(8).toString('hex');
    const b = options.broker;
    this.endpoints = b.endpoints ?? [
      { listenerName: 'PLAINTEXT', host: b.host, port: b.port, securityProtocol: 'PLAINTEXT' },
    ];
    this.controller = {
      createTopics: (requests, validateOnly) => this.createTopics(requests, validateOnly),
      deleteTopics: (names) => this.deleteTopics(names),
      createPartitions: (requests, validateOnly) => this.createPartitions(requests, validateOnly),
      alterConfigs: (resource, alterations, incremental, validateOnly) =>
        this.alterConfigs(resource, alterations, incremental, validateOnly),
      createAcls: (acls) => this.aclChange({ kind: 'createAcls', acls: acls.map(aclRecordOf) }),
      deleteAcls: (ids) => this.aclChange({ kind: 'deleteAcls', ids: [...ids] }),
    };
  }

  static async start(options: StoreClusterMetadataOptions): Promise<StoreClusterMetadata> {
    const m = new StoreClusterMetadata(options);
    await m.follower.start();
    m.watchResponses((await options.store.currentRevision()) + 1n);
    await m.register();
    return m;
  }

  /**
   * Unfences this broker once it listens: its registration is put again without `fenced`, on the
   * same lease, and the broker appears in the image (clients are sent to it, the controller may
   * give it leadership). Until then it is registered but fenced, as Kafka's brokers are until
   * they are ready; a restart within the session timeout also leaves the old registration's
   * leadership to the controller rather than to a broker that cannot answer yet.
   * `endpoints`: the advertised listeners with the ports it listens on, when those were not known
   * before (listeners on port 0).
   */
  async unfence(endpoints: readonly BrokerEndpoint[] = this.endpoints): Promise<void> {
    if (this.closed || !this.fenced) return;
    this.fenced = false;
    this.endpoints = endpoints;
    // A registration under way may have read the fenced state: it is put again after it.
    await this.registering?.catch(() => {});
    try {
      await this.putRegistration();
    } catch (e) {
      // The lease ran out while the broker loaded its logs (the session outlasted by a busy
      // machine, or the store out of reach): a new lease and registration, unfenced, rather than
      // a start-up that fails on its last step.
      if (!(e instanceof StoreError && e.kind === 'lease-not-found')) throw e;
      await this.reRegister();
    }
    this.options.logger.info(`broker ${this.options.broker.id}: unfenced with epoch ${this.epoch}`);
  }

  /** Follows `responses/<id>/`; a broken watch resumes after the last revision seen. */
  private watchResponses(from: bigint): void {
    if (this.closed) return;
    let next = from;
    this.responseWatch = this.options.store.watch(this.keys.responses(this.options.broker.id), from, {
      onEvents: (events) => {
        for (const e of events) {
          next = e.modRevision + 1n;
          if (e.type === 'put') this.onResponse(e.key, e.value, e.modRevision);
        }
      },
      onError: (e) => {
        if (this.closed || e.kind === 'closed') return;
        this.options.logger.warn(`controller response watch ended (${e.message}); resuming`);
        // After a compaction the missed responses are gone; their requests time out and callers retry.
        this.options.scheduler.schedule('response-watch-retry', 200, () =>
          this.watchResponses(e.kind === 'compacted' ? 0n : next),
        );
      },
    });
  }

  image(): MetadataImage {
    return this.follower.image();
  }

  onChange(listener: (image: MetadataImage, previous: MetadataImage) => void): () => void {
    return this.follower.onChange(listener);
  }

  /** This broker's registration epoch (fences requests from an older incarnation). */
  brokerEpoch(): bigint {
    return this.epoch;
  }

  async isrHistory(
    topic: string,
    partitions: readonly number[] | null,
    bounds: IsrHistoryBounds,
    nowMs: number,
  ): Promise<Map<number, IsrChangeRecord[]>> {
    const r = await readIsrHistory(this.options.store, this.keys, topic, partitions, bounds, nowMs);
    if (r.unreadable > 0)
      this.options.logger.warn(`ISR history of ${topic}: ${r.unreadable} unreadable entries skipped`);
    return r.history;
  }

  /** Proposes ISR changes for partitions this broker leads (AlterPartition). */
  async alterPartition(topics: AlterPartitionRequest['topics']): Promise<AlterPartitionResult> {
    const body: ControllerRequestBody = {
      kind: 'alterPartition',
      brokerId: this.options.broker.id,
      brokerEpoch: this.epoch.toString(),
      topics,
    };
    const r = await this.submit(body);
    if (r === null || r.kind !== 'alterPartition')
      return { errorCode: ErrorCode.REQUEST_TIMED_OUT, topics: [] };
    return r.result;
  }

  /** ElectLeaders: preferred or unclean election for the given partitions (null: all). */
  async electLeaders(
    electionType: 'preferred' | 'unclean',
    topics: readonly { topic: string; partitions: readonly number[] }[] | null,
  ): Promise<ElectLeadersResult> {
    const r = await this.submit({ kind: 'electLeaders', electionType, topics });
    if (r === null || r.kind !== 'electLeaders')
      return { errorCode: ErrorCode.REQUEST_TIMED_OUT, topics: [] };
    return r.result;
  }

  /** AlterPartitionReassignments: move replicas (or cancel a move with replicas null). */
  async alterPartitionReassignments(
    topics: readonly {
      topic: string;
      partitions: readonly { partition: number; replicas: readonly number[] | null }[];
    }[],
  ): Promise<PartitionResults> {
    const r = await this.submit({ kind: 'alterPartitionReassignments', topics });
    if (r === null || r.kind !== 'alterPartitionReassignments')
      return { errorCode: ErrorCode.REQUEST_TIMED_OUT, topics: [] };
    return r.result;
  }

  /**
   * Controlled shutdown: marks this broker as shutting down, so the controller moves leadership
   * (and ISR membership) away, then waits until it leads nothing another ISR member could lead.
   */
  async controlledShutdown(timeoutMs: number): Promise<boolean> {
    const id = this.options.broker.id;
    await this.options.store.txn({
      compare: [],
      success: [{ type: 'put', key: this.keys.shutdown(id), value: '1', lease: this.lease }],
    });
    const done = (image: MetadataImage): boolean =>
      [...image.topics.values()].every((t) =>
        t.partitions.every((p) => p.leader !== id || p.isr.length <= 1),
      );
    if (done(this.image())) return true;
    return new Promise<boolean>((resolve) => {
      const cancel = this.options.scheduler.schedule('controlled-shutdown-timeout', timeoutMs, () => {
        unsubscribe();
        resolve(false);
      });
      const unsubscribe = this.onChange((image) => {
        if (!done(image)) return;
        unsubscribe();
        cancel();
        resolve(true);
      });
    });
  }

  async reportOfflineReplicas(report: Omit<LogDirFailureRecord, 'incarnation'>): Promise<void> {
    this.offlineReport = { incarnation: this.incarnation, ...report };
    await this.putOfflineReport();
  }

  /** Puts `log-dir-failures/<id>` on the current lease (again after a re-registration). */
  private async putOfflineReport(): Promise<void> {
    if (this.offlineReport === null || this.closed) return;
    const r = await this.options.store.txn({
      compare: [],
      success: [
        {
          type: 'put',
          key: this.keys.logDirFailure(this.options.broker.id),
          value: JSON.stringify(this.offlineReport),
          lease: this.lease,
        },
      ],
    });
    await this.follower.waitForRevision(r.revision);
  }

  /** Deregisters (revoking the lease deletes the registration at once) and stops following. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.cancelHeartbeat?.();
    this.responseWatch?.close();
    for (const p of this.pending.values()) {
      p.cancelTimer();
      p.resolve(null);
    }
    this.pending.clear();
    await this.options.store.revokeLease(this.lease).catch(() => {});
    this.follower.close();
  }

  /** Tests: stop as a killed process would — no deregistration; the lease runs out on its own. */
  crash(): void {
    this.closed = true;
    this.cancelHeartbeat?.();
    this.responseWatch?.close();
    this.follower.close();
  }

  private async register(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      this.lease = await this.options.store.grantLease(this.options.sessionTimeoutMs ?? 9000);
      // Closed meanwhile (a start-up that failed): no registration outlives the broker.
      if (this.closed) {
        await this.options.store.revokeLease(this.lease).catch(() => {});
        return;
      }
      try {
        await this.putRegistration();
        await this.putOfflineReport();
        break;
      } catch (e) {
        // The new lease ran out before the registration was put on it: a process starved of CPU
        // for a whole session (a loaded machine, a long pause). Kafka's broker keeps sending its
        // registration until it is taken; so does this one, on a new lease, a bounded number of times.
        if (!(e instanceof StoreError && e.kind === 'lease-not-found') || attempt >= REGISTRATION_ATTEMPTS)
          throw e;
        this.options.logger.warn(
          `broker ${this.options.broker.id}: lease ${this.lease} expired before the registration was put on it (attempt ${attempt} of ${REGISTRATION_ATTEMPTS}); registering on a new lease`,
        );
      }
    }
    this.options.logger.info(
      `broker ${this.options.broker.id}: registered with epoch ${this.epoch}${this.fenced ? ' (fenced until it listens)' : ''}`,
    );
    this.scheduleHeartbeat();
  }

  /** Puts `brokers/<id>` on the current lease; the epoch is the put's revision. */
  private async putRegistration(): Promise<void> {
    const { store, broker } = this.options;
    const first = this.endpoints[0]!;
    const record: BrokerRecord = {
      host: first.host,
      port: first.port,
      endpoints: this.endpoints,
      rack: broker.rack,
      incarnation: this.incarnation,
      ...(this.fenced ? { fenced: true } : {}),
    };
    const r = await store.txn({
      compare: [],
      success: [
        { type: 'put', key: this.keys.broker(broker.id), value: JSON.stringify(record), lease: this.lease },
      ],
    });
    this.epoch = r.revision;
    await this.follower.waitForRevision(r.revision);
  }

  /** register(), unless one is under way: the heartbeat and unfence() may both find the lease gone. */
  private reRegister(): Promise<void> {
    this.registering ??= this.register().finally(() => {
      this.registering = null;
    });
    return this.registering;
  }

  private scheduleHeartbeat(): void {
    if (this.closed) return;
    // One heartbeat pending at a time, whichever registration scheduled it.
    this.cancelHeartbeat?.();
    this.cancelHeartbeat = this.options.scheduler.schedule(
      'broker-heartbeat',
      this.options.heartbeatIntervalMs ?? 2000,
      () => {
        if (this.closed) return;
        this.options.store.keepAlive(this.lease).then(
          (alive) => {
            if (alive) this.scheduleHeartbeat();
            else {
              this.options.logger.warn(
                `broker ${this.options.broker.id}: fenced (lease expired); registering again`,
              );
              this.reRegister().catch(() => this.scheduleHeartbeat());
            }
          },
          () => this.scheduleHeartbeat(),
        );
      },
    );
  }

  private onResponse(key: string, value: string, modRevision: bigint): void {
    const id = key.slice(this.keys.responses(this.options.broker.id).length);
    const p = this.pending.get(id);
    // Responses are read once; deleting them keeps the prefix small.
    void this.options.store.txn({ compare: [], success: [{ type: 'delete', key }] }).catch(() => {});
    if (p === undefined) return;
    this.pending.delete(id);
    p.cancelTimer();
    // Read-your-writes: the controller committed the change before it wrote the response, so once
    // this broker's image reaches the response's revision it shows the change (a reassignment
    // listed right after it was started, say). Bounded: a stalled watch delays, never loses, it.
    const response = JSON.parse(value) as ControllerResponse;
    void this.follower.waitForRevision(modRevision, RESPONSE_IMAGE_WAIT_MS).then(
      () => p.resolve(response),
      () => p.resolve(response),
    );
  }

  /** Sends a request to the controller; null on timeout (or when closed). */
  private async submit(body: ControllerRequestBody): Promise<ControllerResponse | null> {
    if (this.closed) return null;
    if (this.pending.size >= LIMITS.controllerRequestsInFlight) return null;
    const id = `${this.options.broker.id}-${this.incarnation}-${++this.seq}`;
    const key = this.keys.request(id);
    const response = new Promise<ControllerResponse | null>((resolve) => {
      const cancelTimer = this.options.scheduler.schedule(
        'controller-request-timeout',
        this.options.requestTimeoutMs ?? 30_000,
        () => {
          this.pending.delete(id);
          void this.options.store.txn({ compare: [], success: [{ type: 'delete', key }] }).catch(() => {});
          resolve(null);
        },
      );
      this.pending.set(id, { resolve, cancelTimer });
    });
    try {
      await this.options.store.txn({
        compare: [],
        success: [
          {
            type: 'put',
            key,
            value: JSON.stringify({ from: this.options.broker.id, body }),
            lease: this.lease,
          },
        ],
      });
    } catch (e) {
      // Never reached the controller: the store is out of reach, or this broker's lease expired
      // and it is registering again. The caller answers as for a request that timed out
      // (retriable), as a Kafka broker does when it cannot forward to the controller.
      if (!(e instanceof StoreError)) throw e;
      const p = this.pending.get(id);
      this.pending.delete(id);
      p?.cancelTimer();
      return null;
    }
    return response;
  }

  private async createTopics(
    requests: readonly CreateTopicRequest[],
    validateOnly: boolean,
  ): Promise<CreateTopicResult[]> {
    const topics = requests.map((r) => ({
      name: r.name,
      numPartitions: r.numPartitions,
      replicationFactor: r.replicationFactor,
      configs: { ...r.configs },
      ...(r.assignments === undefined ? {} : { assignments: [...r.assignments.entries()] }),
    }));
    const r = await this.submit({ kind: 'createTopics', topics, validateOnly });
    if (r?.kind === 'createTopics') return r.results;
    return requests.map((t) => ({
      ...timedOut(),
      name: t.name,
      topicId: 'AAAAAAAAAAAAAAAAAAAAAA',
      numPartitions: -1,
      replicationFactor: -1,
    }));
  }

  private async deleteTopics(names: readonly string[]): Promise<(ApiResult & { name: string })[]> {
    const r = await this.submit({ kind: 'deleteTopics', names: [...names] });
    if (r?.kind === 'deleteTopics') return r.results;
    return names.map((name) => ({ name, ...timedOut() }));
  }

  private async createPartitions(
    requests: readonly { name: string; totalCount: number; assignments?: readonly (readonly number[])[] }[],
    validateOnly: boolean,
  ): Promise<(ApiResult & { name: string })[]> {
    const r = await this.submit({ kind: 'createPartitions', topics: requests, validateOnly });
    if (r?.kind === 'createPartitions') return r.results;
    return requests.map((t) => ({ name: t.name, ...timedOut() }));
  }

  private async alterConfigs(
    resource: ConfigResource | ClientQuotaResource | ScramUserResource,
    alterations: readonly ConfigAlteration[],
    incremental: boolean,
    validateOnly: boolean,
  ): Promise<ApiResult> {
    const r = await this.submit({ kind: 'alterConfigs', resource, alterations, incremental, validateOnly });
    if (r?.kind === 'alterConfigs') return r.result;
    return timedOut();
  }

  private async aclChange(
    body: Extract<ControllerRequestBody, { kind: 'createAcls' | 'deleteAcls' }>,
  ): Promise<ApiResult> {
    const r = await this.submit(body);
    if (r?.kind === body.kind) return r.result;
    return timedOut();
  }
}

function timedOut(): ApiResult {
  return {
    errorCode: ErrorCode.REQUEST_TIMED_OUT,
    errorMessage: 'The controller did not answer in time (is a controller running?)',
  };
}
