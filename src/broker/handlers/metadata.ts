/**
 * Metadata (Kafka's KafkaApis.handleTopicMetadataRequest): brokers, controller, and the requested
 * topics — all of them for a null list (v0: an empty list). A missing topic is created when the
 * request allows it (v4+, always before) and auto.create.topics.enable is set; since a controller
 * call resolves once this broker's image shows the change, the answer already carries the new
 * topic's partitions instead of Kafka's LEADER_NOT_AVAILABLE round trip.
 */
import { LIMITS } from '../../common/limits.js';
import type { MetadataImage, TopicInfo } from '../../metadata/cluster-metadata.js';
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

const { UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, INVALID_TOPIC_EXCEPTION, UNKNOWN_TOPIC_ID } =
  ErrorCode;

function topicResponse(image: MetadataImage, t: TopicInfo): MetadataResponseTopic {
  return {
    ...defaultMetadataResponseTopic(),
    name: t.name,
    topicId: t.topicId,
    isInternal: t.internal,
    partitions: t.partitions.map((p) => ({
      errorCode: p.leader === -1 || !image.brokers.has(p.leader) ? LEADER_NOT_AVAILABLE : 0,
      partitionIndex: p.partition,
      leaderId: p.leader,
      leaderEpoch: p.leaderEpoch,
      replicaNodes: [...p.replicas],
      isrNodes: [...p.isr],
      offlineReplicas: p.replicas.filter((id) => !image.brokers.has(id)),
    })),
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
  const all = req.topics === null || (ctx.apiVersion === 0 && req.topics.length === 0);
  let topics: MetadataResponseTopic[];
  if (all) {
    topics = [...image.topics.values()].map((t) => topicResponse(image, t));
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
        return t ? topicResponse(image, t) : errorTopic(null, rt.topicId, UNKNOWN_TOPIC_ID);
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
      return topicResponse(image, t);
    });
  }
  return {
    ...defaultMetadataResponse(),
    brokers: [...image.brokers.values()]
      .sort((a, b) => a.id - b.id)
      .map((br) => ({ nodeId: br.id, host: br.host, port: br.port, rack: br.rack })),
    clusterId: image.clusterId,
    controllerId: image.controllerId,
    topics,
  };
}
