import { LIMITS } from '../common/limits.js';
import { type AclRecord, aclId, aclRecordOf } from '../metadata/acls.js';
import { kafkaQuotaValueOrder, validateClientQuotas } from '../metadata/client-quotas.js';
import type { ApiResult, ConfigMap, CreateTopicResult, MetadataImage } from '../metadata/cluster-metadata.js';
import {
  resolveBrokerConfig,
  validateDynamicBrokerConfigs,
  validateTopicConfigs,
} from '../metadata/config-resolve.js';
import type {
  ControllerRequestBody,
  CreatePartitionsSpec,
  CreateTopicSpec,
} from '../metadata/controller-requests.js';
import type { ImageBuilder } from '../metadata/image-builder.js';
import { historyOps, type IsrHistoryBounds } from '../metadata/isr-history.js';
import {
  encodeConfigMap,
  type MetadataKeys,
  type PartitionRecord,
  type TopicRecord,
} from '../metadata/keys.js';
import { validateScramAlterations } from '../metadata/scram-credentials.js';
import type { Compare, Op } from '../metadata/store.js';
import { isInternalTopic, validateTopicName } from '../metadata/topic-name.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { randomUuid } from '../protocol/uuid.js';
import { changeRecord } from './isr-change.js';
import { type BrokerView, initialPartition } from './partition-change.js';
import { assignReplicas, type RandomInt } from './replica-assignment.js';

/**
 * Topic and config administration as plans: validate against the controller's image, then return
 * the result and the transactions that make it so. The controller adds its fencing guard, commits
 * the chunks in order and retries on a conflict. Pure apart from the injected randomness.
 */

/** Partition records per transaction; with the guard and the topic key it stays under 128 ops. */
const PARTITIONS_PER_TXN = 100;

export interface Chunk {
  readonly compare: readonly Compare[];
  readonly ops: readonly Op[];
}

export interface Plan<R> {
  readonly result: R;
  readonly chunks: readonly Chunk[];
}

export interface AdminContext {
  readonly keys: MetadataKeys;
  readonly image: MetadataImage;
  readonly state: ImageBuilder;
  readonly view: BrokerView;
  readonly random: RandomInt;
  readonly randomBytes: (n: number) => Buffer;
  /** The controller's properties file: the last layer before built-in defaults. */
  readonly staticConfig: ConfigMap;
  readonly requestId: string;
  /** The controller's clock when the plan is made: the time of its history records. */
  readonly nowMs: number;
  readonly historyBounds: IsrHistoryBounds;
}

function err(errorCode: number, errorMessage: string): ApiResult {
  return { errorCode, errorMessage };
}
const OK: ApiResult = { errorCode: 0, errorMessage: null };

function clusterInt(ctx: AdminContext, name: string): number {
  const layers = {
    clusterDefault: ctx.image.brokerConfigs.get('<default>') ?? {},
    staticProps: ctx.staticConfig,
  };
  return Number(resolveBrokerConfig(name, layers).value);
}

/** Brokers that can take new replicas: registered and not shutting down. */
function usableBrokers(ctx: AdminContext) {
  return [...ctx.view.brokers.values()].filter((b) => !b.inControlledShutdown);
}

function checkAssignment(ctx: AdminContext, replicas: readonly number[], p: number): ApiResult {
  if (replicas.length === 0)
    return err(ErrorCode.INVALID_REPLICA_ASSIGNMENT, `Empty replica list for partition ${p}.`);
  if (new Set(replicas).size !== replicas.length) {
    return err(
      ErrorCode.INVALID_REPLICA_ASSIGNMENT,
      `Duplicate brokers not allowed in replica assignment: ${replicas.join(', ')} for partition id ${p}.`,
    );
  }
  const unknown = replicas.filter((r) => !ctx.view.brokers.has(r));
  if (unknown.length > 0) {
    return err(
      ErrorCode.INVALID_REPLICA_ASSIGNMENT,
      `The manual partition assignment includes broker ${unknown[0]}, but no such broker is registered.`,
    );
  }
  return OK;
}

