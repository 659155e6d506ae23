import type { Clock } from '../common/clock.js';
import { LIMITS } from '../common/limits.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import type { ConfigMap, MetadataImage } from '../metadata/cluster-metadata.js';
import { resolveBrokerConfig, resolveTopicConfig } from '../metadata/config-resolve.js';
import type {
  ControllerRequest,
  ControllerRequestBody,
  ControllerResponse,
} from '../metadata/controller-requests.js';
import { Election, type Leadership } from '../metadata/election.js';
import { isrHistoryBounds } from '../metadata/isr-history.js';
import { MetadataKeys } from '../metadata/keys.js';
import { MetadataFollower } from '../metadata/metadata-follower.js';
import {
  type Compare,
  type KeyValue,
  type MetadataStore,
  type Op,
  rangeAll,
  type StoreWatch,
} from '../metadata/store.js';
import { ControllerMemory, type GuardedCommit } from './controller-memory.js';
import { scheduleHistoryRetention } from './history-retention.js';
import { changeFields, reconcileCause } from './isr-change.js';
import {
  type PartitionChange,
  planAlterPartition,
  planElectLeaders,
  planReassignments,
  planRebalance,
  toChunks,
} from './partition-admin.js';
import {
  asOneChange,
  type BrokerView,
  completeReassignment,
  reconcilePartition,
} from './partition-change.js';
import type { RandomInt } from './replica-assignment.js';
import {
  type AdminContext,
  type Chunk,
  completeTopic,
  type Plan,
  planAlterConfigs,
  planCreateAcls,
  planCreatePartitions,
  planCreateTopic,
  planDeleteAcls,
  planDeleteTopic,
} from './topic-admin.js';

export interface ControllerOptions {
  readonly store: MetadataStore;
  readonly clusterId: string;
  readonly nodeId: number;
  readonly clock: Clock;
  readonly scheduler: Scheduler;
  readonly logger: Logger;
  readonly randomInt: RandomInt;
  readonly randomBytes: (n: number) => Buffer;
  /** TTL of the controller's lease: how long a dead controller keeps the role (default 9000). */
  readonly sessionTimeoutMs?: number;
  /** How often the lease is kept alive (default 2000). */
  readonly heartbeatIntervalMs?: number;
  readonly staticConfig?: ConfigMap;
  /** Test hook: runs before every controller transaction (to force a lease expiry mid-change). */
  readonly beforeCommit?: (what: string) => Promise<void>;
}

type CommitOutcome = 'ok' | 'conflict' | 'fenced';

/**
 * The active controller, one per cluster, elected through the store. It is the only writer of
 * topics, partitions and configs; every write is a transaction that carries the election guard, so
 * a controller that lost its lease (paused, partitioned) cannot commit anything — the store decides,
 * not the controller's belief. Work is serial: one task at a time, each reading the image as of
 * the previous task's commit.
 *
 * Every broker process may run one; all but one wait in the election. Owned by its process.
 */
export class Controller {
  private readonly keys: MetadataKeys;
  private readonly election: Election;
  private readonly follower: MetadataFollower;
  private lease = 0n;
  private leadership: Leadership | null = null;
  private stopped = false;
  private abort = new AbortController();
  private cancelKeepAlive: (() => void) | null = null;
  private requestWatch: StoreWatch | null = null;
  private queue: Promise<void> = Promise.resolve();
  private queued = 0;
  private activeWaiters: (() => void)[] = [];
  private unsubscribe: (() => void) | null = null;
  private readonly seenRequests = new Set<string>();
  private readonly memory: ControllerMemory;
  private cancelRetention: (() => void) | null = null;

  constructor(private readonly options: ControllerOptions) {
    this.keys = new MetadataKeys(options.clusterId);
    this.memory = new ControllerMemory(options.store, this.keys, options.logger);
    this.election = new Election(options.store, this.keys.controller);
    this.follower = new MetadataFollower(options.store, this.keys, options.scheduler, options.logger);
  }

  async start(): Promise<void> {
    await this.follower.start();
    void this.campaignLoop();
  }

  isActive(): boolean {
    return this.leadership !== null;
  }

  /** Resolves once this controller is active (tests and tools). */
  whenActive(): Promise<void> {
    if (this.leadership !== null) return Promise.resolve();
    return new Promise((resolve) => this.activeWaiters.push(resolve));
  }

  image(): MetadataImage {
    return this.follower.image();
  }

