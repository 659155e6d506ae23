/**
 * SASL on a SASL_PLAINTEXT listener of `skiff broker`, with real clients: kcat (librdkafka),
 * kafka-python and KafkaJS produce and consume as SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN users;
 * a client without SASL and one with a wrong password are refused, each failure one broker log line
 * naming the client's address. The admin's SCRAM credentials come from `--add-scram` at set-up, a
 * second user's from `skiff configs` over the PLAINTEXT listener; PLAIN users from the listener's
 * JAAS config.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import { skiff } from '../cli/in-process.js';
import { type BrokerProcess, runProcess, type ToolRun } from '../support/broker-process.js';
import { runPython, startCompatBroker } from './clients.js';

const JAAS =
  'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_carol="carol-secret";';

/** kcat without blocking the event loop, so the broker's log lines keep being read meanwhile. */
function kcat(args: string[], input?: string): Promise<ToolRun> {
  if (spawnSync('kcat', ['-V']).error) assert.fail('kcat is not installed: apt-get install kcat');
  return runProcess('kcat', args, input ?? '');
}

/** The broker's `failed authentication` lines once there are at least `n` past `from` (or what there is after 10 s). */
async function failureLines(broker: BrokerProcess, from: number, n: number): Promise<string[]> {
  const lines = () =>
    broker
      .output()
      .split('\n')
      .filter((l) => l.includes('failed authentication'))
      .slice(from);
  for (let i = 0; i < 100 && lines().length < n; i++) await new Promise((r) => setTimeout(r, 100));
  return lines();
}

const PY_SCRIPT = `
import json, sys
from kafka import KafkaProducer, KafkaConsumer
from kafka.errors import KafkaError
bootstrap, mechanism, user, password, topic = sys.argv[1].split('|')
common = dict(bootstrap_servers=bootstrap, security_protocol='SASL_PLAINTEXT', sasl_mechanism=mechanism,
              sasl_plain_username=user, sasl_plain_password=password, api_version_auto_timeout_ms=10000)
out = {}
try:
    p = KafkaProducer(**common)
    for i in range(5):
        p.send(topic, ('py-%d' % i).encode()).get(timeout=20)
    p.close()
    c = KafkaConsumer(topic, auto_offset_reset='earliest', consumer_timeout_ms=5000, **common)
    out['values'] = sorted(m.value.decode() for m in c)
    c.close()
except Exception as e:
    out['error'] = type(e).__name__ + ': ' + str(e)
print(json.dumps(out))
`;

