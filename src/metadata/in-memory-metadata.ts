/**
 * A single-process ClusterMetadata: the brokers of this process, topics with round-robin replica
 * assignment (leader = first replica, ISR = replicas), topic ids from injected randomness, and the
 * topics and dynamic configs persisted as JSON to one file so a restarted broker keeps its topics.
 * It is what a standalone `skiff broker` uses until the store-backed implementation lands, and
 * what broker tests use. Owned by the process that creates it; changes are applied synchronously
 * and listeners run before the controller call resolves, so a handler that awaits a creation can
 * read the new image right away.
 */
import type { FileSystem } from '../storage/fs.js';
import { validateClientQuotas } from './client-quotas.js';
import type {
  ApiResult,
  BrokerInfo,
  ClientQuotaResource,
  ClusterMetadata,
  ConfigAlteration,
  ConfigMap,
  ConfigResource,
  ControllerClient,
  CreateTopicRequest,
  CreateTopicResult,
  MetadataImage,
  PartitionState,
  TopicInfo,
} from './cluster-metadata.js';
import { validateTopicConfigs } from './config-resolve.js';

// Kafka error codes used here (see src/protocol/generated/errors.ts).
const UNKNOWN_TOPIC_OR_PARTITION = 3;
const INVALID_TOPIC_EXCEPTION = 17;
const TOPIC_ALREADY_EXISTS = 36;
const INVALID_PARTITIONS = 37;
const INVALID_REPLICATION_FACTOR = 38;
const INVALID_REPLICA_ASSIGNMENT = 39;
const INVALID_REQUEST = 42;

/** Kafka's internal topics (Topic.INTERNAL_TOPICS): shown as internal in Metadata. */
const INTERNAL_TOPICS: ReadonlySet<string> = new Set(['__consumer_offsets', '__transaction_state']);

/** Kafka's limit on topic name length (Topic.MAX_NAME_LENGTH). */
const MAX_TOPIC_NAME_LENGTH = 249;
/** A bound on partitions per topic, so one request cannot make the broker open millions of logs. */
export const MAX_PARTITIONS_PER_TOPIC = 10_000;

export interface InMemoryMetadataOptions {
  readonly clusterId: string;
  /** Where topics and configs are persisted; null keeps them in memory only. */
  readonly filePath: string | null;
  readonly fs: FileSystem;
  /** Randomness for topic ids (crypto.randomBytes in production, seeded in tests). */
  readonly randomBytes: (n: number) => Buffer;
  /** num.partitions */
  readonly defaultNumPartitions: number;
  /** default.replication.factor */
  readonly defaultReplicationFactor: number;
}

interface PersistedState {
  version: 1;
  clusterId: string;
  topics: { name: string; topicId: string; internal: boolean; replicas: number[][] }[];
  topicConfigs: Record<string, Record<string, string>>;
  brokerConfigs: Record<string, Record<string, string>>;
  /** Absent in files written before client quotas. */
  clientQuotas?: Record<string, Record<string, string>>;
}

/** Kafka's topic name rule (Topic.validate): legal characters, not '.' or '..', at most 249. */
export function topicNameError(name: string): string | null {
  if (name.length === 0) return "Topic name is illegal, it can't be empty";
  if (name === '.' || name === '..') return 'Topic name cannot be "." or ".."';
  if (name.length > MAX_TOPIC_NAME_LENGTH)
    return `Topic name is illegal, it can't be longer than ${MAX_TOPIC_NAME_LENGTH} characters`;
  if (!/^[a-zA-Z0-9._-]+$/.test(name))
    return `Topic name "${name}" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'`;
  return null;
}

function ok(): ApiResult {
  return { errorCode: 0, errorMessage: null };
}

function fail(errorCode: number, errorMessage: string): ApiResult {
  return { errorCode, errorMessage };
}

function partitionState(topic: string, partition: number, replicas: readonly number[]): PartitionState {
  return {
    topic,
    partition,
    leader: replicas[0] ?? -1,
    leaderEpoch: 0,
    partitionEpoch: 0,
    replicas: [...replicas],
    isr: [...replicas],
    addingReplicas: [],
    removingReplicas: [],
  };
}

export class InMemoryClusterMetadata implements ClusterMetadata {
  private current: MetadataImage;
  private readonly listeners = new Set<(image: MetadataImage, previous: MetadataImage) => void>();
  readonly controller: ControllerClient;

