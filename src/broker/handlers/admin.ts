/**
 * Topic administration (CreateTopics, with the created topics' configs; DeleteTopics,
 * CreatePartitions) through the controller, and DeleteRecords on the partition leaders. Duplicate
 * names in one request are refused with INVALID_REQUEST for each copy, as Kafka does. The three
 * topic mutations answer to the client's controller_mutation_rate (controller-mutation-quota.ts).
 */

import type { CreateTopicRequest, CreateTopicResult } from '../../metadata/cluster-metadata.js';
import { TOPIC_CONFIGS } from '../../metadata/config-defs.js';
import { ConfigSource, layersFor, resolveTopicConfig } from '../../metadata/config-resolve.js';
import { isInternalTopic } from '../../metadata/topic-name.js';
import type { CreatePartitionsRequest } from '../../protocol/generated/CreatePartitionsRequest.js';
import type { CreatePartitionsResponse } from '../../protocol/generated/CreatePartitionsResponse.js';
import type { CreateTopicsRequest } from '../../protocol/generated/CreateTopicsRequest.js';
import type {
  CreatableTopicConfigs,
  CreatableTopicResult,
  CreateTopicsResponse,
} from '../../protocol/generated/CreateTopicsResponse.js';
import type { DeleteRecordsRequest } from '../../protocol/generated/DeleteRecordsRequest.js';
import type { DeleteRecordsResponse } from '../../protocol/generated/DeleteRecordsResponse.js';
import type { DeleteTopicsRequest } from '../../protocol/generated/DeleteTopicsRequest.js';
import type {
  DeletableTopicResult,
  DeleteTopicsResponse,
} from '../../protocol/generated/DeleteTopicsResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import { ZERO_UUID } from '../../protocol/uuid.js';
import { awaitCondition } from '../../replication/purgatory.js';
import { AclOperation, ResourceType } from '../../security/acl.js';
import {
  type ControllerMutationQuota,
  STRICT_SINCE_VERSION,
  THROTTLED_TOPIC,
} from '../controller-mutation-quota.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';
import { errorCodeOf, notHostedError } from './partition-errors.js';

const {
  NOT_LEADER_OR_FOLLOWER,
  REQUEST_TIMED_OUT,
  INVALID_REQUEST,
  INVALID_TOPIC_EXCEPTION,
  TOPIC_DELETION_DISABLED,
  UNKNOWN_TOPIC_ID,
  TOPIC_AUTHORIZATION_FAILED,
} = ErrorCode;

function duplicates(names: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const n of names) (seen.has(n) ? dup : seen).add(n);
  return dup;
}

/**
 * The configs a created topic ends up with (KIP-525, CreateTopics v5+), as Kafka's controller
 * answers them: every topic config, sorted by name, each with its effective value (the request's
 * setting, else the broker layers' synonyms, scaled, else the default) and that value's source.
 */
function resultingConfigs(
  b: BrokerServices,
  requested: readonly { name: string; value: string | null }[],
): CreatableTopicConfigs[] {
  const topic = Object.fromEntries(requested.filter((c) => c.value !== null).map((c) => [c.name, c.value!]));
  const layers = { ...layersFor(b.metadata.image(), b.config.nodeId, b.config.staticProps), topic };
  return TOPIC_CONFIGS.map((d) => resolveTopicConfig(d.name, layers))
    .sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0))
    .map((c) => ({
      name: c.name,
      value: c.sensitive ? null : c.value,
      readOnly: c.readOnly,
      configSource: ConfigSource[c.source],
      isSensitive: c.sensitive,
    }));
}

/** The request's controller mutation quota; undefined when the broker keeps no client quotas. */
function mutationQuota(
  b: BrokerServices,
  ctx: RequestContext,
  strictSinceVersion: number,
): ControllerMutationQuota | undefined {
  return b.clientQuotas?.controllerMutationQuota(ctx, strictSinceVersion);
}

/** The response's throttle time: the longer of the mutation and request quotas', the connection muted for it. */
function throttleMutation(
  b: BrokerServices,
  ctx: RequestContext,
  quota: ControllerMutationQuota | undefined,
): number {
  if (b.clientQuotas === undefined || quota === undefined) return 0;
  return b.clientQuotas.throttleWithControllerQuota(ctx, quota, b.clock.nowMs());
}

/**
 * Creates the topics within the client's controller_mutation_rate. Kafka's controller records a
 * topic's partitions once the topic passed validation (a refused topic costs nothing), validate-only
 * requests included. When the quota may refuse a topic (strict, a limit for the client), a
 * validate-only round first learns which topics would be created and with how many partitions;
 * otherwise the topics are recorded as the controller created them.
 */
