/**
 * DescribeLogDirs (Kafka's ReplicaManager.describeLogDirs): per log dir, the partitions it holds
 * with their size (sum of the .log files), offsetLag (Partition.offsetLag: the leader's LEO minus
 * this replica's; on a replicated follower the leader's LEO as last seen is the leader's HW from
 * its latest Fetch answer, so the lag reported is a lower bound, exact once the follower is caught
 * up to the HW — Kafka sends followers no leader LEO) and isFuture=false; a replica being moved to
 * another log dir (AlterReplicaLogDirs) also shows its future log there, isFuture=true, with
 * offsetLag = the current log's LEO minus the future log's. v4 adds the dir's total and usable bytes.
 * A failed (offline) log dir answers KAFKA_STORAGE_ERROR and nothing else, as Kafka's does.
 */
import * as path from 'node:path';
import type { DescribeLogDirsRequest } from '../../protocol/generated/DescribeLogDirsRequest.js';
import type {
  DescribeLogDirsResponse,
  DescribeLogDirsResult,
  DescribeLogDirsTopic,
} from '../../protocol/generated/DescribeLogDirsResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';

export async function handleDescribeLogDirs(
  b: BrokerServices,
  _ctx: RequestContext,
  req: DescribeLogDirsRequest,
): Promise<DescribeLogDirsResponse> {
  const wanted =
    req.topics === null ? null : new Map(req.topics.map((t) => [t.topic, new Set(t.partitions)]));
  const byDir = new Map<string, Map<string, DescribeLogDirsTopic>>();
  for (const dir of b.config.logDirs) byDir.set(dir, new Map());
  for (const p of b.replicaManager.allPartitions()) {
    if (wanted !== null && !wanted.get(p.topic)?.has(p.index)) continue;
    const topics = byDir.get(b.replicaManager.logDirOf(p.topic, p.index) ?? '');
    if (topics === undefined) continue;
    let t = topics.get(p.topic);
    if (t === undefined) {
      t = { name: p.topic, partitions: [] };
      topics.set(p.topic, t);
    }
    t.partitions.push({
      partitionIndex: p.index,
      partitionSize: BigInt(p.log.size),
      offsetLag: p.offsetLag(),
      isFutureKey: false,
    });
  }
  for (const f of b.alterLogDirs?.futureReplicas() ?? []) {
    if (wanted !== null && !wanted.get(f.topic)?.has(f.partition)) continue;
    const topics = byDir.get(f.logDir);
    if (topics === undefined) continue;
    let t = topics.get(f.topic);
    if (t === undefined) {
      t = { name: f.topic, partitions: [] };
      topics.set(f.topic, t);
    }
    t.partitions.push({
      partitionIndex: f.partition,
      partitionSize: BigInt(f.sizeBytes),
      offsetLag: f.offsetLag,
      isFutureKey: true,
    });
  }
  const results: DescribeLogDirsResult[] = [...byDir].map(([logDir, topics]) => {
    // Kafka's answer for an offline dir: its path and KAFKA_STORAGE_ERROR, nothing else known.
    if (b.replicaManager.isLogDirOffline(logDir)) {
      return {
        errorCode: ErrorCode.KAFKA_STORAGE_ERROR,
        logDir: path.resolve(logDir),
        topics: [],
        totalBytes: -1n,
        usableBytes: -1n,
      };
    }
    let space: { totalBytes: bigint; usableBytes: bigint };
    try {
      space = b.diskSpace(logDir);
    } catch {
      space = { totalBytes: -1n, usableBytes: -1n };
    }
    return {
      errorCode: ErrorCode.NONE,
      // Kafka names dirs by their absolute path.
      logDir: path.resolve(logDir),
      topics: [...topics.values()].sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0)),
      ...space,
    };
  });
  return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, results };
}
