/**
 * Kafka's metric statistics as its client quotas use them (clients' metrics/stats/SampledStat,
 * Rate, Avg and server-common's QuotaUtils), pure and on caller-given times.
 *
 * A SampledStat keeps `samples` + 1 samples (one extra for a sample overlapping the window's
 * start). A sample begins at the time of the first value recorded into it — not at a multiple of
 * the sample span — and is complete once `sampleMs` has passed since it began; the next value then
 * starts the following sample. Samples with no value for `samples` × `sampleMs` are reset when
 * measured. A Rate divides the retained sum by its window size, which counts at least
 * `samples` - 1 whole sample spans (a young or idle meter is padded, so one large value does not
 * read as a huge rate). That padding is what lets a fresh client through at once and what the
 * throttle time is computed from, so client quotas use this and not replication's observed meter
 * (replication/quota.ts's WindowedRate, for operators' readings): that one's samples are aligned
 * to multiples of the span so that every meter of a quota covers the same span — the partitions
 * add up to the broker's total, a leader's and its follower's readings agree — which samples
 * begun at their first value cannot give (measured: the seed 13.3 pair's partitions no longer
 * summed to the follower's line).
 */

export interface SampleWindow {
  /** quota.window.num */
  readonly samples: number;
  /** quota.window.size.seconds × 1000 */
  readonly sampleMs: number;
}

interface Sample {
  startMs: number;
  lastEventMs: number;
  eventCount: number;
  value: number;
}

/** The samples of one statistic; owned by the Rate or Avg that made it. */
class SampledStat {
  private readonly samples: Sample[] = [];
  private current = 0;

  constructor(readonly window: SampleWindow) {}

  record(value: number, nowMs: number): void {
    let s = this.currentSample(nowMs);
    if (nowMs - s.startMs >= this.window.sampleMs) s = this.advance(nowMs);
    s.value += value;
    s.eventCount += 1;
    s.lastEventMs = nowMs;
  }

  private currentSample(nowMs: number): Sample {
    if (this.samples.length === 0) this.samples.push(newSample(nowMs));
    return this.samples[this.current]!;
  }

  private advance(nowMs: number): Sample {
    this.current = (this.current + 1) % (this.window.samples + 1);
    if (this.current >= this.samples.length) {
      const s = newSample(nowMs);
      this.samples.push(s);
      return s;
    }
    const s = this.samples[this.current]!;
    reset(s, nowMs);
    return s;
  }

  /** Resets samples with no value within the whole window (they overlap it no more). */
  purge(nowMs: number): void {
    const expireMs = this.window.samples * this.window.sampleMs;
    for (const s of this.samples) if (nowMs - s.lastEventMs >= expireMs) reset(s, nowMs);
  }

  oldestStartMs(nowMs: number): number {
    if (this.samples.length === 0) this.samples.push(newSample(nowMs));
    let oldest = this.samples[0]!.startMs;
    for (const s of this.samples) if (s.startMs < oldest) oldest = s.startMs;
    return oldest;
  }

  /** Sum of values and of events over the retained samples, after purging. */
  totals(nowMs: number): { value: number; events: number } {
    this.purge(nowMs);
    let value = 0;
    let events = 0;
    for (const s of this.samples) {
      value += s.value;
      events += s.eventCount;
    }
    return { value, events };
  }
}

function newSample(nowMs: number): Sample {
  return { startMs: nowMs, lastEventMs: nowMs, eventCount: 0, value: 0 };
}

function reset(s: Sample, nowMs: number): void {
  s.startMs = nowMs;
  s.lastEventMs = nowMs;
  s.eventCount = 0;
  s.value = 0;
}

/** A statistic over samples (Kafka's MeasurableStat over a SampledStat). */
abstract class Sampled {
  protected readonly stat: SampledStat;

  constructor(window: SampleWindow) {
    this.stat = new SampledStat(window);
  }

  record(value: number, nowMs: number): void {
    this.stat.record(value, nowMs);
  }

