import type { BrokerEndpoint, ConfigMap } from './cluster-metadata.js';

/**
 * The key layout under `/skiff/<cluster-id>/` and the JSON of each value, shared by the
 * controller (the only writer of topics, partitions and configs), the brokers (writers of their own
 * registration, shutdown flag and controller requests) and the image builder (reader of all).
 *
 *   brokers/<id>                  BrokerRecord, on the broker's lease; epoch = its mod revision
 *   shutdown/<id>                 '1' while the broker is in controlled shutdown, on its lease
 *   log-dir-failures/<id>         LogDirFailureRecord: the broker's offline log dirs, on its lease
 *   controller                    election key: the active controller's node id, on its lease
 *   controller-state/broker-epochs the epochs the controller last handled, { id: epoch }
 *   controller-state/shutdown-seen the brokers the controller saw in controlled shutdown and not
 *                                 back since, [id, ...]
 *   topics/<name>                 TopicRecord
 *   partitions/<topic>/<p>        PartitionRecord, changed only by the controller with CAS
 *   configs/topics/<name>         ConfigMap
 *   configs/brokers/<id|<default>> ConfigMap
 *   configs/quotas/<entity>       ConfigMap of client quota values (client-quotas.ts)
 *   configs/users/<encoded user>  ConfigMap of SCRAM mechanism → stored credential (scram-credentials.ts)
 *   acls/<id>                     AclRecord, one ACL binding (acls.ts)
 *   requests/<request id>         ControllerRequest, on the requesting broker's lease
 *   responses/<broker>/<request>  ControllerResponse, on the requesting broker's lease
 *
 * Outside the root, so that no broker snapshot or watch carries it (isr-history.ts):
 *   /skiff-history/<cluster-id>/isr/<topic>/<p>/<partition epoch>  IsrChangeRecord
 */
export class MetadataKeys {
  readonly root: string;

  constructor(readonly clusterId: string) {
    if (clusterId === '' || clusterId.includes('/')) throw new RangeError(`bad cluster id '${clusterId}'`);
    this.root = `/skiff/${clusterId}/`;
  }

  get brokers(): string {
    return `${this.root}brokers/`;
  }
  broker(id: number): string {
    return `${this.brokers}${id}`;
  }
  get shutdowns(): string {
    return `${this.root}shutdown/`;
  }
  shutdown(id: number): string {
    return `${this.shutdowns}${id}`;
  }
  get logDirFailures(): string {
    return `${this.root}log-dir-failures/`;
  }
  logDirFailure(id: number): string {
    return `${this.logDirFailures}${id}`;
  }
  get controller(): string {
    return `${this.root}controller`;
  }
  /** The broker epochs the controller last acted on, so a successor notices restarts in between. */
  get brokerEpochs(): string {
    return `${this.root}controller-state/broker-epochs`;
  }
  /**
   * The brokers seen in controlled shutdown, so a successor tells a clean stop from a lost session
   * when the broker is gone before it takes over (the stopping broker ran the active controller).
   */
  get shutdownSeen(): string {
    return `${this.root}controller-state/shutdown-seen`;
  }
  get topics(): string {
    return `${this.root}topics/`;
  }
  topic(name: string): string {
    return `${this.topics}${name}`;
  }
  get partitions(): string {
    return `${this.root}partitions/`;
  }
  topicPartitions(topic: string): string {
    return `${this.partitions}${topic}/`;
  }
  partition(topic: string, p: number): string {
    return `${this.partitions}${topic}/${p}`;
  }
  get topicConfigs(): string {
    return `${this.root}configs/topics/`;
  }
  topicConfig(name: string): string {
    return `${this.topicConfigs}${name}`;
  }
  get brokerConfigs(): string {
    return `${this.root}configs/brokers/`;
  }
  brokerConfig(entity: string): string {
    return `${this.brokerConfigs}${entity}`;
  }
  get clientQuotas(): string {
    return `${this.root}configs/quotas/`;
  }
  clientQuota(entity: string): string {
    return `${this.clientQuotas}${entity}`;
  }
  get scramUsers(): string {
    return `${this.root}configs/users/`;
  }
  /** A user's SCRAM credentials; the name URI-encoded, since a user name may hold '/'. */
  scramUser(user: string): string {
    return `${this.scramUsers}${encodeURIComponent(user)}`;
  }
  get acls(): string {
    return `${this.root}acls/`;
  }
  acl(id: string): string {
    return `${this.acls}${id}`;
  }
  get requests(): string {
    return `${this.root}requests/`;
  }
  request(id: string): string {
    return `${this.requests}${id}`;
  }
  responses(brokerId: number): string {
    return `${this.root}responses/${brokerId}/`;
  }
  response(brokerId: number, requestId: string): string {
    return `${this.responses(brokerId)}${requestId}`;
  }

