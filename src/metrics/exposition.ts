/**
 * Prometheus text exposition (format 0.0.4) put together from several processes' — what `skiff
 * up`'s /metrics serves for its brokers. Each broker labels its own samples `node_id`, so the
 * series stay apart; the format requires each family's HELP, TYPE and samples to appear together
 * and once, so the texts are merged family by family rather than concatenated.
 */

interface Family {
  head: string[];
  readonly samples: string[];
}

/** The family a sample line belongs to: histograms and summaries add _bucket, _sum, _count. */
function familyName(line: string): string {
  const end = line.search(/[{ ]/);
  return end < 0 ? line : line.slice(0, end);
}

/** Merges expositions family by family, in the order the families first appear. */
export function mergeExpositions(texts: readonly string[]): string {
  const families = new Map<string, Family>();
  for (const text of texts) {
    let current: Family | null = null;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const m = /^# (HELP|TYPE) (\S+)/.exec(line);
      if (m !== null) {
        const name = m[2]!;
        let f = families.get(name);
        if (f === undefined) {
          f = { head: [], samples: [] };
          families.set(name, f);
        }
        // The first text's HELP and TYPE stand for all (the brokers run the same code).
        if (f.head.length < 2 && !f.head.some((h) => h.startsWith(`# ${m[1]} `))) f.head.push(line);
        current = f;
      } else if (line.startsWith('#')) {
      } else if (current !== null) current.samples.push(line);
      else {
        const name = familyName(line);
        let f = families.get(name);
        if (f === undefined) {
          f = { head: [], samples: [] };
          families.set(name, f);
        }
        f.samples.push(line);
      }
    }
  }
  const out: string[] = [];
  for (const f of families.values()) out.push([...f.head, ...f.samples].join('\n'));
  return out.length === 0 ? '' : `${out.join('\n\n')}\n`;
}
