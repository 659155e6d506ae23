/**
 * `skiff configs --entity-type users|clients`: client quotas through AlterClientQuotas /
 * DescribeClientQuotas on a real `skiff broker`, Kafka's lines ("Quota configs for user-principal
 * 'alice' are producer_byte_rate=1024.0", "Completed updating config for user alice."), and one
 * stderr line for what Kafka refuses. The store-backed path (through the controller) is covered in
 * test/cluster/replication-tools.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { formatQuotaEntry, javaDouble } from '../../src/cli/tools/configs-quotas.js';
import { quotaEntityComponents, quotaEntityKey } from '../../src/metadata/client-quotas.js';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';
import { skiff } from './in-process.js';

describe('client quotas in skiff configs', () => {
  let broker: BrokerProcess;
  let bs: string[];
  before(async () => {
    broker = await startBrokerProcess();
    bs = ['--bootstrap-server', broker.bootstrap];
  });
  after(async () => {
    await broker?.stop();
  });

  it("prints doubles and entities as Kafka's ConfigCommand does", () => {
    assert.deepEqual([1024, 1.5, 10485760, 0.0001, 200].map(javaDouble), [
      '1024.0',
      '1.5',
      '1.048576E7',
      '1.0E-4',
      '200.0',
    ]);
    assert.equal(
      formatQuotaEntry({
        entity: [{ entityType: 'user', entityName: null }],
        values: [
          { key: 'consumer_byte_rate', value: 2048 },
          { key: 'producer_byte_rate', value: 1024 },
        ],
      }),
      'Quota configs for the default user-principal are consumer_byte_rate=2048.0, producer_byte_rate=1024.0',
    );
    const key = quotaEntityKey([
      { entityType: 'client-id', entityName: 'app/1,x' },
      { entityType: 'user', entityName: 'CN=alice' },
    ]);
    assert.equal(key, 'user=CN%3Dalice,client-id=app%2F1%2Cx');
    assert.deepEqual(quotaEntityComponents(key as string), [
      { entityType: 'user', entityName: 'CN=alice' },
      { entityType: 'client-id', entityName: 'app/1,x' },
    ]);
    assert.deepEqual(quotaEntityKey([{ entityType: 'ip', entityName: 'x' }]), {
      error: 'Unhandled client quota entity type: ip',
    });
  });

  it('alters and describes user and client quotas with Kafka lines, default entities included', async () => {
    let r = await skiff([
      'configs',
      ...bs,
      '--alter',
      '--entity-type',
      'users',
      '--entity-name',
      'alice',
      '--add-config',
      'producer_byte_rate=1024,consumer_byte_rate=2048',
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, 'Completed updating config for user alice.\n');
    r = await skiff([
      'configs',
      ...bs,
      '--alter',
      '--entity-type',
      'users',
      '--entity-default',
      '--add-config',
      'request_percentage=200',
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, 'Completed updating default config for users in the cluster.\n');
    r = await skiff([
      'configs',
      ...bs,
      '--alter',
      '--entity-type',
      'clients',
      '--entity-name',
      'app-1',
      '--add-config',
      'producer_byte_rate=10485760',
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, 'Completed updating config for client app-1.\n');

    r = await skiff(['configs', ...bs, '--describe', '--entity-type', 'users', '--entity-name', 'alice']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(
      r.stdout,
      "Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0\n",
    );
    r = await skiff(['configs', ...bs, '--describe', '--entity-type', 'users', '--entity-default']);
    assert.equal(r.stdout, 'Quota configs for the default user-principal are request_percentage=200.0\n');
    r = await skiff(['configs', ...bs, '--describe', '--entity-type', 'clients']);
    assert.equal(r.stdout, "Quota configs for client-id 'app-1' are producer_byte_rate=1.048576E7\n");

    // Deleting one key keeps the others; deleting the last removes the entity.
    r = await skiff([
      'configs',
      ...bs,
      '--alter',
      '--entity-type',
      'users',
      '--entity-name',
      'alice',
      '--delete-config',
      'consumer_byte_rate',
    ]);
    assert.equal(r.status, 0, r.stderr);
    r = await skiff(['configs', ...bs, '--describe', '--entity-type', 'users', '--json']);
    assert.deepEqual(JSON.parse(r.stdout), [
      { entity: [{ type: 'user', name: 'alice' }], quotas: { producer_byte_rate: 1024 } },
    ]);
    r = await skiff([
      'configs',
      ...bs,
      '--alter',
      '--entity-type',
      'clients',
      '--entity-name',
      'app-1',
      '--delete-config',
      'producer_byte_rate',
    ]);
    assert.equal(r.status, 0, r.stderr);
    r = await skiff(['configs', ...bs, '--describe', '--entity-type', 'clients']);
    assert.equal(r.stdout, '');
  });

  it('refuses unknown quota keys and bad values with one line', async () => {
    for (const [args, re] of [
      [
        ['--add-config', 'bogus_rate=1'],
        /^skiff configs: Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server. Unexpected config names: bogus_rate$/,
      ],
      [['--add-config', 'producer_byte_rate=-5'], /^skiff configs: Invalid value -5 for producer_byte_rate/],
      [
        ['--add-config', 'producer_byte_rate=abc'],
        /^skiff configs: Invalid value abc for producer_byte_rate/,
      ],
    ] as const) {
      const r = await skiff([
        'configs',
        ...bs,
        '--alter',
        '--entity-type',
        'users',
        '--entity-name',
        'bob',
        ...args,
      ]);
      assert.notEqual(r.status, 0);
      assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
      assert.match(r.stderr.trimEnd(), re);
    }
    const ips = await skiff(['configs', ...bs, '--describe', '--entity-type', 'ips']);
    assert.equal(ips.status, 2);
    assert.match(ips.stderr, /entity type ips is not supported/);
  });
});