describe('SASL (PLAIN, SCRAM-SHA-256/512) with kcat, kafka-python and KafkaJS', () => {
  let broker: BrokerProcess;
  let sasl: string;
  before(async () => {
    broker = await startCompatBroker(
      [
        'listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0',
        'sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512',
        `listener.name.sasl_plaintext.plain.sasl.jaas.config=${JAAS}`,
        'auto.create.topics.enable=true',
      ],
      [
        '--add-scram',
        'SCRAM-SHA-256=[name=admin,password=admin-secret]',
        '--add-scram',
        'SCRAM-SHA-512=[name=admin,password=admin-secret,iterations=8192]',
      ],
    );
    const port = /SASL_PLAINTEXT:\/\/127\.0\.0\.1:(\d+)/.exec(broker.output())?.[1];
    assert.ok(port, broker.output());
    sasl = `127.0.0.1:${port}`;
    const r = await skiff([
      'configs',
      '--bootstrap-server',
      broker.bootstrap,
      '--alter',
      '--entity-type',
      'users',
      '--entity-name',
      'bob',
      '--add-config',
      'SCRAM-SHA-512=[iterations=4096,password=bob-secret]',
    ]);
    assert.equal(r.status, 0, r.stderr);
  });
  after(async () => {
    await broker?.stop();
  });

  const kcatSasl = (mechanism: string, user: string, password: string) => [
    '-b',
    sasl,
    '-X',
    'security.protocol=sasl_plaintext',
    '-X',
    `sasl.mechanisms=${mechanism}`,
    '-X',
    `sasl.username=${user}`,
    '-X',
    `sasl.password=${password}`,
  ];

  it('kcat: SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN users produce and consume', async () => {
    for (const [mechanism, user, password] of [
      ['SCRAM-SHA-256', 'admin', 'admin-secret'],
      ['SCRAM-SHA-512', 'bob', 'bob-secret'],
      ['PLAIN', 'alice', 'alice-secret'],
    ] as const) {
      const p = await kcat(
        [...kcatSasl(mechanism, user, password), '-P', '-t', 'kcat-sasl'],
        `from-${mechanism}\n`,
      );
      assert.equal(p.status, 0, p.stderr);
    }
    const c = await kcat([
      ...kcatSasl('SCRAM-SHA-512', 'admin', 'admin-secret'),
      '-C',
      '-t',
      'kcat-sasl',
      '-e',
      '-q',
    ]);
    assert.equal(c.status, 0, c.stderr);
    assert.deepEqual(c.stdout.trim().split('\n').sort(), [
      'from-PLAIN',
      'from-SCRAM-SHA-256',
      'from-SCRAM-SHA-512',
    ]);
  });

  it('kcat: no SASL, a wrong password and an unknown user are refused alike', async () => {
    const before = broker
      .output()
      .split('\n')
      .filter((l) => l.includes('failed authentication')).length;
    const anonymous = await kcat(['-b', sasl, '-L', '-m', '3']);
    assert.notEqual(anonymous.status, 0);
    assert.match(anonymous.stderr, /broker might require SASL authentication/);
    for (const [user, password] of [
      ['admin', 'wrong'],
      ['nobody', 'admin-secret'],
    ] as const) {
      const r = await kcat([...kcatSasl('SCRAM-SHA-256', user, password), '-L', '-m', '3']);
      assert.notEqual(r.status, 0);
      assert.match(
        r.stderr,
        /Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256/,
      );
    }
    const plain = await kcat([...kcatSasl('PLAIN', 'alice', 'wrong'), '-L', '-m', '3']);
    assert.match(plain.stderr, /Authentication failed: Invalid username or password/);
    const lines = await failureLines(broker, before, 4);
    assert.ok(lines.length >= 4, `${lines.length} lines:\n${broker.output()}`);
    for (const l of lines) assert.match(l, /from 127\.0\.0\.1:\d+/);
    assert.ok(
      lines.some((l) => /Unexpected Kafka request of type METADATA during SASL handshake/.test(l)),
      lines.join('\n'),
    );
  });

  it('kafka-python: SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN users produce and consume; a wrong password fails', async () => {
    for (const [mechanism, user, password] of [
      ['SCRAM-SHA-256', 'admin', 'admin-secret'],
      ['SCRAM-SHA-512', 'bob', 'bob-secret'],
      ['PLAIN', 'carol', 'carol-secret'],
    ] as const) {
      const topic = `py-sasl-${mechanism.toLowerCase()}`;
      const r = await runPython<{ values?: string[]; error?: string }>(
        PY_SCRIPT,
        [sasl, mechanism, user, password, topic].join('|'),
        'kafka',
        'python3-kafka',
      );
      assert.equal(r.error, undefined, `${mechanism}: ${r.error}`);
      assert.deepEqual(r.values, ['py-0', 'py-1', 'py-2', 'py-3', 'py-4']);
    }
    const bad = await runPython<{ values?: string[]; error?: string }>(
      PY_SCRIPT,
      [sasl, 'SCRAM-SHA-512', 'bob', 'wrong', 'py-sasl-bad'].join('|'),
      'kafka',
      'python3-kafka',
    );
    // kafka-python reports a bootstrap that failed authentication as NoBrokersAvailable; the broker
    // says why.
    assert.match(bad.error ?? '', /NoBrokersAvailable|Authentication/i);
    assert.match(
      broker.output(),
      /failed authentication on listener SASL_PLAINTEXT with SASL mechanism SCRAM-SHA-512: Invalid client credentials/,
    );
  });

  it("skiff's tools authenticate with --command-config (security.protocol, sasl.mechanism, sasl.jaas.config)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-sasl-tools-'));
    try {
      const config = (mechanism: string, module: string, user: string, password: string): string => {
        const file = path.join(dir, `${mechanism}-${user}-${password}.properties`);
        fs.writeFileSync(
          file,
          [
            'security.protocol=SASL_PLAINTEXT',
            `sasl.mechanism=${mechanism}`,
            `sasl.jaas.config=org.apache.kafka.common.security.${module} required username="${user}" password="${password}";`,
            '',
          ].join('\n'),
        );
        return file;
      };
      const describe = (file: string) =>
        skiff([
          'configs',
          '--bootstrap-server',
          sasl,
          '--command-config',
          file,
          '--describe',
          '--entity-type',
          'users',
          '--entity-name',
          'bob',
        ]);
      for (const file of [
        config('SCRAM-SHA-256', 'scram.ScramLoginModule', 'admin', 'admin-secret'),
        config('SCRAM-SHA-512', 'scram.ScramLoginModule', 'bob', 'bob-secret'),
        config('PLAIN', 'plain.PlainLoginModule', 'alice', 'alice-secret'),
      ]) {
        const r = await describe(file);
        assert.equal(r.status, 0, r.stderr);
        assert.equal(
          r.stdout,
          "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=4096\n",
        );
      }
      const wrong = await describe(config('SCRAM-SHA-256', 'scram.ScramLoginModule', 'admin', 'nope'));
      assert.notEqual(wrong.status, 0);
      assert.match(
        wrong.stderr,
        /Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256/,
      );
      const gssapi = await describe(config('GSSAPI', 'scram.ScramLoginModule', 'admin', 'admin-secret'));
      assert.notEqual(gssapi.status, 0);
      assert.match(gssapi.stderr, /sasl.mechanism GSSAPI is not supported/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('KafkaJS: a SCRAM-SHA-512 user produces and consumes; a wrong password is rejected', async () => {
    const kafka = new Kafka({
      clientId: 'skiff-kafkajs-sasl',
      brokers: [sasl],
      sasl: { mechanism: 'scram-sha-512', username: 'admin', password: 'admin-secret' },
      logLevel: logLevel.NOTHING,
    });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'js-sasl', numPartitions: 1 }] });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: 'js-sasl', messages: [{ value: 'js-1' }, { value: 'js-2' }] });
    await producer.disconnect();
    const consumer = kafka.consumer({ groupId: 'js-sasl-group' });
    await consumer.connect();
    await consumer.subscribe({ topic: 'js-sasl', fromBeginning: true });
    const seen: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${seen.length} records`)), 20_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(message.value?.toString() ?? '');
          if (seen.length === 2) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
    await consumer.disconnect();
    assert.deepEqual(seen, ['js-1', 'js-2']);

    const wrong = new Kafka({
      clientId: 'skiff-kafkajs-sasl-bad',
      brokers: [sasl],
      sasl: { mechanism: 'scram-sha-256', username: 'admin', password: 'nope' },
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
    });
    const badAdmin = wrong.admin();
    await assert.rejects(badAdmin.connect(), /SASL SCRAM SHA256 authentication failed|Authentication failed/);
    await badAdmin.disconnect();
  });
});
