/**
 * The consumer-group APIs' authorization, as KafkaApis checks before calling its group
 * coordinator: READ on the GROUP to join, sync, heartbeat, leave and commit; DESCRIBE to find its
 * coordinator, fetch offsets, describe or list it; DELETE to delete it or its offsets; and READ
 * (commit, delete offsets) or DESCRIBE (fetch offsets) on each TOPIC. A refused group gets
 * GROUP_AUTHORIZATION_FAILED, a refused topic TOPIC_AUTHORIZATION_FAILED on its partitions, and
 * only what is allowed reaches the coordinator. Stateless.
 */
import * as responses from '../coordinator/responses.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import type { FindCoordinatorRequest } from '../protocol/generated/FindCoordinatorRequest.js';
import type { FindCoordinatorResponse } from '../protocol/generated/FindCoordinatorResponse.js';
import type { OffsetCommitRequest } from '../protocol/generated/OffsetCommitRequest.js';
import type { OffsetCommitResponse } from '../protocol/generated/OffsetCommitResponse.js';
import type { OffsetDeleteRequest } from '../protocol/generated/OffsetDeleteRequest.js';
import type { OffsetDeleteResponse } from '../protocol/generated/OffsetDeleteResponse.js';
import type { OffsetFetchRequest } from '../protocol/generated/OffsetFetchRequest.js';
import type {
  OffsetFetchResponse,
  OffsetFetchResponsePartition,
} from '../protocol/generated/OffsetFetchResponse.js';
import type { TxnOffsetCommitRequest } from '../protocol/generated/TxnOffsetCommitRequest.js';
import type { TxnOffsetCommitResponse } from '../protocol/generated/TxnOffsetCommitResponse.js';
import { AclOperation, type Operation, ResourceType } from '../security/acl.js';
import type { AuthorizationContext } from './authorization.js';
import type { GroupApi, GroupRequestContext } from './group-api.js';
import type { BrokerServices } from './handler-context.js';

const { GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED } =
  ErrorCode;
const COORDINATOR_KEY_TRANSACTION = 1;

type Ctx = GroupRequestContext & AuthorizationContext;