  /** Steps down (another candidate takes over at once) and stops campaigning. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    const leadership = this.leadership;
    this.deactivate('stopping');
    await this.queue.catch(() => {});
    this.cancelKeepAlive?.();
    if (leadership !== null) await this.election.resign(leadership).catch(() => {});
    if (this.lease !== 0n) await this.options.store.revokeLease(this.lease).catch(() => {});
    this.follower.close();
  }

  /** Simulates a crash in tests: stop everything without resigning or revoking the lease. */
  crash(): void {
    this.stopped = true;
    this.abort.abort();
    this.deactivate('crash');
    this.cancelKeepAlive?.();
    this.follower.close();
  }

  private async campaignLoop(): Promise<void> {
    while (!this.stopped) {
      try {
        if (this.lease === 0n || (await this.options.store.leaseTtlMs(this.lease)) < 0) {
          this.lease = await this.options.store.grantLease(this.options.sessionTimeoutMs ?? 9000);
          this.scheduleKeepAlive(this.lease);
        }
        const leadership = await this.election.campaign(
          String(this.options.nodeId),
          this.lease,
          this.abort.signal,
        );
        if (this.stopped) return;
        await this.activate(leadership);
        // Wait until this term ends; campaign again afterwards.
        await new Promise<void>((resolve) => this.lostWaiters.push(resolve));
      } catch (e) {
        if (this.stopped) return;
        this.options.logger.warn(
          `controller ${this.options.nodeId}: election failed: ${(e as Error).message}`,
        );
        await new Promise<void>((resolve) =>
          this.options.scheduler.schedule('controller-retry', 500, resolve),
        );
      }
    }
  }

  private lostWaiters: (() => void)[] = [];
  private cancelRebalance: (() => void) | null = null;
  private reconcileQueued = false;

  private scheduleKeepAlive(lease: bigint): void {
    this.cancelKeepAlive?.();
    const tick = (): void => {
      this.cancelKeepAlive = this.options.scheduler.schedule(
        'controller-keepalive',
        this.options.heartbeatIntervalMs ?? 2000,
        () => {
          if (this.stopped || lease !== this.lease) return;
          this.options.store.keepAlive(lease).then(
            (alive) => {
              if (alive) tick();
              else this.deactivate('controller lease expired');
            },
            () => tick(),
          );
        },
      );
    };
    tick();
  }

  private async activate(leadership: Leadership): Promise<void> {
    // Every write of earlier controllers precedes our election key (their guard held only while
    // their key existed), so an image at our term has all of them.
    await this.follower.waitForRevision(leadership.term);
    this.leadership = leadership;
    this.options.logger.info(`controller ${this.options.nodeId}: active (term ${leadership.term})`);
    for (const w of this.activeWaiters.splice(0)) w();
    await this.memory.load(this.follower.image().brokers);
    this.unsubscribe = this.follower.onChange((image, previous) => {
      if (image.brokers !== previous.brokers || image.brokerConfigs !== previous.brokerConfigs)
        this.requestReconcile();
    });
    this.scheduleRebalance(leadership);
    this.cancelRetention = scheduleHistoryRetention({
      store: this.options.store,
      keys: this.keys,
      scheduler: this.options.scheduler,
      clock: this.options.clock,
      logger: this.options.logger,
      bounds: () => this.historyBounds(),
      image: () => this.follower.image(),
      enqueue: (what, task) => this.enqueue(what, task),
      // History keys are outside the image: nothing to wait for, only the guard to hold.
      commit: async (_what, ops) =>
        (await this.options.store.txn({ compare: [leadership.guard()], success: ops })).succeeded,
    });
    this.enqueue('repair', () => this.repairTopics());
    this.requestReconcile();
    const pending = await rangeAll(this.options.store, this.keys.requests);
    for (const kv of pending.kvs) this.onRequest(kv);
    this.requestWatch = this.options.store.watch(this.keys.requests, pending.revision + 1n, {
      onEvents: (events) => {
        for (const e of events) if (e.type === 'put') this.onRequest(e);
      },
      onError: (error) => {
        if (this.leadership === leadership) this.deactivate(`request watch failed: ${error.message}`);
      },
    });
  }

  private clusterConfig(name: string): string | null {
    const layers = {
      clusterDefault: this.follower.image().brokerConfigs.get('<default>') ?? {},
      staticProps: this.options.staticConfig ?? {},
    };
    return resolveBrokerConfig(name, layers).value;
  }

