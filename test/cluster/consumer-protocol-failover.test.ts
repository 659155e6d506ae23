/**
 * A KIP-848 consumer group across a coordinator failure, on `skiff up --brokers 3`: two
 * @confluentinc/kafka-javascript consumers (`group.protocol: 'consumer'`) share a topic and
 * commit as they go; the broker coordinating their group is SIGKILLed. The group carries on at
 * the new coordinator, which loaded it from __consumer_offsets (its group epoch continues, not
 * restarted), every record is read, and a consumer joining later starts from the committed offsets.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import confluent from '@confluentinc/kafka-javascript';
import { removeDataDir, runSkiff, type SkiffProcess, startTestCluster } from './helpers.js';

const { Kafka, logLevel } = confluent.KafkaJS;
const TOPIC = 'kip848-failover';
const GROUP = 'kip848-failover-group';

type Consumer = ReturnType<InstanceType<typeof Kafka>['consumer']>;

async function waitFor<T>(
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('a consumer-protocol group when its coordinator is SIGKILLed', () => {
  let dir = '';
  let port = 0;
  let up: SkiffProcess | null = null;
  const consumers: Consumer[] = [];
  /** Clients to close however the test ends: a librdkafka handle left open keeps the process alive. */
  const clients: { disconnect(): Promise<void> }[] = [];
  const bootstrap = () => [0, 1, 2].map((i) => `127.0.0.1:${port + i}`);
  const kafka = () => new Kafka({ kafkaJS: { brokers: bootstrap(), logLevel: logLevel.NOTHING } });

  before(async () => {
    ({ dir, port, up } = await startTestCluster('skiff-kip848-failover-', [
      'default.replication.factor=3',
      'min.insync.replicas=2',
      'group.consumer.heartbeat.interval.ms=500',
      'group.consumer.min.heartbeat.interval.ms=500',
      'group.consumer.session.timeout.ms=15000',
      'group.consumer.min.session.timeout.ms=15000',
    ]));
  });
  after(async () => {
    // A consumer in a fatal state may never finish disconnecting: not past 10 s.
    const bounded = (c: { disconnect(): Promise<void> }) =>
      Promise.race([c.disconnect().catch(() => {}), new Promise((r) => setTimeout(r, 10_000).unref())]);
    for (const c of [...consumers, ...clients]) await bounded(c);
    await up?.stop(15_000);
    if (dir) removeDataDir(dir);
  });

  /** The coordinator's id and the group epoch, as `skiff consumer-groups --describe --state --verbose` prints them. */
  /** `skiff consumer-groups --describe --state --verbose` of the group: its output. */
  const describeState = async () =>
    (
      await runSkiff([
        'consumer-groups',
        '--bootstrap-server',
        bootstrap().join(','),
        '--describe',
        '--group',
        GROUP,
        '--state',
        '--verbose',
      ])
    ).stdout;

  async function groupState(): Promise<{ coordinator: number; groupEpoch: number } | undefined> {
    const stdout = await describeState();
    const m = / \((\d+)\) +uniform +Stable +(\d+) +\d+ +2$/m.exec(stdout);
    return m === null ? undefined : { coordinator: Number(m[1]), groupEpoch: Number(m[2]) };
  }

  it('the group goes on at the new coordinator with its epoch and offsets', async () => {
    const admin = kafka().admin();
    clients.push(admin);
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 4, replicationFactor: 3 }] });
    await admin.disconnect();
    const producer = kafka().producer();
    clients.push(producer);
    await producer.connect();
    const send = async (from: number, to: number) => {
      for (let i = from; i < to; i += 10)
        await producer.send({
          topic: TOPIC,
          messages: Array.from({ length: Math.min(10, to - i) }, (_, j) => ({ value: `v${i + j}` })),
        });
    };
    const seen = new Set<string>();
    const start = async () => {
      const c = kafka().consumer({
        kafkaJS: { groupId: GROUP, fromBeginning: true, autoCommit: false },
        'group.protocol': 'consumer',
      } as never);
      consumers.push(c);
      await c.connect();
      await c.subscribe({ topic: TOPIC });
      const values: string[] = [];
      void c.run({
        eachMessage: async ({ partition, message }) => {
          values.push(message.value!.toString());
          seen.add(message.value!.toString());
          await c.commitOffsets([{ topic: TOPIC, partition, offset: String(Number(message.offset) + 1) }]);
        },
      });
      return values;
    };
    await send(0, 40);
    await start();
    await start();
    await waitFor('the first 40 records', () => (seen.size >= 40 ? true : undefined));
    // A third member comes and goes: the group epoch is then 4, where a group formed afresh by
    // the two would stand at 2.
    await start();
    await waitFor('a group of three', async () => (/ 3$/m.test(await describeState()) ? true : undefined));
    await consumers.pop()!.disconnect();
    const before = await waitFor('a stable group of two', groupState);
    assert.equal(before.groupEpoch, 4);

    const killed = await runSkiff(
      ['cluster', 'stop', String(before.coordinator), '--kill', '--data-dir', dir],
      '',
      60_000,
    );
    assert.equal(killed.status, 0, killed.stderr);
    await send(40, 80);
    await waitFor(
      'the next 40 records, read through the failover',
      () => (seen.size >= 80 ? true : undefined),
      90_000,
    );
    const afterKill = await waitFor('the group stable at a new coordinator', async () => {
      const s = await groupState();
      return s !== undefined && s.coordinator !== before.coordinator ? s : undefined;
    });
    // Loaded from __consumer_offsets: the members went on at their epochs, nobody rejoined, no
    // new epoch (a coordinator that knew nothing would have the two join again: epoch 2).
    assert.equal(afterKill.groupEpoch, before.groupEpoch);
    assert.equal(seen.size, 80);

    // Everyone leaves; a newcomer starts from the committed offsets, not from the beginning.
    for (const c of consumers.splice(0)) await c.disconnect();
    await send(80, 90);
    const late = await start();
    await waitFor('the 10 new records', () => (late.length >= 10 ? true : undefined));
    assert.deepEqual([...late].sort(), Array.from({ length: 10 }, (_, i) => `v${80 + i}`).sort());
    await producer.disconnect();
  });
});
