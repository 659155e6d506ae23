/**
 * Seed 14.3 (《Kafka 内核与客户端》14.3 数据不一致的取证), replayed on `skiff up --brokers 3`:
 *
 * - 破坏实验 (the torn segment): topic e1.verify.demo, 3 partitions × 3 replicas, 2000 × 512-byte
 *   records with `skiff producer-perf-test ... acks=all`. A follower (`skiff cluster stop N` for
 *   `docker stop mq-e3`) loses the last 500 bytes of partition 1's segment and its .index and
 *   .timeindex are truncated to 0 bytes. On start it recovers to the torn batch's base offset (the
 *   seed's 651; the recovery line names it), fetches from there, rejoins the ISR. The seed's Kafka
 *   then kept the torn bytes in the file (372376 bytes vs the leader's 356664, offsetLag 0 on both):
 *   Skiff cuts them, so the replicas' .log files are EQUAL, byte for byte.
 * - 未在本机执行 (a), bit rot: payload bytes flipped in a batch in the middle of a follower's segment,
 *   lengths intact. How Skiff behaves: after a crash, recovery validates every batch (CRC-32C) of
 *   the segments from the one holding the recovery point to the active one; after a clean shutdown
 *   only the active segment's tail (from its last index entry) — like Kafka, a clean restart trusts
 *   the bytes it flushed. So the follower here dies by SIGKILL (`skiff cluster stop N --kill`):
 *   recovery meets the CRC mismatch, truncates from that batch (its base offset is the new LEO,
 *   the later valid batches go too), refetches, and the replicas converge byte-identical. (The
 *   seed's "same commands as the truncation experiment" also empty the indexes, which forces the
 *   same full validation after a clean stop. Rot in a segment below the recovery point, or after a
 *   clean stop with intact indexes, is not detected at start-up — as in Kafka.)
 * - 未在本机执行 (b), a follower ahead of the leader: needs an unclean election, which the seed's
 *   3-node KRaft could not do (losing quorum). Skiff's metadata store lives in the launcher, so:
 *   RF 2, unclean.leader.election.enable=true; the follower stops, the leader takes more records
 *   and stops; the stale follower comes back and is elected uncleanly, takes new records at a new
 *   leader epoch; the old leader comes back AHEAD and truncates to the new leader's epoch end,
 *   logged with the truncation offset (Kafka's "Truncating partition T-0 with TruncationState
 *   (offset=<epoch end>, completed=true)"), then converges.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ScenarioCluster, waitUntil } from './harness.js';

const TOPIC = 'e1.verify.demo';
const SEG = '00000000000000000000';

interface Batch {
  readonly base: bigint;
  readonly last: bigint;
  readonly position: number;
  readonly size: number;
}

describe('seed 14.3: forensics of divergence — torn segment, bit rot, a follower ahead', () => {
  let c: ScenarioCluster;
  let victim: number;
  let controller: number;
  let other: number;

  /** `skiff dump-log --files F`: the batch lines. */
  const batchesOf = async (file: string): Promise<Batch[]> => {
    const r = await c.dumpLog(file);
    assert.equal(r.status, 0, r.stderr);
    return [
      ...r.stdout.matchAll(
        /baseOffset: (\d+) lastOffset: (\d+) count: \d+ .*?position: (\d+) .*?size: (\d+)/g,
      ),
    ].map((m) => ({
      base: BigInt(m[1]!),
      last: BigInt(m[2]!),
      position: Number(m[3]!),
      size: Number(m[4]!),
    }));
  };
  const segmentOf = (id: number, topic: string, p: number) =>
    path.join(c.partitionDir(id, topic, p), `${SEG}.log`);
  /** Waits until every replica's .log of the partition is byte-identical; returns its size. */
  const identical = (topic: string, p: number, ids: readonly number[], timeoutMs = 30_000): Promise<number> =>
    waitUntil(
      `identical ${topic}-${p} on ${ids.join(',')}`,
      async () => {
        const [first, ...rest] = ids.map((id) => c.logBytes(id, topic, p));
        return first!.length > 0 && rest.every((b) => b.equals(first!)) ? first!.length : undefined;
      },
      timeoutMs,
      200,
    );

  /** `skiff replica-verification`: max lag 0 among the 3 partitions, all agree, exit 0. */
  const verifyAgree = async (): Promise<void> => {
    const r = await c.skiff(
      [
        'replica-verification',
        '--broker-list',
        c.bootstrap,
        '--topics-include',
        TOPIC.replace(/\./g, '\\.'),
        '--report-interval-ms',
        '5000',
        '--max-duration-ms',
        '30000',
      ],
      '',
      60_000,
    );
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    assert.match(
      r.stdout,
      /: max lag is 0 for partition e1\.verify\.demo-\d at offset \d+ among 3 partitions$/m,
    );
    assert.match(r.stdout, /verification completed: the replicas of all 3 partitions agree/);
  };

  before(async () => {
    c = await ScenarioCluster.start({ name: 'seed-14-3' });
    controller = await c.controllerId();
    const [v, o] = [3, 2, 1].filter((id) => id !== controller);
    victim = v!;
    other = o!;
  });

  after(async () => {
    await c?.close();
  });

  it('破坏实验: the last 500 bytes cut from a stopped follower, indexes emptied → it recovers to the torn batch, refetches, rejoins; the .log files are EQUAL afterwards', async () => {
    // kafka-topics.sh --create --topic e1.verify.demo --partitions 3 --replication-factor 3; the
    // leaders are not the victim (the seed's partition 1: Leader 2, follower mq-e3 cut).
    const leaderOf1 = other;
    await c.createTopic(TOPIC, {
      assignments: [
        [controller, other, victim],
        [leaderOf1, victim, controller],
        [controller, victim, other],
      ],
    });
    await c.perf(TOPIC, 2000, 512, ['acks=all']);
    const sizes = [];
    for (const p of [0, 1, 2]) sizes.push(await identical(TOPIC, p, [1, 2, 3]));
    const leo = (await batchesOf(segmentOf(leaderOf1, TOPIC, 1))).at(-1)!.last + 1n;
    console.log(`partition sizes ${sizes.join(' / ')}; partition 1 LEO ${leo}`);

    // 第一层: kafka-replica-verification.sh --broker-list ... --topics-include 'e1.verify.demo'
    // --report-interval-ms 5000. Skiff's exits by itself (the seed needed `timeout 25`).
    await verifyAgree();

    // 第二层: kafka-log-dirs.sh --describe — healthy, every replica the same size, offsetLag 0.
    const healthy = await c.logDirs(TOPIC);
    for (const id of [1, 2, 3]) {
      for (const p of [0, 1, 2]) {
        assert.deepEqual(
          healthy.get(id)?.get(`${TOPIC}-${p}`),
          { size: sizes[p], offsetLag: 0 },
          `${id} ${p}`,
        );
      }
    }
    // 第三层: kafka-dump-log.sh --print-data-log on the leader and the follower of partition 1: the
    // same batches (boundaries, sizes, CRCs), and `grep -c '^| offset:'` counts the records.
    const crcs = async (id: number) => {
      const r = await c.dumpLog(segmentOf(id, TOPIC, 1), true);
      assert.equal(r.status, 0, r.stderr);
      const records = r.stdout.split('\n').filter((l) => l.startsWith('| offset:')).length;
      return {
        records,
        batches: [...r.stdout.matchAll(/position: (\d+) .*?size: (\d+) .*?crc: (\d+) isvalid: true/g)].map(
          (m) => m.slice(1).join('/'),
        ),
      };
    };
    const [onLeader, onVictim] = [await crcs(leaderOf1), await crcs(victim)];
    assert.deepEqual(onVictim, onLeader);
    assert.equal(onLeader.records, Number(leo));

    // docker stop mq-e3; cut the last 500 bytes; `: > empty.idx` over .index and .timeindex.
    await c.stopBroker(victim);
    const dir = c.partitionDir(victim, TOPIC, 1);
    const original = fs.readFileSync(path.join(dir, `${SEG}.log`));
    const cutSize = original.length - 500;
    fs.truncateSync(path.join(dir, `${SEG}.log`), cutSize);
    fs.truncateSync(path.join(dir, `${SEG}.index`), 0);
    fs.truncateSync(path.join(dir, `${SEG}.timeindex`), 0);
    const torn = (await batchesOf(segmentOf(leaderOf1, TOPIC, 1))).find(
      (b) => b.position < cutSize && cutSize < b.position + b.size,
    )!;
    assert.ok(torn, 'the cut falls inside a batch');
    console.log(
      `cut ${original.length} -> ${cutSize} bytes: torn batch ${torn.base}..${torn.last} at ${torn.position}`,
    );

    // docker start mq-e3: the recovery line names the torn batch's base offset as the LEO.
    const mark = c.serverLogMark(victim);
    await c.startBroker(victim);
    const [recovered] = await c.waitForServerLog(
      victim,
      new RegExp(`^.*${TOPIC.replace(/\./g, '\\.')}-1: recovered segment 0 .*$`, 'm'),
      30_000,
      mark,
    );
    console.log(recovered);
    assert.match(
      recovered!,
      new RegExp(
        `truncated ${cutSize - torn.position} bytes at position ${torn.position} .*; LEO ${torn.base}$`,
      ),
    );
    // The fetcher starts from there (the seed's "InitialFetchState(..., 651)").
    await c.waitForServerLog(
      victim,
      new RegExp(
        `${TOPIC.replace(/\./g, '\\.')}-1: following leader ${leaderOf1} at leader epoch \\d+ from offset ${torn.base} `,
      ),
      30_000,
      mark,
    );
    await c.waitForIsr(TOPIC, 1, [1, 2, 3], 30_000);
    // Shorter than the leader, it only fetched: no epoch truncation ("不是 epoch 截断").
    assert.doesNotMatch(c.serverLog(victim).slice(mark), /Truncating partition e1\.verify\.demo-1/);
    // Equal sizes (the seed's Kafka: 372376 vs 356664), byte for byte; log-dirs agrees.
    assert.equal(await identical(TOPIC, 1, [1, 2, 3]), original.length);
    const dirs = await c.logDirs(TOPIC);
    for (const id of [1, 2, 3]) {
      assert.deepEqual(
        dirs.get(id)?.get(`${TOPIC}-1`),
        { size: original.length, offsetLag: 0 },
        `broker ${id}`,
      );
    }
    // 再跑一次校验: replica-verification agrees again.
    await verifyAgree();
    // dump-log on the repaired replica: every batch valid, the last one ends at the LEO.
    const dump = await c.dumpLog(segmentOf(victim, TOPIC, 1));
    assert.doesNotMatch(dump.stdout, /isvalid: false/);
    assert.equal((await batchesOf(segmentOf(victim, TOPIC, 1))).at(-1)!.last + 1n, leo);
  });

  it('未在本机执行 (a): bit rot in the middle of a follower segment (payload flipped, lengths intact) → recovery finds the CRC mismatch, truncates from that batch, refetches; replicas converge byte-identical', async () => {
    const topic = 'e1.bitrot';
    await c.createTopic(topic, { assignments: [[other, victim, controller]] });
    await c.perf(topic, 1000, 512, ['acks=all']);
    const size = await identical(topic, 0, [1, 2, 3]);
    const batches = await batchesOf(segmentOf(other, topic, 0));
    const rotten = batches[Math.floor(batches.length / 2)]!;
    assert.ok(rotten.size > 200 && batches.length >= 3, `${batches.length} batches`);

    // The follower dies without a clean shutdown; 8 bytes inside the last record's value flipped.
    await c.stopBroker(victim, { kill: true });
    const file = segmentOf(victim, topic, 0);
    const fd = fs.openSync(file, 'r+');
    try {
      const at = rotten.position + rotten.size - 100;
      const buf = Buffer.alloc(8);
      fs.readSync(fd, buf, 0, 8, at);
      for (let i = 0; i < 8; i++) buf[i] = buf[i]! ^ 0xff;
      fs.writeSync(fd, buf, 0, 8, at);
    } finally {
      fs.closeSync(fd);
    }
    assert.equal(fs.statSync(file).size, size, 'lengths intact');

    const mark = c.serverLogMark(victim);
    await c.startBroker(victim);
    const [recovered] = await c.waitForServerLog(
      victim,
      /^.*e1\.bitrot-0: recovered segment 0 .*$/m,
      30_000,
      mark,
    );
    console.log(recovered);
    assert.match(
      recovered!,
      new RegExp(
        `full validation\\): \\d+ valid batches checked, truncated ${size - rotten.position} bytes at position ${rotten.position} \\(.*(CRC|crc).*\\); LEO ${rotten.base}$`,
      ),
    );
    await c.waitForIsr(topic, 0, [1, 2, 3], 30_000);
    assert.equal(await identical(topic, 0, [1, 2, 3]), size);
    assert.equal((await c.consume(topic)).length, 1000);
  });

  it('未在本机执行 (b): a follower ahead of the leader after an unclean election truncates by leader epoch to the new leader epoch end, logged with the truncation offset', async () => {
    const topic = 'e1.unclean';
    const ahead = other;
    const stale = victim;
    await c.createTopic(topic, {
      assignments: [[ahead, stale]],
      configs: { 'min.insync.replicas': '1', 'unclean.leader.election.enable': 'true' },
    });
    const values = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
    assert.equal((await c.produce(topic, values('both', 100))).status, 0);
    await identical(topic, 0, [ahead, stale]);

    // The follower stops; the leader takes 50 more (acks=all with the ISR {leader}: min.insync 1).
    await c.stopBroker(stale);
    await c.waitForIsr(topic, 0, [ahead], 15_000);
    const r1 = await c.produce(topic, values('lost', 50));
    assert.equal(r1.status, 0, r1.stderr);
    const oldEpoch = (await c.partition(topic, 0)).leaderEpoch;

    // The leader stops too: no leader. The stale replica comes back and is elected uncleanly.
    await c.stopBroker(ahead);
    await waitUntil(
      'Leader: none',
      async () => ((await c.describeLine(topic, 0)).leader === 'none' ? true : undefined),
      15_000,
    );
    await c.startBroker(stale);
    const view = await c.waitForLeader(topic, 0, (l) => l === stale, 30_000);
    assert.ok(view.leaderEpoch > oldEpoch);
    assert.match(c.serverLog(controller), /Unclean leader election for e1\.unclean-0: leader -1 -> \d/);
    const r2 = await c.produce(topic, values('new', 30));
    assert.equal(r2.status, 0, r2.stderr);

    // The old leader comes back 20 offsets AHEAD of the new leader's epoch start (150 vs 100).
    const mark = c.serverLogMark(ahead);
    await c.startBroker(ahead);
    const [line] = await c.waitForServerLog(
      ahead,
      /^.*Truncating partition e1\.unclean-0 with TruncationState.*$/m,
      30_000,
      mark,
    );
    console.log(line);
    assert.match(
      line!,
      /with TruncationState\(offset=100, completed=true\) due to the leader's diverging epoch \d+ ending at 100: LEO 150 → 100, \d+ bytes discarded$/,
    );
    await c.waitForIsr(topic, 0, [ahead, stale], 30_000);
    await identical(topic, 0, [ahead, stale]);
    // The leader-epoch-checkpoint that decided the cut agrees with the leader's: epoch 0 from 0,
    // the unclean leader's epoch from 100 (the seed: suspect this file first when replicas keep
    // truncating).
    const epochs = (id: number) =>
      fs.readFileSync(path.join(c.partitionDir(id, topic, 0), 'leader-epoch-checkpoint'), 'utf8');
    await waitUntil(
      'equal leader-epoch-checkpoint files',
      async () => (epochs(ahead) === epochs(stale) ? true : undefined),
      10_000,
    );
    assert.deepEqual(epochs(ahead).trim().split('\n').slice(2), [`${oldEpoch} 0`, `${view.leaderEpoch} 100`]);
    // The 50 records only the old leader had are gone (the price of an unclean election).
    assert.deepEqual(await c.consume(topic), [...values('both', 100), ...values('new', 30)]);
  });
});
