/**
 * `skiff transactions`: Kafka's kafka-transactions, its subcommands, flags and tables
 * (tools/.../TransactionsCommand.java). The subcommand comes after the global flags, as there:
 * `skiff transactions --bootstrap-server h:p describe-producers --topic t --partition 0`.
 */
import { Admin } from '../../client/admin.js';
import { ClientError, KafkaResponseError } from '../../client/errors.js';
import type { KafkaClient } from '../../client/kafka-client.js';
import type { PartitionResult, TopicPartition } from '../../client/partitions.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import {
  type AbortTransactionSpec,
  abortTransaction,
  describeProducers,
  describeTransaction,
  listTransactions,
  type ProducerState,
  type TransactionDescription,
  type TransactionListing,
} from '../../client/transactions-admin.js';
import { topicPartitionKey } from '../../common/topic-partition.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import {
  ADMIN_FLAGS,
  adminClient,
  type Flags,
  intFlag,
  runTool,
  type ToolDef,
  UsageError,
} from './common.js';

/** Each subcommand with the flags it takes (the rest are refused, as argparse refuses them). */
const SUBCOMMANDS: Readonly<Record<string, { help: string; flags: readonly string[]; usage: string }>> = {
  list: {
    help: 'list transactions',
    flags: ['duration-filter'],
    usage: 'list [--duration-filter <ms>]',
  },
  describe: {
    help: 'describe the state of an active transactional-id',
    flags: ['transactional-id'],
    usage: 'describe --transactional-id <id>',
  },
  'describe-producers': {
    help: 'describe the states of active producers for a topic partition',
    flags: ['topic', 'partition', 'broker-id'],
    usage: 'describe-producers --topic <topic> --partition <n> [--broker-id <id>]',
  },
  abort: {
    help: 'abort a hanging transaction (requires administrative privileges)',
    flags: ['topic', 'partition', 'start-offset', 'producer-id', 'producer-epoch', 'coordinator-epoch'],
    usage:
      'abort --topic <topic> --partition <n> (--start-offset <offset> | --producer-id <id> --producer-epoch <e> --coordinator-epoch <e>)',
  },
  'find-hanging': {
    help: 'find hanging transactions',
    flags: ['broker-id', 'max-transaction-timeout', 'topic', 'partition'],
    usage:
      'find-hanging (--topic <topic> [--partition <n>] | --broker-id <id>) [--max-transaction-timeout <min>]',
  },
};

export const TRANSACTIONS: ToolDef = {
  ...commandInfo('transactions'),
  usage: [
    'Usage: skiff transactions --bootstrap-server <host:port> [--command-config <file>] COMMAND ...',
    '',
    'Commands:',
    ...Object.entries(SUBCOMMANDS).map(([name, c]) => `  ${name.padEnd(20)}${c.help}`),
    '',
    ...Object.values(SUBCOMMANDS).map((c) => `  ${c.usage}`),
  ],
  flags: [
    ...ADMIN_FLAGS,
    { name: 'topic', arg: 'topic', help: 'topic name (find-hanging: limits the search to it)' },
    { name: 'partition', arg: 'n', help: 'partition number' },
    {
      name: 'broker-id',
      arg: 'id',
      help: 'describe-producers: the replica on this broker; find-hanging: search the partitions it hosts',
    },
    {
      name: 'duration-filter',
      arg: 'ms',
      help: 'list only transactions running longer than this; all when < 0',
    },
    { name: 'transactional-id', arg: 'id', help: 'transactional id' },
    { name: 'start-offset', arg: 'offset', help: 'start offset of the transaction to abort' },
    { name: 'producer-id', arg: 'id', help: 'producer id (abort, without --start-offset)' },
    { name: 'producer-epoch', arg: 'epoch', help: 'producer epoch (abort, without --start-offset)' },
    { name: 'coordinator-epoch', arg: 'epoch', help: 'coordinator epoch (abort, without --start-offset)' },
    {
      name: 'max-transaction-timeout',
      arg: 'min',
      help: 'maximum transaction timeout in minutes to limit the scope of the search (15 minutes by default)',
    },
  ],
  positionals: 'COMMAND',
};

const PRODUCER_HEADERS = [
  'ProducerId',
  'ProducerEpoch',
  'LatestCoordinatorEpoch',
  'LastSequence',
  'LastTimestamp',
  'CurrentTransactionStartOffset',
];

/**
 * Kafka's ToolsUtils.prettyPrintTable: every column padded to its widest cell, each cell followed
 * by a tab (the last one too).
 */
