/**
 * Produce (Kafka's KafkaApis.handleProduceRequest + ReplicaManager.appendRecords): each partition
 * is appended on its leader; acks=1 answers after the local append, acks=-1 once replication's
 * acks=all rule holds for the append (at once with an ISR of one), acks=0 never answers — and, as in Kafka, closes the
 * connection when a partition failed so that the producer notices.
 */

import { CloseConnectionError } from '../../network/request-handler.js';
import type { ProduceRequest } from '../../protocol/generated/ProduceRequest.js';
import {
  defaultPartitionProduceResponse,
  type PartitionProduceResponse,
  type ProduceResponse,
} from '../../protocol/generated/ProduceResponse.js';
import { KafkaError } from '../../protocol/kafka-error.js';
import type { PartitionLeaderState } from '../../replication/leader-state.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';
import type { Partition } from '../partition.js';
import { awaitCondition } from '../purgatory.js';
import { partitionKey } from '../replica-manager.js';

const UNKNOWN_TOPIC_OR_PARTITION = 3;
const NOT_LEADER_OR_FOLLOWER = 6;
const REQUEST_TIMED_OUT = 7;
const INVALID_TOPIC_EXCEPTION = 17;
const INVALID_REQUIRED_ACKS = 21;
const INVALID_RECORD = 87;
const UNKNOWN_SERVER_ERROR = -1;

interface Pending {
  readonly partition: Partition;
  readonly response: PartitionProduceResponse;
  /** The HW that acknowledges the append. */
  readonly requiredHw: bigint;
  /** Replication's leader state at the append: its acks=all rule decides. */
  readonly leader: PartitionLeaderState;
}

function errorResponse(index: number, code: number, message: string | null): PartitionProduceResponse {
  return { ...defaultPartitionProduceResponse(), index, errorCode: code, errorMessage: message };
}

/** The error for a partition this broker does not host: unknown topic, or another broker's. */
export function notHostedError(b: BrokerServices, topic: string, partition: number): number {
  const t = b.metadata.image().topics.get(topic);
  return t && partition >= 0 && partition < t.partitions.length
    ? NOT_LEADER_OR_FOLLOWER
    : UNKNOWN_TOPIC_OR_PARTITION;
}

export function errorCodeOf(e: unknown, b: BrokerServices, what: string): { code: number; message: string } {
  if (e instanceof KafkaError) return { code: e.code, message: e.message };
  // Not an operating error: a bug or an I/O failure. Answer it for this partition and say so.
  const message = e instanceof Error ? e.message : String(e);
  b.logger.warn(`${what}: unexpected error: ${e instanceof Error ? (e.stack ?? message) : message}`);
  return { code: UNKNOWN_SERVER_ERROR, message };
}

export async function handleProduce(
  b: BrokerServices,
  ctx: RequestContext,
  req: ProduceRequest,
): Promise<ProduceResponse | null> {
  const acks = req.acks;
  const validAcks = acks === 0 || acks === 1 || acks === -1;
  const pending: Pending[] = [];
  const image = b.metadata.image();
  const responses = req.topicData.map((t) => ({
    name: t.name,
    partitionResponses: t.partitionData.map((pd) => {
      if (!validAcks) return errorResponse(pd.index, INVALID_REQUIRED_ACKS, null);
      // Only the broker writes its internal topics: a client record in __consumer_offsets would
      // be replayed as group state.
      if (image.topics.get(t.name)?.internal) {
        return errorResponse(pd.index, INVALID_TOPIC_EXCEPTION, `Cannot append to internal topic ${t.name}`);
      }
      const p = b.replicaManager.getPartition(t.name, pd.index);
      if (!p) return errorResponse(pd.index, notHostedError(b, t.name, pd.index), null);
      if (!pd.records || pd.records.length === 0) {
        return errorResponse(
          pd.index,
          INVALID_RECORD,
          'Produce requests must carry at least one record batch',
        );
      }
      try {
        const info = p.appendAsLeader(pd.records, acks);
        const response = defaultPartitionProduceResponse();
        response.index = pd.index;
        response.baseOffset = info.firstOffset;
        response.logAppendTimeMs = info.logAppendTimeMs;
        response.logStartOffset = info.logStartOffset;
        pending.push({ partition: p, response, requiredHw: info.lastOffset + 1n, leader: p.leaderState! });
        if (!info.duplicate) b.replicaManager.partitionChanged(p);
        return response;
      } catch (e) {
        const { code, message } = errorCodeOf(e, b, `produce to ${t.name}-${pd.index}`);
        return errorResponse(pd.index, code, message);
      }
    }),
  }));

  if (acks === 0) {
    const failed = responses.flatMap((t) =>
      t.partitionResponses
        .filter((p) => p.errorCode !== 0)
        .map((p) => `${t.name}-${p.index} (error ${p.errorCode})`),
    );
    if (failed.length > 0) {
      throw new CloseConnectionError(
        `acks=0 produce failed for ${failed.join(', ')}; closing so the producer notices`,
      );
    }
    return null;
  }
  if (acks === -1 && pending.length > 0) {
    // Appended: the next request on this connection may be appended while this one waits for its
    // followers (Kafka keeps the channel muted; the answers keep their order either way).
    ctx.releaseConnection();
    await awaitReplication(b, ctx, pending, req.timeoutMs);
  }
  return { responses, throttleTimeMs: 0, nodeEndpoints: [] };
}

// acks=-1: wait until every appended partition's HW covers its append, or the request timeout.
async function awaitReplication(
  b: BrokerServices,
  ctx: RequestContext,
  pending: Pending[],
  timeoutMs: number,
): Promise<void> {
  // Kafka's checkEnoughReplicasReachOffset.
  const done = (p: Pending): boolean => p.leader.checkEnoughReplicasReachOffset(p.requiredHw).done;
  if (!pending.every(done)) {
    const keys = pending.map((p) => partitionKey(p.partition.topic, p.partition.index));
    await awaitCondition(
      b.replicaManager.purgatory,
      b.scheduler,
      keys,
      timeoutMs,
      () => pending.every(done),
      (abort) => ctx.connection.whenClosed(abort),
    );
  }
  for (const p of pending) {
    const r = p.leader.checkEnoughReplicasReachOffset(p.requiredHw);
    const code = r.done ? r.errorCode : REQUEST_TIMED_OUT;
    if (code !== 0) Object.assign(p.response, { errorCode: code, baseOffset: -1n });
  }
}
