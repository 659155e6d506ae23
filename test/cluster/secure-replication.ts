/**
 * The set-up and the checks shared by the tests of replication over a secure inter-broker listener
 * (ssl-replication, sasl-ssl-replication): three brokers under `skiff up` listening on PLAINTEXT for
 * clients and on REPLICATION (SSL or SASL_SSL, its TLS settings given per listener) for each other.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { TestCerts } from '../support/tls-certs.js';
import {
  adminFor,
  consumeAll,
  createLedBy1,
  describe1,
  kcat,
  type SkiffProcess,
  startTestCluster,
  waitUntil,
} from './helpers.js';

/** `skiff up --brokers 3` replicating over REPLICATION (`protocol`); `extra`: more server.properties lines. */
export async function startSecureReplicationCluster(
  prefix: string,
  protocol: 'SSL' | 'SASL_SSL',
  certs: TestCerts,
  extra: readonly string[] = [],
  args: readonly string[] = [],
): Promise<{ dir: string; bootstrap: string; up: SkiffProcess }> {
  const c = await startTestCluster(
    prefix,
    [
      'listeners=PLAINTEXT://127.0.0.1:9092,REPLICATION://127.0.0.1:0',
      `listener.security.protocol.map=PLAINTEXT:PLAINTEXT,REPLICATION:${protocol}`,
      'inter.broker.listener.name=REPLICATION',
      'listener.name.replication.ssl.keystore.type=PEM',
      `listener.name.replication.ssl.keystore.location=${certs.brokerKeystore}`,
      'listener.name.replication.ssl.truststore.type=PEM',
      `listener.name.replication.ssl.truststore.location=${certs.caPem}`,
      'num.partitions=1',
      ...extra,
    ],
    3,
    args,
  );
  return { dir: c.dir, bootstrap: `127.0.0.1:${c.port}`, up: c.up };
}

/**
 * Creates `topic` led by broker 1 with min.insync.replicas 3, produces 200 records with acks=all
 * through kcat, reads them back, and waits until the followers' segments are byte for byte the
 * leader's with all three in the ISR.
 */
export async function produceAndCheckReplicas(bootstrap: string, dir: string, topic: string): Promise<void> {
  const { admin, close } = adminFor(bootstrap);
  try {
    await createLedBy1(admin, topic, new Map([['min.insync.replicas', '3']]));
    const values = Array.from({ length: 200 }, (_, i) => `${topic}-${i}`);
    const r = await kcat(
      ['-b', bootstrap, '-P', '-t', topic, '-p', '0', '-X', 'acks=all'],
      `${values.join('\n')}\n`,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(await consumeAll(bootstrap, topic), values);
    const segment = (id: number) => path.join(dir, `broker-${id}`, `${topic}-0`, '00000000000000000000.log');
    await waitUntil(
      'identical segments on brokers 1, 2, 3',
      async () => {
        const [a, b, c] = [1, 2, 3].map((id) => fs.readFileSync(segment(id)));
        return a!.length > 0 && a!.equals(b!) && a!.equals(c!) ? true : undefined;
      },
      20_000,
    );
    assert.deepEqual([...(await describe1(admin, topic)).partitions[0]!.isr].sort(), [1, 2, 3]);
  } finally {
    close();
  }
}

/** Broker 1's REPLICATION address, from its log's listening line. */
export function replicationAddress(dir: string): string {
  const log = fs.readFileSync(path.join(dir, 'logs', 'broker-1.log'), 'utf8');
  const m = /listening on PLAINTEXT:\/\/127\.0\.0\.1:\d+, REPLICATION:\/\/127\.0\.0\.1:(\d+)/.exec(log);
  assert.ok(m, log);
  return `127.0.0.1:${m[1]}`;
}
