/**
 * ACLs on a running broker over the wire: CreateAcls / DescribeAcls / DeleteAcls with Kafka's
 * errors (SECURITY_DISABLED without an authorizer, CLUSTER_AUTHORIZATION_FAILED without ALTER or
 * DESCRIBE on the cluster, INVALID_REQUEST for a bad binding or filter); Metadata hiding what the
 * principal may not DESCRIBE; Produce refused per topic with nothing written; the authorized
 * operations of Metadata and DescribeCluster; the ACLs kept in the metadata store across a restart.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { AclRecord } from '../../src/metadata/acls.js';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { CreateAclsResponse } from '../../src/protocol/generated/CreateAclsResponse.js';
import type { CreateTopicsResponse } from '../../src/protocol/generated/CreateTopicsResponse.js';
import type { DeleteAclsResponse } from '../../src/protocol/generated/DeleteAclsResponse.js';
import type { DescribeAclsRequest } from '../../src/protocol/generated/DescribeAclsRequest.js';
import type { DescribeAclsResponse } from '../../src/protocol/generated/DescribeAclsResponse.js';
import type { DescribeClusterResponse } from '../../src/protocol/generated/DescribeClusterResponse.js';
import type { DescribeGroupsResponse } from '../../src/protocol/generated/DescribeGroupsResponse.js';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import {
  defaultFetchPartition,
  defaultFetchRequest,
  defaultFetchTopic,
} from '../../src/protocol/generated/FetchRequest.js';
import type { FetchResponse } from '../../src/protocol/generated/FetchResponse.js';
import { ApiKey } from '../../src/protocol/generated/index.js';
import type { ListOffsetsResponse } from '../../src/protocol/generated/ListOffsetsResponse.js';
import { defaultMetadataRequest } from '../../src/protocol/generated/MetadataRequest.js';
import type { MetadataResponse } from '../../src/protocol/generated/MetadataResponse.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import {
  AclOperation as Op,
  PatternType,
  AclPermissionType as Perm,
  ResourceType as RT,
} from '../../src/security/acl.js';
import { batch, startBroker, type TestBroker } from './helpers.js';

const AUTHORIZER = { 'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer' };
const ANY_FILTER: DescribeAclsRequest = {
  resourceTypeFilter: RT.ANY,
  resourceNameFilter: null,
  patternTypeFilter: PatternType.ANY,
  principalFilter: null,
  hostFilter: null,
  operation: Op.ANY,
  permissionType: Perm.ANY,
};

function allow(resourceType: number, resourceName: string, operation: number): AclRecord {
  return {
    resourceType,
    resourceName,
    patternType: PatternType.LITERAL,
    principal: 'User:ANONYMOUS',
    host: '*',
    operation,
    permissionType: Perm.ALLOW,
  };
}

const describeAcls = (b: TestBroker, c: ClientConnection, filter = ANY_FILTER) =>
  b.call<DescribeAclsResponse>(c, ApiKey.DescribeAcls, 3, filter);

const produce = (b: TestBroker, c: ClientConnection, topic: string) =>
  b.call<ProduceResponse>(c, ApiKey.Produce, 9, {
    transactionalId: null,
    acks: 1,
    timeoutMs: 5000,
    topicData: [{ name: topic, partitionData: [{ index: 0, records: batch(2) }] }],
  });

/** Topics are created through the controller directly: the principal may not CREATE. */
async function createTopics(b: TestBroker, names: string[]): Promise<void> {
  const r = await b.metadata.controller.createTopics(
    names.map((name) => ({ name, numPartitions: 1, replicationFactor: 1, configs: {} })),
    false,
  );
  for (const t of r) assert.equal(t.errorCode, 0, t.errorMessage ?? '');
}

/** Every operation Kafka lists for the cluster, as its 32-bit field. */
const CLUSTER_OPS_FIELD = [
  Op.CREATE,
  Op.CLUSTER_ACTION,
  Op.DESCRIBE_CONFIGS,
  Op.ALTER_CONFIGS,
  Op.IDEMPOTENT_WRITE,
  Op.ALTER,
  Op.DESCRIBE,
].reduce((f, op) => f | (1 << op), 0);