/** The GroupApi as the router calls it: every call authorized first. */
export function authorizedGroupApi(b: BrokerServices, g: GroupApi) {
  const auth = b.authorization;
  const group = (c: Ctx, op: Operation, id: string) => auth.authorize(c, op, ResourceType.GROUP, id);
  const { READ, DESCRIBE, DELETE } = AclOperation;
  return {
    findCoordinator: (c: Ctx, r: FindCoordinatorRequest) => findCoordinator(b, g, c, r),
    joinGroup: async (c: Ctx, r: Parameters<GroupApi['joinGroup']>[1]) =>
      group(c, READ, r.groupId)
        ? g.joinGroup(c, r)
        : responses.join(c.apiVersion, '', GROUP_AUTHORIZATION_FAILED),
    syncGroup: async (c: Ctx, r: Parameters<GroupApi['syncGroup']>[1]) =>
      group(c, READ, r.groupId)
        ? g.syncGroup(c, r)
        : responses.sync(c.apiVersion, GROUP_AUTHORIZATION_FAILED),
    heartbeat: async (c: Ctx, r: Parameters<GroupApi['heartbeat']>[1]) =>
      group(c, READ, r.groupId)
        ? g.heartbeat(c, r)
        : { throttleTimeMs: 0, errorCode: GROUP_AUTHORIZATION_FAILED },
    leaveGroup: async (c: Ctx, r: Parameters<GroupApi['leaveGroup']>[1]) =>
      group(c, READ, r.groupId)
        ? g.leaveGroup(c, r)
        : responses.leave(c.apiVersion, GROUP_AUTHORIZATION_FAILED, [], []),
    offsetCommit: (c: Ctx, r: OffsetCommitRequest) => offsetCommit(b, g, c, r),
    offsetFetch: (c: Ctx, r: OffsetFetchRequest) => offsetFetch(b, g, c, r),
    listGroups: async (c: Ctx, r: Parameters<GroupApi['listGroups']>[1]) => {
      const res = await g.listGroups(c, r);
      if (auth.authorizeCluster(c, DESCRIBE)) return res;
      return { ...res, groups: res.groups.filter((x) => group(c, DESCRIBE, x.groupId)) };
    },
    describeGroups: async (c: Ctx, r: Parameters<GroupApi['describeGroups']>[1]) => {
      const allowed = r.groups.filter((id) => group(c, DESCRIBE, id));
      const refused = r.groups
        .filter((id) => !group(c, DESCRIBE, id))
        .map((groupId) => ({
          errorCode: GROUP_AUTHORIZATION_FAILED,
          groupId,
          groupState: '',
          protocolType: '',
          protocolData: '',
          members: [],
          authorizedOperations: -2147483648,
        }));
      const res =
        allowed.length === 0 && refused.length > 0
          ? { throttleTimeMs: 0, groups: [] }
          : await g.describeGroups(c, { ...r, groups: allowed });
      if (c.apiVersion >= 3 && r.includeAuthorizedOperations)
        for (const d of res.groups)
          if (d.errorCode === 0)
            d.authorizedOperations = auth.authorizedOperations(c, ResourceType.GROUP, d.groupId);
      return { ...res, groups: [...refused, ...res.groups] };
    },
    deleteGroups: async (c: Ctx, r: Parameters<GroupApi['deleteGroups']>[1]) => {
      const names = [...new Set(r.groupsNames)];
      const allowed = names.filter((id) => group(c, DELETE, id));
      const refused = names
        .filter((id) => !group(c, DELETE, id))
        .map((groupId) => ({ groupId, errorCode: GROUP_AUTHORIZATION_FAILED }));
      if (refused.length === 0) return g.deleteGroups(c, r);
      const res =
        allowed.length === 0
          ? { throttleTimeMs: 0, results: [] }
          : await g.deleteGroups(c, { ...r, groupsNames: allowed });
      return { ...res, results: [...res.results, ...refused] };
    },
    offsetDelete: (c: Ctx, r: OffsetDeleteRequest) => offsetDelete(b, g, c, r),
    txnOffsetCommit: (c: Ctx, r: TxnOffsetCommitRequest) => txnOffsetCommit(b, g, c, r),
    consumerGroupHeartbeat: async (c: Ctx, r: Parameters<GroupApi['consumerGroupHeartbeat']>[1]) =>
      group(c, READ, r.groupId)
        ? g.consumerGroupHeartbeat(c, r)
        : responses.consumerGroupHeartbeatError(GROUP_AUTHORIZATION_FAILED, null),
    consumerGroupDescribe: async (c: Ctx, r: Parameters<GroupApi['consumerGroupDescribe']>[1]) => {
      const allowed = r.groupIds.filter((id) => group(c, DESCRIBE, id));
      const res = await g.consumerGroupDescribe(c, { ...r, groupIds: allowed });
      const refused = r.groupIds
        .filter((id) => !group(c, DESCRIBE, id))
        .map((id) => responses.describedConsumerGroup(id, GROUP_AUTHORIZATION_FAILED));
      if (r.includeAuthorizedOperations)
        for (const d of res.groups)
          if (d.errorCode === 0)
            d.authorizedOperations = auth.authorizedOperations(c, ResourceType.GROUP, d.groupId);
      return { ...res, groups: [...res.groups, ...refused] };
    },
  };
}

/** The group and topic checks of one request. */
function checksOf(b: BrokerServices, c: Ctx) {
  const auth = b.authorization;
  return {
    group: (op: Operation, id: string) => auth.authorize(c, op, ResourceType.GROUP, id),
    topics: (op: Operation, names: Iterable<string>) => auth.filter(c, op, ResourceType.TOPIC, names),
  };
}

/** READ on the group, then on each topic; refused topics fail alone. */
async function offsetCommit(
  b: BrokerServices,
  g: GroupApi,
  c: Ctx,
  r: OffsetCommitRequest,
): Promise<OffsetCommitResponse> {
  const { group, topics } = checksOf(b, c);
  const { READ } = AclOperation;
  const failAll = (code: number, ts: OffsetCommitRequest['topics']) =>
    ts.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: code })),
    }));
  if (!group(READ, r.groupId))
    return { throttleTimeMs: 0, topics: failAll(GROUP_AUTHORIZATION_FAILED, r.topics) };
  const allowed = topics(
    READ,
    r.topics.map((t) => t.name),
  );
  const refused = failAll(
    TOPIC_AUTHORIZATION_FAILED,
    r.topics.filter((t) => !allowed.has(t.name)),
  );
  if (refused.length === 0) return g.offsetCommit(c, r);
  const rest = r.topics.filter((t) => allowed.has(t.name));
  if (rest.length === 0) return { throttleTimeMs: 0, topics: refused };
  const res = await g.offsetCommit(c, { ...r, topics: rest });
  return { ...res, topics: [...refused, ...res.topics] };
}

