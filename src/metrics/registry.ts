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
import { labelSet, TextFamily } from './text-family.js';

export type { Registry } from 'prom-client';

/**
 * prom-client's Registry, except that a TextFamily writes its own text (text-family.ts); every
 * other metric, and the OpenMetrics format, go through prom-client as before.
 */
class SkiffRegistry extends Registry {
  /** The default labels as exposition text (`node_id="1"`), '' when none. */
  private defaultLabelsText = '';

  override setDefaultLabels(labels: object): void {
    super.setDefaultLabels(labels);
    this.defaultLabelsText = labelSet(labels as Record<string, string | number>).text;
  }

  override async metrics(): Promise<string> {
    if (this.contentType !== Registry.PROMETHEUS_CONTENT_TYPE) return super.metrics();
    // One synchronous pass over the families, as prom-client's own: PerScrape relies on it.
    const texts = this.getMetricsAsArray().map((m: object & { name: string }) =>
      m instanceof TextFamily ? m.text(this.defaultLabelsText) : this.getSingleMetricAsString(m.name),
    );
    return `${(await Promise.all(texts)).join('\n\n')}\n`;
  }
}

export interface Metrics {
  readonly registry: Registry;
  /** A monotonic clock in milliseconds with sub-millisecond resolution (performance.now). */
  readonly monotonicMs: () => number;
}

/** The Prometheus text format's content type (version 0.0.4). */
export const PROMETHEUS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/** A fresh registry with the process metrics; call once per process, in its composition root. */
export function createProcessMetrics(monotonicMs: () => number): Metrics {
  const registry = new SkiffRegistry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });
  return { registry, monotonicMs };
}
