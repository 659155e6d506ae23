/**
 * Replication over an SSL inter-broker listener: `skiff up --brokers 3` whose brokers listen on
 * PLAINTEXT for clients and on REPLICATION (SSL, its TLS settings given per listener as
 * listener.name.replication.ssl.*, client certificates required) for each other. An acks=all
 * produce succeeds, the followers catch up byte for byte, the fetchers' connections are on the
 * REPLICATION listener, and Metadata on each listener advertises that listener's ports.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readLauncherFile } from '../../src/cluster/control.js';
import { scrape } from '../support/prometheus.js';
import { makeTestCerts, type TestCerts } from '../support/tls-certs.js';
import {
  adminFor,
  consumeAll,
  createLedBy1,
  describe1,
  kcat,
  removeDataDir,
  requireTool,
  type SkiffProcess,
  startTestCluster,
  waitUntil,
} from './helpers.js';

const TOPIC = 'over-ssl';

describe('skiff up --brokers 3 replicating over an SSL inter-broker listener', () => {
  let certs: TestCerts;
  let dir: string;
  let bootstrap: string;
  let up: SkiffProcess | null = null;

  before(async () => {
    requireTool('kcat', '-V');
    certs = makeTestCerts();
    const c = await startTestCluster('skiff-ssl-repl-', [
      'listeners=PLAINTEXT://127.0.0.1:9092,REPLICATION://127.0.0.1:0',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,REPLICATION:SSL',
      'inter.broker.listener.name=REPLICATION',
      'listener.name.replication.ssl.keystore.type=PEM',
      `listener.name.replication.ssl.keystore.location=${certs.brokerKeystore}`,
      'listener.name.replication.ssl.truststore.type=PEM',
      `listener.name.replication.ssl.truststore.location=${certs.caPem}`,
      'listener.name.replication.ssl.client.auth=required',
      'num.partitions=1',
    ]);
    dir = c.dir;
    up = c.up;
    bootstrap = `127.0.0.1:${c.port}`;
  });
  after(async () => {
    await up?.stop();
    if (dir !== undefined) removeDataDir(dir);
    certs?.remove();
  });

  it('produces with acks=all and the followers catch up byte for byte', async () => {
    const { admin, close } = adminFor(bootstrap);
    try {
      await createLedBy1(admin, TOPIC, new Map([['min.insync.replicas', '3']]));
    } finally {
      close();
    }
    const values = Array.from({ length: 200 }, (_, i) => `ssl-${i}`);
    const r = await kcat(
      ['-b', bootstrap, '-P', '-t', TOPIC, '-p', '0', '-X', 'acks=all'],
      `${values.join('\n')}\n`,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(await consumeAll(bootstrap, TOPIC), values);
    const segment = (id: number) => path.join(dir, `broker-${id}`, `${TOPIC}-0`, '00000000000000000000.log');
    await waitUntil(
      'identical segments on brokers 1, 2, 3',
      async () => {
        const [a, b, c] = [1, 2, 3].map((id) => fs.readFileSync(segment(id)));
        return a!.length > 0 && a!.equals(b!) && a!.equals(c!) ? true : undefined;
      },
      20_000,
    );
    const { admin: admin2, close: close2 } = adminFor(bootstrap);
    try {
      assert.deepEqual([...(await describe1(admin2, TOPIC)).partitions[0]!.isr].sort(), [1, 2, 3]);
    } finally {
      close2();
    }
  });

  it("has the followers' fetch connections on the leader's REPLICATION listener", async () => {
    const launcher = readLauncherFile(dir);
    assert.ok(launcher, 'launcher.json');
    const e = await scrape(`${launcher.url}/metrics`);
    // Broker 1 leads: brokers 2 and 3 fetch from it over TLS.
    assert.ok(
      e.sum('skiff_connections', { node_id: '1', listener: 'REPLICATION' }) >= 2,
      JSON.stringify(e.find('skiff_connections')),
    );
  });

  it("advertises each listener's ports in Metadata", async () => {
    const plain = await kcat(['-b', bootstrap, '-L', '-J']);
    assert.equal(plain.status, 0, plain.stderr);
    const plainPorts = (JSON.parse(plain.stdout) as { brokers: { name: string }[] }).brokers.map(
      (b) => b.name,
    );
    assert.equal(plainPorts.length, 3);
    assert.ok(plainPorts.includes(bootstrap));
    // Broker 1's REPLICATION port, from its log's listening line.
    const log = fs.readFileSync(path.join(dir, 'logs', 'broker-1.log'), 'utf8');
    const m = /listening on PLAINTEXT:\/\/127\.0\.0\.1:\d+, REPLICATION:\/\/127\.0\.0\.1:(\d+)/.exec(log);
    assert.ok(m, log);
    const target = Number(m[1]);
    const overTls = await kcat([
      '-b',
      `127.0.0.1:${target}`,
      '-X',
      'security.protocol=ssl',
      '-X',
      `ssl.ca.location=${certs.caPem}`,
      '-X',
      `ssl.certificate.location=${certs.clientCert}`,
      '-X',
      `ssl.key.location=${certs.clientKey}`,
      '-L',
      '-J',
    ]);
    assert.equal(overTls.status, 0, overTls.stderr);
    const tlsPorts = (JSON.parse(overTls.stdout) as { brokers: { name: string }[] }).brokers.map(
      (b) => b.name,
    );
    assert.equal(tlsPorts.length, 3);
    for (const p of tlsPorts) assert.ok(!plainPorts.includes(p), `${p} is a PLAINTEXT port`);
    assert.ok(tlsPorts.includes(`127.0.0.1:${target}`));
  });
});
