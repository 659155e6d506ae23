import { topicPartitionKey } from '../common/topic-partition.js';
import type { AclRecord } from './acls.js';
import type { BrokerInfo, ConfigMap, MetadataImage, PartitionState, TopicInfo } from './cluster-metadata.js';
import {
  type BrokerRecord,
  decodeJson,
  type LogDirFailureRecord,
  type MetadataKeys,
  type PartitionRecord,
  type TopicRecord,
} from './keys.js';
import type { KeyValue, WatchEvent } from './store.js';

/**
 * Builds MetadataImages from the store's keys: a snapshot of every key at revision R, then watch
 * events applied strictly in revision order. Each image is immutable; unchanged topics are shared
 * between consecutive images so a change to one partition costs one topic, not the cluster.
 * Owned by one MetadataFollower (or a test); not thread-safe, never shared.
 */
export class ImageBuilder {
  private revision = 0n;
  private controllerId = -1;
  private readonly brokerRecords = new Map<number, { record: BrokerRecord; epoch: bigint }>();
  private readonly shuttingDown = new Set<number>();
  private readonly logDirFailures = new Map<number, LogDirFailureRecord>();
  private readonly topicRecords = new Map<string, TopicRecord>();
  private readonly partitionRecords = new Map<string, Map<number, PartitionRecord>>();
  private readonly topicConfigs = new Map<string, ConfigMap>();
  private readonly brokerConfigs = new Map<string, ConfigMap>();
  private readonly clientQuotas = new Map<string, ConfigMap>();
  private readonly acls = new Map<string, AclRecord>();
  private readonly topicInfos = new Map<string, TopicInfo>();
  private readonly dirtyTopics = new Set<string>();
  private brokersDirty = true;
  private brokerInfos: ReadonlyMap<number, BrokerInfo> = new Map();
  /** Config maps are copied only when they change, so listeners can compare images by identity. */
  private topicConfigsDirty = true;
  private brokerConfigsDirty = true;
  private clientQuotasDirty = true;
  private clientQuotasView: ReadonlyMap<string, ConfigMap> = new Map();
  private readonly scramUsers = new Map<string, ConfigMap>();
  private scramUsersDirty = true;
  private scramUsersView: ReadonlyMap<string, ConfigMap> = new Map();
  private aclsDirty = true;
  private aclsView: ReadonlyMap<string, AclRecord> = new Map();
  private topicConfigsView: ReadonlyMap<string, ConfigMap> = new Map();
  private brokerConfigsView: ReadonlyMap<string, ConfigMap> = new Map();
  private cached: MetadataImage | null = null;
  /** Mod revision of every key in the image, for compare-and-set by the controller. */
  private readonly modRevisions = new Map<string, bigint>();

  constructor(private readonly keys: MetadataKeys) {}

  get lastRevision(): bigint {
    return this.revision;
  }

  /** Loads a snapshot taken at `revision` (all keys under the cluster root). */
  load(kvs: readonly KeyValue[], revision: bigint): void {
    for (const kv of kvs) this.put(kv.key, kv.value, kv.modRevision);
    this.revision = revision;
    this.cached = null;
  }

  /** Applies events in the order given; events at or below the current revision are ignored. */
  apply(events: readonly WatchEvent[]): boolean {
    let changed = false;
    for (const e of events) {
      if (e.modRevision <= this.revision) continue;
      const relevant = e.type === 'put' ? this.put(e.key, e.value, e.modRevision) : this.delete(e.key);
      changed ||= relevant;
    }
    const last = events[events.length - 1];
    if (last !== undefined && last.modRevision > this.revision) {
      this.revision = last.modRevision;
      this.cached = null;
    }
    return changed;
  }