function partitionOps(
  ctx: AdminContext,
  topic: string,
  assignment: readonly (readonly number[])[],
  from: number,
): Op[] {
  const ops: Op[] = [];
  for (let p = from; p < assignment.length; p++) {
    const rec: PartitionRecord = initialPartition(assignment[p]!, ctx.view);
    ops.push(...createOps(ctx, topic, p, rec));
  }
  return ops;
}

/** A new partition's key and its first history record (created, partition epoch 0). */
function createOps(ctx: AdminContext, topic: string, p: number, rec: PartitionRecord): Op[] {
  const why = {
    cause: 'topic-created',
    reason: `partition created with replicas [${rec.replicas.join(',')}]`,
  } as const;
  return [
    { type: 'put', key: ctx.keys.partition(topic, p), value: JSON.stringify(rec) },
    ...historyOps(
      ctx.keys,
      topic,
      p,
      changeRecord(undefined, rec, why, false, ctx.nowMs),
      ctx.historyBounds.maxEntries,
    ),
  ];
}

function chunked(first: Chunk, rest: readonly Op[]): Chunk[] {
  const chunks: Chunk[] = [];
  const room = Math.max(0, PARTITIONS_PER_TXN - first.ops.length);
  chunks.push({ compare: first.compare, ops: [...first.ops, ...rest.slice(0, room)] });
  for (let i = room; i < rest.length; i += PARTITIONS_PER_TXN) {
    chunks.push({ compare: [], ops: rest.slice(i, i + PARTITIONS_PER_TXN) });
  }
  return chunks;
}

