/**
 * ACLs against real clients (kafka-python and KafkaJS) on a broker with Skiff's authorizer and a
 * PLAINTEXT listener, where every client is User:ANONYMOUS: with no ACL, produce and consume are
 * refused with Kafka's authorization errors and nothing is written; `skiff acls --add --producer`
 * and `--consumer` let them in; PREFIXED patterns and DENY precedence hold; the ACLs survive a
 * broker restart; super.users bypasses them; on a SASL listener, named users are told apart. The admin rights to manage ACLs (ALTER and DESCRIBE
 * on the cluster) are written to the metadata first, as the bootstrap of a cluster would.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import { AclOperation, AclPermissionType, PatternType, ResourceType } from '../../src/security/acl.js';
import { startBroker, type TestBroker } from '../broker/helpers.js';
import { type BrokerProcess, runSkiff } from '../support/broker-process.js';
import { runPython, startCompatBroker } from './clients.js';

const PROPS = {
  'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
  'group.initial.rebalance.delay.ms': '0',
  'group.min.session.timeout.ms': '1000',
  'offsets.topic.replication.factor': '1',
  'transaction.state.log.replication.factor': '1',
  'transaction.state.log.min.isr': '1',
  'transaction.state.log.num.partitions': '2',
};

/** Produces or consumes with kafka-python; prints {"ok": n} or {"error": "<exception class>"}. */
const PYTHON = `
import json, sys, time
from kafka import KafkaConsumer, KafkaProducer
bs, mode, topic = sys.argv[1].split('|')
out = {}
try:
    if mode == 'produce':
        p = KafkaProducer(bootstrap_servers=bs, client_id='py-acl', max_block_ms=5000, retries=0)
        for i in range(2):
            p.send(topic, value=b'py%d' % i).get(timeout=10)
        p.close()
        out['ok'] = 2
    else:
        c = KafkaConsumer(topic, group_id='g', bootstrap_servers=bs, client_id='py-acl',
                          auto_offset_reset='earliest', session_timeout_ms=6000, heartbeat_interval_ms=500)
        got = 0
        deadline = time.time() + 15
        while got < 5 and time.time() < deadline:
            got += sum(len(r) for r in c.poll(timeout_ms=500).values())
        c.close()
        out['ok'] = got
except Exception as e:
    out['error'] = type(e).__name__
print(json.dumps(out))
`;

const python = (b: TestBroker, mode: 'produce' | 'consume', topic: string) =>
  runPython<{ ok?: number; error?: string }>(
    PYTHON,
    `127.0.0.1:${b.port}|${mode}|${topic}`,
    'kafka',
    'python3-kafka',
  );

/** The Kafka error type KafkaJS reports, through its wrappers. */
function kafkaJsErrorType(e: unknown): string {
  let x = e as { type?: string; cause?: unknown; originalError?: unknown; name?: string } | undefined;
  while (x !== undefined && x !== null) {
    if (typeof x.type === 'string') return x.type;
    x = (x.cause ?? x.originalError) as typeof x;
  }
  return String((e as Error).message);
}

async function kafkaJsProduce(b: TestBroker, topic: string): Promise<string> {
  const kafka = new Kafka({
    clientId: 'js-acl',
    brokers: [`127.0.0.1:${b.port}`],
    logLevel: logLevel.NOTHING,
  });
  const producer = kafka.producer({ retry: { retries: 0 }, allowAutoTopicCreation: false });
  await producer.connect();
  try {
    await producer.send({ topic, messages: [{ value: 'js0' }, { value: 'js1' }, { value: 'js2' }] });
    return 'ok';
  } catch (e) {
    return kafkaJsErrorType(e);
  } finally {
    await producer.disconnect();
  }
}

