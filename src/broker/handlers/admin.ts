/**
 * Topic administration (CreateTopics, with the created topics' configs; DeleteTopics,
 * CreatePartitions) through the controller, and DeleteRecords on the partition leaders. Duplicate
 * names in one request are refused with INVALID_REQUEST for each copy, as Kafka does.
 */

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
import type { BrokerServices, RequestContext } from '../handler-context.js';
import { errorCodeOf, notHostedError } from './partition-errors.js';

const {
  NOT_LEADER_OR_FOLLOWER,
  REQUEST_TIMED_OUT,
  INVALID_REQUEST,
  INVALID_TOPIC_EXCEPTION,
  TOPIC_DELETION_DISABLED,
  UNKNOWN_TOPIC_ID,
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

export async function handleCreateTopics(
  b: BrokerServices,
  _ctx: RequestContext,
  req: CreateTopicsRequest,
): Promise<CreateTopicsResponse> {
  const dup = duplicates(req.topics.map((t) => t.name));
  const unique = req.topics.filter((t) => !dup.has(t.name));
  const results = await b.metadata.controller.createTopics(
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
      ...(r.errorCode === 0 && {
        topicId: r.topicId,
        numPartitions: r.numPartitions,
        replicationFactor: r.replicationFactor,
        configs: resultingConfigs(b, t.configs),
      }),
    });
  }
  return { throttleTimeMs: 0, topics };
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
  for (const w of wanted) {
    const name = w.name ?? byId.get(w.topicId) ?? null;
    const base = { name, topicId: w.topicId, errorCode: 0, errorMessage: null as string | null };
    if (!b.config.deleteTopicEnable) {
      responses.push({ ...base, errorCode: TOPIC_DELETION_DISABLED });
    } else if (name === null) {
      responses.push({ ...base, errorCode: UNKNOWN_TOPIC_ID });
    } else {
      responses.push({ ...base, topicId: image.topics.get(name)?.topicId ?? w.topicId });
      toDelete.push(name);
    }
  }
  const dup = duplicates(toDelete);
  const results = await b.metadata.controller.deleteTopics([...new Set(toDelete)].filter((n) => !dup.has(n)));
  const byName = new Map(results.map((r) => [r.name, r]));
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
  return { throttleTimeMs: 0, responses };
}

export async function handleCreatePartitions(
  b: BrokerServices,
  _ctx: RequestContext,
  req: CreatePartitionsRequest,
): Promise<CreatePartitionsResponse> {
  const dup = duplicates(req.topics.map((t) => t.name));
  const results = await b.metadata.controller.createPartitions(
    req.topics
      .filter((t) => !dup.has(t.name))
      .map((t) => ({
        name: t.name,
        totalCount: t.count,
        ...(t.assignments !== null && { assignments: t.assignments.map((a) => a.brokerIds) }),
      })),
    req.validateOnly,
  );
  const byName = new Map(results.map((r) => [r.name, r]));
  return {
    throttleTimeMs: 0,
    results: [...new Set(req.topics.map((t) => t.name))].map((name) => {
      const r = byName.get(name);
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
  return {
    throttleTimeMs: 0,
    topics: await Promise.all(
      req.topics.map(async (t) => ({
        name: t.name,
        partitions: await Promise.all(
          t.partitions.map(async (rp) => {
            const base = { partitionIndex: rp.partitionIndex, lowWatermark: -1n, errorCode: 0 };
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
