import type { Clock } from './clock.js';

/**
 * Where every layer reports events (recoveries, truncations, ISR changes, deletions): one line
 * each, at INFO or WARN. One interface for all of them; child loggers add Kafka's prefixes.
 */
export interface Logger {
  info(line: string): void;
  warn(line: string): void;
}

/**
 * A logger whose lines start with `prefix` and a space, as Kafka's do: `[ReplicaFetcher
 * replicaId=3, leaderId=1]`, `[Partition orders-0 broker=1]`.
 */
export function childLogger(parent: Logger, prefix: string): Logger {
  return {
    info: (line) => parent.info(`${prefix} ${line}`),
    warn: (line) => parent.warn(`${prefix} ${line}`),
  };
}

/** `[2026-12-01T20:53:54.123Z] INFO line`: the one line format of broker processes and the launcher. */
export function formatLogLine(nowMs: number, level: 'INFO' | 'WARN', line: string): string {
  return `[${new Date(nowMs).toISOString()}] ${level} ${line}`;
}

/** A logger that hands each formatLogLine line (no newline) to `write`, timestamped by `clock`. */
export function lineLogger(clock: Clock, write: (line: string) => void): Logger {
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

/** Keeps every line; for tests that assert on what was logged. Owned by one test. */
export class MemoryLogger implements Logger {
  readonly lines: string[] = [];
  info(line: string): void {
    this.lines.push(`INFO ${line}`);
  }
  warn(line: string): void {
    this.lines.push(`WARN ${line}`);
  }
}
