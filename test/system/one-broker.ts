/**
 * What the resource tests of test/system share: one real `skiff broker` process (a cluster of
 * one, no etcd) on a free port in a temporary dir, and a one-partition topic for its client.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Admin } from '../../src/client/admin.js';
import { freePorts, removeDataDir, SKIFF, SkiffProcess } from '../cluster/helpers.js';

export interface OneBroker {
  readonly dir: string;
  readonly port: number;
  readonly bootstrap: string;
  readonly process: SkiffProcess;
  /** Stops the broker and removes its dir. */
  stop(): Promise<void>;
}

/**
 * Starts `skiff broker` with `props` over its node id, listener and log dir; with `nofile`, under
 * `prlimit --nofile=N:N` (its descriptor limit). Resolves once it is ready.
 */
export async function startOneBroker(
  name: string,
  props: readonly string[] = [],
  options: { readonly nofile?: number } = {},
): Promise<OneBroker> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `skiff-${name}-`));
  const port = await freePorts(1);
  const file = path.join(dir, 'server.properties');
  fs.writeFileSync(
    file,
    [
      'node.id=1',
      `listeners=PLAINTEXT://127.0.0.1:${port}`,
      `log.dirs=${path.join(dir, 'data')}`,
      ...props,
      '',
    ].join('\n'),
  );
  const args = ['broker', '--config', file];
  const child =
    options.nofile === undefined
      ? undefined
      : spawn('prlimit', [`--nofile=${options.nofile}:${options.nofile}`, process.execPath, SKIFF, ...args], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
  const broker = new SkiffProcess(args, child);
  try {
    await broker.waitFor(/skiff broker 1 ready: listening on/);
  } catch (e) {
    await broker.kill();
    removeDataDir(dir);
    throw e;
  }
  return {
    dir,
    port,
    bootstrap: `127.0.0.1:${port}`,
    process: broker,
    async stop() {
      await broker.stop(10_000);
      removeDataDir(dir);
    },
  };
}

/** Creates a topic of one partition on the one broker. */
export async function createTopic(
  admin: Admin,
  name: string,
  configs: ReadonlyMap<string, string> = new Map(),
): Promise<void> {
  const [created] = await admin.createTopics([
    { name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: new Map(configs) },
  ]);
  assert.equal(created?.error, null, `creating ${name}`);
}
