/**
 * Produce (Kafka's KafkaApis.handleProduceRequest + ReplicaManager.appendRecords): each partition
 * is appended on its leader; acks=1 answers after the local append, acks=-1 once replication's
 * acks=all rule holds for the append (at once with an ISR of one), acks=0 never answers — and, as
 * in Kafka, closes the connection when a partition failed so that the producer notices.
 */

import { CloseConnectionError } from '../../network/request-handler.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { ProduceRequest } from '../../protocol/generated/ProduceRequest.js';
import {
  defaultPartitionProduceResponse,
  type PartitionProduceResponse,
  type ProduceResponse,
} from '../../protocol/generated/ProduceResponse.js';
import {
  ATTRIBUTES_OFFSET,
  BATCH_HEADER_SIZE,
  BATCH_LENGTH_OFFSET,
  isTransactional,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  readBatchHeader,
} from '../../protocol/records/batch.js';
import { awaitAcks, type PendingAcks } from '../../replication/delayed-produce.js';
import { AclOperation, ResourceType } from '../../security/acl.js';
import { RecordValidationError } from '../../storage/errors.js';
import { quotaUser } from '../client-quota-manager.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';
import { errorCodeOf, notHostedError } from './partition-errors.js';

const {
  INVALID_TOPIC_EXCEPTION,
  INVALID_REQUIRED_ACKS,
  INVALID_RECORD,
  CORRUPT_MESSAGE,
  UNSUPPORTED_COMPRESSION_TYPE,
  TOPIC_AUTHORIZATION_FAILED,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
} = ErrorCode;
/** The isTransactional bit of a record batch's attributes. */
const TRANSACTIONAL_FLAG = 0x10;

/** Kafka's smallest record (LegacyRecord.RECORD_OVERHEAD_V0): a shorter batch length is corrupt. */
const MIN_BATCH_LENGTH = 14;
const ZSTD = 4;

/**
 * The size of the batch at `pos` as Kafka's ByteBufferLogInputStream.nextBatch finds it: null when
 * no whole batch is there (the iterator ends), CORRUPT_MESSAGE (its CorruptRecordException) for a
 * length below the smallest record or a magic no format has.
 */
function nextBatchSize(records: Buffer, pos: number): number | null | { code: number } {
  const remaining = records.length - pos;
  if (remaining < LOG_OVERHEAD) return null;
  const length = records.readInt32BE(pos + BATCH_LENGTH_OFFSET);
  if (length < MIN_BATCH_LENGTH) return { code: CORRUPT_MESSAGE };
  if (remaining < length + LOG_OVERHEAD) return null;
  const magic = records.readInt8(pos + MAGIC_OFFSET);
  if (magic < 0 || magic > 2) return { code: CORRUPT_MESSAGE };
  return length + LOG_OVERHEAD;
}

/**
 * Kafka's ProduceRequest.validateRecords (v3+): exactly one whole batch (else INVALID_RECORD), of
 * magic 2 (else INVALID_RECORD), zstd only from v7 (else UNSUPPORTED_COMPRESSION_TYPE). Returns
 * the refusal — answered, as KafkaApis does, with the code alone — or the bytes of that one batch:
 * a trailing partial batch is left out, as Kafka's UnifiedLog trims the bytes after the last whole
 * batch.
 */
export function produceBatch(version: number, records: Buffer): Buffer | { code: number } {
  const first = nextBatchSize(records, 0);
  if (first === null) return { code: INVALID_RECORD };
  if (typeof first !== 'number') return first;
  if (records[MAGIC_OFFSET] !== 2) return { code: INVALID_RECORD };
  if (version < 7 && (records.readInt16BE(ATTRIBUTES_OFFSET) & 0x07) === ZSTD) {
    return { code: UNSUPPORTED_COMPRESSION_TYPE };
  }
  const second = nextBatchSize(records, first);
  if (second === null) return first === records.length ? records : records.subarray(0, first);
  if (typeof second !== 'number') return second;
  return { code: INVALID_RECORD };
}

function errorResponse(index: number, code: number, message: string | null): PartitionProduceResponse {
  // Kafka's PartitionResponse(error): baseOffset -1 (INVALID_OFFSET), as logAppendTimeMs and logStartOffset.
  return {
    ...defaultPartitionProduceResponse(),
    index,
    errorCode: code,
    baseOffset: -1n,
    errorMessage: message,
  };
}

