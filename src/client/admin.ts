/**
 * Admin operations for the tools, Kafka's Admin client in miniature. Each call returns per-item
 * results (a topic, a partition, a config resource) so a tool can print what succeeded next to
 * what failed, as Kafka's tools do.
 */
import { topicPartitionKey } from '../common/topic-partition.js';
import type { DescribeConfigsResourceResult } from '../protocol/generated/DescribeConfigsResponse.js';
import type { DescribeLogDirsResult } from '../protocol/generated/DescribeLogDirsResponse.js';
import { ZERO_UUID } from '../protocol/uuid.js';
import { Apis } from './apis.js';
import { ClientError, checkCode, type KafkaResponseError, kafkaError } from './errors.js';
import {
  type ClusterMetadata,
  type KafkaClient,
  type Target,
  type TopicMetadata,
  UnsupportedApiError,
} from './kafka-client.js';
import { type PartitionResult, sendToLeaders, type TopicPartition, tpKey } from './partitions.js';
import {
  AlterPartitionReassignmentsApi,
  AlterReplicaLogDirsApi,
  ListPartitionReassignmentsApi,
} from './reassign-apis.js';
import type { HostPort } from './runtime.js';

/** A reassignment in progress: every replica, and which of them are being added or removed. */
export interface PartitionReassignment {
  readonly topic: string;
  readonly partition: number;
  readonly replicas: readonly number[];
  readonly addingReplicas: readonly number[];
  readonly removingReplicas: readonly number[];
}

export interface NewTopic {
  readonly name: string;
  /** -1: the broker's num.partitions (or the assignment's length). */
  readonly numPartitions: number;
  /** -1: the broker's default.replication.factor. */
  readonly replicationFactor: number;
  /** Partition → broker ids, when placed by hand. */
  readonly assignments?: readonly (readonly number[])[];
  readonly configs?: ReadonlyMap<string, string>;
}

export type TopicResult = { name: string; error: KafkaResponseError | null; topicId?: string };

/** Kafka's ConfigResource.Type codes. */
export const ConfigResourceType = { topic: 2, broker: 4, brokerLogger: 8 } as const;

/** Kafka's ConfigEntry.ConfigSource as the wire numbers it (DescribeConfigs v1+). */
export const CONFIG_SOURCE_NAMES: Readonly<Record<number, string>> = {
  [-1]: 'UNKNOWN',
  0: 'UNKNOWN',
  1: 'DYNAMIC_TOPIC_CONFIG',
  2: 'DYNAMIC_BROKER_CONFIG',
  3: 'DYNAMIC_DEFAULT_BROKER_CONFIG',
  4: 'STATIC_BROKER_CONFIG',
  5: 'DEFAULT_CONFIG',
  6: 'DYNAMIC_BROKER_LOGGER_CONFIG',
  7: 'CLIENT_METRICS_CONFIG',
  8: 'GROUP_CONFIG',
};

export interface ConfigResource {
  readonly type: number;
  /** A topic name, a broker id, or '' for the cluster-wide broker default. */
  readonly name: string;
}

export type ConfigEntry = DescribeConfigsResourceResult;

/** IncrementalAlterConfigs operation codes. */
export const AlterOp = { set: 0, delete: 1, append: 2, subtract: 3 } as const;

export interface AlterConfigOp {
  readonly name: string;
  readonly op: number;
  readonly value: string | null;
}

export interface ClusterDescription {
  readonly clusterId: string | null;
  readonly controllerId: number;
  readonly brokers: ReadonlyMap<number, HostPort>;
  /** Each broker's rack (null: none); absent when only Metadata answered. */
  readonly racks?: ReadonlyMap<number, string | null>;
}

export class Admin {
  constructor(private readonly client: KafkaClient) {}