  /** auto.leader.rebalance.enable: every leader.imbalance.check.interval.seconds while active. */
  private scheduleRebalance(leadership: Leadership): void {
    const intervalMs = Number(this.clusterConfig('leader.imbalance.check.interval.seconds')) * 1000;
    this.cancelRebalance = this.options.scheduler.schedule('leader-rebalance', intervalMs, () => {
      if (this.leadership !== leadership) return;
      if (this.clusterConfig('auto.leader.rebalance.enable') === 'true') {
        this.enqueue('rebalance', () => this.rebalance());
      }
      this.scheduleRebalance(leadership);
    });
  }

  private async rebalance(): Promise<void> {
    const percentage = Number(this.clusterConfig('leader.imbalance.per.broker.percentage'));
    const chunks = planRebalance(this.adminContext('rebalance'), percentage);
    if (chunks.length === 0) return;
    this.options.logger.info(
      `controller: preferred leader election for ${chunks.reduce((n, c) => n + c.ops.length, 0)} partitions (leader imbalance)`,
    );
    await this.commitChunks('rebalance', chunks);
  }

  private historyBounds() {
    return isrHistoryBounds(
      this.follower.image().brokerConfigs.get('<default>') ?? {},
      this.options.staticConfig ?? {},
    );
  }

  private deactivate(reason: string): void {
    if (this.leadership === null) return;
    this.cancelRebalance?.();
    this.cancelRebalance = null;
    this.cancelRetention?.();
    this.cancelRetention = null;
    this.options.logger.info(`controller ${this.options.nodeId}: inactive (${reason})`);
    this.leadership = null;
    this.requestWatch?.close();
    this.requestWatch = null;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.seenRequests.clear();
    this.reconcileQueued = false;
    for (const w of this.lostWaiters.splice(0)) w();
  }

  /** Queues a reconcile unless one is already waiting: it reads the latest image when it runs. */
  private requestReconcile(): void {
    if (this.reconcileQueued) return;
    this.reconcileQueued = true;
    this.enqueue('reconcile', () => {
      this.reconcileQueued = false;
      return this.reconcile();
    });
  }

  private enqueue(what: string, task: () => Promise<void>): void {
    if (this.queued >= LIMITS.controllerQueuedTasks) {
      this.options.logger.warn(`controller queue full; dropping ${what} (it is retried from the store)`);
      return;
    }
    this.queued++;
    const leadership = this.leadership;
    this.queue = this.queue.then(async () => {
      this.queued--;
      if (this.leadership === null || this.leadership !== leadership) return;
      try {
        await task();
      } catch (e) {
        this.options.logger.warn(`controller task ${what} failed: ${(e as Error).stack ?? e}`);
      }
    });
  }

  /** Commits `compare`+`ops` under the election guard; on failure tells a conflict from fencing. */
  /** commit without compares, for ControllerMemory. */
  private readonly guardedCommit: GuardedCommit = async (what, ops) =>
    (await this.commit(what, [], ops)) === 'ok';

  private async commit(
    what: string,
    compare: readonly Compare[],
    ops: readonly Op[],
  ): Promise<CommitOutcome> {
    const leadership = this.leadership;
    if (leadership === null) return 'fenced';
    await this.options.beforeCommit?.(what);
    const r = await this.options.store.txn({ compare: [leadership.guard(), ...compare], success: ops });
    if (r.succeeded) {
      // The image follows the cluster root only: a transaction wholly outside it (the last ISR
      // history entry of a topic, chunked apart from its partition key) has no revision to await.
      const root = this.keys.root;
      if (ops.some((op) => (op.type === 'deletePrefix' ? op.prefix : op.key).startsWith(root)))
        await this.follower.waitForRevision(r.revision);
      return 'ok';
    }
    const kv = await this.options.store.get(this.keys.controller);
    if (kv === null || kv.createRevision !== leadership.term) {
      this.deactivate(`fenced: the election key moved on (term ${leadership.term})`);
      return 'fenced';
    }
    // Someone else wrote a key we compared; catch up before the caller tries again (bounded: the
    // current revision may belong to writes outside this cluster's keys).
    await this.follower.waitForRevision(await this.options.store.currentRevision(), 1000);
    return 'conflict';
  }

