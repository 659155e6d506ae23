import { ManualClock } from '../../src/common/clock.js';
import { ManualScheduler } from '../../src/common/scheduler.js';
import { GroupCoordinator, type GroupCoordinatorOptions } from '../../src/coordinator/group-coordinator.js';
import type { ReplayRecord } from '../../src/coordinator/loader.js';
import type { CoordinatorLog, CoordinatorRecord, TxnProducer } from '../../src/coordinator/records.js';
import type { MessageCodec } from '../../src/protocol/codec-runtime.js';
import { ConsumerGroupDescribeResponseCodec } from '../../src/protocol/generated/ConsumerGroupDescribeResponse.js';
import { ConsumerGroupHeartbeatResponseCodec } from '../../src/protocol/generated/ConsumerGroupHeartbeatResponse.js';
import { DeleteGroupsResponseCodec } from '../../src/protocol/generated/DeleteGroupsResponse.js';
import { DescribeGroupsResponseCodec } from '../../src/protocol/generated/DescribeGroupsResponse.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import { FindCoordinatorResponseCodec } from '../../src/protocol/generated/FindCoordinatorResponse.js';
import { HeartbeatResponseCodec } from '../../src/protocol/generated/HeartbeatResponse.js';
import {
  defaultJoinGroupRequest,
  type JoinGroupRequest,
} from '../../src/protocol/generated/JoinGroupRequest.js';
import {
  type JoinGroupResponse,
  JoinGroupResponseCodec,
} from '../../src/protocol/generated/JoinGroupResponse.js';
import { LeaveGroupResponseCodec } from '../../src/protocol/generated/LeaveGroupResponse.js';
import { ListGroupsResponseCodec } from '../../src/protocol/generated/ListGroupsResponse.js';
import { OffsetCommitResponseCodec } from '../../src/protocol/generated/OffsetCommitResponse.js';
import { OffsetDeleteResponseCodec } from '../../src/protocol/generated/OffsetDeleteResponse.js';
import { OffsetFetchResponseCodec } from '../../src/protocol/generated/OffsetFetchResponse.js';
import {
  type SyncGroupResponse,
  SyncGroupResponseCodec,
} from '../../src/protocol/generated/SyncGroupResponse.js';
import { TxnOffsetCommitResponseCodec } from '../../src/protocol/generated/TxnOffsetCommitResponse.js';
import { Writer } from '../../src/protocol/writer.js';

/**
 * __consumer_offsets in memory: every append is kept in order, one offset per record, each with
 * its batch's base offset and producer as the broker's replay yields them; appends can be made to
 * fail or wait.
 */
export class MemoryCoordinatorLog implements CoordinatorLog {
  readonly records = new Map<number, ReplayRecord[]>();
  failWith: Error | null = null;
  /** When set, appends wait until release() is called. */
  hold = false;
  private held: (() => void)[] = [];

  async append(partition: number, records: CoordinatorRecord[], txn?: TxnProducer): Promise<bigint> {
    if (this.failWith !== null) throw this.failWith;
    if (this.hold) await new Promise<void>((resolve) => this.held.push(resolve));
    const list = this.records.get(partition) ?? [];
    const batchOffset = BigInt(list.length);
    list.push(
      ...records.map((r) => ({
        key: Buffer.from(r.key),
        value: r.value === null ? null : Buffer.from(r.value),
        batchOffset,
        producerId: txn?.producerId ?? -1n,
        transactional: txn !== undefined,
      })),
    );
    this.records.set(partition, list);
    return batchOffset;
  }

  /** A COMMIT/ABORT marker of `producerId`, as the transaction coordinator's WriteTxnMarkers appends it. */
  appendMarker(partition: number, producerId: bigint, commit: boolean): void {
    const list = this.records.get(partition) ?? [];
    list.push({
      key: null,
      value: null,
      batchOffset: BigInt(list.length),
      producerId,
      marker: commit ? 'COMMIT' : 'ABORT',
    });
    this.records.set(partition, list);
  }

  release(): void {
    this.hold = false;
    const held = this.held;
    this.held = [];
    for (const r of held) r();
  }

  get heldCount(): number {
    return this.held.length;
  }

  /** The coordinator records of a partition, markers left out. */
  partition(p: number): (CoordinatorRecord & ReplayRecord)[] {
    return (this.records.get(p) ?? []).filter((r): r is CoordinatorRecord & ReplayRecord => r.key !== null);
  }

  /** Everything a load replays: records and markers, in log order. */
  replay(p: number): ReplayRecord[] {
    return this.records.get(p) ?? [];
  }
}

/** Lets promise continuations (append completions, parked responses) run. */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The response codecs, to check that every response the coordinator builds encodes at its version. */
const RESPONSE_CODECS: Record<string, MessageCodec<unknown>> = {
  joinGroup: JoinGroupResponseCodec,
  syncGroup: SyncGroupResponseCodec,
  heartbeat: HeartbeatResponseCodec,
  leaveGroup: LeaveGroupResponseCodec,
  offsetCommit: OffsetCommitResponseCodec,
  offsetFetch: OffsetFetchResponseCodec,
  listGroups: ListGroupsResponseCodec,
  describeGroups: DescribeGroupsResponseCodec,
  deleteGroups: DeleteGroupsResponseCodec,
  offsetDelete: OffsetDeleteResponseCodec,
  txnOffsetCommit: TxnOffsetCommitResponseCodec,
  findCoordinator: FindCoordinatorResponseCodec,
  consumerGroupHeartbeat: ConsumerGroupHeartbeatResponseCodec,
  consumerGroupDescribe: ConsumerGroupDescribeResponseCodec,
};

