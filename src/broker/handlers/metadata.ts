/**
 * Metadata (Kafka's KafkaApis.handleTopicMetadataRequest): brokers, controller, and the requested
 * topics — all of them for a null list (v0: an empty list). A missing topic is created when the
 * request allows it (v4+, always before) and auto.create.topics.enable is set; since a controller
 * call resolves once this broker's image shows the change, the answer already carries the new
 * topic's partitions instead of Kafka's LEADER_NOT_AVAILABLE round trip.
 */
import { LIMITS } from '../../common/limits.js';
import { topicPartitionKey } from '../../common/topic-partition.js';
import {
  endpointOf,
  isReplicaOnline,
  type MetadataImage,
  type TopicInfo,
} from '../../metadata/cluster-metadata.js';
import { validateTopicName } from '../../metadata/topic-name.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { MetadataRequest } from '../../protocol/generated/MetadataRequest.js';
import {
  defaultMetadataResponse,
  defaultMetadataResponseTopic,
  type MetadataResponse,
  type MetadataResponseTopic,
} from '../../protocol/generated/MetadataResponse.js';
import { ZERO_UUID } from '../../protocol/uuid.js';
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../security/acl.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';
import { createTopicsWithinQuota } from './admin.js';
import { controllerIdForClients } from './cluster.js';

const {
  UNKNOWN_TOPIC_OR_PARTITION,
  LEADER_NOT_AVAILABLE,
  INVALID_TOPIC_EXCEPTION,
  UNKNOWN_TOPIC_ID,
  LISTENER_NOT_FOUND,
  TOPIC_AUTHORIZATION_FAILED,
} = ErrorCode;
/** "Not asked": Kafka's authorized-operations fields when the request did not include them. */
const INT32_MIN = -2147483648;

/**
 * A partition as the client's listener sees it (Kafka's KRaftMetadataCache): a live leader
 * without an endpoint on that listener is no leader for this client — LISTENER_NOT_FOUND from v6,
 * LEADER_NOT_AVAILABLE before.
 */
function topicResponse(
  image: MetadataImage,
  t: TopicInfo,
  listenerName: string,
  apiVersion: number,
): MetadataResponseTopic {
  return {
    ...defaultMetadataResponseTopic(),
    name: t.name,
    topicId: t.topicId,
    isInternal: t.internal,
    partitions: t.partitions.map((p) => {
      const leader = p.leader === -1 ? undefined : image.brokers.get(p.leader);
      const reachable = leader !== undefined && endpointOf(leader, listenerName) !== undefined;
      const errorCode = reachable
        ? 0
        : leader !== undefined && apiVersion >= 6
          ? LISTENER_NOT_FOUND
          : LEADER_NOT_AVAILABLE;
      return {
        errorCode,
        partitionIndex: p.partition,
        // No endpoint for this listener: no leader the client could reach (Kafka's NO_LEADER_ID).
        leaderId: leader !== undefined && !reachable ? -1 : p.leader,
        leaderEpoch: p.leaderEpoch,
        replicaNodes: [...p.replicas],
        isrNodes: [...p.isr],
        // Kafka's offline replicas: on a broker that is down, or in a failed log dir of its broker.
        offlineReplicas: p.replicas.filter(
          (id) => !isReplicaOnline(image.brokers, id, topicPartitionKey(t.name, p.partition)),
        ),
      };
    }),
  };
}

function errorTopic(name: string | null, topicId: string, errorCode: number): MetadataResponseTopic {
  return { ...defaultMetadataResponseTopic(), name, topicId, errorCode };
}

