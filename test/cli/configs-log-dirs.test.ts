/**
 * `skiff configs` and `skiff log-dirs` against a scripted peer (test/cli/fake-broker.ts): the
 * broker does not serve DescribeConfigs, IncrementalAlterConfigs or DescribeLogDirs yet, so these
 * tests check the requests the tools build and Kafka's output lines for constructed responses.
 * Against the real broker they run describe/alter/delete end to end where it serves the APIs, and
 * check the one-line "does not support" error where it does not.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runConfigs } from '../../src/cli/tools/configs.js';
import { runLogDirs } from '../../src/cli/tools/log-dirs.js';
import type { DescribeConfigsRequest } from '../../src/protocol/generated/DescribeConfigsRequest.js';
import type { DescribeConfigsResponse } from '../../src/protocol/generated/DescribeConfigsResponse.js';
import type { DescribeLogDirsRequest } from '../../src/protocol/generated/DescribeLogDirsRequest.js';
import type { DescribeLogDirsResponse } from '../../src/protocol/generated/DescribeLogDirsResponse.js';
import type { IncrementalAlterConfigsRequest } from '../../src/protocol/generated/IncrementalAlterConfigsRequest.js';
import type { IncrementalAlterConfigsResponse } from '../../src/protocol/generated/IncrementalAlterConfigsResponse.js';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';
import { type FakeBroker, type Handler, startFakeBroker } from './fake-broker.js';
import { skiff } from './in-process.js';

function lastRequest(fake: FakeBroker, apiKey: number): unknown {
  const all = fake.requests.filter((r) => r.apiKey === apiKey);
  assert.ok(all.length > 0, `no request with API key ${apiKey}`);
  return all[all.length - 1]!.body;
}

function capture(): { out: string[]; err: string[]; io: { out(l: string): void; err(l: string): void } } {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l) => out.push(l), err: (l) => err.push(l) } };
}

const entry = (name: string, value: string, source: number, synonyms: [string, string, number][] = []) => ({
  name,
  value,
  readOnly: false,
  // isDefault is a v0 field; later versions carry the source instead.
  isDefault: false,
  configSource: source,
  isSensitive: false,
  synonyms: synonyms.map(([n, v, s]) => ({ name: n, value: v, source: s })),
  configType: 0,
  documentation: null,
});

function describeConfigs(req: unknown): DescribeConfigsResponse {
  const r = (req as DescribeConfigsRequest).resources[0]!;
  const configs =
    r.resourceType === 4
      ? [
          entry('follower.replication.throttled.rate', '10485760', 2, [
            ['follower.replication.throttled.rate', '10485760', 2],
            ['follower.replication.throttled.rate', '5242880', 3],
          ]),
          entry('log.dirs', '/var/lib/skiff', 4, [['log.dirs', '/var/lib/skiff', 4]]),
          entry('num.io.threads', '8', 5),
        ]
      : [
          entry('leader.replication.throttled.replicas', '*', 1, [
            ['leader.replication.throttled.replicas', '*', 1],
          ]),
        ];
  return {
    throttleTimeMs: 0,
    results: [
      {
        errorCode: 0,
        errorMessage: null,
        resourceType: r.resourceType,
        resourceName: r.resourceName,
        configs,
      },
    ],
  };
}

function alterConfigs(req: unknown): IncrementalAlterConfigsResponse {
  const r = (req as IncrementalAlterConfigsRequest).resources[0]!;
  const bad = r.configs.find((c) => c.name === 'replica.lag.time.max.ms');
  return {
    throttleTimeMs: 0,
    responses: [
      {
        errorCode: bad ? 42 : 0,
        errorMessage: bad ? 'Cannot update these configs dynamically: Set(replica.lag.time.max.ms)' : null,
        resourceType: r.resourceType,
        resourceName: r.resourceName,
      },
    ],
  };
}

function describeLogDirs(_req: unknown): DescribeLogDirsResponse {
  const part = (partitionIndex: number, size: bigint) => ({
    partitionIndex,
    partitionSize: size,
    offsetLag: 0n,
    isFutureKey: false,
  });
  return {
    throttleTimeMs: 0,
    errorCode: 0,
    results: [
      {
        errorCode: 0,
        logDir: '/var/lib/skiff/logs',
        topics: [
          { name: 'd1.rebuild', partitions: [part(0, 103706687n)] },
          { name: 'other', partitions: [part(0, 5n)] },
        ],
        totalBytes: -1n,
        usableBytes: -1n,
      },
    ],
  };
}

describe('skiff configs and log-dirs against a scripted peer', () => {
  let fake: FakeBroker;
  before(async () => {
    fake = await startFakeBroker(
      new Map([
        [32, describeConfigs as Handler],
        [44, alterConfigs as Handler],
        [35, describeLogDirs as Handler],
      ]),
      [{ name: 'd1.rebuild', partitions: 1 }],
    );
  });
  after(async () => {
    await fake?.close();
  });

  it('describes a broker: dynamic entries only, then all, with synonyms', async () => {
    let c = capture();
    const bs = ['--bootstrap-server', fake.bootstrap];
    assert.equal(
      await runConfigs([...bs, '--entity-type', 'brokers', '--entity-name', '1', '--describe'], c.io),
      0,
    );
    assert.deepEqual(c.out, [
      'Dynamic configs for broker 1 are:',
      '  follower.replication.throttled.rate=10485760 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:follower.replication.throttled.rate=10485760, DYNAMIC_DEFAULT_BROKER_CONFIG:follower.replication.throttled.rate=5242880}',
    ]);
    const req = lastRequest(fake, 32) as DescribeConfigsRequest;
    assert.deepEqual(req.resources, [{ resourceType: 4, resourceName: '1', configurationKeys: null }]);
    assert.equal(req.includeSynonyms, true);

    c = capture();
    assert.equal(
      await runConfigs(
        [...bs, '--entity-type', 'brokers', '--entity-name', '1', '--describe', '--all'],
        c.io,
      ),
      0,
    );
    assert.deepEqual(
      c.out.map((l) => l.split(' sensitive')[0]),
      [
        'All configs for broker 1 are:',
        '  follower.replication.throttled.rate=10485760',
        '  log.dirs=/var/lib/skiff',
        '  num.io.threads=8',
      ],
    );

    c = capture();
    assert.equal(
      await runConfigs([...bs, '--entity-type', 'topics', '--entity-name', 'd1.rebuild', '--describe'], c.io),
      0,
    );
    assert.deepEqual(c.out, [
      'Dynamic configs for topic d1.rebuild are:',
      '  leader.replication.throttled.replicas=* sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:leader.replication.throttled.replicas=*}',
    ]);
  });

  it('alters with IncrementalAlterConfigs and prints Kafka lines', async () => {
    const bs = ['--bootstrap-server', fake.bootstrap];
    let c = capture();
    const add = 'leader.replication.throttled.replicas=*,follower.replication.throttled.replicas=[0:1,0:2]';
    assert.equal(
      await runConfigs(
        [...bs, '--alter', '--entity-type', 'topics', '--entity-name', 'd1.rebuild', '--add-config', add],
        c.io,
      ),
      0,
    );
    assert.deepEqual(c.out, ['Completed updating config for topic d1.rebuild.']);
    const req = lastRequest(fake, 44) as IncrementalAlterConfigsRequest;
    assert.deepEqual(req.resources, [
      {
        resourceType: 2,
        resourceName: 'd1.rebuild',
        configs: [
          { name: 'leader.replication.throttled.replicas', configOperation: 0, value: '*' },
          { name: 'follower.replication.throttled.replicas', configOperation: 0, value: '0:1,0:2' },
        ],
      },
    ]);

    c = capture();
    const del = ['--alter', '--entity-type', 'topics', '--entity-name', 'd1.rebuild', '--delete-config'];
    assert.equal(await runConfigs([...bs, ...del, 'leader.replication.throttled.replicas'], c.io), 0);
    assert.deepEqual(c.out, ['Completed updating config for topic d1.rebuild.']);
    c = capture();
    assert.equal(await runConfigs([...bs, ...del, 'retention.ms'], c.io), 1);
    assert.deepEqual(c.err, ['skiff configs: Invalid config(s): retention.ms']);

    c = capture();
    assert.equal(
      await runConfigs(
        [...bs, '--alter', '--entity-type', 'brokers', '--entity-default', '--add-config', 'x=1'],
        c.io,
      ),
      0,
    );
    assert.deepEqual(c.out, ['Completed updating default config for brokers in the cluster.']);

    c = capture();
    const lag = [
      '--alter',
      '--entity-type',
      'brokers',
      '--entity-name',
      '1',
      '--add-config',
      'replica.lag.time.max.ms=10000',
    ];
    assert.equal(await runConfigs([...bs, ...lag], c.io), 1);
    assert.deepEqual(c.err, [
      'skiff configs: Cannot update these configs dynamically: Set(replica.lag.time.max.ms)',
    ]);
  });

  it('rejects bad command lines with one line', async () => {
    const cases: [string[], RegExp][] = [
      [['--describe'], /missing required argument --entity-type/],
      [['--describe', '--entity-type', 'ips'], /not supported/],
      [['--describe', '--entity-type', 'brokers', '--entity-name', 'x'], /valid integer broker id, found: x/],
      [
        ['--alter', '--entity-type', 'topics', '--entity-name', 't', '--add-config', 'novalue'],
        /Invalid entity config/,
      ],
      [['--describe', '--alter', '--entity-type', 'topics'], /exactly one action/],
    ];
    for (const [args, re] of cases) {
      const c = capture();
      assert.equal(
        await runConfigs(['--bootstrap-server', fake.bootstrap, ...args], c.io),
        2,
        args.join(' '),
      );
      assert.equal(c.err.length, 1);
      assert.match(c.err[0]!, re);
    }
  });

  it("log-dirs prints Kafka's two lines and the JSON line, filtered by --topic-list", async () => {
    const c = capture();
    assert.equal(
      await runLogDirs(
        ['--bootstrap-server', fake.bootstrap, '--describe', '--topic-list', 'd1.rebuild'],
        c.io,
      ),
      0,
    );
    assert.deepEqual(c.out, [
      'Querying brokers for log directories information',
      'Received log directory information from brokers 1',
      '{"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"d1.rebuild-0","size":103706687,"offsetLag":0,"isFuture":false}],"error":null,"logDir":"/var/lib/skiff/logs"}]}],"version":1}',
    ]);
    const req = lastRequest(fake, 35) as DescribeLogDirsRequest;
    assert.deepEqual(req.topics, [{ topic: 'd1.rebuild', partitions: [0] }]);

    const bad = capture();
    assert.equal(
      await runLogDirs(['--bootstrap-server', fake.bootstrap, '--describe', '--broker-list', '1,4'], bad.io),
      1,
    );
    assert.deepEqual(bad.err, [
      'skiff log-dirs: ERROR: The given brokers do not exist from --broker-list: 4. Current existent brokers: 1',
    ]);
  });
});

describe('skiff configs and log-dirs against the real broker', () => {
  let broker: BrokerProcess;
  before(async () => {
    broker = await startBrokerProcess();
  });
  after(async () => {
    await broker?.stop();
  });

  it('describe, alter and delete topic configs, and log dirs — or one line where not served', async () => {
    const bs = ['--bootstrap-server', broker.bootstrap];
    let r = await skiff(['topics', ...bs, '--create', '--topic', 'cfg', '--config', 'retention.ms=100000']);
    assert.equal(r.status, 0, r.stderr);
    const describe = () =>
      skiff(['configs', ...bs, '--entity-type', 'topics', '--entity-name', 'cfg', '--describe']);
    r = await describe();
    if (r.status !== 0) {
      assert.equal(
        r.stderr,
        `skiff configs: the broker at ${broker.bootstrap} does not support DescribeConfigs\n`,
      );
    } else {
      const lines = r.stdout.trimEnd().split('\n');
      assert.equal(lines[0], 'Dynamic configs for topic cfg are:');
      assert.match(
        lines[1]!,
        /^ {2}retention\.ms=100000 sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:retention\.ms=100000/,
      );
      r = await skiff(['topics', ...bs, '--describe', '--topic', 'cfg']);
      assert.match(r.stdout.split('\n')[0]!, /\tConfigs: (.*,)?retention\.ms=100000(,|$)/);

      const alter = ['configs', ...bs, '--alter', '--entity-type', 'topics', '--entity-name', 'cfg'];
      r = await skiff([...alter, '--add-config', 'min.insync.replicas=1']);
      assert.deepEqual([r.status, r.stdout, r.stderr], [0, 'Completed updating config for topic cfg.\n', '']);
      assert.match((await describe()).stdout, /\n {2}min\.insync\.replicas=1 sensitive=false /);
      r = await skiff([...alter, '--delete-config', 'min.insync.replicas']);
      assert.deepEqual([r.status, r.stdout], [0, 'Completed updating config for topic cfg.\n']);
      assert.doesNotMatch((await describe()).stdout, /min\.insync\.replicas/);
    }
    // A broker id the cluster has never known: one line, not a wait for it.
    r = await skiff(['configs', ...bs, '--entity-type', 'brokers', '--entity-name', '99', '--describe']);
    assert.deepEqual(
      [r.status, r.stdout, r.stderr],
      [1, '', 'skiff configs: Broker 99 is not registered in the cluster\n'],
    );
    const dirs = await skiff(['log-dirs', ...bs, '--describe', '--topic-list', 'cfg']);
    if (dirs.status !== 0) {
      assert.equal(
        dirs.stderr,
        `skiff log-dirs: the broker at ${broker.bootstrap} does not support DescribeLogDirs\n`,
      );
    } else {
      const [q, rcv, json] = dirs.stdout.trimEnd().split('\n');
      assert.deepEqual(
        [q, rcv],
        [
          'Querying brokers for log directories information',
          'Received log directory information from brokers 1',
        ],
      );
      const doc = JSON.parse(json!) as {
        brokers: { broker: number; logDirs: { partitions: { partition: string }[] }[] }[];
      };
      assert.deepEqual(
        doc.brokers.map((br) => [br.broker, br.logDirs.flatMap((d) => d.partitions.map((p) => p.partition))]),
        [[1, ['cfg-0']]],
      );
    }
  });
});