  async createTopics(topics: readonly NewTopic[], validateOnly = false): Promise<TopicResult[]> {
    const byName = new Map(topics.map((t) => [t.name, t]));
    return this.perTopic([...byName.keys()], async (names) => {
      const resp = await this.client.send({ kind: 'controller' }, Apis.CreateTopics, () => ({
        topics: names.map((name) => {
          const t = byName.get(name)!;
          return {
            name,
            numPartitions: t.assignments ? -1 : t.numPartitions,
            replicationFactor: t.assignments ? -1 : t.replicationFactor,
            assignments: (t.assignments ?? []).map((brokerIds, partitionIndex) => ({
              partitionIndex,
              brokerIds: [...brokerIds],
            })),
            configs: [...(t.configs ?? new Map())].map(([k, value]) => ({ name: k, value })),
          };
        }),
        timeoutMs: this.client.requestTimeoutMs,
        validateOnly,
      }));
      return resp.topics.map((t) => ({
        name: t.name,
        topicId: t.topicId,
        error: t.errorCode === 0 ? null : kafkaError(t.errorCode, t.errorMessage),
      }));
    });
  }

  async deleteTopics(names: readonly string[]): Promise<TopicResult[]> {
    return this.perTopic(names, async (pending) => {
      const resp = await this.client.send({ kind: 'controller' }, Apis.DeleteTopics, (v) => ({
        topics: v >= 6 ? pending.map((name) => ({ name, topicId: ZERO_UUID })) : [],
        topicNames: v < 6 ? [...pending] : [],
        timeoutMs: this.client.requestTimeoutMs,
      }));
      return resp.responses.map((t) => ({
        name: t.name ?? '',
        error: t.errorCode === 0 ? null : kafkaError(t.errorCode, t.errorMessage),
      }));
    });
  }

  /**
   * A per-topic request with retries of only the topics that failed retriably (NOT_CONTROLLER after
   * a controller move, a lost connection), so a topic the first attempt created is not reported as
   * TOPIC_ALREADY_EXISTS by the second. Results are in the order of `names`.
   */
  private async perTopic(
    names: readonly string[],
    send: (names: string[]) => Promise<TopicResult[]>,
  ): Promise<TopicResult[]> {
    const results = new Map<string, TopicResult>();
    let pending = [...names];
    try {
      await this.client.retry(async () => {
        for (const r of await send(pending)) results.set(r.name, r);
        const again = pending.filter((n) => results.get(n)?.error?.retriable);
        if (again.length > 0) {
          pending = again;
          throw results.get(again[0]!)!.error;
        }
      });
    } catch (e) {
      // Out of retries on a topic's own error: that error is its result. Anything else is not.
      if (!pending.every((n) => results.get(n)?.error === e || results.get(n)?.error?.retriable)) throw e;
    }
    return names.map(
      (name) => results.get(name) ?? { name, error: kafkaError(-1, `no result for topic ${name}`) },
    );
  }

  /** Topic names, sorted; internal topics only with `listInternal`. */
  async listTopics(listInternal = true): Promise<string[]> {
    const md = await this.client.retry(() => this.client.fetchMetadata(null));
    return [...md.topics.values()]
      .filter((t) => t.errorCode === 0 && (listInternal || !t.isInternal))
      .map((t) => t.name)
      .sort();
  }

  /** Partitions, leaders, replicas and ISR per topic, from Metadata. Unknown topics are errors. */
  async describeTopics(names: readonly string[]): Promise<Map<string, TopicMetadata | KafkaResponseError>> {
    const md = await this.client.retry(() => this.client.fetchMetadata(names));
    const out = new Map<string, TopicMetadata | KafkaResponseError>();
    for (const name of names) {
      const t = md.topics.get(name);
      out.set(name, t && t.errorCode === 0 ? t : kafkaError(t?.errorCode ?? 3));
    }
    return out;
  }

  async createPartitions(
    increases: ReadonlyMap<string, { count: number; assignments?: readonly (readonly number[])[] }>,
  ): Promise<TopicResult[]> {
    return this.perTopic([...increases.keys()], async (names) => {
      const resp = await this.client.send({ kind: 'controller' }, Apis.CreatePartitions, () => ({
        topics: names.map((name) => {
          const inc = increases.get(name)!;
          return {
            name,
            count: inc.count,
            assignments: inc.assignments ? inc.assignments.map((b) => ({ brokerIds: [...b] })) : null,
          };
        }),
        timeoutMs: this.client.requestTimeoutMs,
        validateOnly: false,
      }));
      return resp.results.map((r) => ({
        name: r.name,
        error: r.errorCode === 0 ? null : kafkaError(r.errorCode, r.errorMessage),
      }));
    });
  }

