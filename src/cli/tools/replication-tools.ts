/** What isr-history, rebuild-plan and replica-verification share. */
import type { Admin } from '../../client/admin.js';
import { ClientError } from '../../client/errors.js';
import type { TopicMetadata } from '../../client/kafka-client.js';
import type {
  DescribeReplicationPartitionResult,
  SkiffDescribeReplicationResponse,
} from '../../protocol/generated/SkiffDescribeReplicationResponse.js';
import { UsageError } from './common.js';

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

/** Kafka's tool timestamps, SimpleDateFormat "yyyy-MM-dd HH:mm:ss,SSS" in local time. */
export function kafkaTimestamp(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())},${pad(d.getMilliseconds(), 3)}`;
}

/** A partition of one broker's SkiffDescribeReplication answer, when it described it without error. */
export function partitionOf(
  resp: SkiffDescribeReplicationResponse | Error | undefined,
  topic: string,
  partition: number,
): DescribeReplicationPartitionResult | undefined {
  if (resp === undefined || resp instanceof Error) return undefined;
  return resp.topics
    .find((t) => t.name === topic)
    ?.partitions.find((p) => p.partitionIndex === partition && p.errorCode === 0);
}

/** One topic's metadata; an unknown topic is one clear error. */
export async function requireTopic(admin: Admin, topic: string): Promise<TopicMetadata> {
  const t = (await admin.describeTopics([topic])).get(topic);
  if (t === undefined || t instanceof Error) throw new ClientError(`Topic '${topic}' does not exist`);
  return t;
}

/** A partition number from a flag: an integer ≥ 0. */
export function partitionNumber(text: string, flag: string): number {
  if (!/^\d+$/.test(text.trim()))
    throw new UsageError(`--${flag} expects a partition number ≥ 0, got '${text}'`);
  return Number(text);
}

/** Bytes for humans: 1.5 MiB. */
export function humanBytes(n: bigint | number): string {
  const v = Number(n);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let x = v;
  while (Math.abs(x) >= 1024 && i < units.length - 1) {
    x /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${x.toFixed(1)} ${units[i]}`;
}

/** A duration for humans: 45 s, 12.5 min, 3.2 h, 12.1 d. */
export function humanDuration(seconds: number): string {
  if (seconds < 90) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
  if (seconds < 90 * 60) return `${(seconds / 60).toFixed(1)} min`;
  if (seconds < 48 * 3600) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} d`;
}