describe('ACL APIs without an authorizer', () => {
  let b: TestBroker;
  after(async () => b?.stop());

  it('answers SECURITY_DISABLED and lists every operation as authorized', async () => {
    b = await startBroker();
    const c = await b.connect();
    const d = await describeAcls(b, c);
    assert.equal(d.errorCode, ErrorCode.SECURITY_DISABLED);
    const cr = await b.call<CreateAclsResponse>(c, ApiKey.CreateAcls, 3, {
      creations: [{ ...allow(RT.TOPIC, 't', Op.READ), resourcePatternType: PatternType.LITERAL }],
    });
    assert.deepEqual(
      cr.results.map((r) => r.errorCode),
      [ErrorCode.SECURITY_DISABLED],
    );
    const dl = await b.call<DeleteAclsResponse>(c, ApiKey.DeleteAcls, 3, { filters: [ANY_FILTER] });
    assert.equal(dl.filterResults[0]!.errorCode, ErrorCode.SECURITY_DISABLED);
    const md = await b.call<MetadataResponse>(c, ApiKey.Metadata, 10, {
      ...defaultMetadataRequest(),
      topics: [],
      includeClusterAuthorizedOperations: true,
    });
    assert.equal(md.clusterAuthorizedOperations, CLUSTER_OPS_FIELD);
    const dc = await b.call<DescribeClusterResponse>(c, ApiKey.DescribeCluster, 1, {
      includeClusterAuthorizedOperations: true,
      endpointType: 1,
    });
    assert.equal(dc.clusterAuthorizedOperations, CLUSTER_OPS_FIELD);
  });
});