/**
 * WRITE on the TRANSACTIONAL_ID (else every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ
 * on the group, then READ on each topic; refused topics fail alone.
 */
async function txnOffsetCommit(
  b: BrokerServices,
  g: GroupApi,
  c: Ctx,
  r: TxnOffsetCommitRequest,
): Promise<TxnOffsetCommitResponse> {
  const { group, topics } = checksOf(b, c);
  const failAll = (code: number, ts: TxnOffsetCommitRequest['topics']) =>
    ts.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: code })),
    }));
  if (!b.authorization.authorize(c, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, r.transactionalId))
    return { throttleTimeMs: 0, topics: failAll(TRANSACTIONAL_ID_AUTHORIZATION_FAILED, r.topics) };
  if (!group(AclOperation.READ, r.groupId))
    return { throttleTimeMs: 0, topics: failAll(GROUP_AUTHORIZATION_FAILED, r.topics) };
  const allowed = topics(
    AclOperation.READ,
    r.topics.map((t) => t.name),
  );
  const rest = r.topics.filter((t) => allowed.has(t.name));
  if (rest.length === r.topics.length) return g.txnOffsetCommit(c, r);
  const refused = failAll(
    TOPIC_AUTHORIZATION_FAILED,
    r.topics.filter((t) => !allowed.has(t.name)),
  );
  if (rest.length === 0) return { throttleTimeMs: 0, topics: refused };
  const res = await g.txnOffsetCommit(c, { ...r, topics: rest });
  return { ...res, topics: [...refused, ...res.topics] };
}

/** DELETE on the group, then READ on each topic; refused topics fail alone. */
async function offsetDelete(
  b: BrokerServices,
  g: GroupApi,
  c: Ctx,
  r: OffsetDeleteRequest,
): Promise<OffsetDeleteResponse> {
  const { group, topics } = checksOf(b, c);
  const { READ, DELETE } = AclOperation;
  if (!group(DELETE, r.groupId))
    return { errorCode: GROUP_AUTHORIZATION_FAILED, throttleTimeMs: 0, topics: [] };
  const allowed = topics(
    READ,
    r.topics.map((t) => t.name),
  );
  const refused = r.topics
    .filter((t) => !allowed.has(t.name))
    .map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: TOPIC_AUTHORIZATION_FAILED,
      })),
    }));
  if (refused.length === 0) return g.offsetDelete(c, r);
  const rest = r.topics.filter((t) => allowed.has(t.name));
  const res =
    rest.length === 0
      ? { errorCode: 0, throttleTimeMs: 0, topics: [] }
      : await g.offsetDelete(c, { ...r, topics: rest });
  return res.errorCode !== 0 ? res : { ...res, topics: [...refused, ...res.topics] };
}

/** DESCRIBE on the GROUP (key type 0) or the TRANSACTIONAL_ID (key type 1), per key from v4. */
async function findCoordinator(
  b: BrokerServices,
  g: GroupApi,
  c: Ctx,
  r: FindCoordinatorRequest,
): Promise<FindCoordinatorResponse> {
  const transaction = r.keyType === COORDINATOR_KEY_TRANSACTION;
  const type = transaction ? ResourceType.TRANSACTIONAL_ID : ResourceType.GROUP;
  const code = transaction ? TRANSACTIONAL_ID_AUTHORIZATION_FAILED : GROUP_AUTHORIZATION_FAILED;
  const ok = (key: string) => b.authorization.authorize(c, AclOperation.DESCRIBE, type, key);
  if (c.apiVersion < 4) {
    if (ok(r.key)) return g.findCoordinator(c, r);
    return {
      throttleTimeMs: 0,
      errorCode: code,
      errorMessage: null,
      nodeId: -1,
      host: '',
      port: -1,
      coordinators: [],
    };
  }
  const allowed = r.coordinatorKeys.filter(ok);
  if (allowed.length === r.coordinatorKeys.length) return g.findCoordinator(c, r);
  const res = allowed.length === 0 ? null : await g.findCoordinator(c, { ...r, coordinatorKeys: allowed });
  const found = new Map((res?.coordinators ?? []).map((x) => [x.key, x]));
  return {
    throttleTimeMs: res?.throttleTimeMs ?? 0,
    errorCode: 0,
    errorMessage: null,
    nodeId: -1,
    host: '',
    port: -1,
    coordinators: r.coordinatorKeys.map(
      (key) => found.get(key) ?? { key, nodeId: -1, host: '', port: -1, errorCode: code, errorMessage: null },
    ),
  };
}