  /** Brokers and controller: DescribeCluster where served, Metadata otherwise. */
  async describeCluster(): Promise<ClusterDescription> {
    const version = await this.client.versionFor({ kind: 'any' }, Apis.DescribeCluster);
    if (version === null) {
      const md: ClusterMetadata = await this.client.retry(() => this.client.fetchMetadata([]));
      return md;
    }
    const resp = await this.client.retry(() =>
      this.client.send({ kind: 'any' }, Apis.DescribeCluster, () => ({
        includeClusterAuthorizedOperations: false,
        endpointType: 1,
        includeFencedBrokers: false,
      })),
    );
    checkCode(resp.errorCode, resp.errorMessage);
    const brokers = new Map<number, HostPort>();
    const racks = new Map<number, string | null>();
    for (const b of resp.brokers) {
      brokers.set(b.brokerId, { host: b.host, port: b.port });
      racks.set(b.brokerId, b.rack);
    }
    return { clusterId: resp.clusterId, controllerId: resp.controllerId, brokers, racks };
  }

  /**
   * Config entries of one resource. A broker's own configs are asked of that broker (only it knows
   * its static file); topics and the cluster default go to any broker.
   */
  async describeConfigs(resource: ConfigResource, includeSynonyms = true): Promise<ConfigEntry[]> {
    return this.client.retry(async () => {
      const target = await this.configTarget(resource);
      const resp = await this.client.send(target, Apis.DescribeConfigs, () => ({
        resources: [{ resourceType: resource.type, resourceName: resource.name, configurationKeys: null }],
        includeSynonyms,
        includeDocumentation: false,
      }));
      const r = resp.results[0];
      if (!r) throw new ClientError(`DescribeConfigs answered no result for ${resource.name}`);
      checkCode(r.errorCode, r.errorMessage);
      return r.configs;
    });
  }

  async incrementalAlterConfigs(resource: ConfigResource, ops: readonly AlterConfigOp[]): Promise<void> {
    await this.client.retry(async () => {
      const target = await this.configTarget(resource);
      const resp = await this.client.send(target, Apis.IncrementalAlterConfigs, () => ({
        resources: [
          {
            resourceType: resource.type,
            resourceName: resource.name,
            configs: ops.map((o) => ({ name: o.name, configOperation: o.op, value: o.value })),
          },
        ],
        validateOnly: false,
      }));
      const r = resp.responses[0];
      if (!r) throw new ClientError(`IncrementalAlterConfigs answered no result for ${resource.name}`);
      checkCode(r.errorCode, r.errorMessage);
    });
  }

  /**
   * Where a config request goes: a broker resource to that broker while it is live (it knows its
   * own static configs), any broker when it is not — a stopped broker's dynamic configs are in the
   * cluster metadata, which every broker reads (Kafka's admin client waits for the broker itself).
   */
  private async configTarget(resource: ConfigResource): Promise<Target> {
    if (resource.type !== ConfigResourceType.broker || resource.name === '') return { kind: 'any' };
    const id = Number(resource.name);
    const md = await this.client.metadataFor([]);
    return md.brokers.has(id) ? { kind: 'node', id } : { kind: 'any' };
  }

  /** Each broker's log dirs; `topics` null asks for every partition. */
  async describeLogDirs(
    brokerIds: readonly number[],
    topics: readonly string[] | null,
  ): Promise<Map<number, DescribeLogDirsResult[]>> {
    const out = new Map<number, DescribeLogDirsResult[]>();
    const md = topics === null ? null : await this.client.retry(() => this.client.fetchMetadata(topics));
    await Promise.all(
      brokerIds.map(async (id) => {
        const resp = await this.client.retry(() =>
          this.client.send({ kind: 'node', id }, Apis.DescribeLogDirs, () => ({
            topics:
              md === null || topics === null
                ? null
                : topics
                    .filter((t) => md.topics.get(t)?.errorCode === 0)
                    .map((t) => ({
                      topic: t,
                      partitions: md.topics.get(t)!.partitions.map((p) => p.partition),
                    })),
          })),
        );
        checkCode(resp.errorCode);
        out.set(id, resp.results);
      }),
    );
    return out;
  }

