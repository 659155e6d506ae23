/**
 * What a `skiff up` broker child and its launcher say to each other on the IPC channel, next to
 * the metadata store's own messages (tagged `skiffStore`; these are tagged `skiffLauncher`).
 */

/** The environment variable carrying the child's server properties as a JSON object. */
export const PROPS_ENV = 'SKIFF_BROKER_PROPS';

export type ChildMessage =
  | { readonly skiffLauncher: 'ready'; readonly host: string; readonly port: number }
  /** `code`: the error's errno-style code when it has one (EADDRINUSE: the port is taken). */
  | { readonly skiffLauncher: 'failed'; readonly message: string; readonly code?: string }
  /** A line of the broker's log the launcher shows on its console: its logs' recovery at start-up. */
  | { readonly skiffLauncher: 'progress'; readonly line: string };

/** The launcher asks a running child for its metrics (`skiff up --http-port`'s /metrics). */
export interface ScrapeRequest {
  readonly skiffLauncher: 'scrape';
  readonly id: number;
}

/** The child's answer: its registry's Prometheus text, or why there is none. */
export interface ScrapeAnswer {
  readonly skiffLauncher: 'metrics';
  readonly id: number;
  readonly text: string | null;
  readonly error?: string;
}

export function isScrapeRequest(m: unknown): m is ScrapeRequest {
  return typeof m === 'object' && m !== null && (m as { skiffLauncher?: unknown }).skiffLauncher === 'scrape';
}

export function isScrapeAnswer(m: unknown): m is ScrapeAnswer {
  return (
    typeof m === 'object' && m !== null && (m as { skiffLauncher?: unknown }).skiffLauncher === 'metrics'
  );
}

export function isChildMessage(m: unknown): m is ChildMessage {
  return (
    typeof m === 'object' &&
    m !== null &&
    ((m as { skiffLauncher?: unknown }).skiffLauncher === 'ready' ||
      (m as { skiffLauncher?: unknown }).skiffLauncher === 'failed' ||
      (m as { skiffLauncher?: unknown }).skiffLauncher === 'progress')
  );
}

/** What ps shows for broker `id` (its process title): `skiff broker 2 /data/broker-2`. */
export function brokerTitle(id: number, logDir: string): string {
  return `skiff broker ${id} ${logDir}`;
}
