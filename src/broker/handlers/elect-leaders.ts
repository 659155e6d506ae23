import type { ElectLeadersRequest } from '../../protocol/generated/ElectLeadersRequest.js';
import type { ElectLeadersResponse } from '../../protocol/generated/ElectLeadersResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';

/**
 * ElectLeaders (preferred or unclean election, `kafka-leader-election.sh`): forwarded to the
 * controller through the metadata store, which answers per partition (ELECTION_NOT_NEEDED where
 * the preferred replica already leads, as it always does on a cluster of one).
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