export async function createTopicsWithinQuota(
  b: BrokerServices,
  quota: ControllerMutationQuota | undefined,
  topics: CreateTopicRequest[],
  validateOnly: boolean,
): Promise<CreateTopicResult[]> {
  const controller = b.metadata.controller;
  if (quota === undefined || !quota.mayRefuse) {
    const results = await controller.createTopics(topics, validateOnly);
    const nowMs = b.clock.nowMs();
    if (quota !== undefined && !quota.unbounded)
      for (const r of results) if (r.errorCode === 0) quota.record(r.numPartitions, nowMs);
    return results;
  }
  const checked = new Map((await controller.createTopics(topics, true)).map((r) => [r.name, r]));
  const nowMs = b.clock.nowMs();
  const refused = new Set<string>();
  for (const t of topics) {
    const r = checked.get(t.name);
    if (r?.errorCode === 0 && !quota.record(r.numPartitions, nowMs)) refused.add(t.name);
  }
  const created = validateOnly
    ? [...checked.values()]
    : await controller.createTopics(
        topics.filter((t) => !refused.has(t.name)),
        false,
      );
  const throttled = [...refused].map((name) => ({
    name,
    topicId: ZERO_UUID,
    numPartitions: -1,
    replicationFactor: -1,
    ...THROTTLED_TOPIC,
  }));
  return [...created.filter((r) => !refused.has(r.name)), ...throttled];
}

export async function handleCreateTopics(
  b: BrokerServices,
  ctx: RequestContext,
  req: CreateTopicsRequest,
): Promise<CreateTopicsResponse> {
  const quota = mutationQuota(b, ctx, STRICT_SINCE_VERSION.createTopics);
  const dup = duplicates(req.topics.map((t) => t.name));
  // Kafka: CREATE on the cluster, else on each topic; the configs of a created topic are shown
  // only with DESCRIBE_CONFIGS on it.
  const auth = b.authorization;
  const names = req.topics.map((t) => t.name);
  const creatable = auth.authorizeCluster(ctx, AclOperation.CREATE)
    ? new Set(names)
    : auth.filter(ctx, AclOperation.CREATE, ResourceType.TOPIC, names);
  const configsVisible = auth.filter(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, names);
  const unique = req.topics.filter((t) => !dup.has(t.name) && creatable.has(t.name));
  const results = await createTopicsWithinQuota(
    b,
    quota,
    unique.map((t) => ({
      name: t.name,
      numPartitions: t.numPartitions,
      replicationFactor: t.replicationFactor,
      ...(t.assignments.length > 0 && {
        assignments: new Map(t.assignments.map((a) => [a.partitionIndex, a.brokerIds])),
      }),
      configs: Object.fromEntries(t.configs.filter((c) => c.value !== null).map((c) => [c.name, c.value!])),
    })),
    req.validateOnly,
  );
  const byName = new Map(results.map((r) => [r.name, r]));
  const seen = new Set<string>();
  const topics: CreatableTopicResult[] = [];
  for (const t of req.topics) {
    // Kafka answers a duplicated name once.
    if (seen.has(t.name)) continue;
    seen.add(t.name);
    const r = byName.get(t.name);
    const base = {
      name: t.name,
      topicId: ZERO_UUID,
      topicConfigErrorCode: 0,
      numPartitions: -1,
      replicationFactor: -1,
      configs: [],
    };
    if (!dup.has(t.name) && !creatable.has(t.name)) {
      topics.push({ ...base, errorCode: TOPIC_AUTHORIZATION_FAILED, errorMessage: 'Authorization failed.' });
      continue;
    }
    if (!r) {
      topics.push({
        ...base,
        errorCode: INVALID_REQUEST,
        errorMessage: `Create topics request from client contains multiple entries for the topic ${t.name}.`,
      });
      continue;
    }
    topics.push({
      ...base,
      errorCode: r.errorCode,
      errorMessage: r.errorMessage,
      // Kafka's controller gives the partition count and replication factor with the configs
      // only: without DESCRIBE_CONFIGS on the topic they stay -1.
      ...(r.errorCode === 0 && {
        topicId: r.topicId,
        ...(configsVisible.has(t.name)
          ? {
              numPartitions: r.numPartitions,
              replicationFactor: r.replicationFactor,
              configs: resultingConfigs(b, t.configs),
            }
          : { topicConfigErrorCode: TOPIC_AUTHORIZATION_FAILED }),
      }),
    });
  }
  return { throttleTimeMs: throttleMutation(b, ctx, quota), topics };
}

