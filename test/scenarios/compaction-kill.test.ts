/**
 * SIGKILL at three points of a log cleaning, on `skiff up --brokers 3` with an RF 3 compacted
 * topic (issue 19's crash-safety acceptance), reached without any hook in the broker:
 *
 * - before the swap: the test watches a broker's partition dir and kills the broker the moment a
 *   `.cleaned` segment appears; the dir afterwards holds a `.cleaned` file and no `.swap`;
 * - during the swap: killed the moment a `.swap` file appears; the dir afterwards holds a `.swap`
 *   file;
 * - after it: killed the moment the broker logs the cleaning's line (its cleaner-offset-checkpoint
 *   written just before); the dir holds neither, the checkpoint names the cleaned offset.
 *
 * The windows are milliseconds (a 512 KiB segment cleans in a few; log.cleaner.io.max.bytes.per.
 * second cannot widen them: Kafka's throttler checks the rate every 300 ms, so a shorter cleaning
 * is never slowed). An attempt whose kill landed elsewhere is restarted and checked like the
 * others, and the point is tried again, at most ATTEMPTS times; never reaching it fails the test.
 *
 * After each kill the broker restarts on its files: the log loader discards the `.cleaned` files
 * or completes the swap (its log line says which), no `.cleaned`/`.swap` is left, no two segments
 * hold the same offsets, every key's latest record is the one KafkaJS had acknowledged, at its
 * acknowledged offset, and the broker cleans the log again. At the end all three replicas — each
 * compacting its own log — are cleaned up to their active segment and hold the same latest value
 * per key.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import {
  type Acked,
  assertReplicaIntact,
  cleanedUpToActive,
  cleaningLeftovers,
  stableSegments,
} from '../support/compacted-log.js';
import { processesMentioning } from '../support/processes.js';
import { ScenarioCluster, waitUntil } from './harness.js';

const TOPIC = 'compacted-kill';
const KEYS = 20;
/** Keys written once per round. */
const COLD_KEYS = 10;
const VALUE_BYTES = 1000;
/** Records per round: ~2 MB, four 512 KiB segments. */
const ROUND = 2000;
const PER_SEND = 250;
/** Kills per point before the test gives up on reaching it. */
const ATTEMPTS = 8;
const CLEANING_LINE = new RegExp(
  `Log cleaner thread \\d+ cleaned log ${TOPIC}-0 \\(dirty section = \\[(\\d+), (\\d+)\\]\\)`,
);

