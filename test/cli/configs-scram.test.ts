/**
 * `skiff configs --entity-type users` for SCRAM credentials on a real `skiff broker`: kafka-configs'
 * --add-config 'SCRAM-SHA-256=[iterations=8192,password=...]' / --delete-config / --describe lines,
 * and Kafka's errors of AlterUserScramCredentials and DescribeUserScramCredentials on the wire.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { isScramAlteration, parseScramValue } from '../../src/cli/tools/configs-scram.js';
import { KafkaClient } from '../../src/client/kafka-client.js';
import { parseBootstrap, systemRuntime } from '../../src/client/runtime.js';
import { AlterUserScramCredentialsApi, describeUserScramCredentials } from '../../src/client/scram-admin.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import { credentialToString, makeScramCredential, parseAddScram } from '../../src/security/scram.js';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';
import { skiff } from './in-process.js';

describe('SCRAM credentials in skiff configs', () => {
  let broker: BrokerProcess;
  let bs: string[];
  before(async () => {
    broker = await startBrokerProcess([], undefined, undefined, [
      '--add-scram',
      'SCRAM-SHA-512=[name=admin,password=admin-secret,iterations=8192]',
    ]);
    bs = ['--bootstrap-server', broker.bootstrap];
  });
  /** `skiff configs --entity-type users` (with --entity-name when `user` is given) and `args`. */
  const users = (user: string | null, ...args: string[]) =>
    skiff([
      'configs',
      ...bs,
      ...args,
      '--entity-type',
      'users',
      ...(user === null ? [] : ['--entity-name', user]),
    ]);
  after(async () => {
    await broker?.stop();
  });

  it('creates the --add-scram admin at set-up', async () => {
    const r = await users('admin', '--describe');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(
      r.stdout,
      "SCRAM credential configs for user-principal 'admin' are SCRAM-SHA-512=iterations=8192\n",
    );
    assert.match(broker.output(), /created the SCRAM-SHA-512 credential of user admin/);
    assert.throws(
      () => parseAddScram('SCRAM-SHA-1=[name=a,password=b]', randomBytes),
      /unknown SCRAM mechanism/,
    );
    assert.throws(() => parseAddScram('SCRAM-SHA-256=[password=b]', randomBytes), /name is required/);
    assert.throws(
      () => parseAddScram('SCRAM-SHA-256=[name=a,password=b,iterations=99]', randomBytes),
      /between 4096 and 16384/,
    );
    const c = parseAddScram('SCRAM-SHA-256=[name="a,b",password="p=q",salt=c2FsdA==]', randomBytes);
    assert.deepEqual(c.user, 'a,b');
    assert.equal(
      c.stored,
      credentialToString(makeScramCredential('sha256', 'p=q', Buffer.from('salt'), 4096)),
    );
  });

  it("parses kafka-configs' SCRAM values and refuses what it refuses", () => {
    assert.deepEqual(parseScramValue('SCRAM-SHA-256', 'iterations=8192,password=a,b'), {
      iterations: 8192,
      password: 'a,b',
    });
    assert.deepEqual(parseScramValue('SCRAM-SHA-512', 'password=x'), { iterations: 4096, password: 'x' });
    assert.throws(
      () => parseScramValue('SCRAM-SHA-256', 'iterations=100,password=x'),
      /less than the minimum 4096/,
    );
    assert.throws(() => parseScramValue('SCRAM-SHA-256', 'pass=x'), /Invalid credential property/);
    const add = (k: string) => new Map([[k, 'password=x']]);
    assert.equal(isScramAlteration('users', 'alice', add('SCRAM-SHA-256'), []), true);
    assert.equal(isScramAlteration('users', 'alice', new Map([['producer_byte_rate', '1']]), []), false);
    assert.throws(() => isScramAlteration('users', '', add('SCRAM-SHA-256'), []), /--entity-default/);
    assert.throws(
      () => isScramAlteration('users', 'alice', add('SCRAM-SHA-256'), ['producer_byte_rate']),
      /Cannot alter both quota and SCRAM/,
    );
    assert.throws(
      () => isScramAlteration('users', 'alice', add('SCRAM-SHA-1'), []),
      /Unexpected config names: SCRAM-SHA-1/,
    );
    assert.throws(() => isScramAlteration('clients', 'c', add('SCRAM-SHA-256'), []), /Only quota configs/);
  });

  it('adds, describes and deletes credentials with Kafka lines', async () => {
    let r = await users(
      'alice',
      '--alter',
      '--add-config',
      'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]',
    );
    // As in Kafka: one request alters one credential per user (ScramControlManager).
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /A user credential cannot be altered twice in the same request/);
    for (const config of [
      'SCRAM-SHA-256=[iterations=8192,password=alice-secret]',
      'SCRAM-SHA-512=[password=alice-secret]',
    ]) {
      r = await users('alice', '--alter', '--add-config', config);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, 'Completed updating config for user alice.\n');
    }
    r = await users('alice', '--describe');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(
      r.stdout,
      "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n",
    );
    r = await users('alice', '--alter', '--delete-config', 'SCRAM-SHA-512');
    assert.equal(r.status, 0, r.stderr);
    r = await users(null, '--describe');
    assert.deepEqual(
      r.stdout
        .split('\n')
        .filter((l) => l !== '')
        .sort(),
      [
        "SCRAM credential configs for user-principal 'admin' are SCRAM-SHA-512=iterations=8192",
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192",
      ],
    );
    r = await users('alice', '--alter', '--delete-config', 'SCRAM-SHA-512');
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /Attempt to delete a user credential that does not exist/);
    r = await users('nobody', '--describe');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '', 'a user without credentials or quotas prints nothing, as kafka-configs');
  });

  it("answers the SCRAM APIs' errors as Kafka", async () => {
    const client = new KafkaClient({
      bootstrap: parseBootstrap(broker.bootstrap),
      clientId: 'scram-test',
      runtime: systemRuntime(),
    });
    try {
      const described = await describeUserScramCredentials(client, ['bob', 'bob', 'ghost']);
      assert.deepEqual(
        described.map((d) => [d.user, d.errorCode, d.errorMessage]),
        [
          // Kafka's HashMap order of the names.
          [
            'ghost',
            ErrorCode.RESOURCE_NOT_FOUND,
            'Attempt to describe a user credential that does not exist: ghost',
          ],
          [
            'bob',
            ErrorCode.DUPLICATE_RESOURCE,
            'Cannot describe SCRAM credentials for the same user twice in a single request: bob',
          ],
        ],
      );
      const salt = Buffer.from('salt');
      const pw = Buffer.alloc(32, 1);
      const resp = await client.send({ kind: 'any' }, AlterUserScramCredentialsApi, () => ({
        deletions: [
          { name: 'carol', mechanism: 1 },
          { name: 'dave', mechanism: 1 },
        ],
        upsertions: [
          { name: 'carol', mechanism: 1, iterations: 4096, salt, saltedPassword: pw },
          { name: '', mechanism: 1, iterations: 4096, salt, saltedPassword: pw },
          { name: 'erin', mechanism: 9, iterations: 4096, salt, saltedPassword: pw },
          { name: 'frank', mechanism: 2, iterations: 4095, salt, saltedPassword: pw },
          { name: 'gina', mechanism: 2, iterations: 16385, salt, saltedPassword: pw },
          { name: 'hank', mechanism: 2, iterations: 16384, salt, saltedPassword: Buffer.alloc(64, 2) },
        ],
      }));
      const byUser = new Map(resp.results.map((x) => [x.user, [x.errorCode, x.errorMessage]]));
      assert.deepEqual(Object.fromEntries(byUser), {
        hank: [0, null],
        carol: [ErrorCode.RESOURCE_NOT_FOUND, 'Attempt to delete a user credential that does not exist'],
        dave: [ErrorCode.RESOURCE_NOT_FOUND, 'Attempt to delete a user credential that does not exist'],
        '': [ErrorCode.UNACCEPTABLE_CREDENTIAL, 'Username must not be empty'],
        erin: [ErrorCode.UNSUPPORTED_SASL_MECHANISM, 'Unknown SCRAM mechanism'],
        frank: [ErrorCode.UNACCEPTABLE_CREDENTIAL, 'Too few iterations'],
        gina: [ErrorCode.UNACCEPTABLE_CREDENTIAL, 'Too many iterations'],
      });
      assert.equal(resp.results[0]?.user, 'hank', 'successes come before failures');
      const twice = await client.send({ kind: 'any' }, AlterUserScramCredentialsApi, () => ({
        deletions: [{ name: 'hank', mechanism: 2 }],
        upsertions: [{ name: 'hank', mechanism: 2, iterations: 4096, salt, saltedPassword: pw }],
      }));
      assert.deepEqual(
        twice.results.map((x) => [x.user, x.errorCode, x.errorMessage]),
        [
          [
            'hank',
            ErrorCode.DUPLICATE_RESOURCE,
            'A user credential cannot be altered twice in the same request',
          ],
        ],
      );
    } finally {
      client.close();
    }
  });
});
