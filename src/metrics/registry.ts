/**
 * The metrics of one process, as the composition roots create them: a prom-client Registry with
 * Node's process metrics (CPU, RSS, heap, event-loop delay, GC) under their standard names, and
 * the monotonic clock request latencies are measured with. Created by `skiff broker`, a `skiff
 * up` broker child or a test, and passed down: nothing below the composition root makes one, and
 * a process never has a second (one registry per broker; prom-client's global one is not used).
 *
 * The process metrics keep prom-client's names (`process_cpu_seconds_total`,
 * `process_resident_memory_bytes`, `nodejs_eventloop_lag_p99_seconds`, ...): they are the names
 * every Node.js dashboard and alert already uses; Skiff's own metrics are prefixed `skiff_`.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';

export type { Registry } from 'prom-client';

export interface Metrics {
  readonly registry: Registry;
  /** A monotonic clock in milliseconds with sub-millisecond resolution (performance.now). */
  readonly monotonicMs: () => number;
}

/** The Prometheus text format's content type (version 0.0.4). */
export const PROMETHEUS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/** A fresh registry with the process metrics; call once per process, in its composition root. */
export function createProcessMetrics(monotonicMs: () => number): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });
  return { registry, monotonicMs };
}