export async function handleMetadata(
  b: BrokerServices,
  ctx: RequestContext,
  req: MetadataRequest,
): Promise<MetadataResponse> {
  const auth = b.authorization;
  let image = b.metadata.image();
  const listenerName = ctx.connection.listenerName;
  const topicOf = (t: TopicInfo) => topicResponse(image, t, listenerName, ctx.apiVersion);
  const all = req.topics === null || (ctx.apiVersion === 0 && req.topics.length === 0);
  let topics: MetadataResponseTopic[];
  // Kafka's order: the topics answered, then those refused creation, then those refused DESCRIBE
  // (whose existence is not disclosed: all-topics requests leave them out).
  const refused: MetadataResponseTopic[] = [];
  if (all) {
    const describable = auth.filter(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, image.topics.keys());
    topics = [...image.topics.values()].filter((t) => describable.has(t.name)).map((t) => topicOf(t));
  } else {
    const byId = new Map([...image.topics.values()].map((t) => [t.topicId, t]));
    const nameOf = (rt: { name: string | null; topicId: string }): string | null =>
      rt.name ?? byId.get(rt.topicId)?.name ?? null;
    const describable = auth.filter(
      ctx,
      AclOperation.DESCRIBE,
      ResourceType.TOPIC,
      req.topics!.map(nameOf).filter((n) => n !== null),
    );
    const allowCreate = (ctx.apiVersion < 4 || req.allowAutoTopicCreation) && b.config.autoCreateTopicsEnable;
    const missing = new Set<string>();
    for (const t of req.topics!) {
      if (
        t.name !== null &&
        describable.has(t.name) &&
        !image.topics.has(t.name) &&
        validateTopicName(t.name).errorCode === ErrorCode.NONE
      )
        missing.add(t.name);
    }
    // Creating needs CREATE on the cluster, else on each topic; the others are refused.
    const creatable =
      missing.size === 0 || auth.authorizeCluster(ctx, AclOperation.CREATE)
        ? missing
        : auth.filter(ctx, AclOperation.CREATE, ResourceType.TOPIC, missing);
    if (allowCreate && creatable.size > 0) {
      const names = [...creatable].slice(0, LIMITS.autoCreatedTopicsPerRequest);
      // Kafka's broker sends the creation to the controller as the client's latest-version
      // CreateTopics: the client's controller_mutation_rate applies, strictly; a refused topic is
      // not created (LEADER_NOT_AVAILABLE below, for the client to ask again) and, the request
      // being forwarded, the Metadata response is not throttled for it.
      const results = await createTopicsWithinQuota(
        b,
        b.clientQuotas?.controllerMutationQuota(ctx, 0),
        names.map((name) => ({ name, numPartitions: -1, replicationFactor: -1, configs: {} })),
        false,
      );
      for (const r of results) {
        if (r.errorCode === 0)
          b.logger.info(
            `auto-created topic ${r.name} (${r.numPartitions} partitions) for ${ctx.connection.remoteAddress}`,
          );
      }
      image = b.metadata.image();
    }
    const createRefused: MetadataResponseTopic[] = [];
    topics = [];
    for (const rt of req.topics!) {
      const name = nameOf(rt);
      if (rt.name === null && name === null) {
        topics.push(errorTopic(null, rt.topicId, UNKNOWN_TOPIC_ID));
        continue;
      }
      if (!describable.has(name!)) {
        // Topic ids are not secret; a name asked for is not confirmed with one.
        refused.push(
          errorTopic(rt.name, rt.name === null ? rt.topicId : ZERO_UUID, TOPIC_AUTHORIZATION_FAILED),
        );
        continue;
      }
      if (allowCreate && missing.has(name!) && !creatable.has(name!)) {
        createRefused.push(errorTopic(name, ZERO_UUID, TOPIC_AUTHORIZATION_FAILED));
        continue;
      }
      if (rt.name === null) {
        const t = image.topics.get(name!);
        topics.push(t ? topicOf(t) : errorTopic(null, rt.topicId, UNKNOWN_TOPIC_ID));
        continue;
      }
      if (validateTopicName(rt.name).errorCode !== ErrorCode.NONE) {
        topics.push(errorTopic(rt.name, ZERO_UUID, INVALID_TOPIC_EXCEPTION));
        continue;
      }
      const t = image.topics.get(rt.name);
      // A creation still in flight elsewhere (store-backed metadata) reads as LEADER_NOT_AVAILABLE, as in Kafka.
      topics.push(
        t
          ? topicOf(t)
          : errorTopic(rt.name, ZERO_UUID, allowCreate ? LEADER_NOT_AVAILABLE : UNKNOWN_TOPIC_OR_PARTITION),
      );
    }
    refused.unshift(...createRefused);
  }
  const clusterAuthorizedOperations = authorizedOperations(b, ctx, req, topics);
  return {
    ...defaultMetadataResponse(),
    // Only brokers with an endpoint on the listener the request came in on, that endpoint's address.
    brokers: [...image.brokers.values()]
      .sort((a, b) => a.id - b.id)
      .flatMap((br) => {
        const e = endpointOf(br, listenerName);
        return e === undefined ? [] : [{ nodeId: br.id, host: e.host, port: e.port, rack: br.rack }];
      }),
    clusterId: image.clusterId,
    controllerId: controllerIdForClients(b, image),
    topics: refused.length === 0 ? topics : [...topics, ...refused],
    clusterAuthorizedOperations,
  };
}

/**
 * v8+: the cluster's authorized operations when asked (v8-10; none without DESCRIBE on it), and
 * each answered topic's when asked; INT32_MIN otherwise.
 */
function authorizedOperations(
  b: BrokerServices,
  ctx: RequestContext,
  req: MetadataRequest,
  topics: MetadataResponseTopic[],
): number {
  const auth = b.authorization;
  if (ctx.apiVersion < 8) return INT32_MIN;
  if (req.includeTopicAuthorizedOperations)
    for (const t of topics)
      if (t.errorCode === 0 && t.name !== null)
        t.topicAuthorizedOperations = auth.authorizedOperations(ctx, ResourceType.TOPIC, t.name);
  if (!req.includeClusterAuthorizedOperations) return INT32_MIN;
  return auth.authorizeCluster(ctx, AclOperation.DESCRIBE)
    ? auth.authorizedOperations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
    : 0;
}
