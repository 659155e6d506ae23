/** Number and date formatting the perf tools need to print Kafka's lines character for character. */

/** Java's %.Nf: fixed decimals, NaN and Infinity spelled as Java spells them. */
export function fixed(n: number, decimals: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : '-Infinity';
  return n.toFixed(decimals);
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/**
 * A SimpleDateFormat pattern (the letters y M d H m s S; anything in single quotes or any other
 * character is literal) rendered in local time.
 */
export function formatDate(ms: number, pattern: string): string {
  const d = new Date(ms);
  const fields: Record<string, (width: number) => string> = {
    y: (w) => (w === 2 ? pad(d.getFullYear() % 100, 2) : pad(d.getFullYear(), w)),
    M: (w) => pad(d.getMonth() + 1, w),
    d: (w) => pad(d.getDate(), w),
    H: (w) => pad(d.getHours(), w),
    m: (w) => pad(d.getMinutes(), w),
    s: (w) => pad(d.getSeconds(), w),
    S: (w) => pad(d.getMilliseconds(), w),
  };
  let out = '';
  for (let i = 0; i < pattern.length; ) {
    const ch = pattern[i]!;
    if (ch === "'") {
      const end = pattern.indexOf("'", i + 1);
      out += end < 0 ? pattern.slice(i + 1) : pattern.slice(i + 1, end);
      i = end < 0 ? pattern.length : end + 1;
      continue;
    }
    let j = i;
    while (j < pattern.length && pattern[j] === ch) j++;
    const f = fields[ch];
    out += f ? f(j - i) : pattern.slice(i, j);
    i = j;
  }
  return out;
}