  /** Raises each partition's log start offset to `offset` (-1: the high watermark). */
  async deleteRecords(
    offsets: ReadonlyMap<string, { tp: TopicPartition; offset: bigint }>,
  ): Promise<Map<string, PartitionResult<bigint>>> {
    const byKey = new Map([...offsets.values()].map((e) => [tpKey(e.tp), e.offset]));
    return sendToLeaders(
      this.client,
      [...offsets.values()].map((e) => e.tp),
      async (leader, tps) => {
        const topics = groupByTopic(tps);
        const resp = await this.client.send({ kind: 'node', id: leader }, Apis.DeleteRecords, () => ({
          topics: [...topics].map(([name, parts]) => ({
            name,
            partitions: parts.map((p) => ({
              partitionIndex: p,
              offset: byKey.get(topicPartitionKey(name, p))!,
            })),
          })),
          timeoutMs: this.client.requestTimeoutMs,
        }));
        const answers = new Map<string, { errorCode: number; value: bigint }>();
        for (const t of resp.topics)
          for (const p of t.partitions)
            answers.set(topicPartitionKey(t.name, p.partitionIndex), {
              errorCode: p.errorCode,
              value: p.lowWatermark,
            });
        return answers;
      },
    );
  }

  /** Offsets for a timestamp: -1 latest, -2 earliest, -3 max timestamp, or a time in ms. */
  async listOffsets(
    tps: readonly TopicPartition[],
    timestamp: bigint,
  ): Promise<Map<string, PartitionResult<bigint>>> {
    return sendToLeaders(this.client, tps, async (leader, group) => {
      const topics = groupByTopic(group);
      const resp = await this.client.send({ kind: 'node', id: leader }, Apis.ListOffsets, (v) => {
        if (timestamp === -3n && v < 7) {
          throw new UnsupportedApiError(
            'ListOffsets',
            'the broker does not support max-timestamp offsets (-3)',
          );
        }
        return {
          replicaId: -1,
          isolationLevel: 0,
          topics: [...topics].map(([name, parts]) => ({
            name,
            partitions: parts.map((p) => ({
              partitionIndex: p,
              currentLeaderEpoch: -1,
              timestamp,
              maxNumOffsets: 1,
            })),
          })),
          timeoutMs: this.client.requestTimeoutMs,
        };
      });
      const answers = new Map<string, { errorCode: number; value: bigint }>();
      for (const t of resp.topics)
        for (const p of t.partitions)
          answers.set(topicPartitionKey(t.name, p.partitionIndex), {
            errorCode: p.errorCode,
            value: p.offset,
          });
      return answers;
    });
  }

  /**
   * ElectLeaders (preferred or unclean) for `tps`, or for every partition when null (then the
   * controller leaves out those whose leader is already the one the election would choose). Per
   * partition, keyed `topic-partition`: null once elected, else its error (ELECTION_NOT_NEEDED
   * where the right leader leads already).
   */
  async electLeaders(
    electionType: 'preferred' | 'unclean',
    tps: readonly TopicPartition[] | null,
  ): Promise<Map<string, { tp: TopicPartition; error: KafkaResponseError | null }>> {
    const resp = await this.client.retry(async () => {
      const r = await this.client.send({ kind: 'controller' }, Apis.ElectLeaders, (v) => {
        if (electionType === 'unclean' && v < 1)
          throw new UnsupportedApiError('ElectLeaders', 'the broker does not support unclean elections');
        return {
          electionType: electionType === 'preferred' ? 0 : 1,
          topicPartitions:
            tps === null
              ? null
              : [...groupByTopic(tps)].map(([topic, partitions]) => ({ topic, partitions })),
          timeoutMs: this.client.requestTimeoutMs,
        };
      });
      checkCode(r.errorCode);
      return r;
    });
    const out = new Map<string, { tp: TopicPartition; error: KafkaResponseError | null }>();
    for (const t of resp.replicaElectionResults)
      for (const p of t.partitionResult)
        out.set(topicPartitionKey(t.topic, p.partitionId), {
          tp: { topic: t.topic, partition: p.partitionId },
          error: p.errorCode === 0 ? null : kafkaError(p.errorCode, p.errorMessage),
        });
    return out;
  }

