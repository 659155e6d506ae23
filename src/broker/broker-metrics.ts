/**
 * The metrics a broker updates as it works (Kafka's RequestMetrics and BrokerTopicMetrics):
 * requests, errors by code and latency per API; bytes and messages in per topic (produce, as the
 * leader appends) and bytes out per topic (consumer fetches; replica fetches count as replication
 * bytes, as in Kafka). Cheap on the hot path: each API's instruments are looked up once, each
 * topic's counters once per topic, and a request costs a few increments and one histogram
 * observation. Owned by the Broker (one per broker, over the registry its composition root
 * made); everything computed from state at scrape time is in state-metrics.ts.
 */
import { Counter, Histogram } from 'prom-client';
import type { Metrics } from '../metrics/registry.js';
import { errorByCode } from '../protocol/generated/errors.js';

/** Latency buckets in seconds: from a cached metadata answer to a long-polling fetch. */
const LATENCY_BUCKETS_S = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

type CounterChild = ReturnType<Counter<string>['labels']>;
type HistogramChild = ReturnType<Histogram<string>['labels']>;

/** One API's instruments (Kafka's per-request RequestMetrics), handed to the router once per route. */
export class ApiMetrics {
  private readonly errors = new Map<number, CounterChild>();

  constructor(
    private readonly api: string,
    private readonly requests: CounterChild,
    private readonly duration: HistogramChild,
    private readonly errorCounter: Counter<string>,
    private readonly monotonicMs: () => number,
  ) {}

  /** The start of a request, for done(). */
  start(): number {
    return this.monotonicMs();
  }

  /** A request answered (or not: acks=0, a closed connection), `startedMs` from start(). */
  done(startedMs: number, response: unknown): void {
    this.requests.inc();
    this.duration.observe((this.monotonicMs() - startedMs) / 1000);
    if (response !== null && response !== undefined) forEachErrorCode(response, (code) => this.error(code));
  }

  private error(code: number): void {
    let c = this.errors.get(code);
    if (c === undefined) {
      c = this.errorCounter.labels(this.api, errorByCode(code)?.name ?? String(code));
      this.errors.set(code, c);
    }
    c.inc();
  }
}

/**
 * Calls `fn` for every non-zero `errorCode` in a response: the top-level one and each
 * partition's, as Kafka's AbstractResponse.errorCounts (which counts NONE too; here only errors).
 * In the message specs an ErrorCode sits at the top level or in a struct of an array (no
 * response nests it in a single struct), so only arrays of plain objects are walked: record
 * bytes, file regions, struct fields and arrays of ids or names are not looked into.
 */
export function forEachErrorCode(value: unknown, fn: (code: number) => void): void {
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype)
    return;
  const o = value as Record<string, unknown>;
  const code = o.errorCode;
  if (typeof code === 'number' && code !== 0) fn(code);
  for (const k in o) {
    const v = o[k];
    if (!Array.isArray(v) || v.length === 0 || typeof v[0] !== 'object') continue;
    for (const item of v) forEachErrorCode(item, fn);
  }
}

export class BrokerMetrics {
  private readonly requests: Counter<string>;
  private readonly errors: Counter<string>;
  private readonly duration: Histogram<string>;
  private readonly bytesIn: Counter<string>;
  private readonly messagesIn: Counter<string>;
  private readonly bytesOut: Counter<string>;
  private readonly topics = new Map<
    string,
    { in: CounterChild; messages: CounterChild; out: CounterChild }
  >();

  constructor(readonly metrics: Metrics) {
    const registers = [metrics.registry];
    this.requests = new Counter({
      name: 'skiff_requests_total',
      help: "Requests handled, by API (Kafka's RequestMetrics RequestsPerSec; Fetch split into FetchConsumer and FetchFollower)",
      labelNames: ['api'],
      registers,
    });
    this.errors = new Counter({
      name: 'skiff_request_errors_total',
      help: "Error codes in responses, by API and error name (Kafka's ErrorsPerSec, without NONE)",
      labelNames: ['api', 'error'],
      registers,
    });
    this.duration = new Histogram({
      name: 'skiff_request_duration_seconds',
      help: "Time from a request's decoding to its response, including purgatory waits, by API (Kafka's TotalTimeMs)",
      labelNames: ['api'],
      buckets: LATENCY_BUCKETS_S,
      registers,
    });
    this.bytesIn = new Counter({
      name: 'skiff_topic_bytes_in_total',
      help: "Produced bytes appended by this broker as leader, by topic (Kafka's BytesInPerSec)",
      labelNames: ['topic'],
      registers,
    });
    this.messagesIn = new Counter({
      name: 'skiff_topic_messages_in_total',
      help: "Produced records appended by this broker as leader, by topic (Kafka's MessagesInPerSec)",
      labelNames: ['topic'],
      registers,
    });
    this.bytesOut = new Counter({
      name: 'skiff_topic_bytes_out_total',
      help: "Record bytes sent to consumers, by topic; replica fetches are replication bytes (Kafka's BytesOutPerSec)",
      labelNames: ['topic'],
      registers,
    });
  }

  /** The instruments of one API (called once per route, and per Fetch kind). */
  api(name: string): ApiMetrics {
    return new ApiMetrics(
      name,
      this.requests.labels(name),
      this.duration.labels(name),
      this.errors,
      this.metrics.monotonicMs,
    );
  }

  private topic(topic: string): { in: CounterChild; messages: CounterChild; out: CounterChild } {
    let t = this.topics.get(topic);
    if (t === undefined) {
      t = {
        in: this.bytesIn.labels(topic),
        messages: this.messagesIn.labels(topic),
        out: this.bytesOut.labels(topic),
      };
      this.topics.set(topic, t);
    }
    return t;
  }

  /** A produce append to `topic` as leader: its batch bytes and records. */
  produced(topic: string, bytes: number, records: number): void {
    const t = this.topic(topic);
    t.in.inc(bytes);
    t.messages.inc(records);
  }

  /** Record bytes of `topic` in a consumer's fetch response. */
  fetched(topic: string, bytes: number): void {
    if (bytes > 0) this.topic(topic).out.inc(bytes);
  }
}
