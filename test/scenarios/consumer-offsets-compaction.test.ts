/**
 * `__consumer_offsets` stays bounded under a group that commits 1,000 times a second for 60 s
 * (issue 19's acceptance), on `skiff up --brokers 1`: a KafkaJS consumer that has joined its group
 * commits one partition's offset per commit, cycling over four partitions, paced at 1,000 commits
 * a second (at most 16 in flight). `offsets.topic.segment.bytes` is 100 KiB (Kafka's setting; the
 * broker creates `__consumer_offsets` compacted with it as segment.bytes, which DescribeConfigs
 * shows) and the cleaner polls every 500 ms.
 *
 * While it runs, the partition dir of the group's `__consumer_offsets` partition is sampled every
 * 250 ms: it never holds more than MAX_SEGMENTS live segments or MAX_SEGMENTS × segment.bytes,
 * where uncleaned the ~60,000 commit records (a ~120-byte batch each) would fill ~70 segments
 * (measured: at most 4-5 segments, ~200 KB); the broker's log shows the cleaner's runs on it. Afterwards it settles to at most SETTLED_SEGMENTS segments, and after a
 * SIGKILL and restart of the broker the group's committed offsets — loaded from the compacted
 * topic — are the last ones committed.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import kafkajs, { type Consumer, Kafka, logLevel } from 'kafkajs';
import { ScenarioCluster, sleep, waitUntil } from './harness.js';

const { ConfigResourceTypes } = kafkajs;
const GROUP = 'committer';
const TOPIC = 'committed';
const PARTITIONS = 4;
const COMMITS_PER_SEC = 1000;
const DURATION_MS = 60_000;
const MAX_IN_FLIGHT = 16;
const SEGMENT_BYTES = 100 * 1024;
const MAX_SEGMENTS = 8;
const SETTLED_SEGMENTS = 3;
const OFFSETS = '__consumer_offsets';

describe('__consumer_offsets under 1,000 commits a second for 60 s', () => {
  let c: ScenarioCluster;
  let kafka: Kafka;
  let consumer: Consumer | undefined;

  before(async () => {
    c = await ScenarioCluster.start({
      name: 'offsets-compaction',
      brokers: 1,
      properties: [
        'offsets.topic.replication.factor=1',
        'offsets.topic.num.partitions=1',
        `offsets.topic.segment.bytes=${SEGMENT_BYTES}`,
        'log.cleaner.backoff.ms=500',
        'group.initial.rebalance.delay.ms=0',
      ],
    });
    await c.createTopic(TOPIC, { assignments: Array.from({ length: PARTITIONS }, () => [1]) });
    kafka = new Kafka({ clientId: 'skiff-committer', brokers: [c.bootstrap], logLevel: logLevel.NOTHING });
  });
  after(async () => {
    await consumer?.disconnect();
    await c?.close();
  });

  /** The live segments of the group's __consumer_offsets partition: count and bytes. */
  const segments = (): { count: number; bytes: number } => {
    const dir = c.partitionDir(1, OFFSETS, 0);
    let count = 0;
    let bytes = 0;
    for (const name of fs.readdirSync(dir)) {
      if (!/^\d{20}\.log$/.test(name)) continue;
      try {
        bytes += fs.statSync(path.join(dir, name)).size;
        count++;
      } catch (e) {
        // Renamed away by the cleaner's swap between the listing and the stat.
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
    }
    return { count, bytes };
  };

  it('stays within a few segments while and after, and the committed offsets survive a restart', async () => {
    consumer = kafka.consumer({ groupId: GROUP, sessionTimeout: 10_000, heartbeatInterval: 1000 });
    await consumer.connect();
    const joined = new Promise<void>((resolve) => consumer!.on(consumer!.events.GROUP_JOIN, () => resolve()));
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    await consumer.run({ autoCommit: false, eachMessage: async () => {} });
    await joined;

    const committed = new Map<number, number>();
    let issued = 0;
    let acked = 0;
    const failures: unknown[] = [];
    const inFlight = new Set<Promise<void>>();
    let maxCount = 0;
    let maxBytes = 0;
    const sampler = setInterval(() => {
      try {
        const s = segments();
        maxCount = Math.max(maxCount, s.count);
        maxBytes = Math.max(maxBytes, s.bytes);
      } catch (e) {
        failures.push(e);
      }
    }, 250);
    const mark = c.serverLogMark(1);
    const start = Date.now();
    try {
      for (;;) {
        const elapsed = Date.now() - start;
        if (elapsed >= DURATION_MS) break;
        const due = Math.floor((elapsed * COMMITS_PER_SEC) / 1000);
        while (issued < due && inFlight.size < MAX_IN_FLIGHT) {
          const partition = issued % PARTITIONS;
          const offset = ++issued;
          // One connection to the coordinator, answered in order: the last commit of a
          // partition is the one the group keeps.
          committed.set(partition, offset);
          const p: Promise<void> = consumer
            .commitOffsets([{ topic: TOPIC, partition, offset: String(offset) }])
            .then(
              () => {
                acked++;
              },
              (e: unknown) => {
                failures.push(e);
              },
            )
            .finally(() => inFlight.delete(p));
          inFlight.add(p);
        }
        await (inFlight.size >= MAX_IN_FLIGHT ? Promise.race(inFlight) : sleep(1));
      }
      await Promise.all(inFlight);
    } finally {
      clearInterval(sampler);
    }
    const seconds = (Date.now() - start) / 1000;
    assert.deepEqual(failures, [], 'every commit succeeded');
    console.log(
      `${acked} commits in ${seconds.toFixed(1)} s (${Math.round(acked / seconds)}/s); __consumer_offsets-0 at most ${maxCount} segments, ${maxBytes} bytes`,
    );
    assert.ok(acked >= 0.95 * (DURATION_MS / 1000) * COMMITS_PER_SEC, `${acked} commits, 1,000 a second`);
    const admin = kafka.admin();
    await admin.connect();
    try {
      // The broker made the topic from offsets.topic.segment.bytes, compacted.
      const described = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [
          {
            type: ConfigResourceTypes.TOPIC,
            name: OFFSETS,
            configNames: ['segment.bytes', 'cleanup.policy'],
          },
        ],
      });
      const entries = new Map(
        described.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]),
      );
      assert.equal(entries.get('segment.bytes'), String(SEGMENT_BYTES));
      assert.equal(entries.get('cleanup.policy'), 'compact');
      const [end] = await admin.fetchTopicOffsets(OFFSETS);
      const appended = Number(end!.high);
      assert.ok(appended >= acked, `${appended} records appended to ${OFFSETS}-0 for ${acked} commits`);
      // Uncleaned, those records would fill appended × ~80 bytes / segment.bytes segments.
      console.log(`${OFFSETS}-0 high watermark ${appended}`);
    } finally {
      await admin.disconnect();
    }
    const cleanings = c
      .serverLog(1)
      .slice(mark)
      .match(new RegExp(`Log cleaner thread \\d+ cleaned log ${OFFSETS}-0 `, 'g'));
    assert.ok((cleanings?.length ?? 0) > 0, `the cleaner ran on ${OFFSETS}-0`);
    assert.ok(maxCount <= MAX_SEGMENTS, `at most ${MAX_SEGMENTS} segments while committing, saw ${maxCount}`);
    assert.ok(
      maxBytes <= MAX_SEGMENTS * SEGMENT_BYTES,
      `at most ${MAX_SEGMENTS * SEGMENT_BYTES} bytes, saw ${maxBytes}`,
    );

    await consumer.disconnect();
    consumer = undefined;
    const settled = await waitUntil(
      `${OFFSETS}-0 settled to ${SETTLED_SEGMENTS} segments`,
      async () => {
        const s = segments();
        return s.count <= SETTLED_SEGMENTS ? s : undefined;
      },
      30_000,
      250,
    );
    console.log(`after: ${settled.count} segments, ${settled.bytes} bytes; ${cleanings!.length} cleanings`);

    const restartMark = c.serverLogMark(1);
    await c.stopBroker(1, { kill: true });
    await c.startBroker(1);
    await c.waitForServerLog(1, new RegExp(`${OFFSETS}-0: loaded 1 groups`), 30_000, restartMark);
    const admin2 = kafka.admin();
    await admin2.connect();
    try {
      const [offsets] = await admin2.fetchOffsets({ groupId: GROUP, topics: [TOPIC] });
      const got = new Map(offsets!.partitions.map((p) => [p.partition, Number(p.offset)]));
      assert.deepEqual(got, committed, 'the committed offsets after the restart are the last committed');
    } finally {
      await admin2.disconnect();
    }
  });
});
