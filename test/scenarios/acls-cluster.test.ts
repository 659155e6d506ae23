/**
 * ACLs on a 3-broker `skiff up` cluster: an ACL added through one broker is enforced by every
 * broker (each follows the metadata store), whichever leads the partition; and once the cluster
 * resource has ACLs, allow.everyone.if.no.acl.found no longer covers the brokers' own replica
 * fetches — the brokers' principal (User:ANONYMOUS on this PLAINTEXT cluster) needs CLUSTER_ACTION,
 * granted with the administrator's rights, for the ISR to stay whole (docs/acls.md).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import { ClientConnection } from '../../src/network/client-connection.js';
import { DescribeAclsRequestCodec } from '../../src/protocol/generated/DescribeAclsRequest.js';
import { DescribeAclsResponseCodec } from '../../src/protocol/generated/DescribeAclsResponse.js';
import { ApiKey } from '../../src/protocol/generated/index.js';
import { AclOperation, AclPermissionType, PatternType, ResourceType } from '../../src/security/acl.js';
import { ScenarioCluster } from './harness.js';

let cluster: ScenarioCluster;

before(async () => {
  cluster = await ScenarioCluster.start({
    name: 'acls',
    properties: [
      'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      'allow.everyone.if.no.acl.found=true',
    ],
    brokers: 3,
  });
  await cluster.createTopic('acl-x', { assignments: [[1, 2, 3]] });
  await cluster.createTopic('acl-y', { assignments: [[2, 3, 1]] });
});

after(async () => {
  await cluster?.close();
});

/** The DENY ACLs on topic acl-x as broker `id` answers DescribeAcls. */
async function denials(id: number): Promise<number> {
  const conn = await ClientConnection.connect('127.0.0.1', cluster.port + id - 1, { clientId: 'acl-check' });
  try {
    const r = await conn.send(
      ApiKey.DescribeAcls,
      3,
      DescribeAclsRequestCodec,
      {
        resourceTypeFilter: ResourceType.TOPIC,
        resourceNameFilter: 'acl-x',
        patternTypeFilter: PatternType.LITERAL,
        principalFilter: null,
        hostFilter: null,
        operation: AclOperation.ANY,
        permissionType: AclPermissionType.DENY,
      },
      DescribeAclsResponseCodec,
    );
    assert.equal(r.errorCode, 0, r.errorMessage ?? '');
    return r.resources.reduce((n, res) => n + res.acls.length, 0);
  } finally {
    conn.close();
  }
}

async function produce(topic: string, acks = -1): Promise<string> {
  const kafka = new Kafka({
    clientId: 'acl-scn',
    brokers: cluster.bootstrap.split(','),
    logLevel: logLevel.NOTHING,
  });
  const producer = kafka.producer({ retry: { retries: 0 }, allowAutoTopicCreation: false });
  await producer.connect();
  try {
    await producer.send({ topic, acks, messages: [{ value: 'v' }] });
    return 'ok';
  } catch (e) {
    // KafkaJS gathers the per-broker errors of a send into one.
    let x = e as { type?: string; errors?: unknown[]; cause?: unknown } | undefined;
    while (x !== undefined && typeof x.type !== 'string') x = (x.errors?.[0] ?? x.cause) as typeof x;
    return x?.type ?? (e as Error).message;
  } finally {
    await producer.disconnect();
  }
}

test('an ACL added through one broker is enforced by every broker; the brokers keep replicating with CLUSTER_ACTION', async () => {
  assert.equal((await cluster.partition('acl-x', 0)).leader, 1);
  const through = (id: number, args: string[]) =>
    cluster.skiff(['acls', '--bootstrap-server', `127.0.0.1:${cluster.port + id - 1}`, '--add', ...args]);
  // The administrator's rights, and the brokers' CLUSTER_ACTION, before the cluster has any ACL.
  const admin = await through(1, [
    '--allow-principal',
    'User:ANONYMOUS',
    '--operation',
    'Alter',
    '--operation',
    'Describe',
    '--operation',
    'ClusterAction',
    '--cluster',
  ]);
  assert.equal(admin.status, 0, admin.stderr);
  const deny = await through(3, [
    '--deny-principal',
    'User:ANONYMOUS',
    '--operation',
    'Write',
    '--topic',
    'acl-x',
  ]);
  assert.equal(deny.status, 0, deny.stderr);
  // Each broker follows the store's watch: wait for each to hold the DENY.
  for (const id of [1, 2, 3]) {
    let n = await denials(id);
    for (let i = 0; i < 100 && n === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      n = await denials(id);
    }
    assert.equal(n, 1, `broker ${id} never showed the DENY on acl-x`);
  }
  // acl-x is led by broker 1 (its first replica; checked before the DENY, which hides it from
  // allow.everyone), where the DENY was not added.
  assert.equal(await produce('acl-x'), 'TOPIC_AUTHORIZATION_FAILED');
  assert.equal(await produce('acl-y'), 'ok');
  await cluster.waitForIsr('acl-y', 0, [1, 2, 3], 20_000);
  // Without CLUSTER_ACTION the followers' fetches are refused: they fall out of the ISR, and come
  // back once it is granted again.
  const clusterAction = ['--allow-principal', 'User:ANONYMOUS', '--operation', 'ClusterAction', '--cluster'];
  const removed = await cluster.skiff([
    'acls',
    '--bootstrap-server',
    cluster.bootstrap,
    '--remove',
    '--force',
    ...clusterAction,
  ]);
  assert.equal(removed.status, 0, removed.stderr);
  // New records the followers cannot fetch (acks=1: the leader does not wait for them).
  assert.equal(await produce('acl-y', 1), 'ok');
  await cluster.waitForIsr('acl-y', 0, [2], 30_000);
  const readded = await through(2, clusterAction);
  assert.equal(readded.status, 0, readded.stderr);
  await cluster.waitForIsr('acl-y', 0, [1, 2, 3], 30_000);
});
