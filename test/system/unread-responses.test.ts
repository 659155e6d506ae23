/**
 * A client that never reads its responses (issue 23), on a real `skiff broker` (a cluster of one):
 * it pipelines 10,000 Fetch requests for 8 MiB each and 10,000 Produce requests, and never
 * reads the socket. The broker must bound what it holds for that connection — it stops reading
 * the connection's requests while responses wait to be sent (Kafka mutes a channel while its
 * response is in flight) — so its resident memory stays bounded (read from /proc/<pid>/status),
 * another client is served meanwhile, and the stuck connection is closed by
 * connections.max.idle.ms.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Producer } from '../../src/client/producer.js';
import { FetchRequestCodec } from '../../src/protocol/generated/FetchRequest.js';
import { ProduceRequestCodec } from '../../src/protocol/generated/ProduceRequest.js';
import { encodeRequest } from '../../src/protocol/messages.js';
import { encodeBatch } from '../../src/protocol/records/codec.js';
import { adminFor, consumeAll, requireTool, type SkiffProcess, sleep } from '../cluster/helpers.js';
import { createTopic, type OneBroker, startOneBroker } from './one-broker.js';
import { residentBytes } from './process-memory.js';

const IDLE_MS = 10_000;
const RECORDS = 40_000;
const VALUE = Buffer.alloc(1000, 'v');
const REQUESTS = 10_000;
const PARTITION_MAX_BYTES = 8 * 1024 * 1024;
/** Growth of the broker's resident memory allowed while the client does not read (1,000 x 8 MiB unbounded). */
const RSS_GROWTH_BOUND = 256 * 1024 * 1024;

describe('a client that never reads its responses', () => {
  let one: OneBroker;
  let port: number;
  let broker: SkiffProcess;
  let stuck: net.Socket | undefined;

  before(async () => {
    requireTool('kcat', '-V');
    one = await startOneBroker('unread', [`connections.max.idle.ms=${IDLE_MS}`]);
    ({ port, process: broker } = one);
  });

  after(async () => {
    stuck?.destroy();
    await one?.stop();
  });

  it('stops reading its requests, stays bounded, serves others, and closes it when idle', async () => {
    const bootstrap = `127.0.0.1:${port}`;
    const { admin, client, close } = adminFor(bootstrap);
    try {
      await createTopic(admin, 'data');
      const producer = new Producer(client, { retries: 3, lingerMs: 5 });
      const acked: string[] = [];
      for (let i = 0; i < RECORDS; i++)
        await producer.send({ topic: 'data', partition: 0, key: null, value: VALUE }, (e) => {
          if (e === null) acked.push(VALUE.toString());
        });
      await producer.flush();
      assert.equal(acked.length, RECORDS);

      const pid = broker.child.pid!;
      const before = residentBytes(pid);
      stuck = net.connect(port, '127.0.0.1');
      stuck.on('error', () => {});
      await new Promise((r) => stuck!.once('connect', r));
      stuck.pause(); // never read
      const batch = encodeBatch({ records: [{ key: null, value: VALUE }] });
      for (let i = 0; i < REQUESTS; i++) {
        const header = { requestApiVersion: 12, correlationId: 2 * i, clientId: 'unread' };
        for (const c of encodeRequest({ ...header, requestApiKey: 1 }, FetchRequestCodec, {
          clusterId: null,
          replicaId: -1,
          replicaState: { replicaId: -1, replicaEpoch: -1n },
          maxWaitMs: 0,
          minBytes: 1,
          maxBytes: 50 * 1024 * 1024,
          isolationLevel: 0,
          sessionId: 0,
          sessionEpoch: -1,
          topics: [
            {
              topic: 'data',
              topicId: '',
              partitions: [
                {
                  partition: 0,
                  currentLeaderEpoch: -1,
                  fetchOffset: BigInt((i * 997) % RECORDS),
                  lastFetchedEpoch: -1,
                  logStartOffset: -1n,
                  partitionMaxBytes: PARTITION_MAX_BYTES,
                  replicaDirectoryId: '',
                },
              ],
            },
          ],
          forgottenTopicsData: [],
          rackId: '',
        }))
          stuck.write(c);
        const produce = { ...header, requestApiKey: 0, requestApiVersion: 9, correlationId: 2 * i + 1 };
        for (const c of encodeRequest(produce, ProduceRequestCodec, {
          transactionalId: null,
          acks: 1,
          timeoutMs: 30_000,
          topicData: [{ name: 'data', partitionData: [{ index: 0, records: batch }] }],
        }))
          stuck.write(c);
      }
      // The broker reads what it can and stops: its memory is sampled while it would grow.
      let peak = before;
      for (let i = 0; i < 25; i++) {
        await sleep(200);
        peak = Math.max(peak, residentBytes(pid));
      }
      assert.ok(stuck.writableLength > 0, 'the broker stopped reading the requests of the connection');
      assert.ok(
        peak - before < RSS_GROWTH_BOUND,
        `broker RSS grew by ${((peak - before) / 2 ** 20).toFixed(0)} MiB (from ${(before / 2 ** 20).toFixed(0)} MiB)`,
      );

      // Another client is served meanwhile.
      for (let i = 0; i < 100; i++)
        await producer.send(
          { topic: 'data', partition: 0, key: null, value: Buffer.from(`other-${i}`) },
          (e) => {
            if (e === null) acked.push(`other-${i}`);
          },
        );
      await producer.flush();
      assert.equal(acked.length, RECORDS + 100);

      // Nothing moves on the stuck connection: connections.max.idle.ms closes it.
      await broker.waitFor(/closing idle connection [^\n]*clientId "unread"/, IDLE_MS * 5);
      await new Promise((r) => (stuck!.destroyed ? r(null) : stuck!.once('close', r)));
      const read = await consumeAll(bootstrap, 'data');
      assert.deepEqual(read.slice(-100), acked.slice(-100));
      console.log(
        `unread-responses: ${REQUESTS} fetches of ${PARTITION_MAX_BYTES / 2 ** 20} MiB and ${REQUESTS} produces unread; broker RSS ${(before / 2 ** 20).toFixed(0)} -> peak ${(peak / 2 ** 20).toFixed(0)} MiB; closed when idle`,
      );
    } finally {
      close();
    }
  });
});
