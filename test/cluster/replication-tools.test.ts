/**
 * The replication tools on `skiff up --brokers 3`, against real broker processes and real files:
 * replica-verification (agreement, then a real divergence — payload bytes flipped in the middle of a
 * stopped follower's segment, lengths intact, restarted without recovering that region),
 * isr-history (every broker's changes merged: the leader's, the followers', the shrink when a
 * broker stops, the expand when it is back) and rebuild-plan (CATCH UP with the exact bytes to
 * copy, the ETA under a leader throttle, REBUILD once the leader's log start passed the stopped
 * replica's LEO). Also `skiff ... | head` exiting quietly.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { computeCrc } from '../../src/protocol/records/batch.js';
import { runProcess } from '../support/broker-process.js';
import {
  adminFor,
  describe1,
  removeDataDir,
  runSkiff,
  SKIFF,
  type SkiffProcess,
  startTestCluster,
  waitUntil,
} from './helpers.js';

const VERIFY = 'verify';
const PLAN = 'plan';
const TS = String.raw`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}`;

interface Batch {
  readonly position: number;
  readonly size: number;
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly crc: number;
}

/** The batches of a .log file, by walking its length fields. */
function batchesOf(file: string): Batch[] {
  const b = fs.readFileSync(file);
  const out: Batch[] = [];
  for (let pos = 0; pos + 12 <= b.length; ) {
    const size = 12 + b.readInt32BE(pos + 8);
    if (pos + size > b.length) break;
    const baseOffset = b.readBigInt64BE(pos);
    out.push({
      position: pos,
      size,
      baseOffset,
      lastOffset: baseOffset + BigInt(b.readInt32BE(pos + 23)),
      crc: b.readUInt32BE(pos + 17),
    });
    pos += size;
  }
  return out;
}

