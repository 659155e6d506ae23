/**
 * What every tool shares: Kafka-style flag parsing (`--flag value` or `--flag=value`), the
 * one-line error rule (a usage error exits 2, an operating error 1, neither prints a stack), and
 * building a client from --bootstrap-server and --command-config.
 */
import * as fs from 'node:fs';
import { ClientError } from '../../client/errors.js';
import { KafkaClient } from '../../client/kafka-client.js';
import { type ClientRuntime, parseBootstrap } from '../../client/runtime.js';
import { parseProperties } from '../../metadata/properties.js';
import type { CliIo } from '../cli.js';

/** A bad command line. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface FlagSpec {
  readonly name: string;
  /** Placeholder for the value in --help; absent for a switch. */
  readonly arg?: string;
  readonly repeat?: boolean;
  /** Takes every following argument up to the next `--flag` (argparse's nargs='+'). */
  readonly many?: boolean;
  readonly help: string;
}

export class Flags {
  constructor(private readonly values: ReadonlyMap<string, string[]>) {}

  has(name: string): boolean {
    return this.values.has(name);
  }

  get(name: string): string | undefined {
    const v = this.values.get(name);
    return v === undefined ? undefined : v[v.length - 1];
  }

  all(name: string): string[] {
    return this.values.get(name) ?? [];
  }

  require(name: string): string {
    const v = this.get(name);
    if (v === undefined) throw new UsageError(`missing required argument --${name}`);
    return v;
  }

  int(name: string): number | undefined {
    const v = this.get(name);
    if (v === undefined) return undefined;
    if (!/^-?\d+$/.test(v.trim())) throw new UsageError(`--${name} expects an integer, got '${v}'`);
    return Number(v);
  }

  number(name: string): number | undefined {
    const v = this.get(name);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n))
      throw new UsageError(`--${name} expects a number, got '${v}'`);
    return n;
  }
}

export interface ToolDef {
  readonly name: string;
  readonly summary: string;
  /** Usage line(s) shown before the options. */
  readonly usage: readonly string[];
  readonly flags: readonly FlagSpec[];
  /** Lines after the options: differences from Kafka's tool worth knowing. */
  readonly notes?: readonly string[];
}

export function helpLines(def: ToolDef): string[] {
  const lines = [...def.usage, '', 'Options:'];
  for (const f of def.flags) {
    const head = `  --${f.name}${f.arg ? ` <${f.arg}>` : ''}`;
    lines.push(head.length < 34 ? `${head.padEnd(34)}${f.help}` : `${head}\n${' '.repeat(34)}${f.help}`);
  }
  lines.push(`  ${'--help'.padEnd(32)}print this help`);
  if (def.notes && def.notes.length > 0) lines.push('', ...def.notes);
  return lines;
}

/** Parses `args` against `def`; null means --help was asked for. */
export function parseFlags(def: ToolDef, args: readonly string[]): Flags | null {
  const specs = new Map(def.flags.map((f) => [f.name, f]));
  const values = new Map<string, string[]>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--help' || a === '-h') return null;
    if (!a.startsWith('--')) throw new UsageError(`unexpected argument '${a}'`);
    const eq = a.indexOf('=');
    const name = eq < 0 ? a.slice(2) : a.slice(2, eq);
    const spec = specs.get(name);
    if (!spec) throw new UsageError(`unknown option '--${name}'`);
    let value = '';
    if (spec.many) {
      const taken = eq >= 0 ? [a.slice(eq + 1)] : [];
      while (i + 1 < args.length && !args[i + 1]!.startsWith('--')) taken.push(args[++i]!);
      if (taken.length === 0)
        throw new UsageError(`option '--${name}' needs at least one value (${spec.arg})`);
      values.set(name, [...(values.get(name) ?? []), ...taken]);
      continue;
    }
    if (spec.arg !== undefined) {
      if (eq >= 0) value = a.slice(eq + 1);
      else if (i + 1 < args.length) value = args[++i]!;
      else throw new UsageError(`option '--${name}' needs a value (${spec.arg})`);
    } else if (eq >= 0) {
      throw new UsageError(`option '--${name}' takes no value`);
    }
    const prev = values.get(name);
    if (prev && !spec.repeat && spec.arg !== undefined) {
      throw new UsageError(`option '--${name}' given more than once`);
    }
    values.set(name, [...(prev ?? []), value]);
  }
  return new Flags(values);
}