export async function handleDeleteTopics(
  b: BrokerServices,
  ctx: RequestContext,
  req: DeleteTopicsRequest,
): Promise<DeleteTopicsResponse> {
  const image = b.metadata.image();
  const byId = new Map([...image.topics.values()].map((t) => [t.topicId, t.name]));
  // v6 names topics by name or id; before, by name only.
  const wanted: { name: string | null; topicId: string }[] =
    ctx.apiVersion >= 6 ? req.topics : req.topicNames.map((name) => ({ name, topicId: ZERO_UUID }));
  const responses: DeletableTopicResult[] = [];
  const toDelete: string[] = [];
  // Kafka: DELETE on the cluster, else on each topic; a topic named by id whose name the client
  // may not DESCRIBE is refused without its name.
  const auth = b.authorization;
  const named = wanted.map((w) => w.name ?? byId.get(w.topicId)).filter((n) => n !== undefined);
  const everything = auth.authorizeCluster(ctx, AclOperation.DELETE);
  const deletable = everything
    ? new Set(named)
    : auth.filter(ctx, AclOperation.DELETE, ResourceType.TOPIC, named);
  const describable = everything
    ? deletable
    : auth.filter(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, named);
  for (const w of wanted) {
    const name = w.name ?? byId.get(w.topicId) ?? null;
    const base = { name, topicId: w.topicId, errorCode: 0, errorMessage: null as string | null };
    if (!b.config.deleteTopicEnable) {
      responses.push({ ...base, errorCode: TOPIC_DELETION_DISABLED });
    } else if (name === null) {
      responses.push({ ...base, errorCode: UNKNOWN_TOPIC_ID });
    } else if (!deletable.has(name)) {
      const hidden = w.name === null && !describable.has(name);
      responses.push({
        ...base,
        name: hidden ? null : name,
        topicId: w.name === null ? w.topicId : ZERO_UUID,
        errorCode: TOPIC_AUTHORIZATION_FAILED,
      });
    } else {
      responses.push({ ...base, topicId: image.topics.get(name)?.topicId ?? w.topicId });
      toDelete.push(name);
    }
  }
  const dup = duplicates(toDelete);
  const quota = mutationQuota(b, ctx, STRICT_SINCE_VERSION.deleteTopics);
  // Kafka's controller records a topic's partitions before deleting it; an unknown topic costs nothing.
  const names = [...new Set(toDelete)].filter((n) => !dup.has(n));
  const refused = recordEach(
    b,
    quota,
    names.map((name) => [name, image.topics.get(name)?.partitions.length ?? null]),
  );
  const results = await b.metadata.controller.deleteTopics(names.filter((n) => !refused.has(n)));
  const byName = new Map<string, { errorCode: number; errorMessage: string | null }>(
    results.map((r) => [r.name, r]),
  );
  for (const name of refused) byName.set(name, THROTTLED_TOPIC);
  for (const r of responses) {
    if (r.errorCode !== 0 || r.name === null) continue;
    const res = byName.get(r.name);
    if (!res) {
      r.errorCode = INVALID_REQUEST;
      r.errorMessage = `Duplicate topic name ${r.name} in the request`;
    } else {
      r.errorCode = res.errorCode;
      r.errorMessage = res.errorMessage;
      if (res.errorCode === 0)
        b.logger.info(`deleted topic ${r.name} at the request of ${ctx.connection.remoteAddress}`);
    }
  }
  return { throttleTimeMs: throttleMutation(b, ctx, quota), responses };
}

/**
 * Records each topic's partition mutations, in the request's order, against the client's
 * controller_mutation_rate (`partitions` null: the topic fails before Kafka's controller counts
 * it); returns the topics refused, which are not to be changed.
 */
function recordEach(
  b: BrokerServices,
  quota: ControllerMutationQuota | undefined,
  topics: readonly (readonly [name: string, partitions: number | null])[],
): Set<string> {
  const refused = new Set<string>();
  if (quota === undefined || quota.unbounded) return refused;
  const nowMs = b.clock.nowMs();
  for (const [name, n] of topics) if (n !== null && !quota.record(n, nowMs)) refused.add(name);
  return refused;
}