describe('replication tools on skiff up --brokers 3', () => {
  let dir: string;
  let bootstrap: string;
  let port: number;
  let up: SkiffProcess | null = null;
  const cluster = (...args: string[]) => runSkiff(['cluster', ...args, '--data-dir', dir], '', 60_000);
  const skiff = (...args: string[]) => runSkiff(args, '', 120_000);
  const segment = (broker: number, topic: string) =>
    path.join(dir, `broker-${broker}`, `${topic}-0`, '00000000000000000000.log');
  const isrOf = async (topic: string): Promise<string> => {
    const { admin, close } = adminFor(bootstrap);
    try {
      return [...(await describe1(admin, topic)).partitions[0]!.isr].sort().join(',');
    } finally {
      close();
    }
  };
  const produce = async (topic: string, records: number) => {
    const r = await skiff(
      'producer-perf-test',
      '--topic',
      topic,
      '--num-records',
      String(records),
      '--record-size',
      '512',
      '--throughput',
      '-1',
      '--producer-props',
      `bootstrap.servers=${bootstrap}`,
      'acks=all',
    );
    assert.equal(r.status, 0, r.stderr);
  };
  const identical = (topic: string) =>
    waitUntil(
      `identical ${topic}-0 segments on brokers 1, 2, 3`,
      async () => {
        const [a, b, c] = [1, 2, 3].map((id) => fs.readFileSync(segment(id, topic)));
        return a!.length > 0 && a!.equals(b!) && a!.equals(c!) ? a!.length : undefined;
      },
      20_000,
    );
  const planJson = async (...extra: string[]) => {
    const r = await skiff(
      'rebuild-plan',
      '--bootstrap-server',
      bootstrap,
      '--broker',
      '3',
      ...extra,
      '--json',
    );
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as {
      partitions: {
        topic: string;
        broker: number;
        leader: number;
        action: string;
        inIsr: boolean;
        replicaLogEndOffset: number;
        leaderLogStartOffset: number;
        leaderLogEndOffset: number;
        bytesToCopy: number;
        bytesToDiscard: number;
        throttleBytesPerSec: number | null;
        etaSeconds: number | null;
      }[];
      totals: { broker: number; bytesToCopy: number }[];
      upToDate: number;
    };
  };
  /** rebuild-plan's text for broker 3's replica of PLAN. */
  const planText = () =>
    skiff('rebuild-plan', '--bootstrap-server', bootstrap, '--broker', '3', '--topic', PLAN);
  /** `skiff configs --alter` of one config of one entity; it must succeed. Its run. */
  const alterConfig = async (type: string, name: string, action: string, config: string) => {
    const r = await skiff(
      'configs',
      '--bootstrap-server',
      bootstrap,
      '--alter',
      '--entity-type',
      type,
      '--entity-name',
      name,
      action,
      config,
    );
    assert.equal(r.status, 0, r.stderr);
    return r;
  };
  const history = async (topic: string) => {
    const r = await skiff('isr-history', '--bootstrap-server', bootstrap, '--topic', topic, '--json');
    assert.equal(r.status, 0, r.stderr);
    return (
      JSON.parse(r.stdout) as {
        changes: { broker: number; kind: string; oldIsr: number[]; newIsr: number[]; leader: number }[];
      }
    ).changes;
  };

  before(async () => {
    ({ dir, port, up } = await startTestCluster('skiff-repl-tools-'));
    bootstrap = `127.0.0.1:${port}`;
    const { admin, close } = adminFor(bootstrap);
    try {
      for (const name of [VERIFY, PLAN]) {
        const [r] = await admin.createTopics([
          {
            name,
            numPartitions: -1,
            replicationFactor: -1,
            assignments: [[1, 2, 3]],
            configs: new Map([['min.insync.replicas', '2']]),
          },
        ]);
        assert.equal(r!.error, null, r!.error?.message);
      }
      await waitUntil(
        'both topics led by 1 with the full ISR',
        async () => {
          for (const name of [VERIFY, PLAN]) {
            const p = (await describe1(admin, name)).partitions[0];
            if (p?.leader !== 1 || p.isr.length !== 3) return undefined;
          }
          return true;
        },
        15_000,
      );
    } finally {
      close();
    }
    await produce(VERIFY, 1500);
    await produce(PLAN, 1500);
    await identical(VERIFY);
    await identical(PLAN);
  });

  after(async () => {
    await up?.stop(15_000);
    removeDataDir(dir);
  });

  it('replica-verification: Kafka lines, every replica compared up to the start HW, exit 0 when they agree', async () => {
    const r = await skiff(
      'replica-verification',
      '--broker-list',
      bootstrap,
      '--topics-include',
      `${VERIFY}|${PLAN}`,
      '--report-interval-ms',
      '1000',
    );
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.match(lines[0]!, new RegExp(`^${TS}: verification process is started$`));
    assert.match(
      lines.at(-2)!,
      new RegExp(
        `^${TS}: max lag is 0 for partition (${VERIFY}|${PLAN})-0 at offset 1500 among 2 partitions$`,
      ),
    );
    assert.match(
      lines.at(-1)!,
      new RegExp(
        `^${TS}: verification completed: the replicas of all 2 partitions agree up to their high watermark at start$`,
      ),
    );
    assert.ok(!r.stdout.includes('unmatched'), r.stdout);
    // Flags that are not Kafka's, or bad values: one line on stderr, exit 2.
    const bad = await skiff('replica-verification', '--broker-list', bootstrap, '--topics-include', '(');
    assert.equal(bad.status, 2);
    assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
    assert.match(bad.stderr, /\( is an invalid regex/);
    const none = await skiff('replica-verification', '--broker-list', bootstrap, '--topics-include', 'nope');
    assert.equal(none.status, 1);
    assert.match(none.stderr, /^skiff replica-verification: No topics found\./);
  });

  it('isr-history: the controller recorded the creation of the partition, led by broker 1, in the store', async () => {
    const r = await skiff('isr-history', '--bootstrap-server', bootstrap, '--topic', PLAN);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    for (const l of lines) {
      assert.match(
        l,
        new RegExp(
          `^${TS}\\tPartition: ${PLAN}-0\\tBroker: [123]\\tKind: \\S+\\tIsr: \\S+ -> \\S+\\tLeader: 1\\tLeaderEpoch: \\d+\\tPartitionEpoch: \\d+\\tReason: .+$`,
        ),
      );
    }
    assert.ok(
      lines.some((l) =>
        /Broker: 1\tKind: create\tIsr: none -> [123],[123],[123]\t.*Reason: topic-created: /.test(l),
      ),
      r.stdout,
    );
    const sorted = [...lines].sort((a, b) => a.slice(0, 23).localeCompare(b.slice(0, 23)));
    assert.deepEqual(
      lines.map((l) => l.slice(0, 23)),
      sorted.map((l) => l.slice(0, 23)),
    );
    assert.equal((await history(PLAN)).length, lines.length);
    const unknown = await skiff('isr-history', '--bootstrap-server', bootstrap, '--topic', 'nope');
    assert.equal(unknown.status, 1);
    assert.equal(unknown.stderr, "skiff isr-history: Topic 'nope' does not exist\n");
    const missing = await skiff('isr-history', '--bootstrap-server', bootstrap);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /^skiff isr-history: missing required argument --topic/);
  });

  it('rebuild-plan: a stopped replica will CATCH UP the exact bytes it misses, REBUILD once the log start passed it; ETA under a throttle', async () => {
    const sizeAtStop = fs.statSync(segment(3, PLAN)).size;
    const stop = await cluster('stop', '3');
    assert.equal(stop.status, 0, stop.stderr);
    await waitUntil('ISR 1,2', async () => ((await isrOf(PLAN)) === '1,2' ? true : undefined), 15_000);
    await produce(PLAN, 1000);

    // replica-verification cannot read the stopped replica: it gives up at --max-duration-ms (3).
    const rv = await skiff(
      'replica-verification',
      '--bootstrap-server',
      bootstrap,
      '--topics-include',
      PLAN,
      '--max-duration-ms',
      '3000',
    );
    assert.equal(rv.status, 3, rv.stdout + rv.stderr);
    assert.match(
      rv.stdout,
      new RegExp(
        `${TS}: verification stopped after 3000 ms \\(--max-duration-ms\\): 1 of 1 partitions not compared up to their high watermark at start: ${PLAN}-0 at offset 0 of 2500\n`,
      ),
    );
    assert.match(rv.stderr, /^skiff replica-verification: broker 3 did not answer/);

    let plan = (await planJson('--topic', PLAN)).partitions;
    assert.equal(plan.length, 1);
    let p = plan[0]!;
    const leaderSize = fs.statSync(segment(1, PLAN)).size;
    assert.deepEqual(
      [
        p.action,
        p.broker,
        p.leader,
        p.inIsr,
        p.replicaLogEndOffset,
        p.leaderLogEndOffset,
        p.leaderLogStartOffset,
      ],
      ['CATCH UP', 3, 1, false, 1500, 2500, 0],
    );
    assert.equal(p.bytesToCopy, leaderSize - sizeAtStop);
    assert.equal(p.bytesToDiscard, 0);
    assert.equal(p.throttleBytesPerSec, null);
    const text = await planText();
    assert.equal(text.status, 0, text.stderr);
    assert.match(
      text.stdout,
      new RegExp(
        `^Partition: ${PLAN}-0\\tBroker: 3\\tLeader: 1\\tAction: CATCH UP\\tInIsr: false\\tReplicaLEO: 1500\\tLeaderLogStart: 0\\tLeaderLEO: 2500\\tBytesToCopy: ${leaderSize - sizeAtStop} \\(.+\\)\\tBytesToDiscard: 0 \\(0 B\\)\\tETA: unthrottled\\tObserved: (n/a|\\d+ B/s)$`,
        'm',
      ),
    );

    // A leader-side throttle on the partition: the ETA is the bytes over the rate.
    const rate = 1048576;
    await alterConfig('brokers', '1', '--add-config', `leader.replication.throttled.rate=${rate}`);
    await alterConfig('topics', PLAN, '--add-config', 'leader.replication.throttled.replicas=*');
    p = (await planJson('--topic', PLAN)).partitions[0]!;
    assert.equal(p.throttleBytesPerSec, rate);
    assert.equal(p.etaSeconds, p.bytesToCopy / rate);

    // A follower throttle stored for the stopped broker (set while it is down, as an operator does
    // before restarting it): the ETA uses it, the lower rate; configs describes it from the metadata.
    const followerRate = 524288;
    await alterConfig('brokers', '3', '--add-config', `follower.replication.throttled.rate=${followerRate}`);
    await alterConfig('topics', PLAN, '--add-config', 'follower.replication.throttled.replicas=*');
    const described = await skiff(
      'configs',
      '--bootstrap-server',
      bootstrap,
      '--describe',
      '--entity-type',
      'brokers',
      '--entity-name',
      '3',
    );
    assert.deepEqual(
      [described.status, described.stdout, described.stderr],
      [
        0,
        `Dynamic configs for broker 3 are:\n  follower.replication.throttled.rate=${followerRate} sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:follower.replication.throttled.rate=${followerRate}}\n`,
        '',
      ],
    );
    const throttled = await planText();
    assert.equal(throttled.status, 0, throttled.stderr);
    assert.match(throttled.stdout, new RegExp(`\\tETA: \\S.* at ${followerRate} B/s\\t`));
    assert.match(
      throttled.stderr,
      /broker 3 is not live: its throttle rates are its dynamic configs stored in the cluster metadata/,
    );
    p = (await planJson('--topic', PLAN)).partitions[0]!;
    assert.equal(p.throttleBytesPerSec, followerRate);
    assert.equal(p.etaSeconds, p.bytesToCopy / followerRate);

    // The leader's log start passes the stopped replica's LEO: it will rebuild.
    fs.writeFileSync(
      path.join(dir, 'del.json'),
      JSON.stringify({ partitions: [{ topic: PLAN, partition: 0, offset: 2000 }], version: 1 }),
    );
    const del = await skiff(
      'delete-records',
      '--bootstrap-server',
      bootstrap,
      '--offset-json-file',
      path.join(dir, 'del.json'),
    );
    assert.equal(del.status, 0, del.stderr);
    plan = (await planJson('--topic', PLAN)).partitions;
    p = plan[0]!;
    const holding = batchesOf(segment(1, PLAN)).find((b) => b.baseOffset <= 2000n && b.lastOffset >= 2000n)!;
    assert.deepEqual([p.action, p.replicaLogEndOffset, p.leaderLogStartOffset], ['REBUILD', 1500, 2000]);
    assert.equal(p.bytesToCopy, fs.statSync(segment(1, PLAN)).size - holding.position);
    assert.equal(p.bytesToDiscard, -1, 'a stopped broker cannot tell its log size');

    // The shrink is in the durable history: a stopped broker takes nothing of it away.
    const text3 = await skiff('isr-history', '--bootstrap-server', bootstrap, '--topic', PLAN);
    assert.equal(text3.status, 0, text3.stderr);
    assert.equal(text3.stderr, '');
    const changes = await history(PLAN);
    assert.ok(
      changes.some((c) => c.broker === 1 && c.oldIsr.includes(3) && !c.newIsr.includes(3)),
      JSON.stringify(changes),
    );

    await alterConfig('brokers', '1', '--delete-config', 'leader.replication.throttled.rate');
    await alterConfig('topics', PLAN, '--delete-config', 'leader.replication.throttled.replicas');
    await alterConfig('brokers', '3', '--delete-config', 'follower.replication.throttled.rate');
    await alterConfig('topics', PLAN, '--delete-config', 'follower.replication.throttled.replicas');
    const start = await cluster('start', '3');
    assert.equal(start.status, 0, start.stderr);
    await waitUntil('ISR 1,2,3', async () => ((await isrOf(PLAN)) === '1,2,3' ? true : undefined), 30_000);
    const after = await history(PLAN);
    assert.ok(
      after.some(
        (c) => c.broker === 1 && c.kind === 'expand' && !c.oldIsr.includes(3) && c.newIsr.includes(3),
      ),
      JSON.stringify(after),
    );
    // Caught up: nothing to copy, so the plan leaves the replica out and counts it.
    const caughtUp = await waitUntil(
      'broker 3 caught up in the plan',
      async () => {
        const q = await planJson('--topic', PLAN);
        return q.partitions.length === 0 ? q : undefined;
      },
      15_000,
    );
    assert.equal(caughtUp.upToDate, 1);
  });

  it('replica-verification finds payload bytes flipped in the middle of a follower segment: first divergent offset and both checksums, exit 1', async () => {
    await identical(VERIFY);
    const stop = await cluster('stop', '3');
    assert.equal(stop.status, 0, stop.stderr);
    const file = segment(3, VERIFY);
    const batches = batchesOf(file);
    assert.ok(batches.length >= 5, `only ${batches.length} batches`);
    const victim = batches[Math.floor(batches.length / 2)]!;
    const bytes = fs.readFileSync(file);
    // A byte of a record's payload: the batch header (61 bytes) and lengths stay as they were.
    bytes[victim.position + 61 + 40]! ^= 0xff;
    fs.writeFileSync(file, bytes);
    const corruptCrc = computeCrc(bytes, victim.position, victim.size);
    assert.notEqual(corruptCrc, victim.crc);
    const start = await cluster('start', '3');
    assert.equal(start.status, 0, start.stderr);
    await waitUntil('ISR 1,2,3', async () => ((await isrOf(VERIFY)) === '1,2,3' ? true : undefined), 30_000);

    const r = await skiff(
      'replica-verification',
      '--bootstrap-server',
      bootstrap,
      '--topics-include',
      VERIFY,
    );
    assert.equal(r.status, 1, r.stdout + r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.match(lines[0]!, new RegExp(`^${TS}: verification process is started$`));
    const mismatch = lines.filter((l) => l.includes('unmatched checksum'));
    assert.deepEqual(
      mismatch.map((l) => l.slice(25)),
      [
        `partition ${VERIFY}-0 has unmatched checksum at offset ${victim.lastOffset}; replica 1's checksum ${victim.crc}; replica 3's checksum ${corruptCrc}`,
      ],
    );
    assert.match(mismatch[0]!, new RegExp(`^${TS}: `));
    assert.ok(
      lines.some(
        (l) =>
          l.slice(25) ===
          `partition ${VERIFY}-0 diverges first at offset ${victim.baseOffset} (the batch ${victim.baseOffset}..${victim.lastOffset}); replica 1's checksum ${victim.crc}; replica 3's checksum ${corruptCrc}`,
      ),
      r.stdout,
    );
    assert.match(lines.at(-1)!, /verification completed: 1 of 1 partitions have replicas that diverge$/);
    // The tail is intact: every other batch agrees, and the comparison went up to the start HW.
    assert.ok(
      lines.some((l) => / max lag is 0 for partition verify-0 at offset 1500 among 1 partitions$/.test(l)),
    );
  });

  it('client quotas altered through one broker reach the others (the controller stores them)', async () => {
    const r = await alterConfig('users', 'alice', '--add-config', 'producer_byte_rate=1024');
    assert.equal(r.stdout, 'Completed updating config for user alice.\n');
    for (const p of [port + 1, port + 2]) {
      await waitUntil(
        `the quota on broker at ${p}`,
        async () => {
          const d = await skiff(
            'configs',
            '--bootstrap-server',
            `127.0.0.1:${p}`,
            '--describe',
            '--entity-type',
            'users',
          );
          return d.stdout === "Quota configs for user-principal 'alice' are producer_byte_rate=1024.0\n"
            ? true
            : undefined;
        },
        10_000,
      );
    }
  });

  it('`skiff ... | head` exits quietly', async () => {
    const r = await runProcess('bash', [
      '-o',
      'pipefail',
      '-c',
      `"${process.execPath}" "${SKIFF}" dump-log --files "${segment(1, VERIFY)}" --print-data-log | head -n 2`,
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.equal(r.stdout.split('\n').length, 3);
  });
});
