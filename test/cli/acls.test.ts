/**
 * `skiff acls`' checks of its command line, as kafka-acls.sh's (each a usage error, exit 2, before
 * any connection), and the ACLs its shortcuts make.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ACLS, entryText, parseOperation, patternText, resourceAcls } from '../../src/cli/tools/acls.js';
import { parseFlags } from '../../src/cli/tools/common.js';
import { AclOperation, PatternType } from '../../src/security/acl.js';
import { skiff } from './in-process.js';

const BS = ['--bootstrap-server', '127.0.0.1:1'];

describe('skiff acls: the command line', () => {
  for (const [args, message] of [
    [['--topic', 't'], 'Command must include exactly one action: --list, --add, --remove. '],
    [
      ['--add', '--list', '--topic', 't'],
      'Command must include exactly one action: --list, --add, --remove. ',
    ],
    [['--add', '--producer', '--allow-principal', 'User:a'], 'With --producer you must specify a --topic'],
    [
      ['--add', '--allow-principal', 'User:a', '--topic', 't', '--resource-pattern-type', 'any'],
      "A '--resource-pattern-type' value of 'ANY' is not valid when adding acls.",
    ],
    [
      ['--add', '--topic', 't'],
      'You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.',
    ],
    [
      ['--add', '--allow-principal', 'User:a'],
      'You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --delegation-token <Delegation Token ID>',
    ],
    [
      ['--add', '--allow-principal', 'User:a', '--operation', 'IdempotentWrite', '--topic', 't'],
      'ResourceType TOPIC only supports operations Read, Write, Create, Describe, Delete, Alter, DescribeConfigs, AlterConfigs, All',
    ],
    [
      ['--add', '--allow-principal', 'User:a', '--operation', 'Fly', '--topic', 't'],
      'Unknown operation: Fly',
    ],
    [
      ['--add', '--allow-principal', 'alice', '--topic', 't'],
      'Principal must be of the form Type:name, got "alice"',
    ],
    [
      ['--list', '--allow-principal', 'User:a'],
      'Option "[list]" can\'t be used with option "[allow-principal]"',
    ],
    [
      ['--add', '--idempotent', '--allow-principal', 'User:a', '--cluster'],
      'The --idempotent option is only available if --producer is set',
    ],
    [
      ['--add', '--consumer', '--allow-principal', 'User:a', '--topic', 't'],
      'With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified.',
    ],
  ] as const) {
    it(`refuses ${args.join(' ')}`, async () => {
      const r = await skiff(['acls', ...BS, ...args]);
      assert.equal(r.status, 2);
      assert.equal(r.stderr, `skiff acls: ${message} (see skiff acls --help)\n`);
    });
  }

  it('makes the ACLs of --producer --idempotent and --consumer, and reads operation names as Kafka', () => {
    const flags = parseFlags(ACLS, [
      ...BS,
      '--add',
      '--allow-principal',
      'User:a',
      '--allow-host',
      '10.0.0.1',
      '--producer',
      '--idempotent',
      '--consumer',
      '--topic',
      't',
      '--group',
      'g',
      '--transactional-id',
      'x',
    ])!;
    assert.deepEqual(
      resourceAcls(flags, PatternType.LITERAL).map(([p, es]) => [patternText(p), es.map(entryText)]),
      [
        [
          'ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)',
          ['WRITE', 'DESCRIBE', 'CREATE', 'READ'].map(
            (op) => `(principal=User:a, host=10.0.0.1, operation=${op}, permissionType=ALLOW)`,
          ),
        ],
        [
          'ResourcePattern(resourceType=TRANSACTIONAL_ID, name=x, patternType=LITERAL)',
          ['WRITE', 'DESCRIBE'].map(
            (op) => `(principal=User:a, host=10.0.0.1, operation=${op}, permissionType=ALLOW)`,
          ),
        ],
        [
          'ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)',
          ['(principal=User:a, host=10.0.0.1, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)'],
        ],
        [
          'ResourcePattern(resourceType=GROUP, name=g, patternType=LITERAL)',
          ['(principal=User:a, host=10.0.0.1, operation=READ, permissionType=ALLOW)'],
        ],
      ],
    );
    assert.equal(parseOperation('IdempotentWrite'), AclOperation.IDEMPOTENT_WRITE);
    assert.equal(parseOperation('describe-configs'), AclOperation.DESCRIBE_CONFIGS);
    assert.equal(parseOperation('CLUSTER_ACTION'), AclOperation.CLUSTER_ACTION);
  });
});
