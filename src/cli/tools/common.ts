/**
 * What every tool shares: Kafka-style flag parsing (`--flag value` or `--flag=value`), the
 * one-line error rule (a usage error exits 2, an operating error 1, neither prints a stack), and
 * building a client from --bootstrap-server and --command-config.
 */
import * as fs from 'node:fs';
import { parseArgs } from 'node:util';
import { ClientError } from '../../client/errors.js';
import { KafkaClient } from '../../client/kafka-client.js';
import { type ClientRuntime, parseBootstrap } from '../../client/runtime.js';
import { clientSecurity } from '../../client/security-config.js';
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
  constructor(
    private readonly values: ReadonlyMap<string, string[]>,
    /** The arguments that are not options, in order (only for a tool that declares `positionals`). */
    readonly positionals: readonly string[] = [],
  ) {}

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
  /**
   * Arguments besides the options (`skiff cluster stop 2`, `skiff broker server.properties`);
   * absent: any is an error. How many, and what they mean, the tool checks.
   */
  readonly positionals?: string;
  /** A usage error also prints the usage lines (the launcher and broker commands always have). */
  readonly usageOnError?: boolean;
}

/** The --help notes of the commands that run brokers (skiff broker, skiff up): how Skiff loads a torn log. */
export const TORN_TAIL_NOTES: readonly string[] = [
  'Unlike Kafka: a torn or corrupt tail found when a log is loaded is cut off the .log file itself',
  '(the file ends at the last valid batch), and the active segment is checked after a clean',
  'shutdown too. Kafka checks only after an unclean one and may leave such bytes in the file (seed',
  "14.3: a follower's file 372376 bytes, the leader's 356664). Why: replicas stay byte-identical and",
  'no tool or fetch ever reads the torn bytes as data.',
];

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

/**
 * Parses `args` against `def` with node:util's parseArgs (its tokens, in order), then Kafka's rules
 * on top: `--flag value` or `--flag=value`, a switch takes no value, a flag given twice is an
 * error unless it repeats, a `many` flag takes every following argument up to the next option.
 * null means --help (or -h) was asked for before any error.
 */