export async function handleCreatePartitions(
  b: BrokerServices,
  ctx: RequestContext,
  req: CreatePartitionsRequest,
): Promise<CreatePartitionsResponse> {
  const dup = duplicates(req.topics.map((t) => t.name));
  const quota = mutationQuota(b, ctx, STRICT_SINCE_VERSION.createPartitions);
  const image = b.metadata.image();
  // Kafka: ALTER on each topic.
  const alterable = b.authorization.filter(
    ctx,
    AclOperation.ALTER,
    ResourceType.TOPIC,
    req.topics.map((t) => t.name),
  );
  const wanted = req.topics.filter((t) => !dup.has(t.name) && alterable.has(t.name));
  // Kafka's controller records the partitions added once the topic exists, the count is an
  // increase and the assignments (if any) match it — before placing them.
  const refused = recordEach(
    b,
    quota,
    wanted.map((t) => {
      const current = image.topics.get(t.name)?.partitions.length ?? 0;
      const added = t.count - current;
      const counted = current > 0 && added > 0 && (t.assignments === null || t.assignments.length === added);
      return [t.name, counted ? added : null];
    }),
  );
  const results = await b.metadata.controller.createPartitions(
    wanted
      .filter((t) => !refused.has(t.name))
      .map((t) => ({
        name: t.name,
        totalCount: t.count,
        ...(t.assignments !== null && { assignments: t.assignments.map((a) => a.brokerIds) }),
      })),
    req.validateOnly,
  );
  const byName = new Map<string, { errorCode: number; errorMessage: string | null }>(
    results.map((r) => [r.name, r]),
  );
  for (const name of refused) byName.set(name, THROTTLED_TOPIC);
  return {
    throttleTimeMs: throttleMutation(b, ctx, quota),
    results: [...new Set(req.topics.map((t) => t.name))].map((name) => {
      const r = byName.get(name);
      if (!dup.has(name) && !alterable.has(name))
        return { name, errorCode: TOPIC_AUTHORIZATION_FAILED, errorMessage: null };
      if (!r)
        return { name, errorCode: INVALID_REQUEST, errorMessage: `Duplicate topic ${name} in the request` };
      return { name, errorCode: r.errorCode, errorMessage: r.errorMessage };
    }),
  };
}

export async function handleDeleteRecords(
  b: BrokerServices,
  ctx: RequestContext,
  req: DeleteRecordsRequest,
): Promise<DeleteRecordsResponse> {
  // Kafka: DELETE on each topic.
  const deletable = b.authorization.filter(
    ctx,
    AclOperation.DELETE,
    ResourceType.TOPIC,
    req.topics.map((t) => t.name),
  );
  return {
    throttleTimeMs: 0,
    topics: await Promise.all(
      req.topics.map(async (t) => ({
        name: t.name,
        partitions: await Promise.all(
          t.partitions.map(async (rp) => {
            const base = { partitionIndex: rp.partitionIndex, lowWatermark: -1n, errorCode: 0 };
            if (!deletable.has(t.name)) return { ...base, errorCode: TOPIC_AUTHORIZATION_FAILED };
            if (isInternalTopic(t.name)) {
              // Kafka refuses to delete records of an internal topic before looking at the partition.
              return { ...base, errorCode: INVALID_TOPIC_EXCEPTION };
            }
            const p = b.replicaManager.getPartition(t.name, rp.partitionIndex);
            if (!p) return { ...base, errorCode: notHostedError(b, t.name, rp.partitionIndex) };
            try {
              const { requestedOffset, moved } = p.deleteRecordsOnLeader(rp.offset);
              if (moved) {
                // Answered only once the new log start is on disk: a crash cannot bring the
                // deleted records back (Kafka checkpoints it once a minute).
                await b.replicaManager.whenLogStartOffsetsPersisted();
              }
              const leader = p.leaderState;
              if (!leader) return { ...base, errorCode: NOT_LEADER_OR_FOLLOWER };
              // Answered once every live replica's log start reached it (Kafka's
              // DelayedDeleteRecords on the low watermark), or REQUEST_TIMED_OUT.
              const reached = (): boolean => !leader.isLeader || leader.lowWatermark() >= requestedOffset;
              if (!reached()) {
                await awaitCondition(
                  b.replicaManager.replication.purgatory,
                  b.scheduler,
                  [p.key],
                  req.timeoutMs,
                  reached,
                  (abort) => ctx.connection.whenClosed(abort),
                );
              }
              if (!leader.isLeader) return { ...base, errorCode: NOT_LEADER_OR_FOLLOWER };
              const low = leader.lowWatermark();
              if (low < requestedOffset) return { ...base, lowWatermark: low, errorCode: REQUEST_TIMED_OUT };
              return { ...base, lowWatermark: low };
            } catch (e) {
              return {
                ...base,
                errorCode: errorCodeOf(e, b, `delete records of ${t.name}-${rp.partitionIndex}`).code,
              };
            }
          }),
        ),
      })),
    ),
  };
}
