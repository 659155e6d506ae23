/**
 * A topic of many partitions created on a running broker whose session is short: creating each
 * partition's log is synchronous disk work (a directory, partition.metadata, the leader-epoch
 * checkpoint, each written and synced), seconds for a thousand partitions. Applied in one go it
 * held the broker's event loop past its session: the lease expired ("fenced (lease expired);
 * registering again"), the CreateTopics answer waited behind it, and the controller moved every
 * new partition to leader epoch 1 ("broker 1 restarted with a new broker epoch"). Applied in
 * slices, the heartbeats and the controller go on between them.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';
import { adminFor, waitUntil } from './helpers.js';

const PARTITIONS = 2000;

describe('a topic of many partitions on a broker with a short session', () => {
  let broker: BrokerProcess;
  before(async () => {
    broker = await startBrokerProcess(['broker.session.timeout.ms=2000', 'broker.heartbeat.interval.ms=400']);
  });
  after(() => broker?.stop());

  it('is created without the broker losing its session, every partition at leader epoch 0', async () => {
    // Kafka's admin request timeout (30 s): the answer comes once the controller has written the
    // partitions, which it does between the broker's slices.
    const { admin, close } = adminFor(broker.bootstrap, 30_000);
    try {
      const startMs = Date.now();
      const [created] = await admin.createTopics([
        { name: 'many', numPartitions: PARTITIONS, replicationFactor: 1, configs: new Map() },
      ]);
      assert.equal(created?.error, null);
      const logDir = path.join(broker.dir, 'logs');
      const hosted = () => fs.readdirSync(logDir).filter((f) => f.startsWith('many-')).length;
      await waitUntil(
        'every partition hosted',
        async () => (hosted() === PARTITIONS ? true : undefined),
        120_000,
      );
      const tookMs = Date.now() - startMs;
      const out = broker.output();
      assert.doesNotMatch(
        out,
        /fenced \(lease expired\)/,
        `the session held through ${tookMs} ms of creation`,
      );
      assert.doesNotMatch(out, /New leader epoch of many-/);
      const md = await admin.describeTopics(['many']);
      const t = md.get('many');
      assert.ok(t !== undefined && !(t instanceof Error), String(t));
      assert.equal(t.partitions.length, PARTITIONS);
      assert.deepEqual(
        [...new Set(t.partitions.map((p) => `${p.leader}@${p.leaderEpoch}`))],
        ['1@0'],
        'every partition led by broker 1 at leader epoch 0',
      );
      console.log(
        `many-partitions: ${PARTITIONS} partitions created and hosted in ${tookMs} ms, session kept`,
      );
    } finally {
      close();
    }
  });
});
