/**
 * The transaction APIs' authorization, as KafkaApis checks before calling its transaction
 * coordinator: WRITE on the TRANSACTIONAL_ID to init a transactional producer, add partitions or
 * offsets and end a transaction (and WRITE on each topic added, READ on the group whose offsets
 * join it); DESCRIBE on it to find its coordinator, describe or list it; CLUSTER_ACTION (or ALTER)
 * on the cluster for what brokers send each other (WriteTxnMarkers, AddPartitionsToTxn v4+).
 * Stateless.
 */
import { KEY_TYPE_TRANSACTION } from '../coordinator/find-coordinator.js';
import { describeError } from '../coordinator/transaction/reads.js';
import type { AddOffsetsToTxnRequest } from '../protocol/generated/AddOffsetsToTxnRequest.js';
import type { AddPartitionsToTxnRequest } from '../protocol/generated/AddPartitionsToTxnRequest.js';
import type { AddPartitionsToTxnResponse } from '../protocol/generated/AddPartitionsToTxnResponse.js';
import type { DescribeTransactionsRequest } from '../protocol/generated/DescribeTransactionsRequest.js';
import type { EndTxnRequest } from '../protocol/generated/EndTxnRequest.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import type { FindCoordinatorRequest } from '../protocol/generated/FindCoordinatorRequest.js';
import type { InitProducerIdRequest } from '../protocol/generated/InitProducerIdRequest.js';
import type { ListTransactionsRequest } from '../protocol/generated/ListTransactionsRequest.js';
import type { WriteTxnMarkersRequest } from '../protocol/generated/WriteTxnMarkersRequest.js';
import type { WriteTxnMarkersResponse } from '../protocol/generated/WriteTxnMarkersResponse.js';
import { AclOperation, ResourceType } from '../security/acl.js';
import type { BrokerServices, RequestContext } from './handler-context.js';
import type { TransactionApi } from './handlers/transactions.js';

const {
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
  GROUP_AUTHORIZATION_FAILED,
  TOPIC_AUTHORIZATION_FAILED,
  CLUSTER_AUTHORIZATION_FAILED,
  UNKNOWN_TOPIC_OR_PARTITION,
  OPERATION_NOT_ATTEMPTED,
} = ErrorCode;