  private async commitChunks(
    what: string,
    chunks: readonly Chunk[],
    extra: readonly Op[] = [],
  ): Promise<CommitOutcome> {
    if (chunks.length === 0) return extra.length === 0 ? 'ok' : this.commit(what, [], extra);
    for (let i = 0; i < chunks.length; i++) {
      const last = i === chunks.length - 1;
      const c = chunks[i]!;
      const outcome = await this.commit(what, c.compare, last ? [...c.ops, ...extra] : c.ops);
      if (outcome !== 'ok') return outcome;
    }
    return 'ok';
  }

  private view(image: MetadataImage): BrokerView {
    const restarted = new Set<number>();
    for (const [id, b] of image.brokers) {
      const known = this.memory.knownEpoch(id);
      if (known !== undefined && known !== b.epoch) restarted.add(id);
    }
    return { brokers: image.brokers, restarted };
  }

  private adminContext(requestId: string): AdminContext {
    const image = this.follower.image();
    return {
      keys: this.keys,
      image,
      state: this.follower.state,
      view: this.view(image),
      random: this.options.randomInt,
      randomBytes: this.options.randomBytes,
      staticConfig: this.options.staticConfig ?? {},
      requestId,
      nowMs: this.options.clock.nowMs(),
      historyBounds: this.historyBounds(),
    };
  }

  private uncleanEnabled(image: MetadataImage, topic: string): boolean {
    const layers = {
      topic: image.topicConfigs.get(topic) ?? {},
      clusterDefault: image.brokerConfigs.get('<default>') ?? {},
      staticProps: this.options.staticConfig ?? {},
    };
    return resolveTopicConfig('unclean.leader.election.enable', layers).value === 'true';
  }

  /**
   * Brings every partition in line with the live brokers: fencing (ISR removal, new leaders),
   * returns (leaderless partitions regain a leader), controlled shutdown, unclean election.
   */
  private async reconcile(): Promise<void> {
    for (let attempt = 0; attempt < LIMITS.controllerConflictRetries; attempt++) {
      await this.memory.noteShutdowns(this.follower.image().brokers, this.guardedCommit);
      const image = this.follower.image();
      const view = this.view(image);
      const changes: PartitionChange[] = [];
      for (const [name, topic] of image.topics) {
        const unclean = this.uncleanEnabled(image, name);
        for (const p of topic.partitions) {
          const rec = this.follower.state.partitionRecord(name, p.partition);
          if (rec === undefined) continue;
          const reconciled = reconcilePartition(rec, view, unclean, { topic: name, partition: p.partition });
          const completed = completeReassignment(reconciled?.next ?? rec, view);
          const outcome =
            completed === null
              ? reconciled
              : { next: asOneChange(rec, completed), unclean: reconciled?.unclean ?? false };
          if (outcome === null) continue;
          const key = this.keys.partition(name, p.partition);
          const { next } = outcome;
          const why = reconcileCause(rec, next, view, this.memory.shutdownSeen, outcome.unclean);
          this.options.logger.info(
            `${outcome.unclean ? 'Unclean leader election' : 'Partition change'} for ${name}-${p.partition}: leader ${rec.leader} -> ${next.leader} (epoch ${next.leaderEpoch}), ISR ${rec.isr.join(',')} -> ${next.isr.join(',')} (${why.reason})`,
            changeFields(name, p.partition, rec, next, outcome.unclean, why),
          );
          const rev = this.follower.state.modRevision(key);
          changes.push({
            topic: name,
            partition: p.partition,
            key,
            rev,
            prev: rec,
            next,
            why,
            unclean: outcome.unclean,
          });
        }
      }
      let outcome: CommitOutcome = 'ok';
      const chunks = toChunks(this.adminContext('reconcile'), changes);
      for (let i = 0; i < chunks.length && outcome === 'ok'; i++) {
        outcome = await this.commit('reconcile', chunks[i]!.compare, chunks[i]!.ops);
      }
      if (outcome === 'fenced') return;
      if (outcome === 'ok') {
        // Restarts are handled once their partitions are written.
        await this.memory.saveEpochs(image.brokers, this.guardedCommit);
        return;
      }
    }
    this.options.logger.warn(
      'controller: reconcile gave up after repeated conflicts; it runs again on the next change',
    );
  }

