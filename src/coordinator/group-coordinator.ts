/**
 * The classic consumer group coordinator: the GroupApi the broker routes the consumer-group
 * requests to. It owns every group of the __consumer_offsets partitions this broker leads
 * (load() when it becomes leader, unload() when it stops), and writes through a CoordinatorLog.
 * Deterministic: time comes only from the injected Clock and Scheduler, member ids from the
 * injected uuid source. Single-threaded; the broker calls it from one event loop.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import type { ConsumerGroupDescribeRequest } from '../protocol/generated/ConsumerGroupDescribeRequest.js';
import type { ConsumerGroupDescribeResponse } from '../protocol/generated/ConsumerGroupDescribeResponse.js';
import type { ConsumerGroupHeartbeatRequest } from '../protocol/generated/ConsumerGroupHeartbeatRequest.js';
import type { ConsumerGroupHeartbeatResponse } from '../protocol/generated/ConsumerGroupHeartbeatResponse.js';
import type { DeleteGroupsRequest } from '../protocol/generated/DeleteGroupsRequest.js';
import type { DeleteGroupsResponse } from '../protocol/generated/DeleteGroupsResponse.js';
import type { DescribeGroupsRequest } from '../protocol/generated/DescribeGroupsRequest.js';
import type { DescribeGroupsResponse } from '../protocol/generated/DescribeGroupsResponse.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import type { FindCoordinatorRequest } from '../protocol/generated/FindCoordinatorRequest.js';
import type { FindCoordinatorResponse } from '../protocol/generated/FindCoordinatorResponse.js';
import type { HeartbeatRequest } from '../protocol/generated/HeartbeatRequest.js';
import type { HeartbeatResponse } from '../protocol/generated/HeartbeatResponse.js';
import type { JoinGroupRequest } from '../protocol/generated/JoinGroupRequest.js';
import type { JoinGroupResponse } from '../protocol/generated/JoinGroupResponse.js';
import type { LeaveGroupRequest } from '../protocol/generated/LeaveGroupRequest.js';
import type { LeaveGroupResponse } from '../protocol/generated/LeaveGroupResponse.js';
import type { ListGroupsRequest } from '../protocol/generated/ListGroupsRequest.js';
import type { ListGroupsResponse } from '../protocol/generated/ListGroupsResponse.js';
import type { OffsetCommitRequest } from '../protocol/generated/OffsetCommitRequest.js';
import type { OffsetCommitResponse } from '../protocol/generated/OffsetCommitResponse.js';
import type { OffsetDeleteRequest } from '../protocol/generated/OffsetDeleteRequest.js';
import type { OffsetDeleteResponse } from '../protocol/generated/OffsetDeleteResponse.js';
import type { OffsetFetchRequest } from '../protocol/generated/OffsetFetchRequest.js';
import type { OffsetFetchResponse } from '../protocol/generated/OffsetFetchResponse.js';
import type { SyncGroupRequest } from '../protocol/generated/SyncGroupRequest.js';
import type { SyncGroupResponse } from '../protocol/generated/SyncGroupResponse.js';
import type { TxnOffsetCommitRequest } from '../protocol/generated/TxnOffsetCommitRequest.js';
import type { TxnOffsetCommitResponse } from '../protocol/generated/TxnOffsetCommitResponse.js';
import { KafkaError } from '../protocol/kafka-error.js';
import { randomUuid } from '../protocol/uuid.js';
import { groupAppendError, offsetAppendError } from './append-errors.js';
import { type GroupCoordinatorConfig, groupCoordinatorConfig } from './config.js';
import { ConsumerGroups } from './consumer/consumer-groups.js';
import { consumerGroupTombstones } from './consumer/records.js';
import type { TopicsImage } from './consumer/subscriptions.js';
import { type CoordinatorNode, findCoordinator } from './find-coordinator.js';
import { ClassicGroup, type GroupState } from './group.js';
import { type GroupRequestContext, groupApiVersions } from './group-api.js';
import { describeGroup, listGroups } from './group-listing.js';
import { type ReplayRecord, replayPartition } from './loader.js';
import { Membership } from './membership.js';
import { type AppendResult, type OffsetHost, OffsetManager, offsetKey } from './offsets.js';
import { partitionForGroup } from './partitioner.js';
import {
  type CoordinatorLog,
  type CoordinatorRecord,
  groupMetadataRecord,
  groupTombstone,
  offsetTombstone,
  type TxnProducer,
} from './records.js';
import * as responses from './responses.js';
import { txnOffsetCommit } from './txn-offsets.js';

export interface GroupCoordinatorOptions {
  clock: Clock;
  scheduler: Scheduler;
  log: CoordinatorLog;
  config?: Partial<GroupCoordinatorConfig>;
  logger?: Logger;
  /** Source of the uuid part of member ids; crypto.randomUUID unless a test wants them predictable. */
  newUuid?: () => string;
  /**
   * The broker that leads a __consumer_offsets partition, for FindCoordinator; null when there is
   * none (the topic is not created yet, the partition has no leader, or the leader has no endpoint
   * on the client's listener): COORDINATOR_NOT_AVAILABLE.
   */
  locateCoordinator?: (partition: number, listenerName: string) => CoordinatorNode | null;
  /** Whether a topic partition exists, for OffsetCommit/OffsetDelete's UNKNOWN_TOPIC_OR_PARTITION. */
  partitionExists?: (topic: string, partition: number) => boolean;
  /** KIP-890's check of a TxnOffsetCommit's partition with the transaction coordinator (OffsetHost.verifyTxnPartition). */
  verifyTxnPartition?: OffsetHost['verifyTxnPartition'];
  /** The cluster's topics, for the consumer protocol's subscriptions (none when absent). */
  topics?: () => TopicsImage;
}

