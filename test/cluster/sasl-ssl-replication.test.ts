/**
 * Replication over a SASL_SSL inter-broker listener: `skiff up --brokers 3` whose brokers listen on
 * PLAINTEXT for clients and on REPLICATION (SASL_SSL: TLS with a CA made by the test, then
 * SCRAM-SHA-512) for each other, each
 * broker authenticating its fetchers with the username/password of
 * listener.name.replication.scram-sha-512.sasl.jaas.config, the credential created by
 * `skiff up --add-scram`. An acks=all produce succeeds, the followers catch up byte for byte, and
 * the REPLICATION listener refuses a TLS client without SASL and lets in kcat as the broker user.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeTestCerts, type TestCerts } from '../support/tls-certs.js';
import { kcat, removeDataDir, requireTool, type SkiffProcess } from './helpers.js';
import {
  produceAndCheckReplicas,
  replicationAddress,
  startSecureReplicationCluster,
} from './secure-replication.js';

const TOPIC = 'over-sasl';
const JAAS =
  'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";';

describe('skiff up --brokers 3 replicating over a SASL_SSL inter-broker listener', () => {
  let certs: TestCerts;
  let dir: string;
  let bootstrap: string;
  let up: SkiffProcess | null = null;

  before(async () => {
    requireTool('kcat', '-V');
    certs = makeTestCerts();
    ({ dir, bootstrap, up } = await startSecureReplicationCluster(
      'skiff-sasl-repl-',
      'SASL_SSL',
      certs,
      [
        'listener.name.replication.sasl.enabled.mechanisms=SCRAM-SHA-512',
        'sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512',
        `listener.name.replication.scram-sha-512.sasl.jaas.config=${JAAS}`,
      ],
      ['--add-scram', 'SCRAM-SHA-512=[name=broker,password=broker-secret]'],
    ));
  });
  after(async () => {
    await up?.stop();
    if (dir !== undefined) removeDataDir(dir);
    certs?.remove();
  });

  it('produces with acks=all and the followers catch up byte for byte', async () => {
    await produceAndCheckReplicas(bootstrap, dir, TOPIC);
  });

  it('the REPLICATION listener lets in the broker user and refuses a client without SASL', async () => {
    const target = replicationAddress(dir);
    const tls = ['-X', `ssl.ca.location=${certs.caPem}`];
    const anonymous = await kcat(['-b', target, '-X', 'security.protocol=ssl', ...tls, '-L', '-m', '3']);
    assert.notEqual(anonymous.status, 0);
    const asBroker = await kcat([
      '-b',
      target,
      '-X',
      'security.protocol=sasl_ssl',
      ...tls,
      '-X',
      'sasl.mechanisms=SCRAM-SHA-512',
      '-X',
      'sasl.username=broker',
      '-X',
      'sasl.password=broker-secret',
      '-L',
      '-J',
    ]);
    assert.equal(asBroker.status, 0, asBroker.stderr);
    assert.equal((JSON.parse(asBroker.stdout) as { brokers: unknown[] }).brokers.length, 3);
  });
});
