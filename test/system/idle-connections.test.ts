/**
 * 10,000 idle connections against max.connections 5,000 (issue 23), on a real `skiff broker` (a
 * cluster of one): the broker takes 5,000 (one of them a real client's), closes every later one as
 * it accepts it with Kafka's refusal logged once, not 5,000 times; the real client keeps producing
 * and fetching; the broker's resident memory stays bounded; and once the idle sockets close, it
 * says how many it refused and accepts connections again.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Producer } from '../../src/client/producer.js';
import { adminFor, consumeAll, requireTool, type SkiffProcess, waitUntil } from '../cluster/helpers.js';
import { createTopic, type OneBroker, startOneBroker } from './one-broker.js';
import { hardDescriptorLimit, residentBytes } from './process-memory.js';

const MAX_CONNECTIONS = 5_000;
const ATTEMPTS = 10_000;
/** Connections opened at once while the 10,000 are made. */
const WAVE = 500;
/** The broker's resident memory with 5,000 idle connections stays under this. */
const RSS_BOUND = 512 * 1024 * 1024;

describe('10,000 idle connections against max.connections', () => {
  let one: OneBroker;
  let port: number;
  let broker: SkiffProcess;
  const sockets: net.Socket[] = [];

  before(async () => {
    requireTool('prlimit', '--version');
    requireTool('kcat', '-V');
    // Both sides need descriptors beyond a usual ulimit -n: this process for its 10,000 sockets,
    // the broker (started from it, inheriting the limit) for its 5,000: the soft limit goes up to
    // the hard one.
    const hard = hardDescriptorLimit();
    assert.ok(hard >= ATTEMPTS + 2_000, `ulimit -Hn ${hard}: 10,000 sockets need more`);
    const raised = spawnSync(
      'prlimit',
      ['--pid', String(process.pid), `--nofile=${Math.min(hard, 65_536)}:${Math.min(hard, 65_536)}`],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(raised.status, 0, `prlimit: ${raised.stderr}`);
    one = await startOneBroker('idle-connections', [`max.connections=${MAX_CONNECTIONS}`]);
    ({ port, process: broker } = one);
  });

  after(async () => {
    for (const s of sockets) s.destroy();
    await one?.stop();
  });

  it('refuses beyond the limit with one line, serves a real client, stays bounded, and frees slots', async () => {
    const bootstrap = `127.0.0.1:${port}`;
    const { admin, client, close } = adminFor(bootstrap);
    try {
      await createTopic(admin, 'real');
      const producer = new Producer(client, { retries: 3, lingerMs: 2 });
      const acked: string[] = [];
      const produce = async (from: number, to: number): Promise<void> => {
        for (let i = from; i < to; i++)
          await producer.send(
            { topic: 'real', partition: 0, key: null, value: Buffer.from(`r${i}`) },
            (e) => {
              if (e === null) acked.push(`r${i}`);
            },
          );
        await producer.flush();
      };
      await produce(0, 100);

      let closed = 0;
      for (let opened = 0; opened < ATTEMPTS; opened += WAVE) {
        await Promise.all(
          Array.from(
            { length: WAVE },
            () =>
              new Promise<void>((resolve) => {
                const s = net.connect(port, '127.0.0.1');
                sockets.push(s);
                s.on('error', () => {});
                s.once('close', () => {
                  closed++;
                  resolve();
                });
                s.once('connect', () => resolve());
              }),
          ),
        );
      }
      // The real client holds one slot: every socket beyond the other 4,999 is closed by the broker.
      await waitUntil(
        'the refused sockets closed',
        async () => (closed >= ATTEMPTS - (MAX_CONNECTIONS - 1) ? true : undefined),
        30_000,
      );
      const open = sockets.filter((s) => !s.destroyed && s.readyState === 'open').length;
      assert.equal(open, MAX_CONNECTIONS - 1);
      const refused = closed;
      assert.equal(refused, ATTEMPTS - (MAX_CONNECTIONS - 1));
      const refusals =
        broker.output().match(/rejecting connection from [^\n]*max\.connections 5000 reached[^\n]*/g) ?? [];
      assert.equal(
        refusals.length,
        1,
        `one line for ${refused} refusals:\n${refusals.slice(0, 3).join('\n')}`,
      );

      // The real client is served throughout; the broker's memory is bounded.
      await produce(100, 200);
      assert.equal(acked.length, 200);
      const rss = residentBytes(broker.child.pid!);
      assert.ok(rss < RSS_BOUND, `broker RSS ${rss} bytes with ${open} idle connections`);

      // The idle sockets go: the broker says how many it refused and takes connections again.
      for (const s of sockets.splice(0)) s.destroy();
      await broker.waitFor(/accepting connections again after 5001 refused at max\.connections 5000/);
      assert.deepEqual(await consumeAll(bootstrap, 'real'), acked);
      console.log(
        `idle-connections: ${open} idle held, ${refused} refused with 1 line, broker RSS ${(rss / 2 ** 20).toFixed(0)} MiB`,
      );
    } finally {
      close();
    }
  });
});
