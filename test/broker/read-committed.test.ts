import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ClientConnection } from '../../src/network/client-connection.js';
import { defaultFetchPartition, defaultFetchRequest } from '../../src/protocol/generated/FetchRequest.js';
import type { FetchResponse, PartitionData } from '../../src/protocol/generated/FetchResponse.js';
import type { ListOffsetsResponse } from '../../src/protocol/generated/ListOffsetsResponse.js';
import { isControl } from '../../src/protocol/records/batch.js';
import { decodeRecords, encodeBatch } from '../../src/protocol/records/codec.js';
import { encodeEndTxnMarkerBatch } from '../../src/protocol/records/end-txn-marker.js';
import { batchesIn } from '../../src/protocol/records/validate.js';
import type { Partition } from '../../src/replication/partition.js';
import { runProcess } from '../support/broker-process.js';
import { batch, createTopic, startBroker, type TestBroker } from './helpers.js';

const A = 1000n;
const B = 2000n;

/** The transactional records' timestamp, after every other record's. */
const T = 1_700_000_100_000n;

function txnData(producerId: bigint, baseSequence: number, value: string): Buffer {
  return encodeBatch({
    producerId,
    producerEpoch: 0,
    baseSequence,
    isTransactional: true,
    baseTimestamp: T + BigInt(baseSequence),
    records: [{ key: null, value: Buffer.from(value) }],
  });
}

/** The data records' values of a fetch, markers left out (a consumer's view before filtering). */
function values(records: Buffer | null): string[] {
  const out: string[] = [];
  for (const e of batchesIn(records ?? Buffer.alloc(0))) {
    const d = decodeRecords(records!.subarray(e.pos, e.pos + e.size), { decompress: true });
    if (isControl(d.header.attributes)) continue;
    for (const r of d.records) out.push(r.value!.toString());
  }
  return out;
}

describe('read_committed fetch and ListOffsets against a partition with transactions', () => {
  let b: TestBroker;
  let conn: ClientConnection;
  let p: Partition;
  /** Appends on the leader as the produce path (data) or the coordinator (markers) would, then lets the HW follow. */
  const append = (records: Buffer, origin: 'client' | 'coordinator' = 'client') => {
    p.log.appendAsLeader(records, p.leaderEpoch, origin);
    p.leaderState!.maybeIncrementHighWatermark();
  };
  const fetch = async (fetchOffset: bigint, isolationLevel: number): Promise<PartitionData> => {
    const f = await b.call<FetchResponse>(conn, 1, 11, {
      ...defaultFetchRequest(),
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      isolationLevel,
      topics: [
        {
          topic: 'txn',
          topicId: 'AAAAAAAAAAAAAAAAAAAAAA',
          partitions: [{ ...defaultFetchPartition(), partition: 0, fetchOffset, partitionMaxBytes: 1 << 20 }],
        },
      ],
    });
    return f.responses[0]!.partitions[0]!;
  };
  const latest = async (isolationLevel: number, timestamp = -1n): Promise<bigint> => {
    const r = await b.call<ListOffsetsResponse>(conn, 2, 7, {
      replicaId: -1,
      isolationLevel,
      timeoutMs: 0,
      topics: [
        {
          name: 'txn',
          partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp, maxNumOffsets: 1 }],
        },
      ],
    });
    const pr = r.topics[0]!.partitions[0]!;
    assert.equal(pr.errorCode, 0);
    return pr.offset;
  };

  before(async () => {
    b = await startBroker();
    conn = await b.connect();
    await createTopic(b, conn, 'txn');
    p = b.broker.replicaManager.getPartition('txn', 0)!;
  });
  after(async () => {
    await b.stop();
  });

  it('withholds an open transaction from read_committed until its COMMIT, and lists an ABORT', async () => {
    append(batch(2)); // 0-1
    append(txnData(A, 0, 'a0')); // 2
    append(batch(1, { from: 2 })); // 3
    append(txnData(B, 0, 'b0')); // 4
    append(txnData(A, 1, 'a1')); // 5
    assert.equal(p.log.highWatermark, 6n);

    let committed = await fetch(0n, 1);
    assert.equal(committed.errorCode, 0);
    assert.deepEqual([committed.highWatermark, committed.lastStableOffset], [6n, 2n]);
    assert.deepEqual(values(committed.records), ['value-0', 'value-1']);
    assert.deepEqual(committed.abortedTransactions, []);
    const uncommitted = await fetch(0n, 0);
    assert.deepEqual(values(uncommitted.records), ['value-0', 'value-1', 'a0', 'value-2', 'b0', 'a1']);
    assert.equal(uncommitted.lastStableOffset, 2n);
    assert.equal(uncommitted.abortedTransactions, null, 'read_uncommitted: null, as Kafka answers');
    assert.deepEqual([await latest(1), await latest(0)], [2n, 6n]);
    // by timestamp and MAX_TIMESTAMP (-3): read_committed finds nothing at or past the LSO
    assert.deepEqual([await latest(1, T), await latest(0, T)], [-1n, 2n]);
    assert.deepEqual([await latest(1, -3n), await latest(0, -3n)], [-1n, 5n]);

    append(
      encodeEndTxnMarkerBatch({
        producerId: A,
        producerEpoch: 0,
        coordinatorEpoch: 0,
        commit: true,
        timestamp: 1n,
      }),
      'coordinator',
    ); // 6
    committed = await fetch(0n, 1);
    assert.equal(committed.lastStableOffset, 4n, 'B’s transaction holds it now');
    assert.deepEqual(values(committed.records), ['value-0', 'value-1', 'a0', 'value-2']);
    assert.deepEqual(await latest(1), 4n);

    append(
      encodeEndTxnMarkerBatch({
        producerId: B,
        producerEpoch: 0,
        coordinatorEpoch: 0,
        commit: false,
        timestamp: 1n,
      }),
      'coordinator',
    ); // 7
    committed = await fetch(0n, 1);
    assert.deepEqual([committed.highWatermark, committed.lastStableOffset], [8n, 8n]);
    assert.deepEqual(values(committed.records), ['value-0', 'value-1', 'a0', 'value-2', 'b0', 'a1']);
    assert.deepEqual(committed.abortedTransactions, [{ producerId: B, firstOffset: 4n }]);
    assert.deepEqual((await fetch(7n, 1)).abortedTransactions, [{ producerId: B, firstOffset: 4n }]);
    assert.deepEqual(await latest(1), 8n);
    // past the ABORT the range holds none
    append(batch(1, { from: 3 })); // 8
    assert.deepEqual((await fetch(8n, 1)).abortedTransactions, []);
  });

  it('librdkafka (kcat) reading read_committed skips the aborted records by the listed transactions', async () => {
    // The partition as the first case left it: B's b0 aborted, A's a0 and a1 committed.
    const consume = async (isolation: string) => {
      const r = await runProcess('kcat', [
        '-b',
        `127.0.0.1:${b.port}`,
        '-C',
        '-t',
        'txn',
        '-o',
        'beginning',
        '-e',
        '-q',
        '-f',
        '%s\\n',
        '-X',
        `isolation.level=${isolation}`,
      ]);
      assert.equal(r.status, 0, r.stderr);
      return r.stdout.split('\n').filter((l) => l !== '');
    };
    assert.deepEqual(await consume('read_committed'), [
      'value-0',
      'value-1',
      'a0',
      'value-2',
      'a1',
      'value-3',
    ]);
    assert.deepEqual(await consume('read_uncommitted'), [
      'value-0',
      'value-1',
      'a0',
      'value-2',
      'b0',
      'a1',
      'value-3',
    ]);
  });
});