/**
 * Runs a tool body under the one-line error rule. Unexpected errors (bugs) also get one line, with
 * the stack only when SKIFF_DEBUG is set, so an operator never sees a trace by default.
 */
export async function runTool(
  def: ToolDef,
  args: readonly string[],
  io: CliIo,
  body: (flags: Flags) => Promise<number>,
  debug = false,
): Promise<number> {
  let flags: Flags | null;
  try {
    flags = parseFlags(def, args);
  } catch (e) {
    io.err(`skiff ${def.name}: ${(e as Error).message} (see skiff ${def.name} --help)`);
    return 2;
  }
  if (flags === null) {
    for (const l of helpLines(def)) io.out(l);
    return 0;
  }
  try {
    return await body(flags);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`skiff ${def.name}: ${e.message} (see skiff ${def.name} --help)`);
      return 2;
    }
    const msg = e instanceof Error ? e.message : String(e);
    io.err(`skiff ${def.name}: ${msg.split('\n')[0]}`);
    if (debug && !(e instanceof ClientError) && e instanceof Error && e.stack) io.err(e.stack);
    return 1;
  }
}

/** Properties from a --command-config / --producer.config file; a missing file is one clear error. */
export function readPropertiesFile(path: string): Map<string, string> {
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (e) {
    throw new ClientError(
      `cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  return parseProperties(text);
}

/** `k=v` pairs as Kafka's --producer-props / --property take them. */
export function parseKeyValues(pairs: readonly string[], flag: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const p of pairs) {
    const eq = p.indexOf('=');
    if (eq <= 0) throw new UsageError(`invalid ${flag} '${p}' (expected key=value)`);
    m.set(p.slice(0, eq).trim(), p.slice(eq + 1).trim());
  }
  return m;
}

/**
 * A client for `bootstrap` (host:port[,host:port]) with the client settings a properties file may
 * carry (client.id, request.timeout.ms, retries, retry.backoff.ms).
 */
export function openClient(
  tool: string,
  bootstrap: string,
  runtime: ClientRuntime,
  props: ReadonlyMap<string, string> = new Map(),
): KafkaClient {
  let servers: ReturnType<typeof parseBootstrap>;
  try {
    servers = parseBootstrap(bootstrap);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const num = (k: string): number | undefined => {
    const v = props.get(k);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n)) throw new ClientError(`invalid value '${v}' for ${k}`);
    return n;
  };
  return new KafkaClient({
    bootstrap: servers,
    clientId: props.get('client.id') ?? `skiff-${tool}`,
    runtime,
    requestTimeoutMs: num('request.timeout.ms'),
    retries: num('retries'),
    retryBackoffMs: num('retry.backoff.ms'),
    apiTimeoutMs: num('default.api.timeout.ms'),
  });
}

/** Kafka's --bootstrap-server plus --command-config, the pair most admin tools take. */
export const ADMIN_FLAGS: readonly FlagSpec[] = [
  {
    name: 'bootstrap-server',
    arg: 'host:port',
    help: 'REQUIRED: the broker(s) to connect to, comma-separated',
  },
  {
    name: 'command-config',
    arg: 'file',
    help: 'properties file with client settings (client.id, request.timeout.ms, ...)',
  },
];

export function adminClient(tool: string, flags: Flags, runtime: ClientRuntime): KafkaClient {
  const bootstrap = flags.get('bootstrap-server');
  if (bootstrap === undefined) throw new UsageError('missing required argument --bootstrap-server');
  const cc = flags.get('command-config');
  return openClient(tool, bootstrap, runtime, cc === undefined ? new Map() : readPropertiesFile(cc));
}
