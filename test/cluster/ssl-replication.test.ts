/**
 * Replication over an SSL inter-broker listener: `skiff up --brokers 3` whose brokers listen on
 * PLAINTEXT for clients and on REPLICATION (SSL, its TLS settings given per listener as
 * listener.name.replication.ssl.*, client certificates required) for each other. An acks=all
 * produce succeeds, the followers catch up byte for byte, the fetchers' connections are on the
 * REPLICATION listener, and Metadata on each listener advertises that listener's ports.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readLauncherFile } from '../../src/cluster/control.js';
import { scrape } from '../support/prometheus.js';
import { makeTestCerts, type TestCerts } from '../support/tls-certs.js';
import { kcat, removeDataDir, requireTool, type SkiffProcess } from './helpers.js';
import {
  produceAndCheckReplicas,
  replicationAddress,
  startSecureReplicationCluster,
} from './secure-replication.js';

const TOPIC = 'over-ssl';

describe('skiff up --brokers 3 replicating over an SSL inter-broker listener', () => {
  let certs: TestCerts;
  let dir: string;
  let bootstrap: string;
  let up: SkiffProcess | null = null;

  before(async () => {
    requireTool('kcat', '-V');
    certs = makeTestCerts();
    ({ dir, bootstrap, up } = await startSecureReplicationCluster('skiff-ssl-repl-', 'SSL', certs, [
      'listener.name.replication.ssl.client.auth=required',
    ]));
  });
  after(async () => {
    await up?.stop();
    if (dir !== undefined) removeDataDir(dir);
    certs?.remove();
  });

  it('produces with acks=all and the followers catch up byte for byte', async () => {
    await produceAndCheckReplicas(bootstrap, dir, TOPIC);
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
    const target = replicationAddress(dir);
    const overTls = await kcat([
      '-b',
      target,
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
    assert.ok(tlsPorts.includes(target));
  });
});
