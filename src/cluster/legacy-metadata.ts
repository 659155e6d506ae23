/**
 * The topics of a single broker from before the one partition model: such a broker kept its
 * cluster id, topics and dynamic configs in `skiff-metadata.json` in its first log dir. A cluster
 * of one whose embedded store is still empty imports that file once — the cluster id (which
 * meta.properties pins), every topic with its id and assignment, topic and broker configs, client
 * quotas — so its logs keep their topics instead of being refused or deleted as strays. The file is
 * then renamed `skiff-metadata.json.imported`. A bootstrap, like the cluster id's creation: no
 * controller runs on the store yet, so these writes race nothing.
 */
import * as path from 'node:path';
import type { Logger } from '../common/logger.js';
import type { ConfigMap } from '../metadata/cluster-metadata.js';
import { encodeConfigMap, MetadataKeys, type PartitionRecord, type TopicRecord } from '../metadata/keys.js';
import { type MetadataStore, type Op, STORE_LIMITS } from '../metadata/store.js';
import type { FileSystem } from '../storage/fs.js';
import { CLUSTER_ID_KEY } from './cluster-id.js';

export const LEGACY_METADATA_FILE = 'skiff-metadata.json';

interface LegacyState {
  readonly version: 1;
  readonly clusterId: string;
  readonly topics: readonly {
    readonly name: string;
    readonly topicId: string;
    readonly internal: boolean;
    readonly replicas: readonly (readonly number[])[];
  }[];
  readonly topicConfigs: Readonly<Record<string, ConfigMap>>;
  readonly brokerConfigs: Readonly<Record<string, ConfigMap>>;
  readonly clientQuotas?: Readonly<Record<string, ConfigMap>>;
}

/** Imports `logDir`'s legacy file into `store` when the store has no cluster yet; false when there was nothing to import. */
export async function importLegacyMetadata(
  store: MetadataStore,
  logDir: string,
  fs: FileSystem,
  logger: Logger,
): Promise<boolean> {
  const file = path.join(logDir, LEGACY_METADATA_FILE);
  if (!fs.exists(file) || (await store.get(CLUSTER_ID_KEY)) !== null) return false;
  const state = parse(fs.readFile(file).toString('utf8'), file);
  const keys = new MetadataKeys(state.clusterId);
  const ops: Op[] = [];
  const put = (key: string, value: string): void => {
    ops.push({ type: 'put', key, value });
  };
  for (const t of state.topics) {
    const topic: TopicRecord = {
      topicId: t.topicId,
      internal: t.internal,
      assignment: t.replicas,
      requestId: null,
    };
    put(keys.topic(t.name), JSON.stringify(topic));
    t.replicas.forEach((replicas, p) => {
      // What the file's broker answered: the first replica leads at epoch 0 with the whole ISR.
      const partition: PartitionRecord = {
        leader: replicas[0] ?? -1,
        leaderEpoch: 0,
        partitionEpoch: 0,
        replicas,
        isr: replicas,
        addingReplicas: [],
        removingReplicas: [],
      };
      put(keys.partition(t.name, p), JSON.stringify(partition));
    });
  }
  for (const [name, map] of Object.entries(state.topicConfigs))
    put(keys.topicConfig(name), encodeConfigMap(map));
  for (const [entity, map] of Object.entries(state.brokerConfigs))
    put(keys.brokerConfig(entity), encodeConfigMap(map));
  for (const [entity, map] of Object.entries(state.clientQuotas ?? {}))
    put(keys.clientQuota(entity), encodeConfigMap(map));
  for (let i = 0; i < ops.length; i += STORE_LIMITS.maxOpsPerTxn) {
    await store.txn({ compare: [], success: ops.slice(i, i + STORE_LIMITS.maxOpsPerTxn) });
  }
  // Last: a crash before this line imports again from the start at the next start-up.
  await store.txn({ compare: [], success: [{ type: 'put', key: CLUSTER_ID_KEY, value: state.clusterId }] });
  fs.rename(file, `${file}.imported`);
  logger.info(
    `imported ${state.topics.length} topics of cluster ${state.clusterId} from ${file} into the metadata store (renamed to ${LEGACY_METADATA_FILE}.imported)`,
  );
  return true;
}

function parse(text: string, file: string): LegacyState {
  let state: Partial<LegacyState>;
  try {
    state = JSON.parse(text) as Partial<LegacyState>;
  } catch (e) {
    throw new Error(`${file}: not JSON (${(e as Error).message}); move it away to start without its topics`);
  }
  if (state.version !== 1 || typeof state.clusterId !== 'string' || !Array.isArray(state.topics)) {
    throw new Error(`${file}: not a metadata file this version of Skiff can import`);
  }
  return { topicConfigs: {}, brokerConfigs: {}, ...state } as LegacyState;
}