  /** The durable ISR history of a topic (isr-history.ts), outside the watched root. */
  isrHistoryTopic(topic: string): string {
    return `/skiff-history/${this.clusterId}/isr/${topic}/`;
  }

  /** Classifies a key under the root; null for keys of no interest to the image. */
  parse(key: string): ParsedKey | null {
    if (!key.startsWith(this.root)) return null;
    const rest = key.slice(this.root.length);
    const slash = rest.indexOf('/');
    const head = slash < 0 ? rest : rest.slice(0, slash);
    const tail = slash < 0 ? '' : rest.slice(slash + 1);
    switch (head) {
      case 'controller':
        return tail === '' ? { kind: 'controller' } : null;
      case 'brokers':
      case 'shutdown':
      case 'log-dir-failures': {
        const id = Number(tail);
        if (!Number.isInteger(id) || tail === '') return null;
        return {
          kind: head === 'brokers' ? 'broker' : head === 'shutdown' ? 'shutdown' : 'logDirFailure',
          id,
        };
      }
      case 'topics':
        return tail === '' ? null : { kind: 'topic', name: tail };
      case 'partitions': {
        const at = tail.lastIndexOf('/');
        const p = Number(tail.slice(at + 1));
        if (at <= 0 || !Number.isInteger(p)) return null;
        return { kind: 'partition', topic: tail.slice(0, at), partition: p };
      }
      case 'configs': {
        if (tail.startsWith('topics/')) return { kind: 'topicConfig', name: tail.slice('topics/'.length) };
        if (tail.startsWith('brokers/'))
          return { kind: 'brokerConfig', entity: tail.slice('brokers/'.length) };
        if (tail.startsWith('quotas/') && tail.length > 'quotas/'.length)
          return { kind: 'clientQuota', entity: tail.slice('quotas/'.length) };
        if (tail.startsWith('users/') && tail.length > 'users/'.length)
          return { kind: 'scramUser', user: decodeURIComponent(tail.slice('users/'.length)) };
        return null;
      }
      case 'acls':
        return tail === '' ? null : { kind: 'acl', id: tail };
      default:
        return null;
    }
  }
}

export type ParsedKey =
  | { kind: 'controller' }
  | { kind: 'broker' | 'shutdown' | 'logDirFailure'; id: number }
  | { kind: 'topic'; name: string }
  | { kind: 'partition'; topic: string; partition: number }
  | { kind: 'topicConfig'; name: string }
  | { kind: 'brokerConfig'; entity: string }
  | { kind: 'clientQuota'; entity: string }
  | { kind: 'scramUser'; user: string }
  | { kind: 'acl'; id: string };

export interface BrokerRecord {
  /** The first endpoint's address: what a reader of single-endpoint records (before listeners) reads. */
  readonly host: string;
  readonly port: number;
  /**
   * Every advertised listener. Absent in records written before brokers had several listeners:
   * those are one PLAINTEXT listener at host:port.
   */
  readonly endpoints?: readonly BrokerEndpoint[];
  readonly rack: string | null;
  /** Random per process start: tells a restart from an update. */
  readonly incarnation: string;
  /**
   * True from registration until the broker listens (Kafka registers brokers fenced and unfences
   * them once ready): a fenced broker is left out of the image, so no client is sent to it and no
   * leadership goes to it before its logs are loaded. Absent means unfenced.
   */
  readonly fenced?: boolean;
}

/**
 * A broker's failed log dirs and the replicas that were in them (what Kafka's brokers report in
 * their heartbeat as offline dirs, with KIP-858's directory assignments saying which replicas
 * those are). Written by the broker on its lease; valid only for the incarnation that wrote it,
 * since a restarted broker has its dirs back.
 */
export interface LogDirFailureRecord {
  readonly incarnation: string;
  readonly offlineLogDirs: readonly string[];
  readonly offlineReplicas: readonly { readonly topic: string; readonly partition: number }[];
}

export interface TopicRecord {
  readonly topicId: string;
  readonly internal: boolean;
  /** The assignment at creation (and after CreatePartitions); partition keys are authoritative. */
  readonly assignment: readonly (readonly number[])[];
  /** The controller request that created it, so a retried request is recognised. */
  readonly requestId: string | null;
}

export interface PartitionRecord {
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  readonly addingReplicas: readonly number[];
  readonly removingReplicas: readonly number[];
}

export function decodeJson<T>(value: string, what: string): T {
  try {
    return JSON.parse(value) as T;
  } catch {
    throw new Error(`corrupt metadata value for ${what}: ${value.slice(0, 80)}`);
  }
}

export function encodeConfigMap(map: ConfigMap): string {
  return JSON.stringify(Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : 1))));
}
