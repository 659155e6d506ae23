/** ApiVersions, DescribeCluster and InitProducerId: answers about the broker and the cluster. */

import { endpointOf, type MetadataImage } from '../../metadata/cluster-metadata.js';
import type { ApiVersionsRequest } from '../../protocol/generated/ApiVersionsRequest.js';
import {
  type ApiVersion,
  type ApiVersionsResponse,
  defaultApiVersionsResponse,
} from '../../protocol/generated/ApiVersionsResponse.js';
import type { DescribeClusterRequest } from '../../protocol/generated/DescribeClusterRequest.js';
import type { DescribeClusterResponse } from '../../protocol/generated/DescribeClusterResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { InitProducerIdRequest } from '../../protocol/generated/InitProducerIdRequest.js';
import type { InitProducerIdResponse } from '../../protocol/generated/InitProducerIdResponse.js';
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../security/acl.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';

const {
  UNSUPPORTED_VERSION,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
  UNSUPPORTED_ENDPOINT_TYPE,
  CLUSTER_AUTHORIZATION_FAILED,
} = ErrorCode;

const INT32_MIN = -2147483648;
const ENDPOINT_TYPE_BROKER = 1;

export function apiVersionsResponse(apiKeys: ApiVersion[], errorCode = 0): ApiVersionsResponse {
  return { ...defaultApiVersionsResponse(), errorCode, apiKeys };
}

/** ApiVersions for a version the broker does not know: v0 body with UNSUPPORTED_VERSION and the ranges. */
export function unsupportedApiVersionsResponse(apiKeys: ApiVersion[]): ApiVersionsResponse {
  return apiVersionsResponse(apiKeys, UNSUPPORTED_VERSION);
}

export async function handleApiVersions(
  apiKeys: () => ApiVersion[],
  _ctx: RequestContext,
  _req: ApiVersionsRequest,
): Promise<ApiVersionsResponse> {
  return apiVersionsResponse(apiKeys());
}

/**
 * The controller id Metadata and DescribeCluster give clients: the active controller's broker while
 * it is live, else — while a controller is being elected, or its broker is fenced — a random live
 * broker, as Kafka's KRaft brokers always answer (KRaftMetadataCache.getRandomAliveBrokerId,
 * KIP-590). Every Skiff broker takes the requests meant for the controller (CreateTopics, configs,
 * ACLs…) and passes them on through the metadata store, so any live broker serves them; naming -1
 * made KafkaJS's admin give up at once ("Broker -1 not found") on a broker just started. -1 only
 * when no broker is live.
 */
export function controllerIdForClients(b: BrokerServices, image: MetadataImage): number {
  if (image.brokers.has(image.controllerId)) return image.controllerId;
  const live = [...image.brokers.keys()];
  return live.length === 0 ? -1 : live[b.randomInt(live.length)]!;
}

export async function handleDescribeCluster(
  b: BrokerServices,
  ctx: RequestContext,
  req: DescribeClusterRequest,
): Promise<DescribeClusterResponse> {
  const image = b.metadata.image();
  const base: DescribeClusterResponse = {
    throttleTimeMs: 0,
    errorCode: 0,
    errorMessage: null,
    endpointType: req.endpointType,
    clusterId: image.clusterId,
    controllerId: controllerIdForClients(b, image),
    brokers: [],
    clusterAuthorizedOperations: INT32_MIN,
  };
  if (req.endpointType !== ENDPOINT_TYPE_BROKER) {
    return {
      ...base,
      errorCode: UNSUPPORTED_ENDPOINT_TYPE,
      errorMessage: 'The broker only handles broker endpoints.',
    };
  }
  // Kafka's AuthHelper.computeDescribeClusterResponse: the operations only when asked, and none
  // without DESCRIBE on the cluster.
  const auth = b.authorization;
  const clusterAuthorizedOperations = !req.includeClusterAuthorizedOperations
    ? INT32_MIN
    : auth.authorizeCluster(ctx, AclOperation.DESCRIBE)
      ? auth.authorizedOperations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
      : 0;
  return {
    ...base,
    // As Metadata: the endpoints of the listener the request came in on.
    clusterAuthorizedOperations,
    brokers: [...image.brokers.values()]
      .sort((a, b) => a.id - b.id)
      .flatMap((br) => {
        const e = endpointOf(br, ctx.connection.listenerName);
        return e === undefined ? [] : [{ brokerId: br.id, host: e.host, port: e.port, rack: br.rack }];
      }),
  };
}

/**
 * Idempotent producers get a fresh producer id at epoch 0. The router sends InitProducerId with a
 * transactional id to the transaction coordinator (TransactionApi.initProducerId), which hands
 * only those without one here.
 */
export async function handleInitProducerId(
  b: BrokerServices,
  ctx: RequestContext,
  req: InitProducerIdRequest,
): Promise<InitProducerIdResponse> {
  const refused = initProducerIdRefusal(b, ctx, req.transactionalId);
  if (refused !== 0) return { throttleTimeMs: 0, errorCode: refused, producerId: -1n, producerEpoch: -1 };
  return { throttleTimeMs: 0, errorCode: 0, producerId: b.nextProducerId(), producerEpoch: 0 };
}

/**
 * Kafka's checks of InitProducerId: WRITE on the TRANSACTIONAL_ID for a transactional producer;
 * for an idempotent one IDEMPOTENT_WRITE on the cluster, or WRITE on some topic.
 */
function initProducerIdRefusal(
  b: BrokerServices,
  ctx: RequestContext,
  transactionalId: string | null,
): number {
  const auth = b.authorization;
  if (transactionalId !== null)
    return auth.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactionalId)
      ? 0
      : TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
  return auth.authorizeCluster(ctx, AclOperation.IDEMPOTENT_WRITE) ||
    auth.authorizeByResourceType(ctx, AclOperation.WRITE, ResourceType.TOPIC)
    ? 0
    : CLUSTER_AUTHORIZATION_FAILED;
}
