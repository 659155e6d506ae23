/**
 * TxnOffsetCommit and the end of the transactions that carry offsets, as Kafka's
 * GroupCoordinator.handleTxnCommitOffsets and GroupMetadataManager.storeOffsets /
 * handleTxnCompletion do them: a transactional producer's offsets are written to the group's
 * __consumer_offsets partition as a transactional batch of that producer, and wait in the group as
 * pending (per producer id) until the transaction coordinator's marker lands on that partition:
 * COMMIT makes them the committed offsets, ABORT drops them. Called by the GroupCoordinator, which
 * resolves ownership through the same OffsetHost as plain commits.
 */

import { ErrorCode } from '../protocol/generated/errors.js';
import type { TxnOffsetCommitRequest } from '../protocol/generated/TxnOffsetCommitRequest.js';
import type { TxnOffsetCommitResponseTopic } from '../protocol/generated/TxnOffsetCommitResponse.js';
import { offsetAppendError } from './append-errors.js';
import { validateConsumerOffsetCommit } from './consumer/consumer-groups.js';
import { type ClassicGroup, offsetKey, type PendingTxnOffset } from './group.js';
import { validateCurrentMember } from './membership.js';
import type { OffsetHost } from './offsets.js';
import { offsetCommitRecord } from './records.js';

export async function txnOffsetCommit(
  host: OffsetHost,
  req: TxnOffsetCommitRequest,
  apiVersion: number,
): Promise<TxnOffsetCommitResponseTopic[]> {
  const errors = new Map<string, number>();
  const valid: { topic: string; partition: number; offset: bigint; leaderEpoch: number; metadata: string }[] =
    [];
  // Kafka's request handler answers partitions that do not exist before the coordinator sees any.
  for (const t of req.topics) {
    for (const p of t.partitions) {
      if (!host.partitionExists(t.name, p.partitionIndex)) {
        errors.set(offsetKey(t.name, p.partitionIndex), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
        continue;
      }
      valid.push({
        topic: t.name,
        partition: p.partitionIndex,
        offset: p.committedOffset,
        leaderEpoch: apiVersion >= 2 ? p.committedLeaderEpoch : -1,
        metadata: p.committedMetadata ?? '',
      });
    }
  }
  const answer = (rest: number): TxnOffsetCommitResponseTopic[] =>
    req.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => {
        let errorCode = errors.get(offsetKey(t.name, p.partitionIndex)) ?? rest;
        // Producers before 2.0 (TxnOffsetCommit v0-v1) fail on this error instead of retrying.
        if (apiVersion < 2 && errorCode === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
          errorCode = ErrorCode.COORDINATOR_NOT_AVAILABLE;
        return { partitionIndex: p.partitionIndex, errorCode };
      }),
    }));
  if (valid.length === 0) return answer(ErrorCode.NONE);

  // Unlike OffsetCommit, the group "" is refused here (Kafka's isValidGroupId).
  const status = host.groupStatus(req.groupId, false);
  if (status !== ErrorCode.NONE) return answer(status);
  let group = host.getGroup(req.groupId);
  const created = group === undefined;
  group ??= host.createGroup(req.groupId);
  const dropIfCreated = (g: ClassicGroup) => {
    if (created && g.is('Empty') && g.size === 0 && g.hasNoOffsets() && g.generationId === 0)
      host.removeGroup(g);
  };
  // KIP-890: the transaction must hold the group's partition (AddOffsetsToTxn) before its first
  // write there, as Kafka's maybeStartTransactionVerificationForPartition asks.
  const verifying = host.verifyTxnPartition?.(
    req.transactionalId,
    req.producerId,
    req.producerEpoch,
    group.partition,
  );
  if (verifying !== undefined && verifying !== null) {
    const verified = await verifying;
    if (verified !== ErrorCode.NONE) {
      dropIfCreated(group);
      // A coordinator that did not answer: retried without a new coordinator lookup (Kafka's choice).
      return answer(
        verified === ErrorCode.NETWORK_EXCEPTION
          ? ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
          : offsetAppendError(verified),
      );
    }
  }
  const error = validateTxnCommit(group, req.memberId, req.groupInstanceId, req.generationId);
  if (error !== ErrorCode.NONE) {
    dropIfCreated(group);
    return answer(error);
  }

  const maxBytes = host.config.offsetMetadataMaxBytes;
  const nowMs = BigInt(host.clock.nowMs());
  const entries: PendingTxnOffset[] = [];
  for (const v of valid) {
    if (Buffer.byteLength(v.metadata, 'utf8') > maxBytes) {
      errors.set(offsetKey(v.topic, v.partition), ErrorCode.OFFSET_METADATA_TOO_LARGE);
      continue;
    }
    entries.push({
      topic: v.topic,
      partition: v.partition,
      value: {
        offset: v.offset,
        leaderEpoch: v.leaderEpoch,
        metadata: v.metadata,
        commitTimestampMs: nowMs,
        expireTimestampMs: -1n,
      },
      appendedOffset: null,
    });
  }
  if (entries.length === 0) {
    dropIfCreated(group);
    return answer(ErrorCode.NONE);
  }

  const errorCode = await writePending(host, group, req, entries);
  if (errorCode !== ErrorCode.NONE && !group.is('Dead')) dropIfCreated(group);
  return answer(errorCode);
}

