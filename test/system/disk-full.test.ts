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
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Producer } from '../../src/client/producer.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import {
  adminFor,
  consumeAll,
  describe1,
  freePorts,
  removeDataDir,
  requireTool,
  SkiffProcess,
  waitUntil,
} from '../cluster/helpers.js';
import { EtcdCluster } from '../support/etcd.js';

const FULL = 'on-tmpfs';
const HEALTHY = 'on-disk';
const TMPFS_BYTES = 8 * 1024 * 1024;
/** More than the tmpfs holds, so the dir must fill before the producer is done. */
const FULL_RECORDS = 12_000;
const HEALTHY_RECORDS = 2_000;
const VALUE_PAD = 'x'.repeat(1000);

function run(cmd: string, args: readonly string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
}

/** What an acks=all producer was told: each partition's acknowledged values, in offset order. */
class AckLog {
  private readonly acked = new Map<string, { offset: bigint; value: string }[]>();
  failed = 0;

  record(topic: string, value: string, offset: bigint): void {
    let list = this.acked.get(topic);
    if (list === undefined) {
      list = [];
      this.acked.set(topic, list);
    }
    list.push({ offset, value });
  }

  values(topic: string): string[] {
    return [...(this.acked.get(topic) ?? [])].sort((a, b) => Number(a.offset - b.offset)).map((e) => e.value);
  }

  count(topic: string): number {
    return this.acked.get(topic)?.length ?? 0;
  }
}

/** Every acknowledged value is in `read`, in the acknowledged order; nothing in `read` twice. */
function verify(topic: string, acked: readonly string[], read: readonly string[]): void {
  assert.equal(new Set(read).size, read.length, `${topic}: a record was written twice`);
  const at = new Map(read.map((v, i) => [v, i]));
  const lost = acked.filter((v) => !at.has(v));
  assert.deepEqual(lost.slice(0, 5), [], `${topic}: ${lost.length} acknowledged records lost`);
  for (let i = 1; i < acked.length; i++) {
    assert.ok(at.get(acked[i - 1]!)! < at.get(acked[i]!)!, `${topic}: order broken at ${acked[i]}`);
  }
}

describe('a log dir that fills up goes offline; the broker serves its other dir', () => {
  let etcd: EtcdCluster;
  let dir: string;
  let tmpfs: string;
  let mounted = false;
  let basePort: number;
  const brokers = new Map<number, SkiffProcess>();
  const bootstrap = () => [1, 2, 3].map((id) => `127.0.0.1:${basePort + id - 1}`).join(',');
  const logDirsOf = (id: number) =>
    id === 1 ? [path.join(dir, 'broker-1'), tmpfs] : [path.join(dir, `broker-${id}`)];

  const startBroker = async (id: number): Promise<SkiffProcess> => {
    const props = path.join(dir, `server-${id}.properties`);
    fs.writeFileSync(
      props,
      [
        `node.id=${id}`,
        `listeners=PLAINTEXT://127.0.0.1:${basePort + id - 1}`,
        `log.dirs=${logDirsOf(id).join(',')}`,
        `etcd.endpoints=${etcd.endpoints.join(',')}`,
        'broker.session.timeout.ms=3000',
        'broker.heartbeat.interval.ms=500',
        'replica.lag.time.max.ms=3000',
        '',
      ].join('\n'),
    );
    const p = new SkiffProcess(['broker', '--config', props]);
    await p.waitFor(new RegExp(`skiff broker ${id} ready: listening on`), 30_000);
    brokers.set(id, p);
    return p;
  };

  before(async () => {
    requireTool('kcat', '-V');
    etcd = await EtcdCluster.start(1);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-disk-full-'));
    tmpfs = path.join(dir, 'broker-1-tmpfs');
    fs.mkdirSync(tmpfs);
    run('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_BYTES}`, 'tmpfs', tmpfs]);
    mounted = true;
    basePort = await freePorts(3);
    await Promise.all([1, 2, 3].map((id) => startBroker(id)));
  });

  after(async () => {
    await Promise.all([...brokers.values()].map((b) => b.kill()));
    if (mounted) run('umount', [tmpfs]);
    etcd?.stop();
    if (dir) removeDataDir(dir);
  });

  it('takes the full dir offline, moves its partition away, loses nothing, and comes back after a restart', async () => {
    const { admin, client, close } = adminFor(bootstrap());
    const acks = new AckLog();
    try {
      // The healthy topic first: broker 1 places each new log in its least loaded dir, so the
      // first goes to its first dir and the second to the tmpfs (checked below).
      for (const name of [HEALTHY, FULL]) {
        const [r] = await admin.createTopics([
          {
            name,
            numPartitions: -1,
            replicationFactor: -1,
            assignments: [[1, 2, 3]],
            configs: new Map([
              ['min.insync.replicas', '2'],
              ['segment.bytes', String(1024 * 1024)],
            ]),
          },
        ]);
        assert.equal(r?.error, null);
        await waitUntil(
          `${name} led by 1 with ISR 1,2,3`,
          async () => {
            const p = (await describe1(admin, name)).partitions[0];
            return p?.leader === 1 && p.isr.length === 3 ? true : undefined;
          },
          20_000,
        );
      }
      const placement = (await admin.describeLogDirs([1], null)).get(1)!;
      const dirOf = (topic: string) => placement.find((d) => d.topics.some((t) => t.name === topic))?.logDir;
      assert.equal(dirOf(FULL), path.resolve(tmpfs));
      assert.equal(dirOf(HEALTHY), path.resolve(logDirsOf(1)[0]!));

      const producer = new Producer(client, { retries: 30, lingerMs: 2 });
      const send = (topic: string, i: number): Promise<void> => {
        const value = `${topic}-${i}-${VALUE_PAD}`;
        return producer.send({ topic, partition: 0, key: null, value: Buffer.from(value) }, (e, meta) => {
          if (e === null) acks.record(topic, value, meta!.offset);
          else acks.failed++;
        });
      };
      for (let i = 0; i < HEALTHY_RECORDS / 2; i++) await send(HEALTHY, i);
      for (let i = 0; i < FULL_RECORDS; i++) await send(FULL, i);
      await producer.flush();
      const b1 = brokers.get(1)!;
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

      // Room again, and a restart: the dir is back, its replica recovers and rejoins the ISR.
      run('mount', ['-o', `remount,size=${TMPFS_BYTES * 8}`, tmpfs]);
      await b1.stop(15_000);
      await startBroker(1);
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
    } finally {
      close();
    }
  });
});