  abstract measure(nowMs: number): number;
}

/** Kafka's Rate (a WindowedSum per second): bytes/s, or percent for request time in percent-seconds. */
export class Rate extends Sampled {
  /** Kafka's Rate.windowSize: the retained span, padded to `samples` - 1 whole sample spans, ≥ 1 ms. */
  windowSizeMs(nowMs: number): number {
    const { samples, sampleMs } = this.stat.window;
    this.stat.purge(nowMs);
    let elapsed = nowMs - this.stat.oldestStartMs(nowMs);
    const full = Math.floor(elapsed / sampleMs);
    if (full < samples - 1) elapsed += (samples - 1 - full) * sampleMs;
    return Math.max(elapsed, 1);
  }

  /** The value per second now. */
  measure(nowMs: number): number {
    const sum = this.stat.totals(nowMs).value;
    return (sum * 1000) / this.windowSizeMs(nowMs);
  }
}

/** Kafka's Avg: the mean of the values recorded within the retained samples (NaN when none). */
export class Avg extends Sampled {
  measure(nowMs: number): number {
    const { value, events } = this.stat.totals(nowMs);
    return events === 0 ? Number.NaN : value / events;
  }
}

/** Kafka's default MetricConfig (2 samples of 30 s): what its throttle-time Avg sensors use. */
export const DEFAULT_METRIC_WINDOW: SampleWindow = Object.freeze({ samples: 2, sampleMs: 30_000 });

/**
 * Kafka's QuotaUtils.throttleTime: how long to wait, with nothing more recorded, for an observed
 * rate O over a window W to come down to the bound T — O × W / (W + X) = T, so X = (O - T) / T × W,
 * rounded to the nearest millisecond. `maxMs` caps it (boundedThrottleTime: the request quota caps
 * at one sample span).
 */
export function throttleTimeMs(
  observed: number,
  bound: number,
  windowSizeMs: number,
  maxMs = Number.POSITIVE_INFINITY,
): number {
  const ms = Math.round(((observed - bound) / bound) * windowSizeMs);
  return Math.min(ms, maxMs);
}

/**
 * Kafka's TokenBucket (KIP-599), the controller mutation quota's measure: credits refill at the
 * quota's rate up to a burst of `samples` × `sampleMs` worth of it, and a recorded value takes its
 * credits at once, so the bucket may go below zero — a burst is let through whole, and the wait
 * after it is just what refills the deficit (a Rate would hold the burst until its sample expired).
 * The bound is passed at each call, so an altered quota applies to the credits already there.
 * Kafka's starts empty at time 0, which is full at any real clock's time; this one starts full.
 */
export class TokenBucket {
  private tokens = Number.NaN;
  private lastUpdateMs = 0;

  constructor(private readonly window: SampleWindow) {}

  /** The credits left now (below zero: the quota is exhausted). */
  measure(bound: number, nowMs: number): number {
    this.refill(bound, nowMs);
    return this.tokens;
  }

  record(value: number, bound: number, nowMs: number): void {
    this.refill(bound, nowMs);
    this.tokens = Math.min(this.burst(bound), this.tokens - value);
  }

  private burst(bound: number): number {
    return (this.window.samples * this.window.sampleMs * bound) / 1000;
  }

  private refill(bound: number, nowMs: number): void {
    const burst = this.burst(bound);
    if (Number.isNaN(this.tokens)) this.tokens = burst;
    else this.tokens = Math.min(burst, this.tokens + (bound * Math.max(0, nowMs - this.lastUpdateMs)) / 1000);
    this.lastUpdateMs = nowMs;
  }
}

/**
 * Kafka's ControllerMutationQuotaManager.throttleTimeMs: how long, with nothing more recorded, a
 * bucket `tokens` below zero takes to refill to zero at `bound` per second.
 */
export function tokenBucketThrottleTimeMs(tokens: number, bound: number): number {
  return Math.round((-tokens / bound) * 1000);
}