const NO_TOPICS: TopicsImage = { version: 0, topics: new Map() };

type TxnMarker = { producerId: bigint; producerEpoch: number; commit: boolean };

/**
 * A partition being loaded keeps the markers written meanwhile: the replay may have read the log
 * before them, and no transactional commit can be written between (it is refused while loading),
 * so applying them after the replay completes exactly the transactions they ended.
 */
type PartitionState =
  | { state: 'loading'; epoch: number; markers: TxnMarker[] }
  | { state: 'active'; epoch: number };

const silent: Logger = { info() {}, warn() {} };

export class GroupCoordinator {
  readonly versions: ReadonlyMap<number, { readonly min: number; readonly max: number }>;
  readonly config: GroupCoordinatorConfig;
  private readonly clock: Clock;
  private readonly scheduler: Scheduler;
  private readonly log: CoordinatorLog;
  private readonly logger: Logger;
  private readonly membership: Membership;
  private readonly offsets: OffsetManager;
  private readonly offsetHost: OffsetHost;
  private readonly consumerGroups: ConsumerGroups;
  private readonly groups = new Map<string, ClassicGroup>();
  private readonly partitions = new Map<number, PartitionState>();
  private nextEpoch = 0;
  private active = true;
  private cancelCleanup: (() => void) | null = null;

  constructor(private readonly options: GroupCoordinatorOptions) {
    this.config = groupCoordinatorConfig(options.config);
    this.clock = options.clock;
    this.scheduler = options.scheduler;
    this.log = options.log;
    this.logger = options.logger ?? silent;
    const newUuid = options.newUuid ?? randomUUID;
    this.membership = new Membership({
      config: this.config,
      clock: this.clock,
      scheduler: this.scheduler,
      logger: this.logger,
      newMemberId: (prefix) => `${prefix}-${newUuid()}`,
      storeGroup: (group, assignment) => this.storeGroup(group, assignment),
    });
    const partitionExists = options.partitionExists ?? (() => true);
    this.offsetHost = {
      config: this.config,
      clock: this.clock,
      membership: this.membership,
      groupStatus: (id, allowEmptyId = true) => this.groupStatus(id, allowEmptyId),
      getGroup: (id) => this.groups.get(id),
      createGroup: (id) => this.createGroup(id),
      removeGroup: (g) => this.removeGroup(g),
      appendOffsets: (partition, records, txn) => this.append(partition, records, offsetAppendError, txn),
      partitionExists,
      ...(options.verifyTxnPartition && { verifyTxnPartition: options.verifyTxnPartition }),
    };
    this.offsets = new OffsetManager(this.offsetHost);
    this.consumerGroups = new ConsumerGroups({
      config: this.config,
      clock: this.clock,
      scheduler: this.scheduler,
      logger: this.logger,
      topics: options.topics ?? (() => NO_TOPICS),
      newMemberId: () => randomUuid(randomBytes),
      groupStatus: (id, allowEmptyId) => this.groupStatus(id, allowEmptyId),
      getGroup: (id) => this.groups.get(id),
      createGroup: (id) => this.createGroup(id),
      append: (partition, records) => this.append(partition, records, groupAppendError),
    });
    this.versions = groupApiVersions(this.config.rebalanceProtocols);
    this.scheduleCleanup();
  }