/**
 * Holds `entries` as the producer's pending offsets in `group`, appends them as its transactional
 * batch, and settles them: appended (their batch offset noted) or, on failure, back to what they
 * replaced. Resolves to NONE or the append's error.
 */
async function writePending(
  host: OffsetHost,
  group: ClassicGroup,
  req: TxnOffsetCommitRequest,
  entries: readonly PendingTxnOffset[],
): Promise<number> {
  const producerId = req.producerId;
  let pending = group.pendingTxnOffsets.get(producerId);
  if (pending === undefined) {
    pending = new Map();
    group.pendingTxnOffsets.set(producerId, pending);
  }
  // What each entry replaces comes back if the append fails (a fenced epoch's retry must not
  // erase the offset its successor already wrote; Kafka's failPendingTxnOffsetCommit does).
  const replaced = new Map<PendingTxnOffset, PendingTxnOffset | undefined>();
  for (const e of entries) {
    const key = offsetKey(e.topic, e.partition);
    replaced.set(e, pending.get(key));
    pending.set(key, e);
  }
  const records = entries.map((e) => offsetCommitRecord(req.groupId, e.topic, e.partition, e.value));
  const { errorCode, baseOffset } = await host.appendOffsets(group.partition, records, {
    producerId,
    producerEpoch: req.producerEpoch,
  });
  // A group unloaded or deleted meanwhile is no longer this coordinator's to update.
  if (group.is('Dead')) return errorCode;
  const current = group.pendingTxnOffsets.get(producerId);
  for (const e of entries) {
    const key = offsetKey(e.topic, e.partition);
    // A later commit of the same transaction may have replaced this entry: leave that one be.
    if (current?.get(key) !== e) continue;
    const previous = replaced.get(e);
    if (errorCode === ErrorCode.NONE) e.appendedOffset = baseOffset;
    else if (previous !== undefined) current.set(key, previous);
    else current.delete(key);
  }
  if (current?.size === 0) group.pendingTxnOffsets.delete(producerId);
  return errorCode;
}

/**
 * Kafka's validateOffsetCommit for a transactional commit: without a generation an Empty group
 * takes it; otherwise a member id, instance id or generation given must be the current ones.
 * Producers before KIP-447 send none of them, so a group with members takes their commits too.
 */
function validateTxnCommit(
  group: ClassicGroup,
  memberId: string,
  groupInstanceId: string | null,
  generationId: number,
): number {
  if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
  if (group.consumer !== null)
    return validateConsumerOffsetCommit(group.consumer, memberId, generationId, -1, true);
  if (generationId < 0 && group.is('Empty')) return ErrorCode.NONE;
  if (generationId >= 0 || memberId !== '' || groupInstanceId !== null) {
    const memberError = validateCurrentMember(group, memberId, groupInstanceId);
    if (memberError !== ErrorCode.NONE) return memberError;
    if (generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION;
  }
  return ErrorCode.NONE;
}