/** The TransactionApi as the router calls it: every call authorized first. */
export function authorizedTransactionApi(b: BrokerServices, t: TransactionApi) {
  const auth = b.authorization;
  const txnId = (
    c: RequestContext,
    op: typeof AclOperation.WRITE | typeof AclOperation.DESCRIBE,
    id: string,
  ) => auth.authorize(c, op, ResourceType.TRANSACTIONAL_ID, id);
  const { WRITE, DESCRIBE, READ } = AclOperation;
  return {
    findCoordinator: async (c: RequestContext, r: FindCoordinatorRequest) => {
      if (r.keyType !== KEY_TYPE_TRANSACTION) return t.findCoordinator(c, r);
      const keys = c.apiVersion < 4 ? [r.key] : r.coordinatorKeys;
      const allowed = keys.filter((k) => txnId(c, DESCRIBE, k));
      if (allowed.length === keys.length) return t.findCoordinator(c, r);
      const refused = {
        nodeId: -1,
        host: '',
        port: -1,
        errorCode: TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        errorMessage: null,
      };
      if (c.apiVersion < 4) return { throttleTimeMs: 0, ...refused, coordinators: [] };
      const res =
        allowed.length === 0 ? null : await t.findCoordinator(c, { ...r, coordinatorKeys: allowed });
      const found = new Map((res?.coordinators ?? []).map((x) => [x.key, x]));
      return {
        throttleTimeMs: 0,
        errorCode: 0,
        errorMessage: null,
        nodeId: -1,
        host: '',
        port: -1,
        coordinators: keys.map((key) => found.get(key) ?? { key, ...refused }),
      };
    },
    initProducerId: async (c: RequestContext, r: InitProducerIdRequest) =>
      r.transactionalId !== null && !txnId(c, WRITE, r.transactionalId)
        ? {
            throttleTimeMs: 0,
            errorCode: TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            producerId: -1n,
            producerEpoch: -1,
          }
        : t.initProducerId(c, r),
    addPartitionsToTxn: (c: RequestContext, r: AddPartitionsToTxnRequest) => addPartitionsToTxn(b, t, c, r),
    addOffsetsToTxn: async (c: RequestContext, r: AddOffsetsToTxnRequest) => {
      if (!txnId(c, WRITE, r.transactionalId))
        return { throttleTimeMs: 0, errorCode: TRANSACTIONAL_ID_AUTHORIZATION_FAILED };
      if (!auth.authorize(c, READ, ResourceType.GROUP, r.groupId))
        return { throttleTimeMs: 0, errorCode: GROUP_AUTHORIZATION_FAILED };
      return t.addOffsetsToTxn(c, r);
    },
    endTxn: async (c: RequestContext, r: EndTxnRequest) =>
      txnId(c, WRITE, r.transactionalId)
        ? t.endTxn(c, r)
        : {
            throttleTimeMs: 0,
            errorCode: TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            producerId: -1n,
            producerEpoch: -1,
          },
    writeTxnMarkers: async (
      c: RequestContext,
      r: WriteTxnMarkersRequest,
    ): Promise<WriteTxnMarkersResponse> =>
      auth.authorizeCluster(c, AclOperation.ALTER) || auth.authorizeCluster(c, AclOperation.CLUSTER_ACTION)
        ? t.writeTxnMarkers(c, r)
        : {
            markers: r.markers.map((m) => ({
              producerId: m.producerId,
              topics: m.topics.map((tp) => ({
                name: tp.name,
                partitions: tp.partitionIndexes.map((partitionIndex) => ({
                  partitionIndex,
                  errorCode: CLUSTER_AUTHORIZATION_FAILED,
                })),
              })),
            })),
          },
    describeTransactions: async (c: RequestContext, r: DescribeTransactionsRequest) => {
      const allowed = r.transactionalIds.filter((id) => txnId(c, DESCRIBE, id));
      const res = await t.describeTransactions(c, { ...r, transactionalIds: allowed });
      const byId = new Map(res.transactionStates.map((s) => [s.transactionalId, s]));
      return {
        ...res,
        transactionStates: r.transactionalIds.map((transactionalId) => {
          const s =
            byId.get(transactionalId) ??
            describeError(transactionalId, TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
          // Only the topics the principal may describe.
          const visible = auth.filter(
            c,
            DESCRIBE,
            ResourceType.TOPIC,
            s.topics.map((x) => x.topic),
          );
          return { ...s, topics: s.topics.filter((x) => visible.has(x.topic)) };
        }),
      };
    },
    listTransactions: async (c: RequestContext, r: ListTransactionsRequest) => {
      const res = await t.listTransactions(c, r);
      return {
        ...res,
        transactionStates: res.transactionStates.filter((s) => txnId(c, DESCRIBE, s.transactionalId)),
      };
    },
  };
}

/**
 * Up to v3 (clients): WRITE on the transactional id, else every partition
 * TRANSACTIONAL_ID_AUTHORIZATION_FAILED; WRITE on each topic, else the whole transaction fails —
 * TOPIC_AUTHORIZATION_FAILED on the refused topics, UNKNOWN_TOPIC_OR_PARTITION on unknown ones,
 * OPERATION_NOT_ATTEMPTED on the rest. From v4 (brokers): CLUSTER_ACTION on the cluster.
 */
async function addPartitionsToTxn(
  b: BrokerServices,
  t: TransactionApi,
  c: RequestContext,
  r: AddPartitionsToTxnRequest,
): Promise<AddPartitionsToTxnResponse> {
  const auth = b.authorization;
  if (c.apiVersion >= 4) {
    if (auth.authorizeCluster(c, AclOperation.CLUSTER_ACTION)) return t.addPartitionsToTxn(c, r);
    return {
      throttleTimeMs: 0,
      errorCode: CLUSTER_AUTHORIZATION_FAILED,
      resultsByTransaction: [],
      resultsByTopicV3AndBelow: [],
    };
  }
  const answer = (codeOf: (topic: string, partition: number) => number): AddPartitionsToTxnResponse => ({
    throttleTimeMs: 0,
    errorCode: 0,
    resultsByTransaction: [],
    resultsByTopicV3AndBelow: r.v3AndBelowTopics.map((tp) => ({
      name: tp.name,
      resultsByPartition: tp.partitions.map((partitionIndex) => ({
        partitionIndex,
        partitionErrorCode: codeOf(tp.name, partitionIndex),
      })),
    })),
  });
  if (!auth.authorize(c, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, r.v3AndBelowTransactionalId))
    return answer(() => TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
  const names = r.v3AndBelowTopics.map((tp) => tp.name);
  const writable = auth.filter(c, AclOperation.WRITE, ResourceType.TOPIC, names);
  if (names.every((n) => writable.has(n))) return t.addPartitionsToTxn(c, r);
  const image = b.metadata.image();
  return answer((topic, p) => {
    if (!writable.has(topic)) return TOPIC_AUTHORIZATION_FAILED;
    const known = image.topics.get(topic);
    return known === undefined || p < 0 || p >= known.partitions.length
      ? UNKNOWN_TOPIC_OR_PARTITION
      : OPERATION_NOT_ATTEMPTED;
  });
}
