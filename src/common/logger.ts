import type { Clock } from './clock.js';

/**
 * Where every layer reports events (recoveries, truncations, ISR changes, deletions): one line
 * each, at INFO or WARN. One interface for all of them; child loggers add Kafka's prefixes.
 *
 * An event that matters to operators also carries `fields`: its kind (`event`) and the numbers
 * behind the line (offsets, epochs, bytes, durations). The text format shows only the line, as
 * today; log.format=json (lineLogger's 'json') writes the line and the fields as one JSON object.
 */
export interface Logger {
  info(line: string, fields?: LogFields): void;
  warn(line: string, fields?: LogFields): void;
}

/** An event's numbers. Bigints (offsets) become JSON numbers when safe, else strings. */
export type LogFields = Readonly<Record<string, unknown>>;

export type LogFormat = 'text' | 'json';

/** log.format's value (absent: text); anything else is an operating error of the config. */
export function parseLogFormat(value: string | undefined): LogFormat {
  const v = (value ?? 'text').trim();
  if (v === 'text' || v === 'json') return v;
  throw new RangeError(`Invalid value ${v} for configuration log.format: String must be one of: text, json`);
}

/**
 * A logger whose lines start with `prefix` and a space, as Kafka's do: `[ReplicaFetcher
 * replicaId=3, leaderId=1]`, `[Partition orders-0 broker=1]`.
 */
export function childLogger(parent: Logger, prefix: string): Logger {
  return {
    info: (line, fields) => parent.info(`${prefix} ${line}`, fields),
    warn: (line, fields) => parent.warn(`${prefix} ${line}`, fields),
  };
}

/** `[2026-12-01T20:53:54.123Z] INFO line`: the one line format of broker processes and the launcher. */
export function formatLogLine(nowMs: number, level: 'INFO' | 'WARN', line: string): string {
  return `[${new Date(nowMs).toISOString()}] ${level} ${line}`;
}

/** An event's fields as one JSON object (bigints as numbers when safe, else strings), as log.format=json writes them. */
export function fieldsJson(fields: LogFields): string {
  return JSON.stringify(fields, jsonValue);
}

const RESERVED = new Set(['time', 'level', 'message']);

function jsonValue(_key: string, value: unknown): unknown {
  if (typeof value !== 'bigint') return value;
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value.toString();
}

/**
 * `{"time":"2026-12-01T20:53:54.123Z","level":"INFO","message":"...","event":"isr-shrink",...}`:
 * log.format=json, one object per line; a field named like the three fixed keys is dropped.
 */
export function formatJsonLogLine(
  nowMs: number,
  level: 'INFO' | 'WARN',
  line: string,
  fields?: LogFields,
): string {
  const out: Record<string, unknown> = { time: new Date(nowMs).toISOString(), level, message: line };
  if (fields) for (const [k, v] of Object.entries(fields)) if (!RESERVED.has(k)) out[k] = v;
  return JSON.stringify(out, jsonValue);
}

/**
 * A logger that hands each line (no newline) to `write`, timestamped by `clock`: formatLogLine's
 * text, or with format 'json' formatJsonLogLine's object.
 */
export function lineLogger(clock: Clock, write: (line: string) => void, format: LogFormat = 'text'): Logger {
  if (format === 'json') {
    return {
      info: (line, fields) => write(formatJsonLogLine(clock.nowMs(), 'INFO', line, fields)),
      warn: (line, fields) => write(formatJsonLogLine(clock.nowMs(), 'WARN', line, fields)),
    };
  }
  return {
    info: (line) => write(formatLogLine(clock.nowMs(), 'INFO', line)),
    warn: (line) => write(formatLogLine(clock.nowMs(), 'WARN', line)),
  };
}

/** Discards everything; for tests and tools that do not want broker log lines. */
export const silentLogger: Logger = Object.freeze({
  info(): void {},
  warn(): void {},
});

/** Keeps every line (and the fields of each event); for tests that assert on what was logged. */
export class MemoryLogger implements Logger {
  readonly lines: string[] = [];
  readonly events: { readonly line: string; readonly fields: LogFields }[] = [];
  info(line: string, fields?: LogFields): void {
    this.lines.push(`INFO ${line}`);
    if (fields) this.events.push({ line, fields });
  }
  warn(line: string, fields?: LogFields): void {
    this.lines.push(`WARN ${line}`);
    if (fields) this.events.push({ line, fields });
  }
}