  /**
   * AlterPartitionReassignments: each partition moves to its replica list, or its move in progress
   * is cancelled (replicas null). Per partition: null on success, else the broker's error.
   */
  async alterPartitionReassignments(
    moves: readonly { tp: TopicPartition; replicas: readonly number[] | null }[],
  ): Promise<Map<string, KafkaResponseError | null>> {
    const byTopic = new Map<string, { partitionIndex: number; replicas: number[] | null }[]>();
    for (const m of moves) {
      const list = byTopic.get(m.tp.topic) ?? [];
      list.push({ partitionIndex: m.tp.partition, replicas: m.replicas === null ? null : [...m.replicas] });
      byTopic.set(m.tp.topic, list);
    }
    const resp = await this.client.retry(async () => {
      const r = await this.client.send({ kind: 'controller' }, AlterPartitionReassignmentsApi, () => ({
        timeoutMs: this.client.requestTimeoutMs,
        topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })),
      }));
      checkCode(r.errorCode, r.errorMessage);
      return r;
    });
    const out = new Map<string, KafkaResponseError | null>();
    for (const t of resp.responses)
      for (const p of t.partitions)
        out.set(
          topicPartitionKey(t.name, p.partitionIndex),
          p.errorCode === 0 ? null : kafkaError(p.errorCode, p.errorMessage),
        );
    return out;
  }

  /** Reassignments in progress (all of them when `tps` is null), keyed `topic-partition`. */
  async listPartitionReassignments(
    tps: readonly TopicPartition[] | null,
  ): Promise<Map<string, PartitionReassignment>> {
    const resp = await this.client.retry(async () => {
      const r = await this.client.send({ kind: 'controller' }, ListPartitionReassignmentsApi, () => ({
        timeoutMs: this.client.requestTimeoutMs,
        topics:
          tps === null
            ? null
            : [...groupByTopic(tps)].map(([name, partitionIndexes]) => ({ name, partitionIndexes })),
      }));
      checkCode(r.errorCode, r.errorMessage);
      return r;
    });
    const out = new Map<string, PartitionReassignment>();
    for (const t of resp.topics)
      for (const p of t.partitions)
        out.set(topicPartitionKey(t.name, p.partitionIndex), {
          topic: t.name,
          partition: p.partitionIndex,
          replicas: p.replicas,
          addingReplicas: p.addingReplicas,
          removingReplicas: p.removingReplicas,
        });
    return out;
  }

  /**
   * AlterReplicaLogDirs: moves each replica to a log dir of its broker (absolute path). Per
   * replica, keyed `broker-topic-partition`: null once the broker accepted, else its error.
   */
  async alterReplicaLogDirs(
    moves: readonly { broker: number; tp: TopicPartition; logDir: string }[],
  ): Promise<Map<string, KafkaResponseError | null>> {
    const byBroker = new Map<number, Map<string, Map<string, number[]>>>();
    for (const m of moves) {
      const dirs = byBroker.get(m.broker) ?? new Map<string, Map<string, number[]>>();
      const topics = dirs.get(m.logDir) ?? new Map<string, number[]>();
      topics.set(m.tp.topic, [...(topics.get(m.tp.topic) ?? []), m.tp.partition]);
      dirs.set(m.logDir, topics);
      byBroker.set(m.broker, dirs);
    }
    const out = new Map<string, KafkaResponseError | null>();
    await Promise.all(
      [...byBroker].map(async ([broker, dirs]) => {
        const resp = await this.client.retry(() =>
          this.client.send({ kind: 'node', id: broker }, AlterReplicaLogDirsApi, () => ({
            dirs: [...dirs].map(([path, topics]) => ({
              path,
              topics: [...topics].map(([name, partitions]) => ({ name, partitions })),
            })),
          })),
        );
        for (const t of resp.results)
          for (const p of t.partitions)
            out.set(
              `${broker}-${t.topicName}-${p.partitionIndex}`,
              p.errorCode === 0 ? null : kafkaError(p.errorCode),
            );
      }),
    );
    return out;
  }
}

export function groupByTopic(tps: readonly TopicPartition[]): Map<string, number[]> {
  const m = new Map<string, number[]>();
  for (const tp of tps) m.set(tp.topic, [...(m.get(tp.topic) ?? []), tp.partition]);
  return m;
}
