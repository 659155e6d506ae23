/**
 * DescribeProducers (KIP-664): the producers a partition replica's producer state holds, as
 * Kafka's KafkaApis.handleDescribeProducersRequest and ReplicaManager.activeProducerState answer
 * them. Any replica this broker hosts answers from its own log (the admin client asks the leader
 * unless told otherwise); a topic this broker does not know is UNKNOWN_TOPIC_OR_PARTITION, a
 * partition it does not host NOT_LEADER_OR_FOLLOWER.
 */
import { validateTopicName } from '../../metadata/topic-name.js';
import type { DescribeProducersRequest } from '../../protocol/generated/DescribeProducersRequest.js';
import type {
  DescribeProducersResponse,
  PartitionResponse,
  ProducerState,
} from '../../protocol/generated/DescribeProducersResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import { AclOperation, ResourceType } from '../../security/acl.js';
import type { ProducerStateEntry } from '../../storage/producer-state.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';
import { notHostedError } from './partition-errors.js';

export async function handleDescribeProducers(
  b: BrokerServices,
  ctx: RequestContext,
  req: DescribeProducersRequest,
): Promise<DescribeProducersResponse> {
  const image = b.metadata.image();
  // Kafka: READ on each topic.
  const readable = b.authorization.filter(
    ctx,
    AclOperation.READ,
    ResourceType.TOPIC,
    req.topics.map((t) => t.name),
  );
  return {
    throttleTimeMs: 0,
    topics: req.topics.map((t) => {
      const invalid = validateTopicName(t.name);
      const topicError = !readable.has(t.name)
        ? { errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED, errorMessage: null }
        : invalid.errorCode !== ErrorCode.NONE
          ? { errorCode: invalid.errorCode, errorMessage: invalid.errorMessage }
          : image.topics.has(t.name)
            ? null
            : { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: null };
      return {
        name: t.name,
        partitions: t.partitionIndexes.map((partitionIndex): PartitionResponse => {
          if (topicError !== null) return { partitionIndex, ...topicError, activeProducers: [] };
          const p = b.replicaManager.getPartition(t.name, partitionIndex);
          if (p === undefined) {
            return {
              partitionIndex,
              errorCode: notHostedError(b, t.name, partitionIndex),
              errorMessage: null,
              activeProducers: [],
            };
          }
          return {
            partitionIndex,
            errorCode: ErrorCode.NONE,
            errorMessage: null,
            activeProducers: p.log.producerState.activeProducers().map(producerState),
          };
        }),
      };
    }),
  };
}

/** One producer as DescribeProducers reports it: the last sequence is that of its newest batch. */
function producerState(e: ProducerStateEntry): ProducerState {
  return {
    producerId: e.producerId,
    producerEpoch: e.producerEpoch,
    lastSequence: e.batches.at(-1)?.lastSeq ?? -1,
    lastTimestamp: e.lastTimestamp,
    coordinatorEpoch: e.coordinatorEpoch,
    currentTxnStartOffset: e.currentTxnFirstOffset,
  };
}
