/**
 * A log dir that fills up (issue 23, Kafka's JBOD handling), on real processes: three `skiff
 * broker` processes on etcd, broker 1 with two log dirs, one of them an 8 MiB tmpfs. Producing
 * acks=all (idempotent, min.insync.replicas 2) to a partition placed on the tmpfs fills it: broker 1
 * takes that dir offline with one line naming it and the error, answers KAFKA_STORAGE_ERROR for
 * the partition, the controller moves its leadership and ISR to brokers 2 and 3, Metadata lists
 * broker 1 as an offline replica, and produce goes on. The partition in broker 1's other dir is
 * still led and served by broker 1 throughout. Every acknowledged record of both partitions is
 * read back, in order, none twice. Then the dir gets room again (tmpfs remounted larger) and a
 * restart of broker 1 brings it back: the replica recovers and rejoins the ISR.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Producer } from '../../src/client/producer.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import {
  adminFor,
  consumeAll,
  createLedBy1,
  describe1,
  requireTool,
  runSkiff,
  waitUntil,
} from '../cluster/helpers.js';
import { AckLog, sendNumbered, verify } from './acked-records.js';
import { EtcdBrokerSet, run } from './etcd-broker-set.js';

const FULL = 'on-tmpfs';
const HEALTHY = 'on-disk';
const TMPFS_BYTES = 8 * 1024 * 1024;
/** More than the tmpfs holds, so the dir must fill before the producer is done. */
const FULL_RECORDS = 12_000;
const HEALTHY_RECORDS = 2_000;
const PROPS = ['broker.session.timeout.ms=3000', 'replica.lag.time.max.ms=3000'];

