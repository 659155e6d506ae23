/**
 * `skiff transactions`: Kafka's kafka-transactions, its subcommands, flags and tables
 * (tools/.../TransactionsCommand.java). The subcommand comes after the global flags, as there:
 * `skiff transactions --bootstrap-server h:p describe-producers --topic t --partition 0`.
 */

import { ClientError } from '../../client/errors.js';
import type { ClientRuntime } from '../../client/runtime.js';
import { systemRuntime } from '../../client/runtime.js';
import { describeProducers, type ProducerState } from '../../client/transactions-admin.js';
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
const SUBCOMMANDS: Readonly<Record<string, { help: string; flags: readonly string[] }>> = {
  'describe-producers': {
    help: 'describe the states of active producers for a topic partition',
    flags: ['topic', 'partition', 'broker-id'],
  },
};

export const TRANSACTIONS: ToolDef = {
  ...commandInfo('transactions'),
  usage: [
    'Usage: skiff transactions --bootstrap-server <host:port> [--command-config <file>] COMMAND ...',
    '',
    'Commands:',
    ...Object.entries(SUBCOMMANDS).map(([name, s]) => `  ${name.padEnd(22)}${s.help}`),
    '',
    '  describe-producers --topic <topic> --partition <n> [--broker-id <id>]',
  ],
  flags: [
    ...ADMIN_FLAGS,
    { name: 'topic', arg: 'topic', help: 'topic name' },
    { name: 'partition', arg: 'n', help: 'partition number' },
    {
      name: 'broker-id',
      arg: 'id',
      help: 'optional broker id to describe the producer state on a specific replica',
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
    throw new UsageError('missing COMMAND (one of ' + Object.keys(SUBCOMMANDS).join(', ') + ')');
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
    subcommand(flags);
    const topic = flags.require('topic');
    const partition = intFlag(flags, 'partition', -1, 0, 2 ** 31 - 1);
    if (!flags.has('partition')) throw new UsageError('missing required argument --partition');
    const brokerId = flags.has('broker-id') ? intFlag(flags, 'broker-id', -1, 0, 2 ** 31 - 1) : undefined;
    const client = adminClient('transactions', flags, runtime);
    try {
      const result = await describeProducers(client, { topic, partition }, brokerId);
      if (!result.ok) {
        const where = brokerId === undefined ? 'leader' : `broker ${brokerId}`;
        throw new ClientError(
          `Failed to describe producers for partition ${topic}-${partition} on ${where}: ${result.error.message}`,
        );
      }
      for (const l of formatProducers(result.value)) io.out(l);
      return 0;
    } finally {
      client.close();
    }
  });
}
