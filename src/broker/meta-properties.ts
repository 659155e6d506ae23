/**
 * Kafka's `meta.properties` in every log dir (KRaft format, version=1): which cluster and node
 * the directory belongs to. Written on first start; on later starts a different node.id or
 * cluster.id refuses to start, as Kafka does, so a misconfigured broker cannot serve (or
 * truncate) another broker's data.
 */
import * as path from 'node:path';
import type { FileSystem } from '../storage/fs.js';
import { parseProperties } from './config.js';

export const META_PROPERTIES = 'meta.properties';

export interface MetaProperties {
  readonly clusterId: string;
  readonly nodeId: number;
  /** directory.id (Kafka 3.7+): a Uuid per log dir. */
  readonly directoryId: string;
}

export function readMetaProperties(fs: FileSystem, logDir: string): MetaProperties | null {
  const file = path.join(logDir, META_PROPERTIES);
  if (!fs.exists(file)) return null;
  const props = parseProperties(fs.readFile(file).toString('utf8'));
  const nodeId = Number(props.get('node.id') ?? props.get('broker.id'));
  const clusterId = props.get('cluster.id');
  if (!Number.isInteger(nodeId) || clusterId === undefined) {
    throw new Error(`${file}: needs node.id and cluster.id`);
  }
  return { clusterId, nodeId, directoryId: props.get('directory.id') ?? '' };
}

/**
 * Checks (or creates) meta.properties in each log dir for this node and cluster. Throws with a
 * message naming the directory when a dir belongs to another node or cluster.
 */
export function ensureMetaProperties(
  fs: FileSystem,
  logDirs: readonly string[],
  nodeId: number,
  clusterId: string,
  randomBytes: (n: number) => Buffer,
): void {
  for (const dir of logDirs) {
    fs.mkdirp(dir);
    const existing = readMetaProperties(fs, dir);
    if (existing) {
      if (existing.nodeId !== nodeId) {
        throw new Error(
          `${path.join(dir, META_PROPERTIES)}: stored node id ${existing.nodeId} doesn't match the configured node.id ${nodeId}`,
        );
      }
      if (existing.clusterId !== clusterId) {
        throw new Error(
          `${path.join(dir, META_PROPERTIES)}: the log dir belongs to cluster ${existing.clusterId}, not ${clusterId}`,
        );
      }
      continue;
    }
    const directoryId = randomBytes(16).toString('base64url');
    const text = [
      '#',
      `version=1`,
      `cluster.id=${clusterId}`,
      `node.id=${nodeId}`,
      `directory.id=${directoryId}`,
      '',
    ].join('\n');
    fs.writeFileAtomic(path.join(dir, META_PROPERTIES), Buffer.from(text));
  }
}