export function planCreateTopic(
  ctx: AdminContext,
  spec: CreateTopicSpec,
  validateOnly: boolean,
): Plan<CreateTopicResult> {
  const fail = (r: ApiResult): Plan<CreateTopicResult> => ({
    result: {
      ...r,
      name: spec.name,
      topicId: 'AAAAAAAAAAAAAAAAAAAAAA',
      numPartitions: -1,
      replicationFactor: -1,
    },
    chunks: [],
  });
  const nameCheck = validateTopicName(spec.name);
  if (nameCheck.errorCode !== 0) return fail(nameCheck);
  const existing = ctx.state.topicRecord(spec.name);
  if (existing !== undefined) {
    // The same request again (its response was lost with the previous controller): finish it.
    if (existing.requestId === ctx.requestId) return completeTopic(ctx, spec.name, existing);
    return fail(err(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${spec.name}' already exists.`));
  }
  // '.' and '_' collide in metric names, so Kafka refuses topics that differ only by them.
  const collision = collidingTopic(ctx, spec.name);
  if (collision !== null) {
    return fail(
      err(
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        `Topic '${spec.name}' collides with existing topic: ${collision}`,
      ),
    );
  }
  const configCheck = validateTopicConfigs(spec.configs);
  if (configCheck.errorCode !== 0) return fail(configCheck);
  let assignment: number[][];
  if (spec.assignments !== undefined && spec.assignments.length > 0) {
    if (spec.numPartitions !== -1 || spec.replicationFactor !== -1) {
      return fail(
        err(
          ErrorCode.INVALID_REQUEST,
          'Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.',
        ),
      );
    }
    const byPartition = new Map(spec.assignments);
    assignment = [];
    for (let p = 0; p < byPartition.size; p++) {
      const replicas = byPartition.get(p);
      if (replicas === undefined) {
        return fail(
          err(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            'Partitions should be a consecutive 0-based integer sequence',
          ),
        );
      }
      const check = checkAssignment(ctx, replicas, p);
      if (check.errorCode !== 0) return fail(check);
      assignment.push([...replicas]);
    }
  } else {
    const partitions = spec.numPartitions === -1 ? clusterInt(ctx, 'num.partitions') : spec.numPartitions;
    const rf =
      spec.replicationFactor === -1 ? clusterInt(ctx, 'default.replication.factor') : spec.replicationFactor;
    if (partitions <= 0)
      return fail(
        err(ErrorCode.INVALID_PARTITIONS, 'Number of partitions was set to an invalid non-positive value.'),
      );
    if (partitions > LIMITS.partitionsPerTopic) {
      return fail(
        err(
          ErrorCode.INVALID_PARTITIONS,
          `Number of partitions ${partitions} exceeds the limit of ${LIMITS.partitionsPerTopic}.`,
        ),
      );
    }
    if (rf <= 0) {
      return fail(
        err(
          ErrorCode.INVALID_REPLICATION_FACTOR,
          'Replication factor must be larger than 0, or -1 to use the default value.',
        ),
      );
    }
    const usable = usableBrokers(ctx);
    if (rf > usable.length) {
      return fail(
        err(
          ErrorCode.INVALID_REPLICATION_FACTOR,
          `Unable to replicate the partition ${rf} time(s): The target replication factor of ${rf} cannot be reached because only ${usable.length} broker(s) are registered.`,
        ),
      );
    }
    assignment = assignReplicas(usable, partitions, rf, ctx.random);
  }
  const topicId = newTopicId(ctx);
  const result: CreateTopicResult = {
    ...OK,
    name: spec.name,
    topicId,
    numPartitions: assignment.length,
    replicationFactor: assignment[0]!.length,
  };
  if (validateOnly) return { result, chunks: [] };
  const record: TopicRecord = {
    topicId,
    internal: isInternalTopic(spec.name),
    assignment,
    requestId: ctx.requestId,
  };
  const head: Op[] = [{ type: 'put', key: ctx.keys.topic(spec.name), value: JSON.stringify(record) }];
  if (Object.keys(spec.configs).length > 0) {
    head.push({ type: 'put', key: ctx.keys.topicConfig(spec.name), value: encodeConfigMap(spec.configs) });
  }
  const first: Chunk = { compare: [{ key: ctx.keys.topic(spec.name), target: 'absent' }], ops: head };
  return { result, chunks: chunked(first, partitionOps(ctx, spec.name, assignment, 0)) };
}

function collidingTopic(ctx: AdminContext, name: string): string | null {
  const norm = name.replaceAll('.', '_');
  for (const existing of ctx.image.topics.keys()) {
    if (existing !== name && existing.replaceAll('.', '_') === norm) return existing;
  }
  return null;
}

function newTopicId(ctx: AdminContext): string {
  // A zero Uuid means "no id" on the wire; the chance is 2^-128 but the check is free.
  for (;;) {
    const id = randomUuid(ctx.randomBytes);
    if (id !== 'AAAAAAAAAAAAAAAAAAAAAA') return id;
  }
}

/** Creates any partition keys of `name` that are missing (a creation cut short by a failover). */
export function completeTopic(ctx: AdminContext, name: string, record: TopicRecord): Plan<CreateTopicResult> {
  const missing: Op[] = [];
  for (let p = 0; p < record.assignment.length; p++) {
    if (ctx.state.partitionRecord(name, p) === undefined) {
      missing.push(...createOps(ctx, name, p, initialPartition(record.assignment[p]!, ctx.view)));
    }
  }
  const result: CreateTopicResult = {
    ...OK,
    name,
    topicId: record.topicId,
    numPartitions: record.assignment.length,
    replicationFactor: record.assignment[0]?.length ?? 0,
  };
  const guard: Compare = {
    key: ctx.keys.topic(name),
    target: 'mod',
    modRevision: ctx.state.modRevision(ctx.keys.topic(name)),
  };
  const chunks: Chunk[] = [];
  for (let i = 0; i < missing.length; i += PARTITIONS_PER_TXN) {
    chunks.push({ compare: [guard], ops: missing.slice(i, i + PARTITIONS_PER_TXN) });
  }
  return { result, chunks };
}

export function planDeleteTopic(ctx: AdminContext, name: string): Plan<ApiResult & { name: string }> {
  const key = ctx.keys.topic(name);
  if (ctx.state.topicRecord(name) === undefined) {
    return {
      result: {
        name,
        ...err(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'This server does not host this topic-partition.'),
      },
      chunks: [],
    };
  }
  const ops: Op[] = [
    { type: 'delete', key },
    { type: 'deletePrefix', prefix: ctx.keys.topicPartitions(name) },
    { type: 'delete', key: ctx.keys.topicConfig(name) },
    // A topic created again under the name starts a new history.
    { type: 'deletePrefix', prefix: ctx.keys.isrHistoryTopic(name) },
  ];
  return {
    result: { name, ...OK },
    chunks: [{ compare: [{ key, target: 'mod', modRevision: ctx.state.modRevision(key) }], ops }],
  };
}

export function planCreatePartitions(
  ctx: AdminContext,
  spec: CreatePartitionsSpec,
  validateOnly: boolean,
): Plan<ApiResult & { name: string }> {
  const name = spec.name;
  const fail = (r: ApiResult) => ({ result: { name, ...r }, chunks: [] });
  const record = ctx.state.topicRecord(name);
  if (record === undefined)
    return fail(err(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'This server does not host this topic-partition.'));
  const current = record.assignment.length;
  if (spec.totalCount < current) {
    return fail(
      err(
        ErrorCode.INVALID_PARTITIONS,
        `Topic currently has ${current} partitions, which is higher than the requested ${spec.totalCount}.`,
      ),
    );
  }
  if (spec.totalCount === current)
    return fail(err(ErrorCode.INVALID_PARTITIONS, `Topic already has ${current} partitions.`));
  if (spec.totalCount > LIMITS.partitionsPerTopic) {
    return fail(
      err(
        ErrorCode.INVALID_PARTITIONS,
        `Number of partitions ${spec.totalCount} exceeds the limit of ${LIMITS.partitionsPerTopic}.`,
      ),
    );
  }
  const adding = spec.totalCount - current;
  let added: number[][];
  if (spec.assignments !== undefined && spec.assignments.length > 0) {
    if (spec.assignments.length !== adding) {
      return fail(
        err(
          ErrorCode.INVALID_REPLICA_ASSIGNMENT,
          `Increasing the number of partitions by ${adding} but ${spec.assignments.length} assignments provided.`,
        ),
      );
    }
    for (let i = 0; i < adding; i++) {
      const check = checkAssignment(ctx, spec.assignments[i]!, current + i);
      if (check.errorCode !== 0) return fail(check);
    }
    added = spec.assignments.map((r) => [...r]);
  } else {
    const rf = record.assignment[0]?.length ?? 1;
    const usable = usableBrokers(ctx);
    if (rf > usable.length) {
      return fail(
        err(
          ErrorCode.INVALID_REPLICATION_FACTOR,
          `Unable to replicate the partition ${rf} time(s): The target replication factor of ${rf} cannot be reached because only ${usable.length} broker(s) are registered.`,
        ),
      );
    }
    added = assignReplicas(usable, adding, rf, ctx.random, current);
  }
  if (validateOnly) return { result: { name, ...OK }, chunks: [] };
  const assignment = [...record.assignment.map((r) => [...r]), ...added];
  const next: TopicRecord = { ...record, assignment };
  const key = ctx.keys.topic(name);
  const first: Chunk = {
    compare: [{ key, target: 'mod', modRevision: ctx.state.modRevision(key) }],
    ops: [{ type: 'put', key, value: JSON.stringify(next) }],
  };
  return { result: { name, ...OK }, chunks: chunked(first, partitionOps(ctx, name, assignment, current)) };
}

export function planAlterConfigs(
  ctx: AdminContext,
  body: Extract<ControllerRequestBody, { kind: 'alterConfigs' }>,
): Plan<ApiResult> {
  const { resource, alterations, incremental, validateOnly } = body;
  const changes: Record<string, string | null> = {};
  for (const a of alterations) changes[a.name] = a.value;
  let key: string;
  let current: ConfigMap;
  if (resource.type === 'topic') {
    if (ctx.state.topicRecord(resource.name) === undefined) {
      return {
        result: err(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `The topic '${resource.name}' does not exist.`),
        chunks: [],
      };
    }
    const check = validateTopicConfigs(changes);
    if (check.errorCode !== 0) return { result: check, chunks: [] };
    key = ctx.keys.topicConfig(resource.name);
    current = ctx.image.topicConfigs.get(resource.name) ?? {};
  } else if (resource.type === 'scram-user') {
    current = ctx.image.scramCredentials?.get(resource.user) ?? {};
    const check = validateScramAlterations(current, changes);
    if (check.errorCode !== 0) return { result: check, chunks: [] };
    key = ctx.keys.scramUser(resource.user);
  } else if (resource.type === 'client-quota') {
    const check = validateClientQuotas(changes);
    if (check.errorCode !== 0) return { result: check, chunks: [] };
    key = ctx.keys.clientQuota(resource.entity);
    current = ctx.image.clientQuotas?.get(resource.entity) ?? {};
  } else {
    const entity = resource.id === '' ? '<default>' : resource.id;
    if (entity !== '<default>' && !/^\d+$/.test(entity)) {
      return { result: err(ErrorCode.INVALID_REQUEST, `Invalid broker id ${resource.id}`), chunks: [] };
    }
    const check = validateDynamicBrokerConfigs(changes);
    if (check.errorCode !== 0) return { result: check, chunks: [] };
    key = ctx.keys.brokerConfig(entity);
    current = ctx.image.brokerConfigs.get(entity) ?? {};
  }
  const next: Record<string, string> = incremental ? { ...current } : {};
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) delete next[name];
    else next[name] = value;
  }
  if (validateOnly) return { result: OK, chunks: [] };
  const compare: Compare[] = [{ key, target: 'mod', modRevision: ctx.state.modRevision(key) }];
  const op: Op =
    Object.keys(next).length === 0
      ? { type: 'delete', key }
      : {
          type: 'put',
          key,
          value:
            resource.type === 'client-quota'
              ? encodeQuotaValues(current, next, changes)
              : encodeConfigMap(next),
        };
  return { result: OK, chunks: [{ compare, ops: [op] }] };
}

