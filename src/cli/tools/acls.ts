/**
 * `skiff acls`: Kafka's kafka-acls.sh — --add, --remove and --list of ACLs on topics, groups,
 * transactional ids and the cluster, with its flags, its --producer / --consumer / --idempotent
 * shortcuts and its output lines. Unlike Kafka, --remove without --force asks on a terminal only:
 * with stdin not a TTY it refuses (a script must say --force).
 */
import * as readline from 'node:readline/promises';
import { createAcls, deleteAcls, describeAcls } from '../../client/acl-admin.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import {
  type AclBinding,
  type AclBindingFilter,
  AclOperation,
  AclPermissionType,
  CLUSTER_NAME,
  operationName,
  PatternType,
  patternTypeName,
  permissionTypeName,
  ResourceType,
  resourceTypeName,
  SUPPORTED_OPERATIONS,
  WILDCARD_HOST,
} from '../../security/acl.js';
import { parsePrincipal, principalToString } from '../../security/principal.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { ADMIN_FLAGS, adminClient, type Flags, runTool, type ToolDef, UsageError } from './common.js';

export const ACLS: ToolDef = {
  ...commandInfo('acls'),
  usage: ['Usage: skiff acls --bootstrap-server <host:port> (--add | --remove | --list) [options]'],
  flags: [
    ...ADMIN_FLAGS,
    { name: 'add', help: 'Indicates you are trying to add ACLs.' },
    { name: 'remove', help: 'Indicates you are trying to remove ACLs.' },
    { name: 'list', help: 'List ACLs for the specified resource (--topic, --group or --cluster).' },
    { name: 'topic', arg: 'topic', repeat: true, help: "topic of the ACLs; '*' means all topics" },
    { name: 'group', arg: 'group', repeat: true, help: "consumer group of the ACLs; '*' means all groups" },
    {
      name: 'transactional-id',
      arg: 'transactional-id',
      repeat: true,
      help: "transactional id of the ACLs; '*' means all",
    },
    { name: 'cluster', help: 'Add/Remove cluster ACLs.' },
    {
      name: 'resource-pattern-type',
      arg: 'literal|prefixed|any|match',
      help: 'pattern type (default literal); any and match only to list or remove',
    },
    {
      name: 'operation',
      arg: 'operation',
      repeat: true,
      help: 'operation allowed or denied (All, Read, Write, Create, Delete, Alter, Describe, ...); default All',
    },
    {
      name: 'allow-principal',
      arg: 'Type:name',
      repeat: true,
      help: "principal allowed; User:'*' is every user",
    },
    {
      name: 'deny-principal',
      arg: 'Type:name',
      repeat: true,
      help: 'principal denied (DENY wins over ALLOW)',
    },
    {
      name: 'allow-host',
      arg: 'host',
      repeat: true,
      help: "host --allow-principal may come from (default '*')",
    },
    {
      name: 'deny-host',
      arg: 'host',
      repeat: true,
      help: "host --deny-principal is denied from (default '*')",
    },
    {
      name: 'principal',
      arg: 'Type:name',
      repeat: true,
      help: 'with --list: only the ACLs of this principal',
    },
    { name: 'producer', help: 'ACLs of a producer: WRITE, DESCRIBE and CREATE on the topics' },
    { name: 'consumer', help: 'ACLs of a consumer: READ, DESCRIBE on the topics and READ on the group' },
    { name: 'idempotent', help: 'with --producer: IDEMPOTENT_WRITE on the cluster too' },
    { name: 'force', help: 'Assume Yes to all queries and do not prompt.' },
  ],
  notes: [
    'Unlike Kafka: --remove without --force asks for confirmation only when stdin is a terminal;',
    'otherwise it refuses, so a script never hangs on a question. Resources and ACLs print in the',
    "order given (Kafka's order follows its hash sets).",
  ],
};

/** A resource pattern or pattern filter as kafka-acls.sh holds them (name null: any). */
interface Pattern {
  readonly resourceType: number;
  readonly name: string | null;
  readonly patternType: number;
}

