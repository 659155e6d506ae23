/** The yardsticks bench's table and chart (bench/yardsticks.ts). */

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

/** An SVG chart of p50/p99/p999 (ms, log scale) against the offered rate (MB/s). */
export function latencySvg(points: readonly LatencyPoint[]): string {
  const W = 640;
  const H = 400;
  const m = { l: 60, r: 120, t: 30, b: 50 };
  const sorted = [...points].sort((a, b) => a.offered - b.offered);
  const maxX = Math.max(...sorted.map((p) => p.offered)) * 1.1;
  const ys = sorted.flatMap((p) => [p.p50, p.p99, p.p999]).filter((y) => y > 0);
  const lo = Math.log10(Math.max(0.1, Math.min(...ys) / 2));
  const hi = Math.log10(Math.max(...ys) * 2);
  const x = (v: number) => m.l + (v / maxX) * (W - m.l - m.r);
  const y = (v: number) => H - m.b - ((Math.log10(Math.max(v, 0.1)) - lo) / (hi - lo)) * (H - m.t - m.b);
  const series: [keyof LatencyPoint, string][] = [
    ['p50', '#2a9d8f'],
    ['p99', '#e9c46a'],
    ['p999', '#e76f51'],
  ];
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${m.l}" y="18">acks=all RF 3 produce latency (steady state) against the offered rate</text>`,
    `<line x1="${m.l}" y1="${H - m.b}" x2="${W - m.r}" y2="${H - m.b}" stroke="black"/>`,
    `<line x1="${m.l}" y1="${m.t}" x2="${m.l}" y2="${H - m.b}" stroke="black"/>`,
    `<text x="${(W - m.r + m.l) / 2}" y="${H - 12}" text-anchor="middle">offered MB/s</text>`,
    `<text x="14" y="${(H - m.b + m.t) / 2}" transform="rotate(-90 14 ${(H - m.b + m.t) / 2})" text-anchor="middle">ms (log)</text>`,
  ];
  for (let e = Math.ceil(lo); e <= Math.floor(hi); e++)
    out.push(
      `<line x1="${m.l - 4}" y1="${y(10 ** e)}" x2="${W - m.r}" y2="${y(10 ** e)}" stroke="#ddd"/>`,
      `<text x="${m.l - 6}" y="${y(10 ** e) + 4}" text-anchor="end">${10 ** e}</text>`,
    );
  for (const p of sorted)
    out.push(
      `<text x="${x(p.offered)}" y="${H - m.b + 16}" text-anchor="middle">${p.offered.toFixed(1)}</text>`,
    );
  series.forEach(([k, color], i) => {
    const pts = sorted.map((p) => `${x(p.offered).toFixed(1)},${y(p[k]).toFixed(1)}`);
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.join(' ')}"/>`);
    for (const p of sorted)
      out.push(`<circle cx="${x(p.offered).toFixed(1)}" cy="${y(p[k]).toFixed(1)}" r="3" fill="${color}"/>`);
    out.push(`<text x="${W - m.r + 10}" y="${m.t + 16 * i + 10}" fill="${color}">${k} (ms)</text>`);
  });
  out.push('</svg>', '');
  return out.join('\n');
}
