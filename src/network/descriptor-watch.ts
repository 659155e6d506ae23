import * as fs from 'node:fs';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';

/** How often the descriptors in use are counted. */
const SAMPLE_PERIOD_MS = 1_000;

/** Whether `e` says the process (EMFILE) or the system (ENFILE) has no descriptor left. */
export function isDescriptorExhaustion(e: unknown): e is NodeJS.ErrnoException {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  return code === 'EMFILE' || code === 'ENFILE';
}

/** The process's soft limit on open descriptors (`ulimit -n`), from /proc/self/limits; null if unknown. */
function descriptorLimit(): number | null {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
  return m === null || m[1] === 'unlimited' ? null : Number(m[1]);
}

/**
 * Watches for the process running out of file descriptors, and says so once. When every
 * descriptor is taken, a listener cannot accept: Node's event loop (libuv) then accepts and closes
 * at once every pending connection with a reserved descriptor, and tells nobody — a client sees
 * its connection close, the broker logs nothing. Kafka's Acceptor logs the accept's "Too many open
 * files" IOException each time it selects the listening socket again, which under a retrying
 * client is a line per attempt. Here the state is logged on change: one warning when the
 * descriptors run out (found by counting /proc/self/fd against the limit each second, or at once
 * when anything reports EMFILE/ENFILE through `exhausted`), one line when they are free again. The
 * broker keeps serving the connections it has meanwhile. Linux only (inert without /proc).
 */
export class DescriptorWatch {
  private cancel: (() => void) | null = null;
  private readonly availableListeners: (() => void)[] = [];
  private out = false;
  /** ulimit -n as last read (reading it takes a descriptor too: the last value is kept when none is left). */
  private limit: number | null = null;
  private readonly available = fs.existsSync('/proc/self/fd');

  constructor(
    private readonly scheduler: Scheduler,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (!this.available || this.cancel !== null) return;
    this.limit = descriptorLimit();
    const run = (): void => {
      this.sample();
      this.cancel = this.scheduler.schedule('descriptor-watch', SAMPLE_PERIOD_MS, run);
    };
    this.cancel = this.scheduler.schedule('descriptor-watch', SAMPLE_PERIOD_MS, run);
  }

  stop(): void {
    this.cancel?.();
    this.cancel = null;
  }

  /** Descriptors ran out now (an EMFILE or ENFILE seen by a caller): logged unless already known. */
  exhausted(e: NodeJS.ErrnoException): void {
    if (!this.available) return;
    this.change(true, e.code === 'ENFILE' ? 'the system has no file descriptor left (ENFILE)' : null);
  }

  /** Runs `work` and returns what it returns; an EMFILE or ENFILE it throws is reported (exhausted) rather than thrown. */
  guard<T>(work: () => T): T | undefined {
    try {
      return work();
    } catch (e) {
      if (!this.absorbs(e)) throw e;
      return undefined;
    }
  }

  /** True when `e` is an EMFILE or ENFILE, then reported (exhausted); what guard does with a thrown error. */
  absorbs(e: unknown): boolean {
    if (!isDescriptorExhaustion(e)) return false;
    this.exhausted(e);
    return true;
  }

  /** Runs `listener` each time descriptors are found free again after running out: work they failed can be redone. */
  onAvailable(listener: () => void): void {
    this.availableListeners.push(listener);
  }

  /** Descriptors are out now (as last counted or reported). */
  get exhaustedNow(): boolean {
    return this.out;
  }

  /**
   * Counts the descriptors in use. The listing holds one of its own, so a listing that succeeds
   * with every descriptor listed means none was free before it; one that fails with EMFILE means
   * the same.
   */
  private sample(): void {
    let inUse: number;
    try {
      this.limit = descriptorLimit();
      inUse = fs.readdirSync('/proc/self/fd').length;
    } catch (e) {
      if (isDescriptorExhaustion(e)) this.change(true, null);
      return;
    }
    if (this.limit !== null) this.change(inUse >= this.limit, null, inUse);
  }

  private change(out: boolean, why: string | null, inUse?: number): void {
    if (out === this.out) return;
    this.out = out;
    if (out) {
      this.logger.warn(
        `Too many open files: ${why ?? `all ${this.limit ?? 'the'} file descriptors of the process (ulimit -n) are in use`}; new connections are closed as they are accepted, and file operations fail, until descriptors are freed (further refusals are not logged)`,
      );
    } else {
      this.logger.info(
        `file descriptors available again (${inUse} of ${this.limit} in use): accepting connections`,
      );
      for (const listener of this.availableListeners) listener();
    }
  }
}