export function parseFlags(def: ToolDef, args: readonly string[]): Flags | null {
  const specs = new Map(def.flags.map((f) => [f.name, f]));
  const options: Record<string, { type: 'string' | 'boolean'; multiple: true; short?: string }> = {
    help: { type: 'boolean', multiple: true, short: 'h' },
  };
  // A `many` flag is parsed as a switch: parseArgs leaves its values as the positionals after it.
  for (const f of def.flags)
    options[f.name] = { type: f.arg !== undefined && !f.many ? 'string' : 'boolean', multiple: true };
  const { tokens } = parseArgs({
    args: [...args],
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const values = new Map<string, string[]>();
  let collecting: { name: string; taken: string[] } | null = null;
  let lastRaw = -1;
  const positionals: string[] = [];
  const close = (): void => {
    if (collecting === null) return;
    const c = collecting;
    collecting = null;
    if (c.taken.length === 0)
      throw new UsageError(`option '--${c.name}' needs at least one value (${specs.get(c.name)!.arg})`);
    values.set(c.name, [...(values.get(c.name) ?? []), ...c.taken]);
  };
  for (const t of tokens) {
    if (t.kind === 'positional') {
      if (collecting === null && def.positionals !== undefined) {
        positionals.push(t.value);
        continue;
      }
      if (collecting === null) throw new UsageError(`unexpected argument '${t.value}'`);
      (collecting as { taken: string[] }).taken.push(t.value);
      continue;
    }
    if (t.kind === 'option' && !t.rawName.startsWith('--')) {
      // `-x` (or a group `-xyz`, one token per letter): Kafka's tools take only long options, but a
      // `many` flag takes such an argument as one of its values, as written.
      const raw = args[t.index]!;
      if (raw === '-h') return null;
      if (collecting === null) throw new UsageError(`unexpected argument '${raw}'`);
      const taken = (collecting as { taken: string[] }).taken;
      if (lastRaw !== t.index) taken.push(raw);
      lastRaw = t.index;
      continue;
    }
    close();
    if (t.kind === 'option-terminator') throw new UsageError("unknown option '--'");
    if (t.name === 'help') return null;
    const spec = specs.get(t.name);
    if (!spec) throw new UsageError(`unknown option '--${t.name}'`);
    if (spec.many) {
      collecting = { name: t.name, taken: t.value === undefined ? [] : [t.value] };
      continue;
    }
    if (spec.arg === undefined && t.value !== undefined)
      throw new UsageError(`option '--${t.name}' takes no value`);
    if (spec.arg !== undefined && t.value === undefined)
      throw new UsageError(`option '--${t.name}' needs a value (${spec.arg})`);
    const prev = values.get(t.name);
    if (prev && !spec.repeat && spec.arg !== undefined) {
      throw new UsageError(`option '--${t.name}' given more than once`);
    }
    values.set(t.name, [...(prev ?? []), t.value ?? '']);
  }
  close();
  return new Flags(values, positionals);
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
    return usageError(def, io, e as Error);
  }
  if (flags === null) {
    for (const l of helpLines(def)) io.out(l);
    return 0;
  }
  try {
    return await body(flags);
  } catch (e) {
    if (e instanceof UsageError) return usageError(def, io, e);
    const msg = e instanceof Error ? e.message : String(e);
    io.err(`skiff ${def.name}: ${msg.split('\n')[0]}`);
    if (debug && !(e instanceof ClientError) && e instanceof Error && e.stack) io.err(e.stack);
    return 1;
  }
}

/** An integer flag within [min, max], or `fallback` when absent; anything else is a usage error. */
export function intFlag(flags: Flags, name: string, fallback: number, min: number, max: number): number {
  const n = flags.int(name);
  if (n === undefined) return fallback;
  if (n < min || n > max) throw new UsageError(`--${name}: expected an integer in ${min}..${max}, got ${n}`);
  return n;
}

/** A bad command line: one line on stderr (and the usage, for the commands that print it), exit 2. */
function usageError(def: ToolDef, io: CliIo, e: Error): number {
  io.err(`skiff ${def.name}: ${e.message} (see skiff ${def.name} --help)`);
  if (def.usageOnError) for (const l of def.usage) io.out(l);
  return 2;
}

/** A file a flag names, as text; a missing file is one clear error. */
export function readTextFile(path: string): string {
  return readBinaryFile(path).toString('utf8');
}

/** A file a setting names (a PEM trust store), as bytes; a missing file is one clear error. */
export function readBinaryFile(path: string): Buffer {
  try {
    return fs.readFileSync(path);
  } catch (e) {
    throw new ClientError(
      `cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
}

/** Properties from a --command-config / --producer.config file; a missing file is one clear error. */
export function readPropertiesFile(path: string): Map<string, string> {
  return parseProperties(readTextFile(path));
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
 * carry (client.id, request.timeout.ms, retries, retry.backoff.ms, and security.protocol with the
 * ssl.* settings: every tool connects the same way).
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
  const security = clientSecurity(props, readBinaryFile);
  return new KafkaClient({
    bootstrap: servers,
    ...(security.tls && { tls: security.tls }),
    ...(security.sasl && { sasl: security.sasl }),
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
    help: 'properties file with client settings (client.id, request.timeout.ms, security.protocol, ssl.*, sasl.mechanism, sasl.jaas.config, ...)',
  },
];

export function adminClient(tool: string, flags: Flags, runtime: ClientRuntime): KafkaClient {
  const bootstrap = flags.get('bootstrap-server');
  if (bootstrap === undefined) throw new UsageError('missing required argument --bootstrap-server');
  const cc = flags.get('command-config');
  return openClient(tool, bootstrap, runtime, cc === undefined ? new Map() : readPropertiesFile(cc));
}
