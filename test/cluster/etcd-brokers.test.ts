/**
 * Three `skiff broker --config server.properties` processes on a real three-member etcd (the
 * multi-machine deployment, on loopback): SIGKILL the leader of a partition → a new leader from
 * the ISR within broker.session.timeout.ms + a few seconds; SIGKILL an etcd member → produce and
 * admin still work; the killed broker restarts, applies the metadata snapshot (configs included)
 * before it listens, is back in the metadata, and — its replica fetchers catching up — rejoins the
 * ISR of every partition it hosts.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AlterOp, ConfigResourceType } from '../../src/client/admin.js';
import { EtcdCluster } from '../support/etcd.js';
import {
  adminFor,
  describe1,
  freePorts,
  kcat,
  removeDataDir,
  requireTool,
  SkiffProcess,
  waitUntil,
} from './helpers.js';

/** etcd leases are whole seconds: 2 s is the shortest session that still allows a few heartbeats. */
const SESSION_MS = 2000;
/** "A few seconds" of slack on top of the session: the watch, the election, a loaded CI machine. */
const FAILOVER_SLACK_MS = 5000;
/** Bound on the restarted broker's rejoin: fetchers start, catch up to the HW, AlterPartition commits. */
const REJOIN_MS = 30_000;

describe('three skiff broker processes on a three-member etcd', () => {
  let etcd: EtcdCluster;
  let dir: string;
  let basePort: number;
  const brokers = new Map<number, SkiffProcess>();
  const bootstrapOf = (ids: readonly number[]) => ids.map((id) => `127.0.0.1:${basePort + id - 1}`).join(',');

  const startBroker = async (id: number): Promise<SkiffProcess> => {
    const props = path.join(dir, `server-${id}.properties`);
    fs.writeFileSync(
      props,
      [
        `node.id=${id}`,
        `listeners=PLAINTEXT://127.0.0.1:${basePort + id - 1}`,
        `advertised.listeners=PLAINTEXT://127.0.0.1:${basePort + id - 1}`,
        `log.dirs=${path.join(dir, `broker-${id}`)}`,
        `etcd.endpoints=${etcd.endpoints.join(',')}`,
        `broker.rack=rack-${id}`,
        `broker.session.timeout.ms=${SESSION_MS}`,
        'broker.heartbeat.interval.ms=500',
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
    etcd = await EtcdCluster.start(3);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-etcd-brokers-'));
    basePort = await freePorts(3);
    await Promise.all([1, 2, 3].map((id) => startBroker(id)));
  });

  after(async () => {
    await Promise.all([...brokers.values()].map((b) => b.kill()));
    etcd?.stop();
    removeDataDir(dir);
  });

  it('all three register in one cluster; one of them is the controller', async () => {
    const { admin, close } = adminFor(bootstrapOf([1, 2, 3]));
    try {
      const c = await waitUntil(
        'three brokers and a controller',
        async () => {
          const d = await admin.describeCluster();
          const active = [...brokers.values()].filter((b) => /controller \d+: active/.test(b.output()));
          return d.brokers.size === 3 && active.length > 0 ? d : undefined;
        },
        10_000,
      );
      assert.deepEqual([...c.brokers.keys()].sort(), [1, 2, 3]);
      const active = [...brokers.entries()].filter(([, b]) => /controller \d+: active/.test(b.output()));
      assert.equal(active.length, 1, 'one broker became the active controller');
      // As Kafka's KRaft brokers: clients are told a random live broker as the controller.
      assert.ok(c.brokers.has(c.controllerId), `controller id ${c.controllerId} is a registered broker`);
      const ids = new Set(
        [...brokers.values()].map((b) => /cluster (\S+), metadata in etcd/.exec(b.output())?.[1]),
      );
      assert.equal(ids.size, 1, 'every broker joined the same cluster id');
    } finally {
      close();
    }
  });

  it('SIGKILL of a partition leader: a new leader from the ISR within the session timeout + a few seconds', async () => {
    const { admin, close } = adminFor(bootstrapOf([1, 2, 3]));
    let victim: number;
    let isrBefore: readonly number[];
    try {
      const [r] = await admin.createTopics([
        {
          name: 'failover',
          numPartitions: 1,
          replicationFactor: 3,
          configs: new Map([['retention.ms', '86400000']]),
        },
      ]);
      assert.equal(r!.error, null, r!.error?.message);
      const p = await waitUntil(
        'failover led',
        async () => {
          const part = (await describe1(admin, 'failover')).partitions[0];
          return part !== undefined && part.leader > 0 ? part : undefined;
        },
        10_000,
      );
      assert.equal(p.isr.length, 3);
      victim = p.leader;
      isrBefore = p.isr;
    } finally {
      close();
    }
    const t0 = Date.now();
    await brokers.get(victim)!.kill();
    const survivors = [1, 2, 3].filter((id) => id !== victim);
    const probe = adminFor(bootstrapOf(survivors));
    try {
      const after = await waitUntil(
        'a new leader',
        async () => {
          const part = (await describe1(probe.admin, 'failover')).partitions[0]!;
          return part.leader > 0 && part.leader !== victim ? part : undefined;
        },
        SESSION_MS + FAILOVER_SLACK_MS,
        50,
      );
      const ms = Date.now() - t0;
      console.log(`etcd brokers: leader ${victim} SIGKILLed, broker ${after.leader} leads after ${ms} ms`);
      assert.ok(isrBefore.includes(after.leader), 'the new leader comes from the ISR');
      assert.ok(!after.isr.includes(victim), 'the fenced broker left the ISR');
      assert.ok(ms < SESSION_MS + FAILOVER_SLACK_MS, `failover took ${ms} ms`);
    } finally {
      probe.close();
    }
  });

  it('SIGKILL of one etcd member: produce and admin still work', async () => {
    etcd.kill(0);
    const live = [...brokers.entries()].filter(([, b]) => b.running).map(([id]) => id);
    const { admin, close } = adminFor(bootstrapOf(live));
    try {
      const created = await waitUntil(
        'CreateTopics with an etcd member down',
        async () => {
          const [r] = await admin.createTopics([
            { name: 'after-etcd-kill', numPartitions: 2, replicationFactor: 2 },
          ]);
          if (r!.error !== null && !/already exists/i.test(r!.error.message)) throw r!.error;
          return true;
        },
        15_000,
        500,
      );
      assert.ok(created);
      // Answered only once the controller committed it to etcd (it throws on an error code).
      await admin.incrementalAlterConfigs({ type: ConfigResourceType.topic, name: 'failover' }, [
        { name: 'retention.ms', op: AlterOp.set, value: '3600000' },
      ]);
      await waitUntil(
        'the altered config described by a broker',
        async () => {
          const entries = await admin.describeConfigs({ type: ConfigResourceType.topic, name: 'failover' });
          return entries.find((e) => e.name === 'retention.ms')?.value === '3600000' ? true : undefined;
        },
        10_000,
      );
    } finally {
      close();
    }
    const r = await kcat(
      ['-b', bootstrapOf(live), '-P', '-t', 'failover', '-p', '0', '-X', 'acks=1'],
      'a\nb\nc\n',
    );
    assert.equal(r.status, 0, r.stderr);
  });

  it('the killed broker restarts, applies the metadata snapshot before listening, is back in the metadata and rejoins the ISR', async () => {
    const victim = [...brokers.entries()].find(([, b]) => !b.running)![0];
    const p = await startBroker(victim);
    const out = p.output();
    const snapshot =
      /metadata snapshot at revision \d+ applied before listening: (\d+) topics, (\d+) config entities/.exec(
        out,
      );
    assert.ok(snapshot, out);
    assert.ok(Number(snapshot[1]) >= 2 && Number(snapshot[2]) >= 1, snapshot[0]);
    assert.ok(
      out.indexOf(snapshot[0]) < out.indexOf(`broker ${victim} listening on`),
      'configs applied before listening',
    );
    const { admin, close } = adminFor(bootstrapOf([victim]));
    try {
      await waitUntil(
        'the restarted broker in Metadata',
        async () => ((await admin.describeCluster()).brokers.has(victim) ? true : undefined),
        10_000,
      );
      const t = await describe1(admin, 'failover');
      assert.ok(t.partitions[0]!.replicas.includes(victim));
      const t0 = Date.now();
      const hosted = await waitUntil(
        `broker ${victim} back in the ISR of every partition it hosts`,
        async () => {
          const parts: string[] = [];
          for (const topic of ['failover', 'after-etcd-kill']) {
            for (const part of (await describe1(admin, topic)).partitions) {
              if (!part.replicas.includes(victim)) continue;
              if (!part.isr.includes(victim)) return undefined;
              parts.push(`${topic}-${part.partition}`);
            }
          }
          return parts;
        },
        REJOIN_MS,
        200,
      );
      assert.ok(hosted.includes('failover-0'), hosted.join());
      console.log(
        `etcd brokers: broker ${victim} rejoined the ISR of ${hosted.join(', ')} ${Date.now() - t0} ms after it was back in Metadata`,
      );
    } finally {
      close();
    }
  });
});