  /** The __consumer_offsets partition that holds a group (Kafka's partitionFor). */
  partitionFor(groupId: string): number {
    return partitionForGroup(groupId, this.config.offsetsTopicNumPartitions);
  }

  // ---- Partition ownership ------------------------------------------------------------------

  /**
   * Takes ownership of a __consumer_offsets partition this broker now leads: replays its records
   * (oldest first) and starts serving its groups. Requests for its groups get
   * COORDINATOR_LOAD_IN_PROGRESS until the replay ends. Loading again replaces the old state.
   */
  async load(
    partition: number,
    records: Iterable<ReplayRecord> | AsyncIterable<ReplayRecord>,
  ): Promise<void> {
    this.unload(partition);
    const epoch = ++this.nextEpoch;
    const loading: PartitionState = { state: 'loading', epoch, markers: [] };
    this.partitions.set(partition, loading);
    const { groups, skipped } = await replayPartition(partition, records, this.clock.nowMs());
    // Unloaded (or loaded again) while replaying: this replay is stale.
    if (this.partitions.get(partition)?.epoch !== epoch) return;
    for (const s of skipped) {
      this.logger.warn(`__consumer_offsets-${partition}: skipped record ${s.index} on load: ${s.reason}`);
    }
    for (const group of groups) {
      this.groups.set(group.groupId, group);
      if (group.consumer !== null) {
        this.consumerGroups.onLoaded(group.consumer);
        continue;
      }
      for (const m of group.members.values()) this.membership.scheduleHeartbeat(group, m, m.sessionTimeoutMs);
      if (group.size > this.config.groupMaxSize) {
        this.membership.prepareRebalance(
          group,
          `loaded group is over group.max.size (${this.config.groupMaxSize})`,
        );
      }
    }
    this.partitions.set(partition, { state: 'active', epoch });
    for (const m of loading.markers)
      this.onTransactionMarker(partition, m.producerId, m.producerEpoch, m.commit);
    this.logger.info(`__consumer_offsets-${partition}: loaded ${groups.length} groups`);
  }

  /** Gives up a partition (leadership moved): its groups' parked requests get NOT_COORDINATOR. */
  unload(partition: number): void {
    if (!this.partitions.delete(partition)) return;
    let n = 0;
    for (const group of [...this.groups.values()]) {
      if (group.partition !== partition) continue;
      this.membership.shutdownGroup(group, ErrorCode.NOT_COORDINATOR);
      if (group.consumer !== null) this.consumerGroups.heartbeats.cancelTimers(group.consumer);
      group.state = 'Dead';
      this.groups.delete(group.groupId);
      n++;
    }
    this.logger.info(`__consumer_offsets-${partition}: unloaded ${n} groups`);
  }

  ownedPartitions(): number[] {
    return [...this.partitions].filter(([, s]) => s.state === 'active').map(([p]) => p);
  }

  /** Stops serving: every parked request is answered, every timer cancelled. */
  shutdown(): void {
    for (const p of [...this.partitions.keys()]) this.unload(p);
    this.active = false;
    this.cancelCleanup?.();
    this.cancelCleanup = null;
  }

  // ---- Group lookup and persistence ---------------------------------------------------------

  /**
   * Whether requests for this group can be served here. An empty group id is valid only for the
   * offset and admin APIs (old clients commit offsets for the group ""), as in Kafka.
   */
  private groupStatus(groupId: string, allowEmptyId: boolean): number {
    if (!allowEmptyId && groupId === '') return ErrorCode.INVALID_GROUP_ID;
    if (!this.active) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const p = this.partitions.get(this.partitionFor(groupId));
    if (p === undefined) return ErrorCode.NOT_COORDINATOR;
    if (p.state === 'loading') return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
    return ErrorCode.NONE;
  }

  private createGroup(groupId: string): ClassicGroup {
    const group = new ClassicGroup(groupId, this.partitionFor(groupId), 'Empty', this.clock.nowMs());
    this.groups.set(groupId, group);
    return group;
  }

