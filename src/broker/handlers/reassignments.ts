/**
 * AlterPartitionReassignments and ListPartitionReassignments (`kafka-reassign-partitions.sh`,
 * `kafka-topics.sh --describe`'s Adding/Removing Replicas). Alter is forwarded to the controller
 * through the metadata store, as the other admin APIs are; the controller records the move as
 * adding/removing replicas and completes it once every adding replica is in the ISR. List reads
 * the broker's metadata image, which is the controller's committed state as of the image's
 * revision (Kafka answers it from the controller's own image: same data, one hop fewer).
 *
 * With single-process metadata (one broker, no controller to move replicas) a reassignment can only
 * name the replicas a partition already has: that is a no-op, anything else INVALID_REPLICA_ASSIGNMENT.
 */
import { topicPartitionKey } from '../../common/topic-partition.js';
import type { MetadataImage, PartitionState } from '../../metadata/cluster-metadata.js';
import type { AlterPartitionReassignmentsRequest } from '../../protocol/generated/AlterPartitionReassignmentsRequest.js';
import type { AlterPartitionReassignmentsResponse } from '../../protocol/generated/AlterPartitionReassignmentsResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { ListPartitionReassignmentsRequest } from '../../protocol/generated/ListPartitionReassignmentsRequest.js';
import type {
  ListPartitionReassignmentsResponse,
  OngoingTopicReassignment,
} from '../../protocol/generated/ListPartitionReassignmentsResponse.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';

type PartitionAnswer = { partitionIndex: number; errorCode: number; errorMessage: string | null };

export async function handleAlterPartitionReassignments(
  b: BrokerServices,
  _ctx: RequestContext,
  req: AlterPartitionReassignmentsRequest,
): Promise<AlterPartitionReassignmentsResponse> {
  const image = b.metadata.image();
  // Checked here so each refusal carries Kafka's message; the controller checks again on its image.
  const answers = new Map<string, PartitionAnswer>();
  const forward: { topic: string; partitions: { partition: number; replicas: number[] | null }[] }[] = [];
  for (const t of req.topics) {
    const send: { partition: number; replicas: number[] | null }[] = [];
    for (const p of t.partitions) {
      const refusal = precheck(image, t.name, p.partitionIndex, p.replicas);
      if (refusal !== null) answers.set(topicPartitionKey(t.name, p.partitionIndex), refusal);
      else send.push({ partition: p.partitionIndex, replicas: p.replicas });
    }
    if (send.length > 0) forward.push({ topic: t.name, partitions: send });
  }
  if (forward.length > 0) {
    const result = await b.metadata.alterPartitionReassignments(forward);
    if (result.errorCode !== ErrorCode.NONE) {
      return {
        throttleTimeMs: 0,
        errorCode: result.errorCode,
        errorMessage: null,
        responses: req.topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            errorCode: result.errorCode,
            errorMessage: null,
          })),
        })),
      };
    }
    for (const t of result.topics) {
      for (const p of t.partitions) {
        answers.set(topicPartitionKey(t.topic, p.partition), {
          partitionIndex: p.partition,
          errorCode: p.errorCode,
          errorMessage: p.errorMessage ?? messageFor(p.errorCode),
        });
      }
    }
  }
  return {
    throttleTimeMs: 0,
    errorCode: ErrorCode.NONE,
    errorMessage: null,
    responses: req.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map(
        (p) =>
          answers.get(topicPartitionKey(t.name, p.partitionIndex)) ?? {
            partitionIndex: p.partitionIndex,
            errorCode: ErrorCode.UNKNOWN_SERVER_ERROR,
            errorMessage: 'the controller gave no result for this partition',
          },
      ),
    })),
  };
}

function partitionOf(image: MetadataImage, topic: string, partition: number): PartitionState | undefined {
  return image.topics.get(topic)?.partitions[partition];
}

function precheck(
  image: MetadataImage,
  topic: string,
  partition: number,
  replicas: readonly number[] | null,
): PartitionAnswer | null {
  const refuse = (errorCode: number, errorMessage: string): PartitionAnswer => ({
    partitionIndex: partition,
    errorCode,
    errorMessage,
  });
  if (partitionOf(image, topic, partition) === undefined) {
    return refuse(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'This server does not host this topic-partition.');
  }
  if (replicas === null) return null;
  if (replicas.length === 0) {
    return refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'The replica list cannot be empty.');
  }
  if (new Set(replicas).size !== replicas.length) {
    return refuse(ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'The replica list cannot contain duplicates.');
  }
  const unknown = replicas.find((r) => !image.brokers.has(r));
  if (unknown !== undefined) {
    return refuse(
      ErrorCode.INVALID_REPLICA_ASSIGNMENT,
      `The manual partition assignment includes broker ${unknown}, but no such broker is registered.`,
    );
  }
  return null;
}

function messageFor(errorCode: number): string | null {
  switch (errorCode) {
    case ErrorCode.NO_REASSIGNMENT_IN_PROGRESS:
      return 'No ongoing reassignment for this partition.';
    case ErrorCode.INVALID_REPLICA_ASSIGNMENT:
      return 'The reassignment would leave no in-sync replica.';
    default:
      return null;
  }
}

function inProgress(p: PartitionState): boolean {
  return p.addingReplicas.length > 0 || p.removingReplicas.length > 0;
}

export async function handleListPartitionReassignments(
  b: BrokerServices,
  _ctx: RequestContext,
  req: ListPartitionReassignmentsRequest,
): Promise<ListPartitionReassignmentsResponse> {
  const image = b.metadata.image();
  const out: OngoingTopicReassignment[] = [];
  const describe = (p: PartitionState) => ({
    partitionIndex: p.partition,
    replicas: [...p.replicas],
    addingReplicas: [...p.addingReplicas],
    removingReplicas: [...p.removingReplicas],
  });
  if (req.topics === null) {
    for (const t of image.topics.values()) {
      const moving = t.partitions.filter(inProgress);
      if (moving.length > 0) out.push({ name: t.name, partitions: moving.map(describe) });
    }
  } else {
    // Unknown topics and partitions, and ones not moving, are left out (as Kafka's controller does).
    for (const t of req.topics) {
      const topic = image.topics.get(t.name);
      if (topic === undefined) continue;
      const moving = t.partitionIndexes
        .map((i) => topic.partitions[i])
        .filter((p): p is PartitionState => p !== undefined && inProgress(p));
      if (moving.length > 0) out.push({ name: t.name, partitions: moving.map(describe) });
    }
  }
  return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, errorMessage: null, topics: out };
}
