/**
 * A broker out of file descriptors (issue 23): `skiff broker` (a cluster of one) started under
 * `prlimit --nofile`, then raw sockets opened until none is left. New connections are closed as
 * they are accepted and the broker says so in one line however many are tried; it does not crash;
 * the connection it already has keeps producing and fetching; a new topic and segment rolls under
 * the shortage fail as requests (EMFILE is a process limit, not a failed disk: no log dir goes
 * offline); and once some sockets close, it says so, accepts again, and every acknowledged record
 * is there.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Producer } from '../../src/client/producer.js';
import { adminFor, consumeAll, requireTool, type SkiffProcess, waitUntil } from '../cluster/helpers.js';
import { createTopic, type OneBroker, startOneBroker } from './one-broker.js';

/** The broker's descriptor limit: room for its logs and a few dozen sockets. */
const NOFILE = 256;
const VALUE_PAD = 'x'.repeat(1000);
const TOPIC = 'before';

/** Opens a socket; resolves with it once connected, or null if the broker closed it within `settleMs`. */
function probe(port: number, settleMs: number): Promise<net.Socket | null> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let timer: NodeJS.Timeout | undefined;
    s.once('connect', () => {
      timer = setTimeout(() => resolve(s), settleMs);
    });
    s.on('error', () => {});
    s.once('close', () => {
      clearTimeout(timer);
      resolve(null);
    });
  });
}

describe('a broker out of file descriptors', () => {
  let one: OneBroker;
  let port: number;
  let broker: SkiffProcess;
  const held: net.Socket[] = [];

  before(async () => {
    requireTool('prlimit', '--version');
    requireTool('kcat', '-V');
    one = await startOneBroker('descriptors', [], { nofile: NOFILE });
    ({ port, process: broker } = one);
  });

  after(async () => {
    for (const s of held) s.destroy();
    await one?.stop();
  });

  it('refuses new connections with one line, keeps serving the ones it has, and recovers', {
    timeout: 40_000,
  }, async () => {
    const bootstrap = `127.0.0.1:${port}`;
    const { admin, client, close } = adminFor(bootstrap);
    const acked: string[] = [];
    let failed = 0;
    let storageErrors = 0;
    try {
      await createTopic(admin, TOPIC, new Map([['segment.bytes', String(1024 * 1024)]]));
      const producer = new Producer(client, { retries: 1, lingerMs: 2 });
      const send = (i: number): Promise<void> => {
        const value = `${i}-${VALUE_PAD}`;
        return producer.send({ topic: TOPIC, partition: 0, key: null, value: Buffer.from(value) }, (e) => {
          if (e === null) acked.push(value);
          else {
            failed++;
            if (/KAFKA_STORAGE_ERROR|too many open files/i.test(`${e.name} ${e.message}`)) storageErrors++;
          }
        });
      };
      let next = 0;
      for (; next < 500; next++) await send(next);
      await producer.flush();
      assert.equal(acked.length, 500);

      // Sockets until the broker closes them as it accepts them: its descriptors are gone.
      for (let open = 0; open < NOFILE * 2; open++) {
        const s = await probe(port, 20);
        if (s === null) break;
        held.push(s);
      }
      assert.ok(held.length < NOFILE, `${held.length} sockets held`);
      // Many more attempts, each closed by the broker.
      let refused = 0;
      for (let i = 0; i < 200; i++) {
        const s = await probe(port, 20);
        // A descriptor the broker freed for a moment (a file closed) lets one in: it is held too.
        if (s === null) refused++;
        else held.push(s);
      }
      assert.ok(refused >= 190, `${refused} of 200 refused`);
      await broker.waitFor(/Too many open files/);

      // The connection it has still serves produce, across segment rolls that find no descriptor.
      for (const end = next + 600; next < end; next++) await send(next);
      await producer.flush();
      await createTopic(admin, 'during');
      assert.ok(broker.running, broker.output().slice(-3000));
      const lines = broker.output().match(/Too many open files[^\n]*/g) ?? [];
      assert.equal(lines.length, 1, lines.join('\n'));
      assert.match(lines[0]!, new RegExp(`all ${NOFILE} file descriptors of the process`));
      // Appends that found no descriptor were refused as KAFKA_STORAGE_ERROR, without a line each,
      // and the log dir stays online.
      assert.ok(storageErrors > 0, 'a segment roll met the shortage');
      assert.doesNotMatch(broker.output(), /unexpected error|Stopping serving replicas in dir/);

      // Descriptors back: it says so, accepts again, and serves.
      for (const s of held.splice(0, 50)) s.destroy();
      await broker.waitFor(/file descriptors available again/);
      const fresh = await probe(port, 200);
      assert.ok(fresh, 'a new connection is accepted');
      fresh.destroy();
      for (const end = next + 1000; next < end; next++) await send(next);
      await producer.flush();
      // The topic created during the shortage got its log once descriptors were back.
      await waitUntil(
        'a record produced to the topic created during the shortage',
        async () =>
          (await producer.produce({ topic: 'during', partition: 0, key: null, value: Buffer.from('d') }))
            .offset === 0n
            ? true
            : undefined,
        15_000,
      );
      const read = await consumeAll(bootstrap, TOPIC);
      const at = new Set(read);
      assert.deepEqual(acked.filter((v) => !at.has(v)).slice(0, 3), [], 'every acknowledged record is there');
      console.log(
        `descriptors: ${held.length + 50} sockets held, ${refused} refused; acked ${acked.length}, failed ${failed}`,
      );
    } finally {
      close();
    }
  });
});