  private removeGroup(group: ClassicGroup): void {
    if (this.groups.get(group.groupId) === group) this.groups.delete(group.groupId);
  }

  private async storeGroup(group: ClassicGroup, assignment: ReadonlyMap<string, Buffer>): Promise<number> {
    const record = groupMetadataRecord(group.groupId, group.toRecordValue(assignment));
    return (await this.append(group.partition, [record], groupAppendError)).errorCode;
  }

  /** Appends and resolves to NONE and the batch's base offset, or the Kafka error to answer with; never rejects. */
  private async append(
    partition: number,
    records: CoordinatorRecord[],
    mapError: (code: number) => number,
    txn?: TxnProducer,
  ): Promise<AppendResult> {
    try {
      const baseOffset = await this.log.append(partition, records, txn);
      return { errorCode: ErrorCode.NONE, baseOffset };
    } catch (err) {
      const code = err instanceof KafkaError ? err.code : ErrorCode.UNKNOWN_SERVER_ERROR;
      this.logger.warn(
        `__consumer_offsets-${partition}: append of ${records.length} records failed: ${(err as Error).message}`,
      );
      return { errorCode: mapError(code), baseOffset: -1n };
    }
  }

  // ---- Offset retention ---------------------------------------------------------------------

  private scheduleCleanup(): void {
    this.cancelCleanup = this.scheduler.schedule(
      'group-metadata-cleanup',
      this.config.offsetsRetentionCheckIntervalMs,
      () => {
        this.cancelCleanup = null;
        void this.cleanupExpiredOffsets().finally(() => {
          if (this.active) this.scheduleCleanup();
        });
      },
    );
  }

  /** Deletes expired offsets (and groups left empty without offsets). Returns the offsets removed. */
  async cleanupExpiredOffsets(): Promise<number> {
    const nowMs = this.clock.nowMs();
    let removed = 0;
    for (const group of [...this.groups.values()]) {
      if (this.groupStatus(group.groupId, true) !== ErrorCode.NONE || group.is('Dead')) continue;
      const { records, expired, deleteGroup } = this.offsets.expiredRecords(group, nowMs);
      if (records.length === 0) continue;
      if (deleteGroup) group.transitionTo('Dead', nowMs);
      const { errorCode } = await this.append(group.partition, records, offsetAppendError);
      if (errorCode !== ErrorCode.NONE) {
        if (deleteGroup) group.state = 'Empty';
        continue;
      }
      for (const [topic, partition] of expired) group.removeOffset(topic, partition);
      if (deleteGroup) this.removeGroup(group);
      removed += expired.length;
    }
    if (removed > 0) this.logger.info(`removed ${removed} expired offsets`);
    return removed;
  }

  /**
   * Topics were deleted: their committed offsets go too, in every group held here (Kafka's
   * handleDeletedPartitions), so a topic created again under the same name starts from scratch.
   * Returns the number of offsets removed.
   */
  async onTopicsDeleted(topics: readonly string[]): Promise<number> {
    const deleted = new Set(topics);
    const byGroup: { group: ClassicGroup; removals: [string, number][] }[] = [];
    for (const group of this.groups.values()) {
      const removals: [string, number][] = [];
      for (const [topic, parts] of group.offsets) {
        if (deleted.has(topic)) for (const p of parts.keys()) removals.push([topic, p]);
      }
      if (removals.length > 0) byGroup.push({ group, removals });
    }
    let removed = 0;
    for (const { group, removals } of byGroup) {
      const records = removals.map(([t, p]) => offsetTombstone(group.groupId, t, p));
      const { errorCode } = await this.append(group.partition, records, offsetAppendError);
      if (errorCode !== ErrorCode.NONE) continue;
      for (const [t, p] of removals) group.removeOffset(t, p);
      removed += removals.length;
    }
    if (removed > 0) this.logger.info(`removed ${removed} offsets of deleted topics ${topics.join(', ')}`);
    return removed;
  }

  // ---- GroupApi -----------------------------------------------------------------------------

