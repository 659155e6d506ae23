/**
 * A broker whose every log dir fails halts, as Kafka's does (issue 23): three `skiff broker`
 * processes on etcd, broker 3's only log dir an 8 MiB tmpfs. Producing acks=all (min.insync.replicas
 * 2) to a partition broker 3 leads fills it: broker 3 logs Kafka's "Shutdown broker because all log
 * dirs ... have failed" and exits with status 1; its session runs out, the partition moves to 1 or
 * 2 and produce goes on. Every acknowledged record reads back, in order, none twice.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Producer } from '../../src/client/producer.js';
import { adminFor, consumeAll, describe1, requireTool, waitUntil } from '../cluster/helpers.js';
import { AckLog, sendNumbered, verify } from './acked-records.js';
import { EtcdBrokerSet } from './etcd-broker-set.js';

const TOPIC = 'on-tmpfs';
const TMPFS_BYTES = 8 * 1024 * 1024;
const RECORDS = 12_000;
const PROPS = ['broker.session.timeout.ms=3000', 'replica.lag.time.max.ms=3000'];

describe('a broker whose every log dir failed', () => {
  let set: EtcdBrokerSet | null = null;
  let tmpfs = '';

  before(async () => {
    requireTool('kcat', '-V');
    set = await EtcdBrokerSet.start(
      'skiff-all-dirs-failed-',
      (dir) => {
        tmpfs = path.join(dir, 'broker-3-tmpfs');
        return new Map([
          [1, { props: PROPS }],
          [2, { props: PROPS }],
          [3, { logDirs: [tmpfs], props: PROPS }],
        ]);
      },
      { 'broker-3-tmpfs': TMPFS_BYTES },
    );
  });

  after(() => set?.stop());

  it('halts with status 1; the others take over and lose nothing', async () => {
    const cluster = set!;
    const { admin, client, close } = adminFor(cluster.bootstrap);
    const acks = new AckLog();
    try {
      const [r] = await admin.createTopics([
        {
          name: TOPIC,
          numPartitions: -1,
          replicationFactor: -1,
          assignments: [[3, 1, 2]],
          configs: new Map([
            ['min.insync.replicas', '2'],
            ['segment.bytes', String(1024 * 1024)],
          ]),
        },
      ]);
      assert.equal(r?.error, null);
      await waitUntil(
        `${TOPIC} led by 3 with ISR 1,2,3`,
        async () => {
          const p = (await describe1(admin, TOPIC)).partitions[0];
          return p?.leader === 3 && p.isr.length === 3 ? true : undefined;
        },
        20_000,
      );
      const producer = new Producer(client, { retries: 30, lingerMs: 2 });
      for (let i = 0; i < RECORDS; i++) await sendNumbered(producer, acks, TOPIC, i);
      await producer.flush();

      const exit = await cluster.broker(3).exited;
      assert.deepEqual(exit, { code: 1, signal: null });
      assert.match(
        cluster.broker(3).output(),
        new RegExp(`Shutdown broker because all log dirs in ${tmpfs} have failed`),
      );
      const p = (await describe1(admin, TOPIC)).partitions[0]!;
      assert.ok(p.leader === 1 || p.leader === 2, `leader ${p.leader}`);
      assert.ok(acks.count(TOPIC) > RECORDS - 100, `acknowledged ${acks.count(TOPIC)}`);
      verify(TOPIC, acks.values(TOPIC), await consumeAll(cluster.bootstrap, TOPIC));
      console.log(
        `all-dirs-failed: acknowledged ${acks.count(TOPIC)}; failed for good ${acks.failed}; lost 0`,
      );
    } finally {
      close();
    }
  });
});