  constructor(private readonly options: InMemoryMetadataOptions) {
    this.current = {
      clusterId: options.clusterId,
      revision: 0n,
      controllerId: -1,
      brokers: new Map(),
      topics: new Map(),
      topicConfigs: new Map(),
      brokerConfigs: new Map(),
    };
    this.load();
    this.controller = {
      createTopics: async (requests, validateOnly) => this.createTopics(requests, validateOnly),
      deleteTopics: async (names) => this.deleteTopics(names),
      createPartitions: async (requests, validateOnly) => this.createPartitions(requests, validateOnly),
      alterConfigs: async (resource, alterations, incremental, validateOnly) =>
        this.alterConfigs(resource, alterations, incremental, validateOnly),
    };
  }

  image(): MetadataImage {
    return this.current;
  }

  onChange(listener: (image: MetadataImage, previous: MetadataImage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Adds or replaces a live broker (its listener is known only once it listens). */
  registerBroker(info: Omit<BrokerInfo, 'epoch' | 'inControlledShutdown'>): void {
    const brokers = new Map(this.current.brokers);
    brokers.set(info.id, {
      ...info,
      epoch: this.current.revision + 1n,
      inControlledShutdown: false,
    });
    this.apply({ brokers, controllerId: Math.min(...brokers.keys()) }, false);
  }

  unregisterBroker(id: number): void {
    if (!this.current.brokers.has(id)) return;
    const brokers = new Map(this.current.brokers);
    brokers.delete(id);
    this.apply({ brokers, controllerId: brokers.size === 0 ? -1 : Math.min(...brokers.keys()) }, false);
  }

  private apply(change: Partial<Omit<MetadataImage, 'revision' | 'clusterId'>>, persist: boolean): void {
    const previous = this.current;
    this.current = { ...previous, ...change, revision: previous.revision + 1n };
    if (persist) this.save();
    for (const listener of [...this.listeners]) listener(this.current, previous);
  }

  private brokerIds(): number[] {
    return [...this.current.brokers.keys()].sort((a, b) => a - b);
  }

  /** Kafka's round-robin placement without racks: replica r of partition p on broker (start + p + r). */
  private assign(numPartitions: number, replicationFactor: number, firstPartition: number): number[][] {
    const ids = this.brokerIds();
    const out: number[][] = [];
    for (let p = firstPartition; p < firstPartition + numPartitions; p++) {
      const replicas: number[] = [];
      for (let r = 0; r < replicationFactor; r++) replicas.push(ids[(p + r) % ids.length]!);
      out.push(replicas);
    }
    return out;
  }

  private validateAssignment(replicas: readonly number[]): string | null {
    if (replicas.length === 0) return 'empty replica list';
    if (new Set(replicas).size !== replicas.length) return `duplicate brokers in ${replicas.join(',')}`;
    for (const id of replicas) if (!this.current.brokers.has(id)) return `broker ${id} is not registered`;
    return null;
  }

  private createTopics(requests: readonly CreateTopicRequest[], validateOnly: boolean): CreateTopicResult[] {
    const results: CreateTopicResult[] = [];
    const topics = new Map(this.current.topics);
    const topicConfigs = new Map(this.current.topicConfigs);
    for (const req of requests) {
      const result = (r: ApiResult, topicId = '', numPartitions = -1, replicationFactor = -1): void => {
        results.push({ ...r, name: req.name, topicId, numPartitions, replicationFactor });
      };
      const nameError = topicNameError(req.name);
      if (nameError) {
        result(fail(INVALID_TOPIC_EXCEPTION, nameError));
        continue;
      }
      if (topics.has(req.name)) {
        result(fail(TOPIC_ALREADY_EXISTS, `Topic '${req.name}' already exists.`));
        continue;
      }
      const configCheck = validateTopicConfigs(req.configs);
      if (configCheck.errorCode !== 0) {
        result(configCheck);
        continue;
      }
      let replicas: number[][];
      if (req.assignments && req.assignments.size > 0) {
        if (req.numPartitions !== -1 || req.replicationFactor !== -1) {
          result(
            fail(
              INVALID_REQUEST,
              'Both numPartitions or replicationFactor and replicasAssignments were set.',
            ),
          );
          continue;
        }
        replicas = [];
        let error: string | null = null;
        for (let p = 0; p < req.assignments.size && error === null; p++) {
          const a = req.assignments.get(p);
          if (a === undefined) error = `partitions must be numbered 0..${req.assignments.size - 1}`;
          else error = this.validateAssignment(a);
          if (a) replicas.push([...a]);
        }
        if (error !== null) {
          result(fail(INVALID_REPLICA_ASSIGNMENT, error));
          continue;
        }
      } else {
        const n = req.numPartitions === -1 ? this.options.defaultNumPartitions : req.numPartitions;
        const rf =
          req.replicationFactor === -1 ? this.options.defaultReplicationFactor : req.replicationFactor;
        if (n <= 0 || n > MAX_PARTITIONS_PER_TOPIC) {
          result(
            fail(INVALID_PARTITIONS, `Number of partitions must be in [1, ${MAX_PARTITIONS_PER_TOPIC}].`),
          );
          continue;
        }
        if (rf <= 0 || rf > this.current.brokers.size) {
          result(
            fail(
              INVALID_REPLICATION_FACTOR,
              `Unable to replicate the partition ${rf} time(s): The target replication factor of ${rf} cannot be reached because only ${this.current.brokers.size} broker(s) are registered.`,
            ),
          );
          continue;
        }
        replicas = this.assign(n, rf, 0);
      }
      const topicId = this.newTopicId();
      if (!validateOnly) {
        topics.set(req.name, {
          name: req.name,
          topicId,
          internal: INTERNAL_TOPICS.has(req.name),
          partitions: replicas.map((r, p) => partitionState(req.name, p, r)),
        });
        if (Object.keys(req.configs).length > 0) topicConfigs.set(req.name, { ...req.configs });
      }
      result(ok(), topicId, replicas.length, replicas[0]!.length);
    }
    if (!validateOnly && topics.size !== this.current.topics.size) this.apply({ topics, topicConfigs }, true);
    return results;
  }

  private newTopicId(): string {
    for (;;) {
      const id = this.options.randomBytes(16).toString('base64url');
      // The zero Uuid and ids starting with '-' are reserved in Kafka (Uuid.randomUuid retries too).
      if (id.startsWith('-') || id === 'AAAAAAAAAAAAAAAAAAAAAA') continue;
      let taken = false;
      for (const t of this.current.topics.values()) if (t.topicId === id) taken = true;
      if (!taken) return id;
    }
  }

  private deleteTopics(names: readonly string[]): (ApiResult & { name: string })[] {
    const topics = new Map(this.current.topics);
    const topicConfigs = new Map(this.current.topicConfigs);
    const results = names.map((name) => {
      if (!topics.delete(name)) {
        return { name, ...fail(UNKNOWN_TOPIC_OR_PARTITION, 'This server does not host this topic.') };
      }
      topicConfigs.delete(name);
      return { name, ...ok() };
    });
    if (topics.size !== this.current.topics.size) this.apply({ topics, topicConfigs }, true);
    return results;
  }

  private createPartitions(
    requests: readonly { name: string; totalCount: number; assignments?: readonly (readonly number[])[] }[],
    validateOnly: boolean,
  ): (ApiResult & { name: string })[] {
    const topics = new Map(this.current.topics);
    const results = requests.map((req) => {
      const topic = topics.get(req.name);
      if (!topic)
        return {
          name: req.name,
          ...fail(UNKNOWN_TOPIC_OR_PARTITION, 'This server does not host this topic.'),
        };
      const current = topic.partitions.length;
      if (req.totalCount < current) {
        return {
          name: req.name,
          ...fail(
            INVALID_PARTITIONS,
            `Topic currently has ${current} partitions, which is higher than the requested ${req.totalCount}.`,
          ),
        };
      }
      if (req.totalCount === current) {
        return { name: req.name, ...fail(INVALID_PARTITIONS, `Topic already has ${current} partitions.`) };
      }
      if (req.totalCount > MAX_PARTITIONS_PER_TOPIC) {
        return {
          name: req.name,
          ...fail(INVALID_PARTITIONS, `At most ${MAX_PARTITIONS_PER_TOPIC} partitions per topic.`),
        };
      }
      const added = req.totalCount - current;
      let replicas: number[][];
      if (req.assignments) {
        if (req.assignments.length !== added) {
          return {
            name: req.name,
            ...fail(
              INVALID_REPLICA_ASSIGNMENT,
              `Increasing the number of partitions by ${added} but ${req.assignments.length} assignments provided.`,
            ),
          };
        }
        for (const a of req.assignments) {
          const error = this.validateAssignment(a);
          if (error) return { name: req.name, ...fail(INVALID_REPLICA_ASSIGNMENT, error) };
        }
        replicas = req.assignments.map((a) => [...a]);
      } else {
        replicas = this.assign(added, topic.partitions[0]?.replicas.length ?? 1, current);
      }
      if (!validateOnly) {
        const extra = replicas.map((r, i) => partitionState(req.name, current + i, r));
        topics.set(req.name, { ...topic, partitions: [...topic.partitions, ...extra] });
      }
      return { name: req.name, ...ok() };
    });
    if (!validateOnly && results.some((r) => r.errorCode === 0)) this.apply({ topics }, true);
    return results;
  }

  private alterConfigs(
    resource: ConfigResource | ClientQuotaResource,
    alterations: readonly ConfigAlteration[],
    incremental: boolean,
    validateOnly: boolean,
  ): ApiResult {
    if (resource.type === 'client-quota') {
      const check = validateClientQuotas(Object.fromEntries(alterations.map((a) => [a.name, a.value])));
      if (check.errorCode !== 0) return check;
      const quotas = this.current.clientQuotas ?? new Map<string, ConfigMap>();
      const next: Record<string, string> = incremental ? { ...(quotas.get(resource.entity) ?? {}) } : {};
      for (const a of alterations) {
        if (a.value === null) delete next[a.name];
        else next[a.name] = a.value;
      }
      if (validateOnly) return ok();
      const updated = new Map(quotas);
      if (Object.keys(next).length === 0) updated.delete(resource.entity);
      else updated.set(resource.entity, next);
      this.apply({ clientQuotas: updated }, true);
      return ok();
    }
    const key = resource.type === 'topic' ? resource.name : resource.id;
    if (resource.type === 'topic' && !this.current.topics.has(key)) {
      return fail(UNKNOWN_TOPIC_OR_PARTITION, `Topic ${key} does not exist.`);
    }
    if (resource.type === 'topic') {
      const check = validateTopicConfigs(Object.fromEntries(alterations.map((a) => [a.name, a.value])));
      if (check.errorCode !== 0) return check;
    }
    const map = resource.type === 'topic' ? this.current.topicConfigs : this.current.brokerConfigs;
    const next: Record<string, string> = incremental ? { ...(map.get(key) ?? {}) } : {};
    for (const a of alterations) {
      if (a.value === null) delete next[a.name];
      else next[a.name] = a.value;
    }
    if (validateOnly) return ok();
    const updated = new Map(map);
    if (Object.keys(next).length === 0) updated.delete(key);
    else updated.set(key, next);
    this.apply(resource.type === 'topic' ? { topicConfigs: updated } : { brokerConfigs: updated }, true);
    return ok();
  }

  private load(): void {
    const { filePath, fs } = this.options;
    if (filePath === null || !fs.exists(filePath)) return;
    const state = JSON.parse(fs.readFile(filePath).toString('utf8')) as PersistedState;
    if (state.version !== 1) throw new Error(`${filePath}: unknown metadata file version ${state.version}`);
    const topics = new Map<string, TopicInfo>();
    for (const t of state.topics) {
      topics.set(t.name, {
        name: t.name,
        topicId: t.topicId,
        internal: t.internal,
        partitions: t.replicas.map((r, p) => partitionState(t.name, p, r)),
      });
    }
    const configs = (o: Record<string, Record<string, string>>): Map<string, ConfigMap> =>
      new Map(Object.entries(o));
    this.current = {
      ...this.current,
      // The persisted cluster id wins: a broker must not change clusters across a restart.
      clusterId: state.clusterId,
      topics,
      topicConfigs: configs(state.topicConfigs),
      brokerConfigs: configs(state.brokerConfigs),
      clientQuotas: configs(state.clientQuotas ?? {}),
    };
  }

  private save(): void {
    const { filePath, fs } = this.options;
    if (filePath === null) return;
    const state: PersistedState = {
      version: 1,
      clusterId: this.current.clusterId,
      topics: [...this.current.topics.values()].map((t) => ({
        name: t.name,
        topicId: t.topicId,
        internal: t.internal,
        replicas: t.partitions.map((p) => [...p.replicas]),
      })),
      topicConfigs: Object.fromEntries(this.current.topicConfigs),
      brokerConfigs: Object.fromEntries(this.current.brokerConfigs),
      ...(this.current.clientQuotas !== undefined &&
        this.current.clientQuotas.size > 0 && {
          clientQuotas: Object.fromEntries(this.current.clientQuotas),
        }),
    };
    fs.writeFileAtomic(filePath, Buffer.from(`${JSON.stringify(state, null, 2)}\n`));
  }
}