export class Harness {
  readonly clock = new ManualClock();
  readonly scheduler = new ManualScheduler(this.clock);
  readonly log: MemoryCoordinatorLog;
  readonly coordinator: GroupCoordinator;
  private uuid = 0;

  constructor(options: Partial<GroupCoordinatorOptions> = {}, log = new MemoryCoordinatorLog()) {
    this.log = log;
    this.coordinator = new GroupCoordinator({
      clock: this.clock,
      scheduler: this.scheduler,
      log: this.log,
      newUuid: () => `uuid${++this.uuid}`,
      locateCoordinator: () => ({ nodeId: 1, host: 'broker-1', port: 9092 }),
      ...options,
    });
  }

  /** Owns every __consumer_offsets partition, each replayed from what the log holds. */
  async loadAll(): Promise<void> {
    for (let p = 0; p < this.coordinator.config.offsetsTopicNumPartitions; p++) {
      await this.coordinator.load(p, this.log.replay(p));
    }
  }

  /** Moves time forward, running every timer due on the way, then lets continuations run. */
  async advance(ms: number): Promise<void> {
    // One millisecond at a time: a timer that re-arms itself is scheduled from the time it ran,
    // so jumping the clock past several due times at once would distort the timeline.
    await flush();
    for (let i = 0; i < ms; i++) {
      this.clock.advance(1);
      if (this.scheduler.runDue() > 0) await flush();
    }
    this.scheduler.runDue();
    await flush();
  }

  /** Calls one API at a version and checks the response encodes at that version. */
  async call<R>(
    api: keyof typeof RESPONSE_CODECS,
    version: number,
    req: unknown,
    clientId = 'client',
  ): Promise<R> {
    const fn = (this.coordinator as unknown as Record<string, (ctx: unknown, req: unknown) => Promise<R>>)[
      api
    ]!;
    const res = await fn.call(
      this.coordinator,
      { apiVersion: version, clientId, clientHost: '/127.0.0.1' },
      req,
    );
    RESPONSE_CODECS[api]!.encode(new Writer(), res, version);
    return res;
  }

  /** Starts a JoinGroup without waiting for it (joins are parked until the join phase completes). */
  join(version: number, req: Partial<JoinGroupRequest>, clientId = 'client'): Promise<JoinGroupResponse> {
    return this.call<JoinGroupResponse>(
      'joinGroup',
      version,
      { ...defaultJoinGroupRequest(), ...JOIN_DEFAULTS, ...req },
      clientId,
    );
  }

  sync(
    version: number,
    groupId: string,
    memberId: string,
    generationId: number,
    assignments: { memberId: string; assignment: Buffer }[] = [],
    groupInstanceId: string | null = null,
  ): Promise<SyncGroupResponse> {
    return this.call<SyncGroupResponse>('syncGroup', version, {
      groupId,
      generationId,
      memberId,
      groupInstanceId,
      protocolType: null,
      protocolName: null,
      assignments,
    });
  }

  async heartbeat(
    groupId: string,
    memberId: string,
    generationId: number,
    groupInstanceId: string | null = null,
  ): Promise<number> {
    const r = await this.call<{ errorCode: number }>('heartbeat', 4, {
      groupId,
      memberId,
      generationId,
      groupInstanceId,
    });
    return r.errorCode;
  }
}

/** A consumer subscription (ConsumerProtocolSubscription v0) naming these topics. */
export function subscription(...topics: string[]): Buffer {
  const w = new Writer();
  w.int16(0).int32(topics.length);
  for (const t of topics) w.string(t);
  w.int32(-1);
  return w.toBuffer();
}

export const JOIN_DEFAULTS: Partial<JoinGroupRequest> = {
  groupId: 'g',
  sessionTimeoutMs: 10_000,
  rebalanceTimeoutMs: 30_000,
  protocolType: 'consumer',
  protocols: [{ name: 'range', metadata: subscription('t') }],
};

/** Whether a promise has settled, without waiting for it. */
export async function isSettled(p: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void p.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  await flush();
  return settled;
}

export { ErrorCode };

/** An OffsetCommit body of one partition of t (0 unless given), by a member at a generation or member epoch. */
export function commitOne(
  groupId: string,
  generationIdOrMemberEpoch: number,
  memberId: string,
  offset: bigint,
  partitionIndex = 0,
  committedMetadata = '',
) {
  return {
    groupId,
    generationIdOrMemberEpoch,
    memberId,
    groupInstanceId: null,
    retentionTimeMs: -1n,
    topics: [
      {
        name: 't',
        partitions: [
          {
            partitionIndex,
            committedOffset: offset,
            committedLeaderEpoch: -1,
            commitTimestamp: -1n,
            committedMetadata,
          },
        ],
      },
    ],
  };
}
