import type { Clock } from '../common/clock.js';
import type { LogFields, Logger } from '../common/logger.js';
import type { Log } from './log.js';

/** How often, at most, loading a log dir says how far it has got. */
const LOAD_PROGRESS_INTERVAL_MS = 1000;

/**
 * Kafka's LogManager.loadLogs lines for one log dir: whether its logs are recovered (no clean-
 * shutdown marker) or loaded, then "Completed load of ... (k/N completed in DIR)" — for the last
 * log, and for the latest one whenever LOAD_PROGRESS_INTERVAL_MS has passed (Kafka writes one per
 * log, thousands for a large broker). Each line carries the event `log-load` with its numbers, which
 * `skiff up` shows on its console while a broker recovers. Owned by one LogManager.loadLogDir call.
 */
export class LoadProgress {
  private done = 0;
  private lastLineMs: number;

  constructor(
    private readonly logger: Logger,
    private readonly clock: Clock,
    private readonly dir: string,
    private readonly total: number,
    private readonly recovering: boolean,
  ) {
    this.lastLineMs = clock.nowMs();
    if (total === 0) return;
    const line = recovering
      ? `Recovering ${total} logs from ${dir} since no clean shutdown file was found`
      : `Skipping recovery of ${total} logs from ${dir} since clean shutdown file was found`;
    logger.info(line, this.fields());
  }

  loaded(log: Log, durationMs: number): void {
    this.done++;
    const nowMs = this.clock.nowMs();
    if (this.done < this.total && nowMs - this.lastLineMs < LOAD_PROGRESS_INTERVAL_MS) return;
    this.lastLineMs = nowMs;
    this.logger.info(
      `Completed load of log ${log.topic}-${log.partition} with ${log.local.segments.size} segments, log-start-offset ${log.logStartOffset} and log-end-offset ${log.logEndOffset} in ${durationMs}ms (${this.done}/${this.total} completed in ${this.dir})`,
      this.fields(),
    );
  }

  private fields(): LogFields {
    return {
      event: 'log-load',
      logDir: this.dir,
      loaded: this.done,
      total: this.total,
      recovering: this.recovering,
    };
  }
}