  async findCoordinator(
    ctx: GroupRequestContext,
    req: FindCoordinatorRequest,
  ): Promise<FindCoordinatorResponse> {
    const locate = this.options.locateCoordinator ?? (() => null);
    const listenerName = ctx.listenerName ?? 'PLAINTEXT';
    return findCoordinator(ctx.apiVersion, req, (key) => locate(this.partitionFor(key), listenerName));
  }

  async joinGroup(ctx: GroupRequestContext, req: JoinGroupRequest): Promise<JoinGroupResponse> {
    const v = ctx.apiVersion;
    const status = this.groupStatus(req.groupId, false);
    if (status !== ErrorCode.NONE) return responses.join(v, req.memberId, status);
    const { groupMinSessionTimeoutMs: min, groupMaxSessionTimeoutMs: max } = this.config;
    if (req.sessionTimeoutMs < min || req.sessionTimeoutMs > max) {
      return responses.join(v, req.memberId, ErrorCode.INVALID_SESSION_TIMEOUT);
    }
    let group = this.groups.get(req.groupId);
    if (group?.consumer != null) {
      const errorCode = await this.consumerGroups.toClassic(group);
      if (errorCode !== ErrorCode.NONE) return responses.join(v, req.memberId, errorCode);
    }
    if (group === undefined) {
      // A member id for a group that does not exist is stale: let the client reset it.
      if (req.memberId !== '') return responses.join(v, req.memberId, ErrorCode.UNKNOWN_MEMBER_ID);
      group = this.createGroup(req.groupId);
    }
    const result = await this.membership.join(group, {
      memberId: req.memberId,
      groupInstanceId: v >= 5 ? req.groupInstanceId : null,
      clientId: ctx.clientId ?? '',
      clientHost: ctx.clientHost,
      // v0 has no rebalance timeout: the session timeout bounds the join phase, as in Kafka.
      rebalanceTimeoutMs:
        v >= 1 && req.rebalanceTimeoutMs >= 0 ? req.rebalanceTimeoutMs : req.sessionTimeoutMs,
      sessionTimeoutMs: req.sessionTimeoutMs,
      protocolType: req.protocolType,
      protocols: req.protocols.map((p) => ({ name: p.name, metadata: Buffer.from(p.metadata) })),
      requireKnownMemberId: v >= 4,
      supportSkippingAssignment: v >= 9,
      reason: v >= 8 ? req.reason : null,
    });
    // A group that exists only because this join created it, and the join failed, is dropped.
    if (
      group.is('Empty') &&
      group.size === 0 &&
      group.pendingMembers.size === 0 &&
      group.generationId === 0 &&
      group.hasNoOffsets()
    ) {
      this.removeGroup(group);
    }
    return responses.joinResult(v, result, group.protocolType);
  }

