/**
 * The record checks of Kafka's LogValidator that need the records themselves, beyond what
 * protocol/records/validate.ts checks of a batch's shape: today, that every record of a compacted
 * topic has a key (validateKey). Pure functions over a produced batch; the log calls them before
 * it assigns offsets, so a refused batch leaves nothing behind.
 */
import { ProtocolError } from '../protocol/protocol-error.js';
import { type BatchHeader, isControl } from '../protocol/records/batch.js';
import { batchRecordsSection } from '../protocol/records/codec.js';
import { readRecords } from '../protocol/records/record.js';
import { invalidRecord, type RecordError, RecordValidationError } from './errors.js';

/**
 * Refuses the batch at `records[pos..pos+size)` when a record has no key and the topic is
 * compacted: one RecordError per keyless record, its index in the batch and Kafka's message, in
 * a RecordValidationError whose message is Kafka's processRecordErrors summary. A compressed batch
 * is decompressed to look (Kafka does the same). Control batches are the broker's and exempt.
 * `topicPartition` is Kafka's "topic-partition" spelling.
 */
export function validateKeysForCompactedTopic(
  records: Buffer,
  pos: number,
  header: BatchHeader,
  topicPartition: string,
): void {
  if (isControl(header.attributes)) return;
  let decoded: ReturnType<typeof readRecords>;
  try {
    decoded = readRecords(
      batchRecordsSection(records, pos, { decompress: true }).records,
      header.recordsCount,
    );
  } catch (e) {
    if (e instanceof ProtocolError) throw invalidRecord(`${topicPartition}: ${e.message}`);
    throw e;
  }
  const errors: RecordError[] = [];
  for (let i = 0; i < decoded.length; i++) {
    if (decoded[i]!.key !== null) continue;
    errors.push({
      batchIndex: i,
      message: `Compacted topic cannot accept message without key in topic partition ${topicPartition}`,
    });
  }
  if (errors.length > 0) throw new RecordValidationError(errors);
}