interface Entry {
  readonly principal: string;
  readonly host: string;
  readonly operation: number;
  readonly permissionType: number;
}

export function patternText(p: Pattern): string {
  return `ResourcePattern(resourceType=${resourceTypeName(p.resourceType)}, name=${p.name ?? '<any>'}, patternType=${patternTypeName(p.patternType)})`;
}

export function entryText(e: Entry): string {
  return `(principal=${e.principal}, host=${e.host}, operation=${operationName(e.operation)}, permissionType=${permissionTypeName(e.permissionType)})`;
}

/** Kafka's block: a heading, the entries tab-indented, a blank line. */
function block(heading: string, entries: readonly Entry[]): string[] {
  const lines = entries.map((e) => `\t${entryText(e)}`);
  if (lines.length === 0) return [`${heading}: `, '  ', ''];
  lines[0] = ` ${lines[0]}`;
  lines[lines.length - 1] = `${lines[lines.length - 1]} `;
  return [`${heading}: `, ...lines, ''];
}

/** SecurityUtils.operation: `IdempotentWrite`, `idempotent-write` or `IDEMPOTENT_WRITE`. */
export function parseOperation(text: string): number {
  const key = text
    .trim()
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .replace(/-/g, '_')
    .toUpperCase();
  const code = (AclOperation as Record<string, number>)[key];
  if (code === undefined || code === AclOperation.ANY || code === AclOperation.UNKNOWN)
    throw new UsageError(`Unknown operation: ${text}`);
  return code;
}

/** SecurityUtils.operationName: `IdempotentWrite`. */
function camelName(op: number): string {
  return operationName(op)
    .toLowerCase()
    .replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());
}

function parsePatternType(flags: Flags): number {
  const text = flags.get('resource-pattern-type') ?? 'literal';
  const code = (PatternType as Record<string, number>)[text.trim().toUpperCase()];
  if (code === undefined || code === PatternType.UNKNOWN)
    throw new UsageError(`Unknown resource-pattern-type: ${text}`);
  return code;
}

function principals(flags: Flags, name: string): string[] {
  return unique(
    flags.all(name).map((p) => {
      try {
        return principalToString(parsePrincipal(p.trim()));
      } catch (e) {
        throw new UsageError((e as Error).message);
      }
    }),
  );
}

function unique<T>(xs: readonly T[]): T[] {
  return [...new Set(xs)];
}

/** AclCommand.getResourceFilter: the resources named on the command line. */
function resources(flags: Flags, patternType: number): Pattern[] {
  const out: Pattern[] = [];
  for (const t of unique(flags.all('topic').map((s) => s.trim())))
    out.push({ resourceType: ResourceType.TOPIC, name: t, patternType });
  if (patternType === PatternType.LITERAL && (flags.has('cluster') || flags.has('idempotent')))
    out.push({ resourceType: ResourceType.CLUSTER, name: CLUSTER_NAME, patternType: PatternType.LITERAL });
  for (const g of unique(flags.all('group').map((s) => s.trim())))
    out.push({ resourceType: ResourceType.GROUP, name: g, patternType });
  for (const id of unique(flags.all('transactional-id')))
    out.push({ resourceType: ResourceType.TRANSACTIONAL_ID, name: id, patternType });
  return out;
}

/** AclCommand.getAcl: every allowed and denied principal × operation × host. */
function entries(flags: Flags, operations: readonly number[]): Entry[] {
  const out: Entry[] = [];
  const side = (who: string, hostFlag: string, permissionType: number) => {
    const ps = principals(flags, who);
    if (ps.length === 0) return;
    const hosts = flags.has(hostFlag) ? unique(flags.all(hostFlag).map((h) => h.trim())) : [WILDCARD_HOST];
    for (const principal of ps)
      for (const operation of operations)
        for (const host of hosts) out.push({ principal, host, operation, permissionType });
  };
  side('allow-principal', 'allow-host', AclPermissionType.ALLOW);
  side('deny-principal', 'deny-host', AclPermissionType.DENY);
  return out;
}