describe('a log dir that fills up goes offline; the broker serves its other dir', () => {
  let set: EtcdBrokerSet | null = null;
  let tmpfs = '';

  before(async () => {
    requireTool('kcat', '-V');
    set = await EtcdBrokerSet.start(
      'skiff-disk-full-',
      (dir) => {
        tmpfs = path.join(dir, 'broker-1-tmpfs');
        return new Map([
          [1, { logDirs: [path.join(dir, 'broker-1'), tmpfs], props: PROPS }],
          [2, { props: PROPS }],
          [3, { props: PROPS }],
        ]);
      },
      { 'broker-1-tmpfs': TMPFS_BYTES },
    );
  });

  after(() => set?.stop());

  it('takes the full dir offline, moves its partition away, loses nothing, and comes back after a restart', async () => {
    const cluster = set!;
    const bootstrap = () => cluster.bootstrap;
    const logDirsOf = (id: number) => cluster.logDirsOf(id);
    const { admin, client, close } = adminFor(bootstrap());
    const acks = new AckLog();
    try {
      // The healthy topic first: broker 1 places each new log in its least loaded dir, so the
      // first goes to its first dir and the second to the tmpfs (checked below).
      for (const name of [HEALTHY, FULL]) {
        const configs = new Map([
          ['min.insync.replicas', '2'],
          ['segment.bytes', String(1024 * 1024)],
        ]);
        await createLedBy1(admin, name, configs, 20_000);
      }
      const placement = (await admin.describeLogDirs([1], null)).get(1)!;
      const dirOf = (topic: string) => placement.find((d) => d.topics.some((t) => t.name === topic))?.logDir;
      assert.equal(dirOf(FULL), path.resolve(tmpfs));
      assert.equal(dirOf(HEALTHY), path.resolve(logDirsOf(1)[0]!));

      const producer = new Producer(client, { retries: 30, lingerMs: 2 });
      const send = (topic: string, i: number) => sendNumbered(producer, acks, topic, i);
      for (let i = 0; i < HEALTHY_RECORDS / 2; i++) await send(HEALTHY, i);
      for (let i = 0; i < FULL_RECORDS; i++) await send(FULL, i);
      await producer.flush();
      const b1 = cluster.broker(1);
      const failureLines = b1.output().match(/Error while \S+ [^\n]* in dir [^\n]*ENOSPC[^\n]*/g) ?? [];
      assert.equal(failureLines.length, 1, `one line names the failed dir:\n${failureLines.join('\n')}`);
      assert.match(failureLines[0]!, new RegExp(`Stopping serving replicas in dir ${tmpfs}`));
      assert.ok(b1.running, `broker 1 keeps running with its other dir:\n${b1.output().slice(-3000)}`);

      // The partition moved to brokers 2 and 3; broker 1's replica is offline.
      const moved = await waitUntil(
        `${FULL} led elsewhere, 1 out of its ISR`,
        async () => {
          const p = (await describe1(admin, FULL)).partitions[0]!;
          return p.leader !== 1 && p.leader >= 0 && !p.isr.includes(1) ? p : undefined;
        },
        20_000,
      );
      assert.deepEqual(moved.offlineReplicas, [1]);
      assert.deepEqual([...moved.isr].sort(), [2, 3]);
      const logDirs = (await admin.describeLogDirs([1], null)).get(1)!;
      assert.equal(
        logDirs.find((d) => d.logDir === path.resolve(tmpfs))?.errorCode,
        ErrorCode.KAFKA_STORAGE_ERROR,
      );
      assert.equal(logDirs.find((d) => d.logDir === path.resolve(logDirsOf(1)[0]!))?.errorCode, 0);
      // skiff log-dirs (Kafka's kafka-log-dirs) shows the offline dir with its error.
      const tool = await runSkiff([
        'log-dirs',
        '--describe',
        '--bootstrap-server',
        bootstrap(),
        '--broker-list',
        '1',
      ]);
      assert.equal(tool.status, 0, tool.stderr);
      const shown = JSON.parse(tool.stdout.split('\n').find((l) => l.startsWith('{'))!) as {
        brokers: { logDirs: { logDir: string; error: string | null }[] }[];
      };
      assert.deepEqual(
        shown.brokers[0]!.logDirs.map((d) => [d.logDir, d.error]).sort(),
        [
          [path.resolve(logDirsOf(1)[0]!), null],
          [path.resolve(tmpfs), 'org.apache.kafka.common.errors.KafkaStorageException'],
        ].sort(),
      );

      // Broker 1 still leads and serves the partition in its healthy dir; produce goes on to both.
      for (let i = HEALTHY_RECORDS / 2; i < HEALTHY_RECORDS; i++) await send(HEALTHY, i);
      for (let i = FULL_RECORDS; i < FULL_RECORDS + 500; i++) await send(FULL, i);
      await producer.flush();
      const healthy = (await describe1(admin, HEALTHY)).partitions[0]!;
      assert.equal(healthy.leader, 1);
      assert.deepEqual([...healthy.isr].sort(), [1, 2, 3]);
      assert.equal(acks.count(HEALTHY), HEALTHY_RECORDS, 'every healthy-dir record acknowledged');
      assert.ok(
        acks.count(FULL) > FULL_RECORDS - 100,
        `records acknowledged on ${FULL}: ${acks.count(FULL)}`,
      );

      verify(HEALTHY, acks.values(HEALTHY), await consumeAll(bootstrap(), HEALTHY));
      verify(FULL, acks.values(FULL), await consumeAll(bootstrap(), FULL));
      console.log(
        `disk-full: acknowledged ${acks.count(FULL)} on ${FULL}, ${acks.count(HEALTHY)} on ${HEALTHY}; failed for good ${acks.failed}; lost 0`,
      );

      // Restarted with the dir still broken (read-only now): the broker starts, the dir goes
      // offline again (at load or at its first write), the other dir serves.
      run('mount', ['-o', 'remount,ro', tmpfs]);
      await b1.stop(15_000);
      const readOnly = await cluster.startBroker(1);
      await waitUntil(
        `${FULL} offline on broker 1 again, ${HEALTHY} in sync there`,
        async () => {
          const [full, healthy] = [await describe1(admin, FULL), await describe1(admin, HEALTHY)];
          const ok =
            full.partitions[0]!.offlineReplicas.includes(1) && healthy.partitions[0]!.isr.includes(1);
          return ok ? true : undefined;
        },
        30_000,
      );
      const roLine = new RegExp(`[^\n]*in dir ${tmpfs}: EROFS[^\n]*`).exec(readOnly.output());
      assert.ok(roLine !== null, readOnly.output());
      console.log(`disk-full: restarted read-only: ${roLine[0].replace(/^\[[^\]]*\] /, '')}`);
      assert.ok(readOnly.running);
      await sendNumbered(producer, acks, HEALTHY, HEALTHY_RECORDS);
      await sendNumbered(producer, acks, FULL, FULL_RECORDS + 500);
      await producer.flush();
      assert.equal(acks.failed, 0);

      // Room again, and a restart: the dir is back, its replica recovers and rejoins the ISR.
      run('mount', ['-o', `remount,rw,size=${TMPFS_BYTES * 8}`, tmpfs]);
      await readOnly.stop(15_000);
      await cluster.startBroker(1);
      await waitUntil(
        `broker 1 back in the ISR of ${FULL}`,
        async () => {
          const p = (await describe1(admin, FULL)).partitions[0]!;
          return p.isr.includes(1) && p.offlineReplicas.length === 0 ? true : undefined;
        },
        30_000,
      );
      const back = (await admin.describeLogDirs([1], null)).get(1)!;
      assert.ok(back.every((d) => d.errorCode === 0));
      verify(FULL, acks.values(FULL), await consumeAll(bootstrap(), FULL));
      verify(HEALTHY, acks.values(HEALTHY), await consumeAll(bootstrap(), HEALTHY));
    } finally {
      close();
    }
  });
});