describe('SIGKILL during a log cleaning: before, during and after the swap (RF 3)', () => {
  let c: ScenarioCluster;
  let kafka: Kafka;
  let producer: Producer;
  const acked = new Map<string, Acked>();
  let round = 0;

  before(async () => {
    c = await ScenarioCluster.start({
      name: 'compaction-kill',
      brokers: 3,
      properties: ['log.cleaner.backoff.ms=100', 'offsets.topic.replication.factor=3'],
    });
    await c.createTopic(TOPIC, {
      assignments: [[1, 2, 3]],
      configs: {
        'cleanup.policy': 'compact',
        'segment.bytes': String(512 * 1024),
        'min.cleanable.dirty.ratio': '0.01',
      },
    });
    kafka = new Kafka({
      clientId: 'skiff-compaction-kill',
      brokers: c.bootstrap.split(','),
      logLevel: logLevel.NOTHING,
    });
    // Retries that outlast a leader's failover on a loaded machine (KafkaJS's default 5 gave up
    // after ~5 s of ECONNREFUSED from the killed leader in CI): a send that failed would leave its
    // records neither acknowledged nor surely absent.
    producer = kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 12, maxRetryTime: 5000 } });
    await producer.connect();
  });
  after(async () => {
    await producer?.disconnect();
    await c?.close();
  });

  /** One round of ROUND keyed records over KEYS keys, acks=all; `acked` holds each key's latest. */
  const produceRound = async (): Promise<void> => {
    round++;
    for (let sent = 0; sent < ROUND; sent += PER_SEND) {
      const messages = Array.from({ length: PER_SEND }, (_, i) => {
        // The round's first records are cold keys, never written again: their only record stays
        // in the cleaned segments, where a swap lost or undone would lose it.
        const n = sent + i;
        const key = n < COLD_KEYS ? `cold-${round}-${n}` : `k${n % KEYS}`;
        return { key, value: `${key}:${round}:${n}:`.padEnd(VALUE_BYTES, 'x') };
      });
      const [meta] = await producer.send({ topic: TOPIC, acks: -1, messages });
      assert.equal(meta!.errorCode, 0);
      const base = BigInt(meta!.baseOffset!);
      for (const [i, m] of messages.entries()) acked.set(m.key, { value: m.value, offset: base + BigInt(i) });
    }
  };

  const pidOf = (id: number): number => {
    const title = `skiff broker ${id} ${path.join(c.dir, `broker-${id}`)}`;
    const found = processesMentioning(title).filter((p) => p.cmdline.endsWith(title));
    assert.equal(found.length, 1, `one process titled ${title}: ${JSON.stringify(found)}`);
    return found[0]!.pid;
  };

  /** Whether `pid` is gone (or a zombie the launcher has yet to reap). */
  const dead = (pid: number): boolean => {
    try {
      return /^\S+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return true;
    }
  };

  /**
   * Watches `dir` and SIGKILLs broker `id` the moment a file whose name `hit` accepts appears
   * there (inotify: the kill is sent from the watch callback). Resolves with that name once the
   * broker is dead, or rejects after `timeoutMs`.
   */
  const killOnFile = async (
    id: number,
    dir: string,
    hit: (name: string) => boolean,
    trigger: () => Promise<void>,
    timeoutMs: number,
  ): Promise<string> => {
    const pid = pidOf(id);
    let watcher: fs.FSWatcher | undefined;
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<string>((resolve, reject) => {
      watcher = fs.watch(dir, (_event, name) => {
        if (name === null || !hit(name)) return;
        process.kill(pid, 'SIGKILL');
        watcher?.close();
        resolve(name);
      });
      timer = setTimeout(
        () => reject(new Error(`no matching file in ${dir} within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      await Promise.all([killed, trigger()]);
      const name = await killed;
      await waitUntil(`broker ${id} (pid ${pid}) dead`, async () => dead(pid) || undefined, 10_000, 20);
      return name;
    } finally {
      clearTimeout(timer);
      watcher?.close();
    }
  };

  /** `skiff cluster start id` once the launcher has seen the kill; waits for the ISR to be whole. */
  const restart = async (id: number): Promise<number> => {
    const mark = c.serverLogMark(id);
    await waitUntil(
      `broker ${id} restarted`,
      async () => {
        const r = await c.skiff(['cluster', 'start', String(id), '--data-dir', c.dir], '', 60_000);
        return r.status === 0 || undefined;
      },
      30_000,
      200,
    );
    await c.waitForIsr(TOPIC, 0, [1, 2, 3], 30_000);
    return mark;
  };

  it('killed before the swap (a .cleaned segment written), the restart discards it and cleans again', async () => {
    const id = 1;
    const dir = c.partitionDir(id, TOPIC, 0);
    for (let attempt = 1; ; attempt++) {
      const name = await killOnFile(id, dir, (n) => n.endsWith('.log.cleaned'), produceRound, 60_000);
      const left = cleaningLeftovers(dir);
      console.log(`attempt ${attempt}: killed on ${name}; left ${JSON.stringify(left)}`);
      // Missed when the group was cleaned and its swap begun before the kill landed.
      const hit = left.cleaned.length > 0 && left.swap.length === 0;
      const mark = await restart(id);
      await assertReplicaIntact(dir, acked, `broker ${id} (attempt ${attempt})`);
      if (hit) {
        await c.waitForServerLog(id, /deleted \d+ \.cleaned files of an unfinished cleaning/, 10_000, mark);
        await c.waitForServerLog(id, CLEANING_LINE, 60_000, mark);
        await assertReplicaIntact(dir, acked, `broker ${id} cleaned again`);
        return;
      }
      assert.ok(
        attempt < ATTEMPTS,
        `no kill landed while a .cleaned segment was written in ${ATTEMPTS} attempts`,
      );
    }
  });

  it('killed during the swap (a .swap file present), the restart completes or discards it', async () => {
    const id = 2;
    const dir = c.partitionDir(id, TOPIC, 0);
    for (let attempt = 1; ; attempt++) {
      // The last of a segment's three renames to `.swap`: from here to the renames back to live
      // (after a directory fsync and the old segments' renames to `.deleted`) the swap is open.
      const name = await killOnFile(id, dir, (n) => n.endsWith('.timeindex.swap'), produceRound, 60_000);
      const left = cleaningLeftovers(dir);
      console.log(`attempt ${attempt}: killed on ${name}; left ${JSON.stringify(left)}`);
      const swapBases = left.swap.map((n) => BigInt(n.slice(0, 20)));
      const cleanedBases = left.cleaned.map((n) => BigInt(n.slice(0, 20)));
      // Kafka's rule: a `.swap` at or above a `.cleaned` file's base offset was not complete.
      const completes = swapBases.some((b) => cleanedBases.every((cb) => b < cb));
      const mark = await restart(id);
      await assertReplicaIntact(dir, acked, `broker ${id} (attempt ${attempt})`);
      if (completes) {
        await c.waitForServerLog(
          id,
          /recovering file \S+\.log\.swap by renaming from \.swap files/,
          10_000,
          mark,
        );
      } else if (swapBases.length > 0) {
        await c.waitForServerLog(id, /deleted \d+ \.cleaned files of an unfinished cleaning/, 10_000, mark);
      }
      if (swapBases.length > 0) {
        console.log(`the restart ${completes ? 'completed' : 'discarded'} the swap`);
        await c.waitForServerLog(id, CLEANING_LINE, 60_000, mark);
        await assertReplicaIntact(dir, acked, `broker ${id} cleaned again`);
        return;
      }
      assert.ok(attempt < ATTEMPTS, `no kill landed inside a swap in ${ATTEMPTS} attempts`);
    }
  });

  it('killed after the swap (the cleaning logged and checkpointed), the restart has nothing to undo', async () => {
    const id = 3;
    const dir = c.partitionDir(id, TOPIC, 0);
    const logFile = path.join(c.dir, 'logs', `broker-${id}.log`);
    for (let attempt = 1; ; attempt++) {
      const from = c.serverLogMark(id);
      const seen: { line: RegExpExecArray | null } = { line: null };
      await killOnFile(
        id,
        path.dirname(logFile),
        (n) => {
          if (n !== path.basename(logFile)) return false;
          seen.line = CLEANING_LINE.exec(c.serverLog(id).slice(from));
          return seen.line !== null;
        },
        produceRound,
        60_000,
      );
      const left = cleaningLeftovers(dir);
      const checkpoint = fs.readFileSync(
        path.join(c.dir, `broker-${id}`, 'cleaner-offset-checkpoint'),
        'utf8',
      );
      const [text, , end] = seen.line!;
      console.log(`attempt ${attempt}: killed after ${text}; left ${JSON.stringify(left)}`);
      const clean = left.cleaned.length === 0 && left.swap.length === 0;
      const mark = await restart(id);
      await assertReplicaIntact(dir, acked, `broker ${id} (attempt ${attempt})`);
      if (clean) {
        assert.ok(
          checkpoint.split('\n').includes(`${TOPIC} 0 ${end}`),
          `the checkpoint holds the cleaned end ${end}:\n${checkpoint}`,
        );
        // Cleaned again once there is something new to clean.
        await produceRound();
        await c.waitForServerLog(id, CLEANING_LINE, 60_000, mark);
        await assertReplicaIntact(dir, acked, `broker ${id} cleaned again`);
        return;
      }
      // A next cleaning had begun before the kill landed: that was not the point aimed at.
      assert.ok(attempt < ATTEMPTS, `no kill landed between two cleanings in ${ATTEMPTS} attempts`);
    }
  });

  it('all three replicas are cleaned up to their active segment and hold the same latest value per key', async () => {
    await c.waitForIsr(TOPIC, 0, [1, 2, 3], 30_000);
    for (const id of [1, 2, 3]) {
      const dir = c.partitionDir(id, TOPIC, 0);
      await waitUntil(
        `broker ${id}'s replica cleaned up to its active segment`,
        async () => cleanedUpToActive(await stableSegments(dir)) || undefined,
        60_000,
        200,
      );
      const segments = await assertReplicaIntact(dir, acked, `broker ${id}`);
      const left = cleaningLeftovers(dir);
      assert.deepEqual(
        [...left.cleaned, ...left.swap],
        [],
        `broker ${id}: no .cleaned or .swap file is left`,
      );
      const records = segments.reduce((n, s) => n + s.records.length, 0);
      console.log(
        `broker ${id}: ${segments.length} segments, ${records} records for ${round * ROUND} produced`,
      );
    }
  });
});
