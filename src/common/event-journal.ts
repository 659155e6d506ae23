/**
 * The operator events a broker keeps to answer "what happened here lately" (the dashboard, through
 * SkiffDescribeReplication): the structured log events themselves — a log recovery, a follower's
 * truncation or rebuild, a segment deletion — as they were logged, line and fields, the latest
 * `max` of them. Fed by a tee on the broker's logger, so there is one record of each event: the
 * one the log has.
 */
import type { Clock } from './clock.js';
import type { LogFields, Logger } from './logger.js';

export interface JournalEntry {
  readonly timeMs: number;
  readonly level: 'INFO' | 'WARN';
  /** The event's `event` field: recovery, truncation, rebuild, segment-deletion. */
  readonly event: string;
  readonly message: string;
  readonly fields: LogFields;
}

/** The events kept: what changes a replica's data outside appends. */
export const JOURNALED_EVENTS: ReadonlySet<string> = new Set([
  'recovery',
  'truncation',
  'rebuild',
  'segment-deletion',
]);

export class EventJournal {
  private readonly entries: JournalEntry[] = [];

  constructor(
    private readonly clock: Clock,
    readonly max: number,
    private readonly kinds: ReadonlySet<string> = JOURNALED_EVENTS,
  ) {}

  record(level: 'INFO' | 'WARN', message: string, fields: LogFields | undefined): void {
    const event = fields?.event;
    if (typeof event !== 'string' || !this.kinds.has(event)) return;
    this.entries.push({ timeMs: this.clock.nowMs(), level, event, message, fields: fields! });
    if (this.entries.length > this.max) this.entries.splice(0, this.entries.length - this.max);
  }

  /** Oldest first. */
  list(): readonly JournalEntry[] {
    return [...this.entries];
  }
}

/** `logger`, with every journaled event also recorded in `journal`. */
export function journaling(logger: Logger, journal: EventJournal): Logger {
  return {
    info(line, fields) {
      journal.record('INFO', line, fields);
      logger.info(line, fields);
    },
    warn(line, fields) {
      journal.record('WARN', line, fields);
      logger.warn(line, fields);
    },
  };
}