describe('ACL APIs with the authorizer on', () => {
  let b: TestBroker | undefined;
  after(async () => b?.stop());

  it('refuses, creates, describes and deletes ACLs as Kafka, enforces them, and keeps them across a restart', async () => {
    b = await startBroker(AUTHORIZER);
    let c = await b.connect();
    // Nobody may manage ACLs yet.
    assert.equal((await describeAcls(b, c)).errorCode, ErrorCode.CLUSTER_AUTHORIZATION_FAILED);
    const refused = await b.call<CreateAclsResponse>(c, ApiKey.CreateAcls, 3, {
      creations: [{ ...allow(RT.TOPIC, 't', Op.READ), resourcePatternType: PatternType.LITERAL }],
    });
    assert.equal(refused.results[0]!.errorCode, ErrorCode.CLUSTER_AUTHORIZATION_FAILED);

    // The bootstrap admin rights, written as the controller writes any ACL.
    await b.metadata.controller.createAcls([allow(RT.CLUSTER, 'kafka-cluster', Op.ALTER)]);
    await createTopics(b, ['visible', 'hidden']);
    const cr = await b.call<CreateAclsResponse>(c, ApiKey.CreateAcls, 3, {
      creations: [
        { ...allow(RT.TOPIC, 'visible', Op.WRITE), resourcePatternType: PatternType.LITERAL },
        { ...allow(RT.TOPIC, '', Op.WRITE), resourcePatternType: PatternType.LITERAL },
        { ...allow(RT.TOPIC, 'x', Op.ANY), resourcePatternType: PatternType.LITERAL },
        { ...allow(RT.TOPIC, 'visible', Op.WRITE), resourcePatternType: PatternType.LITERAL },
      ],
    });
    assert.deepEqual(
      cr.results.map((r) => [r.errorCode, r.errorMessage]),
      [
        [0, null],
        [ErrorCode.INVALID_REQUEST, 'Resource name should not be empty'],
        [ErrorCode.INVALID_REQUEST, 'Invalid operation ANY'],
        [0, null],
      ],
    );
    const listed = await describeAcls(b, c);
    assert.equal(listed.errorCode, 0);
    assert.deepEqual(
      listed.resources.map((r) => [r.resourceType, r.resourceName, r.acls.map((a) => a.operation)]),
      [
        [RT.TOPIC, 'visible', [Op.WRITE]],
        [RT.CLUSTER, 'kafka-cluster', [Op.ALTER]],
      ],
    );
    // More than Kafka's controller takes in one operation: nothing is created.
    const tooMany = await b.call<CreateAclsResponse>(c, ApiKey.CreateAcls, 3, {
      creations: Array.from({ length: 10_001 }, (_, i) => ({
        ...allow(RT.TOPIC, `many-${i}`, Op.READ),
        resourcePatternType: PatternType.LITERAL,
      })),
    });
    assert.deepEqual(
      new Set(tooMany.results.map((r) => r.errorCode)),
      new Set([ErrorCode.UNKNOWN_SERVER_ERROR]),
    );
    assert.equal(b.metadata.image().acls?.size, 2);
    const bad = await describeAcls(b, c, { ...ANY_FILTER, patternTypeFilter: PatternType.UNKNOWN });
    assert.equal(bad.errorCode, ErrorCode.INVALID_REQUEST);

    // Metadata shows only what may be described (WRITE implies DESCRIBE).
    const all = await b.call<MetadataResponse>(c, ApiKey.Metadata, 12, {
      ...defaultMetadataRequest(),
      topics: null,
      includeTopicAuthorizedOperations: true,
    });
    assert.deepEqual(
      all.topics.map((t) => t.name),
      ['visible'],
    );
    assert.equal(all.topics[0]!.topicAuthorizedOperations, (1 << Op.WRITE) | (1 << Op.DESCRIBE));
    const named = await b.call<MetadataResponse>(c, ApiKey.Metadata, 12, {
      ...defaultMetadataRequest(),
      topics: [{ name: 'hidden', topicId: 'AAAAAAAAAAAAAAAAAAAAAA' }],
      allowAutoTopicCreation: false,
    });
    assert.equal(named.topics[0]!.errorCode, ErrorCode.TOPIC_AUTHORIZATION_FAILED);

    // Produce: the refused topic fails alone and nothing is written to it.
    assert.equal((await produce(b, c, 'visible')).responses[0]!.partitionResponses[0]!.errorCode, 0);
    const denied = await produce(b, c, 'hidden');
    assert.equal(denied.responses[0]!.partitionResponses[0]!.errorCode, ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    assert.equal(b.broker.replicaManager.getPartition('hidden', 0)!.log.logEndOffset, 0n);

    // DeleteAcls answers what each filter matched; the binding is gone for the next request.
    const dl = await b.call<DeleteAclsResponse>(c, ApiKey.DeleteAcls, 3, {
      filters: [{ ...ANY_FILTER, resourceTypeFilter: RT.TOPIC, resourceNameFilter: 'visible' }],
    });
    assert.deepEqual(
      dl.filterResults.map((f) => f.matchingAcls.map((a) => [a.resourceName, a.operation, a.errorCode])),
      [[['visible', Op.WRITE, 0]]],
    );
    assert.equal(
      (await produce(b, c, 'visible')).responses[0]!.partitionResponses[0]!.errorCode,
      ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    );
    // Without an ACL left on it, not even its offsets may be described.
    const offsets = await b.call<ListOffsetsResponse>(c, ApiKey.ListOffsets, 7, {
      replicaId: -1,
      isolationLevel: 0,
      timeoutMs: 0,
      topics: [
        {
          name: 'visible',
          partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n, maxNumOffsets: 1 }],
        },
      ],
    });
    assert.equal(offsets.topics[0]!.partitions[0]!.errorCode, ErrorCode.TOPIC_AUTHORIZATION_FAILED);

    // The store keeps them: a restarted broker enforces the same ACLs.
    const dir = b.dir;
    await b.stop();
    b = await startBroker(AUTHORIZER, dir);
    c = await b.connect();
    const again = await describeAcls(b, c);
    assert.deepEqual(
      again.resources.map((r) => [r.resourceType, r.resourceName]),
      [[RT.CLUSTER, 'kafka-cluster']],
    );
    assert.equal(
      (await produce(b, c, 'hidden')).responses[0]!.partitionResponses[0]!.errorCode,
      ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    );
  });
});