function refusedPartition(partitionIndex: number, errorCode: number): OffsetFetchResponsePartition {
  return { partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode };
}

/**
 * OffsetFetch: DESCRIBE on the group (one group before v8, each group from v8) and on each topic;
 * the partitions of a topic asked for and refused read TOPIC_AUTHORIZATION_FAILED, and a request
 * for all of a group's offsets leaves refused topics out.
 */
async function offsetFetch(
  b: BrokerServices,
  g: GroupApi,
  c: Ctx,
  r: OffsetFetchRequest,
): Promise<OffsetFetchResponse> {
  const auth = b.authorization;
  const describable = (id: string) => auth.authorize(c, AclOperation.DESCRIBE, ResourceType.GROUP, id);
  const allowedTopics = (names: Iterable<string>) =>
    auth.filter(c, AclOperation.DESCRIBE, ResourceType.TOPIC, names);
  if (!auth.enabled) return g.offsetFetch(c, r);
  if (c.apiVersion < 8) {
    if (!describable(r.groupId)) {
      const topics =
        c.apiVersion < 2
          ? (r.topics ?? []).map((t) => ({
              name: t.name,
              partitions: t.partitionIndexes.map((p) => refusedPartition(p, GROUP_AUTHORIZATION_FAILED)),
            }))
          : [];
      return { throttleTimeMs: 0, topics, errorCode: GROUP_AUTHORIZATION_FAILED, groups: [] };
    }
    if (r.topics === null) {
      const res = await g.offsetFetch(c, r);
      const ok = allowedTopics(res.topics.map((t) => t.name));
      return { ...res, topics: res.topics.filter((t) => ok.has(t.name)) };
    }
    const ok = allowedTopics(r.topics.map((t) => t.name));
    const rest = r.topics.filter((t) => ok.has(t.name));
    const refused = r.topics
      .filter((t) => !ok.has(t.name))
      .map((t) => ({
        name: t.name,
        partitions: t.partitionIndexes.map((p) => refusedPartition(p, TOPIC_AUTHORIZATION_FAILED)),
      }));
    if (refused.length === 0) return g.offsetFetch(c, r);
    const res =
      rest.length === 0
        ? { throttleTimeMs: 0, topics: [], errorCode: 0, groups: [] }
        : await g.offsetFetch(c, { ...r, topics: rest });
    return { ...res, topics: [...res.topics, ...refused] };
  }
  const groups = r.groups.filter((x) => describable(x.groupId));
  const asked = groups.map((x) => {
    if (x.topics === null) return { group: x, refused: [] };
    const ok = allowedTopics(x.topics.map((t) => t.name));
    return {
      group: { ...x, topics: x.topics.filter((t) => ok.has(t.name)) },
      refused: x.topics
        .filter((t) => !ok.has(t.name))
        .map((t) => ({
          name: t.name,
          partitions: t.partitionIndexes.map((p) => refusedPartition(p, TOPIC_AUTHORIZATION_FAILED)),
        })),
    };
  });
  const toAsk = asked.filter((a) => a.group.topics === null || a.group.topics.length > 0).map((a) => a.group);
  const res =
    toAsk.length === 0
      ? { throttleTimeMs: 0, topics: [], errorCode: 0, groups: [] }
      : await g.offsetFetch(c, { ...r, groups: toAsk });
  const answered = new Map(res.groups.map((x) => [x.groupId, x]));
  return {
    ...res,
    groups: r.groups.map((x) => {
      if (!describable(x.groupId))
        return { groupId: x.groupId, topics: [], errorCode: GROUP_AUTHORIZATION_FAILED };
      const a = asked.find((y) => y.group.groupId === x.groupId)!;
      const got = answered.get(x.groupId) ?? { groupId: x.groupId, topics: [], errorCode: 0 };
      if (x.topics === null) {
        const ok = allowedTopics(got.topics.map((t) => t.name));
        return { ...got, topics: got.topics.filter((t) => ok.has(t.name)) };
      }
      return { ...got, topics: [...got.topics, ...a.refused] };
    }),
  };
}
