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
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
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
    const c = await startTestCluster(
      'skiff-sasl-repl-',
      [
        'listeners=PLAINTEXT://127.0.0.1:9092,REPLICATION://127.0.0.1:0',
        'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,REPLICATION:SASL_SSL',
        'listener.name.replication.ssl.keystore.type=PEM',
        `listener.name.replication.ssl.keystore.location=${certs.brokerKeystore}`,
        'listener.name.replication.ssl.truststore.type=PEM',
        `listener.name.replication.ssl.truststore.location=${certs.caPem}`,
        'inter.broker.listener.name=REPLICATION',
        'listener.name.replication.sasl.enabled.mechanisms=SCRAM-SHA-512',
        'sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512',
        `listener.name.replication.scram-sha-512.sasl.jaas.config=${JAAS}`,
        'num.partitions=1',
      ],
      3,
      ['--add-scram', 'SCRAM-SHA-512=[name=broker,password=broker-secret]'],
    );
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
    const values = Array.from({ length: 200 }, (_, i) => `sasl-${i}`);
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

  it('the REPLICATION listener lets in the broker user and refuses a client without SASL', async () => {
    const log = fs.readFileSync(path.join(dir, 'logs', 'broker-1.log'), 'utf8');
    const m = /listening on PLAINTEXT:\/\/127\.0\.0\.1:\d+, REPLICATION:\/\/127\.0\.0\.1:(\d+)/.exec(log);
    assert.ok(m, log);
    const target = `127.0.0.1:${m[1]}`;
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
