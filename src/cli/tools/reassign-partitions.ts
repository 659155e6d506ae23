/**
 * `skiff reassign-partitions`: Kafka's kafka-reassign-partitions.sh — --generate a plan, --execute
 * it (optionally throttled), --verify it (clearing the throttles once nothing moves), --cancel it,
 * --list what moves. Its JSON files are Kafka's: `{"version":1,"partitions":[{"topic","partition",
 * "replicas","log_dirs"}]}` and, for --generate, `{"version":1,"topics":[{"topic":"t"}]}`.
 */

import * as fs from 'node:fs';
import { Admin } from '../../client/admin.js';
import { ClientError } from '../../client/errors.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { ADMIN_FLAGS, adminClient, type Flags, runTool, type ToolDef, UsageError } from './common.js';
import { execute } from './reassign-execute.js';
import { generate } from './reassign-generate.js';
import type { ReassignContext } from './reassign-plan.js';
import { cancel, list, verify } from './reassign-verify.js';

export const REASSIGN_PARTITIONS: ToolDef = {
  ...commandInfo('reassign-partitions'),
  usage: [
    'Usage: skiff reassign-partitions --bootstrap-server <host:port> --generate|--execute|--verify|--cancel|--list [options]',
  ],
  flags: [
    ...ADMIN_FLAGS,
    {
      name: 'generate',
      help: 'propose an assignment of the topics in --topics-to-move-json-file to --broker-list',
    },
    { name: 'execute', help: 'start the reassignment in --reassignment-json-file' },
    { name: 'verify', help: 'report the status of the reassignment in --reassignment-json-file' },
    { name: 'cancel', help: 'cancel the reassignment in --reassignment-json-file' },
    { name: 'list', help: 'list the partition reassignments in progress' },
    { name: 'reassignment-json-file', arg: 'file', help: 'the partition reassignment JSON' },
    {
      name: 'topics-to-move-json-file',
      arg: 'file',
      help: 'with --generate: {"topics":[{"topic":"t"}],"version":1}',
    },
    { name: 'broker-list', arg: '1,2,3', help: 'with --generate: the brokers to assign replicas to' },
    {
      name: 'throttle',
      arg: 'bytes/s',
      help: 'with --execute: throttle the movement between brokers to this rate',
    },
    {
      name: 'replica-alter-log-dirs-throttle',
      arg: 'bytes/s',
      help: 'with --execute: throttle moves between log dirs of one broker to this rate',
    },
    {
      name: 'preserve-throttles',
      help: 'with --verify/--cancel: leave the throttles in place',
    },
    {
      name: 'additional',
      help: 'with --execute: start even though other reassignments are in progress (or change the throttle)',
    },
    {
      name: 'timeout',
      arg: 'ms',
      help: 'with --execute/--cancel: how long to wait for log dir moves to start (default 10000)',
    },
    { name: 'disable-rack-aware', help: 'with --generate: ignore racks' },
  ],
  notes: [
    "Differences from Kafka: --cancel also cancels moves that only add replicas (Kafka's tool skips",
    'those); a multi-line Kafka error is printed as one line, partitions separated by "; ".',
    "Under Kafka's lines, --execute and --verify say how much is left of each replica being added, as",
    'its leader sees it: "  Adding replica N: at offset O of LEO, B bytes left to copy from leader L"',
    '(or "not fetching yet; B bytes to copy" before its first fetch) — Kafka says only "in progress".',
  ],
};

const ACTIONS = ['generate', 'execute', 'verify', 'cancel', 'list'] as const;
type Action = (typeof ACTIONS)[number];

const REQUIRED: Record<Action, readonly string[]> = {
  generate: ['topics-to-move-json-file', 'broker-list'],
  execute: ['reassignment-json-file'],
  verify: ['reassignment-json-file'],
  cancel: ['reassignment-json-file'],
  list: [],
};

const PERMITTED: Record<Action, readonly string[]> = {
  generate: ['disable-rack-aware'],
  execute: ['additional', 'throttle', 'replica-alter-log-dirs-throttle', 'timeout'],
  verify: ['preserve-throttles'],
  cancel: ['preserve-throttles', 'timeout'],
  list: [],
};

export function runReassignPartitions(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(REASSIGN_PARTITIONS, args, io, async (flags) => {
    const action = checkFlags(flags);
    const client = adminClient('reassign-partitions', flags, runtime);
    try {
      const admin = new Admin(client);
      const ctx: ReassignContext = { admin, client, io, runtime };
      switch (action) {
        case 'generate':
          return await generate(
            ctx,
            readFile(flags.require('topics-to-move-json-file')),
            flags.require('broker-list'),
            !flags.has('disable-rack-aware'),
          );
        case 'execute':
          return await execute(ctx, readFile(flags.require('reassignment-json-file')), {
            additional: flags.has('additional'),
            throttle: longFlag(flags, 'throttle'),
            logDirThrottle: longFlag(flags, 'replica-alter-log-dirs-throttle'),
            timeoutMs: longFlag(flags, 'timeout') ?? 10_000,
          });
        case 'verify':
          return await verify(
            ctx,
            readFile(flags.require('reassignment-json-file')),
            flags.has('preserve-throttles'),
          );
        case 'cancel':
          return await cancel(
            ctx,
            readFile(flags.require('reassignment-json-file')),
            flags.has('preserve-throttles'),
            longFlag(flags, 'timeout') ?? 10_000,
          );
        case 'list':
          return await list(ctx);
      }
    } finally {
      client.close();
    }
  });
}

function checkFlags(flags: Flags): Action {
  const actions = ACTIONS.filter((a) => flags.has(a));
  if (actions.length !== 1) {
    throw new UsageError(
      `Command must include exactly one action: ${ACTIONS.map((a) => `--${a}`).join(', ')}`,
    );
  }
  const action = actions[0]!;
  if (!flags.has('bootstrap-server')) throw new UsageError('Please specify --bootstrap-server');
  for (const r of REQUIRED[action]) {
    if (!flags.has(r)) throw new UsageError(`Missing required argument "[${r}]"`);
  }
  const allowed = new Set<string>([
    action,
    'bootstrap-server',
    'command-config',
    ...REQUIRED[action],
    ...PERMITTED[action],
  ]);
  for (const f of REASSIGN_PARTITIONS.flags) {
    if (flags.has(f.name) && !allowed.has(f.name)) {
      throw new UsageError(`Option "[${f.name}]" can't be used with action "[${action}]"`);
    }
  }
  return action;
}

function longFlag(flags: Flags, name: string): number | undefined {
  const v = flags.get(name);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v.trim())) throw new UsageError(`--${name} expects a non-negative integer, got '${v}'`);
  return Number(v);
}

function readFile(path: string): string {
  try {
    return fs.readFileSync(path, 'utf8');
  } catch (e) {
    throw new ClientError(
      `cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
}