  /** Finishes topic creations that a previous controller left half-written. */
  private async repairTopics(): Promise<void> {
    const ctx = this.adminContext('repair');
    for (const name of ctx.image.topics.keys()) {
      const record = ctx.state.topicRecord(name);
      if (record === undefined) continue;
      const plan = completeTopic(ctx, name, record);
      if (plan.chunks.length > 0 && (await this.commitChunks('repair', plan.chunks)) === 'fenced') return;
    }
  }

  private onRequest(kv: Pick<KeyValue, 'key' | 'value' | 'lease' | 'modRevision'>): void {
    const id = kv.key.slice(this.keys.requests.length);
    if (this.seenRequests.has(id)) return;
    this.seenRequests.add(id);
    this.enqueue(`request ${id}`, () => this.handleRequest(id, kv));
  }

  private async handleRequest(
    id: string,
    kv: Pick<KeyValue, 'key' | 'value' | 'lease' | 'modRevision'>,
  ): Promise<void> {
    let request: ControllerRequest;
    try {
      request = JSON.parse(kv.value) as ControllerRequest;
    } catch {
      await this.commit('drop bad request', [], [{ type: 'delete', key: kv.key }]);
      return;
    }
    for (let attempt = 0; attempt < LIMITS.controllerConflictRetries; attempt++) {
      const { response, chunks } = this.plan(id, request.body);
      const reply: Op[] = [
        { type: 'delete', key: kv.key },
        {
          type: 'put',
          key: this.keys.response(request.from, id),
          value: JSON.stringify(response, bigintJson),
          lease: kv.lease,
        },
      ];
      let outcome: CommitOutcome;
      try {
        outcome = await this.commitChunks(request.body.kind, chunks, reply);
      } catch (e) {
        // The requester's lease is gone (it died): apply the change without a reply.
        this.options.logger.warn(`controller: reply to ${id} failed (${(e as Error).message})`);
        outcome = await this.commitChunks(request.body.kind, chunks, [{ type: 'delete', key: kv.key }]);
      }
      if (outcome === 'fenced') return;
      if (outcome === 'ok') {
        this.seenRequests.delete(id);
        if (request.body.kind === 'alterConfigs') await this.reconcile();
        return;
      }
    }
    this.seenRequests.delete(id);
    this.options.logger.warn(
      `controller: request ${id} conflicted ${LIMITS.controllerConflictRetries} times; left for a retry`,
    );
  }

  private plan(id: string, body: ControllerRequestBody): { response: ControllerResponse; chunks: Chunk[] } {
    const ctx = this.adminContext(id);
    const collect = <R>(plans: Plan<R>[]) => ({
      results: plans.map((p) => p.result),
      chunks: plans.flatMap((p) => [...p.chunks]),
    });
    switch (body.kind) {
      case 'createTopics': {
        const { results, chunks } = collect(
          body.topics.map((t) => planCreateTopic(ctx, t, body.validateOnly)),
        );
        return { response: { kind: 'createTopics', results }, chunks };
      }
      case 'deleteTopics': {
        const { results, chunks } = collect(body.names.map((n) => planDeleteTopic(ctx, n)));
        return { response: { kind: 'deleteTopics', results }, chunks };
      }
      case 'createPartitions': {
        const { results, chunks } = collect(
          body.topics.map((t) => planCreatePartitions(ctx, t, body.validateOnly)),
        );
        return { response: { kind: 'createPartitions', results }, chunks };
      }
      case 'alterConfigs': {
        const plan = planAlterConfigs(ctx, body);
        return { response: { kind: 'alterConfigs', result: plan.result }, chunks: [...plan.chunks] };
      }
      case 'createAcls':
      case 'deleteAcls': {
        const plan =
          body.kind === 'createAcls' ? planCreateAcls(ctx, body.acls) : planDeleteAcls(ctx, body.ids);
        return { response: { kind: body.kind, result: plan.result }, chunks: [...plan.chunks] };
      }
      case 'alterPartition': {
        const plan = planAlterPartition(ctx, body);
        return { response: { kind: 'alterPartition', result: plan.result }, chunks: [...plan.chunks] };
      }
      case 'alterPartitionReassignments': {
        const plan = planReassignments(ctx, body);
        return {
          response: { kind: 'alterPartitionReassignments', result: plan.result },
          chunks: [...plan.chunks],
        };
      }
      case 'electLeaders': {
        const plan = planElectLeaders(ctx, body.electionType, body.topics);
        return { response: { kind: 'electLeaders', result: plan.result }, chunks: [...plan.chunks] };
      }
    }
  }
}

function bigintJson(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
