import { isReplicationMetadata } from '../../metadata/cluster-metadata.js';
import type { ElectLeadersRequest } from '../../protocol/generated/ElectLeadersRequest.js';
import type {
  ElectLeadersResponse,
  ReplicaElectionResult,
} from '../../protocol/generated/ElectLeadersResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';

/**
 * ElectLeaders (preferred or unclean election, `kafka-leader-election.sh`): forwarded to the
 * controller through the metadata store. Single-process metadata has one broker per partition,
 * whose only replica already leads: every named partition answers ELECTION_NOT_NEEDED.
 */
export async function handleElectLeaders(
  b: BrokerServices,
  ctx: RequestContext,
  req: ElectLeadersRequest,
): Promise<ElectLeadersResponse> {
  const electionType = req.electionType === 1 ? 'unclean' : 'preferred';
  if (req.electionType !== 0 && req.electionType !== 1) {
    return failAll(
      req,
      ctx.apiVersion,
      ErrorCode.INVALID_REQUEST,
      `unknown election type ${req.electionType}`,
    );
  }
  const topics = req.topicPartitions?.map((t) => ({ topic: t.topic, partitions: t.partitions })) ?? null;
  if (!isReplicationMetadata(b.metadata)) return notNeeded(b, req);
  const result = await b.metadata.electLeaders(electionType, topics);
  if (result.errorCode !== ErrorCode.NONE) {
    return failAll(req, ctx.apiVersion, result.errorCode, null);
  }
  return {
    throttleTimeMs: 0,
    errorCode: ErrorCode.NONE,
    replicaElectionResults: result.topics.map((t) => ({
      topic: t.topic,
      partitionResult: t.partitions.map((p) => ({
        partitionId: p.partition,
        errorCode: p.errorCode,
        errorMessage: p.errorMessage,
      })),
    })),
  };
}

function notNeeded(b: BrokerServices, req: ElectLeadersRequest): ElectLeadersResponse {
  const image = b.metadata.image();
  const results: ReplicaElectionResult[] = (req.topicPartitions ?? []).map((t) => ({
    topic: t.topic,
    partitionResult: t.partitions.map((partitionId) => {
      const known = image.topics.get(t.topic)?.partitions[partitionId] !== undefined;
      return known
        ? {
            partitionId,
            errorCode: ErrorCode.ELECTION_NOT_NEEDED,
            errorMessage: 'Leader election not needed',
          }
        : { partitionId, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: null };
    }),
  }));
  return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, replicaElectionResults: results };
}

/** v1+ carry a request-level error; v0 has none, so each partition carries it. */
function failAll(
  req: ElectLeadersRequest,
  version: number,
  errorCode: number,
  errorMessage: string | null,
): ElectLeadersResponse {
  const results = (req.topicPartitions ?? []).map((t) => ({
    topic: t.topic,
    partitionResult: t.partitions.map((partitionId) => ({ partitionId, errorCode, errorMessage })),
  }));
  return {
    throttleTimeMs: 0,
    errorCode: version >= 1 ? errorCode : ErrorCode.NONE,
    replicaElectionResults: results,
  };
}
