/**
 * The records the coordinator keeps in __consumer_offsets, in Kafka's layout: a key is an int16
 * version followed by the key struct at that version, a value an int16 version followed by the
 * value struct; a null value is a tombstone. The key version tells the record type
 * (0 and 1: an offset commit, 2: group metadata; higher ones belong to the new consumer-group
 * protocol and share groups, which this coordinator does not run and skips on replay).
 * Versions written follow what Kafka writes today: OffsetCommitKey v1, OffsetCommitValue v3
 * (v1 when the commit carries an expire timestamp), GroupMetadataKey v2, GroupMetadataValue v3.
 */
import type { MessageCodec } from '../protocol/codec-runtime.js';
import { GroupMetadataKeyCodec } from '../protocol/generated/coordinator/GroupMetadataKey.js';
import {
  type GroupMetadataValue,
  GroupMetadataValueCodec,
} from '../protocol/generated/coordinator/GroupMetadataValue.js';
import { OffsetCommitKeyCodec } from '../protocol/generated/coordinator/OffsetCommitKey.js';
import {
  type OffsetCommitValue,
  OffsetCommitValueCodec,
} from '../protocol/generated/coordinator/OffsetCommitValue.js';
import { Reader } from '../protocol/reader.js';
import { Writer } from '../protocol/writer.js';

export type { GroupMetadataValue } from '../protocol/generated/coordinator/GroupMetadataValue.js';

/** One record of __consumer_offsets as the coordinator sees it (keys and values undecoded). */
export interface CoordinatorRecord {
  key: Buffer;
  /** null is a tombstone: the key's previous value is deleted (and compacted away). */
  value: Buffer | null;
}

/** The producer of a transactional offset commit (TxnOffsetCommit): its batch is transactional. */
export interface TxnProducer {
  readonly producerId: bigint;
  readonly producerEpoch: number;
}

/**
 * Where the coordinator writes. The broker implements it by appending a batch to the given
 * partition of __consumer_offsets as its leader (a transactional batch of `txn`'s producer when
 * given); the promise resolves to the batch's base offset once the records are as durable as the
 * broker's acks policy for internal topics requires (Kafka: acks=all), and rejects (ideally with a
 * KafkaError) otherwise. Appends to one partition must resolve in the order issued.
 */
export interface CoordinatorLog {
  append(partition: number, records: CoordinatorRecord[], txn?: TxnProducer): Promise<bigint>;
}

export const OFFSET_COMMIT_KEY_VERSION = 1;
export const GROUP_METADATA_KEY_VERSION = 2;
export const OFFSET_COMMIT_VALUE_VERSION = 3;
export const OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1;
export const GROUP_METADATA_VALUE_VERSION = 3;

/** What the coordinator keeps per committed partition (OffsetAndMetadata in Kafka). */
export interface OffsetAndMetadata {
  offset: bigint;
  /** -1 when the committer did not know the leader epoch. */
  leaderEpoch: number;
  metadata: string;
  commitTimestampMs: bigint;
  /** Only for commits that asked for a retention (OffsetCommit v2-v4); -1 otherwise. */
  expireTimestampMs: bigint;
}

export function encodeVersioned<T>(codec: MessageCodec<T>, version: number, value: T): Buffer {
  const w = new Writer(64);
  w.int16(version);
  codec.encode(w, value, version);
  return w.toBuffer();
}

export function offsetCommitKey(group: string, topic: string, partition: number): Buffer {
  return encodeVersioned(OffsetCommitKeyCodec, OFFSET_COMMIT_KEY_VERSION, { group, topic, partition });
}

export function groupMetadataKey(group: string): Buffer {
  return encodeVersioned(GroupMetadataKeyCodec, GROUP_METADATA_KEY_VERSION, { group });
}

export function offsetCommitValue(o: OffsetAndMetadata): Buffer {
  const value: OffsetCommitValue = {
    offset: o.offset,
    leaderEpoch: o.leaderEpoch,
    metadata: o.metadata,
    commitTimestamp: o.commitTimestampMs,
    expireTimestamp: o.expireTimestampMs,
  };
  const version =
    o.expireTimestampMs >= 0n ? OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY : OFFSET_COMMIT_VALUE_VERSION;
  return encodeVersioned(OffsetCommitValueCodec, version, value);
}

export function groupMetadataValue(value: GroupMetadataValue): Buffer {
  return encodeVersioned(GroupMetadataValueCodec, GROUP_METADATA_VALUE_VERSION, value);
}

export function offsetCommitRecord(
  group: string,
  topic: string,
  partition: number,
  o: OffsetAndMetadata,
): CoordinatorRecord {
  return { key: offsetCommitKey(group, topic, partition), value: offsetCommitValue(o) };
}

export function offsetTombstone(group: string, topic: string, partition: number): CoordinatorRecord {
  return { key: offsetCommitKey(group, topic, partition), value: null };
}

export function groupMetadataRecord(group: string, value: GroupMetadataValue): CoordinatorRecord {
  return { key: groupMetadataKey(group), value: groupMetadataValue(value) };
}

export function groupTombstone(group: string): CoordinatorRecord {
  return { key: groupMetadataKey(group), value: null };
}

/** A replayed record, decoded. */
export type DecodedCoordinatorRecord =
  | { type: 'offset'; group: string; topic: string; partition: number; value: OffsetAndMetadata | null }
  | { type: 'group'; group: string; value: GroupMetadataValue | null }
  /** A record type this coordinator does not run (new consumer groups, share groups). */
  | { type: 'other'; keyVersion: number };

export function decodeVersioned<T>(codec: MessageCodec<T>, bytes: Buffer): T {
  const r = new Reader(bytes);
  const version = r.int16();
  return codec.decode(r, version);
}

/**
 * Decodes one record. Throws (ProtocolError / UnsupportedVersionError) on bytes that are not a
 * valid record of a known type; the loader decides what to do with those.
 */
export function decodeCoordinatorRecord(key: Buffer, value: Buffer | null): DecodedCoordinatorRecord {
  const keyVersion = new Reader(key).int16();
  if (keyVersion === 0 || keyVersion === 1) {
    const k = decodeVersioned(OffsetCommitKeyCodec, key);
    if (value === null) return { type: 'offset', ...k, value: null };
    const v = decodeVersioned(OffsetCommitValueCodec, value);
    return {
      type: 'offset',
      ...k,
      value: {
        offset: v.offset,
        leaderEpoch: v.leaderEpoch,
        metadata: v.metadata,
        commitTimestampMs: v.commitTimestamp,
        expireTimestampMs: v.expireTimestamp,
      },
    };
  }
  if (keyVersion === GROUP_METADATA_KEY_VERSION) {
    const k = decodeVersioned(GroupMetadataKeyCodec, key);
    return {
      type: 'group',
      group: k.group,
      value: value === null ? null : decodeVersioned(GroupMetadataValueCodec, value),
    };
  }
  return { type: 'other', keyVersion };
}
