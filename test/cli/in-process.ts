/**
 * Runs a `skiff` tool inside the test process with captured output: the same code path as the
 * command line minus a Node start-up, which on a busy two-core machine is most of a tool's run
 * time. Tests keep a few real process runs for exit codes and stack-trace checks.
 */
import { Readable } from 'node:stream';
import { runCli } from '../../src/cli/cli.js';
import { runConsoleProducer } from '../../src/cli/tools/console-producer.js';
import { KafkaClient } from '../../src/client/kafka-client.js';
import { Producer, type ProducerRecord } from '../../src/client/producer.js';
import { parseBootstrap, systemRuntime } from '../../src/client/runtime.js';
import type { ToolRun } from '../support/broker-process.js';

export async function skiff(args: readonly string[], input = ''): Promise<ToolRun> {
  let stdout = '';
  let stderr = '';
  const io = {
    out: (l: string) => {
      stdout += `${l}\n`;
    },
    err: (l: string) => {
      stderr += `${l}\n`;
    },
  };
  const [name, ...rest] = args;
  const status =
    name === 'console-producer'
      ? await runConsoleProducer(rest, io, Readable.from([input]))
      : await runCli([...args], io);
  return { status, stdout, stderr };
}

/** Writes `records` with the client's producer (explicit partitions and timestamps where given). */
export async function produceRecords(bootstrap: string, records: readonly ProducerRecord[]): Promise<void> {
  const client = new KafkaClient({
    bootstrap: parseBootstrap(bootstrap),
    clientId: 'test',
    runtime: systemRuntime(),
  });
  try {
    const producer = new Producer(client, { idempotence: false, acks: -1 });
    for (const r of records) await producer.produce(r);
    await producer.flush();
  } finally {
    client.close();
  }
}
