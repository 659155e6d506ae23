/**
 * Time as the code sees it. Everything that reads time takes a Clock, so tests and the simulated
 * cluster can move time explicitly instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  nowMs(): number;
}

/** The operating system's wall clock; only the composition root should create one. */
export class SystemClock implements Clock {
  nowMs(): number {
    return Date.now();
  }
}

/**
 * A clock that only moves when told to. Owned by one test or simulation; time never goes backwards.
 */
export class ManualClock implements Clock {
  private currentMs: number;

  constructor(startMs = 1_700_000_000_000) {
    this.currentMs = startMs;
  }

  nowMs(): number {
    return this.currentMs;
  }

  advance(deltaMs: number): void {
    if (deltaMs < 0) throw new RangeError(`cannot move a clock backwards by ${deltaMs} ms`);
    this.currentMs += deltaMs;
  }

  setMs(ms: number): void {
    if (ms < this.currentMs) throw new RangeError(`cannot move a clock back from ${this.currentMs} to ${ms}`);
    this.currentMs = ms;
  }
}