export async function handleProduce(
  b: BrokerServices,
  ctx: RequestContext,
  req: ProduceRequest,
): Promise<ProduceResponse | null> {
  const acks = req.acks;
  const validAcks = acks === 0 || acks === 1 || acks === -1;
  const pending: { response: PartitionProduceResponse; acks: PendingAcks }[] = [];
  const image = b.metadata.image();
  const denied = produceDenied(b, ctx, req);
  // Only a transaction's first write to a partition waits for its coordinator: every other
  // produce appends in the same turn it arrived, as before verification existed.
  const verifying = validAcks ? verifyTransactionalWrites(b, req) : null;
  const unverified = verifying === null ? null : await verifying;
  const responses = req.topicData.map((t) => ({
    name: t.name,
    partitionResponses: t.partitionData.map((pd) => {
      if (!validAcks) return errorResponse(pd.index, INVALID_REQUIRED_ACKS, null);
      const deniedCode = denied(t.name);
      if (deniedCode !== 0) return errorResponse(pd.index, deniedCode, null);
      // Only the broker writes its internal topics: a client record in __consumer_offsets would
      // be replayed as group state.
      if (image.topics.get(t.name)?.internal) {
        return errorResponse(pd.index, INVALID_TOPIC_EXCEPTION, `Cannot append to internal topic ${t.name}`);
      }
      const p = b.replicaManager.getPartition(t.name, pd.index);
      if (!p) return errorResponse(pd.index, notHostedError(b, t.name, pd.index), null);
      const verification = unverified?.get(t.name)?.get(pd.index) ?? ErrorCode.NONE;
      if (verification !== ErrorCode.NONE) {
        return errorResponse(pd.index, verification, verificationMessage(verification));
      }
      const records = produceBatch(ctx.apiVersion, pd.records ?? Buffer.alloc(0));
      if (!Buffer.isBuffer(records)) return errorResponse(pd.index, records.code, null);
      try {
        const { info, acks: waiting } = p.appendAsLeader(records, acks);
        if (!info.duplicate) b.metrics?.produced(t.name, records.length, info.records);
        const response = defaultPartitionProduceResponse();
        response.index = pd.index;
        response.baseOffset = info.firstOffset;
        response.logAppendTimeMs = info.logAppendTimeMs;
        response.logStartOffset = info.logStartOffset;
        pending.push({ response, acks: waiting });
        return response;
      } catch (e) {
        if (e instanceof RecordValidationError) {
          // Kafka's RecordValidationException: the summary as the partition's message, each
          // refused record in RecordErrors (v8+; older versions carry the code alone).
          const response = errorResponse(pd.index, e.error.code, e.error.message);
          response.recordErrors = e.recordErrors.map((r) => ({
            batchIndex: r.batchIndex,
            batchIndexErrorMessage: r.message,
          }));
          return response;
        }
        const { code, message } = errorCodeOf(e, b, `produce to ${t.name}-${pd.index}`);
        return errorResponse(pd.index, code, message);
      }
    }),
  }));

  if (acks === 0) {
    // The produce quota still mutes the connection (Kafka: the request quota is not applied to acks=0).
    throttleProduce(b, ctx, false);
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
    ctx.localComplete();
    const codes = await awaitAcks(
      b.replicaManager.replication.purgatory,
      b.scheduler,
      pending.map((p) => p.acks),
      req.timeoutMs,
      (abort) => ctx.connection.whenClosed(abort),
    );
    codes.forEach((code, i) => {
      if (code !== 0) Object.assign(pending[i]!.response, { errorCode: code, baseOffset: -1n });
    });
  }
  return { responses, throttleTimeMs: throttleProduce(b, ctx, true), nodeEndpoints: [] };
}

/**
 * KIP-890 (transaction.partition.verification.enable): a transactional batch that would start its
 * producer's transaction in a partition this broker leads is appended only once the transaction
 * coordinator confirms the partition was added to that transaction (Kafka's
 * ReplicaManager.appendRecords with its AddPartitionsToTxnManager). Returns the refused
 * partitions' codes; null (synchronously) when nothing needed asking.
 */
