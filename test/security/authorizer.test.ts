/**
 * The authorizer's decisions (Kafka's StandardAuthorizerData): LITERAL, PREFIXED and wildcard
 * resources, the `User:*` principal, hosts, DENY over ALLOW, the operations READ/WRITE/DELETE/ALTER
 * imply DESCRIBE (and ALTER_CONFIGS DESCRIBE_CONFIGS) for ALLOW only, super.users,
 * allow.everyone.if.no.acl.found, authorizeByResourceType; and the ACL filters.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AclRecord } from '../../src/metadata/acls.js';
import {
  type AclBindingFilter,
  filterMatches,
  invalidBinding,
  invalidFilter,
  AclOperation as Op,
  PatternType,
  AclPermissionType as Perm,
  ResourceType as RT,
} from '../../src/security/acl.js';
import { AclAuthorizer, authorizerConfigOf } from '../../src/security/authorizer.js';

const alice = { principal: 'User:alice', host: '10.0.0.1' };
const bob = { principal: 'User:bob', host: '10.0.0.2' };

function acl(
  resourceName: string,
  operation: number,
  permissionType: number = Perm.ALLOW,
  extra: Partial<AclRecord> = {},
): AclRecord {
  return {
    resourceType: RT.TOPIC,
    resourceName,
    patternType: PatternType.LITERAL,
    principal: 'User:alice',
    host: '*',
    operation,
    permissionType,
    ...extra,
  };
}

function authorizer(acls: AclRecord[], superUsers = '', allowEveryone = false): AclAuthorizer {
  const config = authorizerConfigOf('org.apache.kafka.metadata.authorizer.StandardAuthorizer', {
    superUsers,
    allowEveryone,
  })!;
  const map = new Map(acls.map((a, i) => [String(i), a]));
  return new AclAuthorizer(config, () => map);
}

describe('authorizer', () => {
  it('allows a LITERAL match only on its exact name, and nothing without an ACL', () => {
    const a = authorizer([acl('orders', Op.WRITE)]);
    assert.equal(a.authorize(alice, Op.WRITE, RT.TOPIC, 'orders'), true);
    assert.equal(a.authorize(alice, Op.WRITE, RT.TOPIC, 'orders2'), false);
    assert.equal(a.authorize(alice, Op.WRITE, RT.TOPIC, 'order'), false);
    assert.equal(a.authorize(alice, Op.READ, RT.TOPIC, 'orders'), false);
    assert.equal(a.authorize(bob, Op.WRITE, RT.TOPIC, 'orders'), false);
    assert.equal(a.authorize(alice, Op.WRITE, RT.GROUP, 'orders'), false);
  });

  it('matches PREFIXED patterns by prefix and the LITERAL * on every name', () => {
    const a = authorizer([
      acl('pay-', Op.READ, Perm.ALLOW, { patternType: PatternType.PREFIXED }),
      acl('*', Op.WRITE),
    ]);
    assert.equal(a.authorize(alice, Op.READ, RT.TOPIC, 'pay-eu'), true);
    assert.equal(a.authorize(alice, Op.READ, RT.TOPIC, 'pay-'), true);
    assert.equal(a.authorize(alice, Op.READ, RT.TOPIC, 'pa'), false);
    assert.equal(a.authorize(alice, Op.READ, RT.TOPIC, 'xpay-eu'), false);
    assert.equal(a.authorize(alice, Op.WRITE, RT.TOPIC, 'anything'), true);
    // Prefixes of several lengths: each one that the name starts with counts.
    const b = authorizer([
      acl('p', Op.READ, Perm.ALLOW, { patternType: PatternType.PREFIXED }),
      acl('pay-e', Op.READ, Perm.DENY, { patternType: PatternType.PREFIXED }),
    ]);
    assert.deepEqual(
      ['p', 'pay-us', 'pay-eu', 'pay-e', 'pay-', 'q'].map((n) => b.authorize(alice, Op.READ, RT.TOPIC, n)),
      [true, true, false, false, true, false],
    );
  });

  it('lets a DENY win over any ALLOW, whichever pattern carries either', () => {
    const a = authorizer([
      acl('*', Op.ALL),
      acl('pay-', Op.WRITE, Perm.DENY, { patternType: PatternType.PREFIXED }),
      acl('audit', Op.ALL, Perm.DENY),
    ]);
    assert.equal(a.authorize(alice, Op.WRITE, RT.TOPIC, 'pay-eu'), false);
    assert.equal(a.authorize(alice, Op.READ, RT.TOPIC, 'pay-eu'), true);
    assert.equal(a.authorize(alice, Op.READ, RT.TOPIC, 'audit'), false);
    assert.equal(a.authorize(alice, Op.DESCRIBE, RT.TOPIC, 'audit'), false);
    assert.equal(a.authorize(alice, Op.WRITE, RT.TOPIC, 'orders'), true);
  });

  it('implies DESCRIBE from READ/WRITE/DELETE/ALTER and DESCRIBE_CONFIGS from ALTER_CONFIGS, for ALLOW only', () => {
    for (const op of [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER]) {
      assert.equal(authorizer([acl('t', op)]).authorize(alice, Op.DESCRIBE, RT.TOPIC, 't'), true);
    }
    assert.equal(authorizer([acl('t', Op.CREATE)]).authorize(alice, Op.DESCRIBE, RT.TOPIC, 't'), false);
    assert.equal(
      authorizer([acl('t', Op.ALTER_CONFIGS)]).authorize(alice, Op.DESCRIBE_CONFIGS, RT.TOPIC, 't'),
      true,
    );
    assert.equal(authorizer([acl('t', Op.DESCRIBE)]).authorize(alice, Op.READ, RT.TOPIC, 't'), false);
    // A DENY of READ does not deny DESCRIBE.
    const a = authorizer([acl('t', Op.DESCRIBE), acl('t', Op.READ, Perm.DENY)]);
    assert.equal(a.authorize(alice, Op.DESCRIBE, RT.TOPIC, 't'), true);
    assert.equal(a.authorize(alice, Op.READ, RT.TOPIC, 't'), false);
  });

  it('matches User:* and hosts', () => {
    const a = authorizer([
      acl('t', Op.READ, Perm.ALLOW, { principal: 'User:*' }),
      acl('h', Op.READ, Perm.ALLOW, { host: '10.0.0.1' }),
    ]);
    assert.equal(a.authorize(bob, Op.READ, RT.TOPIC, 't'), true);
    assert.equal(a.authorize(alice, Op.READ, RT.TOPIC, 'h'), true);
    assert.equal(a.authorize({ ...alice, host: '10.0.0.9' }, Op.READ, RT.TOPIC, 'h'), false);
  });

  it('lets super.users do anything, DENY or not', () => {
    const a = authorizer([acl('t', Op.ALL, Perm.DENY, { principal: 'User:*' })], 'User:admin; User:ops');
    assert.equal(a.authorize({ principal: 'User:admin', host: '1.1.1.1' }, Op.WRITE, RT.TOPIC, 't'), true);
    assert.equal(
      a.authorize({ principal: 'User:ops', host: '1.1.1.1' }, Op.ALTER, RT.CLUSTER, 'kafka-cluster'),
      true,
    );
    assert.equal(a.authorize(alice, Op.WRITE, RT.TOPIC, 't'), false);
  });

  it('allows a resource without any ACL only under allow.everyone.if.no.acl.found', () => {
    const strict = authorizer([acl('t', Op.READ, Perm.ALLOW, { principal: 'User:bob' })]);
    const open = authorizer([acl('t', Op.READ, Perm.ALLOW, { principal: 'User:bob' })], '', true);
    assert.equal(strict.authorize(alice, Op.READ, RT.TOPIC, 'free'), false);
    assert.equal(open.authorize(alice, Op.READ, RT.TOPIC, 'free'), true);
    // The resource has an ACL (for bob): alice is not let in.
    assert.equal(open.authorize(alice, Op.READ, RT.TOPIC, 't'), false);
  });

  it('authorizes by resource type: an ALLOW somewhere that no DENY covers', () => {
    assert.equal(authorizer([acl('t', Op.WRITE)]).authorizeByResourceType(alice, Op.WRITE, RT.TOPIC), true);
    assert.equal(authorizer([acl('t', Op.READ)]).authorizeByResourceType(alice, Op.WRITE, RT.TOPIC), false);
    const covered = authorizer([
      acl('pay-eu', Op.WRITE),
      acl('pay-', Op.WRITE, Perm.DENY, { patternType: PatternType.PREFIXED }),
    ]);
    assert.equal(covered.authorizeByResourceType(alice, Op.WRITE, RT.TOPIC), false);
    assert.equal(
      authorizer([acl('*', Op.WRITE, Perm.DENY), acl('t', Op.WRITE)]).authorizeByResourceType(
        alice,
        Op.WRITE,
        RT.TOPIC,
      ),
      false,
    );
  });

  it('follows the ACLs it reads: a change in the map is seen by the next decision', () => {
    let map = new Map<string, AclRecord>();
    const a = new AclAuthorizer({ superUsers: new Set(), allowEveryoneIfNoAclFound: false }, () => map);
    assert.equal(a.authorize(alice, Op.READ, RT.TOPIC, 't'), false);
    map = new Map([['x', acl('t', Op.READ)]]);
    assert.equal(a.authorize(alice, Op.READ, RT.TOPIC, 't'), true);
  });

  it('lists the operations authorized on a resource', () => {
    const a = authorizer([acl('t', Op.WRITE), acl('t', Op.ALTER_CONFIGS)]);
    assert.deepEqual(a.authorizedOperations(alice, RT.TOPIC, 't'), [
      Op.WRITE,
      Op.DESCRIBE,
      Op.DESCRIBE_CONFIGS,
      Op.ALTER_CONFIGS,
    ]);
  });

  it('turns on for the two Kafka class names only', () => {
    assert.equal(authorizerConfigOf('', { superUsers: '', allowEveryone: false }), null);
    assert.ok(
      authorizerConfigOf('kafka.security.authorizer.AclAuthorizer', { superUsers: '', allowEveryone: false }),
    );
    assert.throws(
      () => authorizerConfigOf('com.example.MyAuthorizer', { superUsers: '', allowEveryone: false }),
      /authorizer\.class\.name: Skiff provides only its own ACL authorizer/,
    );
  });
});

describe('ACL filters and bindings', () => {
  const any: AclBindingFilter = {
    resourceType: RT.ANY,
    resourceName: null,
    patternType: PatternType.ANY,
    principal: null,
    host: null,
    operation: Op.ANY,
    permissionType: Perm.ANY,
  };

  it('matches as ResourcePatternFilter and AccessControlEntryFilter', () => {
    const lit = acl('pay-eu', Op.WRITE);
    const pre = acl('pay-', Op.WRITE, Perm.ALLOW, { patternType: PatternType.PREFIXED });
    const star = acl('*', Op.READ);
    assert.equal(filterMatches(any, lit), true);
    const match = { ...any, resourceType: RT.TOPIC, resourceName: 'pay-eu', patternType: PatternType.MATCH };
    assert.deepEqual(
      [lit, pre, star, acl('pay-us', Op.WRITE)].map((b) => filterMatches(match, b)),
      [true, true, true, false],
    );
    const exact = { ...any, resourceName: 'pay-', patternType: PatternType.ANY };
    assert.deepEqual(
      [lit, pre].map((b) => filterMatches(exact, b)),
      [false, true],
    );
    assert.equal(filterMatches({ ...any, patternType: PatternType.LITERAL }, pre), false);
    assert.equal(filterMatches({ ...any, principal: 'User:bob' }, lit), false);
    assert.equal(filterMatches({ ...any, operation: Op.READ }, lit), false);
    assert.equal(filterMatches({ ...any, permissionType: Perm.DENY }, lit), false);
  });

  it('refuses bindings and filters Kafka refuses', () => {
    assert.equal(invalidBinding(acl('t', Op.READ)), null);
    assert.match(invalidBinding(acl('t', Op.ANY)) ?? '', /Invalid operation ANY/);
    assert.match(invalidBinding(acl('t', Op.READ, Perm.ANY)) ?? '', /Invalid permissionType ANY/);
    assert.match(
      invalidBinding(acl('t', Op.READ, Perm.ALLOW, { patternType: PatternType.MATCH })) ?? '',
      /patternType MATCH/,
    );
    assert.match(invalidBinding(acl('', Op.READ)) ?? '', /Resource name should not be empty/);
    assert.match(
      invalidBinding(acl('x', Op.ALTER, Perm.ALLOW, { resourceType: RT.CLUSTER })) ?? '',
      /kafka-cluster/,
    );
    assert.match(invalidBinding(acl('t', Op.READ, Perm.ALLOW, { principal: 'alice' })) ?? '', /principal/);
    assert.equal(invalidFilter(any), null);
    assert.match(invalidFilter({ ...any, patternType: PatternType.UNKNOWN }) ?? '', /Unknown patternFilter/);
    assert.match(invalidFilter({ ...any, operation: Op.UNKNOWN }) ?? '', /Unknown entryFilter/);
  });
});