describe('authorization of replicas and groups', () => {
  let b: TestBroker | undefined;
  after(async () => b?.stop());

  it("refuses a replica's Fetch without CLUSTER_ACTION and reports a group's authorized operations", async () => {
    b = await startBroker({ ...AUTHORIZER, 'offsets.topic.replication.factor': '1' });
    const c = await b.connect();
    await createTopics(b, ['r']);
    const replicaFetch = () =>
      b!.call<FetchResponse>(c, ApiKey.Fetch, 12, {
        ...defaultFetchRequest(),
        replicaId: 2,
        topics: [
          { ...defaultFetchTopic(), topic: 'r', partitions: [{ ...defaultFetchPartition(), partition: 0 }] },
        ],
      });
    const refused = await replicaFetch();
    assert.equal(refused.responses[0]!.partitions[0]!.errorCode, ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    await b.metadata.controller.createAcls([
      allow(RT.CLUSTER, 'kafka-cluster', Op.CLUSTER_ACTION),
      allow(RT.GROUP, 'g', Op.READ),
    ]);
    const allowed = await replicaFetch();
    assert.notEqual(allowed.responses[0]!.partitions[0]!.errorCode, ErrorCode.TOPIC_AUTHORIZATION_FAILED);

    // The group's coordinator is ready once __consumer_offsets is: FindCoordinator creates it.
    const describe = () =>
      b!.call<DescribeGroupsResponse>(c, ApiKey.DescribeGroups, 5, {
        groups: ['g', 'other'],
        includeAuthorizedOperations: true,
      });
    await b.call(c, ApiKey.FindCoordinator, 3, { key: 'g', keyType: 0, coordinatorKeys: [] });
    let groups = await describe();
    for (let i = 0; i < 100 && groups.groups[1]?.errorCode !== 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      groups = await describe();
    }
    assert.deepEqual(
      groups.groups.map((g) => [g.groupId, g.errorCode, g.authorizedOperations]),
      [
        ['other', ErrorCode.GROUP_AUTHORIZATION_FAILED, -2147483648],
        ['g', 0, (1 << Op.READ) | (1 << Op.DESCRIBE)],
      ],
    );
  });
});

describe('CreateTopics with CREATE but not DESCRIBE_CONFIGS on the topic', () => {
  let b: TestBroker | undefined;
  after(async () => b?.stop());

  it("creates it and answers, as Kafka's controller, no configs, partition count or replication factor", async () => {
    b = await startBroker(AUTHORIZER);
    const c = await b.connect();
    await b.metadata.controller.createAcls([
      allow(RT.TOPIC, 'blind', Op.CREATE),
      allow(RT.TOPIC, 'seen', Op.CREATE),
      allow(RT.TOPIC, 'seen', Op.DESCRIBE_CONFIGS),
    ]);
    const r = await b.call<CreateTopicsResponse>(c, ApiKey.CreateTopics, 7, {
      timeoutMs: 5000,
      validateOnly: false,
      topics: ['blind', 'seen'].map((name) => ({
        name,
        numPartitions: 2,
        replicationFactor: 1,
        assignments: [],
        configs: [],
      })),
    });
    const [blind, seen] = r.topics;
    assert.deepEqual(
      [
        blind!.errorCode,
        blind!.topicConfigErrorCode,
        blind!.numPartitions,
        blind!.replicationFactor,
        blind!.configs,
      ],
      [0, ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1, []],
    );
    assert.notEqual(blind!.topicId, 'AAAAAAAAAAAAAAAAAAAAAA');
    assert.deepEqual(
      [seen!.errorCode, seen!.topicConfigErrorCode, seen!.numPartitions, seen!.replicationFactor],
      [0, 0, 2, 1],
    );
    assert.ok(seen!.configs?.some((x) => x.name === 'cleanup.policy' && x.value === 'delete'));
    assert.equal(b.metadata.image().topics.get('blind')?.partitions.length, 2);
  });
});
