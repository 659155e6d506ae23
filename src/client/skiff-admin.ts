/**
 * The client side of Skiff's own admin API (SkiffDescribeReplication, key 10000): asks one broker,
 * or every live broker, what it knows about the replication of the partitions it hosts.
 */
import type { SkiffDescribeReplicationResponse } from '../protocol/generated/SkiffDescribeReplicationResponse.js';
import { lazyApi } from './apis.js';
import { checkCode } from './errors.js';
import type { KafkaClient } from './kafka-client.js';

export const SkiffDescribeReplicationApi = lazyApi(10000, 'SkiffDescribeReplication', 0, 0, async () => ({
  request: (await import('../protocol/generated/SkiffDescribeReplicationRequest.js'))
    .SkiffDescribeReplicationRequestCodec,
  response: (await import('../protocol/generated/SkiffDescribeReplicationResponse.js'))
    .SkiffDescribeReplicationResponseCodec,
}));

/** Topic → partitions (null: all of the topic's partitions the broker hosts); null: everything. */
export type ReplicationFilter = ReadonlyMap<string, readonly number[] | null> | null;

export async function describeReplication(
  client: KafkaClient,
  brokerId: number,
  filter: ReplicationFilter,
  includeHistory = true,
): Promise<SkiffDescribeReplicationResponse> {
  const resp = await client.retry(() =>
    client.send({ kind: 'node', id: brokerId }, SkiffDescribeReplicationApi, () => ({
      topics:
        filter === null
          ? null
          : [...filter].map(([name, partitions]) => ({
              name,
              partitions: partitions === null ? null : [...partitions],
            })),
      includeHistory,
    })),
  );
  checkCode(resp.errorCode);
  return resp;
}

/**
 * Every broker's answer, by broker id. A broker that cannot be reached (stopped) is reported as an
 * Error in its slot instead of failing the whole call: the tools are most useful exactly then.
 */
export async function describeReplicationAll(
  client: KafkaClient,
  brokerIds: readonly number[],
  filter: ReplicationFilter,
  includeHistory = true,
): Promise<Map<number, SkiffDescribeReplicationResponse | Error>> {
  const out = new Map<number, SkiffDescribeReplicationResponse | Error>();
  await Promise.all(
    brokerIds.map(async (id) => {
      try {
        out.set(id, await describeReplication(client, id, filter, includeHistory));
      } catch (e) {
        out.set(id, e instanceof Error ? e : new Error(String(e)));
      }
    }),
  );
  return out;
}
