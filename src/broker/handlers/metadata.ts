/**
 * Metadata (Kafka's KafkaApis.handleTopicMetadataRequest): brokers, controller, and the requested
 * topics — all of them for a null list (v0: an empty list). A missing topic is created when the
 * request allows it (v4+, always before) and auto.create.topics.enable is set; since a controller
 * call resolves once this broker's image shows the change, the answer already carries the new
 * topic's partitions instead of Kafka's LEADER_NOT_AVAILABLE round trip.
 */
import { LIMITS } from '../../common/limits.js';
import { endpointOf, type MetadataImage, type TopicInfo } from '../../metadata/cluster-metadata.js';
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
import type { BrokerServices, RequestContext } from '../handler-context.js';
import { createTopicsWithinQuota } from './admin.js';

const {
  UNKNOWN_TOPIC_OR_PARTITION,
  LEADER_NOT_AVAILABLE,
  INVALID_TOPIC_EXCEPTION,
  UNKNOWN_TOPIC_ID,
  LISTENER_NOT_FOUND,
} = ErrorCode;

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
        offlineReplicas: p.replicas.filter((id) => !image.brokers.has(id)),
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
  let image = b.metadata.image();
  const listenerName = ctx.connection.listenerName;
  const topicOf = (t: TopicInfo) => topicResponse(image, t, listenerName, ctx.apiVersion);
  const all = req.topics === null || (ctx.apiVersion === 0 && req.topics.length === 0);
  let topics: MetadataResponseTopic[];
  if (all) {
    topics = [...image.topics.values()].map(topicOf);
  } else {
    const allowCreate = (ctx.apiVersion < 4 || req.allowAutoTopicCreation) && b.config.autoCreateTopicsEnable;
    const missing = new Set<string>();
    for (const t of req.topics!) {
      if (
        t.name !== null &&
        !image.topics.has(t.name) &&
        validateTopicName(t.name).errorCode === ErrorCode.NONE
      )
        missing.add(t.name);
    }
    if (allowCreate && missing.size > 0) {
      const names = [...missing].slice(0, LIMITS.autoCreatedTopicsPerRequest);
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
    const byId = new Map([...image.topics.values()].map((t) => [t.topicId, t]));
    topics = req.topics!.map((rt) => {
      if (rt.name === null) {
        const t = byId.get(rt.topicId);
        return t ? topicOf(t) : errorTopic(null, rt.topicId, UNKNOWN_TOPIC_ID);
      }
      if (validateTopicName(rt.name).errorCode !== ErrorCode.NONE)
        return errorTopic(rt.name, ZERO_UUID, INVALID_TOPIC_EXCEPTION);
      const t = image.topics.get(rt.name);
      // A creation still in flight elsewhere (store-backed metadata) reads as LEADER_NOT_AVAILABLE, as in Kafka.
      if (!t)
        return errorTopic(
          rt.name,
          ZERO_UUID,
          allowCreate ? LEADER_NOT_AVAILABLE : UNKNOWN_TOPIC_OR_PARTITION,
        );
      return topicOf(t);
    });
  }
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
    controllerId: image.controllerId,
    topics,
  };
}
