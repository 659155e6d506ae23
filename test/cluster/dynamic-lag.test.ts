/**
 * `replica.lag.time.max.ms` is dynamic in Skiff (Kafka refuses to change it at run time): on
 * `skiff up --brokers 3` with the default lag time (30 s) and a 30 s broker session (so fencing
 * cannot explain an ISR change), `skiff configs --entity-default --alter` sets it to 2000 ms for
 * every broker; a SIGSTOPped follower then leaves the ISR within 1.5 × 2000 ms + slack, and
 * rejoins after SIGCONT.
 *
 * The isr-expiration check runs at least every second whatever the lag time is
 * (ISR_EXPIRATION_MAX_INTERVAL_MS in src/replication/leader-state.ts) and re-reads the setting at
 * each run, so the new value applies within about a second of reaching the leader.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ClientConnection } from '../../src/network/client-connection.js';
import type { MessageCodec } from '../../src/protocol/codec-runtime.js';
import type { ElectLeadersResponse } from '../../src/protocol/generated/ElectLeadersResponse.js';
import { API_MESSAGES } from '../../src/protocol/generated/index.js';
import { ISR_EXPIRATION_MAX_INTERVAL_MS } from '../../src/replication/leader-state.js';
import {
  activeController,
  adminFor,
  createLedBy1,
  describe1,
  freePorts,
  kcat,
  launchSkiffUp,
  removeDataDir,
  requireTool,
  runSkiff,
  type SkiffProcess,
  sleep,
  waitUntil,
} from './helpers.js';

const SESSION_MS = 30_000;
const DEFAULT_LAG_MS = 30_000;
const NEW_LAG_MS = 2000;
/** 1.5 × the new lag time (a lag check every lag / 2) plus slack for a loaded machine. */
const SHRINK_BOUND_MS = 10_000;
const TOPIC = 'dynamic-lag';