export function prettyTable(headers: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => `${c.padEnd(widths[i]!)}\t`).join('');
  return [line(headers), ...rows.map(line)];
}

/** describe-producers' table: a coordinator epoch never written is -1, no open transaction "None". */
export function formatProducers(producers: readonly ProducerState[]): string[] {
  return prettyTable(
    PRODUCER_HEADERS,
    producers.map((p) => [
      String(p.producerId),
      String(p.producerEpoch),
      String(p.coordinatorEpoch),
      String(p.lastSequence),
      String(p.lastTimestamp),
      p.currentTxnStartOffset >= 0n ? String(p.currentTxnStartOffset) : 'None',
    ]),
  );
}

function subcommand(flags: Flags): string {
  const [name, ...extra] = flags.positionals;
  if (name === undefined)
    throw new UsageError(`missing COMMAND (one of ${Object.keys(SUBCOMMANDS).join(', ')})`);
  const spec = SUBCOMMANDS[name];
  if (spec === undefined) {
    throw new UsageError(`invalid choice: '${name}' (choose from ${Object.keys(SUBCOMMANDS).join(', ')})`);
  }
  if (extra.length > 0) throw new UsageError(`unrecognized arguments: '${extra.join(' ')}'`);
  const own = new Set([...spec.flags, 'bootstrap-server', 'command-config']);
  for (const f of TRANSACTIONS.flags) {
    if (flags.has(f.name) && !own.has(f.name)) throw new UsageError(`${name} takes no --${f.name}`);
  }
  return name;
}

export function runTransactions(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(TRANSACTIONS, args, io, async (flags) => {
    const name = subcommand(flags);
    const client = adminClient('transactions', flags, runtime);
    const nowMs = () => BigInt(runtime.clock.nowMs());
    try {
      let lines: string[];
      switch (name) {
        case 'list':
          lines = await list(client, flags);
          break;
        case 'describe':
          lines = await describe(client, flags, nowMs);
          break;
        case 'describe-producers':
          lines = await producers(client, flags);
          break;
        case 'abort':
          lines = await abort(client, flags);
          break;
        default:
          lines = await findHanging(client, flags, nowMs);
      }
      for (const l of lines) io.out(l);
      return 0;
    } finally {
      client.close();
    }
  });
}

/** Kafka's printErrorAndExit(message, cause): the cause's message after the tool's words. */
function failed(what: string, e: unknown): never {
  if (!(e instanceof ClientError)) throw e;
  throw new ClientError(`${what}: ${e.message}`);
}

const MAX_INT = 2 ** 31 - 1;

function requiredInt(flags: Flags, name: string, min: number, max: number): number {
  if (!flags.has(name)) throw new UsageError(`missing required argument --${name}`);
  return intFlag(flags, name, 0, min, max);
}

function longFlag(flags: Flags, name: string): bigint | undefined {
  const v = flags.get(name);
  if (v === undefined) return undefined;
  if (!/^-?\d+$/.test(v.trim())) throw new UsageError(`--${name} expects an integer, got '${v}'`);
  const n = BigInt(v.trim());
  if (n < -(2n ** 63n) || n >= 2n ** 63n) throw new UsageError(`--${name}: ${v} is out of range`);
  return n;
}

async function list(client: KafkaClient, flags: Flags): Promise<string[]> {
  const durationMs = longFlag(flags, 'duration-filter');
  let byBroker: Map<number, TransactionListing[]>;
  try {
    byBroker = await listTransactions(client, durationMs === undefined ? {} : { durationMs });
  } catch (e) {
    failed('Failed to list transactions', e);
  }
  const rows: string[][] = [];
  for (const [brokerId, listings] of byBroker)
    for (const l of listings) rows.push([l.transactionalId, String(brokerId), String(l.producerId), l.state]);
  return prettyTable(['TransactionalId', 'Coordinator', 'ProducerId', 'TransactionState'], rows);
}

async function describe(client: KafkaClient, flags: Flags, nowMs: () => bigint): Promise<string[]> {
  const transactionalId = flags.require('transactional-id');
  let d: TransactionDescription;
  try {
    d = await describeTransaction(client, transactionalId);
  } catch (e) {
    failed(`Failed to describe transaction state of transactional-id \`${transactionalId}\``, e);
  }
  const open = d.transactionStartTimeMs >= 0n;
  return prettyTable(
    [
      'CoordinatorId',
      'TransactionalId',
      'ProducerId',
      'ProducerEpoch',
      'TransactionState',
      'TransactionTimeoutMs',
      'CurrentTransactionStartTimeMs',
      'TransactionDurationMs',
      'TopicPartitions',
    ],
    [
      [
        String(d.coordinatorId),
        transactionalId,
        String(d.producerId),
        String(d.producerEpoch),
        d.state,
        String(d.transactionTimeoutMs),
        open ? String(d.transactionStartTimeMs) : 'None',
        open ? String(nowMs() - d.transactionStartTimeMs) : 'None',
        d.topicPartitions.map((tp) => topicPartitionKey(tp.topic, tp.partition)).join(','),
      ],
    ],
  );
}