  image(): MetadataImage {
    if (this.cached !== null) return this.cached;
    if (this.brokersDirty) {
      const brokers = new Map<number, BrokerInfo>();
      for (const [id, { record, epoch }] of [...this.brokerRecords].sort((a, b) => a[0] - b[0])) {
        // A fenced registration (a starting broker that does not listen yet) is not in the image.
        if (record.fenced === true) continue;
        brokers.set(id, {
          id,
          host: record.host,
          port: record.port,
          endpoints: record.endpoints ?? [
            {
              listenerName: 'PLAINTEXT',
              host: record.host,
              port: record.port,
              securityProtocol: 'PLAINTEXT',
            },
          ],
          rack: record.rack,
          epoch,
          inControlledShutdown: this.shuttingDown.has(id),
          ...this.offlineOf(id, record),
        });
      }
      this.brokerInfos = brokers;
      this.brokersDirty = false;
    }
    for (const name of this.dirtyTopics) this.rebuildTopic(name);
    this.dirtyTopics.clear();
    if (this.topicConfigsDirty) this.topicConfigsView = new Map(this.topicConfigs);
    if (this.brokerConfigsDirty) this.brokerConfigsView = new Map(this.brokerConfigs);
    this.topicConfigsDirty = false;
    this.brokerConfigsDirty = false;
    if (this.clientQuotasDirty) this.clientQuotasView = new Map(this.clientQuotas);
    this.clientQuotasDirty = false;
    if (this.scramUsersDirty) this.scramUsersView = new Map(this.scramUsers);
    this.scramUsersDirty = false;
    if (this.aclsDirty) this.aclsView = new Map(this.acls);
    this.aclsDirty = false;
    this.cached = Object.freeze({
      clusterId: this.keys.clusterId,
      revision: this.revision,
      controllerId: this.controllerId,
      brokers: this.brokerInfos,
      topics: new Map(this.topicInfos),
      topicConfigs: this.topicConfigsView,
      brokerConfigs: this.brokerConfigsView,
      clientQuotas: this.clientQuotasView,
      scramCredentials: this.scramUsersView,
      acls: this.aclsView,
    });
    return this.cached;
  }

  /** A broker's offline dirs and replicas, when its current incarnation reported any. */
  private offlineOf(
    id: number,
    record: BrokerRecord,
  ): Pick<BrokerInfo, 'offlineLogDirs' | 'offlineReplicas'> | null {
    const failure = this.logDirFailures.get(id);
    if (failure === undefined || failure.incarnation !== record.incarnation) return null;
    return {
      offlineLogDirs: failure.offlineLogDirs,
      offlineReplicas: new Set(failure.offlineReplicas.map((r) => topicPartitionKey(r.topic, r.partition))),
    };
  }

  /** The key's mod revision as of this image; 0n when absent (what a CAS on absence compares). */
  modRevision(key: string): bigint {
    return this.modRevisions.get(key) ?? 0n;
  }

  /** The raw partition record (the controller changes it by CAS on modRevision of its key). */
  partitionRecord(topic: string, partition: number): PartitionRecord | undefined {
    return this.partitionRecords.get(topic)?.get(partition);
  }

  topicRecord(name: string): TopicRecord | undefined {
    return this.topicRecords.get(name);
  }