/** An entity's quota values, kept in the order Kafka's metadata image iterates them (client-quotas.ts). */
function encodeQuotaValues(
  current: ConfigMap,
  next: Readonly<Record<string, string>>,
  changes: Readonly<Record<string, string | null>>,
): string {
  const changed = Object.entries(changes)
    .filter(([k, v]) => (v === null ? k in current : current[k] !== v))
    .map(([k]) => k);
  const order = kafkaQuotaValueOrder(Object.keys(current), Object.keys(next), changed);
  return JSON.stringify(Object.fromEntries(order.map((k) => [k, next[k]])));
}

/**
 * Stores ACL bindings, as Kafka's AclControlManager.createAcls: one key per binding, whose id is
 * the binding (metadata/acls.ts), so a binding that exists is written again, not twice. The
 * broker validated them (it answers each binding's error); the controller only writes.
 */
export function planCreateAcls(ctx: AdminContext, acls: readonly AclRecord[]): Plan<ApiResult> {
  const ops: Op[] = acls.map((a) => ({
    type: 'put',
    key: ctx.keys.acl(aclId(a)),
    value: JSON.stringify(aclRecordOf(a)),
  }));
  return { result: OK, chunks: ops.length === 0 ? [] : chunked({ compare: [], ops: [] }, ops) };
}

/** Deletes the ACL bindings of these ids that still exist (a concurrent delete may have won). */
export function planDeleteAcls(ctx: AdminContext, ids: readonly string[]): Plan<ApiResult> {
  const ops: Op[] = ids
    .filter((id) => ctx.image.acls?.has(id) === true)
    .map((id) => ({ type: 'delete', key: ctx.keys.acl(id) }));
  return { result: OK, chunks: ops.length === 0 ? [] : chunked({ compare: [], ops: [] }, ops) };
}