async function producers(client: KafkaClient, flags: Flags): Promise<string[]> {
  const topic = flags.require('topic');
  const partition = requiredInt(flags, 'partition', 0, MAX_INT);
  const brokerId = flags.has('broker-id') ? intFlag(flags, 'broker-id', 0, 0, MAX_INT) : undefined;
  const where = brokerId === undefined ? 'leader' : `broker ${brokerId}`;
  const what = `Failed to describe producers for partition ${topicPartitionKey(topic, partition)} on ${where}`;
  let result: PartitionResult<ProducerState[]>;
  try {
    result = (await describeProducers(client, [{ topic, partition }], brokerId)).get(
      topicPartitionKey(topic, partition),
    )!;
  } catch (e) {
    failed(what, e);
  }
  if (!result.ok) failed(what, result.error);
  return formatProducers(result.value);
}

async function abort(client: KafkaClient, flags: Flags): Promise<string[]> {
  const topic = flags.require('topic');
  const partition = requiredInt(flags, 'partition', 0, MAX_INT);
  const tp = { topic, partition };
  const key = topicPartitionKey(topic, partition);
  const startOffset = longFlag(flags, 'start-offset');
  const producerId = longFlag(flags, 'producer-id');
  let spec: AbortTransactionSpec;
  if (startOffset === undefined && producerId === undefined) {
    throw new ClientError(
      'The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)',
    );
  }
  if (startOffset === undefined) {
    if (!flags.has('producer-epoch')) throw new ClientError('Missing required argument --producer-epoch');
    if (!flags.has('coordinator-epoch'))
      throw new ClientError('Missing required argument --coordinator-epoch');
    const producerEpoch = intFlag(flags, 'producer-epoch', 0, -32768, 32767);
    const coordinatorEpoch = intFlag(flags, 'coordinator-epoch', 0, -(2 ** 31), MAX_INT);
    // A transaction that hung before its first marker has coordinator epoch -1 in
    // describe-producers; 0 is at most any real coordinator epoch (as Kafka's tool reasons).
    spec = {
      topicPartition: tp,
      producerId: producerId!,
      producerEpoch,
      coordinatorEpoch: Math.max(coordinatorEpoch, 0),
    };
  } else {
    let result: PartitionResult<ProducerState[]>;
    try {
      result = (await describeProducers(client, [tp])).get(key)!;
    } catch (e) {
      failed(`Failed to validate producer state for partition ${key}`, e);
    }
    if (!result.ok) failed(`Failed to validate producer state for partition ${key}`, result.error);
    const found = result.value.find(
      (p) => p.currentTxnStartOffset >= 0n && p.currentTxnStartOffset === startOffset,
    );
    if (found === undefined) {
      throw new ClientError(
        `Could not find any open transactions starting at offset ${startOffset} on partition ${key}`,
      );
    }
    spec = {
      topicPartition: tp,
      producerId: found.producerId,
      producerEpoch: found.producerEpoch,
      coordinatorEpoch: Math.max(found.coordinatorEpoch, 0),
    };
  }
  try {
    await abortTransaction(client, spec);
  } catch (e) {
    failed(
      `Failed to abort transaction AbortTransactionSpec(topicPartition=${key}, producerId=${spec.producerId}, producerEpoch=${spec.producerEpoch}, coordinatorEpoch=${spec.coordinatorEpoch})`,
      e,
    );
  }
  return [];
}

/** How many partitions one DescribeProducers carries while searching (Kafka's MAX_BATCH_SIZE). */
const HANGING_BATCH = 500;

interface OpenTxn {
  readonly tp: TopicPartition;
  readonly producer: ProducerState;
}

/**
 * Kafka's find-hanging: open transactions (from the partitions' producer states) older than the
 * maximum transaction timeout whose producer id no coordinator lists, or whose transaction does
 * not include the partition any more: no coordinator will ever write their marker.
 */