function verifyTransactionalWrites(
  b: BrokerServices,
  req: ProduceRequest,
): Promise<ReadonlyMap<string, ReadonlyMap<number, number>>> | null {
  if (req.transactionalId === null || b.verifyTransaction === undefined) return null;
  let producer: { id: bigint; epoch: number } | null = null;
  const needed = new Map<string, number[]>();
  for (const t of req.topicData) {
    for (const pd of t.partitionData) {
      const records = pd.records;
      if (records === null || records.length < BATCH_HEADER_SIZE) continue;
      const h = readBatchHeader(records, 0);
      if (!isTransactional(h.attributes) || h.producerId < 0n) continue;
      const p = b.replicaManager.getPartition(t.name, pd.index);
      if (!p?.isLeader || (p.log.producerState.entry(h.producerId)?.currentTxnFirstOffset ?? -1n) >= 0n)
        continue;
      producer ??= { id: h.producerId, epoch: h.producerEpoch };
      needed.set(t.name, [...(needed.get(t.name) ?? []), pd.index]);
    }
  }
  if (producer === null) return null;
  const asked = b.verifyTransaction(req.transactionalId, producer.id, producer.epoch, needed);
  if (asked === null) return null;
  return asked.then(
    (codes) =>
      new Map(
        [...codes].map(([topic, byPartition]) => [
          topic,
          new Map(
            [...byPartition].map(([p, code]) => [
              p,
              VERIFICATION_RETRIABLE.has(code) ? ErrorCode.NOT_ENOUGH_REPLICAS : code,
            ]),
          ),
        ]),
      ),
  );
}

/**
 * Verification failures a producer should retry are reported as NOT_ENOUGH_REPLICAS, which older
 * clients retry without refreshing metadata (Kafka's choice); the others keep their code.
 */
const VERIFICATION_RETRIABLE: ReadonlySet<number> = new Set([
  ErrorCode.CONCURRENT_TRANSACTIONS,
  ErrorCode.NETWORK_EXCEPTION,
  ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
  ErrorCode.COORDINATOR_NOT_AVAILABLE,
  ErrorCode.NOT_COORDINATOR,
]);

function verificationMessage(code: number): string | null {
  if (code === ErrorCode.INVALID_TXN_STATE) return 'Partition was not added to the transaction';
  if (code === ErrorCode.NOT_ENOUGH_REPLICAS) {
    return 'Unable to verify the partition has been added to the transaction';
  }
  return null;
}

/**
 * Kafka's handleProduceRequest's checks, as the error each topic gets (0: none): transactional
 * records need WRITE on their TRANSACTIONAL_ID (every partition fails without it), and each
 * topic WRITE on the TOPIC.
 */
function produceDenied(
  b: BrokerServices,
  ctx: RequestContext,
  req: ProduceRequest,
): (topic: string) => number {
  const auth = b.authorization;
  if (!auth.enabled) return () => 0;
  const transactional = req.topicData.some((t) =>
    t.partitionData.some(
      (pd) =>
        pd.records !== null &&
        pd.records.length > ATTRIBUTES_OFFSET + 2 &&
        (pd.records.readInt16BE(ATTRIBUTES_OFFSET) & TRANSACTIONAL_FLAG) !== 0,
    ),
  );
  if (
    transactional &&
    (req.transactionalId === null ||
      !auth.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactionalId))
  )
    return () => TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
  const allowed = auth.filter(
    ctx,
    AclOperation.WRITE,
    ResourceType.TOPIC,
    req.topicData.map((t) => t.name),
  );
  return (topic) => (allowed.has(topic) ? 0 : TOPIC_AUTHORIZATION_FAILED);
}

/**
 * Kafka's handleProduceRequest once the partitions are answered: the request's bytes are recorded
 * against producer_byte_rate and (unless acks=0) its handling time against request_percentage;
 * over either, the connection is muted for the longer throttle, which the response carries.
 */
function throttleProduce(b: BrokerServices, ctx: RequestContext, withRequestQuota: boolean): number {
  const quotas = b.clientQuotas;
  if (quotas === undefined) return 0;
  const nowMs = b.clock.nowMs();
  const bandwidthMs = quotas.produce.recordAndGetThrottleTimeMs(
    quotaUser(ctx),
    ctx.clientId ?? '',
    ctx.sizeBytes,
    nowMs,
  );
  const requestMs = withRequestQuota ? quotas.recordRequestTime(ctx, ctx.handlingMs(), nowMs) : 0;
  const ms = Math.max(bandwidthMs, requestMs);
  if (ms > 0) quotas.throttle(bandwidthMs > requestMs ? quotas.produce : quotas.request, ctx, ms, nowMs);
  return ms;
}
