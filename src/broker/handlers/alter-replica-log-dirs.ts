/**
 * AlterReplicaLogDirs (`kafka-reassign-partitions.sh` with log_dirs): moves replicas hosted here to
 * another of this broker's log dirs. Each replica's answer is the move's start, not its end — the
 * copy runs in AlterLogDirsManager and DescribeLogDirs shows the future log (isFuture) meanwhile.
 */
import type { AlterReplicaLogDirsRequest } from '../../protocol/generated/AlterReplicaLogDirsRequest.js';
import type {
  AlterReplicaLogDirsResponse,
  AlterReplicaLogDirTopicResult,
} from '../../protocol/generated/AlterReplicaLogDirsResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';

export async function handleAlterReplicaLogDirs(
  b: BrokerServices,
  _ctx: RequestContext,
  req: AlterReplicaLogDirsRequest,
): Promise<AlterReplicaLogDirsResponse> {
  const byTopic = new Map<string, AlterReplicaLogDirTopicResult>();
  for (const dir of req.dirs) {
    for (const t of dir.topics) {
      let result = byTopic.get(t.name);
      if (result === undefined) {
        result = { topicName: t.name, partitions: [] };
        byTopic.set(t.name, result);
      }
      for (const partitionIndex of t.partitions) {
        result.partitions.push({ partitionIndex, errorCode: alterOne(b, t.name, partitionIndex, dir.path) });
      }
    }
  }
  return { throttleTimeMs: 0, results: [...byTopic.values()] };
}

function alterOne(b: BrokerServices, topic: string, partition: number, logDir: string): number {
  if (b.alterLogDirs === undefined) return ErrorCode.REPLICA_NOT_AVAILABLE;
  try {
    return b.alterLogDirs.alterReplicaLogDir(topic, partition, logDir);
  } catch (e) {
    b.logger.warn(
      `${topic}-${partition}: cannot start a move to ${logDir}: ${e instanceof Error ? e.message : String(e)}`,
    );
    return ErrorCode.KAFKA_STORAGE_ERROR;
  }
}
