/** Where the storage layer reports events (recoveries, truncations, deletions): one line each. */
export interface StorageLogger {
  info(line: string): void;
  warn(line: string): void;
}

/** Discards everything; for tests and tools that do not want broker log lines. */
export const silentLogger: StorageLogger = Object.freeze({
  info(): void {},
  warn(): void {},
});

/** Keeps every line; for tests that assert on what was logged. Owned by one test. */
export class MemoryLogger implements StorageLogger {
  readonly lines: string[] = [];
  info(line: string): void {
    this.lines.push(`INFO ${line}`);
  }
  warn(line: string): void {
    this.lines.push(`WARN ${line}`);
  }
}
