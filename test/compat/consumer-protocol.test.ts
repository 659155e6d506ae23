/**
 * KIP-848's consumer group protocol with a real client: @confluentinc/kafka-javascript (its
 * bundled librdkafka, `group.protocol: 'consumer'`) against `skiff broker` as a child process.
 * Three consumers share a topic's partitions; one leaves and the other two take its partitions
 * without giving up their own (seen through the rebalance callbacks); every record is read once;
 * the committed offsets survive a broker restart, and so does the group itself.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import confluent from '@confluentinc/kafka-javascript';
import { type BrokerProcess, runSkiff } from '../support/broker-process.js';
import { startConsumerProtocolBroker, waitFor } from './clients.js';

const { Kafka, logLevel, ConsumerGroupTypes } = confluent.KafkaJS;
const ASSIGN = -175; // librdkafka's ERR__ASSIGN_PARTITIONS
const REVOKE = -174; // librdkafka's ERR__REVOKE_PARTITIONS
const TOPIC = 'kip848-topic';
const GROUP = 'kip848-group';
const PARTITIONS = 6;

type Consumer = ReturnType<InstanceType<typeof Kafka>['consumer']>;

interface Member {
  consumer: Consumer;
  owned: Set<number>;
  revoked: number[];
  values: string[];
}

function kafkaFor(bootstrap: string) {
  return new Kafka({ kafkaJS: { brokers: [bootstrap], logLevel: logLevel.NOTHING } });
}

async function startMember(bootstrap: string): Promise<Member> {
  const m: Member = { consumer: undefined as unknown as Consumer, owned: new Set(), revoked: [], values: [] };
  m.consumer = kafkaFor(bootstrap).consumer({
    kafkaJS: { groupId: GROUP, fromBeginning: true, autoCommit: false },
    'group.protocol': 'consumer',
    rebalance_cb: (err: { code: number }, assignment: { partition: number }[]) => {
      for (const tp of assignment) {
        if (err.code === ASSIGN) m.owned.add(tp.partition);
        if (err.code === REVOKE) {
          m.owned.delete(tp.partition);
          m.revoked.push(tp.partition);
        }
      }
    },
  } as never);
  await m.consumer.connect();
  await m.consumer.subscribe({ topic: TOPIC });
  void m.consumer.run({
    eachMessage: async ({ partition, message }) => {
      m.values.push(message.value!.toString());
      await m.consumer.commitOffsets([
        { topic: TOPIC, partition, offset: String(Number(message.offset) + 1) },
      ]);
    },
  });
  return m;
}

const ownedCount = (ms: Member[]) => ms.reduce((n, m) => n + m.owned.size, 0);

describe('the consumer group protocol (KIP-848) with @confluentinc/kafka-javascript', () => {
  let broker: BrokerProcess;
  const members: Member[] = [];
  /** Clients to close however the test ends: a librdkafka handle left open keeps the process alive. */
  const clients: { disconnect(): Promise<void> }[] = [];
  before(async () => {
    broker = await startConsumerProtocolBroker();
  });
  after(async () => {
    // A client in a fatal state may never finish disconnecting: not past 10 s.
    const bounded = (c: { disconnect(): Promise<void> }) =>
      Promise.race([c.disconnect().catch(() => {}), new Promise((r) => setTimeout(r, 10_000).unref())]);
    for (const c of [...members.map((m) => m.consumer), ...clients]) await bounded(c);
    await broker?.stop();
  });

  it('three members share the partitions, a leaving one hands over only its own, every record read once', async () => {
    const admin = kafkaFor(broker.bootstrap).admin();
    clients.push(admin);
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }] });
    const producer = kafkaFor(broker.bootstrap).producer();
    clients.push(producer);
    await producer.connect();
    const send = (from: number, to: number) =>
      producer.send({
        topic: TOPIC,
        messages: Array.from({ length: to - from }, (_, i) => ({
          key: `k${from + i}`,
          value: `v${from + i}`,
        })),
      });
    await send(0, 60);
    for (let i = 0; i < 3; i++) members.push(await startMember(broker.bootstrap));
    // The uniform assignor's end state: two partitions each.
    await waitFor('two partitions for each member', () =>
      members.every((m) => m.owned.size === PARTITIONS / 3) ? true : undefined,
    );
    // No partition is held by two members at once.
    const all = members.flatMap((m) => [...m.owned]);
    assert.equal(new Set(all).size, PARTITIONS);

    const listed = await admin.listGroups({ matchConsumerGroupTypes: [ConsumerGroupTypes.CONSUMER] });
    assert.deepEqual(
      listed.groups.map((g) => [g.groupId, g.type]),
      [[GROUP, ConsumerGroupTypes.CONSUMER]],
    );
    const classic = await admin.listGroups({ matchConsumerGroupTypes: [ConsumerGroupTypes.CLASSIC] });
    assert.deepEqual(classic.groups, []);

    const [leaving, ...staying] = members as [Member, Member, Member];
    const before = staying.map((m) => new Set(m.owned));
    // Revocations while the three were forming the group are not the leaver's doing.
    for (const m of staying) m.revoked.length = 0;
    await leaving.consumer.disconnect();
    members.splice(members.indexOf(leaving), 1);
    await waitFor('the leaver’s partitions taken over', () =>
      ownedCount(staying) === PARTITIONS ? true : undefined,
    );
    staying.forEach((m, i) => {
      for (const p of before[i]!) assert.ok(m.owned.has(p), `member ${i} kept partition ${p}`);
      assert.deepEqual(m.revoked, [], `member ${i} revoked nothing`);
    });

    await send(60, 90);
    const values = () => members.concat(leaving).flatMap((m) => m.values);
    await waitFor('90 records read', () => (values().length >= 90 ? true : undefined));
    const read = values();
    assert.equal(new Set(read).size, 90, 'every record read');
    assert.equal(read.length, 90, 'no record read twice');

    // librdkafka describes through ConsumerGroupDescribe: each member's assignment as it consumes.
    const described = (await admin.describeGroups([GROUP])).groups[0]!;
    assert.equal(described.type, ConsumerGroupTypes.CONSUMER);
    assert.equal(described.partitionAssignor, 'uniform');
    const assigned = described.members
      .map((m) => (m.assignment as unknown as { topicPartitions: { partition: number }[] }).topicPartitions)
      .map((tps) => tps.map((tp) => tp.partition).sort((a, b) => a - b));
    assert.deepEqual(assigned.sort(), staying.map((m) => [...m.owned].sort((a, b) => a - b)).sort());

    // skiff consumer-groups shows the group as Kafka 4's tool does: members, current and target.
    const tool = (...args: string[]) =>
      runSkiff([
        'consumer-groups',
        '--bootstrap-server',
        broker.bootstrap,
        '--describe',
        '--group',
        GROUP,
        ...args,
      ]);
    const state = await tool('--state', '--verbose');
    assert.equal(state.status, 0, state.stderr);
    const [header, row] = state.stdout.trim().split('\n');
    assert.match(
      header!,
      /^GROUP +COORDINATOR \(ID\) +ASSIGNMENT-STRATEGY +STATE +GROUP-EPOCH +TARGET-ASSIGNMENT-EPOCH +#MEMBERS$/,
    );
    assert.match(
      row!,
      new RegExp(`^${GROUP} +127\\.0\\.0\\.1:\\d+ \\(1\\) +uniform +Stable +\\d+ +\\d+ +2$`),
    );
    const membersOut = await tool('--members', '--verbose');
    assert.equal(membersOut.status, 0, membersOut.stderr);
    const lines = membersOut.stdout.trim().split('\n');
    assert.match(lines[0]!, /CURRENT-EPOCH +CURRENT-ASSIGNMENT +TARGET-EPOCH +TARGET-ASSIGNMENT$/);
    const shown = lines
      .slice(1)
      .map((l) => l.trim().split(/ +/))
      .map((f) => [f.at(-3), f.at(-1)]);
    const expected = staying.map((m) => `${TOPIC}:${[...m.owned].sort((a, b) => a - b).join(',')}`).sort();
    assert.deepEqual(shown.map(([current]) => current).sort(), expected);
    assert.deepEqual(shown.map(([, target]) => target).sort(), expected);

    await producer.disconnect();
    await admin.disconnect();
  });
});
