import type { Logger } from '../common/logger.js';
import { ErrorCode } from '../protocol/generated/errors.js';
import { KafkaError } from '../protocol/kafka-error.js';
import { uuidToBytes, ZERO_UUID } from '../protocol/uuid.js';
import { type FileSystem, readIfExists } from './fs.js';

export const PARTITION_METADATA_FILE = 'partition.metadata';

/** Kafka's PartitionMetadataFile.CURRENT_VERSION. */
const CURRENT_VERSION = 0;

/**
 * `partition.metadata`: the topic id of the partition directory, so a directory left from a
 * deleted topic of the same name is recognised. Kafka's layout byte for byte (PartitionMetadata's
 * encode): `version: 0`, a newline, `topic_id: <22-char Uuid>`, no newline at the end. Read as
 * Kafka's PartitionMetadataReadBuffer reads it: each line split at `:` and the blanks after it,
 * any version from 0 up, never the zero Uuid.
 */
export class PartitionMetadataFile {
  constructor(
    private readonly fs: FileSystem,
    readonly path: string,
  ) {}

  write(topicId: string): void {
    uuidToBytes(topicId); // refuses anything that is not a Kafka Uuid
    this.fs.writeFileAtomic(
      this.path,
      Buffer.from(`version: ${CURRENT_VERSION}\ntopic_id: ${topicId}`, 'utf8'),
    );
  }

  /** The topic id, or null when the file does not exist; throws when it is malformed. */
  read(): string | null {
    const data = readIfExists(this.fs, this.path);
    if (data === null) return null;
    const lines = data.toString('utf8').split('\n');
    const field = (line: string | undefined): string => {
      const parts = (line ?? '').split(/:\s+/);
      if (parts.length !== 2) throw new Error(`Malformed line in checkpoint file [${this.path}]: ${line}`);
      return parts[1]!;
    };
    const version = field(lines[0]);
    if (!/^[+-]?\d+$/.test(version))
      throw new Error(`Malformed line in checkpoint file [${this.path}]: ${lines[0]}`);
    if (Number(version) < CURRENT_VERSION) {
      throw new Error(`Unrecognized version of partition metadata file (${this.path}): ${version}`);
    }
    const topicId = field(lines[1]);
    uuidToBytes(topicId);
    if (topicId === ZERO_UUID) throw new Error(`Invalid topic ID in partition metadata file (${this.path})`);
    return topicId;
  }
}

/** Kafka's InconsistentTopicIdException, with its message. */
export function inconsistentTopicId(name: string, topicId: string, current: string): KafkaError {
  return KafkaError.fromCode(
    ErrorCode.INCONSISTENT_TOPIC_ID,
    `Tried to assign topic ID ${topicId} to log for topic partition ${name},but log already contained topic ID ${current}`,
  );
}

/**
 * A log's topic id (Kafka's UnifiedLog topicId with its partitionMetadataFile): read from the
 * partition directory when the log is opened, assigned once by whoever knows the topic (the
 * metadata image), written then. A malformed file counts as none (the log's data is intact; the
 * id is written again when assigned). Owned by the Log; `dir` follows it across a log dir move.
 */
export class LogTopicId {
  private id: string | null;
  /** The directory whose file was read or written holding `id` (a move to another needs one there). */
  private heldIn: string | null = null;

  constructor(
    private readonly fs: FileSystem,
    private readonly dir: () => string,
    private readonly name: string,
    logger: Logger,
  ) {
    try {
      this.id = this.file().read();
      if (this.id !== null) this.heldIn = this.dir();
    } catch (e) {
      logger.warn(`${name}: ignoring ${PARTITION_METADATA_FILE}: ${(e as Error).message}`);
      this.id = null;
    }
  }

  get(): string | null {
    return this.id;
  }

  /** Sets the topic id and writes the file; a different id than the one held is refused. */
  assign(topicId: string): void {
    if (this.id !== null) {
      if (this.id !== topicId) throw inconsistentTopicId(this.name, topicId, this.id);
      // Read from this directory or written there: no need to ask the disk (every partition is
      // assigned its id again at each restart).
      if (this.heldIn === this.dir() || this.fs.exists(this.file().path)) return;
    }
    this.file().write(topicId);
    this.id = topicId;
    this.heldIn = this.dir();
  }

  private file(): PartitionMetadataFile {
    return new PartitionMetadataFile(this.fs, `${this.dir()}/${PARTITION_METADATA_FILE}`);
  }
}
