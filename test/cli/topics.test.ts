/**
 * `skiff topics` against a real `skiff broker` child process: Kafka's exact lines for create,
 * list, describe (and its report filters), alter and delete, and one stderr line with a non-zero
 * exit for each error path.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type BrokerProcess, runSkiff, startBrokerProcess } from '../support/broker-process.js';
import { skiff } from './in-process.js';

describe('skiff topics', () => {
  let broker: BrokerProcess;
  const topics = (...args: string[]) => skiff(['topics', '--bootstrap-server', broker.bootstrap, ...args]);

  before(async () => {
    broker = await startBrokerProcess();
  });
  after(async () => {
    await broker?.stop();
  });

  it('creates, lists, describes, alters and deletes with Kafka lines', async () => {
    let r = await topics('--create', '--topic', 'orders', '--partitions', '2', '--replication-factor', '1');
    assert.deepEqual([r.status, r.stdout, r.stderr], [0, 'Created topic orders.\n', '']);

    r = await topics('--create', '--topic', 'd1.rebuild', '--replica-assignment', '1');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(
      r.stdout,
      "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide. To avoid issues it is best to use either, but not both.\nCreated topic d1.rebuild.\n",
    );

    r = await topics('--list');
    assert.deepEqual([r.status, r.stdout], [0, 'd1.rebuild\norders\n']);
    r = await topics('--list', '--json');
    assert.deepEqual(JSON.parse(r.stdout), ['d1.rebuild', 'orders']);

    r = await topics('--describe', '--topic', 'orders');
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.split('\n');
    assert.match(
      lines[0]!,
      /^Topic: orders\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: /,
    );
    assert.deepEqual(lines.slice(1), [
      '\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: ',
      '\tTopic: orders\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: ',
      '',
    ]);

    // Nothing is under-replicated or unavailable on a healthy single broker.
    r = await topics('--describe', '--under-replicated-partitions');
    assert.deepEqual([r.status, r.stdout], [0, '']);
    r = await topics('--describe', '--unavailable-partitions');
    assert.deepEqual([r.status, r.stdout], [0, '']);

    r = await topics('--alter', '--topic', 'orders', '--partitions', '3');
    assert.deepEqual([r.status, r.stdout, r.stderr], [0, '', '']);
    r = await topics('--describe', '--topic', 'orders', '--json');
    const [desc] = JSON.parse(r.stdout) as { partitionCount: number }[];
    assert.equal(desc?.partitionCount, 3);

    r = await topics('--create', '--topic', 'orders', '--if-not-exists');
    assert.deepEqual([r.status, r.stdout, r.stderr], [0, '', '']);

    r = await topics('--delete', '--topic', 'orders');
    assert.deepEqual([r.status, r.stderr], [0, '']);
    r = await topics('--delete', '--topic', 'orders', '--if-exists');
    assert.deepEqual([r.status, r.stderr], [0, '']);
    r = await topics('--list');
    assert.equal(r.stdout, 'd1.rebuild\n');
  });

  it('gives one stderr line and a non-zero exit for each error', async () => {
    assert.equal((await topics('--create', '--topic', 'keep')).status, 0);
    const cases: [string[], number, RegExp][] = [
      [['--describe', '--topic', 'nope'], 1, /^skiff topics: Topic 'nope' does not exist as expected$/],
      [['--delete', '--topic', 'nope'], 1, /^skiff topics: Topic 'nope' does not exist as expected$/],
      [['--create', '--topic', 'keep'], 1, /^skiff topics: Topic 'keep' already exists/],
      [['--lisst'], 2, /^skiff topics: unknown option '--lisst'/],
      [['--list', '--describe'], 2, /exactly one action/],
      [['--create', '--topic', 'x', '--partitions', 'two'], 2, /--partitions expects an integer/],
      [['--create', '--topic', 'x', '--config', 'a=b=c'], 2, /Invalid topic config/],
      [['--create', '--topic', 'x', '--replica-assignment', '1:1'], 2, /duplicate entries: 1/],
    ];
    for (const [args, status, line] of cases) {
      const r = await topics(...args);
      assert.equal(r.status, status, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, '', args.join(' '));
      assert.equal(r.stderr.split('\n').length, 2, `one line for ${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr.trimEnd(), line);
    }
    const missing = await runSkiff(['topics', '--bootstrap-server', '127.0.0.1:1', '--list']);
    assert.deepEqual(
      [missing.status, missing.stderr],
      [1, 'skiff topics: cannot connect to 127.0.0.1:1 (connection refused)\n'],
    );
    const noBootstrap = await runSkiff(['topics', '--list']);
    assert.equal(noBootstrap.status, 2);
    assert.match(noBootstrap.stderr, /^skiff topics: missing required argument --bootstrap-server/);
    const help = await runSkiff(['topics', '--help']);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /--under-min-isr-partitions/);
  });
});