/** AclCommand.getResourceFilterToAcls: each resource with the ACLs the flags give it. */
export function resourceAcls(flags: Flags, patternType: number): [Pattern, Entry[]][] {
  const all = resources(flags, patternType);
  const out = new Map<string, [Pattern, Entry[]]>();
  const put = (p: Pattern, es: Entry[]) => {
    const key = patternText(p);
    const prev = out.get(key)?.[1] ?? [];
    const seen = new Set(prev.map(entryText));
    out.set(key, [p, [...prev, ...es.filter((e) => !seen.has(entryText(e)))]]);
  };
  const { READ, WRITE, DESCRIBE, CREATE, IDEMPOTENT_WRITE } = AclOperation;
  if (!flags.has('producer') && !flags.has('consumer')) {
    const ops = flags.has('operation')
      ? unique(flags.all('operation').map(parseOperation))
      : [AclOperation.ALL];
    for (const p of all) put(p, entries(flags, ops));
  }
  if (flags.has('producer')) {
    for (const p of all.filter((r) => r.resourceType === ResourceType.TOPIC))
      put(p, entries(flags, [WRITE, DESCRIBE, CREATE]));
    for (const p of all.filter((r) => r.resourceType === ResourceType.TRANSACTIONAL_ID))
      put(p, entries(flags, [WRITE, DESCRIBE]));
    if (flags.has('idempotent'))
      put(
        { resourceType: ResourceType.CLUSTER, name: CLUSTER_NAME, patternType: PatternType.LITERAL },
        entries(flags, [IDEMPOTENT_WRITE]),
      );
  }
  if (flags.has('consumer')) {
    for (const p of all.filter((r) => r.resourceType === ResourceType.TOPIC))
      put(p, entries(flags, [READ, DESCRIBE]));
    for (const p of all.filter((r) => r.resourceType === ResourceType.GROUP)) put(p, entries(flags, [READ]));
  }
  for (const [p, es] of out.values()) {
    const valid = [...(SUPPORTED_OPERATIONS.get(p.resourceType) ?? []), AclOperation.ALL];
    if (es.some((e) => !valid.includes(e.operation)))
      throw new UsageError(
        `ResourceType ${resourceTypeName(p.resourceType)} only supports operations ${valid.map(camelName).join(', ')}`,
      );
  }
  return [...out.values()];
}

/** The command line's consistency, as AclCommandOptions.checkArgs. */
function checkArgs(flags: Flags): 'add' | 'remove' | 'list' {
  const actions = (['add', 'remove', 'list'] as const).filter((a) => flags.has(a));
  if (actions.length !== 1)
    throw new UsageError('Command must include exactly one action: --list, --add, --remove. ');
  const action = actions[0]!;
  const invalid = (given: string, others: readonly string[]) => {
    const bad = others.find((o) => flags.has(o));
    if (flags.has(given) && bad !== undefined)
      throw new UsageError(`Option "[${given}]" can't be used with option "[${bad}]"`);
  };
  invalid('list', ['producer', 'consumer', 'allow-host', 'allow-principal', 'deny-host', 'deny-principal']);
  invalid('producer', ['operation', 'deny-principal', 'deny-host']);
  invalid('consumer', ['operation', 'deny-principal', 'deny-host']);
  if (flags.has('principal') && action !== 'list')
    throw new UsageError('The --principal option is only available if --list is set');
  if (flags.has('producer') && !flags.has('topic'))
    throw new UsageError('With --producer you must specify a --topic');
  if (flags.has('idempotent') && !flags.has('producer'))
    throw new UsageError('The --idempotent option is only available if --producer is set');
  if (
    flags.has('consumer') &&
    (!flags.has('topic') ||
      !flags.has('group') ||
      (!flags.has('producer') && (flags.has('cluster') || flags.has('transactional-id'))))
  )
    throw new UsageError(
      'With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified.',
    );
  return action;
}

function toFilter(p: Pattern, e: Entry | null): AclBindingFilter {
  return {
    resourceType: p.resourceType,
    resourceName: p.name,
    patternType: p.patternType,
    principal: e?.principal ?? null,
    host: e?.host ?? null,
    operation: e?.operation ?? AclOperation.ANY,
    permissionType: e?.permissionType ?? AclPermissionType.ANY,
  };
}

