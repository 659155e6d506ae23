/**
 * Metric families with a sample per partition or per replica, rendered as Prometheus text
 * directly. prom-client formats every sample by walking its label object and escaping each value
 * again at every scrape; at 10,000 partitions and seven such families that was most of a scrape.
 * Here a sample's labels are a LabelSet rendered once, and a scrape only joins strings: the
 * registry (registry.ts) asks a TextFamily for its text instead of its values. get() still gives
 * the values, for getMetricsAsJSON and a plain prom-client Registry.
 */
import type { Registry } from 'prom-client';
import type { Labels } from './scrape-family.js';

/** A label set and its exposition text (`topic="t",partition="0"`, no braces), rendered once. */
export interface LabelSet {
  readonly labels: Labels;
  readonly text: string;
}

function escapeLabelValue(value: string | number): string {
  return typeof value === 'number'
    ? String(value)
    : value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

export function labelSet(labels: Labels): LabelSet {
  const text = Object.entries(labels)
    .map(([k, v]) => `${k}="${escapeLabelValue(v)}"`)
    .join(',');
  return { labels, text };
}

/** A sample value as the text format writes it (Go's ParseFloat reads NaN, +Inf, -Inf). */
export function formatValue(value: number | bigint): string {
  if (typeof value === 'bigint' || Number.isFinite(value)) return `${value}`;
  if (Number.isNaN(value)) return 'NaN';
  return value > 0 ? '+Inf' : '-Inf';
}

/**
 * The label sets of objects whose identity changes with the partition set (a Partition, a
 * leader's PartitionLeaderState): a partition added or re-created is a new object and gets its
 * labels rendered at its first scrape; a removed one drops out with its object. `variant` tells
 * apart the sets of one object (the replicas of a partition, by broker id). The labels must be a
 * function of the object and the variant only (a partition's topic and index never change).
 */
export class LabelSets<K extends object> {
  private readonly sets = new WeakMap<K, Map<number, LabelSet>>();

  of(key: K, variant: number, labels: () => Labels): LabelSet {
    let byVariant = this.sets.get(key);
    if (byVariant === undefined) {
      byVariant = new Map();
      this.sets.set(key, byVariant);
    }
    let set = byVariant.get(variant);
    if (set === undefined) {
      set = labelSet(labels());
      byVariant.set(variant, set);
    }
    return set;
  }
}

export type TextEmit = (labels: LabelSet, value: number | bigint) => void;

export class TextFamily {
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'gauge' | 'counter',
    private readonly collect: (emit: TextEmit) => void,
  ) {}

  /**
   * HELP, TYPE and a line per sample. `defaults` is the registry's default labels rendered
   * (`node_id="1"`, or ''), written after the sample's own as prom-client does.
   */
  text(defaults: string): string {
    const name = this.name;
    const lines = [
      `# HELP ${name} ${this.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`,
      `# TYPE ${name} ${this.type}`,
    ];
    const withDefaults = defaults === '' ? '}' : `,${defaults}}`;
    const bare = defaults === '' ? `${name} ` : `${name}{${defaults}} `;
    const open = `${name}{`;
    this.collect((labels, value) => {
      lines.push(
        labels.text === ''
          ? bare + formatValue(value)
          : `${open}${labels.text}${withDefaults} ${formatValue(value)}`,
      );
    });
    return lines.join('\n');
  }

  async get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: { labels: Labels; value: number }[];
  }> {
    const values: { labels: Labels; value: number }[] = [];
    this.collect((labels, value) => values.push({ labels: labels.labels, value: Number(value) }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/** Registers a family whose samples `collect` emits, as text, at each scrape. */
export function registerTextFamily(
  registry: Registry,
  name: string,
  help: string,
  type: 'gauge' | 'counter',
  collect: (emit: TextEmit) => void,
): void {
  // biome-ignore lint/suspicious/noExplicitAny: prom-client types registerMetric for its own classes; it needs only name and get().
  registry.registerMetric(new TextFamily(name, help, type, collect) as any);
}
