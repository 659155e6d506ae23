/**
 * `skiff reassign-partitions`: its JSON parsing and checks, Kafka's throttled-replica lists and
 * JSON output (pure functions), and the command against a single `skiff broker` — where a
 * reassignment may only name the replicas a partition has — with Kafka's lines and one-line errors.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  checkExecutablePlan,
  formatReassignmentJson,
  parseReassignmentJson,
  parseTopicsJson,
  proposedMoveMap,
  replicaMovesOf,
  throttledReplicaLists,
} from '../../src/cli/tools/reassign-plan.js';
import { type BrokerProcess, runSkiff, startBrokerProcess } from '../support/broker-process.js';
import { skiff } from './in-process.js';

describe('reassign-partitions JSON', () => {
  it('parses Kafka version-1 plans, log_dirs defaulting to any', () => {
    const plan = parseReassignmentJson(
      '{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[3,1]},{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/d1","any"]}]}',
    );
    assert.deepEqual(plan, [
      { topic: 't', partition: 1, replicas: [3, 1], logDirs: ['any', 'any'] },
      { topic: 't', partition: 0, replicas: [1, 2], logDirs: ['/d1', 'any'] },
    ]);
    assert.deepEqual(replicaMovesOf(plan), [{ topic: 't', partition: 0, broker: 1, logDir: '/d1' }]);
    assert.deepEqual(parseTopicsJson('{"topics":[{"topic":"a"},{"topic":"b"}],"version":1}'), ['a', 'b']);
  });

  it('refuses what Kafka refuses, each with one message', () => {
    const bad: [string, RegExp][] = [
      ['{"version":1,"partitions":[', /The input string is not a valid JSON/],
      ['{"version":2,"partitions":[]}', /Not supported version field value 2/],
      ['{"partitions":[{"partition":0,"replicas":[1]}]}', /"topic" must be a non-empty string/],
      ['{"partitions":[{"topic":"t","partition":-1,"replicas":[1]}]}', /"partition" must be/],
      ['{"partitions":[{"topic":"t","partition":0,"replicas":["1"]}]}', /"replicas" must be/],
      [
        '{"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}',
        /Size of replicas list \[1, 2\] is different from size of log dirs list \[any\] for partition t-0/,
      ],
    ];
    for (const [json, msg] of bad) assert.throws(() => parseReassignmentJson(json), msg, json);
    const check = (json: string) => () => checkExecutablePlan(parseReassignmentJson(json));
    assert.throws(check('{"partitions":[]}'), /Partition reassignment list cannot be empty/);
    assert.throws(
      check('{"partitions":[{"topic":"t","partition":0,"replicas":[]}]}'),
      /Partition replica list cannot be empty/,
    );
    assert.throws(
      check(
        '{"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}',
      ),
      /Partition reassignment contains duplicate topic partitions: t-0/,
    );
    assert.throws(
      check('{"partitions":[{"topic":"t","partition":0,"replicas":[1,2,1]}]}'),
      /Partition replica lists may not contain duplicate entries: t-0 contains multiple entries for 1/,
    );
    assert.throws(() => parseTopicsJson('{"topics":[{"name":"a"}]}'), /"topic" must be a non-empty string/);
  });

  it('formats plans as Kafka does: sorted by topic and partition, log_dirs beside replicas', () => {
    const json = formatReassignmentJson(
      new Map([
        ['b-0', { topic: 'b', partition: 0, replicas: [2] }],
        ['a-10', { topic: 'a', partition: 10, replicas: [1, 2] }],
        ['a-2', { topic: 'a', partition: 2, replicas: [3, 1] }],
      ]),
      [{ topic: 'a', partition: 2, broker: 1, logDir: '/d2' }],
    );
    assert.equal(
      json,
      '{"version":1,"partitions":[{"topic":"a","partition":2,"replicas":[3,1],"log_dirs":["any","/d2"]},{"topic":"a","partition":10,"replicas":[1,2],"log_dirs":["any","any"]},{"topic":"b","partition":0,"replicas":[2],"log_dirs":["any"]}]}',
    );
  });

  it("throttles Kafka's way: leader list = current replicas, follower list = new ones, moves in progress included", () => {
    const inProgress = new Map([
      ['u-0', { topic: 'u', partition: 0, replicas: [4, 1, 2], addingReplicas: [4], removingReplicas: [2] }],
    ]);
    const plan = parseReassignmentJson(
      '{"partitions":[{"topic":"t","partition":0,"replicas":[1,3]},{"topic":"t","partition":11,"replicas":[2,3]},{"topic":"u","partition":0,"replicas":[4,5]}]}',
    );
    const moves = proposedMoveMap(
      inProgress,
      plan,
      new Map([
        ['t-0', [1, 2]],
        ['t-11', [1, 2]],
        ['u-0', [4, 1, 2]],
      ]),
    );
    const { leader, follower } = throttledReplicaLists(moves);
    // Entries sort as strings, as Kafka's TreeSet<String> sorts them.
    assert.equal(leader.get('t'), '0:1,0:2,11:1,11:2');
    assert.equal(follower.get('t'), '0:3,11:3');
    // u-0 is moving already: its sources stay those of the move in progress (1, 2), not 4.
    assert.equal(leader.get('u'), '0:1,0:2');
    assert.equal(follower.get('u'), '0:4,0:5');
  });
});

describe('skiff reassign-partitions against one skiff broker', () => {
  let broker: BrokerProcess;
  let dir: string;
  const tool = (...args: string[]) =>
    skiff(['reassign-partitions', '--bootstrap-server', broker.bootstrap, ...args]);

  before(async () => {
    broker = await startBrokerProcess();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-reassign-cli-'));
    const c = await runSkiff([
      'topics',
      '--bootstrap-server',
      broker.bootstrap,
      '--create',
      '--topic',
      't',
      '--partitions',
      '2',
    ]);
    assert.equal(c.status, 0, c.stderr);
  });
  after(async () => {
    await broker?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a plan naming the current replicas executes and verifies; another one is refused with the broker message', async () => {
    const same = path.join(dir, 'same.json');
    fs.writeFileSync(same, '{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[1]}]}');
    const ex = await tool('--execute', '--reassignment-json-file', same);
    assert.equal(ex.status, 0, ex.stderr);
    assert.equal(
      ex.stdout,
      [
        'Current partition replica assignment',
        '',
        '{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[1],"log_dirs":["any"]}]}',
        '',
        'Save this to use as the --reassignment-json-file option during rollback',
        'Successfully started partition reassignment for t-1',
        '',
      ].join('\n'),
    );
    const v = await tool('--verify', '--reassignment-json-file', same, '--preserve-throttles');
    assert.equal(v.status, 0, v.stderr);
    assert.equal(
      v.stdout,
      'Status of partition reassignment:\nReassignment of partition t-1 is completed.\n\n',
    );
    const l = await tool('--list');
    assert.equal(l.stdout, 'No partition reassignments found.\n');

    const empty = path.join(dir, 'empty.json');
    fs.writeFileSync(empty, '{"version":1,"partitions":[]}');
    const e = await tool('--execute', '--reassignment-json-file', empty);
    assert.deepEqual(
      [e.status, e.stdout, e.stderr],
      [1, '', 'skiff reassign-partitions: Partition reassignment list cannot be empty\n'],
    );
    const missing = path.join(dir, 'missing.json');
    fs.writeFileSync(missing, '{"version":1,"partitions":[{"topic":"t","partition":7,"replicas":[1]}]}');
    const m = await tool('--execute', '--reassignment-json-file', missing);
    assert.deepEqual([m.status, m.stderr], [1, 'skiff reassign-partitions: Unable to find partition: t-7\n']);
    const none = await tool('--verify', '--reassignment-json-file', path.join(dir, 'nope.json'));
    assert.equal(none.status, 1);
    assert.match(none.stderr, /^skiff reassign-partitions: cannot read .*nope\.json \(ENOENT\)\n$/);
    const two = await tool('--list', '--verify');
    assert.equal(two.status, 2);
    assert.match(
      two.stderr,
      /Command must include exactly one action: --generate, --execute, --verify, --cancel, --list/,
    );
  });
});