/** Asks on a terminal; without one, refuses (so a script does not hang). */
async function askOnTerminal(question: string, io: CliIo): Promise<boolean> {
  if (!process.stdin.isTTY)
    throw new UsageError('--remove asks for confirmation on a terminal; stdin is not one: add --force');
  io.out(question);
  const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
  try {
    return (await rl.question('')).trim().toLowerCase() === 'y';
  } finally {
    rl.close();
  }
}

export function runAcls(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
  confirm: (question: string, io: CliIo) => Promise<boolean> = askOnTerminal,
): Promise<number> {
  return runTool(ACLS, args, io, async (flags) => {
    const action = checkArgs(flags);
    const patternType = parsePatternType(flags);
    let plan: [Pattern, Entry[]][] = [];
    if (action !== 'list') {
      if (action === 'add' && patternType !== PatternType.LITERAL && patternType !== PatternType.PREFIXED)
        throw new UsageError(
          `A '--resource-pattern-type' value of '${patternTypeName(patternType)}' is not valid when adding acls.`,
        );
      plan = resourceAcls(flags, patternType);
      if (plan.length === 0)
        throw new UsageError(
          'You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --delegation-token <Delegation Token ID>',
        );
      if (action === 'add' && plan.some(([, es]) => es.length === 0))
        throw new UsageError(
          'You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.',
        );
    }
    const client = adminClient('acls', flags, runtime);
    try {
      if (action === 'add') {
        for (const [p, es] of plan) {
          for (const l of block(`Adding ACLs for resource \`${patternText(p)}\``, es)) io.out(l);
          await createAcls(
            client,
            es.map((e) => ({
              ...e,
              resourceType: p.resourceType,
              resourceName: p.name!,
              patternType: p.patternType,
            })),
          );
        }
        return 0;
      }
      if (action === 'remove') {
        for (const [p, es] of plan) {
          const question =
            es.length === 0
              ? `Are you sure you want to delete all ACLs for resource filter \`${patternText(p)}\`? (y/n)`
              : [
                  `Are you sure you want to remove ACLs: `,
                  ...block('', es).slice(1, -1),
                  ` from resource filter \`${patternText(p)}\`? (y/n)`,
                ].join('\n');
          if (!flags.has('force') && !(await confirm(question, io))) continue;
          await deleteAcls(client, es.length === 0 ? [toFilter(p, null)] : es.map((e) => toFilter(p, e)));
        }
        return 0;
      }
      await list(client, flags, patternType, io);
      return 0;
    } finally {
      client.close();
    }
  });
}

async function list(
  client: ReturnType<typeof adminClient>,
  flags: Flags,
  patternType: number,
  io: CliIo,
): Promise<void> {
  const filters = resources(flags, patternType);
  const bindings: AclBinding[] = [];
  const any: Pattern = { resourceType: ResourceType.ANY, name: null, patternType: PatternType.ANY };
  for (const f of filters.length === 0 ? [any] : filters)
    bindings.push(...(await describeAcls(client, toFilter(f, null))));
  const byResource = new Map<string, [Pattern, Entry[]]>();
  for (const b of bindings) {
    const p = { resourceType: b.resourceType, name: b.resourceName, patternType: b.patternType };
    const key = patternText(p);
    const es = byResource.get(key)?.[1] ?? [];
    if (!es.some((e) => entryText(e) === entryText(b))) es.push(b);
    byResource.set(key, [p, es]);
  }
  const print = (only: string | null) => {
    for (const [p, es] of byResource.values()) {
      const shown = only === null ? es : es.filter((e) => e.principal === only);
      if (shown.length === 0 && only !== null) continue;
      for (const l of block(`Current ACLs for resource \`${patternText(p)}\``, shown)) io.out(l);
    }
  };
  const listed = principals(flags, 'principal');
  if (listed.length === 0) print(null);
  for (const principal of listed) {
    io.out(`ACLs for principal \`${principal}\``);
    print(principal);
  }
}