async function skiffAcls(b: TestBroker, args: string[], input = ''): Promise<string> {
  const r = await runSkiff(['acls', '--bootstrap-server', `127.0.0.1:${b.port}`, ...args], input);
  assert.equal(r.status, 0, `skiff acls ${args.join(' ')}:\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

const ALLOW_ANONYMOUS = ['--add', '--allow-principal', 'User:ANONYMOUS'];
const DENY_WRITE_PRE_B = [
  '--add',
  '--deny-principal',
  'User:ANONYMOUS',
  '--operation',
  'Write',
  '--topic',
  'pre-b',
];

const leo = (b: TestBroker, topic: string): bigint =>
  b.broker.replicaManager.getPartition(topic, 0)!.log.logEndOffset;

describe('ACLs with kafka-python and KafkaJS', () => {
  let b: TestBroker;
  before(async () => {
    b = await startBroker(PROPS);
    const admin = (operation: number) => ({
      resourceType: ResourceType.CLUSTER,
      resourceName: 'kafka-cluster',
      patternType: PatternType.LITERAL,
      principal: 'User:ANONYMOUS',
      host: '*',
      operation,
      permissionType: AclPermissionType.ALLOW,
    });
    const r = await b.metadata.controller.createAcls([
      admin(AclOperation.ALTER),
      admin(AclOperation.DESCRIBE),
    ]);
    assert.equal(r.errorCode, 0);
    const created = await b.metadata.controller.createTopics(
      ['t', 'pre-a', 'pre-b', 'other'].map((name) => ({
        name,
        numPartitions: 1,
        replicationFactor: 1,
        configs: {},
      })),
      false,
    );
    for (const t of created) assert.equal(t.errorCode, 0, t.errorMessage ?? '');
  });
  after(async () => {
    await b?.stop();
  });

  it('refuses produce and consume without ACLs, with the authorization errors, and writes nothing', async () => {
    // No ACL at all: Metadata refuses the topic (KafkaJS gives up; kafka-python would wait for it).
    assert.equal(await kafkaJsProduce(b, 't'), 'TOPIC_AUTHORIZATION_FAILED');
    const consumed = await python(b, 'consume', 't');
    assert.ok(
      consumed.error === 'TopicAuthorizationFailedError' ||
        consumed.error === 'GroupAuthorizationFailedError',
      JSON.stringify(consumed),
    );
    // DESCRIBE alone: the topic is seen, and the Produce itself is refused.
    await skiffAcls(b, [...ALLOW_ANONYMOUS, '--operation', 'Describe', '--topic', 't']);
    assert.equal(await kafkaJsProduce(b, 't'), 'TOPIC_AUTHORIZATION_FAILED');
    assert.deepEqual(await python(b, 'produce', 't'), { error: 'TopicAuthorizationFailedError' });
    assert.equal(leo(b, 't'), 0n);
  });

  it('lets a producer in after skiff acls --add --producer, and a consumer after --consumer', async () => {
    const added = await skiffAcls(b, [...ALLOW_ANONYMOUS, '--producer', '--topic', 't']);
    assert.equal(
      added,
      [
        'Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`: ',
        ' \t(principal=User:ANONYMOUS, host=*, operation=WRITE, permissionType=ALLOW)',
        '\t(principal=User:ANONYMOUS, host=*, operation=DESCRIBE, permissionType=ALLOW)',
        '\t(principal=User:ANONYMOUS, host=*, operation=CREATE, permissionType=ALLOW) ',
        '',
        '',
      ].join('\n'),
    );
    assert.equal(await kafkaJsProduce(b, 't'), 'ok');
    assert.deepEqual(await python(b, 'produce', 't'), { ok: 2 });
    assert.equal(leo(b, 't'), 5n);
    // Producing does not give READ on the topic nor on the group.
    const refused = await python(b, 'consume', 't');
    assert.ok(refused.error?.endsWith('AuthorizationFailedError'), JSON.stringify(refused));

    await skiffAcls(b, [...ALLOW_ANONYMOUS, '--consumer', '--topic', 't', '--group', 'g']);
    assert.deepEqual(await python(b, 'consume', 't'), { ok: 5 });
    const kafka = new Kafka({
      clientId: 'js-acl',
      brokers: [`127.0.0.1:${b.port}`],
      logLevel: logLevel.NOTHING,
    });
    const consumer = kafka.consumer({ groupId: 'g', sessionTimeout: 6000, heartbeatInterval: 500 });
    const seen: string[] = [];
    await consumer.connect();
    try {
      await consumer.subscribe({ topic: 't', fromBeginning: true });
      // The group committed after kafka-python read all five: a new producer record is what comes.
      await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value!.toString()) });
      assert.equal(await kafkaJsProduce(b, 't'), 'ok');
      const deadline = Date.now() + 20_000;
      while (seen.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    } finally {
      await consumer.disconnect();
    }
    assert.deepEqual(seen, ['js0', 'js1', 'js2']);
  });

  it('refuses a transactional producer without WRITE on its transactional id, and lets it commit with it', async () => {
    const kafka = new Kafka({
      clientId: 'js-acl',
      brokers: [`127.0.0.1:${b.port}`],
      logLevel: logLevel.NOTHING,
    });
    const transactional = async (): Promise<string> => {
      const producer = kafka.producer({
        transactionalId: 'tx-1',
        idempotent: true,
        maxInFlightRequests: 1,
        retry: { retries: 1, initialRetryTime: 50 },
      });
      try {
        await producer.connect();
        const txn = await producer.transaction();
        await txn.send({ topic: 't', messages: [{ value: 'tx0' }] });
        await txn.commit();
        return 'ok';
      } catch (e) {
        return kafkaJsErrorType(e);
      } finally {
        await producer.disconnect();
      }
    };
    const before = leo(b, 't');
    // FindCoordinator is refused (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), which KafkaJS words so.
    assert.equal(await transactional(), 'Failed to find group coordinator');
    // DESCRIBE finds the coordinator; InitProducerId needs WRITE.
    await skiffAcls(b, [...ALLOW_ANONYMOUS, '--operation', 'Describe', '--transactional-id', 'tx-1']);
    assert.equal(await transactional(), 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED');
    assert.equal(leo(b, 't'), before);
    const added = await skiffAcls(b, [
      ...ALLOW_ANONYMOUS,
      '--producer',
      '--topic',
      't',
      '--transactional-id',
      'tx-1',
    ]);
    assert.match(
      added,
      /Adding ACLs for resource `ResourcePattern\(resourceType=TRANSACTIONAL_ID, name=tx-1, patternType=LITERAL\)`: \n \t\(principal=User:ANONYMOUS, host=\*, operation=WRITE, permissionType=ALLOW\)\n\t\(principal=User:ANONYMOUS, host=\*, operation=DESCRIBE, permissionType=ALLOW\) \n/,
    );
    assert.equal(await transactional(), 'ok');
    // The record and the COMMIT marker.
    assert.equal(leo(b, 't'), before + 2n);
  });

  it('holds PREFIXED patterns and DENY precedence, lists them, and removes with --force', async () => {
    await skiffAcls(b, [
      ...ALLOW_ANONYMOUS,
      '--operation',
      'Write',
      '--operation',
      'Describe',
      '--topic',
      'pre-',
      '--resource-pattern-type',
      'prefixed',
    ]);
    await skiffAcls(b, DENY_WRITE_PRE_B);
    assert.equal(await kafkaJsProduce(b, 'pre-a'), 'ok');
    assert.equal(await kafkaJsProduce(b, 'pre-b'), 'TOPIC_AUTHORIZATION_FAILED');
    assert.equal(await kafkaJsProduce(b, 'other'), 'TOPIC_AUTHORIZATION_FAILED');
    assert.deepEqual(await python(b, 'produce', 'pre-b'), { error: 'TopicAuthorizationFailedError' });
    assert.equal(leo(b, 'pre-b'), 0n);

    const listed = await skiffAcls(b, ['--list', '--topic', 'pre-b', '--resource-pattern-type', 'match']);
    assert.equal(
      listed,
      [
        'Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=pre-, patternType=PREFIXED)`: ',
        ' \t(principal=User:ANONYMOUS, host=*, operation=WRITE, permissionType=ALLOW)',
        '\t(principal=User:ANONYMOUS, host=*, operation=DESCRIBE, permissionType=ALLOW) ',
        '',
        'Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=pre-b, patternType=LITERAL)`: ',
        ' \t(principal=User:ANONYMOUS, host=*, operation=WRITE, permissionType=DENY) ',
        '',
        '',
      ].join('\n'),
    );

    // --remove asks first: with stdin not a terminal, it refuses rather than hang.
    const asked = await runSkiff(
      ['acls', '--bootstrap-server', `127.0.0.1:${b.port}`, '--remove', '--topic', 'pre-b'],
      'y\n',
    );
    assert.equal(asked.status, 2);
    assert.match(asked.stderr, /add --force/);
    assert.equal(await kafkaJsProduce(b, 'pre-b'), 'TOPIC_AUTHORIZATION_FAILED');
    await skiffAcls(b, ['--remove', '--force', '--topic', 'pre-b']);
    assert.equal(await kafkaJsProduce(b, 'pre-b'), 'ok');
    await skiffAcls(b, DENY_WRITE_PRE_B);
  });

  it('keeps the ACLs across a restart, and super.users bypasses them', async () => {
    const dir = b.dir;
    await b.stop();
    b = await startBroker(PROPS, dir);
    assert.match(
      await skiffAcls(b, ['--list']),
      /name=pre-b, patternType=LITERAL\)`: \n \t\(principal=User:ANONYMOUS, host=\*, operation=WRITE, permissionType=DENY\) /,
    );
    assert.equal(await kafkaJsProduce(b, 't'), 'ok');
    assert.equal(await kafkaJsProduce(b, 'pre-b'), 'TOPIC_AUTHORIZATION_FAILED');
    await b.stop();
    b = await startBroker({ ...PROPS, 'super.users': 'User:ANONYMOUS' }, dir);
    assert.equal(await kafkaJsProduce(b, 'pre-b'), 'ok');
    assert.equal(await kafkaJsProduce(b, 'other'), 'ok');
  });
});

/** kafka-python as a SASL/PLAIN user: produces two records, then reads the topic back. */
const PYTHON_SASL = `
import json, sys
from kafka import KafkaConsumer, KafkaProducer
bs, user, topic = sys.argv[1].split('|')
common = dict(bootstrap_servers=bs, security_protocol='SASL_PLAINTEXT', sasl_mechanism='PLAIN',
              sasl_plain_username=user, sasl_plain_password=user + '-secret', api_version_auto_timeout_ms=10000)
out = {}
try:
    p = KafkaProducer(max_block_ms=5000, retries=0, **common)
    for i in range(2):
        p.send(topic, value=('%s-%d' % (user, i)).encode()).get(timeout=10)
    p.close()
    c = KafkaConsumer(topic, group_id='named-g', auto_offset_reset='earliest', consumer_timeout_ms=5000, **common)
    out['values'] = sorted(m.value.decode() for m in c)
    c.close()
except Exception as e:
    out['error'] = type(e).__name__
print(json.dumps(out))
`;

describe('ACLs for named SASL/PLAIN users with kafka-python and KafkaJS', () => {
  const JAAS =
    'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="bob-secret";';
  let broker: BrokerProcess;
  let sasl: string;
  before(async () => {
    // The loopback PLAINTEXT listener is the administrator's (User:ANONYMOUS is a super user there);
    // clients come in on the SASL listener as themselves.
    broker = await startCompatBroker([
      'listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0',
      'sasl.enabled.mechanisms=PLAIN',
      `listener.name.sasl_plaintext.plain.sasl.jaas.config=${JAAS}`,
      `authorizer.class.name=${PROPS['authorizer.class.name']}`,
      'super.users=User:ANONYMOUS',
    ]);
    const port = /SASL_PLAINTEXT:\/\/127\.0\.0\.1:(\d+)/.exec(broker.output())?.[1];
    assert.ok(port, broker.output());
    sasl = `127.0.0.1:${port}`;
    const admin = ['--bootstrap-server', broker.bootstrap];
    const created = await runSkiff(['topics', ...admin, '--create', '--topic', 'named', '--partitions', '1']);
    assert.equal(created.status, 0, created.stderr);
    for (const args of [
      ['--allow-principal', 'User:alice', '--producer', '--topic', 'named'],
      ['--allow-principal', 'User:alice', '--consumer', '--topic', 'named', '--group', 'named-g'],
      ['--allow-principal', 'User:*', '--operation', 'Describe', '--topic', 'named'],
    ]) {
      const r = await runSkiff(['acls', ...admin, '--add', ...args]);
      assert.equal(r.status, 0, r.stderr);
    }
  });
  after(async () => {
    await broker?.stop();
  });

  const kafkaJs = async (user: string): Promise<string> => {
    const kafka = new Kafka({
      clientId: `js-${user}`,
      brokers: [sasl],
      sasl: { mechanism: 'plain', username: user, password: `${user}-secret` },
      logLevel: logLevel.NOTHING,
    });
    const producer = kafka.producer({ retry: { retries: 0 }, allowAutoTopicCreation: false });
    try {
      await producer.connect();
      await producer.send({ topic: 'named', messages: [{ value: `js-${user}` }] });
      return 'ok';
    } catch (e) {
      return kafkaJsErrorType(e);
    } finally {
      await producer.disconnect();
    }
  };

  it('lets alice produce and consume by her ACLs and refuses bob, who has none but DESCRIBE', async () => {
    assert.equal(await kafkaJs('alice'), 'ok');
    assert.equal(await kafkaJs('bob'), 'TOPIC_AUTHORIZATION_FAILED');
    const bob = await runPython<{ error?: string }>(
      PYTHON_SASL,
      `${sasl}|bob|named`,
      'kafka',
      'python3-kafka',
    );
    assert.deepEqual(bob, { error: 'TopicAuthorizationFailedError' });
    const alice = await runPython<{ values?: string[] }>(
      PYTHON_SASL,
      `${sasl}|alice|named`,
      'kafka',
      'python3-kafka',
    );
    assert.deepEqual(alice, { values: ['alice-0', 'alice-1', 'js-alice'] });
  });
});