describe('replica.lag.time.max.ms is dynamic on skiff up --brokers 3', () => {
  let dir: string;
  let port: number;
  let bootstrap: string;
  let up: SkiffProcess | null = null;
  const isr = async (): Promise<number[]> => {
    const { admin, close } = adminFor(bootstrap);
    try {
      return [...(await describe1(admin, TOPIC)).partitions[0]!.isr].sort();
    } finally {
      close();
    }
  };

  before(async () => {
    requireTool('kcat', '-V');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-dynlag-'));
    fs.writeFileSync(
      path.join(dir, 'server.properties'),
      [
        'listeners=PLAINTEXT://127.0.0.1:9092',
        `broker.session.timeout.ms=${SESSION_MS}`,
        'broker.heartbeat.interval.ms=500',
        'num.partitions=1',
        // The ElectLeaders test needs leadership to stay where it is until it asks.
        'auto.leader.rebalance.enable=false',
        '',
      ].join('\n'),
    );
    port = await freePorts(3);
    // All three: the ElectLeaders test stops broker 1.
    bootstrap = [0, 1, 2].map((i) => `127.0.0.1:${port + i}`).join(',');
    up = await launchSkiffUp(dir, port);
  });

  after(async () => {
    await up?.stop(10_000);
    removeDataDir(dir);
  });

  it('configs --alter of the cluster default takes effect: a stopped follower leaves the ISR in seconds, then rejoins', async () => {
    const { admin, close } = adminFor(bootstrap);
    try {
      await createLedBy1(admin, TOPIC, new Map(), 10_000);
    } finally {
      close();
    }

    const alter = await runSkiff([
      'configs',
      '--bootstrap-server',
      bootstrap,
      '--entity-type',
      'brokers',
      '--entity-default',
      '--alter',
      '--add-config',
      `replica.lag.time.max.ms=${NEW_LAG_MS}`,
    ]);
    assert.equal(alter.status, 0, alter.stderr);
    assert.match(alter.stdout, /^Completed updating default config for brokers in the cluster\.$/m);

    // A bad value is refused: one clear line on stderr, a non-zero exit, nothing changed. (A name
    // Kafka does not define is a custom config, accepted as Kafka accepts it.)
    const badValue = await runSkiff([
      'configs',
      '--bootstrap-server',
      bootstrap,
      '--entity-type',
      'brokers',
      '--entity-default',
      '--alter',
      '--add-config',
      'replica.lag.time.max.ms=soon',
    ]);
    assert.notEqual(badValue.status, 0);
    const errLines = badValue.stderr.trim().split('\n');
    assert.equal(errLines.length, 1, badValue.stderr);
    assert.match(errLines[0]!, /Invalid value soon for configuration replica\.lag\.time\.max\.ms/);
    assert.doesNotMatch(badValue.stderr, /\n\s+at /);

    // Time for the new value to reach the leader through the metadata watch; the next
    // isr-expiration check is at most ISR_EXPIRATION_MAX_INTERVAL_MS away.
    await sleep(ISR_EXPIRATION_MAX_INTERVAL_MS + 500);

    // Stop a follower that is not the controller: a stopped controller could not commit the shrink.
    const controllerId = await activeController(dir);
    const victim = controllerId === 3 ? 2 : 3;
    const shrunk = [1, 2, 3].filter((id) => id !== victim).join();
    const pid = Number(
      new RegExp(`broker ${victim} ready on \\S+ \\(log dir [^,]+, pid (\\d+)\\)`).exec(up!.output())?.[1],
    );
    assert.ok(pid > 0, up!.output());
    process.kill(pid, 'SIGSTOP');
    const stoppedAt = Date.now();
    let shrinkMs = -1;
    try {
      const r = await kcat(
        ['-b', bootstrap, '-P', '-t', TOPIC, '-p', '0', '-X', 'acks=1'],
        `${Array.from({ length: 10 }, (_, i) => `v${i}`).join('\n')}\n`,
      );
      assert.equal(r.status, 0, r.stderr);
      await waitUntil(
        `ISR ${shrunk} (broker ${victim} stopped)`,
        async () => ((await isr()).join() === shrunk ? true : undefined),
        SHRINK_BOUND_MS,
        100,
      );
      shrinkMs = Date.now() - stoppedAt;
      assert.ok(shrinkMs < DEFAULT_LAG_MS && shrinkMs < SESSION_MS);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const contAt = Date.now();
    await waitUntil(
      'ISR 1,2,3 again',
      async () => ((await isr()).join() === '1,2,3' ? true : undefined),
      15_000,
    );
    console.log(
      `replica.lag.time.max.ms=${NEW_LAG_MS} (cluster default, altered at run time): ISR shrank ${shrinkMs} ms after SIGSTOP of broker ${victim}; it rejoined ${Date.now() - contAt} ms after SIGCONT`,
    );
  });

  it('ElectLeaders (preferred) gives leadership back to the first replica once it is in the ISR again', async () => {
    const partition = async () => {
      const { admin, close } = adminFor(bootstrap);
      try {
        return (await describe1(admin, TOPIC)).partitions[0]!;
      } finally {
        close();
      }
    };
    const stop = await runSkiff(['cluster', 'stop', '1', '--data-dir', dir]);
    assert.equal(stop.status, 0, stop.stderr);
    await waitUntil(
      'leadership moved off broker 1',
      async () => {
        const p = await partition();
        return p.leader !== 1 && p.leader !== -1 ? true : undefined;
      },
      15_000,
    );
    const start = await runSkiff(['cluster', 'start', '1', '--data-dir', dir]);
    assert.equal(start.status, 0, start.stderr);
    await waitUntil(
      'ISR 1,2,3 after the restart',
      async () => ((await isr()).join() === '1,2,3' ? true : undefined),
      30_000,
    );
    assert.notEqual((await partition()).leader, 1, 'no automatic rebalance was asked for');

    // Any broker forwards the election to the controller; ask broker 2.
    const conn = await ClientConnection.connect('127.0.0.1', port + 1, { clientId: 'skiff-elect-test' });
    try {
      const api = API_MESSAGES.get(43)!;
      const r = await conn.send(
        43,
        2,
        api.request,
        { electionType: 0, topicPartitions: [{ topic: TOPIC, partitions: [0] }], timeoutMs: 10_000 },
        api.response as MessageCodec<ElectLeadersResponse>,
      );
      assert.equal(r.errorCode, 0);
      assert.deepEqual(
        r.replicaElectionResults.map((t) => [
          t.topic,
          t.partitionResult.map((p) => [p.partitionId, p.errorCode]),
        ]),
        [[TOPIC, [[0, 0]]]],
      );
    } finally {
      conn.close();
    }
    await waitUntil(
      'led by broker 1 again',
      async () => ((await partition()).leader === 1 ? true : undefined),
      10_000,
    );
  });
});
