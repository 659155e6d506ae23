/**
 * The log cleaner's gauges (Kafka's LogCleaner and LogCleanerManager metrics), computed when
 * scraped from what the cleaner keeps of each thread's latest cleaning and latest look for a log:
 *   skiff_log_cleaner_max_buffer_utilization_percent  max-buffer-utilization-percent
 *   skiff_log_cleaner_recopy_percent                  cleaner-recopy-percent
 *   skiff_log_cleaner_max_clean_time_seconds          max-clean-time-secs
 *   skiff_log_cleaner_max_compaction_delay_seconds    max-compaction-delay-secs
 *   skiff_log_cleaner_dead_threads                    DeadThreadCount
 *   skiff_log_cleaner_time_since_last_run_seconds     time-since-last-run-ms (in seconds)
 *   skiff_log_cleaner_max_dirty_percent               max-dirty-percent
 *   skiff_log_cleaner_uncleanable_partitions{log_dir} uncleanable-partitions-count{logDirectory}
 *   skiff_log_cleaner_uncleanable_bytes{log_dir}      uncleanable-bytes{logDirectory}
 * Percentages and whole seconds are truncated to integers as Kafka's gauges are (Kafka truncates
 * the buffer utilization before multiplying by 100, which leaves it 0 or 100; here it is the
 * percent it is named for). Registered by the Broker when its LogManager has a cleaner.
 */
import type { Clock } from '../common/clock.js';
import type { Registry } from '../metrics/registry.js';
import { PerScrape, registerScrapeFamily } from '../metrics/scrape-family.js';
import type { LogCleaner, Uncleanable } from '../storage/log-cleaner.js';

export interface CleanerGauges {
  readonly maxBufferUtilizationPercent: number;
  readonly recopyPercent: number;
  readonly maxCleanTimeSecs: number;
  readonly maxCompactionDelaySecs: number;
  readonly deadThreadCount: number;
  readonly timeSinceLastRunMs: number;
  readonly maxDirtyPercent: number;
  readonly uncleanable: ReadonlyMap<string, Uncleanable>;
}

/** Kafka's formulas over the cleaner's threads and manager state at `nowMs`. */
export function cleanerGauges(cleaner: LogCleaner, logDirs: readonly string[], nowMs: number): CleanerGauges {
  let maxUtilization = 0;
  let maxCleanMs = 0;
  let maxDelayMs = 0;
  let read = 0;
  let written = 0;
  let dead = 0;
  for (const t of cleaner.threadStates()) {
    if (t.dead) dead++;
    maxDelayMs = Math.max(maxDelayMs, t.lastMaxCompactionDelayMs);
    const s = t.lastStats;
    if (s === null) continue;
    maxUtilization = Math.max(maxUtilization, s.bufferUtilization);
    maxCleanMs = Math.max(maxCleanMs, s.endMs - s.startMs);
    read += s.bytesRead;
    written += s.bytesWritten;
  }
  const uncleanable = new Map<string, Uncleanable>();
  for (const dir of logDirs) uncleanable.set(dir, cleaner.uncleanableIn(dir));
  return {
    maxBufferUtilizationPercent: Math.trunc(100 * maxUtilization),
    recopyPercent: Math.trunc((100 * written) / Math.max(read, 1)),
    maxCleanTimeSecs: Math.trunc(maxCleanMs / 1000),
    maxCompactionDelaySecs: Math.trunc(maxDelayMs / 1000),
    deadThreadCount: dead,
    timeSinceLastRunMs: nowMs - cleaner.timeOfLastRunMs,
    maxDirtyPercent: Math.trunc(100 * cleaner.dirtiestCleanableRatio),
    uncleanable,
  };
}

export function registerCleanerMetrics(
  registry: Registry,
  cleaner: LogCleaner,
  logDirs: readonly string[],
  clock: Clock,
): void {
  const gauges = new PerScrape(() => cleanerGauges(cleaner, logDirs, clock.nowMs()));
  const gauge = (name: string, help: string, pick: (g: CleanerGauges) => number): void =>
    registerScrapeFamily(registry, name, help, 'gauge', (emit) => emit({}, pick(gauges.get())));
  gauge(
    'skiff_log_cleaner_max_buffer_utilization_percent',
    "The fullest offset map of the cleaner threads' latest cleanings, in percent (Kafka's max-buffer-utilization-percent)",
    (g) => g.maxBufferUtilizationPercent,
  );
  gauge(
    'skiff_log_cleaner_recopy_percent',
    "Bytes written over bytes read by the cleaner threads' latest cleanings, in percent (Kafka's cleaner-recopy-percent)",
    (g) => g.recopyPercent,
  );
  gauge(
    'skiff_log_cleaner_max_clean_time_seconds',
    "The longest of the cleaner threads' latest cleanings, whole seconds (Kafka's max-clean-time-secs)",
    (g) => g.maxCleanTimeSecs,
  );
  gauge(
    'skiff_log_cleaner_max_compaction_delay_seconds',
    "How far past max.compaction.lag.ms the most overdue compacted log was when a thread last picked a log, whole seconds (Kafka's max-compaction-delay-secs)",
    (g) => g.maxCompactionDelaySecs,
  );
  gauge(
    'skiff_log_cleaner_dead_threads',
    "Cleaner threads stopped by an unexpected error (Kafka's DeadThreadCount)",
    (g) => g.deadThreadCount,
  );
  gauge(
    'skiff_log_cleaner_time_since_last_run_seconds',
    "Time since a cleaner thread last looked for a log to clean (Kafka's time-since-last-run-ms, in seconds)",
    (g) => g.timeSinceLastRunMs / 1000,
  );
  gauge(
    'skiff_log_cleaner_max_dirty_percent',
    "The dirty ratio of the dirtiest compacted log when a thread last looked, in percent (Kafka's max-dirty-percent)",
    (g) => g.maxDirtyPercent,
  );
  const perDir = (name: string, help: string, pick: (u: Uncleanable) => number): void =>
    registerScrapeFamily(registry, name, help, 'gauge', (emit) => {
      for (const [dir, u] of gauges.get().uncleanable) emit({ log_dir: dir }, pick(u));
    });
  perDir(
    'skiff_log_cleaner_uncleanable_partitions',
    "Partitions the cleaner marked uncleanable after an error cleaning them, per log dir (Kafka's uncleanable-partitions-count)",
    (u) => u.partitions,
  );
  perDir(
    'skiff_log_cleaner_uncleanable_bytes',
    "Cleanable bytes of the uncleanable partitions, per log dir (Kafka's uncleanable-bytes)",
    (u) => u.bytes,
  );
}
