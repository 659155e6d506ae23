/**
 * KIP-848's consumer group protocol with @platformatic/kafka 2.x (`groupProtocol: 'consumer'`, in
 * this process) against `skiff broker` as a child process. Three consumers share a topic's
 * partitions; one leaves and the other two take its partitions without giving any of theirs up
 * (the client revokes only on a heartbeat answer that drops a partition it owns, and says so with
 * its `consumer:group:rebalance` event); every record is read once; a consumer started again in
 * the group goes on from the offsets the group committed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  Admin,
  Consumer,
  type Message,
  type MessagesStream,
  Producer,
  stringDeserializers,
  stringSerializers,
} from '@platformatic/kafka';
import type { BrokerProcess } from '../support/broker-process.js';
import { startConsumerProtocolBroker, waitFor } from './clients.js';

const TOPIC = 'kip848-pk-topic';
const GROUP = 'kip848-pk-group';
const PARTITIONS = 6;

interface Member {
  consumer: Consumer<string, string, string, string>;
  stream: MessagesStream<string, string, string, string>;
  values: string[];
  /** Commits not yet answered: awaited before the member leaves, so that no record is read again. */
  commits: Set<Promise<void>>;
  /** How many times the client revoked partitions (its `consumer:group:rebalance` event). */
  revocations: number;
}

/** The partitions of TOPIC the member's client holds now. */
function owned(m: Member): number[] {
  return (m.consumer.assignments ?? [])
    .filter((a) => a.topic === TOPIC)
    .flatMap((a) => a.partitions)
    .sort((a, b) => a - b);
}

async function startMember(bootstrapBrokers: string[], clientId: string): Promise<Member> {
  const consumer = new Consumer({
    clientId,
    groupId: GROUP,
    groupProtocol: 'consumer',
    bootstrapBrokers,
    deserializers: stringDeserializers,
    maxWaitTime: 200,
  });
  const stream = await consumer.consume({
    topics: [TOPIC],
    mode: 'committed',
    fallbackMode: 'earliest',
    autocommit: false,
  });
  const m: Member = { consumer, stream, values: [], commits: new Set(), revocations: 0 };
  consumer.on('consumer:group:rebalance', () => {
    m.revocations++;
  });
  stream.on('data', (message: Message<string, string, string, string>) => {
    m.values.push(message.value);
    const commit = Promise.resolve(message.commit()).finally(() => m.commits.delete(commit));
    m.commits.add(commit);
  });
  return m;
}

async function stopMember(m: Member): Promise<void> {
  await Promise.all(m.commits);
  await m.stream.close();
  await m.consumer.close(true);
}

describe('the consumer group protocol (KIP-848) with @platformatic/kafka', () => {
  let broker: BrokerProcess;
  let bootstrapBrokers: string[];
  const members: Member[] = [];
  before(async () => {
    broker = await startConsumerProtocolBroker();
    bootstrapBrokers = [broker.bootstrap];
  });
  after(async () => {
    for (const m of members) await m.consumer.close(true).catch(() => {});
    await broker?.stop();
  });

  it('three members share the partitions, a leaving one hands over only its own, every record read once, a restarted member resumes from the commits', async () => {
    const admin = new Admin({ clientId: 'kip848-pk-admin', bootstrapBrokers });
    const producer = new Producer({
      clientId: 'kip848-pk-producer',
      bootstrapBrokers,
      serializers: stringSerializers,
    });
    try {
      await admin.createTopics({ topics: [TOPIC], partitions: PARTITIONS, replicas: 1 });
      const send = (from: number, to: number) =>
        producer.send({
          messages: Array.from({ length: to - from }, (_, i) => ({
            topic: TOPIC,
            key: `k${from + i}`,
            value: `v${from + i}`,
          })),
        });
      const expected = (from: number, to: number) =>
        Array.from({ length: to - from }, (_, i) => `v${from + i}`);

      for (let i = 0; i < 3; i++) members.push(await startMember(bootstrapBrokers, `kip848-pk-${i}`));
      // The uniform assignor's end state: two partitions each, none held by two members.
      await waitFor('two partitions for each member', () =>
        members.every((m) => owned(m).length === PARTITIONS / 3) ? true : undefined,
      );
      assert.equal(new Set(members.flatMap(owned)).size, PARTITIONS);
      // A consumer-protocol group, not a classic one (ListGroups v5's type filter).
      const listed = await admin.listGroups({ types: ['consumer'] });
      assert.deepEqual(
        [...listed.values()].map((g) => [g.id, g.groupType]),
        [[GROUP, 'consumer']],
      );
      assert.deepEqual([...(await admin.listGroups({ types: ['classic'] })).keys()], []);

      await send(0, 60);
      const values = (ms: Member[]) => ms.flatMap((m) => m.values);
      await waitFor('60 records read', () => (values(members).length >= 60 ? true : undefined));

      const [leaving, ...staying] = members as [Member, Member, Member];
      const ownedBefore = staying.map(owned);
      // Revocations while the three were forming the group are not the leaver's doing.
      for (const m of staying) m.revocations = 0;
      await stopMember(leaving);
      members.splice(members.indexOf(leaving), 1);
      await waitFor('the leaver’s partitions taken over', () =>
        staying.flatMap(owned).length === PARTITIONS ? true : undefined,
      );
      assert.equal(new Set(staying.flatMap(owned)).size, PARTITIONS);
      staying.forEach((m, i) => {
        for (const p of ownedBefore[i]!) assert.ok(owned(m).includes(p), `member ${i} kept partition ${p}`);
        assert.equal(m.revocations, 0, `member ${i} revoked nothing`);
      });

      await send(60, 90);
      const all = [leaving, ...staying];
      await waitFor('90 records read', () => (values(all).length >= 90 ? true : undefined));
      assert.deepEqual(values(all).sort(), expected(0, 90).sort(), 'every record read, none twice');

      // Every member stops; a new one in the group reads only what was produced since.
      for (const m of staying) await stopMember(m);
      members.length = 0;
      await send(90, 120);
      const restarted = await startMember(bootstrapBrokers, 'kip848-pk-restarted');
      members.push(restarted);
      await waitFor('30 records read after the restart', () =>
        restarted.values.length >= 30 ? true : undefined,
      );
      await waitFor('all partitions for the one member', () =>
        owned(restarted).length === PARTITIONS ? true : undefined,
      );
      assert.deepEqual([...restarted.values].sort(), expected(90, 120).sort());
      await stopMember(restarted);
      members.length = 0;
    } finally {
      await producer.close();
      await admin.close();
    }
  });
});