  async syncGroup(ctx: GroupRequestContext, req: SyncGroupRequest): Promise<SyncGroupResponse> {
    const v = ctx.apiVersion;
    const status = this.groupStatus(req.groupId, false);
    // A loading coordinator has lost the rebalance in progress: send the member back to JoinGroup.
    if (status === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
      return responses.sync(v, ErrorCode.REBALANCE_IN_PROGRESS);
    if (status !== ErrorCode.NONE) return responses.sync(v, status);
    const group = this.groups.get(req.groupId);
    if (group === undefined || group.consumer !== null) return responses.sync(v, ErrorCode.UNKNOWN_MEMBER_ID);
    const result = await this.membership.sync(group, {
      memberId: req.memberId,
      groupInstanceId: v >= 3 ? req.groupInstanceId : null,
      generationId: req.generationId,
      protocolType: v >= 5 ? req.protocolType : null,
      protocolName: v >= 5 ? req.protocolName : null,
      assignments: req.assignments,
    });
    return responses.sync(v, result.errorCode, result.assignment, group.protocolType, group.protocolName);
  }

  async heartbeat(ctx: GroupRequestContext, req: HeartbeatRequest): Promise<HeartbeatResponse> {
    const status = this.groupStatus(req.groupId, false);
    // Kafka answers NONE while loading: the member keeps its session and learns the rest later.
    if (status === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
      return { throttleTimeMs: 0, errorCode: ErrorCode.NONE };
    if (status !== ErrorCode.NONE) return { throttleTimeMs: 0, errorCode: status };
    const group = this.groups.get(req.groupId);
    const errorCode =
      group === undefined || group.consumer !== null
        ? ErrorCode.UNKNOWN_MEMBER_ID
        : this.membership.heartbeat(
            group,
            req.memberId,
            ctx.apiVersion >= 3 ? req.groupInstanceId : null,
            req.generationId,
          );
    return { throttleTimeMs: 0, errorCode };
  }

  async leaveGroup(ctx: GroupRequestContext, req: LeaveGroupRequest): Promise<LeaveGroupResponse> {
    const v = ctx.apiVersion;
    const leaving =
      v >= 3
        ? req.members.map((m) => ({
            memberId: m.memberId,
            groupInstanceId: m.groupInstanceId,
            reason: v >= 5 ? m.reason : null,
          }))
        : [{ memberId: req.memberId, groupInstanceId: null, reason: null }];
    const status = this.groupStatus(req.groupId, false);
    const group = this.groups.get(req.groupId);
    let topLevel: number = status;
    let memberErrors: number[] = [];
    if (status === ErrorCode.NONE) {
      if (group?.is('Dead')) topLevel = ErrorCode.COORDINATOR_NOT_AVAILABLE;
      else
        memberErrors = leaving.map((m) =>
          group === undefined || group.consumer !== null
            ? ErrorCode.UNKNOWN_MEMBER_ID
            : this.membership.leave(group, m.memberId, m.groupInstanceId, m.reason),
        );
    }
    return responses.leave(v, topLevel, leaving, memberErrors);
  }

  async offsetCommit(ctx: GroupRequestContext, req: OffsetCommitRequest): Promise<OffsetCommitResponse> {
    const topics = await this.offsets.commit(req, ctx.apiVersion);
    return { throttleTimeMs: 0, topics };
  }

  async offsetFetch(ctx: GroupRequestContext, req: OffsetFetchRequest): Promise<OffsetFetchResponse> {
    const v = ctx.apiVersion;
    if (v >= 8) {
      const groups = req.groups.map((g) => {
        const member = v >= 9 ? { memberId: g.memberId, memberEpoch: g.memberEpoch } : undefined;
        const r = this.offsets.fetch(g.groupId, g.topics, req.requireStable, member);
        if (r.errorCode !== ErrorCode.NONE) return { groupId: g.groupId, errorCode: r.errorCode, topics: [] };
        return {
          groupId: g.groupId,
          errorCode: r.errorCode,
          topics: r.topics.map((t) => ({
            ...t,
            partitions: t.partitions.map((p) => responses.fetchPartition(v, p)),
          })),
        };
      });
      return { throttleTimeMs: 0, topics: [], errorCode: ErrorCode.NONE, groups };
    }
    // v0 and v1 cannot ask for all topics; an empty list there is just an empty list.
    const r = this.offsets.fetch(
      req.groupId,
      v >= 2 ? req.topics : (req.topics ?? []),
      v >= 7 && req.requireStable,
    );
    // v2+ carry a coordinator error at the top level alone; v0-v1 can only say it per partition.
    if (v >= 2 && r.errorCode !== ErrorCode.NONE) {
      return { throttleTimeMs: 0, topics: [], errorCode: r.errorCode, groups: [] };
    }
    const topics = r.topics.map((t) => ({
      ...t,
      partitions: t.partitions.map((p) => responses.fetchPartition(v, p)),
    }));
    return { throttleTimeMs: 0, topics, errorCode: v >= 2 ? r.errorCode : ErrorCode.NONE, groups: [] };
  }

  async txnOffsetCommit(
    ctx: GroupRequestContext,
    req: TxnOffsetCommitRequest,
  ): Promise<TxnOffsetCommitResponse> {
    return { throttleTimeMs: 0, topics: await txnOffsetCommit(this.offsetHost, req, ctx.apiVersion) };
  }

  /**
   * A COMMIT or ABORT marker of `producerId`'s transaction is written to __consumer_offsets
   * partition `partition` (the transaction coordinator's WriteTxnMarkers, once the append is
   * done): the offsets that transaction committed for the partition's groups become committed
   * offsets, or are dropped (Kafka's GroupMetadataManager.handleTxnCompletion). A partition being
   * loaded applies the marker once loaded; one not led here has nothing to update (its next load
   * replays the marker from the log). Returns the number of offsets that became committed.
   */
  onTransactionMarker(partition: number, producerId: bigint, producerEpoch: number, commit: boolean): number {
    const owned = this.partitions.get(partition);
    if (owned?.state === 'loading') owned.markers.push({ producerId, producerEpoch, commit });
    if (owned?.state !== 'active') return 0;
    let applied = 0;
    let groups = 0;
    for (const group of this.groups.values()) {
      if (group.partition !== partition || group.is('Dead') || !group.pendingTxnOffsets.has(producerId))
        continue;
      applied += group.completePendingTxnOffsets(producerId, commit);
      groups++;
    }
    if (groups > 0) {
      this.logger.info(
        `__consumer_offsets-${partition}: ${commit ? 'COMMIT' : 'ABORT'} marker of producer ${producerId} (epoch ${producerEpoch}) completed the transactional offsets of ${groups} groups (${applied} committed)`,
      );
    }
    return applied;
  }

  async listGroups(ctx: GroupRequestContext, req: ListGroupsRequest): Promise<ListGroupsResponse> {
    if (!this.active)
      return { throttleTimeMs: 0, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, groups: [] };
    const loading = [...this.partitions.values()].some((p) => p.state === 'loading');
    return listGroups(ctx.apiVersion, req, this.groups.values(), loading);
  }

  async describeGroups(
    ctx: GroupRequestContext,
    req: DescribeGroupsRequest,
  ): Promise<DescribeGroupsResponse> {
    const describe = (id: string) =>
      describeGroup(ctx.apiVersion, id, this.groupStatus(id, true), this.groups.get(id));
    return { throttleTimeMs: 0, groups: req.groups.map(describe) };
  }

  async deleteGroups(_ctx: GroupRequestContext, req: DeleteGroupsRequest): Promise<DeleteGroupsResponse> {
    const results = await Promise.all(
      req.groupsNames.map(async (groupId) => ({ groupId, errorCode: await this.deleteGroup(groupId) })),
    );
    return { throttleTimeMs: 0, results };
  }

  private async deleteGroup(groupId: string): Promise<number> {
    const status = this.groupStatus(groupId, true);
    if (status !== ErrorCode.NONE) return status;
    const group = this.groups.get(groupId);
    if (group === undefined || group.is('Dead')) return ErrorCode.GROUP_ID_NOT_FOUND;
    if (!group.isEmptyGroup()) return ErrorCode.NON_EMPTY_GROUP;
    // Dead at once, so no join or commit slips in while the tombstones are written.
    group.transitionTo('Dead', this.clock.nowMs());
    const records: CoordinatorRecord[] = [];
    const keys = new Set(group.pendingOffsetCommits.keys());
    for (const [topic, parts] of group.offsets) for (const p of parts.keys()) keys.add(offsetKey(topic, p));
    for (const k of keys) {
      const at = k.lastIndexOf('\u0000');
      records.push(offsetTombstone(groupId, k.slice(0, at), Number(k.slice(at + 1))));
    }
    if (group.consumer !== null) records.push(...consumerGroupTombstones(group.consumer));
    else records.push(groupTombstone(groupId));
    const { errorCode } = await this.append(group.partition, records, offsetAppendError);
    if (errorCode !== ErrorCode.NONE) {
      // Nothing could change a Dead group meanwhile, so it is exactly the Empty group it was.
      group.state = 'Empty';
      return errorCode;
    }
    this.removeGroup(group);
    this.logger.info(`group ${groupId}: deleted with ${records.length - 1} offsets`);
    return ErrorCode.NONE;
  }

  async consumerGroupHeartbeat(
    ctx: GroupRequestContext,
    req: ConsumerGroupHeartbeatRequest,
  ): Promise<ConsumerGroupHeartbeatResponse> {
    return this.consumerGroups.heartbeat(req, ctx.clientId ?? '', ctx.clientHost);
  }

  async consumerGroupDescribe(
    _ctx: GroupRequestContext,
    req: ConsumerGroupDescribeRequest,
  ): Promise<ConsumerGroupDescribeResponse> {
    return this.consumerGroups.describe(req.groupIds);
  }

  async offsetDelete(_ctx: GroupRequestContext, req: OffsetDeleteRequest): Promise<OffsetDeleteResponse> {
    return this.offsets.delete(req);
  }

  /** For tests and the dashboard: a group's state, or undefined when this coordinator does not hold it. */
  groupState(groupId: string): GroupState | undefined {
    return this.groups.get(groupId)?.state;
  }
}
