import { uuidToBytes } from '../protocol/uuid.js';
import type { FileSystem } from './fs.js';

export const PARTITION_METADATA_FILE = 'partition.metadata';

/**
 * `partition.metadata`: the topic id of the partition directory, so a directory left from a
 * deleted topic of the same name is recognised. Kafka's layout: `version: 0` and
 * `topic_id: <22-char Uuid>` lines. Owned by the partition's Log.
 */
export class PartitionMetadataFile {
  constructor(
    private readonly fs: FileSystem,
    readonly path: string,
  ) {}

  write(topicId: string): void {
    uuidToBytes(topicId); // refuses anything that is not a Kafka Uuid
    this.fs.writeFileAtomic(this.path, Buffer.from(`version: 0\ntopic_id: ${topicId}\n`, 'utf8'));
  }

  /** The topic id, or null when the file does not exist. */
  read(): string | null {
    if (!this.fs.exists(this.path)) return null;
    const lines = this.fs.readFile(this.path).toString('utf8').split(/\r?\n/);
    const version = /^version:\s*(\d+)\s*$/.exec(lines[0] ?? '');
    if (version?.[1] !== '0') throw new Error(`${this.path}: unrecognized version line '${lines[0]}'`);
    const id = /^topic_id:\s*(\S+)\s*$/.exec(lines[1] ?? '');
    if (!id) throw new Error(`${this.path}: malformed topic_id line '${lines[1]}'`);
    uuidToBytes(id[1]!);
    return id[1]!;
  }
}
