/** The yardsticks bench's table and charts (bench/yardsticks.ts, bench/scale.ts). */

export interface Row {
  readonly run: string;
  /** Skiff's figure. */
  readonly skiff: string;
  /** The yardstick's figure ('' when the row is Skiff's alone). */
  readonly peer: string;
  /** What the target is checked on (a ratio, µs, ms), '' when there is no comparison. */
  readonly measured: string;
  readonly value: number | null;
  readonly target: string | null;
  readonly met: boolean | null;
}

/** One Markdown table: run, Skiff, yardstick, measured, target, verdict. */
export function renderTable(rows: readonly Row[]): string {
  const cells = [
    ['run', 'Skiff', 'yardstick', 'measured', 'target', 'verdict'],
    ...rows.map((r) => [
      r.run,
      r.skiff,
      r.peer,
      r.measured,
      r.target ?? '',
      r.met === null ? '' : r.met ? 'met' : 'NOT met',
    ]),
  ];
  const widths = cells[0]!.map((_, i) => Math.max(...cells.map((c) => c[i]!.length)));
  const fmt = (c: string[]) => `| ${c.map((x, i) => x.padEnd(widths[i]!)).join(' | ')} |`;
  return [
    fmt(cells[0]!),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...cells.slice(1).map(fmt),
  ].join('\n');
}

export interface LatencyPoint {
  readonly offered: number;
  readonly achieved: number;
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
}

export interface Axis {
  readonly label: string;
  /** log10 scale; else linear from 0. */
  readonly log?: boolean;
}

export interface Series {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
}

/** A line chart: the x axis is ticked at the points' x values. */
export interface Chart {
  readonly title: string;
  readonly x: Axis;
  readonly y: Axis;
  readonly series: readonly Series[];
}

const CHART_W = 640;
const CHART_H = 400;
const COLORS = ['#2a9d8f', '#e9c46a', '#e76f51', '#264653'];

const tickText = (v: number) =>
  Number.isInteger(v) ? v.toLocaleString('en') : String(Number(v.toPrecision(3)));

/** Maps [values' range] to [from, to] pixels on `axis`'s scale. */
function scale(axis: Axis, values: readonly number[], from: number, to: number) {
  if (axis.log) {
    const pos = values.filter((v) => v > 0);
    const lo = Math.log10(Math.min(...pos) / 2);
    const hi = Math.log10(Math.max(...pos) * 2);
    const at = (v: number) => from + ((Math.log10(Math.max(v, 10 ** lo)) - lo) / (hi - lo)) * (to - from);
    const grid: number[] = [];
    for (let e = Math.ceil(lo); e <= Math.floor(hi); e++) grid.push(10 ** e);
    return { at, grid };
  }
  const max = Math.max(...values, 1e-9) * 1.1;
  const at = (v: number) => from + (v / max) * (to - from);
  const step = 10 ** Math.floor(Math.log10(max / 5));
  const nice = [1, 2, 5, 10].map((k) => k * step).find((s) => max / s <= 6) ?? step * 10;
  const grid: number[] = [];
  for (let v = 0; v <= max; v += nice) grid.push(v);
  return { at, grid };
}

/** One chart's SVG elements, its top left corner at (ox, oy). */
function chartElements(c: Chart, ox: number, oy: number): string[] {
  const m = { l: 60, r: 120, t: 30, b: 50 };
  const all = c.series.flatMap((s) => s.points);
  if (all.length === 0) return [`<text x="${ox + m.l}" y="${oy + 18}">${c.title}: no points</text>`];
  const xs = [...new Set(all.map((p) => p[0]))].sort((a, b) => a - b);
  const x = scale(c.x, xs, ox + m.l, ox + CHART_W - m.r).at;
  const ys = scale(
    c.y,
    all.map((p) => p[1]),
    oy + CHART_H - m.b,
    oy + m.t,
  );
  const bottom = oy + CHART_H - m.b;
  const midY = (oy + m.t + bottom) / 2;
  const out = [
    `<text x="${ox + m.l}" y="${oy + 18}">${c.title}</text>`,
    `<line x1="${ox + m.l}" y1="${bottom}" x2="${ox + CHART_W - m.r}" y2="${bottom}" stroke="black"/>`,
    `<line x1="${ox + m.l}" y1="${oy + m.t}" x2="${ox + m.l}" y2="${bottom}" stroke="black"/>`,
    `<text x="${ox + (CHART_W - m.r + m.l) / 2}" y="${oy + CHART_H - 12}" text-anchor="middle">${c.x.label}${c.x.log ? ' (log)' : ''}</text>`,
    `<text x="${ox + 14}" y="${midY}" transform="rotate(-90 ${ox + 14} ${midY})" text-anchor="middle">${c.y.label}${c.y.log ? ' (log)' : ''}</text>`,
  ];
  for (const v of ys.grid)
    out.push(
      `<line x1="${ox + m.l - 4}" y1="${ys.at(v).toFixed(1)}" x2="${ox + CHART_W - m.r}" y2="${ys.at(v).toFixed(1)}" stroke="#ddd"/>`,
      `<text x="${ox + m.l - 6}" y="${(ys.at(v) + 4).toFixed(1)}" text-anchor="end">${tickText(v)}</text>`,
    );
  for (const v of xs)
    out.push(`<text x="${x(v).toFixed(1)}" y="${bottom + 16}" text-anchor="middle">${tickText(v)}</text>`);
  c.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const pts = [...s.points]
      .sort((a, b) => a[0] - b[0])
      .map((p) => `${x(p[0]).toFixed(1)},${ys.at(p[1]).toFixed(1)}`);
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.join(' ')}"/>`);
    for (const pt of pts) {
      const [cx, cy] = pt.split(',');
      out.push(`<circle cx="${cx}" cy="${cy}" r="3" fill="${color}"/>`);
    }
    out.push(
      `<text x="${ox + CHART_W - m.r + 10}" y="${oy + m.t + 16 * i + 10}" fill="${color}">${s.name}</text>`,
    );
  });
  return out;
}

/** One SVG document of `charts`, `columns` to a row. */
export function chartsSvg(charts: readonly Chart[], columns = 2): string {
  const cols = Math.max(1, Math.min(columns, charts.length));
  const W = CHART_W * cols;
  const H = CHART_H * Math.max(1, Math.ceil(charts.length / cols));
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    ...charts.flatMap((c, i) => chartElements(c, (i % cols) * CHART_W, Math.floor(i / cols) * CHART_H)),
    '</svg>',
    '',
  ].join('\n');
}

/** An SVG chart of p50/p99/p999 (ms, log scale) against the offered rate (MB/s). */
export function latencySvg(points: readonly LatencyPoint[]): string {
  const series = (['p50', 'p99', 'p999'] as const).map((k) => ({
    name: `${k} (ms)`,
    points: points.map((p) => [p.offered, p[k]] as const),
  }));
  return chartsSvg([
    {
      title: 'acks=all RF 3 produce latency (steady state) against the offered rate',
      x: { label: 'offered MB/s' },
      y: { label: 'ms', log: true },
      series,
    },
  ]);
}
