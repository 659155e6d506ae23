import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { connect, type NatsConnection, StorageType } from 'nats';
import { stopChild, untilPrinted } from './baseline.js';

/**
 * NATS JetStream as a yardstick (bench/yardsticks.ts): Debian's `nats-server` (2.9.x) with file
 * storage, one server (R1) or three clustered on loopback (R3), and the `nats` client publishing
 * into one stream. A publish is answered once the stream stored the message: on R3, once a quorum
 * of the stream's replicas (2 of 3) has it — JetStream's "acknowledged after replication".
 */

export const NATS_INSTALL = 'Debian: apt-get install nats-server';

/** Whether `nats-server` can be run. */
export function natsServerInstalled(): boolean {
  return !spawnSync('nats-server', ['--version']).error;
}

export interface JetStreamServers {
  readonly pids: readonly number[];
  readonly servers: readonly string[];
  stop(): Promise<void>;
}

/**
 * `replicas` nats-server processes (1 or 3) in `dir`, JetStream on, listening on `port`+i
 * (clients) and `port`+10+i (cluster routes), each ready.
 */
export async function startJetStream(dir: string, replicas: number, port: number): Promise<JetStreamServers> {
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(children.map(stopChild));
  };
  try {
    for (let i = 0; i < replicas; i++) {
      const routes = Array.from({ length: replicas }, (_, k) => `nats://127.0.0.1:${port + 10 + k}`);
      const conf = [
        `server_name: n${i + 1}`,
        `listen: 127.0.0.1:${port + i}`,
        `jetstream { store_dir: ${JSON.stringify(path.join(dir, `n${i + 1}`))} }`,
        ...(replicas > 1
          ? [`cluster { name: bench, listen: 127.0.0.1:${port + 10 + i}, routes: [${routes.join(', ')}] }`]
          : []),
        '',
      ].join('\n');
      const file = path.join(dir, `n${i + 1}.conf`);
      fs.writeFileSync(file, conf);
      const child = spawn('nats-server', ['-c', file], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      await untilPrinted(child, 'Server is ready', 'nats-server');
      // Drain what it prints later so a full pipe never blocks it.
      child.stdout?.resume();
      child.stderr?.resume();
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    pids: children.map((c) => c.pid as number),
    servers: children.map((_, i) => `127.0.0.1:${port + i}`),
    stop,
  };
}

/** A client connected to `servers` with a file-stored stream `name` (subject `name`) of `replicas`. */
export async function jetStreamClient(
  servers: readonly string[],
  name: string,
  replicas: number,
): Promise<{ nc: NatsConnection; publish: (data: Uint8Array) => Promise<unknown> }> {
  const nc = await connect({ servers: [...servers] });
  try {
    const jsm = await nc.jetstreamManager();
    // A fresh cluster answers "temporarily unavailable" until it has elected its meta leader.
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        await jsm.streams.add({ name, subjects: [name], storage: StorageType.File, num_replicas: replicas });
        break;
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    const js = nc.jetstream();
    return { nc, publish: (data) => js.publish(name, data) };
  } catch (e) {
    await nc.close();
    throw e;
  }
}
