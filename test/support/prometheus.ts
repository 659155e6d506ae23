/**
 * A strict reader of the Prometheus text format (0.0.4) for the metrics tests: every line must be
 * a HELP, a TYPE or a sample with well-formed labels and a number; a family's lines must be
 * together. Gives the samples, the declared types and a lookup by name and labels.
 */
import * as http from 'node:http';

export interface PromSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  readonly samples: readonly PromSample[];
  /** Family name → declared type. */
  readonly types: ReadonlyMap<string, string>;
  /** Samples named `name` whose labels include `labels`. */
  find(name: string, labels?: Readonly<Record<string, string>>): PromSample[];
  /** The sum of find(name, labels)'s values (0 when none). */
  sum(name: string, labels?: Readonly<Record<string, string>>): number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/;
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/;

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let rest = text;
  while (rest !== '') {
    const m = LABEL.exec(rest);
    if (m === null) throw new Error(`bad labels in: ${line}`);
    if (m[1]! in labels) throw new Error(`label ${m[1]} twice in: ${line}`);
    labels[m[1]!] = m[2]!.replace(/\\n/g, '\n').replace(/\\(.)/g, '$1');
    rest = rest.slice(m[0].length);
  }
  return labels;
}

function baseName(name: string, types: ReadonlyMap<string, string>): string {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    const base = name.slice(0, -suffix.length);
    if (name.endsWith(suffix) && (types.get(base) === 'histogram' || types.get(base) === 'summary'))
      return base;
  }
  return name;
}

export function parseExposition(text: string): Exposition {
  const samples: PromSample[] = [];
  const types = new Map<string, string>();
  const closed = new Set<string>();
  let current: string | null = null;
  const enter = (family: string, line: string): void => {
    if (family === current) return;
    if (closed.has(family)) throw new Error(`family ${family} is split: ${line}`);
    if (current !== null) closed.add(current);
    current = family;
  };
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) ?(.*)$/.exec(line);
    if (meta !== null) {
      enter(meta[2]!, line);
      if (meta[1] === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(meta[3]!))
          throw new Error(`bad type: ${line}`);
        types.set(meta[2]!, meta[3]!);
      }
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (m === null) throw new Error(`not a sample: ${line}`);
    // Go's ParseFloat, which Prometheus uses, takes NaN and Inf in any case (prom-client writes `Nan`).
    const raw = m[4]!.toLowerCase();
    const value = raw === '+inf' || raw === 'inf' ? Infinity : raw === '-inf' ? -Infinity : Number(m[4]);
    if (Number.isNaN(value) && raw !== 'nan') throw new Error(`bad value: ${line}`);
    enter(baseName(m[1]!, types), line);
    samples.push({ name: m[1]!, labels: parseLabels(m[3] ?? '', line), value });
  }
  const find = (name: string, labels: Readonly<Record<string, string>> = {}): PromSample[] =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return {
    samples,
    types,
    find,
    sum: (name, labels) => find(name, labels).reduce((a, s) => a + s.value, 0),
  };
}

export interface HttpAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

/** One GET (headers optional); rejects when the server cannot be reached. */
export function httpGet(
  url: string,
  headers: Record<string, string> = {},
  timeoutMs = 10_000,
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type']), body }),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/** GET /metrics, asserted 200 and parsed. */
export async function scrape(url: string, headers: Record<string, string> = {}): Promise<Exposition> {
  const r = await httpGet(url, headers);
  if (r.status !== 200) throw new Error(`GET ${url}: ${r.status} ${r.body}`);
  if (!r.contentType.startsWith('text/plain; version=0.0.4'))
    throw new Error(`content type ${r.contentType}`);
  return parseExposition(r.body);
}

/** The metric names a PromQL expression refers to (identifiers not followed by `(` nor inside a selector or by()). */
export function metricNamesIn(expr: string): string[] {
  const noStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const noSelectors = noStrings.replace(/\{[^}]*\}/g, '{}');
  const noGrouping = noSelectors.replace(
    /\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g,
    '',
  );
  const noRanges = noGrouping.replace(/\[[^\]]*\]/g, '');
  const names = new Set<string>();
  for (const m of noRanges.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)) {
    const n = m[1]!;
    if (/^(and|or|unless|bool|offset|by|without|on|ignoring|inf|nan)$/i.test(n)) continue;
    if (/^\d/.test(n)) continue;
    names.add(n);
  }
  return [...names];
}