  private put(key: string, value: string, modRevision: bigint): boolean {
    const k = this.keys.parse(key);
    if (k === null) return false;
    this.modRevisions.set(key, modRevision);
    switch (k.kind) {
      case 'controller':
        this.controllerId = Number(value);
        return true;
      case 'broker': {
        const record = decodeJson<BrokerRecord>(value, key);
        this.brokerRecords.set(k.id, { record, epoch: modRevision });
        this.brokersDirty = true;
        return true;
      }
      case 'shutdown':
        this.shuttingDown.add(k.id);
        this.brokersDirty = true;
        return true;
      case 'logDirFailure':
        this.logDirFailures.set(k.id, decodeJson<LogDirFailureRecord>(value, key));
        this.brokersDirty = true;
        return true;
      case 'topic':
        this.topicRecords.set(k.name, decodeJson<TopicRecord>(value, key));
        this.dirtyTopics.add(k.name);
        return true;
      case 'partition': {
        let parts = this.partitionRecords.get(k.topic);
        if (parts === undefined) {
          parts = new Map();
          this.partitionRecords.set(k.topic, parts);
        }
        parts.set(k.partition, decodeJson<PartitionRecord>(value, key));
        this.dirtyTopics.add(k.topic);
        return true;
      }
      case 'topicConfig':
        this.topicConfigs.set(k.name, Object.freeze(decodeJson<ConfigMap>(value, key)));
        this.topicConfigsDirty = true;
        return true;
      case 'brokerConfig':
        this.brokerConfigs.set(k.entity, Object.freeze(decodeJson<ConfigMap>(value, key)));
        this.brokerConfigsDirty = true;
        return true;
      case 'clientQuota':
        this.clientQuotas.set(k.entity, Object.freeze(decodeJson<ConfigMap>(value, key)));
        this.clientQuotasDirty = true;
        return true;
      case 'scramUser':
        this.scramUsers.set(k.user, Object.freeze(decodeJson<ConfigMap>(value, key)));
        this.scramUsersDirty = true;
        return true;
      case 'acl':
        this.acls.set(k.id, Object.freeze(decodeJson<AclRecord>(value, key)));
        this.aclsDirty = true;
        return true;
    }
  }

  private delete(key: string): boolean {
    const k = this.keys.parse(key);
    if (k === null) return false;
    this.modRevisions.delete(key);
    switch (k.kind) {
      case 'controller':
        this.controllerId = -1;
        return true;
      case 'broker':
        this.brokerRecords.delete(k.id);
        this.brokersDirty = true;
        return true;
      case 'shutdown':
        this.shuttingDown.delete(k.id);
        this.brokersDirty = true;
        return true;
      case 'logDirFailure':
        this.logDirFailures.delete(k.id);
        this.brokersDirty = true;
        return true;
      case 'topic':
        this.topicRecords.delete(k.name);
        this.dirtyTopics.add(k.name);
        return true;
      case 'partition':
        this.partitionRecords.get(k.topic)?.delete(k.partition);
        this.dirtyTopics.add(k.topic);
        return true;
      case 'topicConfig':
        this.topicConfigs.delete(k.name);
        this.topicConfigsDirty = true;
        return true;
      case 'brokerConfig':
        this.brokerConfigs.delete(k.entity);
        this.brokerConfigsDirty = true;
        return true;
      case 'clientQuota':
        this.clientQuotas.delete(k.entity);
        this.clientQuotasDirty = true;
        return true;
      case 'scramUser':
        this.scramUsers.delete(k.user);
        this.scramUsersDirty = true;
        return true;
      case 'acl':
        this.acls.delete(k.id);
        this.aclsDirty = true;
        return true;
    }
  }

  private rebuildTopic(name: string): void {
    const record = this.topicRecords.get(name);
    if (record === undefined) {
      this.topicInfos.delete(name);
      if ((this.partitionRecords.get(name)?.size ?? 0) === 0) this.partitionRecords.delete(name);
      return;
    }
    const parts = this.partitionRecords.get(name);
    const partitions: PartitionState[] = [];
    // Partition keys written after the topic key (a large topic is created in several
    // transactions) show as leaderless until they exist.
    for (let p = 0; p < record.assignment.length; p++) {
      const r = parts?.get(p);
      partitions.push(
        Object.freeze({
          topic: name,
          partition: p,
          leader: r?.leader ?? -1,
          leaderEpoch: r?.leaderEpoch ?? 0,
          partitionEpoch: r?.partitionEpoch ?? 0,
          replicas: r?.replicas ?? record.assignment[p]!,
          isr: r?.isr ?? [],
          addingReplicas: r?.addingReplicas ?? [],
          removingReplicas: r?.removingReplicas ?? [],
        }),
      );
    }
    this.topicInfos.set(
      name,
      Object.freeze({ name, topicId: record.topicId, internal: record.internal, partitions }),
    );
  }
}