async function findHanging(client: KafkaClient, flags: Flags, nowMs: () => bigint): Promise<string[]> {
  const brokerId = flags.has('broker-id') ? intFlag(flags, 'broker-id', 0, 0, MAX_INT) : undefined;
  const topic = flags.get('topic');
  if (topic === undefined && brokerId === undefined) {
    throw new ClientError(
      'The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search',
    );
  }
  const partition = flags.has('partition') ? intFlag(flags, 'partition', 0, 0, MAX_INT) : undefined;
  if (partition !== undefined && topic === undefined)
    throw new ClientError('The --partition argument requires --topic to be provided');
  const maxTimeoutMs = BigInt(intFlag(flags, 'max-transaction-timeout', 15, 0, MAX_INT)) * 60_000n;

  let tps: TopicPartition[];
  if (topic !== undefined && partition !== undefined) tps = [{ topic, partition }];
  else {
    const admin = new Admin(client);
    let topics: string[];
    try {
      topics = topic !== undefined ? [topic] : await admin.listTopics(true);
    } catch (e) {
      failed('Failed to list topics', e);
    }
    tps = [];
    for (let i = 0; i < topics.length; i += HANGING_BATCH) {
      const batch = topics.slice(i, i + HANGING_BATCH);
      let described: Awaited<ReturnType<Admin['describeTopics']>>;
      try {
        described = await admin.describeTopics(batch);
      } catch (e) {
        failed(`Failed to describe ${batch.length} topics`, e);
      }
      for (const [name, t] of described) {
        if (t instanceof ClientError) failed(`Failed to describe ${batch.length} topics`, t);
        for (const p of t.partitions)
          if (brokerId === undefined || p.replicas.includes(brokerId))
            tps.push({ topic: name, partition: p.partition });
      }
    }
  }

  const candidates: OpenTxn[] = [];
  for (let i = 0; i < tps.length; i += HANGING_BATCH) {
    const batch = tps.slice(i, i + HANGING_BATCH);
    const what = `Failed to describe producers for ${batch.length} partitions on broker ${brokerId === undefined ? 'Optional.empty' : `Optional[${brokerId}]`}`;
    let results: Map<string, PartitionResult<ProducerState[]>>;
    try {
      results = await describeProducers(client, batch, brokerId);
    } catch (e) {
      failed(what, e);
    }
    const now = nowMs();
    for (const tp of batch) {
      const r = results.get(topicPartitionKey(tp.topic, tp.partition))!;
      if (!r.ok) failed(what, r.error);
      for (const p of r.value)
        if (p.currentTxnStartOffset >= 0n && now - p.lastTimestamp > maxTimeoutMs)
          candidates.push({ tp, producer: p });
    }
  }

  const hanging: OpenTxn[] = [];
  if (candidates.length > 0) {
    const producerIds = [...new Set(candidates.map((c) => c.producer.producerId))];
    let listed: Map<number, TransactionListing[]>;
    try {
      listed = await listTransactions(client, { producerIds });
    } catch (e) {
      failed(`Failed to list transactions for ${producerIds.length} producers`, e);
    }
    const idOf = new Map<bigint, string>();
    for (const listings of listed.values())
      for (const l of listings)
        if (producerIds.includes(l.producerId)) idOf.set(l.producerId, l.transactionalId);
    const descriptions = new Map<string, TransactionDescription | null>();
    for (const id of new Set(idOf.values())) {
      try {
        descriptions.set(id, await describeTransaction(client, id));
      } catch (e) {
        if (e instanceof KafkaResponseError && e.code === ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
          descriptions.set(id, null);
        else failed(`Failed to describe ${idOf.size} transactions`, e);
      }
    }
    for (const c of candidates) {
      const id = idOf.get(c.producer.producerId);
      const d = id === undefined ? null : (descriptions.get(id) ?? null);
      // The coordinator still lists the partition: it will write the marker.
      if (d?.topicPartitions.some((tp) => tp.topic === c.tp.topic && tp.partition === c.tp.partition))
        continue;
      hanging.push(c);
    }
  }
  const now = nowMs();
  return prettyTable(
    [
      'Topic',
      'Partition',
      'ProducerId',
      'ProducerEpoch',
      'CoordinatorEpoch',
      'StartOffset',
      'LastTimestamp',
      'Duration(min)',
    ],
    hanging.map(({ tp, producer: p }) => [
      tp.topic,
      String(tp.partition),
      String(p.producerId),
      String(p.producerEpoch),
      String(p.coordinatorEpoch),
      String(p.currentTxnStartOffset),
      String(p.lastTimestamp),
      String((now - p.lastTimestamp) / 60_000n),
    ]),
  );
}
