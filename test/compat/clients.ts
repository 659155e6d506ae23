/**
 * Shared pieces of the client compatibility tests: a `skiff broker` child process configured for
 * fast group rebalances, and running a Python client script with /usr/bin/python3 (a missing
 * interpreter or module fails with what to install, never skips).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { type ITopicConfig, Kafka, logLevel } from 'kafkajs';
import { ClientConnection } from '../../src/network/client-connection.js';
import { AlterClientQuotasRequestCodec } from '../../src/protocol/generated/AlterClientQuotasRequest.js';
import { AlterClientQuotasResponseCodec } from '../../src/protocol/generated/AlterClientQuotasResponse.js';
import { DescribeClientQuotasRequestCodec } from '../../src/protocol/generated/DescribeClientQuotasRequest.js';
import { DescribeClientQuotasResponseCodec } from '../../src/protocol/generated/DescribeClientQuotasResponse.js';
import { ApiKey } from '../../src/protocol/generated/index.js';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';

export const PYTHON = '/usr/bin/python3';

/** A broker whose groups form at once (no initial rebalance delay) and whose offsets topic fits one broker. */
export function startCompatBroker(
  extra: readonly string[] = [],
  /** More arguments of `skiff broker` (--add-scram). */
  args: readonly string[] = [],
): Promise<BrokerProcess> {
  return startBrokerProcess(
    [
      'group.initial.rebalance.delay.ms=0',
      'group.min.session.timeout.ms=1000',
      'offsets.topic.replication.factor=1',
      ...extra,
    ],
    undefined,
    undefined,
    args,
  );
}

/**
 * A compat broker whose consumer-protocol groups (KIP-848) take heartbeats every 500 ms and lose a
 * silent member after 10 s: a member that leaves is seen at once, one that stops answering soon.
 */
export function startConsumerProtocolBroker(): Promise<BrokerProcess> {
  return startCompatBroker([
    'group.consumer.heartbeat.interval.ms=500',
    'group.consumer.min.heartbeat.interval.ms=500',
    'group.consumer.session.timeout.ms=10000',
    'group.consumer.min.session.timeout.ms=10000',
  ]);
}

/** Polls check() every 50 ms until it returns a value other than undefined. */
export async function waitFor<T>(what: string, check: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Runs a Python script (given as text) with the bootstrap address as argv[1]; returns its JSON output. */
export function runPython<T>(
  script: string,
  bootstrap: string,
  module: string,
  debianPackage: string,
  timeoutMs = 45_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const p = spawn(PYTHON, ['-c', script, bootstrap], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    p.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    p.on('error', (e) => {
      clearTimeout(timer);
      reject(
        new Error(
          `${PYTHON} cannot run (${e.message}): install python3 and ${debianPackage} (apt-get install ${debianPackage})`,
        ),
      );
    });
    p.on('close', (status, signal) => {
      clearTimeout(timer);
      if (stderr.includes(`No module named '${module}'`)) {
        reject(new Error(`the Python module '${module}' is missing: apt-get install ${debianPackage}`));
        return;
      }
      try {
        assert.equal(status, 0, `python exited with ${status ?? signal}:\n${stderr}\n${stdout}`);
        const lastLine = stdout.trim().split('\n').at(-1) ?? '';
        resolve(JSON.parse(lastLine) as T);
      } catch (e) {
        reject(e);
      }
    });
  });
}

/**
 * Gives a client id a controller_mutation_rate on the broker at `port` (AlterClientQuotas, as
 * `skiff configs` sends it: not every client can), or removes it (`rate` null), and waits until the
 * broker's DescribeClientQuotas shows it so — the broker enforces what its metadata image holds.
 */
export async function setControllerMutationRate(
  port: number,
  clientId: string,
  rate: number | null,
): Promise<void> {
  const conn = await ClientConnection.connect('127.0.0.1', port, { clientId: 'quota-admin' });
  try {
    const altered = await conn.send(
      ApiKey.AlterClientQuotas,
      1,
      AlterClientQuotasRequestCodec,
      {
        entries: [
          {
            entity: [{ entityType: 'client-id', entityName: clientId }],
            ops: [{ key: 'controller_mutation_rate', value: rate ?? 0, remove: rate === null }],
          },
        ],
        validateOnly: false,
      },
      AlterClientQuotasResponseCodec,
    );
    assert.equal(altered.entries[0]?.errorCode, 0);
    for (let i = 0; ; i++) {
      const described = await conn.send(
        ApiKey.DescribeClientQuotas,
        1,
        DescribeClientQuotasRequestCodec,
        { components: [{ entityType: 'client-id', matchType: 0, match: clientId }], strict: false },
        DescribeClientQuotasResponseCodec,
      );
      const shown = described.entries?.[0]?.values.some((v) => v.key === 'controller_mutation_rate') ?? false;
      if (shown === (rate !== null)) return;
      assert.ok(
        i < 200,
        `the broker never showed the controller_mutation_rate of ${clientId} ${rate === null ? 'removed' : 'set'}`,
      );
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    conn.close();
  }
}

/** The high watermark of partition 0 of `topic`, through a KafkaJS admin of `kafka`. */
export async function highWatermarkOf(kafka: Kafka, topic: string): Promise<bigint> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return BigInt((await admin.fetchTopicOffsets(topic))[0]!.high);
  } finally {
    await admin.disconnect();
  }
}

/** A KafkaJS client of `broker` (its own logging off) with `topics` created, their leaders elected. */
export async function kafkaJsWithTopics(
  broker: BrokerProcess,
  clientId: string,
  topics: ITopicConfig[],
): Promise<Kafka> {
  const kafka = new Kafka({ clientId, brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics, waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
  return kafka;
}
