/**
 * SSL listeners with real clients: `skiff broker` with a PLAINTEXT and an SSL listener (PEM key and
 * trust stores from a CA the test makes with openssl); kcat over SSL with and without a client
 * certificate, and refused without one where ssl.client.auth=required; kafka-python and KafkaJS over SSL; a
 * skiff tool with --command-config; Metadata on each listener advertising that listener's port.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import { type BrokerProcess, runProcess, runSkiff } from '../support/broker-process.js';
import { makeTestCerts, type TestCerts } from '../support/tls-certs.js';
import { runPython, startCompatBroker } from './clients.js';

function sslPortOf(b: BrokerProcess): number {
  const m = /SSL:\/\/127\.0\.0\.1:(\d+)/.exec(b.output());
  assert.ok(m, `no SSL listener in the ready line:\n${b.output()}`);
  return Number(m[1]);
}

function brokerTls(certs: TestCerts, clientAuth: string): string[] {
  return [
    'listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0',
    'ssl.keystore.type=PEM',
    `ssl.keystore.location=${certs.brokerKeystore}`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${certs.caPem}`,
    `ssl.client.auth=${clientAuth}`,
  ];
}

const kcat = (args: readonly string[], input = '') => runProcess('kcat', args, input, 30_000);

describe('SSL listeners with kcat, kafka-python and the skiff tools', () => {
  let certs: TestCerts;
  let broker: BrokerProcess;
  let sslPort: number;
  let ssl: string;
  const kcatSsl = (extra: readonly string[] = []) => [
    '-b',
    ssl,
    '-X',
    'security.protocol=ssl',
    '-X',
    `ssl.ca.location=${certs.caPem}`,
    ...extra,
  ];

  const withClientCert = (): string[] => [
    '-X',
    `ssl.certificate.location=${certs.clientCert}`,
    '-X',
    `ssl.key.location=${certs.clientKey}`,
  ];

  before(async () => {
    certs = makeTestCerts();
    broker = await startCompatBroker(brokerTls(certs, 'requested'));
    sslPort = sslPortOf(broker);
    ssl = `127.0.0.1:${sslPort}`;
  });
  after(async () => {
    await broker?.stop();
    certs?.remove();
  });

  it("advertises each listener's own port in Metadata", async () => {
    const overSsl = await kcat([...kcatSsl(), '-L', '-J']);
    assert.equal(overSsl.status, 0, overSsl.stderr);
    assert.deepEqual(
      (JSON.parse(overSsl.stdout) as { brokers: { name: string }[] }).brokers.map((b) => b.name),
      [`127.0.0.1:${sslPort}`],
    );
    const plain = await kcat(['-b', broker.bootstrap, '-L', '-J']);
    assert.equal(plain.status, 0, plain.stderr);
    assert.deepEqual(
      (JSON.parse(plain.stdout) as { brokers: { name: string }[] }).brokers.map((b) => b.name),
      [broker.bootstrap],
    );
  });

  it('produces and consumes with kcat over SSL, without and with a client certificate', async () => {
    const produced = await kcat([...kcatSsl(), '-P', '-t', 'tls-kcat', '-X', 'acks=all'], 'a\nb\nc\n');
    assert.equal(produced.status, 0, produced.stderr);
    const withCert = await kcat([...kcatSsl(withClientCert()), '-P', '-t', 'tls-kcat'], 'd\n');
    assert.equal(withCert.status, 0, withCert.stderr);
    const consumed = await kcat([
      ...kcatSsl(withClientCert()),
      '-C',
      '-t',
      'tls-kcat',
      '-o',
      'beginning',
      '-e',
      '-q',
    ]);
    assert.equal(consumed.status, 0, consumed.stderr);
    assert.deepEqual(
      consumed.stdout.split('\n').filter((l) => l !== ''),
      ['a', 'b', 'c', 'd'],
    );
  });

  it('reads 4 MB back over SSL: fetch responses of stored bytes go through TLS', async () => {
    // Each response carries up to fetch.max.bytes of log: with sendfile these bytes would bypass TLS.
    const values = Array.from(
      { length: 4000 },
      (_, i) => `${String(i).padStart(6, '0')}-${'x'.repeat(1000)}`,
    );
    const produced = await kcat(
      [...kcatSsl(), '-P', '-t', 'tls-bulk', '-X', 'acks=all'],
      `${values.join('\n')}\n`,
    );
    assert.equal(produced.status, 0, produced.stderr);
    const consumed = await kcat([...kcatSsl(), '-C', '-t', 'tls-bulk', '-o', 'beginning', '-e', '-q']);
    assert.equal(consumed.status, 0, consumed.stderr);
    assert.deepEqual(
      consumed.stdout.split('\n').filter((l) => l !== ''),
      values,
    );
  });

  it('produces and consumes with kafka-python over SSL', async () => {
    const script = `
import json, sys, time
from kafka import KafkaConsumer, KafkaProducer
bs = sys.argv[1]
tls = dict(security_protocol='SSL', ssl_cafile=${JSON.stringify(certs.caPem)}, ssl_check_hostname=True,
           ssl_certfile=${JSON.stringify(certs.clientCert)}, ssl_keyfile=${JSON.stringify(certs.clientKey)})
p = KafkaProducer(bootstrap_servers=bs, acks='all', **tls)
for i in range(5):
    p.send('tls-python', value=b'py-%d' % i)
p.flush()
p.close()
c = KafkaConsumer('tls-python', bootstrap_servers=bs, auto_offset_reset='earliest', enable_auto_commit=False, **tls)
got = []
deadline = time.time() + 20
while len(got) < 5 and time.time() < deadline:
    for tp, records in c.poll(timeout_ms=500).items():
        got.extend(r.value.decode() for r in records)
c.close()
print(json.dumps(got))
`;
    const got = await runPython<string[]>(script, ssl, 'kafka', 'python3-kafka');
    assert.deepEqual(got, ['py-0', 'py-1', 'py-2', 'py-3', 'py-4']);
  });

  it('produces and consumes with KafkaJS over SSL with a client certificate', async () => {
    const kafka = new Kafka({
      clientId: 'skiff-kafkajs-tls',
      brokers: [ssl],
      logLevel: logLevel.NOTHING,
      ssl: {
        ca: [fs.readFileSync(certs.caPem, 'utf8')],
        cert: fs.readFileSync(certs.clientCert, 'utf8'),
        key: fs.readFileSync(certs.clientKey, 'utf8'),
      },
    });
    const producer = kafka.producer();
    await producer.connect();
    try {
      await producer.send({
        topic: 'tls-kafkajs',
        acks: -1,
        messages: Array.from({ length: 10 }, (_, i) => ({ value: `js-${i}` })),
      });
    } finally {
      await producer.disconnect();
    }
    const admin = kafka.admin();
    await admin.connect();
    try {
      const offsets = await admin.fetchTopicOffsets('tls-kafkajs');
      assert.equal(offsets[0]!.high, '10');
      const cluster = await admin.describeCluster();
      assert.deepEqual(
        cluster.brokers.map((b) => b.port),
        [sslPort],
      );
    } finally {
      await admin.disconnect();
    }
  });

  it('runs a skiff tool over SSL with --command-config', async () => {
    const config = path.join(certs.dir, 'client-ssl.properties');
    fs.writeFileSync(
      config,
      [
        'security.protocol=SSL',
        'ssl.truststore.type=PEM',
        `ssl.truststore.location=${certs.caPem}`,
        'ssl.keystore.type=PEM',
        `ssl.keystore.location=${certs.clientKeystore}`,
        '',
      ].join('\n'),
    );
    const created = await runSkiff([
      'topics',
      '--bootstrap-server',
      ssl,
      '--command-config',
      config,
      '--create',
      '--topic',
      'tls-tool',
      '--partitions',
      '2',
      '--replication-factor',
      '1',
    ]);
    assert.equal(created.status, 0, created.stderr);
    const described = await runSkiff([
      'topics',
      '--bootstrap-server',
      ssl,
      '--command-config',
      config,
      '--describe',
      '--topic',
      'tls-tool',
    ]);
    assert.equal(described.status, 0, described.stderr);
    assert.match(described.stdout, /Topic: tls-tool\s.*PartitionCount: 2/);
    // Without the SSL settings the tool cannot talk to the SSL listener: one clear failure, no hang.
    const plainConfig = path.join(certs.dir, 'client-plain.properties');
    fs.writeFileSync(plainConfig, 'request.timeout.ms=3000\ndefault.api.timeout.ms=5000\n');
    const plain = await runSkiff(
      ['topics', '--bootstrap-server', ssl, '--command-config', plainConfig, '--list'],
      '',
      60_000,
    );
    assert.notEqual(plain.status, 0);
  });
});

describe('ssl.client.auth=required', () => {
  let certs: TestCerts;
  let broker: BrokerProcess;
  let ssl: string;
  before(async () => {
    certs = makeTestCerts();
    broker = await startCompatBroker(brokerTls(certs, 'required'));
    ssl = `127.0.0.1:${sslPortOf(broker)}`;
  });
  after(async () => {
    await broker?.stop();
    certs?.remove();
  });

  it('refuses kcat without a client certificate, with one log line naming the client, and lets it in with one', async () => {
    const base = ['-b', ssl, '-X', 'security.protocol=ssl', '-X', `ssl.ca.location=${certs.caPem}`];
    const refused = await kcat([...base, '-L', '-m', '3']);
    assert.notEqual(refused.status, 0, refused.stdout);
    assert.match(broker.output(), /SSL handshake failed on listener SSL from 127\.0\.0\.1:\d+/);
    const admitted = await kcat([
      ...base,
      '-X',
      `ssl.certificate.location=${certs.clientCert}`,
      '-X',
      `ssl.key.location=${certs.clientKey}`,
      '-L',
    ]);
    assert.equal(admitted.status, 0, admitted.stderr);
    assert.match(admitted.stdout, /1 brokers:/);
  });
});
