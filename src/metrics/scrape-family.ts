/**
 * Metric families computed when scraped (Kafka's gauges that read the partition state when
 * asked): no work on the hot paths, and the samples are whatever the state is at the scrape.
 * prom-client's Gauge with a `collect` callback would hash every label set into a map first; at
 * 10,000 partitions with several families each that is most of a scrape, so a family here hands
 * its samples to the registry directly (prom-client's metric contract: name, help, type, get()).
 * Families with a sample per partition or replica go further and write their text themselves
 * (text-family.ts).
 */
import type { Registry } from 'prom-client';

export type Labels = Readonly<Record<string, string | number>>;

interface Sample {
  readonly labels: Labels;
  readonly value: number;
}

export type Emit = (labels: Labels, value: number) => void;

class ScrapeFamily {
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'gauge' | 'counter',
    private readonly collect: (emit: Emit) => void,
  ) {}

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    const values: Sample[] = [];
    this.collect((labels, value) => values.push({ labels, value }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/**
 * Registers a family whose samples `collect` emits at each scrape. `type` 'counter' is for totals
 * kept elsewhere (bytes replicated since start): Prometheus's rate() needs the counter type.
 */
export function registerScrapeFamily(
  registry: Registry,
  name: string,
  help: string,
  type: 'gauge' | 'counter',
  collect: (emit: Emit) => void,
): void {
  // biome-ignore lint/suspicious/noExplicitAny: prom-client types registerMetric for its own classes; it needs only name and get().
  registry.registerMetric(new ScrapeFamily(name, help, type, collect) as any);
}

/**
 * One computation shared by the families of a scrape (the per-replica views feed three
 * families): computed at the first family's get() and forgotten once that scrape's synchronous
 * pass is over, so the next scrape sees fresh state.
 */
export class PerScrape<T> {
  private value: T | null = null;

  constructor(private readonly compute: () => T) {}

  get(): T {
    if (this.value === null) {
      this.value = this.compute();
      queueMicrotask(() => {
        this.value = null;
      });
    }
    return this.value;
  }
}
